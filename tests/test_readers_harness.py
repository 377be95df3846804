"""lm-evaluation-harness --log_samples and Inspect AI logs as per-question scores
(winrate.io.harness): the scores against the values written, two runs compared question by
question (paired difference and McNemar against pandas and scipy), and the errors.

Inspect AI's logs are tested in tests/test_readers_inspect.py, on real logs written by its
mock model (hand-made .eval files only for its error paths).
lm-eval's files follow lm_eval/loggers/evaluation_tracker.py (tests/reader_fixtures.py).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests import reader_fixtures as fx
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.evals.frame import compare, question_scores
from winrate.io.formats import read_format, read_log
from winrate.io.harness import inspect_value

RNG = np.random.default_rng(7)
ACC_A = RNG.integers(0, 2, 40).astype(float)
ACC_B = np.where(RNG.random(40) < 0.8, ACC_A, 1 - ACC_A)


def two_runs(tmp_path, model_b="org/model-b"):
    out = tmp_path / "results"
    files = [fx.lm_eval_run(out, "org/model-a", fx.LM_EVAL_DATE[0], "arc_easy",
                            {"acc": ACC_A, "acc_norm": ACC_A}),
             fx.lm_eval_run(out, model_b, fx.LM_EVAL_DATE[1], "arc_easy",
                            {"acc": ACC_B, "acc_norm": ACC_B})]
    return out, files


def test_lm_eval_scores_are_the_values_written(tmp_path):
    out, _ = two_runs(tmp_path)
    frame = read_format(out, "lm_eval", metric="acc")
    wide = frame.pivot(index="question", columns="model", values="score")
    questions = [f"arc_easy/{d}" for d in range(40)]
    np.testing.assert_array_equal(wide.loc[questions, "org/model-a"], ACC_A)
    np.testing.assert_array_equal(wide.loc[questions, "org/model-b"], ACC_B)
    table = read_log(out, "lm_eval", metric="acc")
    assert list(table.models) == ["org/model-a", "org/model-b"]
    assert set(table.axes) == {"prompt", "task"}


def test_two_runs_of_one_model_stay_two_runs(tmp_path):
    out, _ = two_runs(tmp_path, model_b="org/model-a")
    frame = read_format(out, "lm_eval", metric="acc")
    assert sorted(frame["model"].unique()) == [f"org/model-a@{d}" for d in fx.LM_EVAL_DATE]


def test_paired_comparison_equals_pandas_and_scipy(tmp_path):
    out, _ = two_runs(tmp_path)
    frame = read_format(out, "lm_eval", metric="acc")
    qs = question_scores(frame, "score", "question", "model")
    result = compare(qs, "org/model-a", "org/model-b")
    d = pd.Series(ACC_A - ACC_B)
    assert result.paired.test.estimate == pytest.approx(d.mean(), abs=1e-12)
    assert result.paired.se_paired == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), abs=1e-12)
    only_a, only_b = int(((ACC_A == 1) & (ACC_B == 0)).sum()), int(((ACC_A == 0) &
                                                                    (ACC_B == 1)).sum())
    exact = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert result.mcnemar.p_exact == pytest.approx(exact, abs=1e-12)


def test_filters_and_metrics_must_be_chosen(tmp_path):
    path = fx.lm_eval_run(tmp_path, "m", fx.LM_EVAL_DATE[0], "gsm8k",
                          {"exact_match": ACC_A}, filters=("strict-match", "flexible-extract"))
    with pytest.raises(WinrateInputError, match=r"2 filters \['flexible-extract', "
                                                r"'strict-match'\]: choose one \(filter=\)"):
        read_format(path, "lm_eval")
    frame = read_format(path, "lm_eval", filter="strict-match")
    np.testing.assert_array_equal(frame["score"], ACC_A)
    assert (read_format(path, "lm_eval", filter="flexible-extract")["score"] == 0).all()
    arc = fx.lm_eval_run(tmp_path, "m", fx.LM_EVAL_DATE[0], "arc_easy",
                         {"acc": ACC_A, "acc_norm": ACC_A})
    with pytest.raises(WinrateInputError, match=r"2 metrics \['acc', 'acc_norm'\]"):
        read_format(arc, "lm_eval")
    with pytest.raises(WinrateInputError, match=r"no metric 'f1' \(it has"):
        read_format(arc, "lm_eval", metric="f1")


def test_lm_eval_bad_lines_are_named(tmp_path):
    path = fx.lm_eval_run(tmp_path, "m", fx.LM_EVAL_DATE[0], "arc_easy",
                          {"acc": [1.0, 0.0, 2.0]})
    with pytest.raises(WinrateInputError, match=r"metric 'acc' is missing, not a number or "
                                                r"outside \[0, 1\] in line\(s\) 3$"):
        read_format(path, "lm_eval")
    with open(path, "a") as handle:
        handle.write("{broken\n")
    with pytest.raises(WinrateInputError, match="line 4 is not valid JSON"):
        read_format(path, "lm_eval")
    wrong = tmp_path / "answers.jsonl"
    wrong.write_text("{}\n")
    with pytest.raises(WinrateInputError, match="not an lm-eval samples file"):
        read_format(wrong, "lm_eval")


def test_inspect_values_follow_value_to_float():
    cases = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "yes": 1.0, "False": 0.0, "0.25": 0.25,
             True: 1.0, 3: 3.0}
    assert {k: inspect_value(k) for k in cases} == cases
    assert np.isnan(inspect_value("maybe")) and np.isnan(inspect_value({"a": 1}))


def test_harness_flags_reach_the_reader(tmp_path, capsys):
    out, _ = two_runs(tmp_path)
    assert main(["leaderboard", str(out), "--format", "lm_eval", "--metric", "acc_norm",
                 "--no-progress"]) == 0
    assert "org/model-b" in capsys.readouterr().out
    assert main(["leaderboard", str(out), "--format", "lm_eval", "--no-progress"]) == 2
    assert "choose one (metric=)" in capsys.readouterr().err
    assert main(["leaderboard", str(out), "--format", "arena", "--metric", "acc"]) == 2
    assert "--metric applies to --format lm_eval / helm / lighteval only" in capsys.readouterr().err


def test_every_eval_ever_instances(tmp_path):
    grades = np.round(RNG.random(30), 2)
    fx.eee_instances(tmp_path / "a_samples.jsonl", "gsm8k/org/m/1", "org/m", "gsm8k", grades)
    fx.eee_instances(tmp_path / "b_samples.jsonl", "gsm8k/org/m/2", "org/m", "gsm8k", ACC_A[:30])
    frame = read_format(tmp_path, "eee")
    wide = frame.pivot(index="question", columns="model", values="score")
    questions = [f"gsm8k/gsm8k_{k:04d}" for k in range(30)]
    np.testing.assert_array_equal(wide.loc[questions, "org/m@gsm8k/org/m/1"], grades)
    np.testing.assert_array_equal(wide.loc[questions, "org/m@gsm8k/org/m/2"], ACC_A[:30])
    correct = read_format(tmp_path / "a_samples.jsonl", "eee", value="is_correct")
    np.testing.assert_array_equal(correct["score"], (grades >= 0.5).astype(float))
    assert set(read_log(tmp_path, "eee").axes) == {"prompt", "task", "subject"}


def test_every_eval_ever_errors(tmp_path):
    path = fx.eee_instances(tmp_path / "a.jsonl", "e", "m", "t", [0.5, 7.0])
    with pytest.raises(WinrateInputError, match=r"evaluation.score is missing, not a number "
                                                r"or outside \[0, 1\] in line\(s\) 2$"):
        read_format(path, "eee")
    path.write_text('{"evaluation_id": "e", "model_id": "m", "sample_id": "1", '
                    '"evaluation": {"score": 1}}\n')
    with pytest.raises(WinrateInputError, match=r"field 'evaluation_name' missing in "
                                                r"line\(s\) 1"):
        read_format(path, "eee")


def test_harness_files_are_detected(tmp_path):
    from winrate.io.formats import detect_format

    eee = fx.eee_instances(tmp_path / "x_samples.jsonl", "e", "m", "t", [1.0])
    lm = fx.lm_eval_run(tmp_path, "m", fx.LM_EVAL_DATE[0], "arc_easy", {"acc": [1.0]})
    assert [detect_format(p) for p in (eee, lm)] == ["eee", "lm_eval"]  # inspect: in
    # tests/test_readers_inspect.py, on a real log


def test_helm_runs_pair_up_by_scenario(tmp_path):
    suite = tmp_path / "benchmark_output" / "runs" / "v1"
    scenario = "mmlu:subject=anatomy,method=multiple_choice_joint"
    a = {f"id{k}": [float(ACC_A[k]), float(ACC_B[k])] for k in range(20)}  # two trials
    b = {f"id{k}": [float(ACC_B[k])] for k in range(20)}
    fx.helm_run(suite, f"{scenario},model=openai_gpt2", "openai/gpt2", a)
    fx.helm_run(suite, f"{scenario},model=eleutherai_pythia-1b", "eleutherai/pythia-1b", b)
    with pytest.raises(WinrateInputError, match=r"2 metrics \['exact_match', "
                                                r"'num_output_tokens'\]: choose one"):
        read_format(suite, "helm")
    frame = read_format(suite, "helm", metric="exact_match")
    wide = frame.pivot(index="question", columns="model", values="score")
    questions = [f"{scenario}/id{k}" for k in range(20)]
    np.testing.assert_array_equal(wide.loc[questions, "openai/gpt2"],
                                  (ACC_A[:20] + ACC_B[:20]) / 2)  # trials averaged
    np.testing.assert_array_equal(wide.loc[questions, "eleutherai/pythia-1b"], ACC_B[:20])
    assert set(frame["trials"]) == {1, 2}


def test_helm_errors(tmp_path):
    path = fx.helm_run(tmp_path, "boolq,model=m", "m", {"a": [0.5], "b": [3.0]})
    with pytest.raises(WinrateInputError, match=r"metric 'exact_match' is missing or outside "
                                                r"\[0, 1\] in record\(s\) 2$"):
        read_format(path, "helm", metric="exact_match")
    records = json.loads(path.read_text())
    records[0]["perturbation"] = {"name": "typos", "prob": 0.1}
    path.write_text(json.dumps(records))
    with pytest.raises(WinrateInputError, match=r"1 perturbed instance\(s\), first records 1"):
        read_format(path, "helm", metric="exact_match")


def test_helm_stats_are_detected(tmp_path):
    from winrate.io.formats import detect_format

    path = fx.helm_run(tmp_path, "boolq,model=m", "m", {"a": [1.0]})
    assert detect_format(path) == "helm"


def test_sample_metadata_become_columns_to_split_by(tmp_path):
    from winrate.by_category import analyze_by

    # Inspect samples' metadata: tests/test_readers_inspect.py, on real logs
    eee = tmp_path / "eee"
    grades = [float(g) for g in ACC_A[:40]]
    fx.eee_instances(eee / "a.jsonl", "e1", "m-a", "mmlu", grades)
    fx.eee_instances(eee / "b.jsonl", "e2", "m-b", "mmlu", [float(g) for g in ACC_B[:40]])
    table = read_log(eee, "eee")
    assert set(table.axes["subject"].labels) == {"law", "physics"}
    boards = analyze_by(table, "subject", cluster="prompt")
    for subject, board in boards.boards.items():
        rows = np.arange(40) % 2 == (subject == "physics")
        a, b = ACC_A[:40][rows], ACC_B[:40][rows]  # the half-tie win rate by hand
        assert board.scores[list(board.models).index("m-a")] == pytest.approx(
            np.mean(0.5 + (a - b) / 2), abs=1e-12)


def test_conflicting_metadata_takes_the_most_common_value(tmp_path):
    from tests.note_codes import warns_code

    for k, model in enumerate(("m-a", "m-b", "m-c")):
        path = fx.eee_instances(tmp_path / f"{model}.jsonl", f"e{k}", model, "t", [1.0, 0.0])
        if model == "m-c":  # m-c's first sample says 'biology' where the others say 'law'
            lines = path.read_text().splitlines()
            first = json.loads(lines[0])
            first["metadata"]["subject"] = "biology"
            path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with warns_code("conflicting-metadata"):
        table = read_log(tmp_path, "eee")
    subject = table.axes["subject"]
    assert list(subject.labels[subject.codes]) == ["law", "physics"]


def test_lighteval_details(tmp_path):
    date = "2025-03-01T10-00-00.123456"
    task = "lighteval|arc:easy|0"
    fx.lighteval_details(tmp_path, "org/model-a", date, task, {"acc": ACC_A, "acc_norm": ACC_B})
    fx.lighteval_details(tmp_path, "org/model-b", date, task, {"acc": ACC_B, "acc_norm": ACC_A})
    with pytest.raises(WinrateInputError, match=r"2 metrics \['acc', 'acc_norm'\]"):
        read_format(tmp_path, "lighteval")
    frame = read_format(tmp_path / "details", "lighteval", metric="acc")
    wide = frame.pivot(index="question", columns="model", values="score")
    questions = [f"{task}/{1000 + k}" for k in range(40)]
    np.testing.assert_array_equal(wide.loc[questions, "org/model-a"], ACC_A)
    np.testing.assert_array_equal(wide.loc[questions, "org/model-b"], ACC_B)
    no_ids = fx.lighteval_details(tmp_path / "x", "m", date, "t", {"em": ACC_A}, ids=False)
    assert list(read_format(no_ids, "lighteval")["question"][:3]) == ["t/1", "t/2", "t/3"]
    bad = fx.lighteval_details(tmp_path / "y", "m", date, "t", {"bleu": ACC_A * 30})
    with pytest.raises(WinrateInputError, match=r"metric 'bleu' is missing, not a number or "
                                                r"outside \[0, 1\] in row\(s\) "):
        read_format(bad, "lighteval")


def test_lighteval_details_are_detected(tmp_path, capsys):
    from winrate.io.formats import detect_format

    path = fx.lighteval_details(tmp_path, "org/m", "2025-01-01T00-00-00", "t", {"em": ACC_A})
    assert detect_format(path) == "lighteval"
    fx.lighteval_details(tmp_path, "org/n", "2025-01-01T00-00-00", "t", {"em": ACC_B})
    assert main(["leaderboard", str(tmp_path / "details"), "--format", "lighteval",
                 "--metric", "em", "--no-progress"]) == 0
    assert "org/n" in capsys.readouterr().out
