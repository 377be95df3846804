"""Small-N intervals against scipy/statsmodels, exact coverage against quadrature."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError
from winrate.evals import binomial_interval, clustered_bayes_interval, exact_average_coverage

SM_METHOD = {"wald": "normal", "wilson": "wilson", "clopper-pearson": "beta",
             "jeffreys": "jeffreys"}
INTERIOR = [(1, 3), (7, 10), (12, 30), (55, 100)]


@pytest.mark.parametrize("method", list(SM_METHOD))
@pytest.mark.parametrize("k,n", INTERIOR)
def test_intervals_match_statsmodels(method, k, n):
    ci = binomial_interval(k, n, method, alpha=0.1)
    low, high = proportion_confint(k, n, alpha=0.1, method=SM_METHOD[method])
    # statsmodels clips the normal interval to [0, 1]; winrate reports it unclipped
    ours = np.clip([float(ci.low), float(ci.high)], 0, 1)
    assert tuple(ours) == pytest.approx((low, high), abs=1e-10)


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), *INTERIOR])
def test_wilson_and_exact_match_scipy_binomtest(k, n):
    result = stats.binomtest(k, n)
    for method, name in (("wilson", "wilson"), ("clopper-pearson", "exact")):
        ci = binomial_interval(k, n, method)
        ref = result.proportion_ci(confidence_level=0.95, method=name)
        assert (float(ci.low), float(ci.high)) == pytest.approx((ref.low, ref.high), abs=1e-10)


def test_bayes_interval_is_beta_posterior_with_configurable_prior():
    ci = binomial_interval([0, 4, 10], 10, "bayes")
    expected = stats.beta(1 + np.array([0, 4, 10]), 1 + 10 - np.array([0, 4, 10])).interval(0.95)
    np.testing.assert_allclose(ci.low, expected[0])
    np.testing.assert_allclose(ci.high, expected[1])
    jeff_prior = binomial_interval(4, 10, "bayes", prior=(0.5, 0.5))
    assert float(jeff_prior.low) == pytest.approx(stats.beta.ppf(0.025, 4.5, 6.5))


def test_jeffreys_boundary_convention():
    ci = binomial_interval([0, 10], 10, "jeffreys")
    assert ci.low[0] == 0 and ci.high[1] == 1


def test_bad_counts():
    with pytest.raises(WinrateInputError, match="k"):
        binomial_interval(11, 10)
    with pytest.raises(WinrateInputError, match="method"):
        binomial_interval(1, 10, "agresti")
    with pytest.raises(WinrateInputError, match="prior"):
        binomial_interval(1, 10, prior=(0, 1))


def _oracle_endpoints(n, method, alpha):
    """Interval endpoints for k = 0..n from statsmodels (scipy's Beta posterior for Bayes)."""
    k = np.arange(n + 1)
    if method == "bayes":
        return stats.beta(k + 1, n - k + 1).interval(1 - alpha)
    low, high = proportion_confint(k, n, alpha=alpha, method=SM_METHOD[method])
    if method == "jeffreys":
        low, high = np.where(k == 0, 0, low), np.where(k == n, 1, high)
    return low, high


def _coverage_by_quadrature(n, method, alpha=0.05, nodes=40):
    """int_0^1 sum_k Binom(k; n, t) 1[t in CI_k] dt, piecewise Gauss-Legendre between all
    interval endpoints (the integrand is a polynomial on each piece), endpoints from
    statsmodels (or scipy's Beta posterior for the Bayes interval)."""
    k = np.arange(n + 1)
    low, high = _oracle_endpoints(n, method, alpha)
    low, high = np.clip(low, 0, 1), np.clip(high, 0, 1)
    cuts = np.unique(np.concatenate([[0.0, 1.0], low, high]))
    x, w = np.polynomial.legendre.leggauss(nodes)
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        t = (b - a) / 2 * x + (a + b) / 2
        inside = (low[:, None] <= t) & (t <= high[:, None])
        integrand = (stats.binom.pmf(k[:, None], n, t) * inside).sum(axis=0)
        total += (b - a) / 2 * (w @ integrand)
    return total


@pytest.mark.parametrize("method", ["wald", "wilson", "clopper-pearson", "jeffreys", "bayes"])
@pytest.mark.parametrize("n", [3, 10])
def test_exact_coverage_matches_quadrature(method, n):
    exact = exact_average_coverage(n, method)
    assert exact.coverage == pytest.approx(_coverage_by_quadrature(n, method), abs=1e-12)


@pytest.mark.parametrize("n", [3, 10, 30, 100])
def test_bayes_interval_covers_exactly_and_clt_does_not(n):
    assert exact_average_coverage(n, "bayes").coverage == pytest.approx(0.95, abs=1e-6)
    assert exact_average_coverage(n, "bayes", alpha=0.2).coverage == pytest.approx(0.8, abs=1e-6)
    clt = exact_average_coverage(n, "wald").coverage
    assert clt < 0.93
    if n == 3:
        assert clt < 0.6


def test_coverage_agrees_with_bowyer_style_simulation():
    # Bowyer et al. draw theta ~ U(0, 1), then k ~ Binom(N, theta), 20,000 times
    rng = np.random.default_rng(0)
    theta = rng.random(200_000)
    k = rng.binomial(10, theta)
    ci = binomial_interval(k, 10, "wilson")
    simulated = np.mean((ci.low <= theta) & (theta <= ci.high))
    assert simulated == pytest.approx(exact_average_coverage(10, "wilson").coverage, abs=0.003)


def test_committed_coverage_table_is_current():
    import pandas as pd

    from scripts.exact_interval_coverage import TABLE_CSV, coverage_table

    if not TABLE_CSV.exists():
        pytest.skip("paper/tables/interval_coverage_exact.csv not generated yet")
    committed = pd.read_csv(TABLE_CSV)
    fresh = coverage_table(ns=(3, 10), alphas=(0.05,))
    merged = fresh.merge(committed, on=["n", "alpha", "method"], suffixes=("", "_committed"))
    assert len(merged) == len(fresh)
    np.testing.assert_allclose(merged["coverage"], merged["coverage_committed"], atol=1e-9)


def test_clustered_bayes_with_singleton_clusters_is_beta_posterior():
    # N_t = 1: BetaBinomial(y; 1, d theta, d (1 - theta)) = Bernoulli(theta) for every d,
    # so the posterior of theta is exactly Beta(1 + k, 1 + n - k)
    y = np.r_[np.ones(14), np.zeros(6)]
    ci = clustered_bayes_interval(y, np.ones(20), n_samples=40_000, seed=1)
    low, high = stats.beta(15, 7).interval(0.95)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=0.01)
    assert ci.mean == pytest.approx(15 / 22, abs=0.005)
    assert ci.ess > 5000


def _grid_posterior_quantiles(y, m, probs, theta_range=(0.0, 1.0), d_max=25.0, size=(800, 1500)):
    """Posterior quantiles of theta on a midpoint grid over (theta, d), d ~ Gamma(1, 1)."""
    lo, hi = theta_range
    step = (hi - lo) / size[0]
    theta = lo + (np.arange(size[0]) + 0.5) * step
    d = (np.arange(size[1]) + 0.5) * d_max / size[1]
    th, dd = np.meshgrid(theta, d, indexing="ij")
    pairs, mult = np.unique(np.column_stack([y, m]), axis=0, return_counts=True)
    logp = -dd + sum(c * stats.betabinom.logpmf(yt, mt, dd * th, dd * (1 - th))
                     for (yt, mt), c in zip(pairs, mult, strict=True))
    marginal = np.exp(logp - logp.max()).sum(axis=1)
    cdf = np.cumsum(marginal) / marginal.sum()
    return np.interp(probs, cdf, theta + step / 2)


def test_clustered_bayes_matches_grid_quadrature():
    y, m = np.array([9, 2, 7, 10, 4, 8]), np.array([10, 10, 12, 10, 9, 11])
    ci = clustered_bayes_interval(y, m, n_samples=60_000, seed=3)
    low, high = _grid_posterior_quantiles(y, m, [0.025, 0.975])
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=0.012)
    # over-dispersed clusters: wider than the naive Beta posterior of the pooled counts
    naive = stats.beta(1 + y.sum(), 1 + (m - y).sum()).interval(0.95)
    assert ci.high - ci.low > 1.5 * (naive[1] - naive[0])


def test_clustered_bayes_seeded_and_warns_on_low_ess():
    y, m = np.array([9, 2, 7]), np.array([10, 10, 12])
    assert clustered_bayes_interval(y, m, seed=5) == clustered_bayes_interval(y, m, seed=5)
    big_y, big_m = np.full(300, 150), np.full(300, 200)
    with warns_code("low-effective-draws"):
        result = clustered_bayes_interval(big_y, big_m, n_samples=2000, sampler="prior")
    assert result.sampler == "prior"
    with pytest.raises(WinrateInputError, match="sampler"):
        clustered_bayes_interval(y, m, sampler="mcmc")
    with pytest.raises(WinrateInputError, match="aligned"):
        clustered_bayes_interval([1, 2], [3, 4, 5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clustered_bayes_interval(y, m, n_samples=5000)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.data(), st.sampled_from(["wilson", "clopper-pearson",
                                                        "jeffreys", "bayes"]))
def test_interval_properties(n, data, method):
    k = data.draw(st.integers(0, n))
    wide, narrow = binomial_interval(k, n, method, 0.05), binomial_interval(k, n, method, 0.2)
    assert 0 <= float(wide.low) <= float(narrow.low) <= float(narrow.high) <= float(wide.high) <= 1
    if method != "bayes" or 0 < k < n:
        assert float(wide.low) <= k / n <= float(wide.high)
    mirrored = binomial_interval(n - k, n, method, 0.05)
    assert float(mirrored.low) == pytest.approx(1 - float(wide.high), abs=1e-9)


def test_laplace_proposal_keeps_large_evals_accurate():
    # 91 clusters of 130 questions (MMLU-Pro sized): prior draws leave an ESS of ~2, the
    # defensive Laplace-t proposal keeps most of its draws and matches grid quadrature
    rng = np.random.default_rng(0)
    m = np.full(91, 130)
    y = rng.binomial(m, rng.beta(6, 4, 91))
    ci = clustered_bayes_interval(y, m, n_samples=20_000, seed=1)
    assert ci.sampler == "laplace" and ci.ess > 5000
    low, high = _grid_posterior_quantiles(y, m, [0.025, 0.975], theta_range=(0.49, 0.66),
                                          d_max=40.0, size=(240, 200))
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=0.003)


def test_finite_difference_hessian_of_a_gaussian_log_density():
    from winrate.evals._importance import hessian, laplace

    cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.5, -0.2], [0.1, -0.2, 2.0]])
    mean = np.array([0.5, -1.0, 2.0])
    dist = stats.multivariate_normal(mean, cov)
    np.testing.assert_allclose(hessian(dist.logpdf, np.zeros(3)), -np.linalg.inv(cov), atol=1e-6)
    mode, inv_neg_h = laplace(lambda z: dist.logpdf(z).reshape(-1), np.zeros(3))
    np.testing.assert_allclose(mode, mean, atol=1e-4)
    np.testing.assert_allclose(inv_neg_h, cov, atol=1e-4)


def test_low_ess_warning_names_the_proposal():
    from winrate.evals.intervals import warn_low_ess

    for sampler, draws in (("laplace", "of 1000 Laplace-t proposal draws"),
                           ("prior", "of 1000 prior draws")):
        with warns_code("low-effective-draws") as found:
            warn_low_ess(12.0, 1000, "test", sampler)
        assert draws in found[0]


def test_markdown_table_accepts_a_subset_of_methods():
    from scripts.exact_interval_coverage import coverage_table, markdown

    table = coverage_table(ns=(3, 10), alphas=(0.1,), methods=("wilson", "bayes"))
    text = markdown(table)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "N = " not in line]
    assert [r.split(" | ")[0] for r in rows] == ["| wilson", "| bayes"]
    wilson = exact_average_coverage(10, "wilson", 0.1)
    assert f"{wilson.coverage:.6f} (w {wilson.mean_width:.3f})" in rows[0]


def _mean_width_by_quadrature(n, method, alpha=0.05, nodes=60):
    """int_0^1 sum_k Binom(k; n, t) * width_k dt by Gauss-Legendre (the integrand is a
    polynomial of degree n), endpoints from statsmodels or scipy, clipped to [0, 1]."""
    k = np.arange(n + 1)
    low, high = _oracle_endpoints(n, method, alpha)
    width = np.clip(high, 0, 1) - np.clip(low, 0, 1)
    x, w = np.polynomial.legendre.leggauss(nodes)
    t = (x + 1) / 2
    return float(w @ (stats.binom.pmf(k[:, None], n, t) * width[:, None]).sum(axis=0) / 2)


@pytest.mark.parametrize("method", ["wald", "wilson", "clopper-pearson", "jeffreys", "bayes"])
@pytest.mark.parametrize("n,alpha", [(3, 0.05), (30, 0.2)])
def test_exact_mean_width_matches_quadrature(method, n, alpha):
    got = exact_average_coverage(n, method, alpha).mean_width
    assert got == pytest.approx(_mean_width_by_quadrature(n, method, alpha), abs=1e-12)


def test_committed_table_widths_and_markdown_match_quadrature():
    import pandas as pd

    from scripts.exact_interval_coverage import TABLE_CSV

    if not TABLE_CSV.exists():
        pytest.skip("paper/tables/interval_coverage_exact.csv not generated yet")
    committed = pd.read_csv(TABLE_CSV)
    assert len(committed) == 4 * 3 * 5
    for row in committed[committed.n <= 30].itertuples():
        ref = _mean_width_by_quadrature(row.n, row.method, row.alpha)
        assert row.mean_width == pytest.approx(ref, abs=1e-10)
        assert row.nominal == pytest.approx(1 - row.alpha)
    text = TABLE_CSV.with_suffix(".md").read_text()
    for row in committed.itertuples():
        block = text.split(f"## Nominal {100 * (1 - row.alpha):g}%")[1].split("## ")[0]
        cells = {x.strip("| ").split(" | ")[0]: x.strip("| ").split(" | ")
                 for x in block.splitlines() if x.startswith("| ")}
        col = cells["method"].index(f"N = {row.n}")
        assert cells[row.method][col] == f"{row.coverage:.6f} (w {row.mean_width:.3f})"
