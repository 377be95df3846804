"""Fast paths against the simple computations they replace (oracle tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse.csgraph import connected_components

from winrate.data import ComparisonLog
from winrate.diagnostics import comparisons_per_cluster, component_labels
from winrate.leaderboard import degenerate_pair_cov, fit


@pytest.mark.parametrize("seed", range(6))
def test_component_labels_partition_like_scipy(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 40))
    upper = np.triu(rng.random((k, k)) < rng.choice([0.02, 0.08, 0.3]), 1)
    adjacency = upper | upper.T
    labels = component_labels(adjacency)
    n_expected, expected = connected_components(adjacency, directed=False)
    assert labels.max() + 1 == n_expected
    # the same partition: labels map one-to-one onto scipy's
    pairs = set(zip(labels.tolist(), expected.tolist(), strict=True))
    assert len(pairs) == n_expected
    assert labels[0] == 0 and np.all(np.diff(np.maximum.accumulate(labels)) <= 1)


def test_wilson_floor_equals_a_sum_of_outer_products():
    """Every single-outcome pair (lo, hi) adds var * v v^T, v = w_lo,hi e_lo - w_hi,lo e_hi,
    built here one pair at a time (with a baseline the reported models are a subset)."""
    rng = np.random.default_rng(3)
    a = np.array([0, 0, 1, 1, 2, 3, 0, 2, 3, 1, 0])
    b = np.array([1, 1, 2, 2, 3, 0, 2, 0, 1, 3, 3])
    score = np.array([1, 1, 0, 0, 1, 1, 0.5, 1, 0, 1, 0.5])
    log = ComparisonLog.from_arrays(a, b, score, frequency=rng.integers(1, 4, a.size))
    for baseline in (None, "0"):
        board = fit(log, baseline=baseline)
        cov, degenerate = degenerate_pair_cov(board, log.frequency, 1.96)
        assert degenerate.sum() >= 3
        expected = np.zeros((log.n_models,) * 2)
        z = 1.96
        for p in np.flatnonzero(degenerate):
            lo, hi = board.pairs[p]
            n, psi = board.counts[lo, hi], board.psi[lo, hi]
            centre = (psi + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z / (1 + z**2 / n) * np.sqrt(psi * (1 - psi) / n + z**2 / (4 * n**2))
            var = (max(psi - centre + half, centre + half - psi) / z) ** 2
            v = np.zeros(log.n_models)
            v[lo], v[hi] = board.weights[lo, hi], -board.weights[hi, lo]
            expected += var * np.outer(v, v)
        keep = board.codes
        np.testing.assert_allclose(cov, expected[np.ix_(keep, keep)], rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize(("n", "k", "n_clusters"), [(500, 6, 40), (300, 90, 280), (50, 3, 1)])
def test_comparisons_per_cluster_against_a_pandas_groupby(n, k, n_clusters):
    """Both kernel paths (a bit per (model, cluster) when K G <= 64 n, else rows sorted by
    cluster; the second case here) against distinct (model, cluster) pairs counted by
    pandas, with frequency weights."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k if k > 1 else a
    codes = rng.integers(0, n_clusters, n)
    weight = rng.integers(1, 5, n).astype(float)
    frame = pd.DataFrame({"model": np.concatenate([a, b]), "cluster": np.tile(codes, 2),
                          "w": np.tile(weight, 2)})
    grouped = frame.groupby("model")
    expected = (grouped["w"].sum() / grouped["cluster"].nunique()).reindex(range(k + 2))
    got = comparisons_per_cluster(a, b, codes, k + 2, weight)  # two models never seen: NaN
    np.testing.assert_allclose(got, expected.to_numpy(), rtol=1e-15)
    unweighted = comparisons_per_cluster(a, b, codes, k + 2, None)
    counts = grouped.size() / grouped["cluster"].nunique()
    np.testing.assert_allclose(unweighted, counts.reindex(range(k + 2)).to_numpy(), rtol=1e-15)
