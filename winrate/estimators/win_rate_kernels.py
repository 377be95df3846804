"""Half-tie win-rate scores and their influence matrix.

For a comparison r of models (a, b) with half-tie kernel ``s_r`` in {0, 1/2, 1} (win, tie,
loss of a) and frequency ``f_r``:

* pairwise win probability ``psi_ab = sum_{r in ab} f_r s_r / n_ab``, ``n_ab = sum f_r``,
  pooled over both orders (a, b) and (b, a); ``psi_ba = 1 - psi_ab``;
* leaderboard score ``S_a = sum_b w_ab psi_ab`` with opponent weights ``w_ab``;
* influence ``u_r^(a) = f_r w_ab (s_r - psi_ab) / n_ab`` and
  ``u_r^(b) = -f_r w_ba (s_r - psi_ab) / n_ab``: the first-order expansion of S in the
  row weights f with w and n held fixed (the linearisation of a ratio estimator; Hajek
  1971, see also Sarndal, Swensson & Wretman 1992, sec. 5.6). Each row's influence row is
  the total push of the f_r comparisons it stands for, so columns sum to zero.

Opponent weights:

* ``"uniform"``: ``w_ab = 1 / |O_a|`` on the set ``O_a`` of observed opponents of a,
  so S_a is a's mean win probability against the opponents it met;
* ``"count"``: ``w_ab = n_ab / n_a``, which makes S_a a's raw half-tie win rate. Its
  influence holds the pair counts fixed (inference conditional on the design);
* a user ``(K, K)`` matrix (array, or DataFrame indexed by model names on both axes).
  It must put no weight on an unobserved pair: unobserved pairs are never imputed.

Pairs whose comparisons all had the same outcome get a small-sample floor on their
variance (:mod:`winrate.estimators.small_sample`).

A disconnected comparison graph is an error naming its components
(:func:`winrate.estimators.graph.check_connected`): no comparison links the components' scores.
"""

from __future__ import annotations

import numba
import numpy as np
import pandas as pd
import scipy.sparse as sp

from winrate.errors import WinrateInputError, one_of
from winrate.estimators.graph import check_connected
from winrate.estimators.leaderboard import Leaderboard
from winrate.io.logs import ComparisonLog
from winrate.parallel import sized_kernel

WEIGHT_SCHEMES = ("uniform", "count")


@sized_kernel
def _pair_sums(model_a, model_b, score, frequency, k, n_chunks):  # pragma: no cover - numba
    """Per-thread-chunk sums of f and f * s_low on the flat (K*K) upper-triangle grid."""
    n = model_a.shape[0]
    counts = np.zeros((n_chunks, k * k))
    wins = np.zeros((n_chunks, k * k))
    weighted = frequency.shape[0] > 0
    for c in numba.prange(n_chunks):
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            a, b, s = model_a[r], model_b[r], score[r]
            if a > b:
                a, b, s = b, a, 1.0 - s
            f = frequency[r] if weighted else 1.0
            counts[c, a * k + b] += f
            wins[c, a * k + b] += f * s
    return counts.sum(axis=0), wins.sum(axis=0)


@sized_kernel
def _influence_rows(model_a, model_b, score, frequency, psi_flat, counts_flat, weights,
                    pair_of_key, data, indices, pair, centered):  # pragma: no cover - numba
    """CSR data/indices of the influence, each row's pair index and centred score, written
    to the caller's arrays (numpy's: transparent huge pages, a 512th of the page faults
    of numba's own; 10M rows 0.16-0.22 against 0.42-0.46 s of CPU)."""
    n, k = model_a.shape[0], weights.shape[0]
    weighted = frequency.shape[0] > 0
    for r in numba.prange(n):
        a, b, s = model_a[r], model_b[r], score[r]
        if a > b:
            a, b, s = b, a, 1.0 - s
        key = a * k + b
        c = s - psi_flat[key]
        step = (frequency[r] if weighted else 1.0) * c / counts_flat[key]
        data[2 * r] = weights[a, b] * step
        data[2 * r + 1] = -weights[b, a] * step
        indices[2 * r] = a
        indices[2 * r + 1] = b
        pair[r] = pair_of_key[key]
        centered[r] = c


def _frequency_or_empty(log: ComparisonLog) -> np.ndarray:
    return np.empty(0) if log.frequency is None else log.frequency


def pairwise_table(log: ComparisonLog):
    """Counts ``n_ab`` and win probabilities ``psi_ab`` on the (K, K) grid.

    Returns ``(psi, counts, pair_of_key, pairs)``: psi (NaN where unobserved) and symmetric
    counts as (K, K) arrays, the pair index of every flat key ``low * K + high`` (-1 if
    unobserved) and the (P, 2) observed pairs.
    """
    k = log.n_models
    kernel, n_chunks = _pair_sums.choose(log.n_rows)
    counts_flat, wins_flat = kernel(log.model_a, log.model_b, log.score,
                                    _frequency_or_empty(log), k, 2 * n_chunks)
    return table_of_sums(counts_flat, wins_flat, k)


def table_of_sums(counts_flat: np.ndarray, wins_flat: np.ndarray, k: int):
    """:func:`pairwise_table` from the per-pair comparisons ``N`` and scores ``W`` of the
    lower-coded model on the flat (K*K) grid (keys ``low * K + high``)."""
    observed_keys = np.flatnonzero(counts_flat > 0)
    pair_of_key = np.full(k * k, -1, dtype=np.int32)
    pair_of_key[observed_keys] = np.arange(observed_keys.size)
    upper = np.full(k * k, np.nan)
    upper[observed_keys] = wins_flat[observed_keys] / counts_flat[observed_keys]
    upper = upper.reshape(k, k)
    psi = np.where(np.isnan(upper), 1.0 - upper.T, upper)
    counts = counts_flat.reshape(k, k)
    pairs = np.column_stack(np.divmod(observed_keys, k))
    return psi, counts + counts.T, pair_of_key, pairs


def outcome_counts(log: ComparisonLog, table, model: str) -> tuple:
    """Frequency-weighted (wins, losses, ties) of the lower-coded model per observed pair
    of ``table`` (:func:`pairwise_table`), (P,) each, for a tie model; an error naming
    ``model`` when the log has graded preferences."""
    if not np.isin(log.score, (0.0, 0.5, 1.0)).all():
        raise WinrateInputError(f"{model} needs outcomes win / loss / tie; this log has "
                                "graded preferences")
    lo = np.minimum(log.model_a, log.model_b)
    hi = np.maximum(log.model_a, log.model_b)
    s_lo = np.where(log.model_a < log.model_b, log.score, 1.0 - log.score)
    pair = table[2][lo * log.n_models + hi]
    return tuple(np.bincount(pair, log.weight * (s_lo == v), len(table[3]))
                 for v in (1.0, 0.0, 0.5))


def opponent_weights(counts: np.ndarray, weights="uniform", models=None) -> np.ndarray:
    """Opponent weight matrix ``w`` for a scheme name or a user matrix (see module doc)."""
    observed = counts > 0
    if isinstance(weights, str):
        if weights == "uniform":
            degree = observed.sum(axis=1, keepdims=True)
            return np.divide(observed, degree, out=np.zeros(counts.shape), where=degree > 0)
        if weights == "count":
            total = counts.sum(axis=1, keepdims=True)
            return np.divide(counts, total, out=np.zeros(counts.shape), where=total > 0)
        raise WinrateInputError(
            f"weights must be one of {one_of(WEIGHT_SCHEMES)} or a (K, K) matrix, got {weights!r}"
        )
    if isinstance(weights, pd.DataFrame):
        if models is None:
            raise WinrateInputError("a weight DataFrame needs the model names to align to")
        weights = weights.reindex(index=models, columns=models).to_numpy(dtype=float)
    matrix = np.asarray(weights, dtype=float)
    if matrix.shape != counts.shape:
        raise WinrateInputError(f"weight matrix has shape {matrix.shape}, expected {counts.shape}")
    if not np.isfinite(matrix).all():
        raise WinrateInputError("weight matrix has missing or non-finite entries")
    bad = np.argwhere((matrix != 0) & ~observed)
    if bad.size:
        label = models if models is not None else np.arange(len(counts))
        names = ", ".join(f"{label[i]!s} vs {label[j]!s}" for i, j in bad[:5])
        raise WinrateInputError(
            f"weight matrix puts weight on {len(bad)} unobserved pair(s) (or the diagonal), "
            f"first: {names}; unobserved pairs are never imputed"
        )
    return matrix


def influence_matrix(log: ComparisonLog, weights: np.ndarray, psi: np.ndarray,
                     counts: np.ndarray, pair_of_key: np.ndarray):
    """The (n, K) CSR influence matrix ``u_r`` (module doc), two non-zeros per row.

    Also returns each row's pair index and pair-centred score ``s_r - psi_ab``.
    """
    n = log.n_rows
    data, indices, pair, centered = (np.empty(2 * n), np.empty(2 * n, np.int32),
                                     np.empty(n, np.int32), np.empty(n))
    _influence_rows.choose(n)[0](
        log.model_a, log.model_b, log.score, _frequency_or_empty(log),
        np.ascontiguousarray(psi).ravel(), np.ascontiguousarray(counts).ravel(),
        np.ascontiguousarray(weights, dtype=np.float64), pair_of_key, data, indices, pair,
        centered)
    index_type = np.int32 if 2 * log.n_rows < np.iinfo(np.int32).max else np.int64
    indptr = np.arange(0, 2 * log.n_rows + 1, 2, dtype=index_type)
    indices = indices.astype(index_type, copy=False)
    shape = (log.n_rows, log.n_models)
    return sp.csr_array((data, indices, indptr), shape=shape, copy=False), pair, centered


def fit(log: ComparisonLog, weights="uniform", baseline: str | None = None,
        table=None) -> Leaderboard:
    """Scores ``S_a = sum_b w_ab psi_ab`` and their influence matrix for a comparison log.

    ``baseline``: a design in which every model faces one reference model (AlpacaEval,
    arena-hard). Each contestant's score is its win rate against the baseline,
    ``S_a = psi_a,base`` (``w_ab = 1`` for b the baseline, 0 otherwise), and the baseline is
    not reported: it is the reference at 50%. ``table``: the log's :func:`pairwise_table`,
    when already computed. The options are kept on the fit (``options``).
    """
    psi, counts, pair_of_key, pairs = pairwise_table(log) if table is None else table
    check_connected(counts, log.models)
    base = None if baseline is None else baseline_code(log, baseline, counts)
    options = {"weights": weights,
               "baseline": None if base is None else str(log.models[base])}
    if base is not None:
        weights = np.zeros(counts.shape)
        weights[:, base] = counts[:, base] > 0
    w = opponent_weights(counts, weights, log.models)
    scores = win_rates(w, psi, (w if base is not None else counts).sum(axis=1) > 0)
    infl, pair, centered = influence_matrix(log, w, psi, counts, pair_of_key)
    if base is None:
        return Leaderboard(log.models, scores, psi, counts, w, infl, pair, pairs, centered,
                           options=options)
    keep = np.flatnonzero(np.arange(log.n_models) != base)
    select = np.eye(log.n_models)[keep]
    return Leaderboard(log.models[keep], scores[keep], psi, counts, w, infl, pair, pairs,
                       centered, bread=select, log_models=log.models, contestants=keep,
                       options=options)


def win_rates(weights: np.ndarray, psi: np.ndarray, has_games: np.ndarray) -> np.ndarray:
    """``S_a = sum_b w_ab psi_ab`` (unobserved pairs carry no weight); NaN for a model
    without games."""
    return np.where(has_games, (weights * np.nan_to_num(psi)).sum(axis=1), np.nan)


def model_code(log: ComparisonLog, name: str, what: str) -> int:
    """Code of the model called ``name``; an error naming the option ``what`` and the models
    if none."""
    found = np.flatnonzero(log.models.astype(str) == str(name))
    if found.size == 0:
        raise WinrateInputError(f"{what} {name!r} is not a model of the log (models: "
                                f"{', '.join(map(str, log.models[:10]))}"
                                f"{', ...' if log.n_models > 10 else ''})")
    return int(found[0])


def baseline_code(log: ComparisonLog, baseline: str, counts: np.ndarray) -> int:
    """Code of the baseline model; every other model must have met it."""
    base = model_code(log, baseline, "baseline")
    never = [str(m) for i, m in enumerate(log.models) if i != base and counts[i, base] == 0]
    if never:
        raise WinrateInputError(
            f"with baseline {baseline!r} every model must be compared with it; "
            f"{len(never)} never were: {never[:10]}{' ...' if len(never) > 10 else ''}")
    return base


# ------------------------------------------------------------------ replicate refits

_ZERO_COUNT_RTOL = 1e-10  # a replicate pair count <= this * full count counts as zero


class PairScorer:
    """Win-rate scores from pair totals, for a block of replicates at once.

    ``scores(W, N)`` maps (B, P) pair totals to (B, C) canonical scores by the rules of
    :func:`winrate.estimators.win_rate_kernels.fit`: a pair whose replicate count is 0 is dropped
    and each model's weights are renormalised over its remaining opponents (``"uniform"``: 1 /
    number of observed opponents; ``"count"``: ``N*_ab / N*_a``); a user matrix is held fixed on the
    remaining pairs, each row rescaled to its original row sum. With the log's own totals it
    reproduces ``board.scores`` (tested to 1e-12). The weight scheme is the fit's own
    (``board.options``), never the caller's.
    """

    def __init__(self, board, total_counts=None):
        self.board = board
        self.k = len(board.all_models)
        self.lo, self.hi = board.pairs[:, 0], board.pairs[:, 1]
        n_pairs = len(board.pairs)
        rows = np.arange(n_pairs)
        shape = (n_pairs, self.k)
        self.to_lo = sp.csr_array((np.ones(n_pairs), (rows, self.lo)), shape=shape)
        self.to_hi = sp.csr_array((np.ones(n_pairs), (rows, self.hi)), shape=shape)
        scheme = board.options.get("weights", "uniform")
        # a baseline design's weights are a fixed matrix (1 on the baseline column)
        fixed = board.options.get("baseline") or not isinstance(scheme, str)
        self.scheme = "matrix" if fixed else scheme
        self.w_lo = board.weights[self.lo, self.hi]
        self.w_hi = board.weights[self.hi, self.lo]
        self.row_sum = board.weights.sum(axis=1)
        full = board.counts[self.lo, self.hi] if total_counts is None else total_counts
        self.tol = _ZERO_COUNT_RTOL * np.asarray(full, float)

    def _spread(self, on_lo, on_hi):
        """``out[:, a] = sum_{p: lo_p = a} on_lo[:, p] + sum_{p: hi_p = a} on_hi[:, p]``."""
        return np.asarray(on_lo @ self.to_lo) + np.asarray(on_hi @ self.to_hi)

    def scores(self, wins, counts):
        return self.board.canonical(self.raw_scores(wins, counts))

    def raw_scores(self, wins, counts):
        """(B, L) scores of every log model (a baseline included)."""
        wins, counts = np.atleast_2d(wins), np.atleast_2d(counts)
        observed = counts > self.tol
        psi = np.divide(wins, counts, out=np.zeros(wins.shape), where=observed)
        if self.scheme == "count":
            n_a = self._spread(counts * observed, counts * observed)
            total = self._spread(wins * observed, (counts - wins) * observed)
            return np.divide(total, n_a, out=np.full(n_a.shape, np.nan), where=n_a > 0)
        if self.scheme == "uniform":
            obs = observed.astype(float)
            degree = self._spread(obs, obs)
            inv = np.divide(1.0, degree, out=np.zeros(degree.shape), where=degree > 0)
            raw = self._spread(psi * inv[:, self.lo], obs * (1 - psi) * inv[:, self.hi])
            return np.where(degree > 0, raw, np.nan)
        mass = self._spread(observed * self.w_lo, observed * self.w_hi)
        scale = np.divide(self.row_sum, mass, out=np.full(mass.shape, np.nan), where=mass > 0)
        return scale * self._spread(psi * self.w_lo, observed * (1 - psi) * self.w_hi)


def wild_influence_map(board: Leaderboard, total_counts: np.ndarray) -> sp.csr_array:
    """(P, K) ``A`` with ``A[p, lo] = w_lo,hi / N_p``, ``A[p, hi] = -w_hi,lo / N_p``: the
    influence of a unit of centred pair total ``W_p - psi_p N_p`` on the scores."""
    lo, hi = board.pairs[:, 0], board.pairs[:, 1]
    n_pairs = len(lo)
    rows = np.concatenate([np.arange(n_pairs)] * 2)
    data = np.concatenate([board.weights[lo, hi], -board.weights[hi, lo]])
    data /= np.concatenate([total_counts] * 2)
    amap = sp.csr_array((data, (rows, np.concatenate([lo, hi]))),
                        shape=(n_pairs, len(board.all_models)))
    return amap if board.contestants is None else sp.csr_array(amap[:, board.codes])
