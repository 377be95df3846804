"""Tests of winrate.io.datasets: synthetic files always, the real shared files when available.

Real-data tests need ``WINRATE_DATA`` (set by ``make test`` / ``.ci/run`` when the shared
data folder exists) and compare the loaders with counts computed independently from the
raw files with plain Python. No test touches the network: an autouse fixture points the
download mirror at a closed local port and the cache at a temporary directory.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError
from winrate.io import datasets
from winrate.io.download import FILES, MMLU_PRO_MODELS, DataUnavailableError

REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(
    not REAL or not Path(REAL).is_dir(),
    reason="WINRATE_DATA is not set (or not a directory): real-data loader tests skipped",
)
STRING_COLUMNS = ("prompt_id", "judge_id", "model_a", "model_b", "outcome", "category",
                  "src", "item_id")


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """Any accidental download goes to a closed local port and a temporary cache."""
    monkeypatch.setenv("WINRATE_DATA_MIRROR", "http://127.0.0.1:9")
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))


def _check_schema(log: pd.DataFrame) -> None:
    for col in STRING_COLUMNS:
        if col in log:
            assert isinstance(log[col].dtype, pd.CategoricalDtype), col
    assert list(log["outcome"].cat.categories) == ["a", "b", "tie"]
    assert list(log["model_a"].cat.categories) == list(log["model_b"].cat.categories)
    assert not log[["model_a", "model_b", "outcome"]].isna().any().any()
    assert (log["model_a"].cat.codes != log["model_b"].cat.codes).all()


def _check_no_unused_categories(log: pd.DataFrame) -> None:
    """Every categorical column lists exactly the values its rows use (the two model
    columns: the models either uses; outcome: always a, b, tie)."""
    for col in log.columns:
        if not isinstance(log[col].dtype, pd.CategoricalDtype) or col == "outcome":
            continue
        used = set(log[col].astype(object).dropna())
        if col in ("model_a", "model_b"):
            used = set(log["model_a"].astype(object)) | set(log["model_b"].astype(object))
        categories = list(log[col].cat.categories)
        assert len(categories) == len(set(categories)) == len(used), col
        assert set(categories) == used, col


def _outcome(a_right: bool, b_right: bool) -> str:
    return "tie" if a_right == b_right else ("a" if a_right else "b")


# --------------------------------------------------------------------------- basics


def test_names_and_describe():
    assert datasets.DATASET_NAMES == ("mmlu_pro", "llmfao", "pandalm", "chatbot_arena",
                              "alpaca_eval", "qlora", "prd")
    for name in datasets.DATASET_NAMES:
        text = datasets.describe(name)
        assert "license" in text.lower() or "apache" in text.lower() or "bsd" in text.lower()
        assert len(text) > 100
    with pytest.raises(WinrateInputError, match="available: mmlu_pro"):
        datasets.load("mmlu")
    with pytest.raises(WinrateInputError):
        datasets.describe("nope")


def test_missing_files_without_download_lists_directories(tmp_path, monkeypatch):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "shared"))
    with pytest.raises(DataUnavailableError) as info:
        datasets.load("llmfao", download=False)
    msg = str(info.value)
    assert str(tmp_path / "shared") in msg and str(tmp_path / "cache") in msg
    assert "WINRATE_DATA" in msg and "crowd-comparisons.csv" in msg


# --------------------------------------------------------------------------- mmlu_pro

SYN_MMLU = {
    # model: list of (question_id, category, src, answer, pred)
    "alpha": [(1, "math", "s1", "A", "A"), (2, "math", "s1", "B", "C"),
              (3, "law", "s2", "C", None), (4, "law", "s2", "D", "D")],
    "beta_2": [(1, "math", "s1", "A", "B"), (2, "math", "s1", "B", "B"),
               (3, "law", "s2", "C", "C"), (4, "law", "s2", "D", "D"),
               (5, "law", "s3", "E", "E")],
    "gamma": [(2, "math", "s1", "B", "B"), (3, "law", "s2", "C", "A"),
              (5, "law", "s3", "F", "F")],  # re-keyed answer of question 5
}


def _records(rows):
    keys = ("question_id", "category", "src", "answer", "pred")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _write_slim(folder: Path, model: str, rows) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / f"model_outputs_{model}_5shots.slim.json.gz", "wt") as fh:
        json.dump(_records(rows), fh)


def _write_zip(folder: Path, model: str, rows, junk=("oops",)) -> None:
    """The upstream layout: one JSON list in a zip, full records and bare strings."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [dict(r, question="a long prompt ...", model_outputs="The answer is ...",
                    options=["x", "y"]) for r in _records(rows)]
    records[1:1] = list(junk)
    with zipfile.ZipFile(folder / f"model_outputs_{model}_5shots.zip", "w",
                         zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"eval_results/model_outputs_{model}_5shots.json", json.dumps(records))


@pytest.fixture
def mmlu_dir(tmp_path):
    root = tmp_path / "data"
    _write_slim(root / "mmlu_pro", "alpha", SYN_MMLU["alpha"])
    _write_zip(root / "mmlu_pro", "beta_2", SYN_MMLU["beta_2"])
    _write_slim(root / "mmlu_pro", "gamma", SYN_MMLU["gamma"])
    return root


def test_mmlu_pro_pairwise_matches_plain_loop(mmlu_dir):
    models = ["alpha", "beta_2", "gamma"]
    log = datasets.load("mmlu_pro", data_dir=mmlu_dir, models=models)
    _check_schema(log)
    right = {m: {r[0]: r[4] is not None and r[4] == r[3] for r in rows}
             for m, rows in SYN_MMLU.items()}
    expected = []
    for a, b in itertools.combinations(models, 2):
        for q in sorted(set(right[a]) & set(right[b])):
            expected.append((str(q), a, b, _outcome(right[a][q], right[b][q])))
    got = list(zip(log["prompt_id"].astype(str), log["model_a"].astype(str),
                   log["model_b"].astype(str), log["outcome"].astype(str), strict=True))
    assert got == expected
    assert set(log["judge_id"]) == {"exact_match"}
    cat = dict(zip(log["prompt_id"].astype(str), log["category"].astype(str), strict=True))
    assert cat == {"1": "math", "2": "math", "3": "law", "4": "law", "5": "law"}
    assert "count" not in log


def test_mmlu_pro_correctness_and_questions(mmlu_dir):
    res = datasets.read_mmlu_pro(mmlu_dir, ["alpha", "beta_2", "gamma"])
    corr = res.correctness
    assert list(corr.index) == [1, 2, 3, 4, 5]
    assert corr.index.name == "question_id"
    np.testing.assert_array_equal(corr["alpha"].to_numpy(), [1, 0, 0, 1, np.nan])
    np.testing.assert_array_equal(corr["gamma"].to_numpy(), [np.nan, 1, 0, np.nan, 1])
    assert res.skipped_records == {"alpha": 0, "beta_2": 1, "gamma": 0}
    assert res.files["beta_2"].suffix == ".zip"
    q = res.questions
    assert list(q["src"].astype(str)) == ["s1", "s1", "s2", "s2", "s3"]
    assert list(q["n_answer_keys"]) == [1, 1, 1, 1, 2]
    pd.testing.assert_frame_equal(datasets.mmlu_pro_correctness(mmlu_dir, ["gamma"]),
                                  corr[["gamma"]].dropna())
    assert isinstance(datasets.mmlu_pro_questions(mmlu_dir, ["alpha"]), pd.DataFrame)


def test_model_subsets_have_no_phantom_categories(mmlu_dir):
    # alpha answers 1-4 and gamma 2, 3, 5: only questions 2 and 3 are compared, so
    # questions 1, 4, 5 and source s3 must not stay behind as categories
    log = datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha", "gamma"])
    _check_no_unused_categories(log)
    assert list(log["prompt_id"].cat.categories) == ["2", "3"]
    assert list(log["src"].cat.categories) == ["s1", "s2"]
    assert list(log["model_a"].cat.categories) == ["alpha", "gamma"]
    assert list(log["outcome"].cat.categories) == ["a", "b", "tie"]
    # order of models= is kept; the full load has nothing unused either
    flipped = datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["gamma", "alpha"])
    assert list(flipped["model_a"].cat.categories) == ["gamma", "alpha"]
    _check_no_unused_categories(datasets.load("mmlu_pro", data_dir=mmlu_dir,
                                              models=["alpha", "beta_2", "gamma"]))


def test_mmlu_pro_zip_equals_slim(tmp_path):
    _write_slim(tmp_path / "s" / "mmlu_pro", "m1", SYN_MMLU["beta_2"])
    _write_zip(tmp_path / "z" / "mmlu_pro", "m1", SYN_MMLU["beta_2"], junk=("x", "y", "z"))
    slim = datasets.read_mmlu_pro(tmp_path / "s", ["m1"])
    zipped = datasets.read_mmlu_pro(tmp_path / "z", ["m1"])
    pd.testing.assert_frame_equal(slim.correctness, zipped.correctness)
    pd.testing.assert_frame_equal(slim.questions, zipped.questions)
    assert zipped.skipped_records == {"m1": 3}


def test_mmlu_pro_model_selection_errors(mmlu_dir):
    with pytest.raises(WinrateInputError, match="unknown model.*available:.*alpha"):
        datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha", "delta"])
    with pytest.raises(WinrateInputError, match="at least 2"):
        datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha"])
    with pytest.raises(WinrateInputError, match="twice"):
        datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha", "alpha"])
    # a pinned model that is not on disk, with downloads off: names where it looked
    with pytest.raises(DataUnavailableError, match="Yi-34B"):
        datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha", "Yi-34B"],
                      download=False)


def test_mmlu_pro_load_lists_and_checks_models_once(mmlu_dir, monkeypatch):
    calls = []
    real = datasets._mmlu_available
    monkeypatch.setattr(datasets, "_mmlu_available",
                        lambda fetch: calls.append(1) or real(fetch))
    datasets.load("mmlu_pro", data_dir=mmlu_dir, models=["alpha", "gamma"])
    assert len(calls) == 1  # one directory scan per load
    calls.clear()
    datasets.read_mmlu_pro(mmlu_dir, ["alpha"])
    assert len(calls) == 1


def test_mmlu_pro_bad_files(tmp_path):
    folder = tmp_path / "mmlu_pro"
    _write_slim(folder, "dup", [(1, "c", "s", "A", "A"), (1, "c", "s", "A", "B")])
    with pytest.raises(WinrateInputError, match="question_id repeated"):
        datasets.read_mmlu_pro(tmp_path, ["dup"])
    folder.joinpath("model_outputs_obj_5shots.slim.json.gz").write_bytes(
        gzip.compress(b'{"not": "a list"}'))
    with pytest.raises(WinrateInputError, match="expected a JSON list"):
        datasets.read_mmlu_pro(tmp_path, ["obj"])
    _write_slim(folder, "noid", [(None, "c", "s", "A", "A")])
    with pytest.raises(WinrateInputError, match="question_id"):
        datasets.read_mmlu_pro(tmp_path, ["noid"])


# --------------------------------------------------------------------------- llmfao

CROWD = """id,prompt,model_x,model_y,worker,winner,left,right
0,8,1,2,58,tie,M1,M2
0,8,1,2,7,left,M1,M2
1,5,3,1,7,right,M3,M1
"""
GPT3 = """id,prompt,model_x,model_y,winner,left,right
0,8,1,2,left,M1,M2
1,5,3,1,tie,M3,M1
2,9,2,3,right,M2,M3
"""
GPT4 = """id,prompt,model_x,model_y,winner,left,right
0,8,1,2,right,M1,M2
1,5,3,1,left,M3,M1
2,9,2,3,left,M2,M3
"""
PROMPTS = "\n".join(json.dumps({"id": i, "text": "t", "type": t})
                    for i, t in ((5, "code"), (8, "poetry"), (9, "code"))) + "\n"


@pytest.fixture
def llmfao_dir(tmp_path):
    folder = tmp_path / "llmfao"
    folder.mkdir()
    for name, text in (("crowd-comparisons.csv", CROWD), ("gpt3-comparisons.csv", GPT3),
                       ("gpt4-comparisons.csv", GPT4), ("prompts.jsonl", PROMPTS)):
        (folder / name).write_text(text)
    return tmp_path


def _rows(log, cols=("prompt_id", "judge_id", "model_a", "model_b", "outcome")):
    return [tuple(r) for r in log[list(cols)].astype(str).itertuples(index=False)]


def test_llmfao_synthetic(llmfao_dir):
    log = datasets.load("llmfao", data_dir=llmfao_dir)
    _check_schema(log)
    assert _rows(log) == [
        ("8", "crowd:58", "M1", "M2", "tie"), ("8", "crowd:7", "M1", "M2", "a"),
        ("5", "crowd:7", "M3", "M1", "b"),
        ("8", "gpt-3.5", "M1", "M2", "a"), ("5", "gpt-3.5", "M3", "M1", "tie"),
        ("8", "gpt-4", "M1", "M2", "b"), ("5", "gpt-4", "M3", "M1", "a"),
    ]
    assert list(log["item_id"].astype(str)) == ["0", "0", "1", "0", "1", "0", "1"]
    expected_category = ["poetry", "poetry", "code"] + ["poetry", "code"] * 2
    assert list(log["category"].astype(str)) == expected_category
    everything = datasets.load("llmfao", data_dir=llmfao_dir, gpt_pairs="all",
                               judges=("gpt-4",))
    assert _rows(everything)[-1] == ("9", "gpt-4", "M2", "M3", "a")
    assert len(everything) == 3
    sub = datasets.load("llmfao", data_dir=llmfao_dir, models=["M1", "M2"])
    assert set(sub["model_a"].astype(str)) | set(sub["model_b"].astype(str)) == {"M1", "M2"}
    assert len(sub) == 4
    _check_no_unused_categories(sub)  # prompt 5 (code), item 1 and M3 are gone
    assert list(sub["prompt_id"].cat.categories) == ["8"]
    assert list(sub["category"].cat.categories) == ["poetry"]
    assert list(sub["item_id"].cat.categories) == ["0"]
    assert list(sub["judge_id"].cat.categories) == ["crowd:7", "crowd:58", "gpt-3.5", "gpt-4"]
    with pytest.raises(WinrateInputError, match="unknown judge"):
        datasets.load("llmfao", data_dir=llmfao_dir, judges=("crowd", "gpt-5"))


def test_llmfao_bad_label_and_mismatched_pair(llmfao_dir):
    path = llmfao_dir / "llmfao" / "gpt4-comparisons.csv"
    path.write_text(GPT4.replace("2,9,2,3,left", "2,9,2,3,both"))
    with pytest.raises(WinrateInputError, match=r"gpt4-comparisons.csv.*'winner'.*4: 'both'"):
        datasets.load("llmfao", data_dir=llmfao_dir)
    path.write_text(GPT4.replace("1,5,3,1,left,M3,M1", "1,5,3,1,left,M3,M2"))
    with pytest.raises(WinrateInputError, match="differ from crowd"):
        datasets.load("llmfao", data_dir=llmfao_dir)


# --------------------------------------------------------------------------- pandalm


def _pandalm_item(idx, key, instr, inp, a1, a2, a3, app="App"):
    return {"idx": idx, "motivation_app": app, "cmp_key": key, "instruction": instr,
            "input": inp, "response1": "r1", "response2": "r2", "annotator1": a1,
            "annotator2": a2, "annotator3": a3}


@pytest.fixture
def pandalm_dir(tmp_path):
    folder = tmp_path / "pandalm"
    folder.mkdir()
    test = [
        _pandalm_item(0, "my_model_other", "Do X", "", 1, 2, 0),
        _pandalm_item(1, "other_third", "Do X", "", 2, 2, 2),
        _pandalm_item(2, "my_model_third", "Do X", "in", 0, 1, 1, app="B"),
        _pandalm_item(3, "third_my_model", "Do Y", "", 1, 1, 1, app="B"),
    ]
    gpt = [{"idx": i, "gpt_result": r, "gpt_reason": "", "gpt_reference": ""}
           for i, r in ((0, "1"), (1, "Tie"), (2, "garbage"), (3, "2"))]
    panda = [{"idx": i, "pandalm_result": r, "pandalm_reason": "", "pandalm_reference": ""}
             for i, r in ((3, 0), (0, 2), (1, 1), (2, 1))]  # not in test-set order
    for name, data in (("testset-v1.json", test), ("gpt-3.5-turbo-testset-v1.json", gpt),
                       ("pandalm-7b-testset-v1.json", panda)):
        (folder / name).write_text(json.dumps(data))
    return tmp_path


def test_pandalm_synthetic(pandalm_dir):
    with warns_code("verdicts-dropped") as found:
        log = datasets.load("pandalm", data_dir=pandalm_dir)
    assert "dropped 1 of 4 gpt-3.5" in found[0]  # item 2's 'garbage' verdict
    _check_schema(log)
    pairs = {("0", "my_model", "other"), ("1", "other", "third"), ("2", "my_model", "third"),
             ("3", "third", "my_model")}
    assert set(_rows(log, ("item_id", "model_a", "model_b"))) == pairs
    by = {(j, i): o for j, i, o in _rows(log, ("judge_id", "item_id", "outcome"))}
    assert by[("annotator1", "0")] == "a" and by[("annotator2", "0")] == "b"
    assert by[("annotator3", "0")] == "tie" and by[("annotator1", "2")] == "tie"
    assert by[("gpt-3.5", "0")] == "a" and by[("gpt-3.5", "1")] == "tie"
    assert ("gpt-3.5", "2") not in by and by[("gpt-3.5", "3")] == "b"
    assert by[("pandalm-7b", "3")] == "tie" and by[("pandalm-7b", "0")] == "b"
    assert by[("pandalm-7b", "1")] == "a"
    assert len(log) == 4 * 4 + 3
    prompt = dict(_rows(log, ("item_id", "prompt_id")))
    assert prompt["0"] == prompt["1"] != prompt["2"] != prompt["3"] != prompt["0"]
    assert log["prompt_id"].nunique() == 3
    humans = datasets.load("pandalm", data_dir=pandalm_dir, judges=("annotator2",))
    assert len(humans) == 4 and set(humans["judge_id"]) == {"annotator2"}


def test_pandalm_judge_subset_drops_unused_items(pandalm_dir):
    with warns_code("verdicts-dropped"):
        log = datasets.load("pandalm", data_dir=pandalm_dir, judges=("gpt-3.5",))
    _check_no_unused_categories(log)  # item 2 (verdict 'garbage') and its prompt are gone
    assert list(log["item_id"].cat.categories) == ["0", "1", "3"]
    sub = datasets.load("pandalm", data_dir=pandalm_dir, models=["my_model", "third"],
                        judges=("annotator1",))
    _check_no_unused_categories(sub)
    assert list(sub["item_id"].cat.categories) == ["2", "3"]


def test_pandalm_null_input_is_a_prompt_key(tmp_path):
    """A record with ``input: null`` (or a null instruction) is kept: its own prompt."""
    folder = tmp_path / "pandalm"
    folder.mkdir()
    test = [_pandalm_item(0, "a_b", "Do X", None, 1, 2, 0),
            _pandalm_item(1, "a_c", "Do X", None, 2, 2, 2),
            _pandalm_item(2, "b_c", "Do X", "in", 0, 1, 1),
            _pandalm_item(3, "a_b", None, "in", 1, 1, 1)]
    (folder / "testset-v1.json").write_text(json.dumps(test))
    log = datasets.load("pandalm", data_dir=tmp_path, judges=("annotator1",))
    assert list(log["item_id"].astype(str)) == ["0", "1", "2", "3"]
    prompts = list(log["prompt_id"].astype(str))
    assert prompts[0] == prompts[1] and len(set(prompts)) == 3
    assert not log["prompt_id"].isna().any()
    _check_no_unused_categories(log)


def test_pandalm_unknown_label_is_an_error(pandalm_dir):
    path = pandalm_dir / "pandalm" / "pandalm-7b-testset-v1.json"
    data = json.loads(path.read_text())
    data[1]["pandalm_result"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(WinrateInputError, match=r"pandalm_result.*0: 3"):
        datasets.load("pandalm", data_dir=pandalm_dir, judges=("pandalm-7b",))


def test_split_cmp_keys():
    # 'c_d' is known from no key alone: 'a' fixes the split of a_c_d, which then fixes c_d_b
    split = datasets.split_cmp_keys(["a_b", "a_c_d", "c_d_b"])
    assert split == {"a_b": ("a", "b"), "a_c_d": ("a", "c_d"), "c_d_b": ("c_d", "b")}
    split = datasets.split_cmp_keys(["a_b", "b_c", "a_c", "my_m_a", "c_my_m", "my_m_b"])
    assert split["my_m_a"] == ("my_m", "a") and split["c_my_m"] == ("c", "my_m")
    assert split["my_m_b"] == ("my_m", "b") and split["a_b"] == ("a", "b")
    with pytest.raises(WinrateInputError, match="cannot split"):  # 'my' and 'a' both known
        datasets.split_cmp_keys(["a_b", "my_b", "my_m_a"])
    with pytest.raises(WinrateInputError, match="not '<model1>_<model2>'"):
        datasets.split_cmp_keys(["ab"])


# --------------------------------------------------------------------------- chatbot_arena


def test_chatbot_arena_synthetic(tmp_path):
    folder = tmp_path / "chatbot_arena"
    folder.mkdir()
    data = {"models": ["m0", "m1", "m2"], "X": [[0, 1], [2, 0]],
            "Y": [[3, 1, 0, 2], [0, 5, 1, 0]]}
    (folder / "chatbotarena_20240814.json").write_text(json.dumps(data))
    log = datasets.load("chatbot_arena", data_dir=tmp_path)
    _check_schema(log)
    assert "prompt_id" not in log and "judge_id" not in log
    assert _rows(log, ("model_a", "model_b", "outcome", "count")) == [
        ("m0", "m1", "a", "3"), ("m0", "m1", "b", "1"), ("m0", "m1", "tie", "2"),
        ("m2", "m0", "b", "5"), ("m2", "m0", "tie", "1")]
    drop = datasets.load("chatbot_arena", data_dir=tmp_path, both_bad="drop")
    assert drop["count"].sum() == 3 + 1 + 5 + 1
    sub = datasets.load("chatbot_arena", data_dir=tmp_path, models=["m0", "m2"])
    assert list(sub["model_a"].cat.categories) == ["m0", "m2"] and len(sub) == 2
    _check_no_unused_categories(sub)
    data["X"][1] = [2, 2]
    (folder / "chatbotarena_20240814.json").write_text(json.dumps(data))
    with pytest.raises(WinrateInputError, match="row.*1"):
        datasets.load("chatbot_arena", data_dir=tmp_path)


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def real_mmlu():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the real slim files load without warnings
        result = datasets.read_mmlu_pro(REAL)
        log = datasets.mmlu_pro_pairwise(result)
    return result, log


def _raw_mmlu(model):
    path = Path(REAL) / "mmlu_pro" / f"model_outputs_{model}_5shots.slim.json.gz"
    with gzip.open(path, "rt") as fh:
        return {r["question_id"]: r for r in json.load(fh) if isinstance(r, dict)}


@needs_real
def test_real_checksums_match_download_table():
    sums = {}
    for line in (Path(REAL) / "SHA256SUMS").read_text().splitlines():
        digest, rel = line.split(maxsplit=1)
        sums[rel.removeprefix("./")] = digest
    checked = 0
    for entry in itertools.chain.from_iterable(FILES.values()):
        if entry.path in sums:
            expected = entry.member_sha256 if entry.member else entry.sha256
            assert expected == sums[entry.path], entry.path
            actual = hashlib.sha256((Path(REAL) / entry.path).read_bytes()).hexdigest()
            assert actual == expected, entry.path
            checked += 1
    assert checked == 10  # 6 llmfao + 3 pandalm + 1 chatbot_arena
    assert all(e.sha256 is None for e in FILES["mmlu_pro"])  # slimmed here: zips unknown


@needs_real
def test_real_mmlu_pro(real_mmlu):
    result, log = real_mmlu
    corr = result.correctness
    assert corr.shape == (12032, 29)
    assert list(corr.columns) == list(MMLU_PRO_MODELS)
    assert result.questions["category"].nunique() == 14
    assert corr["DeepSeek-Coder-V2"].notna().sum() == 10351  # README: one partial model
    _check_schema(log)
    # rows = sum over pairs of questions both answered, counted from the raw files
    answered = {m: set(_raw_mmlu(m)) for m in MMLU_PRO_MODELS}
    n_rows = sum(len(answered[a] & answered[b])
                 for a, b in itertools.combinations(MMLU_PRO_MODELS, 2))
    assert len(log) == n_rows == 4_837_036
    assert log["prompt_id"].nunique() == 12032 and log["model_a"].nunique() == 28


@needs_real
def test_real_mmlu_pro_outcomes_by_hand(real_mmlu):
    _, log = real_mmlu
    models = ["DeepSeek-Coder-V2", "Llama-2-7b-hf", "gemini-1.5-pro-002", "mathstral-7B"]
    raw = {m: _raw_mmlu(m) for m in models}
    questions = [70, 143, 3872, 11289, 12256]  # incl. a re-keyed and a DeepSeek-missing one
    sel = log[log["prompt_id"].isin([str(q) for q in questions])
              & log["model_a"].isin(models) & log["model_b"].isin(models)]
    got = sorted(_rows(sel, ("prompt_id", "model_a", "model_b", "outcome")))
    expected = []
    for q in questions:
        for a, b in itertools.combinations(models, 2):
            if q in raw[a] and q in raw[b]:
                ra, rb = raw[a][q], raw[b][q]
                expected.append((str(q), a, b, _outcome(
                    ra["pred"] is not None and ra["pred"] == ra["answer"],
                    rb["pred"] is not None and rb["pred"] == rb["answer"])))
    assert got == sorted(expected)
    assert len(expected) > 20


@needs_real
def test_real_mmlu_pro_subset_is_fast_and_consistent(real_mmlu):
    _, full = real_mmlu
    models = ["Yi-6B", "Meta-Llama-3-8B"]
    log = datasets.load("mmlu_pro", models=models)
    part = full[full["model_a"].isin(models) & full["model_b"].isin(models)]
    assert len(log) == len(part) == 12032
    # model_a follows the order of models=
    assert set(log["model_a"].astype(str)) == {"Yi-6B"}
    flipped = part["outcome"].astype(str).map({"a": "b", "b": "a", "tie": "tie"})
    assert list(log["outcome"].astype(str)) == list(flipped)


@needs_real
def test_real_llmfao():
    log = datasets.load("llmfao")
    _check_schema(log)
    crowd = pd.read_csv(Path(REAL) / "llmfao" / "crowd-comparisons.csv")
    is_crowd = log["judge_id"].astype(str).str.startswith("crowd:")
    assert is_crowd.sum() == len(crowd) == 8931
    assert log.loc[is_crowd, "judge_id"].nunique() == 124
    assert log["prompt_id"].nunique() == 13 and log["model_a"].cat.categories.size == 59
    n_pairs = crowd["id"].nunique()
    assert (log["judge_id"] == "gpt-4").sum() == (log["judge_id"] == "gpt-3.5").sum() == n_pairs
    counts = log.loc[is_crowd, "outcome"].astype(str).value_counts()
    raw = crowd["winner"].value_counts()
    assert (counts["a"], counts["b"], counts["tie"]) == (raw["left"], raw["right"], raw["tie"])
    everything = datasets.load("llmfao", judges=("gpt-3.5",), gpt_pairs="all")
    assert len(everything) == 3236 and everything["model_a"].cat.categories.size == 70


@needs_real
def test_real_llmfao_model_subset_has_no_phantom_categories():
    models = ["GPT 4", "GPT 3.5 Turbo"]
    log = datasets.load("llmfao", models=models)
    _check_no_unused_categories(log)
    raw = pd.read_csv(Path(REAL) / "llmfao" / "crowd-comparisons.csv")
    pair = raw[raw["left"].isin(models) & raw["right"].isin(models)]
    is_crowd = log["judge_id"].astype(str).str.startswith("crowd:")
    assert is_crowd.sum() == len(pair) > 0
    assert set(log["prompt_id"].cat.categories) == set(pair["prompt"].astype(str))
    assert set(log.loc[is_crowd, "judge_id"].astype(str)) == {f"crowd:{w}"
                                                               for w in pair["worker"]}
    assert set(log["item_id"].cat.categories) == set(pair["id"].astype(str))


@needs_real
def test_real_pandalm():
    with warns_code("verdicts-dropped") as found:
        log = datasets.load("pandalm")
    assert "dropped 25 of 999 gpt-3.5" in found[0]
    _check_schema(log)
    assert len(log) == 4 * 999 + 974
    assert log["prompt_id"].nunique() == 170 and log["item_id"].nunique() == 999
    assert log["model_a"].cat.categories.size == 5
    raw = json.loads((Path(REAL) / "pandalm" / "testset-v1.json").read_text())
    label = {1: "a", 2: "b", 0: "tie"}
    first = log[log["judge_id"] == "annotator3"]
    for item in raw[:40]:  # a plain loop over a handful of items
        row = first[first["item_id"] == str(item["idx"])]
        m1, m2 = item["cmp_key"].split("_")
        assert _rows(row, ("model_a", "model_b", "outcome")) == [
            (m1, m2, label[item["annotator3"]])]


@needs_real
def test_real_chatbot_arena():
    log = datasets.load("chatbot_arena")
    _check_schema(log)
    assert log["count"].sum() == 1_670_250
    assert log["model_a"].cat.categories.size == 129
    raw = json.loads((Path(REAL) / "chatbot_arena" / "chatbotarena_20240814.json").read_text())
    for (i, j), (win, loss, tie, bad) in list(zip(raw["X"], raw["Y"], strict=True))[:25]:
        rows = log[(log["model_a"] == raw["models"][i]) & (log["model_b"] == raw["models"][j])]
        got = dict(zip(rows["outcome"].astype(str), rows["count"], strict=True))
        want = {k: v for k, v in (("a", win), ("b", loss), ("tie", tie + bad)) if v}
        assert got == want
