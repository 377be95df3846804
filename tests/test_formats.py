"""Tests of winrate.io.formats: hand-written fixtures of every format, the shared real data
(counted independently with plain json), and AlpacaEval's published leaderboard numbers."""

from __future__ import annotations

import gzip
import json
import math
import os
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.note_codes import notes_of, warns_code
from winrate.cli import main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io import datasets
from winrate.io.datasets import read_dataset
from winrate.io.download import DataUnavailableError
from winrate.io.formats import (
    LOG_FORMATS,
    clean_model_name,
    read_format,
    read_log,
    style_difference,
)

REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL).is_dir(),
                                reason="WINRATE_DATA is not set: real-data tests skipped")


def write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_json(path: Path, data, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data).encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def rows(frame: pd.DataFrame, *cols) -> list[tuple]:
    return [tuple(r) for r in frame[list(cols)].astype(object).itertuples(index=False)]


def test_format_names():
    assert LOG_FORMATS == ("alpaca_eval", "qlora", "prd", "clean_battle", "arena_hard",
                           "arena", "mt_bench", "lm_eval", "inspect", "eee", "helm",
                           "lighteval")
    with pytest.raises(WinrateInputError, match="unknown format 'nope'; available: alpaca"):
        read_format(".", "nope")


def test_style_difference_by_hand():
    got = style_difference([3, 0, 0, 5], [1, 0, 2, 5])
    assert got.tolist() == pytest.approx([2 / 5, 0.0, -2 / 3, 0.0], abs=1e-15)


def test_clean_model_name():
    assert clean_model_name("13b-guanaco-vicuna-generations-topp0.9-temp0.7") == "guanaco-13b"
    assert clean_model_name("answer-gpt35") == "gpt35"
    assert clean_model_name("answer_vicuna-13b") == "vicuna-13b"
    assert clean_model_name("gpt-3.5") == "gpt-3.5"


# --------------------------------------------------------------------------- alpaca_eval


def alpaca_record(pref, model="m1", instruction="q1", out1="ab", out2="abcdef",
                  base="base"):
    return {"instruction": instruction, "output_1": out1, "generator_1": base,
            "output_2": out2, "generator_2": model, "annotator": "judge",
            "preference": pref, "dataset": "d"}


def test_alpaca_eval_fixture(tmp_path):
    prefs = [1.0, 2.0, 1.7, 1.5, 0, None, 3.0, 1.2]
    records = [alpaca_record(p, instruction=f"q{i}") for i, p in enumerate(prefs)]
    records[7]["output_1"] = records[7]["output_2"] = ""
    write_json(tmp_path / "m1.json.gz", records, gz=True)
    write_json(tmp_path / "sub" / "base.json",
               [alpaca_record(1.5, model="base", instruction="q0")])
    with pytest.warns(WinrateWarning) as caught:
        frame = read_format(tmp_path, "alpaca_eval")
    found = notes_of(caught)
    assert found.codes == ["verdicts-dropped", "self-comparisons"]
    assert "m1.json.gz (2 of 8)" in found[0]  # preferences None and 3.0
    assert found[1].models == ("base",)
    assert list(frame.columns) == ["prompt_id", "judge_id", "model_a", "model_b", "outcome",
                                   "style_length", "style_length_delta"]
    assert rows(frame, "prompt_id", "model_a", "model_b") == [
        (f"q{i}", "m1", "base") for i in (0, 1, 2, 3, 4, 7)]
    np.testing.assert_allclose(frame["outcome"], [0.0, 1.0, 0.7, 0.5, 0.5, 0.2])
    # (6 - 2) / (6 + 2 + 1) for the model's longer answer; 0 when both are empty
    np.testing.assert_allclose(frame["style_length"], [4 / 9] * 5 + [0.0])
    np.testing.assert_array_equal(frame["style_length_delta"], [4.0] * 5 + [0.0])
    with warns_code("verdicts-dropped"):
        discrete = read_format(tmp_path / "m1.json.gz", "alpaca_eval", discrete=True)
    np.testing.assert_allclose(discrete["outcome"], [0.0, 1.0, 1.0, 0.5, 0.5, 0.0])


def test_alpaca_eval_bad_preference(tmp_path):
    write_json(tmp_path / "a.json", [alpaca_record(1.5), alpaca_record("high")])
    with pytest.raises(WinrateInputError, match=r"a\.json: non-numeric preference in "
                                                r"record\(s\) 1"):
        read_format(tmp_path / "a.json", "alpaca_eval")
    write_json(tmp_path / "b.json", [{"instruction": "q"}])
    with pytest.raises(WinrateInputError, match=r"b\.json: field 'generator_1' missing in "
                                                r"record\(s\) 0"):
        read_format(tmp_path / "b.json", "alpaca_eval")
    write_json(tmp_path / "c.json", {"not": "a list"})
    with pytest.raises(WinrateInputError, match=r"c\.json: expected a JSON list"):
        read_format(tmp_path / "c.json", "alpaca_eval")


# --------------------------------------------------------------------------- qlora / prd


def pair_records(scores, start=1):
    return [{"question_id": start + i, "score": s, "text": "..."} for i, s in enumerate(scores)]


def test_qlora_fixture(tmp_path):
    pairwise = tmp_path / "pairwise"
    write_jsonl(pairwise / ("13b-guanaco-vicuna-generations-topp0.9-temp0.7-vs-answer-gpt4-"
                            "gpt-4-reviewer-threeclass.jsonl"), pair_records([1, 2, 3, -1]))
    write_jsonl(tmp_path / "relative" / "bard-vs-gpt-3.5-gpt4-reviewer.jsonl",
                pair_records([[9.0, 6.0], [5, 5], [6, 8.5], [-1, -1]]))
    with warns_code("verdicts-dropped") as found:
        frame = read_format(tmp_path, "qlora")
    assert "dropped 2 row(s)" in found[0] and "in 2 file(s)" in found[0]
    assert rows(frame, "prompt_id", "judge_id", "model_a", "model_b", "outcome") == [
        ("1", "gpt-4", "guanaco-13b", "gpt4", 1.0), ("2", "gpt-4", "guanaco-13b", "gpt4", 0.0),
        ("3", "gpt-4", "guanaco-13b", "gpt4", 0.5), ("1", "gpt4-scores", "bard", "gpt-3.5", 1.0),
        ("2", "gpt4-scores", "bard", "gpt-3.5", 0.5), ("3", "gpt4-scores", "bard", "gpt-3.5", 0.0),
    ]
    assert list(frame["model_a"].cat.categories) == ["bard", "gpt-3.5", "gpt4", "guanaco-13b"]
    # one file alone reads the same rows as within its folder
    with warns_code("verdicts-dropped"):
        single = read_format(next(pairwise.iterdir()), "qlora")
    assert len(single) == 3


def test_qlora_bad_file_name(tmp_path):
    bad = write_jsonl(tmp_path / "model-a-and-model-b.jsonl", pair_records([1]))
    with pytest.raises(WinrateInputError, match=r"model-a-and-model-b\.jsonl: file name is "
                                                r"not '<A>-vs-<B>"):
        read_format(bad, "qlora")


def test_prd_fixture(tmp_path):
    vic = tmp_path / "ratings-vicuna-13b"
    write_jsonl(vic / "answer_bard-vs-answer_vicuna-13b-vicuna-13b-reviewer.jsonl",
                pair_records([1, 3]))
    write_jsonl(tmp_path / "ratings-human" / "answer_gpt4-vs-answer_guanaco-7b-human-"
                "reviewer_threeclass.jsonl", pair_records([2, 2, 1]) * 1)
    gpt35 = tmp_path / "ratings-gpt35"
    write_jsonl(gpt35 / "answer-gpt35-vs-answer-gpt4-gpt35-reviewer-threeclass.jsonl",
                pair_records([1, 1]))
    write_jsonl(gpt35 / "answer_gpt35-vs-answer_gpt4-gpt35-reviewer_threeclass.jsonl",
                pair_records([2, 2]))
    with warns_code("duplicate-files") as found:
        frame = read_format(tmp_path, "prd")
    assert found[0].models == ("gpt35", "gpt4") and "both are kept" in found[0]
    assert rows(frame, "judge_id", "model_a", "model_b", "outcome") == [
        ("gpt35", "gpt35", "gpt4", 1.0), ("gpt35", "gpt35", "gpt4", 1.0),
        ("gpt35", "gpt35", "gpt4", 0.0), ("gpt35", "gpt35", "gpt4", 0.0),
        ("human", "gpt4", "guanaco-7b", 0.0), ("human", "gpt4", "guanaco-7b", 0.0),
        ("human", "gpt4", "guanaco-7b", 1.0),
        ("vicuna-13b", "bard", "vicuna-13b", 1.0), ("vicuna-13b", "bard", "vicuna-13b", 0.5),
    ]
    with warns_code("duplicate-files") as found:
        first = read_format(gpt35, "prd", duplicates="first")
    assert "only the first is kept" in found[0]
    assert first["outcome"].tolist() == [1.0, 1.0]  # the hyphenated file sorts first
    loose = write_jsonl(tmp_path / "elsewhere" / "answer_a-vs-answer_b-x-reviewer.jsonl",
                        pair_records([1]))
    with pytest.raises(WinrateInputError, match="cannot tell the reviewer"):
        read_format(loose, "prd")
    assert rows(read_format(loose, "prd", reviewer="x"), "judge_id", "model_a") == [("x", "a")]
    with pytest.raises(WinrateInputError, match=r"answer_a-vs-answer_b-x-reviewer\.jsonl: "
                                                r"file name is not"):
        read_format(loose, "prd", reviewer="y")


def test_broken_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "ratings-gpt4" / "answer_a-vs-answer_b-gpt4-reviewer.jsonl"
    path.parent.mkdir()
    path.write_text('{"question_id": 1, "score": 1}\n\n{"question_id": 2, "score": \n')
    with pytest.raises(WinrateInputError, match=r"answer_a-vs-answer_b-gpt4-reviewer\.jsonl: "
                                                r"line 3 is not valid JSON"):
        read_format(tmp_path, "prd")
    path.write_text('{"question_id": 1}\n')
    with pytest.raises(WinrateInputError, match=r"field 'score' missing in line\(s\) 1"):
        read_format(tmp_path, "prd")


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(WinrateInputError, match="no such file or folder"):
        read_format(tmp_path / "nothing", "qlora")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(WinrateInputError, match="no .json, .json.gz, .jsonl, .jsonl.gz file"):
        read_format(tmp_path, "qlora")


# --------------------------------------------------------------------------- clean_battle


def battle(a, b, winner, qid, judge="u1", meta=None):
    record = {"model_a": a, "model_b": b, "winner": winner, "judge": judge,
              "question_id": qid, "anony": True, "tstamp": 1.0}
    if meta is not None:
        record["conv_metadata"] = meta
    return record


def style_meta(tokens_a, tokens_b, header_a=0, header_b=0, lists_a=None, lists_b=None,
               bold_a=0, bold_b=0):
    return {"sum_assistant_a_tokens": tokens_a, "sum_assistant_b_tokens": tokens_b,
            "header_count_a": header_a, "header_count_b": header_b,
            "list_count_a": lists_a or {"ordered": 0, "unordered": 0},
            "list_count_b": lists_b or {"ordered": 0, "unordered": 0},
            "bold_count_a": bold_a, "bold_count_b": bold_b}


def test_clean_battle_fixture(tmp_path):
    records = [
        battle("x", "y", "model_a", "c1", meta=style_meta(30, 10, header_a=2, bold_b=4)),
        battle("y", "z", "model_b", "c2", judge="u2",
               meta=style_meta(5, 5, lists_a={"ordered": 2, "unordered": 1},
                               lists_b={"ordered": 1, "unordered": 0})),
        battle("x", "z", "tie", "c3", meta=style_meta(0, 0)),
        battle("z", "y", "tie (bothbad)", 7, meta=style_meta(1, 3)),
    ]
    write_json(tmp_path / "list.json", records)
    write_jsonl(tmp_path / "lines.jsonl", records)
    as_list = read_format(tmp_path / "list.json", "clean_battle")
    as_lines = read_format(tmp_path / "lines.jsonl", "clean_battle")
    pd.testing.assert_frame_equal(as_list, as_lines)
    assert rows(as_list, "prompt_id", "judge_id", "model_a", "model_b", "outcome") == [
        ("c1", "u1", "x", "y", 1.0), ("c2", "u2", "y", "z", 0.0), ("c3", "u1", "x", "z", 0.5),
        ("7", "u1", "z", "y", 0.5)]
    np.testing.assert_allclose(as_list["style_tokens"], [20 / 41, 0.0, 0.0, -2 / 5])
    np.testing.assert_allclose(as_list["style_header_count"], [2 / 3, 0, 0, 0])
    np.testing.assert_allclose(as_list["style_list_count"], [0, 2 / 5, 0, 0])  # (3-1)/(3+1+1)
    np.testing.assert_allclose(as_list["style_bold_count"], [-4 / 5, 0, 0, 0])
    dropped = read_format(tmp_path / "list.json", "clean_battle", both_bad="drop")
    assert len(dropped) == 3
    log = read_log(tmp_path / "list.json", "clean_battle")
    assert sorted(log.features) == ["style_bold_count", "style_header_count",
                                    "style_list_count", "style_tokens"]
    assert log.axes["prompt"].n_clusters == 4 and log.axes["judge"].n_clusters == 2
    # a folder with both files reads both, list.json after lines.jsonl (sorted order)
    both = read_format(tmp_path, "clean_battle")
    assert len(both) == 8


def test_clean_battle_optional_fields_and_errors(tmp_path):
    plain = [{"model_a": "x", "model_b": "y", "winner": "model_b", "conv_id": "k"}]
    frame = read_format(write_json(tmp_path / "p.json", plain), "clean_battle")
    assert list(frame.columns) == ["prompt_id", "model_a", "model_b", "outcome"]
    with pytest.raises(WinrateInputError, match="conv_metadata with .* missing .* style=True"):
        read_format(tmp_path / "p.json", "clean_battle", style=True)
    nameless = [battle("x", "y", "tie", 1), battle(None, "y", "tie", 2)]
    with pytest.raises(WinrateInputError, match=r"field 'model_a' is null in line\(s\) 2"):
        read_format(write_jsonl(tmp_path / "nameless.jsonl", nameless), "clean_battle")
    bad = [battle("x", "y", "model_a", 1), battle("x", "y", "left", 2)]
    with pytest.raises(WinrateInputError, match=r"bad\.jsonl: unknown winner in 1 line\(s\): "
                                                r"'left' in 1 line, first line\(s\) 2"):
        read_format(write_jsonl(tmp_path / "bad.jsonl", bad), "clean_battle")
    with pytest.raises(WinrateInputError, match=r"unknown option\(s\) \['baseline'\]; it "
                                                r"takes \['both_bad', 'style', "):
        read_format(tmp_path / "p.json", "clean_battle", baseline="x")


# --------------------------------------------------------------------------- arena_hard


def judgment(qid, model, game1, game2, judge="gpt-4-1106-preview", **extra):
    return {"question_id": qid, "model": model, "judge": judge,
            "games": [None if game1 is None else {"score": game1, "judgment": "..."},
                      None if game2 is None else {"score": game2}], **extra}


def test_arena_hard_fixture(tmp_path):
    folder = tmp_path / "model_judgment" / "gpt-4-1106-preview"
    write_jsonl(folder / "m1.jsonl", [
        judgment("q1", "m1", "A>>B", "A>B"),   # game 1: baseline (A) much better; game 2: m1
        judgment("q2", "m1", "B>A", "B>>A"),   # game 1: m1 (B) better; game 2: baseline
        judgment("q3", "m1", "A=B", None),
    ])
    for baseline in ("gpt-4-0314", "gpt-4o"):  # the baseline judged against itself
        write_jsonl(folder / f"{baseline}.jsonl", [judgment("q1", baseline, "A=B", "A=B")])
    with warns_code("verdicts-dropped") as found:
        frame = read_format(tmp_path, "arena_hard", baseline="gpt-4-0314", strong_weight=1)
    assert "dropped 1 row(s)" in found[0]  # q3's game 2
    frame = frame.loc[frame["model_a"] == "m1"]
    assert rows(frame, "prompt_id", "judge_id", "model_a", "model_b", "outcome") == [
        ("q1", "gpt-4-1106-preview", "m1", "gpt-4-0314", 0.0),
        ("q2", "gpt-4-1106-preview", "m1", "gpt-4-0314", 1.0),
        ("q3", "gpt-4-1106-preview", "m1", "gpt-4-0314", 0.5),
        ("q1", "gpt-4-1106-preview", "m1", "gpt-4-0314", 1.0),
        ("q2", "gpt-4-1106-preview", "m1", "gpt-4-0314", 0.0),
    ]
    assert "count" not in frame.columns
    with warns_code("verdicts-dropped"):
        weighted = read_log([folder / "m1.jsonl", folder / "gpt-4o.jsonl"], "arena_hard",
                            baseline="gpt-4o")  # upstream's weight 3 by default
    assert weighted.frequency.tolist() == [3, 1, 1, 1, 3]
    assert list(weighted.models) == ["gpt-4o", "m1"]
    # arena-hard-auto's own expansion: 3 + 1 + 1 + 1 + 3 battles, mean model score
    assert np.average(weighted.score, weights=weighted.frequency) == pytest.approx(
        (0 * 3 + 1 + 0.5 + 1 + 0 * 3) / 9)


def test_arena_hard_v2_records_and_errors(tmp_path):
    v2 = [{"uid": "u1", "category": "hard_prompt", "judge": "j", "model": "m",
           "baseline": "o3-mini", "games": [{"score": "A<<B"}, {"score": "B<A"}]}]
    frame = read_format(write_jsonl(tmp_path / "v2.jsonl", v2), "arena_hard")
    assert rows(frame, "prompt_id", "model_a", "model_b", "outcome") == [
        ("u1", "m", "o3-mini", 1.0), ("u1", "m", "o3-mini", 1.0)]
    with pytest.raises(WinrateInputError, match="name the baseline 'o3-mini', not "
                                                "baseline='gpt-4-0314'"):
        read_format(tmp_path / "v2.jsonl", "arena_hard", baseline="gpt-4-0314")
    bad = [judgment(1, "m", "A>B", "A>>>B", baseline="b")]
    with pytest.raises(WinrateInputError, match=r"bad\.jsonl: game 2: unknown verdict "
                                                r"'A>>>B' in line\(s\) 1"):
        read_format(write_jsonl(tmp_path / "bad.jsonl", bad), "arena_hard")
    one_game = [{"question_id": 1, "model": "m", "games": [{"score": "A>B"}], "baseline": "b"}]
    with pytest.raises(WinrateInputError, match="not a list of two games"):
        read_format(write_jsonl(tmp_path / "one.jsonl", one_game), "arena_hard")
    with pytest.raises(WinrateInputError, match="strong_weight must be an integer >= 1"):
        read_format(tmp_path / "v2.jsonl", "arena_hard", strong_weight=0)


# --------------------------------------------------------------------------- CLI


def test_cli_format_folder(tmp_path, capsys):
    folder = tmp_path / "judgments"
    records = [judgment(q, m, g1, g2) for q in range(12) for m, g1, g2 in
               (("m1", "A>B", "B>A"), ("m2", "B>A", "A>B"), ("m3", "A=B", "A>B"),
                ("gpt-4-0314", "A=B", "A=B"))]
    write_jsonl(folder / "all.jsonl", records)
    assert main(["leaderboard", str(folder), "--format", "arena_hard", "--cluster",
                 "prompt", "--baseline", "gpt-4-0314"]) == 0
    out = capsys.readouterr().out
    assert "72 comparisons, 3 models" in out and "baseline gpt-4-0314 (the reference" in out
    assert main(["leaderboard", str(folder), "--format", "arena_hard", "--discrete"]) == 2
    assert "--discrete applies to --format alpaca_eval" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "none"), "--format", "qlora"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- real data


def plain_records(folder: Path):
    """(relative path, records) of every JSON / JSONL file, read with plain json."""
    out = []
    for path in sorted(folder.rglob("*")):
        if path.name.endswith((".jsonl", ".json", ".json.gz")):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as handle:
                if path.name.endswith(".jsonl"):
                    records = [json.loads(line) for line in handle if line.strip()]
                else:
                    records = json.load(handle)
            out.append((path, records))
    return out


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return function(*args, **kwargs)


ALPACA_FOLDER = Path(REAL or ".") / "alpaca_eval" / "weighted_alpaca_eval_gpt4_turbo"


@pytest.fixture(scope="session")
def alpaca_plain_records():
    """The AlpacaEval annotation files read with plain json (once per test worker)."""
    return plain_records(ALPACA_FOLDER)


@pytest.fixture(scope="session")
def alpaca_frame():
    """The alpaca_eval reader's frame of the annotation folder (once per test worker)."""
    return quiet(read_format, ALPACA_FOLDER, "alpaca_eval")


@needs_real
def test_real_alpaca_eval_counts(alpaca_plain_records, alpaca_frame, alpaca_eval_log):
    files = alpaca_plain_records
    expected = Counter()
    for path, records in files:  # the file names the model (AlpacaEval's convention)
        for r in records:
            p = r["preference"]
            if r["generator_1"] != r["generator_2"] and p is not None \
                    and (p == 0 or 1 <= p <= 2):
                expected[(path.name.split(".json")[0], r["generator_1"])] += 1
    frame = alpaca_frame
    got = Counter(zip(frame["model_a"].astype(str), frame["model_b"].astype(str),
                      strict=True))
    assert got == expected
    assert len(frame) == 45875 and len(got) == 57
    assert frame["prompt_id"].nunique() == 805 and frame["judge_id"].nunique() == 1
    log = alpaca_eval_log()
    assert "NullModel" in log.models and "example" not in log.models
    assert log.n_models == 58 and list(log.features) == ["style_length", "style_length_delta"]
    (null_file,) = [recs for path, recs in files if path.name == "NullModel.json.gz"]
    assert {r["generator_2"] for r in null_file} == {"example"}


@needs_real
def test_real_alpaca_eval_reproduces_published_leaderboard(alpaca_eval_log):
    """For every model with an annotations file, the reader's mean score vs the baseline
    is the published win_rate / discrete_win_rate and its SEM the standard_error.

    The annotations store preferences rounded to 10 decimals while upstream averaged the
    unrounded ones, so agreement is to 1e-10 * 100 = 1e-8 percentage points at worst."""
    board = pd.read_csv(Path(REAL) / "alpaca_eval" /
                        "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", index_col=0)
    weighted, discrete = alpaca_eval_log(), alpaca_eval_log(discrete=True)
    assert list(weighted.models) == list(discrete.models)
    baseline = list(weighted.models).index("gpt4_1106_preview")
    assert (weighted.model_b == baseline).all()
    checked, not_listed, worst = [], [], np.zeros(3)
    for code, model in enumerate(weighted.models):
        if code == baseline:
            continue
        if model not in board.index:
            not_listed.append(model)
            continue
        score = weighted.score[weighted.model_a == code]
        hard = discrete.score[discrete.model_a == code]
        row = board.loc[model]
        assert len(score) == row["n_total"]
        diffs = np.abs([100 * score.mean() - row["win_rate"],
                        100 * hard.mean() - row["discrete_win_rate"],
                        100 * score.std(ddof=1) / math.sqrt(len(score))
                        - row["standard_error"]])
        worst = np.maximum(worst, diffs)
        checked.append(model)
    assert len(checked) == 56 and not_listed == ["text_davinci_003"]
    assert worst.max() < 1e-8, worst
    assert board.loc["gpt4_1106_preview", "win_rate"] == 50.0  # the dropped self file


@needs_real
@pytest.mark.parametrize("name, folder, n_rows, n_models, dropped", [
    ("qlora", "qlora/ratings-gpt4/vicuna/pairwise", 4467, 8, 13),
    ("qlora", "qlora", 10167, 38, 73),
    ("prd", "prd", 15200, 9, 0),
])
def test_real_pair_folders_counts(name, folder, n_rows, n_models, dropped):
    root = Path(REAL) / folder
    expected, n_bad = Counter(), 0
    for path, records in plain_records(root):
        reviewer = path.parent.name.removeprefix("ratings-") if name == "prd" else None
        left, right = path.name.split("-vs-", 1)
        for r in records:
            s = r["score"]
            ok = s in (1, 2, 3) or (isinstance(s, list) and min(s) >= 0)
            n_bad += not ok
            if ok:
                expected[(str(r["question_id"]), reviewer, left)] += 1
    frame = quiet(read_format, root, name)
    assert len(frame) == sum(expected.values()) == n_rows
    assert n_bad == dropped
    assert frame["model_a"].cat.categories.size == n_models
    assert frame["prompt_id"].nunique() == 80
    if name == "prd":
        assert list(frame["judge_id"].cat.categories) == list(datasets.PRD_JUDGES)
        got = Counter(zip(frame["prompt_id"].astype(str), frame["judge_id"].astype(str),
                          strict=True))
        want = Counter()
        for (qid, reviewer, _), n in expected.items():
            want[(qid, reviewer)] += n
        assert got == want


@needs_real
def test_real_qlora_dataset_models_and_renames():
    log = quiet(read_dataset, "qlora")
    assert list(log.models) == ["bard", "gpt35", "gpt4", "guanaco-13b", "guanaco-30b",
                                "guanaco-65b", "guanaco-7b", "vicuna-13b"]
    assert log.n_rows == 4467 and list(log.axes["judge"].labels) == ["gpt-4"]
    both = quiet(read_dataset, "qlora", ratings=("pairwise", "relative-gpt-3.5"))
    assert "gpt-3.5" not in both.models and both.n_models == 37
    # the rename is honest: relative-gpt-3.5's ChatGPT answers are pairwise's gpt35 answers
    root = Path(REAL) / "qlora" / "ratings-gpt4" / "vicuna"
    ids_pairwise = {json.loads(line)["answer2_id"] for line in open(
        root / "pairwise" / "answer-bard-vs-answer-gpt35-gpt-4-reviewer-threeclass.jsonl")}
    ids_relative = {json.loads(line)["answer2_id"] for line in open(
        root / "relative-gpt-3.5" / "bard-vs-gpt-3.5-gpt4-reviewer.jsonl")}
    assert ids_pairwise == ids_relative
    subset = quiet(read_dataset, "qlora", models=["gpt4", "bard"])
    assert subset.n_rows == 160 and list(subset.models) == ["bard", "gpt4"]


@needs_real
def test_real_prd_dataset_options():
    with warns_code("duplicate-files"):
        log = read_dataset("prd")
    assert log.n_rows == 15200
    with warns_code("duplicate-files"):
        first = read_dataset("prd", duplicates="first")
    assert first.n_rows == 15200 - 160
    reviewers = quiet(read_dataset, "prd", judges=["gpt4", "claude"])
    assert reviewers.n_rows == 3200 and reviewers.n_models == 5


def test_folder_datasets_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path))
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))
    for name in ("alpaca_eval", "qlora", "prd"):
        with pytest.raises(DataUnavailableError, match=f"dataset '{name}': folder .* is not "
                                                       "on this machine"):
            datasets.load(name)
    assert main(["leaderboard", "--dataset", "prd"]) == 2


# --------------------------------------------------------------------------- review fixes


@pytest.mark.parametrize("field", ["generator_1", "generator_2", "annotator"])
def test_alpaca_eval_null_name_is_an_error_naming_the_record(tmp_path, field):
    records = [alpaca_record(1.7, instruction="q0"), alpaca_record(1.2, instruction="q1")]
    records[1][field] = None
    write_json(tmp_path / "m1.json", records)
    with pytest.raises(WinrateInputError, match=rf"m1\.json: field '{field}' is null in "
                                                rf"record\(s\) 1"):
        read_format(tmp_path / "m1.json", "alpaca_eval")


def test_ids_of_unicode_digits_sort_without_crashing(tmp_path):
    # "²".isdigit() is True but int("²") fails: such an id is text, sorted after numbers
    write_jsonl(tmp_path / "ratings-gpt4" / "answer_a-vs-answer_b-gpt4-reviewer.jsonl",
                [{"question_id": q, "score": 1} for q in ("²", 10, 9, "٣")])
    frame = read_format(tmp_path, "prd")
    assert list(frame["prompt_id"].cat.categories) == ["٣", "9", "10", "²"]


def test_clean_battle_prompt_or_judge_missing_in_some_records_is_an_error(tmp_path):
    records = [battle("x", "y", "tie", 1), battle("x", "y", "model_a", 2),
               battle("y", "x", "model_b", 3)]
    del records[1]["question_id"]
    with pytest.raises(WinrateInputError, match=r"q\.jsonl: field 'question_id' missing in "
                                                r"line\(s\) 2 .*present in the others"):
        read_format(write_jsonl(tmp_path / "q.jsonl", records), "clean_battle")
    records = [battle("x", "y", "tie", 1), battle("x", "y", "model_a", 2)]
    del records[0]["judge"]
    with pytest.raises(WinrateInputError, match=r"j\.json: field 'judge' missing in "
                                                r"record\(s\) 0 .*present in the others"):
        read_format(write_json(tmp_path / "j.json", records), "clean_battle")


def test_clean_battle_style_count_of_text_is_an_error(tmp_path):
    meta = style_meta(3, 1, lists_a={"ordered": "2", "unordered": 0})
    path = write_json(tmp_path / "s.json", [battle("x", "y", "tie", 1, meta=meta)])
    with pytest.raises(WinrateInputError, match=r"s\.json: conv_metadata list_count_a/"
                                                r"list_count_b is not a count >= 0 in "
                                                r"record\(s\) 0"):
        read_format(path, "clean_battle")


_OUT_KEYS = ("prompt_id", "judge_id", "model_a", "model_b")


def plain_model_name(raw: str) -> str:
    """The model-name rule of the module docstring, written out with str methods."""
    for prefix in ("answer-", "answer_"):
        raw = raw.removeprefix(prefix)
    if "-vicuna-generations" in raw:
        size, rest = raw.split("-", 1)
        return rest.split("-vicuna-generations")[0] + "-" + size
    return raw


def plain_verdict(score):
    """1 / 2 / 3 -> 1 / 0 / 0.5; two grades -> who got more; None when unparsed."""
    if isinstance(score, list):
        return None if min(score) < 0 else 0.5 + 0.5 * ((score[0] > score[1])
                                                        - (score[0] < score[1]))
    return {1: 1.0, 2: 0.0, 3: 0.5}.get(score)


@needs_real
@pytest.mark.parametrize("name", ["qlora", "prd"])
def test_real_pair_folders_outcomes_by_plain_loops(name):
    """Count and outcome sum of every (question, judge, model_a, model_b), from the files
    read with plain json and the file names split with str methods."""
    expected = {}
    for path, records in plain_records(Path(REAL) / name):
        left, right = path.name.split("-vs-", 1)
        if name == "prd":
            judge = reviewer = path.parent.name.removeprefix("ratings-")
        else:
            reviewer = "gpt-4" if path.parent.name == "pairwise" else "gpt4"
            judge = "gpt-4" if reviewer == "gpt-4" else "gpt4-scores"
        right = right[:right.rindex("-reviewer")].removesuffix("-" + reviewer)
        for r in records:
            outcome = plain_verdict(r["score"])
            if outcome is not None:
                key = (str(r["question_id"]), judge, plain_model_name(left),
                       plain_model_name(right))
                n, total = expected.get(key, (0, 0.0))
                expected[key] = (n + 1, total + outcome)
    frame = quiet(read_format, Path(REAL) / name, name)
    got = {}
    for key, outcome in zip(zip(*(frame[c].astype(str) for c in _OUT_KEYS), strict=True),
                            frame["outcome"], strict=True):
        n, total = got.get(key, (0, 0.0))
        got[key] = (n + 1, total + outcome)
    assert got == expected


@needs_real
def test_real_alpaca_eval_style_length_by_plain_loops(alpaca_plain_records, alpaca_frame):
    """Per model: the sums of (len(output_2) - len(output_1)) / (sum of lengths + 1) and of
    the raw difference (``style_length_delta``, lc's length) over the kept records,
    computed from the files with plain json."""
    expected, raw = Counter(), Counter()
    for path, records in alpaca_plain_records:
        for r in records:
            p = r["preference"]
            if r["generator_1"] != r["generator_2"] and p is not None \
                    and (p == 0 or 1 <= p <= 2):
                long_2, long_1 = len(r["output_2"]), len(r["output_1"])
                expected[path.name.split(".json")[0]] += ((long_2 - long_1)
                                                          / (long_2 + long_1 + 1))
                raw[path.name.split(".json")[0]] += long_2 - long_1
    frame = alpaca_frame
    got = frame.groupby(frame["model_a"].astype(str))["style_length"].sum()
    got_raw = frame.groupby(frame["model_a"].astype(str))["style_length_delta"].sum()
    assert sorted(got.index) == sorted(expected)
    for model, total in expected.items():
        assert got[model] == pytest.approx(total, rel=1e-12, abs=1e-9), model
        assert got_raw[model] == raw[model], model


@pytest.mark.parametrize("fmt, name, records, field, where", [
    ("alpaca_eval", "a.json", [alpaca_record(1.7, instruction=["q"])], "instruction",
     r"record\(s\) 0"),
    ("alpaca_eval", "a.json", [alpaca_record(1.7), alpaca_record(1.2, model={"m": 1})],
     "generator_2", r"record\(s\) 1"),
    ("clean_battle", "b.jsonl", [battle(["x"], "y", "tie", 1)], "model_a", r"line\(s\) 1"),
    ("clean_battle", "b.jsonl", [battle("x", "y", "tie", True)], "question_id",
     r"line\(s\) 1"),
    ("arena_hard", "c.jsonl", [judgment(1, "m", "A>B", "A>B", baseline={"name": "b"})],
     "baseline", r"line\(s\) 1"),
    ("arena_hard", "c.jsonl", [judgment(1, "m", "A>B", "A>B", judge=["j"], baseline="b")],
     "judge",
     r"line\(s\) 1"),
])
def test_id_or_name_that_is_not_text_or_number_is_an_error(tmp_path, fmt, name, records,
                                                            field, where):
    """A list or object where an id or a name belongs was turned into its repr ("['x']")."""
    path = (write_json if name.endswith(".json") else write_jsonl)(tmp_path / name, records)
    with pytest.raises(WinrateInputError, match=rf"{name}: field '{field}' is not a string "
                                                rf"or a number in {where}"):
        read_format(path, fmt)


def test_true_preference_or_list_winner_is_an_error(tmp_path):
    """``true`` was read as preference 1 (the baseline wins); a list winner raised
    TypeError (unhashable)."""
    path = write_json(tmp_path / "a.json", [alpaca_record(1.7), alpaca_record(True)])
    with pytest.raises(WinrateInputError, match=r"a\.json: non-numeric preference in "
                                                r"record\(s\) 1"):
        read_format(path, "alpaca_eval")
    path = write_jsonl(tmp_path / "b.jsonl", [battle("x", "y", "tie", 1),
                                              battle("x", "y", ["model_a"], 2)])
    with pytest.raises(WinrateInputError, match=r"b\.jsonl: unknown winner in 1 line\(s\): "
                                                r"\['model_a'\] in 1 line, first line\(s\) 2"):
        read_format(path, "clean_battle")
