"""A toy estimator built from the estimator protocol alone runs through every path.

The toy is each model's mean score over its comparisons, ``S_a = sum_r f_r y_ar / n_a``
(``y_ar`` the half-tie score of model a in row r, ``1 - score`` when it is model b), on a
scale of its own (unbounded, printed times 10 in "toy points", so no renderer can fall back
on the win rate's percent or the Elo scale). It declares only what the abstract
:class:`winrate.estimators.base.Estimator` asks for, and is registered for the test alone.
Its numbers are checked against an independent computation: statsmodels' cluster-robust
covariance of the means (an OLS of the scores on model dummies, each comparison counted
once per model) and brute-force refits by numpy means.
"""

from __future__ import annotations

import json
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import statsmodels.api as sm
from scipy import stats

import winrate
from winrate import estimators
from winrate.check import check_coverage
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators.base import Estimator, Scale
from winrate.estimators.leaderboard import Leaderboard
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.report import leaderboard as report
from winrate.settings import Variance

matplotlib.use("Agg")

TOY_SCALE = Scale("toy", None, None, "identity", 10.0, 8, 2, "pts", "toy points",
                  "toy points", "mean score", "mean scores")


class MeanScore(Estimator):
    """Each model's mean half-tie score over its comparisons (module doc)."""

    name = "toy-mean"
    title = "toy mean score"
    scale = TOY_SCALE

    def fit(self, data, options):
        log = data.rows
        k, f = log.n_models, log.weight
        a, b, y = log.model_a, log.model_b, log.score
        n = np.bincount(a, f, k) + np.bincount(b, f, k)
        if (n == 0).any():
            raise WinrateInputError("model 'toy-mean': a model has no comparisons")
        mean = (np.bincount(a, f * y, k) + np.bincount(b, f * (1 - y), k)) / n
        rows = np.repeat(np.arange(log.n_rows), 2)
        cols = np.column_stack([a, b]).ravel()
        values = np.column_stack([f * (y - mean[a]) / n[a],
                                  f * (1 - y - mean[b]) / n[b]]).ravel()
        influence = sp.csr_array((values, (rows, cols)), shape=(log.n_rows, k))
        psi, counts, pair_of_key, pairs = data.pair_table()
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        s_lo = np.where(a < b, y, 1 - y)
        return Leaderboard(models=log.models, scores=mean, psi=psi, counts=counts,
                           weights=None, influence=influence,
                           pair=pair_of_key[lo * k + hi], pairs=pairs,
                           centered=s_lo - psi[lo, hi], estimator=self.name,
                           scale=self.scale, log_models=log.models, options=dict(options))

    def settings(self, options):
        return {}

    def describe(self, options):
        return "toy mean score in toy points"


TOY = MeanScore()


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(estimators.REGISTRY, TOY.name, TOY)


@pytest.fixture(scope="module")
def log():
    found = simulate_comparisons(SimulationDesign(n_models=4, n_prompts=40, n_judges=3),
                                 seed=5).log
    assert (found.weight == 1).all()
    return found


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return call(*args, **kwargs)


def long_frame(log) -> pd.DataFrame:
    """Each comparison once per model: the model, its score and the row's prompt."""
    prompt = log.axes["prompt"].codes
    return pd.DataFrame({"model": np.concatenate([log.model_a, log.model_b]),
                         "y": np.concatenate([log.score, 1 - log.score]),
                         "prompt": np.concatenate([prompt, prompt]),
                         "row": np.tile(np.arange(log.n_rows), 2)})


def independent(log) -> tuple[np.ndarray, np.ndarray]:
    """Means and their CR1 prompt-clustered covariance by statsmodels: OLS on model dummies
    (the coefficients are the means), CR0 sandwich times G / (G - 1)."""
    frame = long_frame(log)
    dummies = pd.get_dummies(frame["model"]).astype(float)
    fit = sm.OLS(frame["y"], dummies).fit(
        cov_type="cluster", cov_kwds={"groups": frame["prompt"], "use_correction": False})
    g = frame["prompt"].nunique()
    return fit.params.to_numpy(), fit.cov_params().to_numpy() * g / (g - 1)


def test_a_missing_declaration_fails_when_the_estimator_is_created():
    class NoScale(Estimator):
        name, title = "x", "x"
        fit, settings, describe = MeanScore.fit, MeanScore.settings, MeanScore.describe

    class NoSettings(Estimator):
        name, title, scale = "x", "x", TOY_SCALE
        fit, describe = MeanScore.fit, MeanScore.describe

    with pytest.raises(TypeError, match=r"NoScale does not declare scale \(Scale\)"):
        NoScale()
    with pytest.raises(TypeError, match=r"NoSettings does not declare settings\(\)"):
        NoSettings()


def test_memory_analysis_equals_statsmodels_cluster_robust_means(log):
    result = quiet(winrate.analyze, log, "prompt", "toy-mean",
                   variance=Variance("sandwich", "cr1", "normal"))
    mean, cov = independent(log)
    np.testing.assert_allclose(result.scores, mean, rtol=1e-12)
    np.testing.assert_allclose(result.cov, cov, rtol=1e-9)
    assert result.leaderboard.scale is TOY_SCALE
    q = stats.norm.ppf(0.975)
    ci = result.conf_int(0.05).reindex(result.models.astype(str))
    se = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(ci["lower"], mean - q * se, rtol=1e-9)  # identity link
    np.testing.assert_allclose(ci["upper"], mean + q * se, rtol=1e-9)


def test_duckdb_scan_gives_the_memory_numbers(log, tmp_path):
    path = tmp_path / "log.csv"
    frame = pd.DataFrame({"model_a": log.models[log.model_a], "model_b": log.models[log.model_b],
                          "outcome": log.score,
                          "prompt_id": log.axes["prompt"].labels[log.axes["prompt"].codes],
                          "judge_id": log.axes["judge"].labels[log.axes["judge"].codes]})
    frame.to_csv(path, index=False)
    memory = quiet(winrate.analyze, frame, "prompt", "toy-mean",
                   variance=Variance("sandwich", "cr1", "normal"))
    scanned = quiet(winrate.analyze, winrate.scan(str(path), engine="duckdb"), "prompt",
                    "toy-mean", variance=Variance("sandwich", "cr1", "normal"))
    np.testing.assert_allclose(scanned.scores, memory.scores, rtol=1e-12)
    np.testing.assert_allclose(scanned.cov, memory.cov, rtol=1e-9)


def test_per_question_scores_are_refused_naming_the_toy():
    from winrate.io.scores import score_table

    table = score_table(np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]]), ["m1", "m2", "m3"],
                        ["q1", "q2"])
    with pytest.raises(WinrateInputError, match="per-question scores is not defined for "
                                                "model 'toy-mean'"):
        quiet(winrate.analyze, table, "prompt", "toy-mean")


def test_jackknife_equals_brute_force_delete_one_prompt(log):
    result = quiet(winrate.analyze, log, "prompt", "toy-mean", variance=Variance("jackknife"))
    frame = long_frame(log)
    prompts = np.unique(frame["prompt"])
    reps = np.array([frame[frame["prompt"] != g].groupby("model")["y"].mean().to_numpy()
                     for g in prompts])
    g = prompts.size
    centred = reps - reps.mean(axis=0)
    np.testing.assert_allclose(result.cov, (g - 1) / g * centred.T @ centred, rtol=1e-9)


def test_bootstrap_replicates_are_numpy_means_of_the_drawn_prompts(log):
    from winrate.variance.resampling import cluster_bootstrap

    board = estimators.fit(log, "toy-mean")
    assert estimators.of(board) is TOY and TOY.refits_rows(board.options)
    boot = quiet(cluster_bootstrap, log, [log.axes["prompt"].codes], reps=200, seed=3,
                 board=board, progress=False)
    _, cov = independent(log)
    # the bootstrap variance of a mean is the CR0 sandwich up to Monte-Carlo error
    g = np.unique(log.axes["prompt"].codes).size
    np.testing.assert_allclose(np.diag(boot.cov), np.diag(cov) * (g - 1) / g, rtol=0.35)


def test_coverage_check_runs_on_the_toy(log):
    result = quiet(winrate.analyze, log, "prompt", "toy-mean")
    checked = quiet(check_coverage, result, reps=20, seed=0, workers=1)
    assert checked.settings["estimator"] == "toy-mean"
    assert checked.settings["scale"] == TOY_SCALE.to_dict()
    assert np.isfinite(checked.to_frame()["truth"]).all()


def test_every_report_reads_the_toy_scale(log, tmp_path):
    result = quiet(winrate.analyze, log, "prompt", "toy-mean")
    text = str(result.summary())
    assert "toy mean score in toy points" in text
    best = int(np.argmax(result.scores))
    assert f"{10 * result.scores[best]:.2f}" in text  # times 10, two decimals
    for table_format in ("markdown", "latex"):
        assert f"{10 * result.scores[best]:.2f}" in report.format_report(result, table_format)
    doc = json.loads(json.dumps(report.to_dict(result)))
    assert doc["settings"]["scale"] == TOY_SCALE.to_dict()
    np.testing.assert_allclose(doc["score"], result.scores, rtol=1e-12)
    page = result.to_html(tmp_path / "page.html")
    assert "toy points" in page and f"{10 * result.scores[best]:.2f}" in page
    figure = result.plot(tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 0
    assert figure is not None
