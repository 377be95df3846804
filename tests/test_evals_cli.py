"""The eval table layer and the ``eval`` / ``power`` commands, called directly."""

import argparse
import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.evals import compare, evaluate, question_scores, summarize_scores
from winrate.evals.cli import COMMANDS
from winrate.evals.report import pct, render


def _long_table(seed=0, n=300, g=40, k=1):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, g, n)
    base = rng.beta(5, 3, g)[src]
    rows = []
    for model, shift in (("alpha", 0.0), ("beta", -0.06), ("gamma", -0.03)):
        p = np.clip(base + shift, 0, 1)
        for rep in range(k):
            y = (rng.random(n) < p).astype(float)
            rows.append(pd.DataFrame({"qid": np.arange(n), "model": model, "correct": y,
                                      "src": src, "cat": src % 31, "rep": rep}))
    return pd.concat(rows, ignore_index=True)


def _run(command, argv):
    add_arguments, run = COMMANDS[command]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return run(parser.parse_args(argv))


def test_commands_interface():
    assert set(COMMANDS) == {"eval", "power"}
    for add_arguments, run in COMMANDS.values():
        assert callable(add_arguments) and callable(run)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_eval_command_writes_tables_and_json(tmp_path, capsys, ext):
    df = _long_table()
    path = tmp_path / f"scores.{ext}"
    {"csv": lambda: df.to_csv(path, index=False),
     "jsonl": lambda: df.to_json(path, orient="records", lines=True),
     "parquet": lambda: df.to_parquet(path)}[ext]()
    out = tmp_path / "out.json"
    code = _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--model-col", "model", "--cluster-col", "src", "--cluster-col", "cat",
                         "--paired", "alpha", "beta", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "| alpha |" in text and "Model - Baseline (SE)" in text
    doc = json.loads(out.read_text())
    rec = doc["models"]["alpha"]
    for key in ("mean", "se", "se_naive", "n", "n_clusters", "deff", "ci_low", "ci_high",
                "method"):
        assert key in rec
    assert rec["n_clusters"] == {"src": 40, "cat": 31}
    y = df[df.model == "alpha"].sort_values("qid")
    assert rec["mean"] == pytest.approx(y.correct.mean())
    p = y.correct.mean()
    assert rec["se_naive"] == pytest.approx(np.sqrt(p * (1 - p) / 300))
    assert doc["comparisons"][0]["mcnemar"]["b"] >= 0


def test_single_model_and_resampled_answers(tmp_path, capsys):
    df = _long_table(k=3)
    one = df[df.model == "alpha"].drop(columns="model")
    path = tmp_path / "one.csv"
    one.to_csv(path, index=False)
    out = tmp_path / "one.json"
    assert _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--json", str(out)]) == 0
    rec = json.loads(out.read_text())["models"]["model"]
    means = one.groupby("qid").correct.mean()
    # question-level means, never a pooled SE over all 3 n answers
    assert rec["n"] == 300 and rec["answers_per_question"] == 3
    assert rec["se"] == pytest.approx(stats.sem(means))
    assert rec["naive_method"] == "clt"
    assert rec["variance_components"]["k"] == 3


def test_cluster_labels_must_be_constant_within_question():
    df = _long_table()
    df.loc[df.index[5], "src"] = 999
    with pytest.raises(WinrateInputError, match="constant within a question"):
        question_scores(df, "correct", "qid", "model", ["src"])


def test_bad_tables_name_columns_and_rows():
    df = _long_table()
    df.loc[[3, 8], "correct"] = np.nan
    with pytest.raises(WinrateInputError, match=r"'correct' has missing or infinite.*\[3, 8\]"):
        question_scores(df, "correct", "qid", "model")
    with pytest.raises(WinrateInputError, match="not found"):
        question_scores(_long_table(), "score", "qid", "model")
    bad = _long_table()
    bad["correct"] = bad["correct"].astype(object)
    bad.loc[2, "correct"] = "yes"
    with pytest.raises(WinrateInputError, match=r"non-numeric values at rows \[2\]"):
        question_scores(bad, "correct", "qid", "model")
    with pytest.raises(WinrateInputError, match="format"):
        _run("eval", ["scores.xlsx", "--score-col", "c", "--question-col", "q"])


def test_paired_comparison_uses_common_questions():
    df = _long_table()
    df = df[~((df.model == "beta") & (df.qid < 10))]
    qs = question_scores(df, "correct", "qid", "model", ["src"])
    with warns_code("common-questions") as found:
        comp = compare(qs, "alpha", "beta")
    assert found[0].models == ("alpha", "beta") and "the 290 questions" in found[0]
    assert comp.paired.n == 290
    with pytest.raises(WinrateInputError, match="not found"):
        compare(qs, "alpha", "delta")


def test_evaluate_matches_array_api_and_neighbours():
    df = _long_table(seed=3)
    qs = question_scores(df, "correct", "qid", "model", ["src"])
    report = evaluate(qs, neighbours=True)
    y = df[df.model == "gamma"].sort_values("qid")
    direct = summarize_scores(y.correct.to_numpy(), {"src": y.src.to_numpy()})
    assert report.models["gamma"].summary == direct
    ranked = sorted(report.models, key=lambda m: -report.models[m].summary.mean)
    pairs = [(c.model_a, c.model_b) for c in report.comparisons]
    assert pairs == list(zip(ranked, ranked[1:], strict=False))


def test_report_formatting():
    assert pct(0.6548) == "65.5%" and pct(-0.031, sign=True) == "-3.1%" and pct(None) == "-"
    rows = [{"a": "50%", "b": "x_y"}]
    assert render(rows, "latex").count(r"50\%") == 1 and r"x\_y" in render(rows, "latex")
    assert render(rows, "csv").splitlines()[0] == "a,b"
    with pytest.raises(WinrateInputError):
        render(rows, "html")


def test_power_command(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert _run("power", ["--delta", "0.03", "--omega2", str(1 / 9), "--json", str(out)]) == 0
    assert "969" in capsys.readouterr().out
    assert json.loads(out.read_text())["n_required"] == 969
    assert _run("power", ["--n", "198", "--omega2", str(1 / 9), "--sigma2-a", str(1 / 6),
                          "--sigma2-b", str(1 / 6), "--k-a", "10", "--k-b", "10"]) == 0
    assert "7.57 points" in capsys.readouterr().out
    with pytest.raises(WinrateInputError, match="--omega2"):
        _run("power", ["--delta", "0.03"])


def test_power_command_from_pilot(tmp_path, capsys):
    df = _long_table(k=2, n=400)
    path = tmp_path / "pilot.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "p.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        assert _run("power", ["--n", "1000", "--pilot", str(path), "--score-col", "correct",
                              "--question-col", "qid", "--model-col", "model", "--models",
                              "alpha", "beta", "--cluster-col", "src", "--json", str(out)]) == 0
    inputs = json.loads(out.read_text())["inputs"]
    assert inputs["k_a"] == 2 and inputs["sigma2_a"] > 0 and inputs["omega2"] >= 0
    with pytest.raises(WinrateInputError, match="--models"):
        _run("power", ["--n", "10", "--pilot", str(path), "--score-col", "correct",
                       "--question-col", "qid", "--model-col", "model"])


def test_module_entry_point_reports_errors(tmp_path):
    path = tmp_path / "s.csv"
    pd.DataFrame({"q": [1, 2, 3], "s": [1.0, None, 0.0]}).to_csv(path, index=False)
    done = subprocess.run([sys.executable, "-m", "winrate.evals.cli", "eval", str(path),
                           "--score-col", "s", "--question-col", "q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "'s' has missing or infinite scores at rows [1]" in done.stderr


def test_wide_matrix_input_drops_missing_answers():
    from winrate.evals.frame import question_scores_from_wide

    wide = pd.DataFrame({"m1": [1.0, 0.0, np.nan, 1.0], "m2": [0.0, 1.0, 1.0, 1.0]},
                        index=[10, 11, 12, 13])
    meta = pd.DataFrame({"topic": ["a", "a", "b", "b"]}, index=wide.index)
    qs = question_scores_from_wide(wide, meta, ["topic"])
    assert qs.scores["m1"].notna().sum() == 3 and qs.clusters.loc[12, "topic"] == "b"
    with pytest.raises(WinrateInputError, match="no row for questions"):
        question_scores_from_wide(wide, meta.iloc[:2], ["topic"])


def test_bayes_flag_adds_posterior_probability(tmp_path, capsys):
    path = tmp_path / "s.csv"
    _long_table(n=200).to_csv(path, index=False)
    out = tmp_path / "o.json"
    assert _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--model-col", "model", "--paired", "alpha", "beta", "--bayes",
                         "--json", str(out)]) == 0
    assert "P(Model > Baseline)" in capsys.readouterr().out
    bayes = json.loads(out.read_text())["comparisons"][0]["bayes"]
    assert 0.5 < bayes["prob_a_better"] <= 1 and bayes["ess"] > 1000


def test_render_fills_missing_cells():
    text = render([{"a": 1}, {"a": 2, "b": 3}], "markdown")
    assert text.splitlines()[0] == "| a | b |" and "| 1 | - |" in text


def test_mmlu_score_rows_show_undefined_design_effect():
    from winrate.evals.mmlu import ClusteringComparison

    df = _long_table(n=60, g=10)
    df.loc[df.model == "beta", "correct"] = 1.0  # constant scores: deff is undefined
    qs = question_scores(df, "correct", "qid", "model", ["src"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        naive = evaluate(qs.__class__(**{**qs.__dict__, "clusters": qs.clusters[[]]}))
        clustered = evaluate(qs)
    assert clustered.models["beta"].summary.deff is None
    rows = ClusteringComparison({"naive": naive, "src": clustered}).score_rows()
    by_model = {r["Model"]: r for r in rows}
    assert by_model["beta"]["DEFF src"] == "-"
    s = clustered.models["alpha"].summary
    assert by_model["alpha"]["DEFF src"] == f"{s.se_cr1**2 / s.se_bernoulli**2:.1f}"


def test_pilot_balance_is_checked_on_common_questions(tmp_path):
    from winrate.evals import estimate_power_inputs

    df = _long_table(k=2, n=120)
    # beta skips question 0, where alpha has a third answer: the common questions are
    # still balanced (K = 2 for both models)
    df = df[~((df.model == "beta") & (df.qid == 0))]
    extra = df[(df.model == "alpha") & (df.qid == 0)].iloc[:1]
    df = pd.concat([df, extra], ignore_index=True)
    path = tmp_path / "pilot.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "p.json"
    assert _run("power", ["--n", "500", "--pilot", str(path), "--score-col", "correct",
                          "--question-col", "qid", "--model-col", "model", "--models",
                          "alpha", "beta", "--json", str(out)]) == 0
    inputs = json.loads(out.read_text())["inputs"]
    # reference: (n, 2) matrices built by a plain loop over questions 1..119
    mats = [np.array([df[(df.model == m) & (df.qid == q)].correct.to_numpy()[:2]
                      for q in range(1, 120)]) for m in ("alpha", "beta")]
    ref = estimate_power_inputs(*mats)
    assert inputs["sigma2_a"] == pytest.approx(np.var(mats[0], axis=1, ddof=1).mean())
    assert inputs["omega2"] == pytest.approx(ref.omega2) and inputs["k_a"] == 2
    unbalanced = df[~((df.model == "beta") & (df.qid == 5) & (df.rep == 1))]
    unbalanced.to_csv(path, index=False)
    with pytest.raises(WinrateInputError, match="'beta' must have the same number"):
        _run("power", ["--n", "500", "--pilot", str(path), "--score-col", "correct",
                       "--question-col", "qid", "--model-col", "model", "--models",
                       "alpha", "beta"])


def _cluster_fit(y, groups, correction):
    return sm.OLS(y, np.ones(y.size)).fit(
        cov_type="cluster", use_t=True, cov_kwds={"groups": groups, "use_correction": correction})


def _icc_from_f(x, groups):
    parts = [x[groups == g] for g in np.unique(groups)]
    f = stats.f_oneway(*parts).statistic
    sizes = np.array([p.size for p in parts])
    m0 = (x.size - (sizes**2).sum() / x.size) / (len(parts) - 1)
    return (f - 1) / (f + m0 - 1)


def test_eval_json_numbers_match_independent_recomputation(tmp_path):
    df = _long_table(seed=5, n=200, g=35)
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "o.json"
    assert _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--model-col", "model", "--cluster-col", "src", "--paired", "alpha",
                         "gamma", "--alpha", "0.1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    wide = df.pivot(index="qid", columns="model", values="correct")
    src = df[df.model == "alpha"].set_index("qid").loc[wide.index, "src"].to_numpy()
    for model in ("alpha", "beta", "gamma"):
        rec, y = doc["models"][model], wide[model].to_numpy()
        p, n = y.mean(), y.size
        cr0, cr1 = _cluster_fit(y, src, False), _cluster_fit(y, src, True)
        assert rec["se_cr0"] == pytest.approx(cr0.bse[0], rel=1e-10)
        assert rec["se_cr1"] == pytest.approx(cr1.bse[0], rel=1e-10)
        deff = cr1.bse[0] ** 2 / (p * (1 - p) / n)
        assert rec["deff"] == pytest.approx(deff, rel=1e-10)
        assert rec["n_eff"] == pytest.approx(n / deff, rel=1e-10)
        assert rec["icc"]["src"] == pytest.approx(_icc_from_f(y, src), rel=1e-10)
        low, high = cr1.conf_int(alpha=0.1)[0]  # t(G - 1) Wald interval on the CR1 SE
        assert (rec["ci_low"], rec["ci_high"]) == pytest.approx((low, high), rel=1e-10)
    comp = doc["comparisons"][0]
    d = (wide["alpha"] - wide["gamma"]).to_numpy()
    fit = _cluster_fit(d, src, True)
    assert comp["difference"] == pytest.approx(d.mean(), rel=1e-12)
    assert comp["se_cr0"] == pytest.approx(_cluster_fit(d, src, False).bse[0], rel=1e-10)
    assert comp["se_cr1"] == pytest.approx(fit.bse[0], rel=1e-10)
    assert comp["z"] == pytest.approx(fit.tvalues[0], rel=1e-10)
    assert comp["p_value"] == pytest.approx(fit.pvalues[0], rel=1e-10)
    assert (comp["ci_low"], comp["ci_high"]) == pytest.approx(tuple(fit.conf_int(0.1)[0]),
                                                              rel=1e-10)
    assert comp["correlation"] == pytest.approx(
        np.corrcoef(wide["alpha"], wide["gamma"])[0, 1], rel=1e-12)


def test_csv_tables_parse_back_to_the_result_objects():
    import io

    from winrate.evals import pairwise_table, score_table

    df = _long_table(seed=2, n=150, g=35)
    qs = question_scores(df, "correct", "qid", "model", ["src"])
    report = evaluate(qs, pairs=[("alpha", "beta"), ("gamma", "beta")])
    scores = pd.read_csv(io.StringIO(score_table(report, "csv")))
    assert list(scores["model"]) == list(report.models)
    for rec in scores.to_dict("records"):
        s = report.models[rec["model"]].summary
        for col in ("mean", "se", "se_naive", "se_cr0", "se_cr1", "deff", "n_eff", "ci_low",
                    "ci_high"):
            assert rec[col] == pytest.approx(getattr(s, col), rel=1e-12)
        assert rec["n"] == s.n and rec["n_clusters.src"] == s.n_clusters[0]
        assert rec["icc.src"] == pytest.approx(s.icc[0], rel=1e-12)
    pairs = pd.read_csv(io.StringIO(pairwise_table(report, "csv")))
    assert len(pairs) == 2
    for row, c in zip(pairs.to_dict("records"), report.comparisons, strict=True):
        t = c.paired.test
        assert (row["model_a"], row["model_b"]) == (c.model_a, c.model_b)
        for col, value in (("difference", t.estimate), ("se", t.se), ("z", t.z),
                           ("p_value", t.p_value), ("ci_low", t.ci_low),
                           ("ci_high", t.ci_high), ("correlation", c.paired.correlation),
                           ("se_paired", c.paired.se_paired)):
            assert row[col] == pytest.approx(value, rel=1e-12)
        assert row["df"] == t.df and row["mcnemar.b"] == c.mcnemar.b


# ------------------------------------------------ eval --dataset and the report's header


def _small_score_table():
    """A stand-in for the bundled MMLU-Pro score table: 3 models, 60 questions, a
    per-question ``src`` axis and the constant judge (as mmlu_pro_scores gives)."""
    from winrate.io.scores import score_table

    df = _long_table(n=60, g=12)
    wide = df.pivot(index="qid", columns="model", values="correct")
    src = df.drop_duplicates("qid").set_index("qid")["src"].loc[wide.index]
    codes, labels = pd.factorize(src.astype(str))
    axes = {"judge": (np.zeros(len(wide), np.int64), ["exact_match"]),
            "src": (codes, labels)}
    return df, score_table(wide.to_numpy(), wide.columns, wide.index.astype(str), axes)


def test_eval_reads_a_bundled_dataset_as_leaderboard_does(tmp_path, monkeypatch, capsys):
    from winrate.cli import main
    from winrate.io import datasets

    df, table = _small_score_table()
    monkeypatch.setitem(datasets.SCORE_DATASETS, "mmlu_pro", lambda **options: table)
    assert main(["eval", "--dataset", "mmlu_pro", "--cluster-col", "src",
                 "--table-format", "csv"]) == 0
    from_dataset = capsys.readouterr().out
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    assert main(["eval", str(path), "--score-col", "correct", "--question-col", "qid",
                 "--model-col", "model", "--cluster-col", "src", "--table-format",
                 "csv"]) == 0
    from_file = capsys.readouterr().out
    assert from_dataset == from_file and "12" in from_dataset


@pytest.mark.parametrize("argv, message", [
    (["eval", "x.csv", "--dataset", "mmlu_pro"], "brings its own scores"),
    (["eval", "--dataset", "mmlu_pro", "--score-col", "s"], "brings its own scores"),
    (["eval"], "give a FILE of answers"),
    (["eval", "x.csv", "--score-col", "s"], "give --question-col"),
])
def test_eval_input_errors_are_one_line(argv, message, capsys):
    from winrate.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_the_score_dataset_names_are_the_readers():
    from winrate.constants import SCORE_DATASET_NAMES
    from winrate.io.datasets import SCORE_DATASETS

    assert SCORE_DATASET_NAMES == tuple(SCORE_DATASETS)


@pytest.mark.parametrize("fmt, first", [
    ("text", "3 models scored on 300 questions"), ("markdown", "3 models scored on"),
    ("latex", "% 3 models scored on"),
])
def test_the_eval_report_opens_with_a_sentence(tmp_path, capsys, fmt, first):
    path = tmp_path / "scores.csv"
    _long_table().to_csv(path, index=False)
    assert _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--model-col", "model", "--cluster-col", "src",
                         "--table-format", fmt]) == 0
    head = " ".join(capsys.readouterr().out.split("\n\n")[0].replace("\n% ", "\n").split())
    assert head.startswith(first)
    assert "0/1 scores in column 'correct'" in head
    assert "standard errors clustered by src (40 clusters), cr1 correction" in head
    assert "95% confidence intervals" in head


def test_the_eval_header_of_unclustered_single_model_scores():
    from winrate.evals.report import header

    df = _long_table()
    one = df[df.model == "alpha"].drop(columns="model")
    report = evaluate(question_scores(one, "correct", "qid", scale="unit"), alpha=0.1)
    assert header(report).startswith("1 model scored on 300 questions (scores in [0, 1] in "
                                     "column 'correct'); questions independent (no "
                                     "clustering); 90% confidence intervals")


def test_csv_eval_output_has_no_header(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    _long_table().to_csv(path, index=False)
    assert _run("eval", [str(path), "--score-col", "correct", "--question-col", "qid",
                         "--model-col", "model", "--table-format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("model,mean,")
