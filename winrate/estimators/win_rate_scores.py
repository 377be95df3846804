"""The half-tie win rate of a per-question eval from its score table: the pairwise log
the table stands for (:class:`winrate.io.logs.ScoreTable`) is never built.

On question q every two models a < b that both answered it are compared, with the
lower-coded model's half-tie score ``s_qab`` = 1, 1/2 or 0 as ``y_qa`` is above, equal to
or below ``y_qb`` (scores Y, Q x K; answered mask O). Everything the win rate's analysis
reads from that log is a sum over its rows, computed here per question -- the cells of
:class:`winrate.estimators.cells.CellTotals` -- from products of the table with (K, K)
matrices:

* Pass 1, the pair table: comparisons ``N = O^T O`` (off the diagonal), a's wins over b
  ``X_ab = sum_q [y_qa > y_qb]``, ties ``T = N - X - X^T`` and a's half-tie score against
  b ``W_ab = X_ab + T_ab / 2``. For 0/1 scores ``X = R^T F`` with ``R = O*Y`` (right) and
  ``F = O*(1 - Y)`` (wrong), so ``W = (N + R^T O - O^T R) / 2``. Then ``psi_ab = W_ab /
  N_ab`` exactly as :func:`winrate.estimators.win_rate_kernels.pairwise_table` forms it.
* Pass 2, per question q and model a, for a (K, K) matrix M and a power p::

      sum_{b answered q} M_ab (s_qab - psi_ab)^p      (s_qab: a's score against b)

  gives the influence totals ``t_qa`` (``M = w / N``, p = 1: the influence of a row on
  ``S_a`` is ``u_r^(a) = w_ab (s_r - psi_ab) / N_ab``,
  :mod:`winrate.estimators.win_rate_kernels`), their sums of squared rows
  (``M = (w / N)^2``, p = 2), a's own
  centred scores (``M = 1`` on observed pairs) and, summed over a, the lower model's
  (``M_ab = [a < b]``). With 0/1 scores the opponents of a right answer are right
  (s = 1/2) or wrong (s = 1) and those of a wrong one right (0) or wrong (1/2), so with
  ``A(s) = M * (s - psi)^p`` (elementwise)::

      sum = R * (R A(1/2)^T + F A(1)^T) + F * (R A(0)^T + F A(1/2)^T),

  four (Q x K)(K x K) products per (M, p), stacked into two per block of questions
  (:func:`_binary_sums`). Graded scores have no such split: :func:`_graded_sums` visits
  the K^2 model pairs of each question (numba), still storing no comparison.
* CR2 for clustering by question: a question holds one comparison of each pair, so the
  leverage of pair h's block is ``1 / N_h`` and CR2 (Bell & McCaffrey 2002,
  :mod:`winrate.variance.sandwich`) is the sandwich of the rows scaled by
  ``(1 - 1 / N_h)^(-1/2)``: pass 2 again with ``M = w / N`` so scaled, on demand.
* Per pair, the sum of squared centred scores ``SS_ab = X_ab (1 - psi_ab)^2 + T_ab (1/2 -
  psi_ab)^2 + X_ba psi_ab^2`` (the score takes only these three values), and the naive
  meat ``sum_r u_r u_r^T = sum_{a<b} SS_ab v_ab v_ab^T`` with ``v_ab = V_ab e_a - V_ba e_b``
  and ``V = w / N``: ``diag(sum_b SS_ab V_ab^2) - SS * V * V^T``; Cochran's per-pair
  ``N / (N - 1)`` on ``SS`` gives the stratified one
  (:func:`winrate.variance.sandwich.naive_cov`).

Checked against the analysis of the explicit pairwise log (``tests/test_scores.py``, to
1e-12 of the largest value, on MMLU-Pro and on random tables with missing answers).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numba
import numpy as np

from winrate.errors import WinrateInputError
from winrate.estimators.cells import CellTotals
from winrate.estimators.graph import check_connected
from winrate.estimators.leaderboard import Leaderboard
from winrate.estimators.win_rate_kernels import opponent_weights, table_of_sums, win_rates
from winrate.io.logs import ScoreTable
from winrate.parallel import sized_kernel

#: Questions per block of the binary products (bounds their memory: block x 8K doubles).
_BLOCK = 2048


def fit_scores(table: ScoreTable, weights="uniform", baseline: str | None = None) -> Leaderboard:
    """Scores ``S_a = sum_b w_ab psi_ab`` and their influence summed per question
    (:class:`CellTotals`) of the comparison log of ``table`` (module doc); ``weights`` as
    :func:`winrate.estimators.win_rate_kernels.fit` takes them."""
    if baseline is not None:
        raise WinrateInputError("a baseline is not available for per-question scores: every "
                                "model is compared with every other on each question (use "
                                "the pairwise log of the scores for a score against one "
                                "model)")
    k = table.n_models
    counts, wins = pair_outcomes(table)
    upper = np.triu(np.ones((k, k), bool), 1)
    half_tie = wins + (counts - wins - wins.T) / 2
    psi, counts, _, pairs = table_of_sums(np.where(upper, counts, 0.0).ravel(),
                                          np.where(upper, half_tie, 0.0).ravel(), k)
    check_connected(counts, table.models)
    w = opponent_weights(counts, weights, table.models)
    scores = win_rates(w, psi, counts.sum(axis=1) > 0)
    cells = cell_totals(table, psi, counts, wins, w)
    cells = replace(cells, leverage=functools.cache(
        lambda: _leverage_scaled(cells, table, psi, counts, w)))
    return Leaderboard(table.models, scores, psi, counts, w, cells, None, pairs, None,
                       options={"weights": weights, "baseline": None})


def pair_outcomes(table: ScoreTable) -> tuple[np.ndarray, np.ndarray]:
    """(K, K) comparisons ``N`` (symmetric, zero diagonal) and wins ``X`` (``X_ab``: a's
    score above b's) over the questions both answered (module doc, pass 1)."""
    if table.binary:
        answered = table.answered.astype(np.float64)
        right = np.where(table.answered, table.scores, 0.0)
        counts = answered.T @ answered
        np.fill_diagonal(counts, 0.0)
        return counts, right.T @ (answered - right)
    kernel, n_chunks = _graded_outcomes.choose(table.scores.size * table.n_models)
    counts, wins = kernel(table.scores, n_chunks)
    return counts + counts.T, wins


def cell_totals(table: ScoreTable, psi: np.ndarray, counts: np.ndarray, wins: np.ndarray,
                weights: np.ndarray) -> CellTotals:
    """:class:`CellTotals` of the win rate's influence, one cell per question (module doc,
    pass 2 and the pair sums)."""
    observed = counts > 0
    v = np.divide(weights, counts, out=np.zeros(counts.shape), where=observed)
    totals, within, own, lower = _centred_sums(table, psi, v, observed)
    p = np.nan_to_num(psi)
    spread = np.where(observed, wins * (1 - p)**2 + (counts - wins - wins.T) * (0.5 - p)**2
                      + wins.T * p**2, 0.0)
    cochran = np.divide(counts, counts - 1, out=np.ones(counts.shape), where=counts > 1)
    answers = table.answered.sum(axis=1).astype(np.float64)
    lo, hi = np.nonzero(np.triu(observed, 1))  # the pairs, in pairwise_table's order
    return CellTotals(
        totals=totals, within=within, row_meat=_row_meat(spread, v),
        stratum_row_meat=_row_meat(cochran * spread, v), n_rows=float(table.n_rows),
        rows=answers * (answers - 1) / 2, model_rows=table.answered * (answers - 1)[:, None],
        centred=lower, own=own, pair_spread=spread[lo, hi])


def _leverage_scaled(cells: CellTotals, table: ScoreTable, psi: np.ndarray,
                     counts: np.ndarray, weights: np.ndarray) -> CellTotals:
    """``cells`` with the totals and sums of squares of the rows scaled by CR2's factor for
    clusters of one question (:mod:`winrate.variance.sandwich`, ``"cr2"``): a question
    holds one comparison of each pair, so the factor is ``(1 - 1 / N_ab)^(-1/2)``, 1 for a
    pair compared once (it lies in one cluster). Pass 2 with ``w / N`` so scaled."""
    observed = counts > 0
    rest = 1 - np.divide(1.0, counts, out=np.ones(counts.shape), where=observed)
    factor = np.where(rest > 1e-12, 1 / np.sqrt(np.maximum(rest, 1e-12)), 1.0)
    v = np.divide(weights * factor, counts, out=np.zeros(counts.shape), where=observed)
    totals, within, _, _ = _centred_sums(table, psi, v, observed)
    return replace(cells, totals=totals, within=within, leverage=None)


def _centred_sums(table: ScoreTable, psi: np.ndarray, v: np.ndarray, observed: np.ndarray):
    """Pass 2 (module doc) with ``M = v``: the (Q, K) influence totals, sums of squared
    rows and own centred scores, and the (Q,) lower models' centred sums; by products for
    0/1 scores, else by the kernel."""
    if table.binary:
        return _binary_sums(table, psi, v, observed)
    kernel, n_chunks = _graded_sums.choose(table.scores.size * table.n_models)
    return kernel(table.scores, psi, v, n_chunks)


def _row_meat(spread: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``sum_{a<b} SS_ab v_ab v_ab^T`` (module doc) for the (K, K) symmetric ``spread``."""
    return np.diag((spread * v**2).sum(axis=1)) - spread * v * v.T


def _binary_sums(table: ScoreTable, psi: np.ndarray, v: np.ndarray, observed: np.ndarray):
    """Pass 2 for 0/1 scores by products (module doc): the (Q, K) influence totals, sums
    of squared rows and own centred scores, and the (Q,) lower models' centred sums."""
    p = np.nan_to_num(psi)
    families = [(v, 1), (v**2, 2), (observed.astype(float), 1), (np.triu(observed, 1), 1)]

    def stacked(*levels):
        """``[A(s_1)^T, A(s_2)^T]`` of every family, side by side."""
        return np.hstack([(m * (s - p)**power).T for m, power in families for s in levels])

    k = table.n_models
    for_right, for_wrong = stacked(0.5, 0.0), stacked(1.0, 0.5)
    out = np.empty((len(families), table.n_questions, k))
    for start in range(0, table.n_questions, _BLOCK):  # blocks of questions, not rows
        rows = slice(start, start + _BLOCK)
        answered = table.answered[rows]
        right = np.where(answered, table.scores[rows], 0.0)
        wrong = answered - right
        both = (right @ for_right + wrong @ for_wrong).reshape(len(right), -1, 2, k)
        out[:, rows] = (right[:, None] * both[:, :, 0] + wrong[:, None] * both[:, :, 1]
                        ).transpose(1, 0, 2)
    totals, within, own, lower = out
    return totals, within, own, lower.sum(axis=1)


@sized_kernel
def _graded_outcomes(scores, n_chunks):  # pragma: no cover - numba
    """Per-thread sums of the comparisons (upper triangle) and wins of every pair."""
    n_questions, k = scores.shape
    counts = np.zeros((n_chunks, k, k))
    wins = np.zeros((n_chunks, k, k))
    for c in numba.prange(n_chunks):
        models = np.empty(k, np.int64)
        for q in range(c * n_questions // n_chunks, (c + 1) * n_questions // n_chunks):
            m = _answered(scores[q], models)
            for i in range(m):
                a = models[i]
                for j in range(i + 1, m):
                    b = models[j]
                    counts[c, a, b] += 1.0
                    if scores[q, a] > scores[q, b]:
                        wins[c, a, b] += 1.0
                    elif scores[q, a] < scores[q, b]:
                        wins[c, b, a] += 1.0
    return counts.sum(axis=0), wins.sum(axis=0)


@sized_kernel
def _graded_sums(scores, psi, v, n_chunks):  # pragma: no cover - numba
    """Pass 2 for any scores (module doc), one question at a time, threads over
    questions: what :func:`_binary_sums` returns."""
    n_questions, k = scores.shape
    totals = np.zeros((n_questions, k))
    within = np.zeros((n_questions, k))
    own = np.zeros((n_questions, k))
    lower = np.zeros(n_questions)
    for c in numba.prange(n_chunks):
        models = np.empty(k, np.int64)
        for q in range(c * n_questions // n_chunks, (c + 1) * n_questions // n_chunks):
            m = _answered(scores[q], models)
            for i in range(m):
                a = models[i]
                for j in range(m):
                    b = models[j]
                    if a == b:
                        continue
                    s = 0.5
                    if scores[q, a] > scores[q, b]:
                        s = 1.0
                    elif scores[q, a] < scores[q, b]:
                        s = 0.0
                    centred = s - psi[a, b]
                    totals[q, a] += v[a, b] * centred
                    within[q, a] += (v[a, b] * centred) ** 2
                    own[q, a] += centred
                    if a < b:
                        lower[q] += centred
    return totals, within, own, lower


@numba.njit(cache=True)
def _answered(row, models):  # pragma: no cover - numba
    """The models that answered (non-NaN entries of ``row``) into ``models``; their count."""
    m = 0
    for a in range(row.shape[0]):
        if not np.isnan(row[a]):
            models[m] = a
            m += 1
    return m
