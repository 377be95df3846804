"""One-model eval statistics against statsmodels, brute-force loops and scipy."""

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.evals import icc_anova, summarize_scores, variance_components


def _clustered_data(seed=0, n=400, g=35, binary=True):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, g, n)
    effect = rng.normal(0, 1, g)[groups]
    latent = effect + rng.normal(0, 1, n)
    x = (latent > 0).astype(float) if binary else latent
    return x, groups


def _statsmodels_se(x, groups, correction):
    fit = sm.OLS(x, np.ones(x.size)).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": correction}
    )
    return float(fit.bse[0])


@pytest.mark.parametrize("binary", [True, False])
def test_one_way_clustered_se_matches_statsmodels(binary):
    # statsmodels' CRV1 factor is G/(G-1) * (N-1)/(N-k); with k = 1 (intercept) that is G/(G-1)
    x, groups = _clustered_data(binary=binary)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        s = summarize_scores(x, groups)
    assert s.se_cr0 == pytest.approx(_statsmodels_se(x, groups, False), rel=1e-10, abs=1e-12)
    assert s.se_cr1 == pytest.approx(_statsmodels_se(x, groups, True), rel=1e-10, abs=1e-12)
    assert s.se == s.se_cr1


@pytest.mark.parametrize("correction", [False, True])
def test_two_way_clustered_se_matches_statsmodels(correction):
    x, g1 = _clustered_data(seed=3, n=500, g=40)
    rng = np.random.default_rng(4)
    g2 = rng.integers(0, 30, x.size)
    x = x + 0.3 * rng.normal(0, 1, 30)[g2]
    both = np.column_stack([g1, g2])
    expected = _statsmodels_se(x, both, correction)
    s = summarize_scores(x, {"a": g1, "b": g2}, correction="cr1" if correction else "none")
    assert s.se == pytest.approx(expected, rel=1e-10)
    assert s.n_clusters == (len(np.unique(g1)), len(np.unique(g2)))
    assert s.df == min(s.n_clusters) - 1


def test_miller_eq4_by_brute_force_loops():
    # Miller appendix A (CR0): sum_c sum_i sum_j (s_ic - sbar)(s_jc - sbar) / n^2
    rng = np.random.default_rng(7)
    x = rng.random(60)
    groups = rng.integers(0, 35, 60)
    n, sbar, total = x.size, x.mean(), 0.0
    for i in range(n):
        for j in range(n):
            if groups[i] == groups[j]:
                total += (x[i] - sbar) * (x[j] - sbar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        s = summarize_scores(x, groups, correction="none")
    assert s.se == pytest.approx(np.sqrt(total / n**2), rel=1e-12)
    g = len(np.unique(groups))
    assert s.se_cr1 == pytest.approx(np.sqrt(total / n**2 * g / (g - 1)), rel=1e-12)


def test_naive_se_choice_and_singleton_clusters():
    x = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 4, dtype=float)
    s = summarize_scores(x, interval="wald")
    p, n = x.mean(), x.size
    assert s.naive_method == "bernoulli" and s.binary
    assert s.se_naive == pytest.approx(np.sqrt(p * (1 - p) / n))
    assert s.se_clt == pytest.approx(stats.sem(x))
    assert s.ci_low == pytest.approx(p - stats.norm.ppf(0.975) * s.se_naive)
    y = x * 0.7 + 0.1
    t = summarize_scores(y)
    assert t.naive_method == "clt" and t.se_bernoulli is None
    assert t.se == pytest.approx(stats.sem(y))
    # every question its own cluster: CR1 is exactly the CLT SE (n / (n - 1) factor)
    rng = np.random.default_rng(1)
    z = rng.random(50)
    u = summarize_scores(z, np.arange(50))
    assert u.se_cr1 == pytest.approx(stats.sem(z), rel=1e-12)
    assert u.deff == pytest.approx(1.0, rel=1e-12)


def test_design_effect_and_effective_n():
    x, groups = _clustered_data(seed=11, n=600, g=60)
    s = summarize_scores(x, groups)
    assert s.deff == pytest.approx(s.se_cr1**2 / s.se_naive**2)
    assert s.n_eff == pytest.approx(s.n / s.deff)
    assert s.deff > 1.5  # strong cluster effect in this design
    assert s.mean_cluster_size == (600 / 60,)


def _icc_by_loops(x, groups):
    labels = np.unique(groups)
    parts = [x[groups == g] for g in labels]
    f = stats.f_oneway(*parts).statistic
    sizes = np.array([p.size for p in parts])
    n, g = x.size, labels.size
    m0 = (n - (sizes**2).sum() / n) / (g - 1)
    return (f - 1) / (f + m0 - 1)


def test_icc_anova_matches_f_statistic():
    # ICC = (MSB - MSW) / (MSB + (m0 - 1) MSW) = (F - 1) / (F + m0 - 1), F from scipy
    x, groups = _clustered_data(seed=5, n=300, g=25, binary=False)
    assert icc_anova(x, groups) == pytest.approx(_icc_by_loops(x, groups), rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        assert summarize_scores(x, groups).icc[0] == pytest.approx(_icc_by_loops(x, groups))


def test_icc_recovers_true_correlation_in_simulation():
    rng = np.random.default_rng(2)
    g, m, rho = 400, 8, 0.3
    groups = np.repeat(np.arange(g), m)
    x = np.sqrt(rho) * rng.normal(size=g)[groups] + np.sqrt(1 - rho) * rng.normal(size=g * m)
    assert icc_anova(x, groups) == pytest.approx(rho, abs=0.04)


def test_icc_undefined_cases_return_none():
    assert icc_anova([0.1, 0.2, 0.3], [0, 1, 2]) is None
    assert icc_anova([0.5, 0.5, 0.5, 0.5], [0, 0, 1, 1]) is None


def _components_by_loops(matrix, groups):
    n, k = matrix.shape
    xhat = matrix.mean(axis=1)
    sigma2 = 0.0
    for kk in range(k):
        for c in np.unique(groups):
            sigma2 += np.sum(matrix[groups == c, kk] - xhat[groups == c]) ** 2
    sigma2 /= n * (k - 1)
    total = sum(np.sum(xhat[groups == c] - xhat.mean()) ** 2 for c in np.unique(groups)) / n
    return sigma2, total - sigma2 / k


def test_clustered_variance_components_by_loops():
    rng = np.random.default_rng(9)
    n, k = 80, 4
    groups = rng.integers(0, 40, n)
    matrix = (rng.random((n, k)) < rng.random(n)[:, None]).astype(float)
    c = variance_components(matrix, groups, correction="none")
    sigma2, var_x = _components_by_loops(matrix, groups)
    assert c.mean_sigma2 == pytest.approx(sigma2, rel=1e-12)
    assert c.var_x == pytest.approx(var_x, rel=1e-12)
    # singleton clusters reduce to the unclustered K - 1 formula
    single = variance_components(matrix)
    assert single.mean_sigma2 == pytest.approx(np.var(matrix, axis=1, ddof=1).mean())
    assert single.se == pytest.approx(stats.sem(matrix.mean(axis=1)))


def test_variance_components_recover_miller_uniform_example():
    # Miller sec. 3.1: x ~ U(0, 1), binary answers: Var(x) = 1/12, E[sigma^2] = 1/6
    rng = np.random.default_rng(123)
    n, k = 20_000, 5
    x = rng.random(n)
    matrix = (rng.random((n, k)) < x[:, None]).astype(float)
    c = variance_components(matrix)
    assert c.var_x == pytest.approx(1 / 12, abs=0.004)
    assert c.mean_sigma2 == pytest.approx(1 / 6, abs=0.003)
    assert c.se**2 == pytest.approx((1 / 12 + 1 / 6 / k) / n, rel=0.05)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(WinrateInputError, match=r"missing or infinite.*rows \[2\]"):
        summarize_scores([1.0, 0.0, np.nan, 1.0])
    with pytest.raises(WinrateInputError, match="'src' has 3 entries but 'scores' has 4"):
        summarize_scores([1.0, 0.0, 1.0, 1.0], {"src": [1, 2, 3]})
    with pytest.raises(WinrateInputError, match="'src' has a single cluster"):
        summarize_scores([1.0, 0.0, 1.0, 1.0], {"src": [1, 1, 1, 1]})
    with pytest.raises(WinrateInputError, match="at least 2"):
        summarize_scores([1.0])
    with pytest.raises(WinrateInputError, match="not binary"):
        summarize_scores([0.2, 0.5, 0.7], interval="wilson")
    with pytest.raises(WinrateInputError, match="correction"):
        summarize_scores([0.2, 0.5, 0.7], correction="cr3")
    with pytest.raises(WinrateInputError, match="K >= 2"):
        variance_components(np.ones((5, 1)))


def test_few_clusters_warn_and_use_t():
    x, groups = _clustered_data(seed=2, n=200, g=8)
    with warns_code("few-clusters"):
        s = summarize_scores(x, groups)
    half = stats.t.ppf(0.975, 7) * s.se
    assert (s.ci_low, s.ci_high) == pytest.approx((s.mean - half, s.mean + half))
    assert s.interval == "wald-t" and s.df == 7


def test_all_equal_scores_warn_and_never_nan():
    with warns_code("constant-scores") as found:
        s = summarize_scores(np.ones(20))
    assert "all 20 scores of scores equal 1" in found[0]
    assert s.se == 0 and s.deff is None and s.n_eff is None
    # small binary eval: the auto interval is the Bayes one, which stays informative
    assert s.interval == "bayes"
    assert s.ci_low == pytest.approx(stats.beta.ppf(0.025, 21, 1)) and s.ci_high < 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=4, max_size=40),
    st.floats(-5, 5), st.floats(0.1, 10), st.randoms(use_true_random=False),
)
def test_se_is_location_and_scale_equivariant(values, shift, scale, rnd):
    x = np.array(values)
    if np.ptp(x) < 1e-6:
        return
    groups = np.array([rnd.randrange(3) for _ in x])
    if len(np.unique(groups)) < 2:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        base = summarize_scores(x, groups, interval="wald")
        moved = summarize_scores(scale * x + shift, groups, interval="wald")
        order = np.array(sorted(range(x.size), key=lambda i: rnd.random()))
        permuted = summarize_scores(x[order], groups[order], interval="wald")
    assert moved.se == pytest.approx(scale * base.se, rel=1e-8, abs=1e-12)
    assert moved.se_clt == pytest.approx(scale * base.se_clt, rel=1e-8, abs=1e-12)
    assert permuted.se == pytest.approx(base.se, rel=1e-8, abs=1e-12)


def test_conditional_variance_has_no_cluster_count_factor():
    # Miller 2024, appendix C: the K - 1 divisor is the correction; CR1's G/(G - 1) must not
    # scale the within-question residual meat. Singleton clusters under cr1 therefore give
    # exactly the unclustered sum_i sum_k (s_ik - xhat_i)^2 / (n (K - 1)).
    rng = np.random.default_rng(21)
    n, k = 40, 3
    matrix = (rng.random((n, k)) < rng.random(n)[:, None]).astype(float)
    plain = np.var(matrix, axis=1, ddof=1).mean()
    for correction in ("none", "cr1"):
        c = variance_components(matrix, np.arange(n), correction=correction)
        assert c.mean_sigma2 == pytest.approx(plain, rel=1e-12)
    assert variance_components(matrix).mean_sigma2 == pytest.approx(plain, rel=1e-12)


def test_clustered_conditional_variance_recovers_truth_in_simulation():
    # 6 clusters (cr1 would inflate by 6/5 = 1.2); answers are independent given x_i, so
    # the clustered E[sigma^2] estimator is unbiased for mean x_i (1 - x_i)
    rng = np.random.default_rng(0)
    g, m, k, reps = 6, 50, 4, 300
    groups = np.repeat(np.arange(g), m)
    truth, est = [], {"none": [], "cr1": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        for _ in range(reps):
            x = 0.5 * rng.beta(2, 2, g)[groups] + 0.5 * rng.random(g * m)
            matrix = (rng.random((g * m, k)) < x[:, None]).astype(float)
            truth.append(np.mean(x * (1 - x)))
            for correction, values in est.items():
                values.append(variance_components(matrix, groups,
                                                  correction=correction).mean_sigma2)
    for values in est.values():
        mc_se = np.std(values, ddof=1) / np.sqrt(reps)
        assert abs(np.mean(values) - np.mean(truth)) < 4 * mc_se


def test_malformed_matrices_and_cluster_arrays_raise_input_errors():
    with pytest.raises(WinrateInputError, match="'answers' must be a numeric"):
        variance_components([[1.0, "x"], [0.0, 1.0]], name="answers")
    with pytest.raises(WinrateInputError, match="'answers' must be a numeric"):
        variance_components([[1.0, 0.0], [0.0]], name="answers")
    with pytest.raises(WinrateInputError, match="'cluster' must be 1-D"):
        summarize_scores([1.0, 0.0, 1.0, 0.0], np.zeros((4, 2)))
    with pytest.raises(WinrateInputError, match="'src' must be 1-D"):
        summarize_scores([1.0, 0.0, 1.0, 0.0], {"src": np.zeros((4, 2))})


def _separate_calls(values, groups):
    from winrate.variance.sandwich import multiway_cluster_cov

    infl = (values - values.mean())[:, None] / values.size
    out = {}
    for correction in ("none", "cr1"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WinrateWarning)
            result = multiway_cluster_cov(infl, groups, correction)
        out[correction] = (np.sqrt(result.cov[0, 0]), result.psd_repaired)
    return out


@pytest.mark.parametrize("case", ["one-way", "two-way", "two-way-repaired"])
def test_clustered_mean_ses_match_separate_covariance_calls(case):
    from winrate.evals.summary import clustered_mean_ses

    rng = np.random.default_rng(8)
    n = 240
    g1, g2 = rng.integers(0, 6, n), rng.integers(0, 5, n)
    values = rng.normal(size=n) + rng.normal(size=6)[g1]
    if case == "two-way-repaired":
        # checkerboard: every row and column sum cancels, the cells do not, so the
        # inclusion-exclusion variance V1 + V2 - V12 is negative and gets clipped
        values = np.where((g1 + g2) % 2 == 0, 1.0, -1.0) + 0.01 * rng.normal(size=n)
    groups = [g1] if case == "one-way" else [g1, g2]
    expected = _separate_calls(values, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        ses, repaired = clustered_mean_ses(values, groups)
    for correction in ("none", "cr1"):
        assert ses[correction] == pytest.approx(expected[correction][0], rel=1e-12, abs=1e-15)
    assert repaired == (expected["none"][1] or expected["cr1"][1])
    assert repaired == (case == "two-way-repaired")
