"""The public API: top-level names, the result objects' ``to_frame``, ``conf_int``,
``summary``, ``repr`` and ``==``, and the documentation's Python examples through top-level names.

Intervals are checked against hand computations with scipy's normal, t and beta quantiles,
simultaneous ones against :func:`winrate.inference.simultaneous_intervals` applied to a
covariance computed here by brute force.
"""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib
from scipy import stats

import winrate
import winrate.evals
from tests.logit_oracle import logit_interval
from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.inference.joint import simultaneous_intervals
from winrate.report.leaderboard import format_summary, format_table
from winrate.settings import Joint, Variance

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # as scripts/doc_examples.py


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def log():
    """The README's worked example: 5 models, 120 prompts, 30 judges (scripts/doc_examples)."""
    design = winrate.SimulationDesign(n_models=5, n_prompts=120, n_judges=30)
    return winrate.simulate_comparisons(design, seed=7).log


@pytest.fixture(scope="module")
def analysis(log):
    return quiet(winrate.analyze, log, cluster="prompt+judge", joint=Joint(simultaneous=True))


def by_model(frame: pd.DataFrame, models) -> pd.DataFrame:
    """Rows of ``frame`` in the order of ``models`` (the analysis' own order)."""
    return frame.loc[[str(m) for m in models]]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("package", [winrate, winrate.evals])
def test_every_public_name_is_its_modules_object(package):
    for module, names in package._EXPORTS.items():
        for name in names:
            assert getattr(package, name) is getattr(importlib.import_module(module), name)
            assert name in package.__all__ and name in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        package.nonexistent  # noqa: B018


@pytest.mark.parametrize("package", [winrate, winrate.evals])
def test_type_checking_imports_are_the_exports(package):
    """The ``if TYPE_CHECKING`` re-exports (for type checkers) list exactly the lazy names."""
    tree = ast.parse(Path(package.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and getattr(node.test, "id", None) == "TYPE_CHECKING")
    imported = {(node.module, alias.name) for node in block.body
                for alias in node.names if alias.asname == alias.name}
    exported = {(module, name) for module, names in package._EXPORTS.items() for name in names}
    assert imported == exported


def test_main_names_and_py_typed_are_there():
    for name in ("read_comparisons", "read_dataset", "read_log", "analyze", "explore", "fit",
                 "ESTIMATORS", "evaluate", "question_scores", "__version__"):
        assert name in winrate.__all__
    assert winrate.ESTIMATORS == ("winrate", "bt", "rao-kupper", "lc")
    assert (ROOT / "winrate" / "py.typed").exists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["winrate"]


# --------------------------------------------------------------- leaderboard analysis


@pytest.mark.parametrize("reference, df", [("normal", None), ("t", 29)])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.32])
def test_conf_int_is_the_logit_interval_of_quantile_times_se(log, reference, df, alpha):
    # CR1 named: auto takes CR2 here (few effective prompt clusters, issue 37)
    result = quiet(winrate.analyze, log, cluster="prompt+judge",
                   variance=Variance(correction="cr1", reference=reference))
    assert result.settings["df"] == df  # t(G - 1) with the 30 judges
    q = stats.norm.ppf(1 - alpha / 2) if df is None else stats.t.ppf(1 - alpha / 2, df)
    ci = result.conf_int(alpha)
    assert list(ci.columns) == ["lower", "upper"]
    assert list(ci.index) == list(result.to_frame().index)
    got = by_model(ci, result.models)
    low, high = logit_interval(result.scores, q * result.se)
    np.testing.assert_allclose(got["lower"], low, rtol=1e-10)
    np.testing.assert_allclose(got["upper"], high, rtol=1e-10)


def test_conf_int_at_the_fit_alpha_is_the_table_interval(analysis):
    table, ci = analysis.to_frame(), analysis.conf_int(0.05)
    np.testing.assert_allclose(ci["lower"], table["ci_low"], rtol=1e-12)
    np.testing.assert_allclose(ci["upper"], table["ci_high"], rtol=1e-12)


def test_jackknife_conf_int_uses_its_t_degrees_of_freedom(log):
    result = quiet(winrate.analyze, log, cluster="prompt", variance=Variance("jackknife"))
    assert result.intervals.df == 119
    q = stats.t.ppf(1 - 0.2 / 2, 119)
    got = by_model(result.conf_int(0.2), result.models)
    np.testing.assert_allclose(got["lower"], logit_interval(result.scores, q * result.se)[0],
                               rtol=1e-10)


@pytest.mark.parametrize("reference, df", [("normal", None), ("t", 29)])
def test_joint_conf_int_is_the_max_t_interval_of_the_covariance(log, reference, df):
    result = quiet(winrate.analyze, log, cluster="prompt+judge",
                   variance=Variance(correction="cr1", reference=reference),
                   joint=Joint(simultaneous=True))
    stored = result.conf_int(0.05, joint=True)
    np.testing.assert_allclose(by_model(stored, result.models)["lower"], result.joint.sim_low)
    for alpha in (0.05, 0.1):
        sim = simultaneous_intervals(result.scores, result.cov, alpha, df, seed=0)
        got = by_model(result.conf_int(alpha, joint=True), result.models)
        low, high = logit_interval(result.scores, sim.high - result.scores)
        np.testing.assert_allclose(got["lower"], low, rtol=1e-10)
        np.testing.assert_allclose(got["upper"], high, rtol=1e-10)
        marginal = by_model(result.conf_int(alpha), result.models)
        assert (got["lower"] < marginal["lower"]).all() and (got["upper"] > marginal["upper"]).all()


def test_wild_bootstrap_intervals_only_at_their_alpha(log):
    result = quiet(winrate.analyze, log, cluster="judge",
                   variance=Variance("bootstrap", bootstrap_reps=199))
    assert result.method == "wild bootstrap"
    got = by_model(result.conf_int(0.05), result.models)
    np.testing.assert_array_equal(got["lower"], result.intervals.low)
    for kwargs in ({"alpha": 0.1}, {"joint": True}):
        with pytest.raises(WinrateInputError, match="percentile-t"):
            result.conf_int(**kwargs)


def test_a_model_that_is_not_estimable_gets_no_interval():
    """Model 4 meets everyone in prompt 0 only, a win and a loss each (as in
    tests/test_thin_designs.py): its prompt-clustered variance is not identified."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 600), rng.integers(0, 4, 600)
    keep = a != b
    a, b, prompt = a[keep], b[keep], rng.integers(1, 40, keep.sum())
    score = rng.choice([0.0, 0.5, 1.0], a.size)
    a, b = np.r_[a, np.repeat(4, 8)], np.r_[b, np.repeat([0, 1, 2, 3], 2)]
    score, prompt = np.r_[score, np.tile([1.0, 0.0], 4)], np.r_[prompt, np.zeros(8, int)]
    result = quiet(winrate.analyze, winrate.ComparisonLog.from_arrays(a, b, score, prompt=prompt),
                   cluster="prompt")
    assert "4" in result.not_estimable
    for joint in (False, True):
        ci = result.conf_int(0.1, joint=joint)
        assert ci.loc["4"].isna().all() and ci.drop("4").notna().all().all()


def test_to_frame_columns_are_the_arrays(analysis):
    frame = analysis.to_frame()
    assert frame.index.name == "model"
    assert frame["score"].is_monotonic_decreasing
    assert list(frame["rank"]) == list(range(1, len(frame) + 1))
    got = by_model(frame, analysis.models)
    for column, values in [("score", analysis.scores), ("se", analysis.se),
                           ("se_naive", analysis.se_naive),
                           ("ci_low", analysis.intervals.low), ("ci_high", analysis.intervals.high),
                           ("n", analysis.leaderboard.comparisons_per_model),
                           ("inflation", np.sqrt(analysis.deff)),
                           ("sim_low", analysis.joint.sim_low)]:
        np.testing.assert_allclose(got[column], values, rtol=1e-12, err_msg=column)


def test_summary_repr_and_equality(log, analysis):
    text = analysis.summary()
    assert isinstance(text, str) and repr(text) == str(text)
    for block in (format_summary(analysis), format_table(analysis)):
        assert block in text
    assert all(f"] ({note.code}) {note}" in text for note in analysis.notes)
    shown = repr(analysis)
    assert "\n" not in shown and len(shown) < 200 and "array" not in shown
    assert "models=5" in shown and "'prompt+judge'" in shown
    again = quiet(winrate.analyze, log, cluster="prompt+judge", joint=Joint(simultaneous=True))
    assert analysis == analysis and analysis != again and len({analysis, again}) == 2


# --------------------------------------------------------------------------- EDA


@pytest.fixture(scope="module")
def eda(log):
    return quiet(winrate.explore, log)


def test_eda_conf_int_under_each_clustering(eda):
    """Win probabilities: the logit interval of q se (marginal) or c se (joint), as the
    leaderboard's (issue 35: one conf_int)."""
    assert eda.main == "prompt+judge"
    for name in (None, "prompt", "judge"):
        result = eda.clusterings[name or eda.main]
        np.testing.assert_allclose(np.sqrt(np.diag(result.cov)), result.se, rtol=1e-10)
        for alpha in (0.05, 0.2):
            q = stats.norm.ppf(1 - alpha / 2)
            got = by_model(eda.conf_int(alpha, clustering=name), eda.models)
            low, high = logit_interval(eda.score, q * result.se)
            np.testing.assert_allclose(got["lower"], low, rtol=1e-12)
            np.testing.assert_allclose(got["upper"], high, rtol=1e-12)
            sim = simultaneous_intervals(eda.score, result.cov, alpha, seed=0)
            joint = by_model(eda.conf_int(alpha, joint=True, clustering=name), eda.models)
            np.testing.assert_allclose(joint["lower"],
                                       logit_interval(eda.score, sim.high - eda.score)[0],
                                       rtol=1e-12)


def test_eda_conf_int_of_an_unidentified_clustering_is_an_error(log):
    report = quiet(winrate.explore, winrate.ComparisonLog.from_arrays(
        log.model_a, log.model_b, log.score, prompt=log.axes["prompt"].codes), ["prompt", "judge"])
    assert not report.clusterings["judge"].identified
    with pytest.raises(WinrateInputError, match="'judge' has no SEs; identified: \\['prompt'\\]"):
        report.conf_int(clustering="judge")


def test_eda_frame_summary_repr_equality(log, eda):
    frame = eda.to_frame()
    assert frame["score"].is_monotonic_decreasing
    got = by_model(frame, eda.models)
    np.testing.assert_allclose(got["score"], eda.score, rtol=1e-12)
    np.testing.assert_allclose(got["se_naive"], eda.se_naive, rtol=1e-12)
    for name, result in eda.clusterings.items():
        np.testing.assert_allclose(got[f"se_{name}"], result.se, rtol=1e-12)
        np.testing.assert_allclose(got[f"infl_{name}"], result.inflation, rtol=1e-12)
    text = eda.summary()
    assert winrate.eda.format_table(eda) in text and "Summary" in text
    shown = repr(eda)
    assert "\n" not in shown and len(shown) < 200 and "main='prompt+judge'" in shown
    assert eda == eda and eda != quiet(winrate.explore, log)


# ------------------------------------------------------------------------ eval statistics


def answers(seed: int = 1, n: int = 200, topics: int = 20, models=("a", "b", "c")):
    """0/1 answers of ``models`` to ``n`` questions in ``topics`` topics of varying ease."""
    rng = np.random.default_rng(seed)
    question = np.arange(n)
    topic = question % topics
    ease = rng.normal(0, 0.8, topics)[topic]
    frames = [pd.DataFrame({"q": question, "model": m, "topic": topic.astype(str),
                            "correct": (rng.normal(ease + 0.3 * i) > 0).astype(int)})
              for i, m in enumerate(models)]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def clustered_report():
    qs = winrate.question_scores(answers(), "correct", "q", "model", ["topic"])
    return quiet(winrate.evaluate, qs, interval="wald", neighbours=True)


def test_eval_conf_int_wald_t_and_the_reported_alpha(clustered_report):
    summaries = [r.summary for r in clustered_report.models.values()]
    mean, se = np.array([s.mean for s in summaries]), np.array([s.se for s in summaries])
    q = stats.t.ppf(1 - 0.1 / 2, 19)  # 20 topics
    ci = clustered_report.conf_int(0.1)
    assert list(ci.index) == list(clustered_report.to_frame().index) == ["a", "b", "c"]
    np.testing.assert_allclose(ci["lower"], mean - q * se, rtol=1e-12)
    np.testing.assert_allclose(ci["upper"], mean + q * se, rtol=1e-12)
    stored = clustered_report.conf_int(0.05)
    np.testing.assert_array_equal(stored["lower"], [s.ci_low for s in summaries])


def test_eval_conf_int_recomputes_the_bayes_interval():
    """Independent 0/1 scores on fewer than 300 questions: the Beta(1 + k, 1 + n - k)
    interval, at any alpha."""
    qs = winrate.question_scores(answers(n=150), "correct", "q", "model")
    report = quiet(winrate.evaluate, qs)
    counts = qs.scores.sum().to_numpy()
    for alpha in (0.05, 0.2):
        ci = report.conf_int(alpha)
        np.testing.assert_allclose(ci["lower"], stats.beta.ppf(alpha / 2, 1 + counts,
                                                               151 - counts), rtol=1e-9)
        np.testing.assert_allclose(ci["upper"], stats.beta.ppf(1 - alpha / 2, 1 + counts,
                                                               151 - counts), rtol=1e-9)


def test_eval_joint_conf_int_from_the_clustered_correlation(clustered_report):
    """Brute force: cluster totals of each model's influence, topic by topic."""
    qs = clustered_report.scores
    x, topic = qs.scores.to_numpy(), qs.clusters["topic"].to_numpy()
    u = (x - x.mean(axis=0)) / len(x)
    totals = np.array([u[topic == g].sum(axis=0) for g in np.unique(topic)])
    corr = _correlation(totals.T @ totals)
    summaries = [r.summary for r in clustered_report.models.values()]
    mean, se = np.array([s.mean for s in summaries]), np.array([s.se for s in summaries])
    for alpha in (0.05, 0.1):
        sim = simultaneous_intervals(mean, corr * np.outer(se, se), alpha, 19, seed=0)
        got = clustered_report.conf_int(alpha, joint=True)
        low, high = logit_interval(mean, sim.high - mean)  # accuracies: on the logit scale
        np.testing.assert_allclose(got["lower"], low, rtol=1e-10)
        np.testing.assert_allclose(got["upper"], high, rtol=1e-10)


def test_eval_joint_conf_int_without_clusters_uses_the_score_correlation():
    """Fractional scores: each model's SE is the CLT one (n - 1), the correlation that of
    the question-level scores."""
    table = answers(n=400)
    table["correct"] = (table["correct"] + np.random.default_rng(2).random(len(table))) / 2
    qs = winrate.question_scores(table, "correct", "q", "model")
    report = quiet(winrate.evaluate, qs)
    summaries = [r.summary for r in report.models.values()]
    mean, se = np.array([s.mean for s in summaries]), np.array([s.se for s in summaries])
    corr = np.corrcoef(qs.scores.to_numpy().T)
    sim = simultaneous_intervals(mean, corr * np.outer(se, se), 0.05, seed=0)
    np.testing.assert_allclose(report.conf_int(joint=True)["lower"],  # scores in [0, 1]
                               logit_interval(mean, sim.high - mean)[0], rtol=1e-10)


def _correlation(cov: np.ndarray) -> np.ndarray:
    sd = np.sqrt(np.diag(cov))
    return cov / np.outer(sd, sd)


def test_eval_frame_summary_repr_equality(clustered_report):
    frame = clustered_report.to_frame()
    for model, result in clustered_report.models.items():
        s = result.summary
        assert frame.loc[model, "mean"] == s.mean and frame.loc[model, "se"] == s.se
        assert frame.loc[model, "ci_low"] == s.ci_low and frame.loc[model, "n"] == s.n
    text = clustered_report.summary()
    assert winrate.evals.score_table(clustered_report) in text
    assert winrate.evals.pairwise_table(clustered_report) in text
    shown = repr(clustered_report)
    assert "\n" not in shown and "models=3" in shown and "clusters=['topic']" in shown
    assert clustered_report == clustered_report
    assert clustered_report != quiet(winrate.evaluate, clustered_report.scores)


def test_a_report_without_its_scores_cannot_recompute(clustered_report):
    from dataclasses import replace

    bare = replace(clustered_report, scores=None)
    assert bare.conf_int(0.05)["lower"].notna().all()
    with pytest.raises(WinrateInputError, match="no question scores"):
        bare.conf_int(0.1)


# ------------------------------------------------------------------------------- docs


#: The first line of a documented Python block that another test runs on inputs it writes.
OWN_INPUTS = "#: runs on its own inputs"


def python_blocks() -> list[str]:
    """The Python blocks of the README, then of every docs/ page."""
    return [block for page in PAGES
            for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]


def test_documented_python_uses_top_level_names_only():
    blocks = python_blocks()
    assert len(blocks) >= 2
    for code in blocks:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                assert {alias.name for alias in node.names} <= {"winrate", "numpy", "pandas"}
            elif isinstance(node, ast.ImportFrom):
                assert node.module == "winrate", node.module
                assert {alias.name for alias in node.names} <= set(winrate.__all__)
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id == "winrate"):
                assert node.attr in winrate.__all__, node.attr


def test_documented_python_runs_and_matches_the_worked_example(tmp_path, monkeypatch, log):
    """Run every Python block of the README and docs/ next to the worked example's
    ``example.csv``; the first one's leaderboard is the README's printed table."""
    frame = pd.DataFrame({"prompt_id": log.axes["prompt"].labels[log.axes["prompt"].codes],
                          "judge_id": log.axes["judge"].labels[log.axes["judge"].codes],
                          "model_a": log.models[log.model_a], "model_b": log.models[log.model_b],
                          "outcome": np.select([log.score == 1, log.score == 0], ["a", "b"],
                                               "tie")})
    frame.to_csv(tmp_path / "example.csv", index=False)
    monkeypatch.chdir(tmp_path)
    namespaces = []
    for code in python_blocks():
        if code.startswith(OWN_INPUTS):
            continue
        namespace: dict = {}
        quiet(exec, compile(code, str(README), "exec"), namespace)
        namespaces.append(namespace)
    worked = README.read_text().split("<!-- example:worked -->")[1].split("<!-- /example")[0]
    shown = re.findall(r"^\s+\d+\s+(model-\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", worked, re.M)
    table = namespaces[0]["table"]
    assert len(shown) == len(table) == 5
    for model, score, se_naive, se in shown:
        assert [f"{100 * table.loc[model, c]:.2f}" for c in ("score", "se_naive", "se")] == [
            score, se_naive, se]


# ------------------------------------------------------------------ inputs and defaults


def test_analyze_explore_and_fit_take_a_dataframe_or_a_path(log, tmp_path):
    names = log.models
    frame = pd.DataFrame({"prompt_id": log.axes["prompt"].labels[log.axes["prompt"].codes],
                          "judge_id": log.axes["judge"].labels[log.axes["judge"].codes],
                          "model_a": names[log.model_a], "model_b": names[log.model_b],
                          "outcome": log.score})
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    expected = quiet(winrate.analyze, log, cluster="prompt+judge")
    for source in (frame, path, str(path)):
        got = quiet(winrate.analyze, source, cluster="prompt+judge")
        np.testing.assert_allclose(by_model(got.to_frame(), names)["se"], expected.se,
                                   rtol=1e-12)
        np.testing.assert_allclose(by_model(winrate.fit(source).to_frame(), names)["score"],
                                   expected.scores, rtol=1e-12)
        assert quiet(winrate.explore, source, ["prompt"]).main == "prompt"
    with pytest.raises(TypeError, match="expected a ComparisonLog, a DataFrame or a file "
                                        "path, got list"):
        winrate.analyze([1, 2, 3])


def test_default_clustering_is_prompt_and_judge_or_the_axes_the_log_has(log):
    assert quiet(winrate.analyze, log).settings["cluster"] == ["prompt", "judge"]
    no_judge = winrate.ComparisonLog.from_arrays(log.model_a, log.model_b, log.score,
                                                 prompt=log.axes["prompt"].codes)
    with warns_code("default-clustering") as found:
        result = winrate.analyze(no_judge)
    assert "no 'judge' axis" in found[0]  # the reason the judge axis was not used
    expected = quiet(winrate.analyze, no_judge, cluster="prompt")
    assert result.settings["cluster"] == ["prompt"]
    np.testing.assert_allclose(result.se, expected.se, rtol=1e-12)


def test_a_fit_has_a_frame_and_a_compact_repr(log):
    board = winrate.fit(log)
    frame = board.to_frame()
    assert frame["score"].is_monotonic_decreasing
    np.testing.assert_allclose(by_model(frame, board.models)["comparisons"],
                               np.bincount(np.r_[log.model_a, log.model_b]), rtol=0)
    assert repr(board) == ("Leaderboard(estimator='winrate', scale='probability', models=5, "
                           f"comparisons={log.n_comparisons:g})")


def _thin_log(seed: int = 3, rows: int = 25):
    """The first ``rows`` comparisons of a small crossed log: a few per pair."""
    full = winrate.simulate_comparisons(
        winrate.SimulationDesign(n_models=8, n_prompts=12, n_judges=3), seed=seed).log
    keep = np.arange(rows)
    return winrate.ComparisonLog.from_arrays(
        full.model_a[keep], full.model_b[keep], full.score[keep],
        prompt=full.axes["prompt"].codes[keep], judge=full.axes["judge"].codes[keep])


def _log_with_a_loser(loser: str = "7"):
    """:func:`_thin_log` (40 rows) with every comparison of ``loser`` lost: its win rate
    is 0, where the log-odds are undefined."""
    log = _thin_log(rows=40)
    a, b = log.models[log.model_a], log.models[log.model_b]
    score = np.where(a == loser, 0.0, np.where(b == loser, 1.0, log.score))
    return winrate.ComparisonLog.from_arrays(a, b, score, prompt=log.axes["prompt"].codes,
                                             judge=log.axes["judge"].codes)


@pytest.mark.parametrize("cluster", ["prompt", "prompt+judge"])
def test_win_probability_intervals_stay_in_0_1_and_estimates_at_a_bound_are_cut(cluster):
    """Win-probability bounds are built on the logit scale, so they stay inside (0, 1)
    (issue 24); a score at 0 or 1 has no log-odds: its normal interval is cut at the
    bound and the note names it (the oracle: log-odds by hand, the cut normal interval)."""
    log = _log_with_a_loser()
    with warns_code("interval-cut") as found:
        result = winrate.analyze(log, cluster=cluster, joint=Joint(simultaneous=True))
    frame = result.to_frame()
    p, se, q = result.scores, result.se, result.intervals.critical_value
    raw_low, raw_high = p - q * se, p + q * se
    edge = (p == 0) | (p == 1)
    assert str(result.models[p == 0][0]) == "7" and not np.isnan(se[p == 0]).any()
    np.testing.assert_allclose(result.intervals.low[edge], np.clip(raw_low, 0, 1)[edge])
    np.testing.assert_allclose(result.intervals.high[edge], np.clip(raw_high, 0, 1)[edge])
    inside = ~edge & ~np.isnan(se)
    log_odds = np.log(p[inside]) - np.log1p(-p[inside])
    half = np.broadcast_to(q, p.shape)[inside] * se[inside] / (p[inside] * (1 - p[inside]))
    np.testing.assert_allclose(result.intervals.low[inside], 1 / (1 + np.exp(half - log_odds)))
    np.testing.assert_allclose(result.intervals.high[inside],
                               1 / (1 + np.exp(-log_odds - half)))
    assert set(found[0].models) == set(result.models[edge].astype(str))
    for lower, upper in (("ci_low", "ci_high"), ("sim_low", "sim_high")):
        shown = frame[[lower, upper]].dropna().to_numpy()
        assert shown.min() >= 0 and shown.max() <= 1
    for alpha in (0.01, 0.5):
        bounds = result.conf_int(alpha).dropna().to_numpy()
        assert bounds.min() >= 0 and bounds.max() <= 1


def test_elo_intervals_are_not_cut(log):
    result = quiet(winrate.analyze, log, model="bt", cluster="prompt")
    q = result.intervals.critical_value
    np.testing.assert_allclose(result.intervals.low, result.scores - q * result.se)
    assert "interval-cut" not in result.notes.codes


def test_pairwise_frame_is_the_pairwise_result_or_a_clear_error(log):
    result = quiet(winrate.analyze, log, cluster="prompt", joint=Joint(pairwise=True))
    pw = result.joint.pairwise
    frame = result.pairwise_frame()
    assert len(frame) == 10 and list(frame["model_i"]) == list(result.models[pw.i])
    np.testing.assert_allclose(frame["estimate"], pw.estimate)
    np.testing.assert_allclose(frame["p_holm"], pw.p_holm)
    with pytest.raises(WinrateInputError,
                       match=r"rerun analyze\(\.\.\., joint=Joint\(pairwise=True\)\)"):
        quiet(winrate.analyze, log, cluster="prompt").pairwise_frame()


def test_eda_conf_int_with_a_t_reference_uses_the_smallest_cluster_count(eda):
    result = eda.clusterings["prompt+judge"]
    q = stats.t.ppf(0.975, min(result.n_clusters) - 1)
    got = by_model(eda.conf_int(reference="t"), eda.models)
    np.testing.assert_allclose(got["lower"], logit_interval(eda.score, q * result.se)[0])
    with pytest.raises(WinrateInputError, match="reference must be 'normal' or 't'"):
        eda.conf_int(reference="student")


def test_summary_rules_stay_narrow_under_a_wide_table(analysis):
    lines = str(analysis.summary()).splitlines()
    assert max(len(line) for line in lines if set(line) <= {"=", "-"}) <= 100


@pytest.mark.parametrize("axes, cluster, hint", [
    ({}, "prompt", r"prompt_col, 'prompt_id' by default.*or cluster by none"),
    ({"judge": [0, 1] * 30}, "prompt", r"or cluster by 'judge' or none"),
    ({"prompt": np.arange(60)}, "judge", r"judge_col, 'judge_id' by default"),
    ({"prompt": np.arange(60)}, "topic", r"cluster_cols"),
])
def test_a_missing_cluster_axis_says_what_to_pass_instead(axes, cluster, hint):
    """The error names where the axis' ids come from and the axes the log has, in words:
    never a Python literal such as ``(it has [])``."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 60)
    log = winrate.ComparisonLog.from_arrays(a, (a + 1) % 3, rng.random(60).round(),
                                            **{k: np.asarray(v) for k, v in axes.items()})
    with pytest.raises(WinrateInputError, match=hint) as caught:
        quiet(winrate.analyze, log, cluster=cluster)
    text = str(caught.value)
    assert "[" not in text and "(it has" not in text and "\n" not in text


def _literal_cases():
    """Calls whose error or note names several things (choices, columns, pairs, models)."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 200)
    log = winrate.ComparisonLog.from_arrays(a, (a + rng.integers(1, 4, 200)) % 4,
                                            rng.random(200).round(), prompt=np.arange(200))
    champion = winrate.ComparisonLog.from_arrays([0, 1, 0, 1, 2, 0, 3, 3, 3],
                                                 [1, 0, 2, 2, 0, 2, 0, 1, 2],
                                                 [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1, 1, 1])
    weights = np.ones((4, 4))
    scores = pd.DataFrame({"question": range(6), "model": "m", "score": 1.0})
    return {
        "estimator option choice": lambda: winrate.fit(log, "bt", ties="thirds"),
        "model choice": lambda: winrate.fit(log, "elo"),
        "weight scheme": lambda: winrate.fit(log, weights="equal"),
        "weights on unobserved pairs": lambda: winrate.fit(log, weights=weights),
        "rank method": lambda: winrate.inference.joint.rank_sets(
            np.zeros(2), np.eye(2), 0.05, method="exact"),
        "missing eval column": lambda: winrate.evals.question_scores(
            scores, question_col="question", model_col="model", score_col="points"),
        "prior dominates": lambda: winrate.fit(champion, "bt", prior=1.0),
    }


@pytest.mark.parametrize("case", list(_literal_cases()))
def test_no_error_or_note_shows_a_python_literal(case):
    """Lists, tuples, sets and dicts are written as text (``'a', 'b' or 'c'``), never as
    their Python repr (``('a', 'b')``, ``['x']``, ``{0, 1}``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _literal_cases()[case]()
        except WinrateInputError as error:
            texts = [str(error)]
        else:
            texts = [str(w.message) for w in caught if issubclass(w.category, WinrateWarning)]
    assert texts
    for text in texts:
        assert not re.search(r"[\[{]'|\('[^']*',|\{\d|\[\(|np\.|\[\d+, ", text), text


# ----------------------------------------------------------------- result objects


def _few_clusters_log():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 300)
    return winrate.ComparisonLog.from_arrays(a, (a + rng.integers(1, 4, 300)) % 4,
                                             (rng.random(300) < 0.5).astype(float),
                                             prompt=rng.integers(0, 12, 300))


def _eval_scores():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"question": np.tile(range(40), 3),
                          "model": np.repeat(["a", "b", "c"], 40),
                          "score": rng.integers(0, 2, 120).astype(float)})
    frame.loc[frame["model"] == "c", "score"] = 1.0  # constant: a constant-scores note
    return winrate.evals.question_scores(frame, "score", "question", model_col="model")


def test_print_shows_the_summary_and_repr_stays_short():
    """``print(result)`` shows the report (statsmodels' ``__str__``); ``repr`` is one line."""
    result = quiet(winrate.analyze, _few_clusters_log(), cluster="prompt")
    assert str(result) == str(result.summary())
    assert repr(result).startswith("LeaderboardAnalysis(") and "\n" not in repr(result)
    report = quiet(winrate.evals.evaluate, _eval_scores())
    assert str(report) == str(report.summary())
    assert repr(report).startswith("EvalReport(") and "\n" not in repr(report)


def _warned_here(call, *args, **kwargs):
    """The WinrateWarnings of ``call`` and the files they point at."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kwargs)
    found = [w for w in caught if issubclass(w.category, WinrateWarning)]
    assert found
    return {Path(w.filename).resolve() for w in found}


def test_warnings_point_at_the_callers_line():
    """Every note emitted by analyze, conf_int, fit and the evals points at the line that
    called them (``stacklevel``), not at a line inside winrate."""
    here = {Path(__file__).resolve()}
    log = _few_clusters_log()
    result = quiet(winrate.analyze, log, cluster="prompt")
    champion = winrate.ComparisonLog.from_arrays([0, 1, 0, 1, 2, 0, 3, 3, 3],
                                                 [1, 0, 2, 2, 0, 2, 0, 1, 2],
                                                 [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1, 1, 1])
    qs = quiet(_eval_scores)
    assert _warned_here(winrate.analyze, log, cluster="prompt") == here
    assert _warned_here(result.conf_int, alpha=1e-4, joint=True) == here
    assert _warned_here(winrate.fit, champion, "bt", prior=1.0) == here
    assert _warned_here(winrate.evals.evaluate, qs) == here
    assert _warned_here(winrate.evals.compare, qs, "a", "c") == here


def test_to_frame_counts_are_integers_and_plot_says_what_it_returns():
    result = quiet(winrate.analyze, _few_clusters_log(), cluster="prompt")
    assert pd.api.types.is_integer_dtype(result.to_frame()["n"])
    assert pd.api.types.is_integer_dtype(quiet(winrate.evals.evaluate,
                                               _eval_scores()).to_frame()["n"])
    doc = winrate.LeaderboardAnalysis.plot.__doc__
    assert "Returns" in doc and "Figure" in doc and "Path" in doc
