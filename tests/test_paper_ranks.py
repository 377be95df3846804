"""The paper's rank-set step (scripts/paper/rank_sets.py): the measures it reads off rank
sets, against sets built by brute force from simultaneous intervals of all pairwise
differences (Mogstad, Romano, Shaikh & Wilhelm 2024: ``low_j = 1 + #{k significantly better
than j}``, ``high_j = K - #{k significantly worse}``) with an independent Monte-Carlo
critical value, and the covariance scaling used for Chatbot Arena."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ranks():
    sys.path.insert(0, str(ROOT / "scripts" / "paper"))
    import rank_sets

    yield rank_sets
    sys.path.remove(str(ROOT / "scripts" / "paper"))


K = 6
ALPHA = 0.05


def _design():
    """Six correlated scores whose pairwise statistics stay clear of the critical value
    (checked in the tests), so Monte-Carlo error cannot flip a decision."""
    rng = np.random.default_rng(7)
    A = rng.normal(size=(K, K))
    V = (A @ A.T / K + np.eye(K)) * 0.01
    est = np.array([1.00, 0.90, 0.62, 0.58, 0.30, -0.05])
    return est, V


def _pair_statistics(est, V):
    """``T[j, k] = (S_j - S_k) / SE(S_j - S_k)`` by loops over pairs (diagonal 0)."""
    T = np.zeros((K, K))
    for j in range(K):
        for k in range(K):
            if j != k:
                T[j, k] = (est[j] - est[k]) / np.sqrt(V[j, j] + V[k, k] - 2 * V[j, k])
    return T


def _max_quantile(V, hypotheses, draws=400_000, seed=12345):
    """1 - alpha quantile of ``max_{(j, k, s) in hypotheses} s (Z_j - Z_k) / SE_jk`` with
    ``Z ~ N(0, V)`` from a Cholesky factor (the library uses an eigen factor and its own
    seeded stream); ``s = 0`` means two-sided ``|Z_j - Z_k| / SE_jk``."""
    Z = np.random.default_rng(seed).standard_normal((draws, K)) @ np.linalg.cholesky(V).T
    columns = []
    for j, k, s in hypotheses:
        t = (Z[:, j] - Z[:, k]) / np.sqrt(V[j, j] + V[k, k] - 2 * V[j, k])
        columns.append(np.abs(t) if s == 0 else s * t)
    return float(np.quantile(np.max(columns, axis=0), 1 - ALPHA))


def _single_step_sets(T, c):
    """Rank sets from the simultaneous intervals ``S_j - S_k -/+ c SE_jk`` of all pairs:
    k is significantly better than j when the interval for ``S_k - S_j`` lies above 0."""
    low, high = np.ones(K, int), np.full(K, K)
    for j in range(K):
        for k in range(K):
            if k != j and T[k, j] > c:
                low[j] += 1
            if k != j and T[j, k] > c:
                high[j] -= 1
    return low, high


def _stepdown_sets(T, V):
    """Romano-Wolf step-down over the one-sided hypotheses ``S_j <= S_k`` of all ordered
    pairs: each step's critical value is the max over the hypotheses not yet rejected;
    reject those with ``T[j, k] > c``; repeat until none is new."""
    rejected = np.zeros((K, K), bool)  # rejected[j, k]: S_j > S_k established
    while True:
        open_pairs = [(j, k) for j in range(K) for k in range(j + 1, K)]
        hypotheses = []
        for j, k in open_pairs:
            if not rejected[j, k] and not rejected[k, j]:
                hypotheses.append((j, k, 0))
            elif not rejected[j, k]:
                hypotheses.append((j, k, 1))
            elif not rejected[k, j]:
                hypotheses.append((k, j, 1))
        c = _max_quantile(V, hypotheses)
        new = (T > c) & ~rejected & ~np.eye(K, dtype=bool)
        if not new.any():
            return 1 + rejected.sum(axis=0), K - rejected.sum(axis=1), rejected
        rejected |= new


def _clear_of(T, c, margin=0.04):
    off = ~np.eye(K, dtype=bool)
    return np.all(np.abs(np.abs(T[off]) - c) > margin * c)


def test_summary_of_hand_made_sets(ranks):
    s = ranks.summarise([1, 1, 3, 3, 5], [2, 2, 4, 4, 5])
    # widths 2, 2, 2, 2, 1; model 5 a singleton; two could be first; ordered: 0+0+2+2+4
    assert (s.models, s.median_width, s.singletons, s.could_be_first) == (5, 2.0, 0.2, 0.4)
    assert (s.ordered_pairs, s.pairs) == (8, 10)


def test_single_step_sets_match_the_pairwise_intervals(ranks):
    est, V = _design()
    T = _pair_statistics(est, V)
    c = _max_quantile(V, [(j, k, 0) for j in range(K) for k in range(j + 1, K)])
    assert _clear_of(T, c)
    low, high = _single_step_sets(T, c)
    sets = ranks.rank_sets(est, V, ALPHA, method="simultaneous", stepdown=False,
                           seed=ranks.RANK_SEED)
    assert np.isclose(sets.critical_value[0], c, rtol=0.01)
    np.testing.assert_array_equal(sets.low, low)
    np.testing.assert_array_equal(sets.high, high)
    assert 1 < np.median(high - low + 1) < K  # neither trivial nor total
    s = ranks.summarise(sets.low, sets.high)
    widths = sorted(int(h - lo + 1) for lo, h in zip(low, high, strict=True))
    assert s.median_width == (widths[K // 2 - 1] + widths[K // 2]) / 2
    assert s.singletons == sum(w == 1 for w in widths) / K
    assert s.could_be_first == sum(lo == 1 for lo in low) / K
    ordered = sum(abs(T[j, k]) > c for j in range(K) for k in range(j + 1, K))
    assert s.ordered_pairs == ordered and s.pairs == K * (K - 1) // 2


def test_stepdown_sets_match_a_brute_force_stepdown(ranks):
    est, V = _design()
    T = _pair_statistics(est, V)
    low, high, rejected = _stepdown_sets(T, V)
    sets = ranks.rank_sets(est, V, ALPHA, method="simultaneous", seed=ranks.RANK_SEED)
    np.testing.assert_array_equal(sets.low, low)
    np.testing.assert_array_equal(sets.high, high)
    assert ranks.summarise(sets.low, sets.high).ordered_pairs == rejected.sum()
    single = ranks.rank_sets(est, V, ALPHA, method="simultaneous", stepdown=False)
    assert np.all(sets.low >= single.low) and np.all(sets.high <= single.high)


@pytest.mark.parametrize("inflation", [1.5, 2.0])
def test_scaled_covariance_divides_every_statistic_by_the_inflation(ranks, inflation):
    est, V = _design()
    T = _pair_statistics(est, V) / inflation
    c = _max_quantile(V, [(j, k, 0) for j in range(K) for k in range(j + 1, K)])
    assert _clear_of(T, c)
    sets = ranks.scaled_rank_sets(est, V, inflation)
    plain = ranks.rank_sets(est, V, ALPHA, method="simultaneous", seed=ranks.RANK_SEED)
    scaled_plain = ranks.rank_sets(est, inflation**2 * V, ALPHA, method="simultaneous",
                                   stepdown=False, seed=ranks.RANK_SEED)
    # a common factor leaves the correlations, so the critical value, unchanged
    assert np.isclose(scaled_plain.critical_value[0],
                      ranks.rank_sets(est, V, ALPHA, method="simultaneous", stepdown=False,
                                      seed=ranks.RANK_SEED).critical_value[0], rtol=1e-5)
    low, high = _single_step_sets(T, c)
    np.testing.assert_array_equal(scaled_plain.low, low)
    np.testing.assert_array_equal(scaled_plain.high, high)
    assert np.all(sets.high - sets.low >= plain.high - plain.low)  # wider, never narrower
    assert np.all(sets.low <= plain.low) and np.all(sets.high >= plain.high)


def test_scaled_covariance_multiplies_interval_widths(ranks):
    from winrate.inference.joint import simultaneous_intervals

    est, V = _design()
    base = simultaneous_intervals(est, V, ALPHA, seed=ranks.RANK_SEED)
    scaled = simultaneous_intervals(est, 1.87**2 * V, ALPHA, seed=ranks.RANK_SEED)
    np.testing.assert_allclose(scaled.high - scaled.low, 1.87 * (base.high - base.low),
                               rtol=1e-5)


def test_difference_inflation_is_the_median_ratio_over_pairs(ranks):
    est, V = _design()
    rng = np.random.default_rng(3)
    B = rng.normal(size=(K, K))
    W = B @ B.T / K * 0.01
    ratios = [np.sqrt(W[j, j] + W[k, k] - 2 * W[j, k]) / np.sqrt(V[j, j] + V[k, k] - 2 * V[j, k])
              for j in range(K) for k in range(j + 1, K)]
    assert np.isclose(ranks.difference_inflation(W, V), np.median(ratios))


REAL = __import__("os").environ.get("WINRATE_DATA")


@pytest.mark.skipif(not REAL or not (Path(REAL) / "prd").exists(),
                    reason="WINRATE_DATA lacks PRD: real-data part skipped")
def test_prd_inflation_compares_the_clustered_with_the_naive_rows_se(ranks):
    """The inflation that scales Chatbot Arena's covariance divides PRD's prompt-clustered
    Bradley-Terry SE by the SE of the naive (cluster="none") analysis the table reports."""
    log, _ = ranks.read_log("prd")
    clustered, naive = ranks._analyse(log, "prompt", "bt"), ranks._analyse(log, "none", "bt")
    ratio = [c / n for c, n in zip(clustered.se, naive.se, strict=True)]
    assert ranks.se_inflation(clustered) == pytest.approx(float(np.median(ratio)), rel=1e-12)
    assert 1.5 < ranks.se_inflation(clustered) < 2.5
