"""Scores and influence against brute-force loops and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from winrate.errors import WinrateInputError
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog


def brute_force_scores(log: ComparisonLog, scheme: str):
    """Direct loop over models and opponents (independent of the vectorised code)."""
    k = log.n_models
    wins = np.zeros((k, k))
    games = np.zeros((k, k))
    for a, b, s in zip(log.model_a, log.model_b, log.score, strict=True):
        wins[a, b] += s
        wins[b, a] += 1 - s
        games[a, b] += 1
        games[b, a] += 1
    scores = np.zeros(k)
    for a in range(k):
        opponents = [b for b in range(k) if games[a, b] > 0]
        if scheme == "uniform":
            scores[a] = np.mean([wins[a, b] / games[a, b] for b in opponents])
        else:
            scores[a] = sum(wins[a, b] for b in opponents) / sum(games[a, b] for b in opponents)
    return scores


@pytest.mark.parametrize("scheme", ["uniform", "count"])
def test_scores_match_brute_force(unbalanced_log, scheme):
    board = fit(unbalanced_log, scheme)
    np.testing.assert_allclose(board.scores, brute_force_scores(unbalanced_log, scheme),
                               atol=1e-14)


def test_psi_is_antisymmetric_and_unobserved_pairs_reported(unbalanced_log):
    board = fit(unbalanced_log)
    observed = board.counts > 0
    np.testing.assert_allclose(board.psi[observed] + board.psi.T[observed], 1.0)
    assert np.isnan(board.psi[0, 5]) and np.isnan(board.psi[5, 0])
    assert board.unobserved_pairs == [("0", "5")]
    assert board.weights[0, 5] == 0


def test_weight_matrix_on_unobserved_pair_is_rejected(unbalanced_log):
    w = np.ones((6, 6)) - np.eye(6)
    with pytest.raises(WinrateInputError, match="unobserved pair"):
        fit(unbalanced_log, w)


def _scores_with_row_weights(log: ComparisonLog, frequency: np.ndarray, weights: np.ndarray):
    reweighted = ComparisonLog(log.model_a, log.model_b, log.score, log.models, log.axes,
                               frequency)
    return fit(reweighted, weights).scores


@pytest.mark.parametrize("scheme", ["uniform", "count"])
def test_influence_is_the_first_order_expansion(unbalanced_log, scheme):
    """dS / df_r by central finite differences equals the influence row (w, n held fixed)."""
    board = fit(unbalanced_log, scheme)
    dense = board.influence.toarray()
    base = np.ones(unbalanced_log.n_rows)
    eps = 1e-6
    rows = np.random.default_rng(0).choice(unbalanced_log.n_rows, 25, replace=False)
    for r in rows:
        up, down = base.copy(), base.copy()
        up[r] += eps
        down[r] -= eps
        derivative = (_scores_with_row_weights(unbalanced_log, up, board.weights)
                      - _scores_with_row_weights(unbalanced_log, down, board.weights)) / (2 * eps)
        np.testing.assert_allclose(derivative, dense[r], atol=1e-9)


def test_influence_columns_sum_to_zero_and_two_nonzeros(unbalanced_log):
    board = fit(unbalanced_log)
    np.testing.assert_allclose(board.influence.sum(axis=0), 0.0, atol=1e-15)
    assert np.all(np.diff(board.influence.indptr) == 2)


def test_linearisation_is_exact_for_uniform_perturbation(unbalanced_log):
    """Scaling all rows of the log leaves S unchanged and the influence sums to zero."""
    board = fit(unbalanced_log)
    scaled = _scores_with_row_weights(unbalanced_log, np.full(unbalanced_log.n_rows, 3.0),
                                      board.weights)
    np.testing.assert_allclose(scaled, board.scores, atol=1e-14)
