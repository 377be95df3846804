"""LMArena's three public layouts and MT-Bench's pairwise judgments (winrate.io.arena_layouts):
every outcome against a plain loop over the raw records, FastChat's MT-Bench count by hand,
the clustering columns, and one-line errors naming the column and the rows."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from tests import reader_fixtures as fx
from tests.note_codes import warns_code
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.io.formats import read_format, read_log

LABEL_SCORE = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5,
               "both_bad": 0.5}


def sums_by_pair(rows) -> dict:
    """(model_a, model_b) -> [total score of model_a, comparisons], by a plain loop."""
    out = defaultdict(lambda: [0.0, 0])
    for a, b, score in rows:
        out[a, b][0] += score
        out[a, b][1] += 1
    return dict(out)


def frame_sums(frame: pd.DataFrame) -> dict:
    return sums_by_pair(zip(frame["model_a"].astype(str), frame["model_b"].astype(str),
                            frame["outcome"], strict=True))


def test_55k_one_hot_against_a_loop_over_the_csv(tmp_path):
    path = tmp_path / "train.csv"
    fx.arena_55k(path)
    expected, prompts = [], set()
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            flags = [int(row[c]) for c in ("winner_model_a", "winner_model_b", "winner_tie")]
            expected.append((row["model_a"], row["model_b"],
                             {0: 1.0, 1: 0.0, 2: 0.5}[flags.index(1)]))
            prompts.add(row["prompt"])
    frame = read_format(path, "arena")
    assert frame_sums(frame) == sums_by_pair(expected)
    assert "judge_id" not in frame.columns
    assert frame["prompt_id"].nunique() == len(prompts)  # one cluster per prompt text
    log = read_log(path, "arena")
    assert log.axes["prompt"].n_clusters == len(prompts)


def test_100k_winner_labels_judges_and_leaderboard_filter(tmp_path):
    path = tmp_path / "data" / "train-00000-of-00001.parquet"
    raw = fx.arena_100k(path)
    kept = [r for r in raw.to_dict("records") if r["anony"] and r["dedup_tag"]["sampled"]]
    expected = [(r["model_a"], r["model_b"], LABEL_SCORE[r["winner"]]) for r in kept]
    with warns_code("battles-dropped"):
        frame = read_format(tmp_path / "data", "arena")  # a folder of Parquet files
    assert frame_sums(frame) == sums_by_pair(expected)
    assert list(frame["judge_id"].astype(str)) == [r["judge_hash"] for r in kept]
    assert list(frame["prompt_id"].astype(str)) == [r["question_id"] for r in kept]
    hard = [sum(r["category_tag"]["criteria_v0.1"].values()) >= 6 for r in kept]
    assert list(frame["category_hard_prompt"]) == ["true" if h else "false" for h in hard]
    assert list(frame["category_math"]) == [
        "true" if r["category_tag"]["math_v0.1"]["math"] else "false" for r in kept]
    assert list(frame["language"]) == [r["language"] for r in kept]
    dropped = read_format(path, "arena", both_bad="drop", include_named=True, dedup=False)
    assert len(dropped) == sum(r["winner"] != "tie (bothbad)" for r in raw.to_dict("records"))


def test_140k_sessions_are_the_prompt_clusters_and_both_bad_is_a_tie(tmp_path):
    path = tmp_path / "140k.parquet"
    raw = fx.arena_140k(path)
    records = raw.to_dict("records")
    expected = [(r["model_a"], r["model_b"], LABEL_SCORE[r["winner"]]) for r in records]
    frame = read_format(path, "arena")
    assert frame_sums(frame) == sums_by_pair(expected)
    assert list(frame["prompt_id"].astype(str)) == [r["evaluation_session_id"] for r in records]
    assert "judge_id" not in frame.columns
    log = read_log(path, "arena")
    assert log.axes["prompt"].n_clusters == len({r["evaluation_session_id"] for r in records})
    assert set(log.axes["is_code"].labels) == {"true", "false"}


def test_layout_detection_and_its_errors(tmp_path):
    path = tmp_path / "other.csv"
    pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"]}).to_csv(
        path, index=False)
    with pytest.raises(WinrateInputError, match="not an LMArena battle table: it has none"):
        read_format(path, "arena")
    with pytest.raises(WinrateInputError, match=r"'judge_hash'\] missing for the LMArena 100k"):
        read_format(path, "arena", layout="100k")
    with pytest.raises(WinrateInputError, match="layout must be one of"):
        read_format(path, "arena", layout="33k")


def test_bad_values_name_the_column_and_rows(tmp_path):
    path = tmp_path / "train.csv"
    frame = fx.arena_55k(path, n=12)
    frame.loc[4, "winner_tie"] = 1  # row 4 now has two 1s: file line 6
    frame.to_csv(path, index=False)
    with pytest.raises(WinrateInputError, match=r"exactly one 1 .*1 row\(s\) do not, "
                                                r"first rows \(file lines\): 6$"):
        read_format(path, "arena")
    path = tmp_path / "140k.jsonl"
    records = [{"id": "a", "model_a": "x", "model_b": "y", "winner": w,
                "evaluation_session_id": "s1"} for w in ("model_a", "bothbad", "tie")]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(WinrateInputError, match=r"column 'winner': unknown value in 1 "
                                                r"row\(s\): 'bothbad'.*first rows.*: 2 "):
        read_format(path, "arena")


# --------------------------------------------------------------------------- MT-Bench

MT_RECORDS = [  # question, model_1, model_2, g1_winner, g2_winner, turn
    (81, "alpaca-13b", "vicuna-13b", "model_1", "model_1", 1),   # both agree: model_1 wins
    (81, "alpaca-13b", "vicuna-13b", "model_1", "model_2", 2),   # inconsistent: a tie
    (82, "alpaca-13b", "llama-13b", "model_2", "model_2", 1),    # model_2 wins
    (82, "vicuna-13b", "llama-13b", "tie", "model_1", 1),        # inconsistent: a tie
    (83, "alpaca-13b", "llama-13b", "error", "model_1", 1),      # dropped, as FastChat
    (83, "vicuna-13b", "llama-13b", "tie", "tie", 1),            # a tie
]


def test_mt_bench_combined_is_fastchats_count(tmp_path):
    path = tmp_path / "model_judgment" / "gpt-4_pair.jsonl"
    fx.mt_bench_pair(path, MT_RECORDS)
    with warns_code("verdicts-dropped"):
        frame = read_format(path, "mt_bench")
    assert list(frame["outcome"]) == [1.0, 0.5, 0.0, 0.5, 0.5]
    # FastChat's win_rate_adjusted ((win + tie / 2) / games), by hand: alpaca 1 win, 1 tie,
    # 1 loss; vicuna 1 loss, 3 ties; llama 1 win, 2 ties
    adjusted = {"alpaca-13b": 1.5 / 3, "vicuna-13b": 1.5 / 4, "llama-13b": 2.0 / 3}
    for model, value in adjusted.items():
        as_a = frame.loc[frame["model_a"] == model, "outcome"]
        as_b = 1 - frame.loc[frame["model_b"] == model, "outcome"]
        assert pd.concat([as_a, as_b]).mean() == pytest.approx(value, abs=1e-15)
    assert set(frame["judge_id"].astype(str)) == {"gpt-4"}
    assert list(frame["judge_prompt"]) == ["pair-v2", "pair-v2-multi-turn", "pair-v2",
                                           "pair-v2", "pair-v2"]
    with warns_code("verdicts-dropped"):
        log = read_log(path, "mt_bench")
    assert log.axes["prompt"].n_clusters == 3  # both turns of question 81 are one cluster


def test_mt_bench_both_games_are_rows_of_one_prompt(tmp_path):
    path = tmp_path / "gpt-4_pair.jsonl"
    fx.mt_bench_pair(path, MT_RECORDS)
    with warns_code("verdicts-dropped"):
        frame = read_format(path, "mt_bench", games="both")
    assert sorted(frame["outcome"]) == sorted([1, 1, 1, 0, 0, 0, 0.5, 1, 0.5, 0.5, 1])
    assert frame.groupby("prompt_id", observed=True).size().to_dict() == {
        "81": 4, "82": 4, "83": 3}


def test_mt_bench_errors(tmp_path):
    path = tmp_path / "gpt-4_pair.jsonl"
    fx.mt_bench_pair(path, [(1, "a", "b", "model_1", "model_3", 1)])
    with pytest.raises(WinrateInputError, match=r"field 'g2_winner': unknown value in 1 "
                                                 r"line\(s\): 'model_3'.*first lines 1 "):
        read_format(path, "mt_bench")
    path.write_text(json.dumps({"question_id": 1, "model_1": "a", "model_2": "b"}) + "\n")
    with pytest.raises(WinrateInputError, match=r"\['g1_winner', 'g2_winner', 'judge'\] "
                                                "missing: not an MT-Bench"):
        read_format(path, "mt_bench")
    with pytest.raises(WinrateInputError, match="games must be 'combined' or 'both'"):
        read_format(path, "mt_bench", games="all")


def test_leaderboard_command_reads_each_layout(tmp_path, capsys):
    fx.arena_140k(tmp_path / "140k.parquet")
    out = tmp_path / "board.json"
    assert main(["leaderboard", str(tmp_path / "140k.parquet"), "--format", "arena",
                 "--json", str(out), "--no-progress"]) == 0
    report = json.loads(out.read_text())
    assert len(report["models"]) == len(fx.MODELS)
    assert np.isfinite(report["se"]).all()
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "none.csv"), "--format", "arena"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_layouts_are_detected_without_a_format(tmp_path, capsys):
    from winrate.io.formats import detect_format

    fx.arena_55k(tmp_path / "train.csv")
    fx.arena_100k(tmp_path / "100k.parquet")
    fx.mt_bench_pair(tmp_path / "gpt-4_pair.jsonl", MT_RECORDS[:4])
    log = pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "outcome": [1],
                        "winner_tie": [0]})  # a comparison log's columns: never a layout
    log.to_csv(tmp_path / "log.csv", index=False)
    found = {name: detect_format(tmp_path / name)
             for name in ("train.csv", "100k.parquet", "gpt-4_pair.jsonl", "log.csv")}
    assert found == {"train.csv": "arena", "100k.parquet": "arena",
                     "gpt-4_pair.jsonl": "mt_bench", "log.csv": None}
    assert detect_format(tmp_path) is None
    out = tmp_path / "a.json"
    assert main(["leaderboard", str(tmp_path / "train.csv"), "--json", str(out),
                 "--no-progress"]) == 0
    assert sorted(json.loads(out.read_text())["models"]) == sorted(fx.MODELS)
    capsys.readouterr()


def test_json_lines_read_as_the_parquet_file(tmp_path):
    raw = fx.arena_100k(tmp_path / "100k.parquet")
    lines = tmp_path / "100k.jsonl"
    raw.drop(columns=["tstamp"]).to_json(lines, orient="records", lines=True)
    with warns_code("battles-dropped"):
        from_parquet = read_format(tmp_path / "100k.parquet", "arena")
    with warns_code("battles-dropped"):
        from_lines = read_format(lines, "arena")
    pd.testing.assert_frame_equal(from_parquet, from_lines)
    broken = raw.head(3).drop(columns=["tstamp"]).assign(category_tag=["math", None, "x"])
    broken.to_json(lines, orient="records", lines=True)
    with pytest.raises(WinrateInputError, match=r"column 'category_tag' is not an object in "
                                                r"row\(s\) 1, 2, 3"):
        read_format(lines, "arena")
