"""Tests for winrate.inference: critical values against closed forms, rank sets on
constructed cases with known answers, and structural properties."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats
from statsmodels.stats.multitest import multipletests

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.inference.joint import (
    DEFAULT_DRAWS,
    DEFAULT_MC_TOLERANCE,
    holm,
    pairwise_differences,
    rank_sets,
    simultaneous_intervals,
    tau_best,
    wald_intervals,
)
from winrate.variance.reference import critical_value

ALPHA = 0.05
N_MC = 200_000
# |MC - exact| <= TOL_SE * mc_se: a 4-SD band fails by chance with prob. ~6e-5 per check
TOL_SE = 4.0


def round_robin_cov(K: int, sigma: float = 1.0) -> np.ndarray:
    """Covariance of K scores that sum to a constant: ``sigma^2 (I - J / K)`` (rank K-1)."""
    return sigma**2 * (np.eye(K) - np.ones((K, K)) / K)


def equicorrelated_cov(K: int, sigma: float, rho: float) -> np.ndarray:
    return sigma**2 * ((1 - rho) * np.eye(K) + rho * np.ones((K, K)))


def solve_quantile(cdf, lo=0.5, hi=10.0) -> float:
    return optimize.brentq(lambda c: cdf(c) - (1 - ALPHA), lo, hi, xtol=1e-10)


# ----------------------------------------------------------------- marginal intervals


def test_marginal_critical_values_are_normal_and_t_quantiles():
    assert critical_value(0.05) == pytest.approx(1.959963984540054, abs=1e-12)
    assert critical_value(0.05, 10) == pytest.approx(2.228138851986274, abs=1e-12)
    assert critical_value(0.05, np.inf) == critical_value(0.05)


def test_wald_intervals_match_hand_computation():
    est, var = np.array([0.3, 0.6]), np.array([0.01, 0.04])
    res = wald_intervals(est, np.diag(var), alpha=0.1, df=7)
    q = stats.t.ppf(0.95, 7)
    np.testing.assert_allclose(res.low, est - q * np.sqrt(var))
    np.testing.assert_allclose(res.high, est + q * np.sqrt(var))


# ---------------------------------------------------- simultaneous critical values


@pytest.mark.parametrize("K", [1, 8])
def test_independent_scores_match_sidak(K):
    """max_a |Z_a| for independent Z: P(max <= c) = (2 Phi(c) - 1)^K (Sidak 1967)."""
    variances = np.linspace(0.5, 3.0, K)  # unequal scales: R is still the identity
    res = simultaneous_intervals(np.zeros(K), np.diag(variances), n_draws=N_MC, seed=1)
    sidak = stats.norm.ppf((1 + (1 - ALPHA) ** (1 / K)) / 2)
    assert abs(res.critical_value - sidak) <= TOL_SE * res.mc_se
    # the reported MC SE agrees with the asymptotic SD of a sample quantile,
    # sqrt(p (1 - p) / n) / f(c), f the density of max |Z_a| = K 2 phi(c) (2 Phi(c) - 1)^(K-1)
    dens = K * 2 * stats.norm.pdf(sidak) * (2 * stats.norm.cdf(sidak) - 1) ** (K - 1)
    asym = np.sqrt(ALPHA * (1 - ALPHA) / N_MC) / dens
    assert 0.6 * asym < res.mc_se < 1.6 * asym


def test_independent_multivariate_t_matches_one_dimensional_integral():
    """Multivariate t with identity scale: P(max|T| <= c) = E[(2 Phi(c S) - 1)^K],
    S = sqrt(chi2_df / df)."""
    K, df = 6, 5
    s_dist = stats.chi(df, scale=1 / np.sqrt(df))

    def cdf(c):
        integrand = lambda s: (2 * stats.norm.cdf(c * s) - 1) ** K * s_dist.pdf(s)  # noqa: E731
        return integrate.quad(integrand, 0, np.inf)[0]

    exact = solve_quantile(cdf)
    res = simultaneous_intervals(np.zeros(K), np.eye(K), df=df, n_draws=N_MC, seed=2)
    assert abs(res.critical_value - exact) <= TOL_SE * res.mc_se


@pytest.mark.parametrize(
    ("cov", "df"),
    [
        (np.eye(6), None),
        (equicorrelated_cov(6, sigma=2.0, rho=0.4), None),
        (round_robin_cov(6, sigma=0.3), None),  # singular: scores sum to a constant
        (equicorrelated_cov(6, sigma=1.0, rho=0.7), 12),
        (round_robin_cov(6), 12),  # singular scale matrix with t reference
    ],
    ids=["independent", "equicorrelated", "round-robin", "equicorrelated-t", "round-robin-t"],
)
def test_all_pairs_match_tukey_studentized_range(cov, df):
    """Equicorrelated equal-variance means: differences are those of independent means
    with variance sigma^2 (1 - rho), so max |d| / SE_d = q / sqrt(2), q the studentized
    range with K means (infinite df for the normal reference)."""
    K = cov.shape[0]
    res = pairwise_differences(np.zeros(K), cov, df=df, n_draws=N_MC, seed=3)
    q = stats.studentized_range.ppf(1 - ALPHA, K, np.inf if df is None else df)
    assert abs(res.critical_value - q / np.sqrt(2)) <= TOL_SE * res.mc_se


def test_marginal_rank_family_matches_dunnett_integral():
    """For model j the marginal family is max_k |Z_j - Z_k| / sqrt(2) (two-sided Dunnett,
    many-to-one). Independent unit-variance Z, conditioning on Z_j = x:
    P(max <= c) = int phi(x) [Phi(x + c sqrt 2) - Phi(x - c sqrt 2)]^(K-1) dx."""
    K = 5
    w = np.sqrt(2)

    def cdf(c):
        inner = lambda x: (  # noqa: E731
            stats.norm.pdf(x) * (stats.norm.cdf(x + c * w) - stats.norm.cdf(x - c * w)) ** (K - 1)
        )
        return integrate.quad(inner, -np.inf, np.inf)[0]

    exact = solve_quantile(cdf)
    res = rank_sets(np.zeros(K), np.eye(K), stepdown=False, n_draws=N_MC, seed=4)
    assert np.all(np.abs(res.critical_value - exact) <= TOL_SE * res.mc_se)


def test_round_robin_max_abs_matches_direct_simulation():
    """Singular covariance of centred scores Z = e - mean(e): the critical value from the
    eigen-factor matches a direct simulation of the centred vector."""
    K = 7
    res = simultaneous_intervals(np.zeros(K), round_robin_cov(K), n_draws=N_MC, seed=5)
    e = np.random.default_rng(99).standard_normal((N_MC, K))
    z = (e - e.mean(axis=1, keepdims=True)) / np.sqrt(1 - 1 / K)
    direct = np.quantile(np.abs(z).max(axis=1), 1 - ALPHA)
    assert abs(res.critical_value - direct) <= TOL_SE * np.sqrt(2) * res.mc_se


def test_two_scores_reduce_to_normal_quantile():
    """K = 2: one difference, so every family's critical value is z_{0.975}."""
    cov = np.array([[1.0, 0.3], [0.3, 2.0]])
    res = rank_sets(np.zeros(2), cov, method="simultaneous", stepdown=False, n_draws=N_MC)
    assert abs(res.critical_value[0] - stats.norm.ppf(0.975)) <= TOL_SE * res.mc_se[0]


# ---------------------------------------------------------------- pairwise differences


def test_pairwise_se_and_pvalues_from_independent_computation():
    rng = np.random.default_rng(6)
    K = 5
    A = rng.standard_normal((K, 3))  # rank-3 (singular) covariance
    V = A @ A.T + np.diag([0.1, 0.0, 0.2, 0.0, 0.3])
    est = rng.standard_normal(K)
    res = pairwise_differences(est, V, df=9, n_draws=20_000)
    L = np.zeros((res.i.size, K))
    L[np.arange(res.i.size), res.i], L[np.arange(res.i.size), res.j] = 1.0, -1.0
    np.testing.assert_allclose(res.estimate, L @ est)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(L @ V @ L.T)))
    p = 2 * stats.t.sf(np.abs(L @ est) / np.sqrt(np.diag(L @ V @ L.T)), 9)
    np.testing.assert_allclose(res.p_value, p)
    np.testing.assert_allclose(res.p_holm, multipletests(p, method="holm")[1])
    frame = res.to_frame(names=list("abcde"))
    assert list(frame["i"][:2]) == ["a", "a"] and list(frame["j"][:2]) == ["b", "c"]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_matches_statsmodels(p):
    np.testing.assert_allclose(holm(p), multipletests(np.array(p), method="holm")[1])


def test_max_t_pvalues_agree_with_simultaneous_intervals():
    """p_max_t <= alpha exactly when the simultaneous interval excludes zero."""
    rng = np.random.default_rng(7)
    K = 8
    V = np.diag(rng.uniform(0.5, 2, K))
    est = rng.normal(0, 4.0, K)
    res = pairwise_differences(est, V, n_draws=50_000)
    excludes = (res.low > 0) | (res.high < 0)
    away = np.abs(np.abs(res.statistic) - res.critical_value) > 0.02  # avoid the boundary
    assert excludes[away].any() and (~excludes[away]).any()
    np.testing.assert_array_equal((res.p_max_t <= ALPHA)[away], excludes[away])
    assert np.all(res.p_max_t >= res.p_value - 1e-12)


# ---------------------------------------------------------------- rank sets: answers


@pytest.mark.parametrize("method", ["marginal", "simultaneous"])
@pytest.mark.parametrize("stepdown", [False, True])
def test_separated_scores_give_singleton_true_ranks(method, stepdown):
    true_rank = np.array([3, 1, 5, 2, 4, 6])
    est = 10.0 * (7 - true_rank)
    res = rank_sets(est, 0.01 * np.eye(6), method=method, stepdown=stepdown, n_draws=20_000)
    np.testing.assert_array_equal(res.low, true_rank)
    np.testing.assert_array_equal(res.high, true_rank)


@pytest.mark.parametrize("method", ["marginal", "simultaneous"])
@pytest.mark.parametrize("cov", [np.eye(5), round_robin_cov(5)], ids=["iid", "round-robin"])
def test_identical_scores_give_full_rank_range(method, cov):
    res = rank_sets(np.full(5, 0.5), cov, method=method, n_draws=20_000)
    np.testing.assert_array_equal(res.low, 1)
    np.testing.assert_array_equal(res.high, 5)


@pytest.mark.parametrize("method", ["marginal", "simultaneous"])
@pytest.mark.parametrize("cov", [np.eye(7), round_robin_cov(7)], ids=["iid", "round-robin"])
def test_two_separated_blocks_give_block_rank_ranges(method, cov):
    est = np.array([0.0, 50.0, 0.0, 50.0, 0.0, 50.0, 0.0])  # top block of 3, bottom of 4
    res = rank_sets(est, cov, method=method, n_draws=20_000)
    top = est > 0
    np.testing.assert_array_equal(res.low, np.where(top, 1, 4))
    np.testing.assert_array_equal(res.high, np.where(top, 3, 7))


def test_two_models_rank_sets_follow_the_z_test():
    """K = 2: ranks are resolved iff |d| / SE > z_{0.975} = 1.96."""
    resolved = rank_sets(np.array([2.3, 0.0]), np.eye(2) / 2, n_draws=N_MC)
    unresolved = rank_sets(np.array([1.6, 0.0]), np.eye(2) / 2, n_draws=N_MC)
    np.testing.assert_array_equal(resolved.low, [1, 2])
    np.testing.assert_array_equal(resolved.high, [1, 2])
    np.testing.assert_array_equal(unresolved.low, [1, 1])
    np.testing.assert_array_equal(unresolved.high, [2, 2])


def test_stepdown_resolves_what_single_step_cannot():
    """Three models, one far below, two close: single-step uses the 3-pair critical value
    (Tukey, about 2.34); after the far pairs are rejected only the close pair and the
    one-sided leftovers remain, with a smaller critical value. A close-pair statistic
    of 2.2 is then resolved by the step-down only."""
    V = np.eye(3) / 2  # SE of every difference = 1
    est = np.array([2.2, 0.0, -30.0])
    single = rank_sets(est, V, method="simultaneous", stepdown=False, n_draws=N_MC)
    step = rank_sets(est, V, method="simultaneous", stepdown=True, n_draws=N_MC)
    np.testing.assert_array_equal(single.low, [1, 1, 3])
    np.testing.assert_array_equal(single.high, [2, 2, 3])
    np.testing.assert_array_equal(step.low, [1, 2, 3])
    np.testing.assert_array_equal(step.high, [1, 2, 3])
    assert step.n_steps > 1
    assert step.critical_value[0] < 2.2 < single.critical_value[0]


@pytest.mark.parametrize("tau", [1, 3, 4])
def test_tau_best_on_blocks(tau):
    est = np.array([0.0, 50.0, 0.0, 50.0, 0.0, 50.0, 0.0])
    res = tau_best(est, np.eye(7), tau, n_draws=20_000)
    expected = est > 0 if tau <= 3 else np.ones(7, bool)
    np.testing.assert_array_equal(res.selected, expected)
    np.testing.assert_array_equal(res.indices, np.flatnonzero(expected))


def test_tau_best_on_separated_scores_is_the_top_tau():
    est = np.array([5.0, 40.0, 20.0, 30.0, 10.0])
    res = tau_best(est, 0.01 * np.eye(5), 2, n_draws=20_000)
    np.testing.assert_array_equal(res.indices, [1, 3])


# ------------------------------------------------------------ rank sets: properties


@st.composite
def problems(draw):
    K = draw(st.integers(2, 6))
    rank = draw(st.integers(1, K))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((K, rank)) * rng.uniform(0.2, 2, rank)
    est = rng.normal(0, 3, K)
    if draw(st.booleans()):  # exact ties
        est[rng.integers(0, K, K // 2)] = est[0]
    return est, A @ A.T


MC_SMALL = dict(n_draws=5_000, alpha=0.1, seed=11)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_rank_set_nesting_and_estimate_rank(problem):
    """Exact with common random numbers: step-down sets lie inside single-step sets,
    marginal sets inside simultaneous ones, and the rank of the estimate in every set."""
    est, V = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        sets = {
            (m, s): rank_sets(est, V, method=m, stepdown=s, **MC_SMALL)
            for m in ("marginal", "simultaneous")
            for s in (False, True)
        }
    est_rank = 1 + (est[None, :] > est[:, None]).sum(axis=1)
    for (m, s), r in sets.items():
        assert np.all((r.low <= est_rank) & (est_rank <= r.high)), (m, s)
        if s:
            wide = sets[(m, False)]
            assert np.all((wide.low <= r.low) & (r.high <= wide.high)), m
    # common random numbers: each marginal family is a subset of the simultaneous one
    single_sim = sets[("simultaneous", False)].critical_value[0]
    assert np.all(sets[("marginal", False)].critical_value <= single_sim + 1e-12)
    for s in (False, True):
        inner, outer = sets[("marginal", s)], sets[("simultaneous", s)]
        assert np.all((outer.low <= inner.low) & (inner.high <= outer.high)), s


@settings(max_examples=25, deadline=None)
@given(problems(), st.floats(0.1, 10), st.floats(-5, 5))
def test_pairwise_is_location_and_scale_equivariant(problem, scale, shift):
    est, V = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        base = pairwise_differences(est, V, **MC_SMALL)
        moved = pairwise_differences(scale * est + shift, scale**2 * V, **MC_SMALL)
    np.testing.assert_allclose(moved.estimate, scale * base.estimate, atol=1e-9)
    np.testing.assert_allclose(moved.se, scale * base.se, rtol=1e-6, atol=1e-12)
    # same seed, same correlation up to rounding: the same MC quantile up to its error (not
    # exactly: the differences' correlation is singular, and rounding can turn the basis
    # of its null space, hence the draws, or move the adaptive stopping point)
    assert abs(moved.critical_value - base.critical_value) <= TOL_SE * np.hypot(
        moved.mc_se, base.mc_se)
    # a max over pairs is at least one |T|: c >= z_{0.95} up to MC error
    assert base.critical_value >= stats.norm.ppf(1 - 0.1 / 2) - TOL_SE * base.mc_se


@settings(max_examples=25, deadline=None)
@given(problems(), st.booleans())
def test_critical_values_lie_between_marginal_and_bonferroni(problem, pairs):
    """For any correlation, z_{1-a/2} <= c <= z_{1-a/(2m)} (union bound), m contrasts."""
    est, V = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        if pairs:
            res = pairwise_differences(est, V, **MC_SMALL)
            m = int((res.se > 1e-6 * np.sqrt(np.diag(V).max())).sum())
        else:
            res = simultaneous_intervals(est, V, **MC_SMALL)
            m = int((res.se > 0).sum())
    if m == 0:
        return
    slack = TOL_SE * res.mc_se
    assert stats.norm.ppf(1 - 0.1 / 2) - slack <= res.critical_value
    assert res.critical_value <= stats.norm.ppf(1 - 0.1 / (2 * m)) + slack


def test_single_model_is_trivial():
    assert rank_sets([1.0], [[0.1]]).low.tolist() == [1]
    assert rank_sets([1.0], [[0.1]]).high.tolist() == [1]
    assert tau_best([1.0], [[0.1]], 1).indices.tolist() == [0]
    assert pairwise_differences([1.0], [[0.1]]).estimate.size == 0


# ------------------------------------------------------------------ coverage (seeded MC)


def test_rank_sets_and_tau_best_cover_under_ties():
    """Least favourable case (ties), singular round-robin covariance: over seeded
    replications the simultaneous sets cover every true rank range, each marginal set its
    own, and the tau-best set contains all true tau-best models, each in >= 1 - alpha of
    replications (3-SD binomial slack). Tied models have rank 2 and must keep [2, 4]."""
    theta = np.array([0.0, 0.0, 0.0, 1.0])
    V = 0.3 * round_robin_cov(4)
    true_low = 1 + (theta[None, :] > theta[:, None]).sum(axis=1)
    true_high = 4 - (theta[None, :] < theta[:, None]).sum(axis=1)
    rng = np.random.default_rng(12)
    n_rep, kw = 300, dict(n_draws=5_000, alpha=0.1)
    hits_sim, hits_marg, hits_tau = 0, np.zeros(4), 0
    for _ in range(n_rep):
        e = rng.standard_normal(4)
        est = theta + np.sqrt(0.3) * (e - e.mean())  # a draw from N(theta, V)
        sim = rank_sets(est, V, method="simultaneous", **kw)
        marg = rank_sets(est, V, method="marginal", **kw)
        hits_sim += np.all((sim.low <= true_low) & (true_high <= sim.high))
        hits_marg += (marg.low <= true_low) & (true_high <= marg.high)
        hits_tau += tau_best(est, V, 2, **kw).selected.all()  # true 2-best: every model
    floor = 0.9 - 3 * np.sqrt(0.9 * 0.1 / n_rep)
    assert hits_sim / n_rep >= floor
    assert np.all(hits_marg / n_rep >= floor)
    assert hits_tau / n_rep >= floor


# ------------------------------------------------------------------ machinery and input


@pytest.mark.parametrize("parallel", [False, True])
def test_family_kernel_matches_brute_force(parallel):
    """The pair-entry kernel against a direct numpy evaluation of every family's maximum
    over mixed one-/two-sided pair and single-score contrasts (three families)."""
    from winrate.inference.joint import _NO_HYPOTHESIS, _family, _family_max, _padded

    rng = np.random.default_rng(13)
    K, n = 6, 1300  # three tiles of draws, the last one partial
    Fp = _padded(rng.standard_normal((K, 4)))
    pairs = np.array([(a, b) for a in range(K) for b in range(-1, K) if a != b])
    rows = pairs[rng.random(len(pairs)) < 0.6]
    a, b = rows[:, 0], rows[:, 1]
    sign = rng.integers(-1, 2, a.size).astype(float)
    group = rng.integers(0, 3, a.size)
    z = np.ascontiguousarray(rng.standard_normal((n, 4)) @ Fp.T)
    fam = _family(Fp, a, b, sign, group, 3)
    out = np.full((n, 3), _NO_HYPOTHESIS, dtype=np.float32)
    kernel = _family_max.parallel if parallel else _family_max.serial
    zt = np.ascontiguousarray(z.T, dtype=np.float32)  # draws in columns
    kernel(zt, fam.lo, fam.hi, fam.g1, fam.u1, fam.u2, fam.g2, fam.v1, fam.v2, out)
    zb = np.where(b >= 0, z[:, b], 0.0)
    d = z[:, a] - zb
    sd = np.sqrt(((Fp[a] - np.where((b >= 0)[:, None], Fp[b], 0.0)) ** 2).sum(axis=1))
    t = d / sd
    t = np.where(sign == 0, np.abs(t), sign * t)
    expected = np.stack([t[:, group == g].max(axis=1) for g in range(3)], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_marginal_rank_families_evaluate_each_pair_once():
    """Marginal rank sets contrast every ordered pair (j, k) in family j: the two rows of
    an unordered pair share one entry, with the mirrored row's weights negated."""
    from winrate.inference.joint import _family, _padded, _rank_rows

    K = 7
    Fp = _padded(np.random.default_rng(2).standard_normal((K, 5)))
    a, b, group, n_groups = _rank_rows(K, "marginal")
    fam = _family(Fp, a, b, np.zeros(a.size), group, n_groups)
    assert fam.cells == K * (K - 1) // 2
    assert np.all(fam.lo < fam.hi) and np.all(fam.g2 >= 0)
    np.testing.assert_array_equal(fam.g1, fam.lo)  # family j holds T_jk, k > j
    np.testing.assert_array_equal(fam.g2, fam.hi)
    np.testing.assert_array_equal(fam.v1, -fam.u1)  # |d| / sd either way round
    # one-sided rows of one family only: no partner
    one = _family(Fp, a[a < b], b[a < b], np.ones((a < b).sum()), group[a < b], n_groups)
    assert one.cells == K * (K - 1) // 2 and np.all(one.g2 < 0)


def test_draws_do_not_depend_on_chunk_size_and_seed_reproduces():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((6, 4))
    kw = dict(n_draws=10_000, seed=3, df=7)
    a = pairwise_differences(np.zeros(6), A @ A.T, chunk_size=1_000, **kw)
    b = pairwise_differences(np.zeros(6), A @ A.T, chunk_size=7_001, **kw)
    assert a.critical_value == b.critical_value and a.mc_se == b.mc_se
    np.testing.assert_array_equal(a.p_max_t, b.p_max_t)


def test_zero_variance_scores_are_excluded_and_warned():
    cov = np.diag([1.0, 1.0, 0.0])
    with warns_code("zero-variance-contrast"):
        res = simultaneous_intervals(np.array([0.0, 1.0, 2.0]), cov, n_draws=N_MC)
    sidak2 = stats.norm.ppf((1 + (1 - ALPHA) ** 0.5) / 2)
    assert abs(res.critical_value - sidak2) <= TOL_SE * res.mc_se
    assert res.low[2] == res.high[2] == 2.0 and res.p_adjusted[2] == 0.0


def test_duplicate_models_have_exact_difference():
    """Two copies of one model (perfectly correlated, equal scores) are never separated."""
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with warns_code("zero-variance-contrast"):
        res = rank_sets(np.array([1.0, 1.0, -20.0]), cov, n_draws=20_000)
    np.testing.assert_array_equal(res.low, [1, 1, 3])
    np.testing.assert_array_equal(res.high, [2, 2, 3])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(estimate=[1.0, 2.0], cov=np.eye(3)), "shape"),
        (dict(estimate=[[1.0, 2.0]], cov=np.eye(2)), "1-D"),
        (dict(estimate=[1.0, np.nan], cov=np.eye(2)), "non-finite"),
        (dict(estimate=[1.0, 2.0], cov=[[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
        (dict(estimate=[1.0, 2.0], cov=[[1.0, 2.0], [2.0, 1.0]]), "semi-definite"),
        (dict(estimate=[1.0, 2.0], cov=np.eye(2), alpha=1.5), "alpha"),
        (dict(estimate=[1.0, 2.0], cov=np.eye(2), df=0.5), "degrees of freedom"),
        (dict(estimate=[1.0, 2.0], cov=np.eye(2), n_draws=10), "n_draws"),
        (dict(estimate=[1.0, 2.0], cov=np.eye(2), method="bogus"), "method"),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(WinrateInputError, match=match):
        rank_sets(**kwargs)


def test_bad_tau_raises():
    with pytest.raises(WinrateInputError, match="tau"):
        tau_best(np.zeros(3), np.eye(3), tau=4)


def test_too_few_tail_draws_warn():
    with warns_code("monte-carlo-precision"):
        simultaneous_intervals(np.zeros(3), np.eye(3), alpha=0.01, n_draws=5_000)


# -------------------------------------------------- review fixes and independent oracles


def test_empty_family_gives_max_t_p_values_of_exact_differences():
    """Every contrast has zero variance: a zero difference has p = 1, a nonzero one p = 0
    (max |T| >= 0, so no simulated maximum is below 0)."""
    with warns_code("zero-variance-contrast"):
        res = simultaneous_intervals(np.array([0.0, 1.0]), np.zeros((2, 2)), n_draws=4000)
    np.testing.assert_array_equal(res.p_adjusted, [1.0, 0.0])
    with warns_code("zero-variance-contrast"):
        pairs = pairwise_differences(np.array([1.0, 1.0, 2.0]), np.ones((3, 3)), n_draws=4000)
    np.testing.assert_array_equal(pairs.p_max_t, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(pairs.p_value, [1.0, 0.0, 0.0])


def test_seed_none_uses_one_entropy_for_every_stepdown_step(monkeypatch):
    """The step-down makes its Gaussian draws once, from one entropy, and every step reads
    them: no step draws anew."""
    from winrate.inference import joint as inference

    seeds, made = [], []

    class Spy(inference._GaussianDraws):
        def __init__(self, F, seed, chunk_size, keep=False):
            seeds.append(seed)
            super().__init__(F, seed, chunk_size, keep)
            made.append(self)

    monkeypatch.setattr(inference, "_GaussianDraws", Spy)
    est, V = np.array([2.2, 0.0, -30.0]), np.eye(3) / 2
    res = rank_sets(est, V, method="simultaneous", seed=None, n_draws=20_000)
    assert res.n_steps >= 2 and len(seeds) == 1 and seeds[0] is not None
    assert made[0].made == res.n_draws
    # with that entropy the step-down sets are nested in the single-step ones
    single = rank_sets(est, V, method="simultaneous", stepdown=False, seed=seeds[0],
                       n_draws=20_000)
    assert np.all(single.low <= res.low) and np.all(res.high <= single.high)
    assert np.all(res.critical_value <= single.critical_value)


@pytest.mark.parametrize("K", [3, 6])
def test_max_t_adjusted_p_values_are_sidak_for_independent_scores(K):
    """Independent scores: P(max_a |Z_a| >= |t|) = 1 - (1 - p)^K with p the marginal
    two-sided p-value; tolerance 5 binomial MC SDs of a proportion over 200 000 draws."""
    rng = np.random.default_rng(K)
    var = rng.uniform(0.5, 2.0, K)
    est = rng.uniform(0.2, 3.5, K) * np.sqrt(var) * rng.choice([-1, 1], K)
    res = simultaneous_intervals(est, np.diag(var), n_draws=N_MC, seed=3)
    p = 2 * stats.norm.sf(np.abs(est) / np.sqrt(var))
    sidak = 1 - (1 - p) ** K
    tol = 5 * np.sqrt(sidak * (1 - sidak) / N_MC) + 1e-12
    assert np.all(np.abs(res.p_adjusted - sidak) <= tol), (res.p_adjusted, sidak)


def test_pairwise_max_t_p_values_match_direct_simulation():
    """p_max_t against a plain numpy simulation of max_{i<j} |T_ij| (independent stream);
    tolerance 5 MC SDs of the difference of two proportions."""
    rng = np.random.default_rng(11)
    K = 5
    A = rng.standard_normal((K, K))
    V = A @ A.T / K + 0.3 * np.eye(K)
    est = rng.normal(0, 4.0, K)
    res = pairwise_differences(est, V, n_draws=N_MC, seed=1)
    assert ((res.p_max_t > 0.01) & (res.p_max_t < 0.9)).sum() >= 3  # informative values
    i, j = np.triu_indices(K, 1)
    se = np.sqrt(V[i, i] + V[j, j] - 2 * V[i, j])
    Z = np.random.default_rng(99).multivariate_normal(np.zeros(K), V, size=N_MC)
    max_t = np.abs((Z[:, i] - Z[:, j]) / se).max(axis=1)
    direct = np.array([(max_t >= abs(t)).mean() for t in (est[i] - est[j]) / se])
    tol = 5 * np.sqrt(2 * direct * (1 - direct) / N_MC) + 1e-12
    assert np.all(np.abs(res.p_max_t - direct) <= tol), (res.p_max_t, direct)
    # one pair: the single-step max-T p-value is the marginal p-value
    two = pairwise_differences(est[:2], V[:2, :2], n_draws=N_MC, seed=1)
    p = two.p_value[0]
    assert abs(two.p_max_t[0] - p) <= 5 * np.sqrt(p * (1 - p) / N_MC)


def _romano_wolf_ranks(est, V, method, n=200_000, seed=5):
    """Plain step-down over one-sided hypotheses: 'up' rows (reject S_a <= S_b when
    T > c) and 'down' rows (reject S_a >= S_b when T < -c); each family's c is the 95%
    quantile of the max over its unrejected one-sided simulated statistics. Returns the
    rank bounds, every step's critical values and the statistics."""
    K = est.size
    if method == "marginal":
        rows = [(a, b, a) for a in range(K) for b in range(K) if a != b]
        n_fam = K
    else:
        rows = [(a, b, 0) for a in range(K) for b in range(a + 1, K)]
        n_fam = 1
    a, b, fam = (np.array(x) for x in zip(*rows, strict=True))
    se = np.sqrt(V[a, a] + V[b, b] - 2 * V[a, b])
    T = (est[a] - est[b]) / se
    Z = np.random.default_rng(seed).multivariate_normal(np.zeros(K), V, size=n)
    Tsim = (Z[:, a] - Z[:, b]) / se
    up = np.zeros(a.size, bool)
    down = np.zeros(a.size, bool)
    steps = []
    while True:
        crit = np.full(n_fam, np.inf)
        for f in range(n_fam):
            cols = [Tsim[:, h] for h in np.flatnonzero(fam == f) if not up[h]]
            cols += [-Tsim[:, h] for h in np.flatnonzero(fam == f) if not down[h]]
            if cols:
                mx = np.max(np.column_stack(cols), axis=1)
                crit[f] = np.sort(mx)[int(np.ceil(0.95 * n)) - 1]
        steps.append(crit)
        new_up = ~up & (T > crit[fam])
        new_down = ~down & (T < -crit[fam])
        if not (new_up.any() or new_down.any()):
            break
        up |= new_up
        down |= new_down
    beaten = np.zeros(K, int)  # others shown better
    beats = np.zeros(K, int)  # others shown worse
    for h in range(a.size):
        if up[h]:
            beats[a[h]] += 1
            if method == "simultaneous":
                beaten[b[h]] += 1
        if down[h]:
            beaten[a[h]] += 1
            if method == "simultaneous":
                beats[b[h]] += 1
    return 1 + beaten, K - beats, steps, T


@pytest.mark.parametrize("method", ["marginal", "simultaneous"])
def test_stepdown_rank_sets_match_plain_romano_wolf(method):
    rng = np.random.default_rng(2)
    checked = multi_step = 0
    for _ in range(12):
        K = int(rng.integers(3, 6))
        A = rng.standard_normal((K, K))
        V = A @ A.T / K + 0.2 * np.eye(K)
        est = rng.normal(0, 2.0, K)
        low, high, steps, T = _romano_wolf_ranks(est, V, method)
        crits = np.concatenate(steps)
        gap = np.abs(np.abs(T)[:, None] - crits[np.isfinite(crits)][None, :]).min()
        if gap < 0.05:  # a statistic within MC error of a critical value: skip
            continue
        res = rank_sets(est, V, method=method, seed=8)
        np.testing.assert_array_equal(res.low, low)
        np.testing.assert_array_equal(res.high, high)
        assert res.n_steps == len(steps)
        checked += 1
        multi_step += len(steps) > 1
    assert checked >= 6 and multi_step >= 2, (checked, multi_step)


# ------------------------------------------------------------------ adaptive draws


def _correlated_cov(K: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((K, K + 3))
    return A @ A.T / K


@pytest.mark.parametrize("df", [None, 9])
@pytest.mark.parametrize("family", ["simultaneous", "pairwise", "ranks"])
def test_adaptive_critical_value_is_within_its_mc_se_of_a_high_draw_reference(family, df):
    """Draws stop once the MC SE is at most the tolerance times the critical value; the
    critical value then lies within 4 combined MC SEs of a 400 000-draw reference from
    another seed."""
    K = 25
    est, V = np.linspace(0, 1, K), _correlated_cov(K, 5)
    run = {"simultaneous": simultaneous_intervals, "pairwise": pairwise_differences,
           "ranks": lambda *a, **k: rank_sets(*a, stepdown=False, **k)}[family]
    fast = run(est, V, df=df, seed=1)
    ref = run(est, V, df=df, seed=2, n_draws=400_000, mc_tolerance=None)
    assert ref.n_draws == 400_000 and ref.mc_tolerance is None
    assert fast.mc_tolerance == DEFAULT_MC_TOLERANCE
    crit = np.asarray(fast.critical_value)
    assert np.all(np.asarray(fast.mc_se) <= DEFAULT_MC_TOLERANCE * crit)
    assert fast.n_draws < DEFAULT_DRAWS
    gap = np.abs(crit - ref.critical_value)
    assert np.all(gap <= 4 * np.hypot(fast.mc_se, ref.mc_se))


def test_a_tight_tolerance_adds_draws_up_to_the_cap():
    est, V = np.zeros(8), _correlated_cov(8, 1)
    loose = simultaneous_intervals(est, V, mc_tolerance=0.01)
    tight = simultaneous_intervals(est, V, mc_tolerance=0.003)
    capped = simultaneous_intervals(est, V, mc_tolerance=1e-6, n_draws=30_000)
    assert loose.n_draws < tight.n_draws
    assert tight.mc_se <= 0.003 * tight.critical_value < loose.mc_se
    assert capped.n_draws == 30_000 and capped.mc_se > 1e-6


@pytest.mark.parametrize("keep", [False, True])
def test_draws_extended_in_rounds_equal_one_batch(keep):
    from winrate.inference.joint import _family, _GaussianDraws, _MaxDraws

    K = 5
    F = np.linalg.cholesky(_correlated_cov(K, 3))
    i, j = np.triu_indices(K, 1)
    zeros = np.zeros(i.size, int)
    gaussian = _GaussianDraws(F, seed=4, chunk_size=700, keep=keep)
    rounds = _MaxDraws(gaussian, _family(gaussian.Fp, i, j, zeros, zeros, 1))
    for n in (1000, 2500, 6000):
        rounds.extend(n)
    batch = _GaussianDraws(F, seed=4, chunk_size=None)
    one = _MaxDraws(batch, _family(batch.Fp, i, j, zeros, zeros, 1)).extend(6000)
    np.testing.assert_array_equal(rounds.draws, one)
    if keep:  # a second family over the kept draws reads the same draws again
        again = _MaxDraws(gaussian, _family(gaussian.Fp, i, j, zeros, zeros, 1)).extend(6000)
        np.testing.assert_array_equal(again, one)


def test_rank_stepdown_reuses_the_first_steps_draws():
    est, V = np.linspace(0, 3, 12), _correlated_cov(12, 7) / 4
    single = rank_sets(est, V, stepdown=False)
    steps = rank_sets(est, V)
    assert steps.n_steps >= 2 and steps.n_draws == single.n_draws
    assert np.all(steps.critical_value <= single.critical_value)


@pytest.mark.parametrize("df", [1, 4, 30])
def test_t_reference_of_one_score_is_students_t(df):
    """One score: max |T| = |T| ~ |t(df)|, so the chi-integrated critical value is the t
    quantile (within 4 MC SEs) and the max-T p-value the two-sided t p-value."""
    from scipy import special

    sim = simultaneous_intervals(np.array([2.1]), np.eye(1), df=df, seed=3)
    assert abs(sim.critical_value - special.stdtrit(df, 0.975)) <= 4 * sim.mc_se
    assert sim.p_adjusted[0] == pytest.approx(2 * special.stdtr(df, -2.1), abs=0.004)


def _plain_t_quantile(maxima: np.ndarray, alpha: float, nodes: np.ndarray):
    """Oracle, one family at a time in plain numpy: bisection of the chi-integrated CDF
    ``mean_j P(M <= c s_j)`` and the delta-method SE from the per-draw probabilities."""
    m = np.sort(maxima)

    def cdf(c):
        return np.searchsorted(m, c * nodes, side="right").mean() / m.size

    lo, hi = 0.0, max(m[-1], 1.0) / nodes[0] * 2
    while hi - lo > 1e-9 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 1 - alpha else (lo, mid)
    per_draw = 1 - np.searchsorted(nodes, m / hi, side="left") / nodes.size
    slope = (cdf(1.01 * hi) - cdf(0.99 * hi)) / (0.02 * hi)
    return hi, per_draw.std() / np.sqrt(m.size) / slope


@pytest.mark.parametrize("df", [1.0, 3.5, 9.0, 120.0])
def test_t_reference_quantiles_equal_a_plain_bisection_per_family(df):
    """The numba kernel that finds every family's t-reference critical value at once gives
    the plain per-family bisection's value exactly, and its MC SE to round-off; a family
    with no contrast gets NaN."""
    from winrate.inference.joint import _chi_scale_nodes, _quantiles
    from winrate.variance.reference import EMPTY_FAMILY

    rng = np.random.default_rng(int(df * 10))
    draws = np.abs(rng.standard_normal((3_000, 12)) * rng.uniform(0.5, 3, 12)).astype(np.float32)
    draws[:, 5] = -1e30  # an empty family
    crit, se = _quantiles(draws, 0.05, df)
    nodes = _chi_scale_nodes(df)
    for g in range(draws.shape[1]):
        if draws[:, g].max() < EMPTY_FAMILY:
            assert np.isnan(crit[g]) and np.isnan(se[g])
            continue
        want_crit, want_se = _plain_t_quantile(draws[:, g].astype(float), 0.05, nodes)
        assert crit[g] == want_crit
        assert se[g] == pytest.approx(want_se, rel=1e-12)


# ----------------------------------------------------------------- notes of joint inference


def test_the_bonferroni_fallback_note_reaches_the_result_summary_json_and_stderr(
        simulated_log_file, tmp_path, capsys, monkeypatch):
    """Over the work budget rank sets fall back to Bonferroni with 0 draws; the note that
    says so is on the result, in ``summary()``, in the JSON's notes and on stderr, as every
    other note (the budget is lowered so that a small log exceeds it, as 1,000 models do)."""
    import json

    from winrate import analyze
    from winrate.cli import main
    from winrate.inference import joint
    from winrate.settings import Joint, Variance

    monkeypatch.setattr(joint, "MC_WORK", 1_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(simulated_log_file, variance=Variance(method="sandwich"),
                         joint=Joint(ranks=True))
    assert result.joint.ranks.n_draws == 0
    assert "bonferroni-fallback" in result.notes.codes
    assert "(bonferroni-fallback)" in str(result.summary())
    out = tmp_path / "out.json"
    assert main(["leaderboard", str(simulated_log_file), "--ranks", "--method", "sandwich",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["monte_carlo"]["ranks"]["n_draws"] == 0
    assert "bonferroni-fallback" in [note["code"] for note in doc["notes"]]
    assert "[bonferroni-fallback]" in capsys.readouterr().err
