"""Two-model comparisons against scipy, statsmodels, closed forms and grid quadrature."""

import math
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.evals import (
    bivariate_normal_cdf,
    mcnemar,
    mcnemar_counts,
    paired_bayes,
    paired_difference,
    prob_a_beats_b,
    unpaired_difference,
)
from winrate.evals.paired import paired_cell_probabilities


def _pair(seed=0, n=300, g=40):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, g, n)
    difficulty = rng.normal(0, 1, g)[groups] + rng.normal(0, 1, n)
    a = (difficulty + 0.3 + rng.normal(0, 1, n) > 0).astype(float)
    b = (difficulty + rng.normal(0, 1, n) > 0).astype(float)
    return a, b, groups


def test_mcnemar_worked_example():
    # Miller guide, ch. 4: b = 275 (only Galleon right), c = 150 -> chi2 = 125^2 / 425
    result = mcnemar_counts(275, 150)
    assert result.statistic == pytest.approx(36.76, abs=0.005)
    assert result.statistic == pytest.approx(125**2 / 425)
    table = [[3000, 275], [150, 1575]]
    ref = sm_mcnemar(table, exact=False, correction=False)
    assert result.statistic == pytest.approx(ref.statistic) and result.p_chi2 == pytest.approx(
        ref.pvalue)
    assert result.p_exact == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9)


@pytest.mark.parametrize("b,c", [(3, 9), (12, 5), (7, 7), (0, 4)])
def test_mcnemar_matches_statsmodels(b, c):
    table = [[10, b], [c, 20]]
    ours = mcnemar_counts(b, c, continuity=True)
    ref = sm_mcnemar(table, exact=False, correction=True)
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.p_chi2 == pytest.approx(ref.pvalue)
    assert ours.p_exact == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_mcnemar_from_scores_counts_discordant_pairs():
    a, b, _ = _pair()
    result = mcnemar(a, b)
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    assert (result.b, result.c) == (only_a, only_b)
    with pytest.raises(WinrateInputError, match="0/1"):
        mcnemar(a * 0.5, b)


def test_paired_se_matches_ttest_rel_and_miller_identity():
    a, b, _ = _pair(n=250)
    result = paired_difference(a, b)
    t = stats.ttest_rel(a, b)
    assert result.test.z == pytest.approx(t.statistic, rel=1e-12)
    # Miller sec. 4.2: SE_paired^2 = SE_A^2 + SE_B^2 - 2 SE_A SE_B Corr(s_A, s_B)
    se_a, se_b = stats.sem(a), stats.sem(b)
    identity = np.sqrt(se_a**2 + se_b**2 - 2 * se_a * se_b * np.corrcoef(a, b)[0, 1])
    assert result.se_paired == pytest.approx(identity, rel=1e-12)
    assert result.se_unpaired == pytest.approx(np.hypot(se_a, se_b))
    assert result.correlation == pytest.approx(stats.pearsonr(a, b).statistic)
    assert result.test.p_value == pytest.approx(2 * stats.norm.sf(abs(t.statistic)))


def test_clustered_paired_se_matches_statsmodels():
    a, b, groups = _pair(seed=4)
    d = a - b
    for correction, use in (("none", False), ("cr1", True)):
        fit = sm.OLS(d, np.ones(d.size)).fit(
            cov_type="cluster", cov_kwds={"groups": groups, "use_correction": use})
        result = paired_difference(a, b, groups, correction=correction)
        assert result.se == pytest.approx(fit.bse[0], rel=1e-10)
        half = stats.t.ppf(0.975, result.n_clusters[0] - 1) * result.se
        assert result.test.ci_high - result.test.estimate == pytest.approx(half)


def test_unpaired_difference_from_summary_statistics():
    # Miller guide: SE_A = SE_B = 0.67% -> SE = 0.95%; CI and z from eqs. 5-6
    result = unpaired_difference(0.655, 0.0067, 0.630, 0.0067)
    assert result.se == pytest.approx(0.0095, abs=5e-5)
    assert result.z == pytest.approx(0.025 / math.hypot(0.0067, 0.0067))
    assert result.ci_low == pytest.approx(0.025 - stats.norm.ppf(0.975) * result.se)
    with pytest.raises(WinrateInputError):
        unpaired_difference(0.5, -0.1, 0.4, 0.1)


def test_paired_input_errors_and_degenerate_warnings():
    with pytest.raises(WinrateInputError, match="has 3 entries but"):
        paired_difference([1, 0, 1, 1], [1, 0, 1])
    with pytest.raises(WinrateInputError, match="missing or infinite"):
        paired_difference([1, 0, np.nan, 1], [1, 0, 1, 1])
    with warns_code("constant-difference") as found:
        same = paired_difference([1, 0, 1, 1], [1, 0, 1, 1])
    assert "every one of the 4 questions" in found[0]
    assert same.test.z == 0 and same.test.p_value == 1
    with warns_code("undefined-correlation"):
        assert paired_difference([1, 1, 1, 1], [1, 0, 1, 0]).correlation is None


def _beats_closed_form(a_a, b_a, a_b, b_b):
    """Evan Miller's closed form P(p_A > p_B) for integer Beta parameters (loop over i)."""
    def log_beta(x, y):
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)
    total = 0.0
    for i in range(a_a):
        total += math.exp(log_beta(a_b + i, b_b + b_a) - math.log(b_a + i)
                          - log_beta(1 + i, b_a) - log_beta(a_b, b_b))
    return total  # = P(p_A > p_B) when the sum runs over A's first parameter


@pytest.mark.parametrize("ka,na,kb,nb", [(30, 50, 25, 50), (3, 10, 7, 12), (800, 1000, 780, 1000)])
def test_prob_a_beats_b_matches_closed_form(ka, na, kb, nb):
    ref = _beats_closed_form(1 + ka, 1 + na - ka, 1 + kb, 1 + nb - kb)
    assert prob_a_beats_b(ka, na, kb, nb) == pytest.approx(ref, abs=1e-8)
    assert prob_a_beats_b(ka, na, kb, nb) + prob_a_beats_b(kb, nb, ka, na) == pytest.approx(1)


def test_bivariate_normal_cdf_matches_scipy():
    rng = np.random.default_rng(0)
    h, k = rng.normal(0, 1.5, 40), rng.normal(0, 1.5, 40)
    h[:4], k[2:6] = 0.0, 0.0
    rho = rng.uniform(-0.95, 0.95, 40)
    ours = bivariate_normal_cdf(h, k, rho)
    ref = [stats.multivariate_normal([0, 0], [[1, r], [r, 1]]).cdf([x, y])
           for x, y, r in zip(h, k, rho, strict=True)]
    np.testing.assert_allclose(ours, ref, atol=1e-7)


def test_latent_model_cell_probabilities_are_consistent():
    rng = np.random.default_rng(1)
    theta_a, theta_b, rho = rng.uniform(0.05, 0.95, 50), rng.uniform(0.05, 0.95, 50), rng.uniform(
        -0.9, 0.9, 50)
    cells = paired_cell_probabilities(theta_a, theta_b, rho)
    np.testing.assert_allclose(cells.sum(axis=1), 1)
    np.testing.assert_allclose(cells[:, 0] + cells[:, 1], theta_a, atol=1e-12)
    # independence: rho = 0 gives product cells
    ind = paired_cell_probabilities(theta_a, theta_b, np.zeros(50))
    np.testing.assert_allclose(ind[:, 3], (1 - theta_a) * (1 - theta_b), atol=1e-10)


def _grid_prob_a_better(counts, grid=60):
    t = (np.arange(grid) + 0.5) / grid
    ta, tb, u = np.meshgrid(t, t, t, indexing="ij")
    rho = 2 * u - 1
    cells = paired_cell_probabilities(ta.ravel(), tb.ravel(), rho.ravel())
    prior = stats.beta(4, 2).pdf(u.ravel())
    ok = np.all(cells > 0, axis=1)
    logp = np.full(ok.size, -np.inf)
    logp[ok] = np.log(cells[ok]) @ counts + np.log(prior[ok])
    w = np.exp(logp - logp.max())
    better = (ta.ravel() > tb.ravel()) + 0.5 * (ta.ravel() == tb.ravel())  # diagonal cells split
    return float(w @ better / w.sum())


def test_paired_bayes_matches_grid_quadrature():
    a = np.array([1] * 9 + [1] * 6 + [0] * 2 + [0] * 5, dtype=float)
    b = np.array([1] * 9 + [0] * 6 + [1] * 2 + [0] * 5, dtype=float)
    result = paired_bayes(a, b, n_samples=80_000, seed=2)
    assert result.counts == (9, 6, 2, 5)
    assert result.prob_a_better == pytest.approx(_grid_prob_a_better(np.array([9, 6, 2, 5])),
                                                 abs=0.01)
    assert result.ess > 1000
    swapped = paired_bayes(b, a, n_samples=80_000, seed=2)
    assert swapped.prob_a_better == pytest.approx(1 - result.prob_a_better, abs=0.02)
    assert result.diff_low < result.diff_mean < result.diff_high


def test_paired_bayes_is_seeded():
    a, b, _ = _pair(n=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        assert paired_bayes(a, b, seed=3) == paired_bayes(a, b, seed=3)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 2)),
                min_size=6, max_size=60))
def test_paired_difference_is_antisymmetric(rows):
    a, b, g = (np.array(col, dtype=float) for col in zip(*rows, strict=True))
    if np.all(a == b) or np.all(a == a[0]) or np.all(b == b[0]) or len(np.unique(g)) < 2:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        ab, ba = paired_difference(a, b, g), paired_difference(b, a, g)
        m_ab, m_ba = mcnemar(a, b), mcnemar(b, a)
    assert ab.test.estimate == pytest.approx(-ba.test.estimate)
    assert ab.se == pytest.approx(ba.se) and ab.test.p_value == pytest.approx(ba.test.p_value)
    assert (m_ab.b, m_ab.c) == (m_ba.c, m_ba.b) and m_ab.statistic == pytest.approx(m_ba.statistic)


def test_paired_bayes_large_eval_with_laplace_proposal():
    # 600 questions: the prior proposal degenerates, the Laplace-t one matches the grid
    counts = np.array([300, 90, 60, 150])
    a = np.repeat([1.0, 1.0, 0.0, 0.0], counts)
    b = np.repeat([1.0, 0.0, 1.0, 0.0], counts)
    result = paired_bayes(a, b, n_samples=40_000, seed=0)
    assert result.sampler == "laplace" and result.ess > 10_000
    assert result.prob_a_better == pytest.approx(_grid_prob_a_better(counts, grid=100), abs=0.01)
    assert result.diff_mean == pytest.approx((90 - 60) / 600, abs=0.003)
    with warns_code("low-effective-draws"):
        prior = paired_bayes(a, b, n_samples=40_000, seed=0, sampler="prior")
    assert prior.ess < result.ess / 10


@pytest.mark.parametrize("args", [(0.5, np.nan, 0.4, 0.1), (np.nan, 0.1, 0.4, 0.1),
                                  (0.5, 0.1, np.inf, 0.1), (0.5, 0.1, 0.4, np.inf)])
def test_unpaired_difference_needs_finite_inputs(args):
    with pytest.raises(WinrateInputError, match="finite"):
        unpaired_difference(*args)


@pytest.mark.parametrize("b,c", [(np.nan, 3), (3, np.inf), (2.5, 3), (-1, 3)])
def test_mcnemar_counts_reject_bad_counts(b, c):
    with pytest.raises(WinrateInputError, match="non-negative integers"):
        mcnemar_counts(b, c)


@pytest.mark.parametrize("correction", ["none", "cr1"])
def test_clustered_p_value_and_ci_use_t_reference(correction):
    # statsmodels' cluster fit with use_t=True refers the t statistic to t(G - 1)
    a, b, groups = _pair(seed=6, n=200, g=12)
    d = a - b
    fit = sm.OLS(d, np.ones(d.size)).fit(
        cov_type="cluster", use_t=True,
        cov_kwds={"groups": groups, "use_correction": correction == "cr1"})
    with warns_code("few-clusters"):
        test = paired_difference(a, b, groups, correction=correction, alpha=0.1).test
    assert test.df == 11
    assert test.z == pytest.approx(fit.tvalues[0], rel=1e-10)
    assert test.p_value == pytest.approx(fit.pvalues[0], rel=1e-10)
    assert test.p_value == pytest.approx(2 * stats.t.sf(abs(test.z), 11), rel=1e-12)
    assert test.p_value > 2 * stats.norm.sf(abs(test.z))  # heavier tails than the normal
    low, high = fit.conf_int(alpha=0.1)[0]
    assert (test.ci_low, test.ci_high) == pytest.approx((low, high), rel=1e-10)


def _grid_diff_quantiles(counts, probs, grid=60):
    """Quantiles of theta_A - theta_B under the paired latent model on a midpoint grid."""
    t = (np.arange(grid) + 0.5) / grid
    ta, tb, u = np.meshgrid(t, t, t, indexing="ij")
    cells = paired_cell_probabilities(ta.ravel(), tb.ravel(), 2 * u.ravel() - 1)
    ok = np.all(cells > 0, axis=1)
    logp = np.full(ok.size, -np.inf)
    logp[ok] = np.log(cells[ok]) @ counts + stats.beta(4, 2).logpdf(u.ravel()[ok])
    w = np.exp(logp - logp.max())
    diff = (ta - tb).ravel()
    # the diff takes values on a lattice of step 1/grid: sum the weight per value and
    # interpolate the CDF between lattice midpoints
    values, inverse = np.unique(np.round(diff * grid).astype(int), return_inverse=True)
    mass = np.bincount(inverse, weights=w) / w.sum()
    cdf = np.cumsum(mass)
    return np.interp(probs, cdf, (values + 0.5) / grid)


def test_paired_bayes_interval_matches_grid_quadrature():
    counts = np.array([9, 6, 2, 5])
    a = np.repeat([1.0, 1.0, 0.0, 0.0], counts)
    b = np.repeat([1.0, 0.0, 1.0, 0.0], counts)
    result = paired_bayes(a, b, n_samples=40_000, seed=4, alpha=0.1)
    low, high = _grid_diff_quantiles(counts, [0.05, 0.95])
    assert (result.diff_low, result.diff_high) == pytest.approx((low, high), abs=0.006)
