"""Resampling methods against independent computations: brute-force refits with ``fit``,
frequency-weighted logs, row-level sandwiches, and large-B limits within Monte Carlo error."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tests.conftest import random_log
from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators.win_rate import ESTIMATOR as WIN_RATE
from winrate.estimators.win_rate_kernels import PairScorer, fit
from winrate.io.logs import ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.variance.resampling import (
    ProductWeightScorer,
    _wild_statistics,
    cluster_bootstrap,
    jackknife_cov,
    jackknife_replicates,
    multiway_jackknife_cov,
    pair_totals,
    wild_cluster_bootstrap,
    wild_weights,
)
from winrate.variance.sandwich import cluster_cov


def _subset(log: ComparisonLog, keep: np.ndarray, frequency=None) -> ComparisonLog:
    """The log restricted to ``keep`` rows, same model coding (brute-force oracle input)."""
    freq = frequency if frequency is not None else (
        None if log.frequency is None else log.frequency[keep])
    return ComparisonLog(log.model_a[keep], log.model_b[keep], log.score[keep], log.models,
                         {}, freq)


def _lonely_log() -> ComparisonLog:
    """Pair (0, 3) lives only in judge 2; model 4 plays only in judge 0 (loses every game
    when judge 0 is deleted); frequencies are fractional."""
    rng = np.random.default_rng(5)
    n = 300
    a = rng.integers(0, 3, n)
    b = (a + 1 + rng.integers(0, 2, n)) % 3
    judge = rng.integers(0, 4, n)
    a[:6], b[:6], judge[:6] = 0, 3, 2
    a[6:10], b[6:10], judge[6:10] = 4, 1, 0
    score = rng.choice([0.0, 0.5, 1.0], n)
    freq = rng.choice([0.5, 1.0, 2.5], n)
    prompt = rng.integers(0, 25, n)
    return ComparisonLog.from_arrays(a, b, score, frequency=freq, prompt=prompt, judge=judge)


@pytest.mark.parametrize("weights", ["uniform", "count"])
@pytest.mark.parametrize("axis", ["prompt", "judge"])
def test_jackknife_replicates_equal_brute_force_refits(weights, axis):
    for log in (random_log(0), random_log(1, n_judges=3), _lonely_log()):
        codes = log.axes[axis].codes
        reps = jackknife_replicates(log, codes, board=fit(log, weights))
        for g in range(log.axes[axis].n_clusters):
            refit = fit(_subset(log, codes != g), weights).scores
            np.testing.assert_array_equal(np.isnan(refit), np.isnan(reps[g]))
            np.testing.assert_allclose(reps[g], refit, rtol=0, atol=1e-12, equal_nan=True)


def test_lonely_pair_is_dropped_and_model_without_games_is_undefined():
    log = _lonely_log()
    judge = log.axes["judge"].codes
    reps = jackknife_replicates(log, judge)
    assert np.isnan(reps[0, 4]) and not np.isnan(reps[1:, 4]).any()
    # deleting judge 2 drops pair (0, 3): model 3 has no games left, model 0 is scored
    # against its other opponents only, with uniform weights renormalised
    assert np.isnan(reps[2, 3])
    with warns_code("undefined-replicates"):
        result = jackknife_cov(log, judge)
    assert result.undefined_replicates == 2


def test_user_weight_matrix_rows_are_rescaled_on_dropped_pairs():
    log = _lonely_log()
    board = fit(log, "uniform")
    matrix = np.where(board.counts > 0, 1.0 + np.arange(25).reshape(5, 5) % 3, 0.0)
    board_m = fit(log, matrix)
    totals = pair_totals(log, board_m, log.axes["judge"].codes)
    scorer = PairScorer(board_m, totals.total_counts)
    full = scorer.scores(totals.total_wins, totals.total_counts)[0]
    np.testing.assert_allclose(full, board_m.scores, atol=1e-12)
    # without judge 2 the pair (0, 3) is gone: model 0's weights on its other opponents
    # are scaled to keep its row sum
    gone = scorer.scores(totals.total_wins - totals.wins[[2]].toarray(),
                         totals.total_counts - totals.counts[[2]].toarray())[0]
    psi = fit(_subset(log, log.axes["judge"].codes != 2)).psi
    row = matrix[0].copy()
    row[3] = 0.0
    expected = (row * np.nan_to_num(psi[0])).sum() * matrix[0].sum() / row.sum()
    assert gone[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("center", ["mean", "estimate"])
def test_jackknife_cov_equals_cv3_formula_on_refits(center):
    log = random_log(2)
    codes = log.axes["prompt"].codes
    G = log.axes["prompt"].n_clusters
    refits = np.array([fit(_subset(log, codes != g)).scores for g in range(G)])
    ref = refits.mean(axis=0) if center == "mean" else fit(log).scores
    expected = (G - 1) / G * (refits - ref).T @ (refits - ref)
    got = jackknife_cov(log, codes, center=center).cov
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


def test_multiway_jackknife_is_inclusion_exclusion_of_brute_force_terms():
    log = random_log(0, n_judges=4)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    cells = pd.Series([f"{p}|{j}" for p, j in zip(prompt, judge, strict=True)]).to_numpy()

    def brute(labels):
        refits = np.array([fit(_subset(log, labels != g)).scores for g in np.unique(labels)])
        d = refits - refits.mean(axis=0)
        return (len(refits) - 1) / len(refits) * d.T @ d

    expected = brute(prompt) + brute(judge) - brute(cells)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        got = multiway_jackknife_cov(log, [prompt, judge])
    lam, vec = np.linalg.eigh(expected)
    np.testing.assert_allclose(got.cov, (vec * np.clip(lam, 0, None)) @ vec.T, atol=1e-12)
    assert got.df == 3 and got.n_clusters == (log.axes["prompt"].n_clusters, 4)


def test_jackknife_needs_two_clusters():
    log = random_log(0)
    with pytest.raises(WinrateInputError, match="at least 2 clusters"):
        jackknife_cov(log, np.zeros(log.n_rows, int))


@pytest.mark.parametrize("axes", [("prompt",), ("judge",), ("prompt", "judge")])
def test_product_weight_scores_equal_fit_on_reweighted_log(axes):
    log = _lonely_log()
    board = fit(log)
    groups = [log.axes[a].codes for a in axes]
    scorer = ProductWeightScorer(log, board, groups)
    rng = np.random.default_rng(1)
    draws = [rng.multinomial(G, np.full(G, 1 / G), size=4).astype(float)
             for G in (log.axes[a].n_clusters for a in axes)]
    got = scorer.scores(draws)
    for b in range(4):
        row_weight = np.prod([d[b][g] for d, g in zip(draws, groups, strict=True)], axis=0)
        keep = row_weight > 0
        expected = fit(_subset(log, keep, log.frequency[keep] * row_weight[keep])).scores
        np.testing.assert_allclose(got[b], expected, atol=1e-12, equal_nan=True)


def _many_clusters_log(seed=4):
    design = SimulationDesign(n_models=5, n_prompts=250, n_judges=40, comparisons_per_prompt=8)
    return simulate_comparisons(design, seed).log


def test_cluster_bootstrap_variance_matches_sandwich_for_large_b():
    """Pairs cluster bootstrap variance -> CR0 sandwich (G = 250, B = 3000); the MC SD of a
    bootstrap variance is about var * sqrt(2 / B), so 4 MC SDs = 10%."""
    log = _many_clusters_log()
    board = fit(log)
    codes = log.axes["prompt"].codes
    boot = cluster_bootstrap(log, [codes], reps=3000, seed=11, board=board, progress=False)
    sandwich = np.diag(cluster_cov(board.influence, codes, "none"))
    ratio = np.diag(boot.cov) / sandwich
    assert np.all(np.abs(ratio - 1) < 4 * np.sqrt(2 / 3000) + 0.02), ratio
    assert boot.method == "cluster" and boot.axes == (250,) and boot.n_dropped == 0


def test_pigeonhole_variance_is_owens_sum_of_three_terms():
    """Owen (2007): the pigeonhole bootstrap variance is about V_prompt + V_judge + V_cell
    (each a CR0 term), i.e. larger than the two-way sandwich by 2 V_cell."""
    log = _many_clusters_log(7)
    board = fit(log)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    cells = prompt * 1000 + judge
    boot = cluster_bootstrap(log, [prompt, judge], reps=3000, seed=3, board=board,
                             progress=False)
    terms = [np.diag(cluster_cov(board.influence, g, "none")) for g in (prompt, judge, cells)]
    ratio = np.diag(boot.cov) / sum(terms)
    assert np.all(np.abs(ratio - 1) < 4 * np.sqrt(2 / 3000) + 0.04), ratio
    assert boot.method == "pigeonhole"
    low, high = boot.percentile(0.05)
    assert np.all(low < board.scores) and np.all(board.scores < high)


def test_bootstrap_rejects_bad_reps():
    log = random_log(0)
    with pytest.raises(WinrateInputError, match="reps"):
        cluster_bootstrap(log, [log.axes["prompt"].codes], reps=1)


# ----------------------------------------------------------------- wild cluster bootstrap


def test_wild_weights_enumerate_small_supports_and_have_unit_variance():
    v, enumerated = wild_weights(5, 999, "rademacher")
    assert enumerated and v.shape == (32, 5) and len({tuple(r) for r in v}) == 32
    v, enumerated = wild_weights(4, 999, "webb")
    assert enumerated and v.shape == (6**4, 4)
    np.testing.assert_allclose(v.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose((v**2).mean(axis=0), 1, atol=1e-12)
    v, enumerated = wild_weights(20, 999, "rademacher", seed=1)
    assert not enumerated and v.shape == (999, 20) and set(np.unique(v)) == {-1.0, 1.0}
    with pytest.raises(WinrateInputError, match="rademacher"):
        wild_weights(3, 10, "normal")


def test_wild_statistics_equal_row_level_bootstrap_sandwich():
    """t* from cluster totals equals the row-level construction: numerator
    ``sum_r v_g f_r (s_r - psi_p) A_p``, bootstrap residual influence rows
    ``(v_g f_r (s_r - psi_p) - f_r dpsi*_p) A_p`` and their CR1 cluster sandwich."""
    log = _lonely_log()
    board = fit(log)
    codes = log.axes["judge"].codes
    totals = pair_totals(log, board, codes)
    counts_p = totals.total_counts
    psi = totals.total_wins / counts_p
    centred = (totals.wins - totals.counts.multiply(psi[None, :])).toarray()
    amap = WIN_RATE.wild_influence_map(board, counts_p).toarray()
    t_g = centred @ amap
    v = np.random.default_rng(2).choice([-1.0, 1.0, 0.5], size=(6, 4))
    got = _wild_statistics(v, centred, totals.counts.toarray(), counts_p, amap, t_g, 4 / 3,
                           False)
    s_low = np.where(log.model_a > log.model_b, 1 - log.score, log.score)
    f, p = log.frequency, board.pair
    for b in range(len(v)):
        push = v[b, codes] * f * (s_low - psi[p])
        dpsi = np.bincount(p, push, len(psi)) / counts_p
        delta = (push[:, None] * amap[p]).sum(axis=0)
        rows = (push - f * dpsi[p])[:, None] * amap[p]
        var = np.diag(cluster_cov(rows, codes, "cr1"))
        # models 3 and 4 play in a single judge: zero variance, statistic defined as 0
        np.testing.assert_allclose(got[b, :3], (delta / np.sqrt(var))[:3], rtol=1e-10)
        np.testing.assert_array_equal(got[b, 3:], 0.0)


def test_wild_se_is_cv1_and_large_g_critical_values_are_normal():
    log = _many_clusters_log()
    board = fit(log)
    codes = log.axes["prompt"].codes
    res = wild_cluster_bootstrap(log, codes, reps=4999, distribution="rademacher", seed=3,
                                 board=board, progress=False)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(cluster_cov(board.influence, codes))),
                               rtol=1e-12)
    # order-statistic MC SD of a 95% |t| quantile with B = 4999 is ~0.04
    assert np.all(np.abs(res.critical_values - 1.96) < 0.15), res.critical_values
    assert res.simultaneous_critical_value > res.critical_values.max()
    assert np.all(res.sim_low <= res.low) and np.all(res.high <= res.sim_high)


def test_wild_warns_about_coarse_rademacher_support():
    log = random_log(0, n_judges=4)
    with warns_code("coarse-bootstrap-support") as found:
        res = wild_cluster_bootstrap(log, log.axes["judge"].codes, distribution="rademacher")
    assert any("2^4 = 16 equally likely" in note for note in found)  # the Rademacher note
    assert res.enumerated and res.n_draws == 16
    # with 2^G = 16 draws and alpha = 0.05 the quantile is the largest |t*|
    with warns_code("coarse-bootstrap-support") as found:
        webb = wild_cluster_bootstrap(log, log.axes["judge"].codes, distribution="webb")
    assert [note for note in found if "only 4 clusters" in note] == found  # no Rademacher note
    assert webb.enumerated and webb.n_draws == 6**4


# ------------------------------------------- review fixes: oracles independent of the code


def _weighted_and_expanded(seed=0, n=60):
    """A frequency-weighted log (whole frequencies 1..4, no axes) and the same log with
    every row written out f times."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + 1 + rng.integers(0, 2, n)) % 3
    s = rng.choice([0.0, 0.5, 1.0], n)
    f = rng.integers(1, 5, n).astype(float)
    rep = np.repeat(np.arange(n), f.astype(int))
    return (ComparisonLog.from_arrays(a, b, s, frequency=f),
            ComparisonLog.from_arrays(a[rep], b[rep], s[rep]))


@pytest.mark.parametrize("weights", ["uniform", "count"])
@pytest.mark.parametrize("center", ["mean", "estimate"])
def test_weighted_row_jackknife_is_delete_one_comparison_of_expanded_log(weights, center):
    """Brute force: refit the expanded log without each comparison in turn."""
    from winrate.variance.resampling import resampled_variance, row_jackknife_cov

    log, expanded = _weighted_and_expanded()
    n = expanded.n_rows
    refits = np.array([fit(_subset(expanded, np.arange(n) != i), weights).scores
                       for i in range(n)])
    ref = refits.mean(axis=0) if center == "mean" else fit(expanded, weights).scores
    expected = (n - 1) / n * (refits - ref).T @ (refits - ref)
    got = row_jackknife_cov(log, board=fit(log, weights), center=center)
    np.testing.assert_allclose(got.cov, expected, rtol=1e-9, atol=1e-15)
    assert got.df == n - 1 and got.n_clusters == (n,)
    if center == "mean":  # the reachable path: --weight-col w --cluster none --method jackknife
        choice = resampled_variance(log, fit(log, weights), (), "jackknife")
        np.testing.assert_allclose(choice.cov, expected, rtol=1e-9, atol=1e-15)
        assert choice.df == n - 1


def test_weighted_row_bootstrap_matches_expanded_log_naive_variance():
    """The bootstrap of comparisons estimates the naive variance of the expanded log (plain
    loop below); B = 4000 gives an MC SD of ~2.2% on a variance, before the fix the ratio
    was ~E[f] = 2.5."""
    from winrate.variance.resampling import resampled_variance

    log, expanded = _weighted_and_expanded(1, n=150)
    board = fit(log)
    infl = fit(expanded).influence
    infl = infl.toarray() if hasattr(infl, "toarray") else np.asarray(infl)
    naive = sum(np.outer(u, u) for u in infl)
    choice = resampled_variance(log, board, (), "bootstrap", reps=4000, seed=2)
    assert choice.method == "cluster bootstrap" and choice.df is None
    assert choice.bootstrap.axes == (expanded.n_rows,)
    ratio = np.diag(choice.cov) / np.diag(naive)
    assert np.all(np.abs(ratio - 1) < 0.12), ratio


def test_fractional_frequencies_without_clustering_are_rejected():
    from winrate.variance.resampling import resampled_variance

    log = _lonely_log()  # frequencies 0.5, 1, 2.5
    log = ComparisonLog(log.model_a, log.model_b, log.score, log.models, {}, log.frequency)
    for method in ("jackknife", "bootstrap"):
        with pytest.raises(WinrateInputError, match="whole-number frequencies"):
            resampled_variance(log, fit(log), (), method)


def test_estimate_centred_jackknife_is_cr3_and_mean_centred_is_smaller():
    """Two models, one pair: score_0 is the mean of the scores, i.e. OLS of s on a constant.
    CR3 by the leverage formula (X'X)^-1 sum_g X_g'(I - H_gg)^-1 u_g u_g'(I - H_gg)^-1 X_g
    (X'X)^-1 (G-1)/G, written with plain numpy."""
    rng = np.random.default_rng(7)
    sizes = np.array([3, 40, 12, 25, 7, 60])
    g = np.repeat(np.arange(sizes.size), sizes)
    s = (rng.random(g.size) < 0.3 + 0.08 * g).astype(float)
    s[::5] = 0.5
    log = ComparisonLog.from_arrays(np.zeros(g.size, int), np.ones(g.size, int), s, judge=g)
    X = np.ones((g.size, 1))
    xtx_inv = np.linalg.inv(X.T @ X)
    u = s - X @ (xtx_inv @ X.T @ s)
    meat = np.zeros((1, 1))
    for h in range(sizes.size):
        m = g == h
        H = X[m] @ xtx_inv @ X[m].T
        score = X[m].T @ np.linalg.solve(np.eye(m.sum()) - H, u[m])
        meat += np.outer(score, score)
    G = sizes.size
    cr3 = ((G - 1) / G * xtx_inv @ meat @ xtx_inv)[0, 0]
    est = jackknife_cov(log, g, center="estimate").cov
    mean = jackknife_cov(log, g, center="mean").cov
    assert est[0, 0] == pytest.approx(cr3, rel=1e-10)
    assert est[1, 1] == pytest.approx(cr3, rel=1e-10)  # score_1 = 1 - score_0
    means = np.array([s[g != h].mean() for h in range(G)])
    cv3j = (G - 1) / G * ((means - means.mean()) ** 2).sum()
    assert mean[0, 0] == pytest.approx(cv3j, rel=1e-10) and mean[0, 0] < est[0, 0]


def _intercept_log(seed, G, n=200, balanced=False):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(G), n // G) if balanced else rng.integers(0, G, n)
    s = (rng.random(g.size) < 0.35 + 0.1 * g / G).astype(float)
    return ComparisonLog.from_arrays(np.zeros(g.size, int), np.ones(g.size, int), s,
                                     judge=g), g, s


@pytest.mark.parametrize("distribution, G", [("webb", 4), ("rademacher", 7)])
def test_wild_bootstrap_equals_brute_force_wcu_of_intercept_ols(distribution, G):
    """Brute force over every weight vector: y* = b + v_g u, refit the mean, cluster-robust
    (CR1) t statistic of the refit with its own residuals; sample SE from statsmodels."""
    import itertools

    import statsmodels.api as sm

    log, g, s = _intercept_log(3, G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        res = wild_cluster_bootstrap(log, g, distribution=distribution)
    X = np.ones((s.size, 1))
    ols = sm.OLS(s, X).fit(cov_type="cluster", cov_kwds={"groups": g, "use_correction": False})
    c = G / (G - 1)
    assert res.se[0] == pytest.approx(ols.bse[0] * np.sqrt(c), rel=1e-10)
    bhat, u = s.mean(), s - s.mean()
    points = ([-1.0, 1.0] if distribution == "rademacher" else
              [-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])
    t = []
    for v in itertools.product(points, repeat=G):
        y = bhat + np.asarray(v)[g] * u
        b = y.mean()
        resid = y - b
        var = c * sum(resid[g == h].sum() ** 2 for h in range(G)) / s.size**2
        t.append(abs(b - bhat) / np.sqrt(var))
    t = np.sort(t)
    k = int(np.ceil(0.95 * t.size)) - 1
    assert res.enumerated and res.n_draws == t.size
    np.testing.assert_allclose(res.critical_values, t[k], rtol=1e-9)
    assert res.low[0] == pytest.approx(bhat - t[k] * res.se[0], rel=1e-9)


def test_wild_draws_without_residual_variance_have_infinite_t():
    """Two equal clusters: v_1 = -v_2 moves the estimate but leaves each cluster's bootstrap
    residuals summing to zero, so |t*| = inf (6 of the 36 Webb vectors > alpha = 5%)."""
    log, g, _ = _intercept_log(3, 2, balanced=True)
    board = fit(log)
    totals = pair_totals(log, board, g)
    counts_p = totals.total_counts
    psi = totals.total_wins / counts_p
    centred = (totals.wins - totals.counts.multiply(psi[None, :])).toarray()
    amap = WIN_RATE.wild_influence_map(board, counts_p)
    t_g = np.asarray(centred @ amap)
    v, _ = wild_weights(2, 999, "webb")
    t = _wild_statistics(v, centred, totals.counts.toarray(), counts_p, amap, t_g, 2.0, False)
    cancels = np.isclose(v[:, 0], -v[:, 1])
    assert cancels.sum() == 6
    assert np.all(np.isinf(t[cancels])) and np.all(np.isfinite(t[~cancels]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        res = wild_cluster_bootstrap(log, g)
    assert np.all(np.isinf(res.critical_values)) and np.all(res.low == -np.inf)


def test_wild_bootstrap_rejects_bad_alpha_and_reps():
    log = random_log(0)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    for alpha in (0.0, 1.5):
        with pytest.raises(WinrateInputError, match="alpha"):
            wild_cluster_bootstrap(log, judge, alpha=alpha)
    with pytest.raises(WinrateInputError, match="positive integer"):
        wild_cluster_bootstrap(log, prompt, reps=0, distribution="rademacher")
    with pytest.raises(WinrateInputError, match=">= 99"):
        wild_cluster_bootstrap(log, prompt, reps=50, distribution="rademacher")
    # few draws are fine when the support is enumerated anyway
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        res = wild_cluster_bootstrap(log, judge, reps=10, distribution="rademacher")
    assert res.enumerated and res.n_draws == 2 ** log.axes["judge"].n_clusters
    with pytest.raises(WinrateInputError, match="alpha"):
        cluster_bootstrap(log, [judge], reps=20).percentile(1.5)


def test_axes_of_wrong_length_are_clear_errors():
    log = random_log(0)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    with pytest.raises(WinrateInputError, match="axis 1 has 399 entries"):
        multiway_jackknife_cov(log, [prompt, judge[:-1]])
    with pytest.raises(WinrateInputError, match="axis 1 has 399 entries"):
        cluster_bootstrap(log, [prompt, judge[:-1]], reps=20)


def test_resampled_variance_wild_uses_the_requested_correction():
    """Its covariance is the one-way sandwich on the influence (``cluster_cov``)."""
    from winrate.variance.resampling import resampled_variance

    log = random_log(1, n_judges=8)
    board = fit(log)
    judge = log.axes["judge"].codes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        default = resampled_variance(log, board, ("judge",), "bootstrap")
        cr0 = resampled_variance(log, board, ("judge",), "bootstrap", correction="none")
    assert default.method == cr0.method == "wild bootstrap"
    np.testing.assert_allclose(default.cov, cluster_cov(board.influence, judge, "cr1"),
                               rtol=1e-10, atol=1e-16)
    np.testing.assert_allclose(cr0.cov, cluster_cov(board.influence, judge, "none"),
                               rtol=1e-10, atol=1e-16)
    assert "none covariance" in cr0.note


def test_resampled_variance_many_clusters_is_the_pairs_cluster_bootstrap():
    """> 50 clusters on one axis: pairs cluster bootstrap, variance -> CR0 sandwich
    (B = 2000: MC SD ~3% on a variance)."""
    from winrate.variance.resampling import resampled_variance

    log = _many_clusters_log()
    board = fit(log)
    choice = resampled_variance(log, board, ("prompt",), "bootstrap", reps=2000, seed=4)
    assert choice.method == "cluster bootstrap" and choice.df is None
    assert "one axis with > 50 clusters" in choice.note
    sandwich = np.diag(cluster_cov(board.influence, log.axes["prompt"].codes, "none"))
    ratio = np.diag(choice.cov) / sandwich
    assert np.all(np.abs(ratio - 1) < 0.15), ratio
