"""Cluster covariances against statsmodels and a brute-force double loop."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import statsmodels.api as sm

from tests.note_codes import warns_code
from winrate.errors import WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.variance.sandwich import (
    _cluster_meat,
    cluster_cov,
    multiway_cluster_cov,
    naive_cov,
    repair_psd,
)


def _score_map(board):
    """M with S = const + M psi_pairs: column p = w_ab e_a - w_ba e_b for pair p = (a, b)."""
    m = np.zeros((len(board.models), len(board.pairs)))
    for p, (a, b) in enumerate(board.pairs):
        m[a, p] = board.weights[a, b]
        m[b, p] = -board.weights[b, a]
    return m


def statsmodels_score_cov(log, board, groups, correction):
    """Cluster covariance of S from a saturated pair-dummy regression in statsmodels.

    OLS of the lower model's score on pair dummies gives psi_pairs; S is linear in them.
    statsmodels' use_correction multiplies every term by G/(G-1) * (N-1)/(N-k): the
    (N-1)/(N-k) factor, which winrate does not use, is divided out.
    """
    low_first = log.model_a < log.model_b
    y = np.where(low_first, log.score, 1 - log.score)
    x = np.zeros((log.n_rows, len(board.pairs)))
    x[np.arange(log.n_rows), board.pair] = 1.0
    group_arg = groups[0] if len(groups) == 1 else np.column_stack(groups)
    fitted = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={
        "groups": group_arg, "use_correction": correction == "cr1", "df_correction": False})
    cov_psi = fitted.cov_params()
    if correction == "cr1":
        n, k = x.shape
        cov_psi = cov_psi * (n - k) / (n - 1)
    m = _score_map(board)
    return m @ cov_psi @ m.T


def brute_force_cov(dense_influence, groups, correction):
    """CGM inclusion-exclusion by explicit double loops over rows."""
    n, k = dense_influence.shape
    total = np.zeros((k, k))
    for order in range(1, len(groups) + 1):
        for dims in itertools.combinations(range(len(groups)), order):
            same = np.ones((n, n), bool)
            for d in dims:
                same &= groups[d][:, None] == groups[d][None, :]
            n_groups = len({tuple(groups[d][r] for d in dims) for r in range(n)})
            factor = n_groups / (n_groups - 1) if correction == "cr1" else 1.0
            term = np.zeros((k, k))
            for r, s in zip(*np.nonzero(same), strict=True):
                term += np.outer(dense_influence[r], dense_influence[s])
            total += (-1) ** (order + 1) * factor * term
    return total


@pytest.mark.parametrize("correction", ["none", "cr1"])
@pytest.mark.parametrize("weights", ["uniform", "count"])
def test_one_way_matches_statsmodels(unbalanced_log, correction, weights):
    board = fit(unbalanced_log, weights)
    for axis in ("prompt", "judge"):
        groups = unbalanced_log.axes[axis].codes
        ours = cluster_cov(board.influence, groups, correction)
        oracle = statsmodels_score_cov(unbalanced_log, board, [groups], correction)
        np.testing.assert_allclose(ours, oracle, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("correction", ["none", "cr1"])
def test_two_way_matches_statsmodels(unbalanced_log, correction):
    board = fit(unbalanced_log)
    groups = [unbalanced_log.axes["prompt"].codes, unbalanced_log.axes["judge"].codes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = multiway_cluster_cov(board.influence, groups, correction)
    raw = sum(sign * c for (_, _, sign), c in zip(result.terms, result.term_covs, strict=True))
    oracle = statsmodels_score_cov(unbalanced_log, board, groups, correction)
    np.testing.assert_allclose(raw, oracle, rtol=1e-10, atol=1e-14)
    if not result.psd_repaired:
        np.testing.assert_allclose(result.cov, oracle, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("correction", ["none", "cr1"])
def test_three_way_matches_brute_force(correction):
    from tests.conftest import random_log

    log = random_log(7, n=120)
    board = fit(log)
    third = np.random.default_rng(3).integers(0, 4, log.n_rows)
    groups = [log.axes["prompt"].codes, log.axes["judge"].codes, third]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = multiway_cluster_cov(board.influence, groups, correction)
    raw = sum(sign * c for (_, _, sign), c in zip(result.terms, result.term_covs, strict=True))
    np.testing.assert_allclose(raw, brute_force_cov(board.influence.toarray(), groups,
                                                    correction), rtol=1e-10, atol=1e-14)
    assert len(result.terms) == 7


def test_row_clustering_is_naive(unbalanced_log):
    infl = fit(unbalanced_log).influence
    n = unbalanced_log.n_rows
    np.testing.assert_allclose(
        multiway_cluster_cov(infl, [np.arange(n)], correction="none").cov, naive_cov(infl),
        rtol=1e-12, atol=1e-16)
    dense = infl.toarray()
    np.testing.assert_allclose(naive_cov(infl), dense.T @ dense, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(naive_cov(infl, "cr1"), n / (n - 1) * dense.T @ dense,
                               rtol=1e-12)


def test_nested_dimension_collapses_to_coarser(unbalanced_log):
    """A dimension nested in another: V_fine + V_coarse - V_fine = V_coarse."""
    infl = fit(unbalanced_log).influence
    prompt = unbalanced_log.axes["prompt"].codes
    coarse = prompt // 5
    for correction in ("none", "cr1"):
        both = multiway_cluster_cov(infl, [prompt, coarse], correction).cov
        np.testing.assert_allclose(both, cluster_cov(infl, coarse, correction),
                                   rtol=1e-10, atol=1e-15)


def test_sparse_and_dense_meat_agree_and_labels_are_free(unbalanced_log):
    infl = fit(unbalanced_log).influence
    prompt = unbalanced_log.axes["prompt"].codes
    string_labels = np.array([f"p{c}" for c in prompt], dtype=object)
    np.testing.assert_allclose(_cluster_meat(infl, prompt), _cluster_meat(infl.toarray(), prompt),
                               rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(_cluster_meat(infl, string_labels), _cluster_meat(infl, prompt),
                               rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(_cluster_meat(infl, prompt * 1_000_003 - 7),
                               _cluster_meat(infl, prompt), rtol=1e-12, atol=1e-16)


def test_frequency_weighted_naive_equals_expanded():
    rng = np.random.default_rng(5)
    u = rng.normal(size=(30, 4))
    freq = rng.integers(1, 5, 30).astype(float)
    expanded = np.repeat(u, freq.astype(int), axis=0)
    np.testing.assert_allclose(naive_cov(u * freq[:, None], frequency=freq),
                               expanded.T @ expanded, rtol=1e-12)


def test_psd_repair_clips_and_warns():
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    indefinite = (basis * np.array([2.0, 1.0, 0.5, -0.3])) @ basis.T
    repaired, min_eig, done = repair_psd(indefinite)
    assert done and min_eig == pytest.approx(-0.3)
    assert np.linalg.eigvalsh(repaired).min() > -1e-12
    np.testing.assert_allclose(repaired, (basis * np.array([2.0, 1.0, 0.5, 0])) @ basis.T,
                               atol=1e-12)
    # A crossed design with tiny clusters produces an indefinite two-way estimate.
    u = rng.normal(size=(40, 3))
    g1, g2 = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    with warns_code("psd-repaired"):
        for _ in range(200):
            result = multiway_cluster_cov(u, [g1, g2], "none")
            if result.psd_repaired:
                break
            u = rng.normal(size=(40, 3))
    assert result.psd_repaired


def test_bad_arguments():
    u = np.ones((4, 2))
    with pytest.raises(ValueError, match="correction"):
        cluster_cov(u, [0, 0, 1, 1], correction="cr3")
    with pytest.raises(ValueError, match="rows"):
        cluster_cov(u, [0, 1, 1], correction="none")
    with pytest.raises(ValueError, match="missing"):
        cluster_cov(u, np.array(["a", None, "b", "b"], dtype=object), correction="none")
    with pytest.raises(ValueError, match="at least one"):
        multiway_cluster_cov(u, [])


def test_single_cluster_is_an_error_not_nan():
    u = np.random.default_rng(1).normal(size=(6, 2))
    for correction in ("none", "cr1"):
        with pytest.raises(ValueError, match="single cluster"):
            cluster_cov(u, np.zeros(6, int), correction)
        with pytest.raises(ValueError, match=r"groups\[1\] form a single cluster"):
            multiway_cluster_cov(u, [np.arange(6) % 3, np.zeros(6, int)], correction)


def test_intersection_of_many_large_axes_does_not_overflow():
    """Three axes with ~n distinct labels each: the mixed-radix code would pass 2**63."""
    rng = np.random.default_rng(2)
    n = 300
    u = rng.normal(size=(n, 3))
    axes = [rng.permutation(n) * 10**6 + 7 for _ in range(3)]
    shared = rng.integers(0, 5, n)
    axes[2] = shared  # pairs of the first two are unique, so every intersection is a row
    result = multiway_cluster_cov(u, axes, "none")
    expected = brute_force_cov(u, [np.asarray(a) for a in axes], "none")
    np.testing.assert_allclose(
        sum(sign * c for (_, _, sign), c in zip(result.terms, result.term_covs, strict=True)),
        expected, rtol=1e-10, atol=1e-12)
