"""The small-sample floor of single-outcome pairs (winrate.estimators.small_sample) and the
empirical-Bayes Bradley-Terry fit behind it, against independent computations."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats
from scipy.special import expit
from statsmodels.stats.proportion import proportion_confint

from winrate import analyze
from winrate.errors import WinrateWarning
from winrate.estimators.bradley_terry_kernels import (
    _pairs_from_counts,
    empirical_bayes_probabilities,
    laplace_evidence,
)
from winrate.estimators.small_sample import beta_binomial_floor, wilson_floor
from winrate.estimators.win_rate_kernels import pairwise_table
from winrate.io.logs import ComparisonLog
from winrate.settings import Joint, Variance

Z = stats.norm.ppf(0.975)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.floats(0.01, 0.99), st.sampled_from([0.0, 0.5, 1.0]),
       st.floats(0.5, 10))
def test_beta_binomial_floor_is_the_posterior_mean_by_quadrature(n, prior_mean, share, m):
    """E[p(1 - p) | x] / n under the Beta(m pi, m (1 - pi)) prior, integrated numerically
    against the unnormalised posterior p^(a - 1) (1 - p)^(b - 1)."""
    x = share * n
    a, b = m * prior_mean + x, m * (1 - prior_mean) + n - x

    def density(p):
        return np.exp((a - 1) * np.log(p) + (b - 1) * np.log1p(-p))

    mass = integrate.quad(density, 0, 1, limit=200)[0]
    moment = integrate.quad(lambda p: p * (1 - p) * density(p), 0, 1, limit=200)[0]
    assert beta_binomial_floor(prior_mean, x, n, m) == pytest.approx(moment / mass / n,
                                                                     rel=1e-6)


@pytest.mark.parametrize("n", [1, 2, 7, 60])
@pytest.mark.parametrize("won", [True, False])
def test_wilson_floor_reaches_the_far_wilson_bound_of_statsmodels(n, won):
    """The floor's SE times z is the distance to the far end of statsmodels' Wilson
    interval of n wins (or no win) in n."""
    x = n if won else 0
    low, high = proportion_confint(x, n, alpha=0.05, method="wilson")
    psi = x / n
    far = max(psi - low, high - psi)
    assert np.sqrt(wilson_floor(psi, n, Z)) * Z == pytest.approx(far, rel=1e-12)


def _independent_evidence(a, b, score, variance):
    """Laplace log evidence of Bernoulli rows (score: a's half-tie outcome) under
    theta ~ N(0, variance I), from a BFGS mode and the rows' own information matrix."""
    k = int(max(a.max(), b.max())) + 1
    design = np.zeros((len(a), k))
    design[np.arange(len(a)), a] = 1.0
    design[np.arange(len(a)), b] = -1.0

    def negative_log_posterior(theta):
        eta = design @ theta
        loglik = -(score * np.logaddexp(0, -eta) + (1 - score) * np.logaddexp(0, eta)).sum()
        gradient = design.T @ (score - expit(eta))
        return -(loglik - theta @ theta / (2 * variance)), -(gradient - theta / variance)

    found = optimize.minimize(negative_log_posterior, np.zeros(k), jac=True, method="BFGS",
                              options={"gtol": 1e-11})
    theta = found.x
    p = expit(design @ theta)
    info = design.T @ (design * (p * (1 - p))[:, None]) + np.eye(k) / variance
    evidence = (-found.fun - k / 2 * np.log(variance) - np.linalg.slogdet(info)[1] / 2)
    return evidence, theta


def _lopsided_rows(seed=5, k=6, n=240, spread=1.5):
    rng = np.random.default_rng(seed)
    ability = spread * rng.standard_normal(k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    win = rng.random(n) < expit(ability[a] - ability[b])
    tie = rng.random(n) < 0.1
    return a, b, np.where(tie, 0.5, win.astype(float))


def test_laplace_evidence_matches_a_row_level_computation():
    """Our evidence (pair totals, Newton) differs from the row-level one (BFGS, rows'
    information) by the same constant at every prior variance, and the modes agree."""
    a, b, score = _lopsided_rows()
    log = ComparisonLog.from_arrays(a, b, score)
    psi, counts, *_ = pairwise_table(log)
    predicted = empirical_bayes_probabilities(psi, counts)
    assert predicted is not None
    data = _pairs_from_counts(psi, counts, np.arange(log.n_models))
    # the log's model codes are the integers in order, so thetas line up
    assert list(log.models.astype(int)) == list(range(log.n_models))
    gaps = []
    for variance in (0.05, 0.5, 3.0, 20.0):
        ours, theta = laplace_evidence(np.log(variance), data)
        theirs, theta_rows = _independent_evidence(a, b, score, variance)
        np.testing.assert_allclose(theta, theta_rows, atol=1e-6)
        gaps.append(ours - theirs)
    # the row likelihood counts each Bernoulli row, the pair likelihood the same sums
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-7)


def test_prior_variance_maximises_the_independent_evidence():
    """The chosen tau^2 beats its neighbours (x 0.9 and x 1.1) on the row-level evidence,
    and the predicted probabilities are those of the row-level mode at that tau^2."""
    a, b, score = _lopsided_rows(seed=8)
    log = ComparisonLog.from_arrays(a, b, score)
    psi, counts, *_ = pairwise_table(log)
    pi, tau2 = empirical_bayes_probabilities(psi, counts)
    at = _independent_evidence(a, b, score, tau2)
    for factor in (0.9, 1.1):
        assert at[0] > _independent_evidence(a, b, score, tau2 * factor)[0]
    theta = at[1]
    np.testing.assert_allclose(pi, expit(theta[:, None] - theta[None, :]), atol=1e-6)


def test_the_scale_comes_from_the_largest_strong_component_or_nowhere():
    """A fully ordered log (the lower code always wins) has no cycle: the data cannot say
    how far apart the models are, so there is no prediction. A model that never lost,
    added to a log with cycles, is fitted but does not set the prior variance."""
    a, b = np.triu_indices(5, k=1)
    ordered = ComparisonLog.from_arrays(np.repeat(a, 2), np.repeat(b, 2), np.ones(20))
    psi, counts, *_ = pairwise_table(ordered)
    assert empirical_bayes_probabilities(psi, counts) is None

    a, b, score = _lopsided_rows(seed=2, k=5)
    base = ComparisonLog.from_arrays(a, b, score)
    champion = ComparisonLog.from_arrays(np.append(a, [5] * 5), np.append(b, range(5)),
                                         np.append(score, np.ones(5)))
    pi_base, tau_base = empirical_bayes_probabilities(*pairwise_table(base)[:2])
    pi_champion, tau_champion = empirical_bayes_probabilities(*pairwise_table(champion)[:2])
    assert tau_champion == pytest.approx(tau_base, rel=1e-3)
    assert (pi_champion[5, :5] > 0.5).all() and (pi_champion[5, :5] < 1 - 1e-6).all()


def test_a_fully_ordered_log_never_yields_certain_ranks():
    """Six models, every pair twice, the better one always wins: every pair is degenerate
    and the log has no cycle, so the Wilson floor applies and no rank is certain."""
    a, b = np.triu_indices(6, k=1)
    a, b = np.repeat(a, 2), np.repeat(b, 2)
    log = ComparisonLog.from_arrays(a, b, np.ones(a.size), prompt=np.arange(a.size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(log, cluster="prompt", joint=Joint(ranks=True))
    assert (result.se > 0.1).all()
    assert (result.joint.rank_low < result.joint.rank_high).all()
    assert "far Wilson bound" in result.notes.only("small-sample-floor")[0]  # the floor's kind


def test_far_apart_pairs_get_a_smaller_floor_than_close_ones():
    """Two pairs with the same outcomes (3 wins in 3): the one the rest of the log places
    far apart gets a smaller floor than the close one, and both stay positive."""
    rng = np.random.default_rng(0)
    ability = np.array([0.0, 0.2, 3.0, 3.2, 6.0])
    a = rng.integers(0, 5, 2000)
    b = (a + rng.integers(1, 5, 2000)) % 5
    score = (rng.random(2000) < expit(ability[a] - ability[b])).astype(float)
    psi, counts, *_ = pairwise_table(ComparisonLog.from_arrays(a, b, score))
    pi, _ = empirical_bayes_probabilities(psi, counts)
    close = beta_binomial_floor(pi[1, 0], 3.0, 3.0)
    far = beta_binomial_floor(pi[4, 0], 3.0, 3.0)
    assert 0 < far < close / 5


@pytest.mark.parametrize("peak", [-6.0, -1.3, 0.0, 2.5, 6.5])
def test_golden_section_finds_the_maximum_of_scipy_bounded_brent(peak):
    """Against scipy's bounded Brent search on smooth unimodal curves, and at the ends for
    a curve that rises to them."""
    from winrate.estimators.bradley_terry_kernels import golden_section_max

    def curve(x):
        return -np.log1p((x - peak) ** 2) + 0.1 * x

    ours = golden_section_max(curve, -7, 7, tol=1e-6)
    theirs = optimize.minimize_scalar(lambda x: -curve(x), bounds=(-7, 7), method="bounded",
                                      options={"xatol": 1e-8}).x
    assert ours == pytest.approx(theirs, abs=1e-5)
    assert golden_section_max(lambda x: x, -7, 7) == pytest.approx(7, abs=1e-3)
    assert golden_section_max(lambda x: -x, -7, 7) == pytest.approx(-7, abs=1e-3)


def test_analyze_carries_the_floor_it_added():
    """A model with a single comparison (a win) has no variance of its own: its whole
    variance is the floor of its one pair, Var = E[p(1 - p) | 1 of 1] under the
    empirical-Bayes prior (weight 1 on its only opponent); analyze reports that floor in
    ``small_sample_floor``, added once to both covariances."""
    a, b, score = _lopsided_rows(seed=3, k=4, spread=0.3)
    log = ComparisonLog.from_arrays(np.append(a, 4), np.append(b, 0), np.append(score, 1.0),
                                    prompt=np.arange(a.size + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        run = analyze(log, cluster="prompt", variance=Variance("sandwich"))
    pi, _ = empirical_bayes_probabilities(*pairwise_table(log)[:2])
    expected = beta_binomial_floor(pi[4, 0], 1.0, 1.0)
    floor = run.small_sample_floor
    assert floor[4, 4] == pytest.approx(expected, rel=1e-12)
    assert run.cov[4, 4] == pytest.approx(expected, rel=1e-12)
    assert run.cov_naive[4, 4] == pytest.approx(expected, rel=1e-12)
    bt = analyze(log, cluster="prompt", model="bt", prior=1.0, variance=Variance("sandwich"))
    assert not bt.small_sample_floor.any()


def _ordered_log():
    """Six models, every pair twice, the better one always wins: the Wilson floor applies."""
    a, b = np.triu_indices(6, k=1)
    a, b = np.repeat(a, 2), np.repeat(b, 2)
    return ComparisonLog.from_arrays(a, b, np.ones(a.size), prompt=np.arange(a.size))


@pytest.mark.parametrize("alpha", [0.01, 0.2])
def test_the_covariance_does_not_depend_on_the_level(alpha):
    """The variance is a property of the estimate, the level only of the interval: on a log
    where the Wilson floor is active, the covariance at any alpha is the one at 0.05 to
    the bit, and ``conf_int(alpha)`` of the default analysis is a fresh analysis' at alpha."""
    log = _ordered_log()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        base = analyze(log, cluster="prompt", variance=Variance(method="sandwich"))
        other = analyze(log, cluster="prompt", variance=Variance(method="sandwich"),
                        alpha=alpha)
    assert base.small_sample_floor.any()
    np.testing.assert_array_equal(other.cov, base.cov)
    np.testing.assert_array_equal(other.cov_naive, base.cov_naive)
    fresh = other.to_frame()[["ci_low", "ci_high"]].set_axis(["lower", "upper"], axis=1)
    pd.testing.assert_frame_equal(base.conf_int(alpha=alpha), fresh, check_names=False)


def _sparse_design(k: int, rows: int, seed: int = 0):
    """k models, random pairs mostly compared once, Bradley-Terry outcomes."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, rows)
    b = (a + rng.integers(1, k, rows)) % k
    ability = rng.normal(0, 1, k)
    score = (rng.random(rows) < expit(ability[a] - ability[b])).astype(float)
    return pairwise_table(ComparisonLog.from_arrays(a, b, score))[:2]


def test_the_sparse_empirical_bayes_fit_agrees_with_the_dense_one(monkeypatch):
    """Beyond DENSE_EB_MODELS models the fit runs sparse (conjugate-gradient Newton steps,
    a stochastic Lanczos log-determinant), which scales to thousands of models; forced on
    300 models it finds the dense fit's prior variance and probabilities up to its
    quadrature error."""
    from winrate.estimators import bradley_terry_kernels as kernels

    psi, counts = _sparse_design(300, 1500)
    pi_dense, tau_dense = empirical_bayes_probabilities(psi, counts)
    monkeypatch.setattr(kernels, "DENSE_EB_MODELS", 0)
    pi_sparse, tau_sparse = empirical_bayes_probabilities(psi, counts)
    assert tau_sparse == pytest.approx(tau_dense, rel=1e-2)
    np.testing.assert_allclose(pi_sparse, pi_dense, atol=2e-3)


def test_stochastic_lanczos_log_determinant_matches_numpy():
    """On the ridge-penalised information of a sparse design, against slogdet."""
    import scipy.sparse as sp

    from winrate.estimators.bradley_terry_kernels import slq_logdet

    rng = np.random.default_rng(1)
    k, p = 400, 2000
    lo, hi = rng.integers(0, k, p), rng.integers(0, k, p)
    keep = lo != hi
    w = rng.uniform(0.05, 0.25, keep.sum())
    rows = np.concatenate([lo[keep], hi[keep], lo[keep], hi[keep]])
    cols = np.concatenate([lo[keep], hi[keep], hi[keep], lo[keep]])
    info = sp.csr_array((np.concatenate([w, w, -w, -w]), (rows, cols)), shape=(k, k))
    info = (info + sp.eye_array(k) / 0.5).tocsr()
    exact = np.linalg.slogdet(info.toarray())[1]
    assert slq_logdet(info) == pytest.approx(exact, rel=5e-3)  # a seeded Monte-Carlo estimate
    assert slq_logdet(info) == slq_logdet(info)  # seeded probes: deterministic
