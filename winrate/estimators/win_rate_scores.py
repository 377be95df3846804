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
  The 0/1 products are taken in float32 by blocks of questions, exact: their entries
  are integers below 2^24. As ``X = R^T O - R^T R``, a block with few unanswered cells
  (mask ``U = 1 - O``) needs one symmetric product, ``R^T R``: ``R^T O`` and ``O^T O``
  follow from ``U^T R`` and ``U^T U``, sums over the gaps (:func:`_binary_outcomes`).
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

      sum = R * (R A(1/2)^T + F A(1)^T) + F * (R A(0)^T + F A(1/2)^T).

  As ``F = O - R`` and ``s_qab = (1 + y_qa - y_qb) / 2``, the four families need only
  three products of the right answers, ``R [v, v^2 psi, v^2]^T`` (``v = w / N``), and
  sums over each question's answered models of matrices that do not involve their
  answers; those are the all-model row sums less the few models that did not answer
  (:func:`_binary_sums`: three (Q x K)(K x K) products in all, against sixteen for the
  four families taken one by one). Graded scores have no such split:
  :func:`_graded_sums` visits the K^2 model pairs of each question (numba), still storing
  no comparison.
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
1e-12 of the largest value, on MMLU-Pro and on random tables with missing answers), and
every path of the 0/1 pass 2 against a brute-force sum over the comparisons
(``tests/test_scores_blocks.py``).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numba
import numpy as np

from winrate.errors import WinrateInputError
from winrate.estimators.cells import CellTotals
from winrate.estimators.graph import check_connected
from winrate.estimators.leaderboard import Leaderboard
from winrate.estimators.win_rate_kernels import opponent_weights, table_of_sums, win_rates
from winrate.io.logs import ScoreTable
from winrate.parallel import PARALLEL_MIN_WORK, sized_kernel

#: Questions per block of the binary products (bounds their memory: block x 9K doubles).
_BLOCK = 2048
#: Share of the models above which a block's average count of unanswered models (or of
#: answered ones, if fewer) is summed by a product with the answered mask rather than
#: model by model (:func:`_binary_sums`): past it the product is the cheaper.
_GAPS_BY_PRODUCT = 1 / 8


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
        found = _in_threads(functools.partial(_binary_outcomes, table),
                            range(0, table.n_questions, _BLOCK),
                            table.scores.size * table.n_models)
        counts, wins = sum(c for c, _ in found), sum(w for _, w in found)
        np.fill_diagonal(counts, 0.0)
        return counts, wins
    kernel, n_chunks = _graded_outcomes.choose(table.scores.size * table.n_models)
    counts, wins = kernel(table.scores, n_chunks)
    return counts + counts.T, wins


def _binary_outcomes(table: ScoreTable, start: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pair_outcomes`' ``N`` and ``X`` of the block of :data:`_BLOCK` questions
    from ``start``, 0/1 scores. With ``C = R^T R`` (both right; one symmetric product,
    in float32, exact: integer sums below 2^24) and the unanswered mask ``U = 1 - O``,
    ``X = R^T O - C`` and, when the block has few gaps (:data:`_GAPS_BY_PRODUCT`),
    ``R^T O = r 1^T - (U^T R)^T`` and ``N = O^T O = n - u 1^T - 1 u^T + U^T U`` (``r``,
    ``u`` the right answers and gaps per model, ``n`` the questions) from the gaps alone
    (:func:`_gap_counts`), else ``R^T O`` and ``O^T O`` as products."""
    rows = slice(start, start + _BLOCK)
    answered = table.answered[rows]
    right = np.where(answered, table.scores[rows], 0.0).astype(np.float32)
    both_right = (right.T @ right).astype(np.float64)
    n, k = answered.shape
    if answered.size - np.count_nonzero(answered) > _GAPS_BY_PRODUCT * answered.size:
        mask = answered.astype(np.float32)
        return ((mask.T @ mask).astype(np.float64),
                (right.T @ mask).astype(np.float64) - both_right)
    gaps_right, gaps_both = np.zeros((k, k)), np.zeros((k, k))
    _gap_counts(answered, right, gaps_right, gaps_both)
    gaps = np.diag(gaps_both)
    counts = n - gaps[:, None] - gaps[None, :] + gaps_both
    return counts, right.sum(axis=0, dtype=np.float64)[:, None] - gaps_right.T - both_right


@numba.njit(cache=True, nogil=True)
def _gap_counts(answered, right, gaps_right, gaps_both):  # pragma: no cover - numba
    """Adds ``U^T R`` to ``gaps_right`` and ``U^T U`` to ``gaps_both`` (:func:`_binary_outcomes`):
    for each question, its right answers to the row of every model that did not answer
    it, and 1 to each pair of those models."""
    n_questions, k = answered.shape
    listed = np.empty(k, np.int64)
    for q in range(n_questions):
        m = 0
        for b in range(k):
            if not answered[q, b]:
                listed[m] = b
                m += 1
        for i in range(m):
            row, b = gaps_right[listed[i]], listed[i]
            for a in range(k):
                row[a] += right[q, a]
            for j in range(m):
                gaps_both[b, listed[j]] += 1.0


def same_pair_cells(table: ScoreTable, codes: np.ndarray, psi: np.ndarray):
    """The (cluster, pair) cells of the table's comparisons, clusters ``codes`` (Q,) of its
    questions: per cell its number of comparisons and its sum of the pair-centred half-tie
    scores ``s_qab - psi_ab`` (a < b), and the total of their squares, as the pairwise log
    would give them row by row (for the ICC of a pair's comparisons within a cluster,
    :func:`winrate.inference.covariance._same_pair_icc`). Each cluster's comparisons and
    wins are :func:`pair_outcomes` of its questions (module doc): ``sum s = W`` and ``sum
    s^2 = X + T / 4``, so a cell's sums follow from its ``N``, ``X`` and ``T``; in all
    O(Q K^2) operations, one pass 1 per cluster. Clusters of one question make cells of
    one comparison, where the ICC is not identified (no cells are returned, as the rows
    give NaN), so the prompt axis costs nothing."""
    if np.bincount(codes).max(initial=0) <= 1:
        return np.zeros(0), np.zeros(0), 0.0
    lower, upper = np.triu_indices(table.n_models, 1)
    pair_psi = np.nan_to_num(psi[lower, upper])  # NaN for a pair never compared: no cells
    sizes, sums, squares = [], [], 0.0
    for cluster in np.unique(codes):
        counts, wins = pair_outcomes(ScoreTable(table.scores[codes == cluster],
                                                table.models))
        n, won = counts[lower, upper], wins[lower, upper]
        tied = n - won - wins[upper, lower]
        score = won + tied / 2
        sizes.append(n)
        sums.append(score - n * pair_psi)
        squares += float((won + tied / 4 - 2 * pair_psi * score + n * pair_psi**2).sum())
    return np.concatenate(sizes), np.concatenate(sums), squares


def cell_totals(table: ScoreTable, psi: np.ndarray, counts: np.ndarray, wins: np.ndarray,
                weights: np.ndarray) -> CellTotals:
    """:class:`CellTotals` of the win rate's influence, one cell per question (module doc,
    pass 2 and the pair sums)."""
    observed = counts > 0
    v = np.divide(weights, counts, out=np.zeros(counts.shape), where=observed)
    p = np.nan_to_num(psi)
    spread = np.where(observed, wins * (1 - p)**2 + (counts - wins - wins.T) * (0.5 - p)**2
                      + wins.T * p**2, 0.0)
    totals, within, own, lower = _centred_sums(table, psi, _varied(v, spread), observed)
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
    spread = np.zeros(counts.shape)
    spread[np.nonzero(np.triu(observed, 1))] = cells.pair_spread
    totals, within, _, _ = _centred_sums(table, psi, _varied(v, spread + spread.T),
                                         observed)
    return replace(cells, totals=totals, within=within, leverage=None)


def _varied(v: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """``v`` on the pairs whose comparisons vary (``spread`` > 0), 0 elsewhere: a pair whose
    comparisons all equal its ``psi`` adds exactly nothing to any influence, which the
    products' cancellations would leave as round-off; so a model without a varied pair
    gets totals of exactly zero, as the rows give it."""
    return np.where(spread > 0, v, 0.0)


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
    """Pass 2 for 0/1 scores (module doc): the (Q, K) influence totals, sums of squared
    rows and own centred scores, and the (Q,) lower models' centred sums.

    On question q with right answers x (0/1) among the answered models, a's score against
    b is ``s_ab = (1 + x_a - x_b) / 2``, so with ``h = 1/2 - psi`` (on observed pairs) and
    ``W = v^2`` each sum splits into a product of the right answers with a (K, K) matrix
    and sums over the answered b of matrices that do not involve b's answer::

        totals_a = sum_b v_ab (h_ab + x_a / 2)              - (R v^T)_a / 2
        within_a = sum_b W_ab (h_ab^2 + x_a (3/4 - psi_ab)) + (R (W psi)^T)_a
                                                            - (1/4 + x_a / 2) (R W^T)_a
        own_a    = (n_q - 1)(1 + x_a) / 2 - sum_b psi_ab    - (r_q - x_a) / 2
        lower    = sum_{a<b} h_ab + sum_a x_a (n_q - 1 - 2 before_a) / 2

    (sums over the answered b; ``n_q`` answers and ``r_q`` right ones, ``before_a`` the
    answered models coded below a). The right-answer part is one product per block of
    questions, ``R [v, W psi, W]^T``; the answered sums are the all-model row sums less
    the few unanswered b (or, on a question most models skipped, the answered b summed
    directly), :func:`_question_sums`, or one more product of the answered mask when
    a block has many gaps (:data:`_GAPS_BY_PRODUCT`)."""
    p = np.where(observed, np.nan_to_num(psi), 0.0)
    square = v * v
    h = 0.5 - p
    answered_factors = np.hstack([(v * h).T, v.T, (square * h * h).T, (square * (0.75 - p)).T,
                                  p.T, np.triu(h, 1).T])
    full = answered_factors.sum(axis=0).reshape(6, -1)
    right_factors = np.ascontiguousarray(np.hstack([v.T, (square * p).T, square.T]))
    # rows of v^T and psi^T are read by the kernel: contiguous, not a strided view
    vt, pt = np.ascontiguousarray(v.T), np.ascontiguousarray(p.T)
    k, n_questions = table.n_models, table.n_questions
    totals, within, own = (np.zeros((n_questions, k)) for _ in range(3))
    lower = np.zeros(n_questions)
    gaps = np.empty((0, 6 * k))

    def block(start: int) -> None:
        rows = slice(start, start + _BLOCK)
        answered = table.answered[rows]
        right = np.where(answered, table.scores[rows], 0.0)
        n_answered = answered.sum(axis=1)
        by_product = np.minimum(n_answered, k - n_answered).mean() > _GAPS_BY_PRODUCT * k
        sums = answered @ answered_factors if by_product else gaps
        _question_sums(answered, right, right @ right_factors, sums, vt, pt, full,
                       totals[rows], within[rows], own[rows], lower[rows])

    _in_threads(block, range(0, n_questions, _BLOCK), table.scores.size * k)
    return totals, within, own, lower


def _in_threads(work, starts, size: int) -> list:
    """``[work(start) for start in starts]``, on numba's number of threads when ``size`` is
    large (the products release the interpreter, :func:`_question_sums` does too)."""
    threads = numba.get_num_threads() if size >= PARALLEL_MIN_WORK else 1
    if threads == 1:
        return [work(start) for start in starts]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, starts))


@numba.njit(cache=True, nogil=True)
def _question_sums(answered, right, products, sums, vt, pt, full, totals, within, own,
                   lower):  # pragma: no cover - numba
    """:func:`_binary_sums` of a block of questions from the right-answer ``products``
    (B, 3K) and the answered sums ``sums`` (B, 6K: of ``v h, v, W h^2, W (3/4 - psi),
    psi`` and ``h`` above the diagonal), or, when ``sums`` has no rows, those sums
    formed here from the unanswered b (subtracted from the row sums ``full``) or the
    answered ones, whichever are fewer; ``vt``, ``pt``: ``v``, ``psi`` transposed."""
    n_questions, k = answered.shape
    listed = np.empty(k, np.int64)
    found = np.empty((6, k))
    for q in range(n_questions):
        x = right[q]
        n_answered = 0
        for a in range(k):
            n_answered += answered[q, a]
        if sums.shape[0] > 0:
            part = sums[q].reshape(6, k)
        else:
            gaps = 2 * n_answered > k
            m = 0
            for b in range(k):
                if answered[q, b] != gaps:
                    listed[m] = b
                    m += 1
            _sum_rows(listed[:m], vt, pt, found)
            if gaps:
                found[:] = full - found
            part = found
        _combine(answered[q], x, n_answered, products[q], part, totals[q], within[q], own[q],
                 lower, q)


@numba.njit(cache=True, nogil=True)
def _sum_rows(listed, vt, pt, found):  # pragma: no cover - numba
    """Sums over the b in ``listed`` of ``v h, v, W h^2, W (3/4 - psi), psi`` and ``h``
    (the last for b above a) per model a, into ``found`` (6, K)."""
    found[:] = 0.0
    for b in listed:
        v_row, p_row = vt[b], pt[b]
        for a in range(v_row.shape[0]):
            pv, vv = p_row[a], v_row[a]
            h = 0.5 - pv
            found[0, a] += vv * h
            found[1, a] += vv
            found[2, a] += vv * vv * h * h
            found[3, a] += vv * vv * (0.75 - pv)
            found[4, a] += pv
        for a in range(b):
            found[5, a] += 0.5 - p_row[a]


@numba.njit(cache=True, nogil=True)
def _combine(answered, x, n_answered, products, part, totals, within, own, lower,
             q):  # pragma: no cover - numba
    """One question's sums (:func:`_binary_sums`' formulas) from its answered sums
    ``part`` (6, K) and right-answer products (3K,)."""
    k = x.shape[0]
    n_right = x.sum()
    before = 0.0
    low = 0.0
    for a in range(k):
        if not answered[a]:
            continue
        xa = x[a]
        totals[a] = part[0, a] + 0.5 * xa * part[1, a] - 0.5 * products[a]
        within[a] = (part[2, a] + xa * part[3, a] + products[k + a]
                     - (0.25 + 0.5 * xa) * products[2 * k + a])
        own[a] = 0.5 * (n_answered - 1) * (1.0 + xa) - part[4, a] - 0.5 * (n_right - xa)
        low += part[5, a] + 0.5 * xa * (n_answered - 1 - 2 * before)
        before += 1.0
    lower[q] = low


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
