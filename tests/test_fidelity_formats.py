"""Issue 26, the leaderboards' own conventions, each on a small file in the upstream format
and checked against an independent computation: LMArena's battle selection (anonymous
battles, dedup_tag) and style features (a statsmodels GLM), arena-hard-auto's baseline,
strong-verdict weight (its score formula re-implemented here) and answer style metadata,
skippable malformed records."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from tests.note_codes import coded_lines
from winrate.analysis import analyze
from winrate.cli import main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators.bradley_terry_kernels import fit as bt_fit
from winrate.io.formats import read_format, read_log
from winrate.notes import gathered


def write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def noted(function, *args, **kwargs):
    """The result of ``function`` and the codes of the notes it gave."""
    with gathered() as notes:
        result = function(*args, **kwargs)
    return result, notes.codes


# --------------------------------------------------------------------------- clean_battle


def battles_with_named(rng):
    """60 anonymous battles among x, y, z (x strongest) and 150 named battles all won by z,
    the fixture of the issue: counted with named battles z comes first."""
    records = []
    strength = {"x": 1.0, "y": 0.0, "z": -0.5}
    for i in range(60):
        a, b = rng.choice(["x", "y", "z"], 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        records.append({"question_id": f"q{i}", "model_a": a, "model_b": b, "judge": f"u{i}",
                        "winner": "model_a" if rng.random() < p else "model_b",
                        "anony": True, "dedup_tag": {"high_freq": False, "sampled": True}})
    for i in range(150):
        records.append({"question_id": f"n{i}", "model_a": "z", "model_b": "x",
                        "judge": f"v{i}", "winner": "model_a", "anony": False,
                        "dedup_tag": {"high_freq": False, "sampled": True}})
    return records


def test_clean_battle_keeps_anonymous_battles_only_by_default(tmp_path):
    records = battles_with_named(np.random.default_rng(1))
    path = write_jsonl(tmp_path / "clean_battle.jsonl", records)
    frame, codes = noted(read_format, path, "clean_battle")
    assert codes == ["battles-dropped"]
    expected = sorted(r["question_id"] for r in records if r["anony"])
    assert sorted(frame["prompt_id"].astype(str)) == expected
    everything, codes = noted(read_format, path, "clean_battle", include_named=True)
    assert len(everything) == len(records) and codes == []


def test_clean_battle_cli_ranks_on_anonymous_battles(tmp_path, capsys):
    path = write_jsonl(tmp_path / "clean_battle.jsonl",
                       battles_with_named(np.random.default_rng(1)))
    assert main(["leaderboard", str(path), "--format", "clean_battle", "--model", "bt",
                 "--cluster", "prompt"]) == 0
    captured = capsys.readouterr()
    table = [line.split() for line in captured.out.splitlines()]
    first = next(row for row in table if row and row[0] == "1")
    assert first[1] == "x"
    assert "150 named" in coded_lines(captured.err, "battles-dropped")[0]
    assert main(["leaderboard", str(path), "--format", "clean_battle", "--model", "bt",
                 "--cluster", "prompt", "--include-named"]) == 0
    table = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert next(row for row in table if row and row[0] == "1")[1] == "z"


def test_clean_battle_honours_dedup_tag_as_lmarena(tmp_path):
    """LMArena keeps ``dedup_tag.get("sampled", False)``: a tag without 'sampled' and one
    with sampled false are both left out."""
    base = {"model_a": "x", "model_b": "y", "winner": "tie", "anony": True}
    records = [{**base, "question_id": "keep", "dedup_tag": {"high_freq": True,
                                                              "sampled": True}},
               {**base, "question_id": "drop1", "dedup_tag": {"high_freq": True,
                                                               "sampled": False}},
               {**base, "question_id": "drop2", "dedup_tag": {"high_freq": True}},
               {**base, "question_id": "keep2", "dedup_tag": {"high_freq": False,
                                                               "sampled": True}}]
    path = write_jsonl(tmp_path / "b.jsonl", records)
    frame, codes = noted(read_format, path, "clean_battle")
    assert sorted(frame["prompt_id"].astype(str)) == ["keep", "keep2"]
    assert codes == ["battles-dropped"]
    assert len(read_format(path, "clean_battle", dedup=False)) == 4


def test_clean_battle_without_anony_or_dedup_fields_is_taken_as_it_is(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", [
        {"question_id": 1, "model_a": "x", "model_b": "y", "winner": "tie"}])
    frame, codes = noted(read_format, path, "clean_battle")
    assert len(frame) == 1 and codes == []


def style_battles(rng, n=400):
    models = ["m0", "m1", "m2", "m3"]
    strength = np.array([0.6, 0.2, -0.1, -0.7])
    records = []
    for i in range(n):
        a, b = rng.choice(4, 2, replace=False)
        tokens = rng.integers(0, 900, 2)
        counts = {k: rng.integers(0, 6, 2) for k in ("header", "list", "bold")}
        eta = strength[a] - strength[b] + 0.8 * (tokens[0] - tokens[1]) / (tokens.sum() + 1)
        u = rng.random()
        p = 1 / (1 + np.exp(-eta))
        winner = "tie" if abs(u - p) < 0.1 else ("model_a" if u < p else "model_b")
        meta = {"sum_assistant_a_tokens": int(tokens[0]), "sum_assistant_b_tokens": int(tokens[1]),
                "header_count_a": {"h1": int(counts["header"][0]), "h2": 0},
                "header_count_b": {"h1": int(counts["header"][1]), "h2": 0},
                "list_count_a": {"ordered": int(counts["list"][0]), "unordered": 1},
                "list_count_b": {"ordered": int(counts["list"][1]), "unordered": 1},
                "bold_count_a": {"**": int(counts["bold"][0]), "__": 0},
                "bold_count_b": {"**": int(counts["bold"][1]), "__": 0}}
        records.append({"question_id": f"q{i}", "model_a": models[a], "model_b": models[b],
                        "winner": winner, "judge": "u", "anony": True, "conv_metadata": meta})
    return records


def lmarena_style_glm(records):
    """LMArena's style control from its documented recipe, by hand: features
    (a - b) / (a + b + 1) of the four counts (dict counts summed), standardised with the
    population sd; BT design +1 / -1, m0's column dropped; a tie is half a win (the
    fractional-outcome binomial GLM). Returns (theta of m1..m3 minus m0's, style coefs)."""
    def total(v):
        return sum(v.values()) if isinstance(v, dict) else v
    keys = [("sum_assistant_a_tokens", "sum_assistant_b_tokens"),
            ("header_count_a", "header_count_b"), ("list_count_a", "list_count_b"),
            ("bold_count_a", "bold_count_b")]
    feats = np.array([[(total(r["conv_metadata"][ka]) - total(r["conv_metadata"][kb]))
                       / (total(r["conv_metadata"][ka]) + total(r["conv_metadata"][kb]) + 1)
                       for ka, kb in keys] for r in records])
    feats = (feats - feats.mean(axis=0)) / feats.std(axis=0)
    models = ["m0", "m1", "m2", "m3"]
    design = np.zeros((len(records), 3))
    for i, r in enumerate(records):
        for name, sign in ((r["model_a"], 1.0), (r["model_b"], -1.0)):
            if name != "m0":
                design[i, models.index(name) - 1] = sign
    y = np.array([{"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[r["winner"]] for r in records])
    glm = sm.GLM(y, np.column_stack([design, feats]), family=sm.families.Binomial())
    params = glm.fit(tol=1e-13).params
    return params[:3], params[3:]


def test_style_control_equals_an_independent_glm(tmp_path):
    records = style_battles(np.random.default_rng(7))
    path = write_jsonl(tmp_path / "battles.jsonl", records)
    log = read_log(path, "clean_battle")
    covariates = ["style_tokens", "style_header_count", "style_list_count",
                  "style_bold_count"]
    board = bt_fit(log, covariates=covariates)
    theta = board.fitted["theta"]
    names = list(log.models)
    got = np.array([theta[names.index(m)] - theta[names.index("m0")]
                    for m in ("m1", "m2", "m3")])
    want_theta, want_coef = lmarena_style_glm(records)
    np.testing.assert_allclose(got, want_theta, atol=1e-6)
    np.testing.assert_allclose(board.coef, want_coef, atol=1e-6)


# --------------------------------------------------------------------------- arena_hard


def judgment(qid, model, game1, game2, **extra):
    return {"question_id": qid, "model": model, "judge": "gpt-4-1106-preview",
            "games": [None if game1 is None else {"score": game1, "judgment": "..."},
                      None if game2 is None else {"score": game2}], **extra}


VERDICTS = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]


def arena_folder(tmp_path, rng, models=("m1", "m2", "m3"), baseline="gpt-4-0314", n=30):
    folder = tmp_path / "model_judgment" / "gpt-4-1106-preview"
    for model in (*models, baseline):
        write_jsonl(folder / f"{model}.jsonl", [
            judgment(f"q{i}", model, *rng.choice(VERDICTS, 2)) for i in range(n)])
    return folder


def upstream_scores(folder, baseline, weight=3):
    """arena-hard-auto's score of each model, re-implemented from its documented rule
    (v2 ``show_result.load_judgments``; v0.1's BT fit of model-vs-baseline battles gives
    the same win rate): each game becomes ``weight`` battles for a strong verdict (>>, <<)
    and one otherwise; game 2 holds the model as A, game 1 as B; ties are 1/2; the score
    is the model's mean over its battles."""
    a_score = {"A>>B": [1] * weight, "A>B": [1], "A=B": [0.5], "B>A": [0],
               "B>>A": [0] * weight}
    battles = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["model"] == baseline:
                continue
            game1, game2 = record["games"]
            scores = a_score[game2["score"]] + [1 - s for s in a_score[game1["score"]]]
            battles.setdefault(record["model"], []).extend(scores)
    return {model: float(np.mean(scores)) for model, scores in battles.items()}


def test_arena_hard_scores_equal_upstreams_with_its_default_weight(tmp_path):
    folder = arena_folder(tmp_path, np.random.default_rng(3))
    log = read_log(folder, "arena_hard", baseline="gpt-4-0314")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(log, "prompt", baseline="gpt-4-0314")
    want = upstream_scores(folder, "gpt-4-0314")
    got = dict(zip(map(str, result.leaderboard.models), result.leaderboard.scores,
                   strict=True))
    assert set(got) == set(want)
    for model, score in want.items():
        assert got[model] == pytest.approx(score, abs=1e-10), model
    single = read_log(folder, "arena_hard", baseline="gpt-4-0314", strong_weight=1)
    assert single.frequency is None


def test_arena_hard_cli_strong_weight_flag(tmp_path, capsys):
    folder = arena_folder(tmp_path, np.random.default_rng(3))
    args = ["leaderboard", str(folder), "--format", "arena_hard", "--baseline", "gpt-4-0314",
            "--cluster", "prompt", "--json"]
    assert main([*args, str(tmp_path / "three.json")]) == 0
    assert main([*args, str(tmp_path / "one.json"), "--strong-weight", "1"]) == 0
    three = json.loads((tmp_path / "three.json").read_text())
    one = json.loads((tmp_path / "one.json").read_text())
    want = upstream_scores(folder, "gpt-4-0314")
    for model, score in zip(three["models"], three["score"], strict=True):
        assert score == pytest.approx(want[model], abs=1e-10), model
    assert one["score"] != three["score"]


def test_arena_hard_misspelt_baseline_is_an_error_naming_the_models(tmp_path):
    folder = arena_folder(tmp_path, np.random.default_rng(3))
    with pytest.raises(WinrateInputError, match=r"baseline 'gpt-4-03144' is not among the "
                                                r"judged models \(gpt-4-0314, m1, m2, m3\)"
                                                r".*did you mean 'gpt-4-0314'"):
        read_format(folder, "arena_hard", baseline="gpt-4-03144")


def test_arena_hard_without_baseline_is_not_assumed(tmp_path, capsys):
    """v0.1 records name no baseline: no silent gpt-4-0314 (here a contestant)."""
    folder = arena_folder(tmp_path, np.random.default_rng(3),
                          models=("m1", "gpt-4-0314"), baseline="claude-3-opus")
    with pytest.raises(WinrateInputError, match="name no baseline.*option 'baseline'"):
        read_format(folder, "arena_hard")
    assert main(["leaderboard", str(folder), "--format", "arena_hard"]) == 2
    assert "name no baseline" in capsys.readouterr().err
    frame = read_format(folder, "arena_hard", baseline="claude-3-opus")
    assert set(frame["model_a"].astype(str)) == {"m1", "gpt-4-0314"}


def test_arena_hard_answer_style_metadata_as_covariates(tmp_path):
    rng = np.random.default_rng(5)
    folder = arena_folder(tmp_path, rng, n=6)
    answers = tmp_path / "model_answer"
    meta = {}
    for model in ("m1", "m2", "m3", "gpt-4-0314"):
        records = []
        for i in range(6):
            m = {"token_len": int(rng.integers(1, 500)),
                 "header_count": {"h1": int(rng.integers(0, 3)), "h2": 1},
                 "list_count": {"ordered": int(rng.integers(0, 4)), "unordered": 0},
                 "bold_count": {"**": int(rng.integers(0, 5)), "__": 0}}
            meta[model, f"q{i}"] = m
            records.append({"question_id": f"q{i}", "model_id": model, "conv_metadata": m})
        write_jsonl(answers / f"{model}.jsonl", records)
    frame = read_format(folder, "arena_hard", baseline="gpt-4-0314", answers=answers)

    def total(v):
        return sum(v.values()) if isinstance(v, dict) else v
    for key, column in (("token_len", "style_tokens"), ("header_count", "style_header_count"),
                        ("list_count", "style_list_count"), ("bold_count", "style_bold_count")):
        want = [(total(meta[m, q][key]) - total(meta["gpt-4-0314", q][key]))
                / (total(meta[m, q][key]) + total(meta["gpt-4-0314", q][key]) + 1)
                for m, q in zip(frame["model_a"].astype(str), frame["prompt_id"].astype(str),
                                strict=True)]
        np.testing.assert_allclose(frame[column], want, rtol=1e-15)


def test_arena_hard_malformed_record_skippable_with_a_count(tmp_path, capsys):
    folder = arena_folder(tmp_path, np.random.default_rng(3), n=10)
    with open(folder / "m1.jsonl", "a") as handle:
        handle.write(json.dumps({"question_id": "q99", "model": "m1",
                                 "games": [{"score": "A>B"}]}) + "\n")
    with pytest.raises(WinrateInputError, match="not a list of two games.*skip_malformed=True"):
        read_format(folder, "arena_hard", baseline="gpt-4-0314")
    frame, codes = noted(read_format, folder, "arena_hard", baseline="gpt-4-0314",
                         skip_malformed=True)
    assert "skipped-records" in codes and "q99" not in set(frame["prompt_id"].astype(str))
    assert main(["leaderboard", str(folder), "--format", "arena_hard", "--baseline",
                 "gpt-4-0314", "--skip-malformed", "--cluster", "prompt"]) == 0
    assert "skipped 1 malformed" in coded_lines(capsys.readouterr().err, "skipped-records")[0]


def test_format_flag_of_another_format_is_an_error(tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", [
        {"question_id": 1, "model_a": "x", "model_b": "y", "winner": "tie"}])
    assert main(["leaderboard", str(path), "--format", "clean_battle",
                 "--skip-malformed"]) == 2
    assert "--skip-malformed applies to --format arena_hard" in capsys.readouterr().err


# --------------------------------------------------------------------------- alpaca_eval


def alpaca_records(model, n=6, base="gpt4_1106_preview", seed=0, annotator="weighted_judge"):
    rng = np.random.default_rng(seed)
    return [{"instruction": f"q{i}", "output_1": "base answer", "generator_1": base,
             "output_2": f"answer {i} of {model}", "generator_2": model,
             "annotator": annotator, "preference": float(1 + rng.random())}
            for i in range(n)]


def write_results(root, folder_model, records):
    path = root / "results" / folder_model / "weighted_judge" / "annotations.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records))
    return path


def test_alpaca_eval_results_folder_names_the_model(tmp_path):
    """A copy of model-a's annotations under results/model-b: read as model-b (the folder,
    AlpacaEval's convention) with a note naming the file, not merged into model-a."""
    write_results(tmp_path, "model-a", alpaca_records("model-a"))
    write_results(tmp_path, "model-b", alpaca_records("model-a"))
    write_results(tmp_path, "model-c", alpaca_records("model-c", seed=1))
    frame, codes = noted(read_format, tmp_path / "results", "alpaca_eval")
    assert codes.count("folder-names-model") == 2  # the renamed file, the duplicated pair
    counts = frame["model_a"].astype(str).value_counts().to_dict()
    assert counts == {"model-a": 6, "model-b": 6, "model-c": 6}


def test_alpaca_eval_unstructured_file_keeps_its_rows_names(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(alpaca_records("m1") + alpaca_records("m2", seed=2)))
    frame, codes = noted(read_format, path, "alpaca_eval")
    assert set(frame["model_a"].astype(str)) == {"m1", "m2"} and codes == []


@pytest.mark.skipif(not __import__("os").environ.get("WINRATE_DATA"),
                    reason="WINRATE_DATA is not set")
def test_alpaca_eval_format_and_dataset_name_models_alike():
    from pathlib import Path

    from winrate.io.datasets import read_dataset

    folder = Path(__import__("os").environ["WINRATE_DATA"]) / "alpaca_eval" \
        / "weighted_alpaca_eval_gpt4_turbo"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        dataset = read_dataset("alpaca_eval")
    formatted, codes = noted(read_log, folder, "alpaca_eval")
    assert list(formatted.models) == list(dataset.models)
    assert "NullModel" in formatted.models and "example" not in formatted.models
    assert "folder-names-model" in codes


def test_baseline_score_counts_only_the_rows_it_uses(tmp_path, capsys):
    """An arena-hard folder plus a file of model-vs-model battles (clean_battle-like rows
    joined in a CSV): the score against the baseline ignores them, and now so do the
    comparison count and n (each model's n = its games against the baseline, counted
    here by hand)."""
    rows = [{"prompt_id": f"q{i}", "model_a": m, "model_b": "base",
             "outcome": float((i + j) % 3 == 0)}
            for i in range(20) for j, m in enumerate(("m1", "m2", "m3"))]
    extra = [{"prompt_id": f"x{i}", "model_a": "m1", "model_b": "m2", "outcome": 1.0}
             for i in range(30)]
    path = tmp_path / "log.csv"
    pd.DataFrame(rows + extra).to_csv(path, index=False)
    out = tmp_path / "out.json"
    assert main(["leaderboard", str(path), "--baseline", "base", "--cluster", "prompt",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["n_comparisons"] == 60 and report["n"] == [20, 20, 20]
    assert "30 of 90 rows" in coded_lines(capsys.readouterr().err, "off-baseline-rows")[0]
    for model, score in zip(report["models"], report["score"], strict=True):
        mine = [r["outcome"] for r in rows if r["model_a"] == model]
        assert score == pytest.approx(np.mean(mine), abs=1e-12)
