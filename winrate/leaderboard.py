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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from winrate.data import ComparisonLog
from winrate.errors import WinrateInputError

WEIGHT_SCHEMES = ("uniform", "count")


@dataclass(frozen=True)
class Leaderboard:
    """Scores and influence of a comparison log.

    Attributes
    ----------
    models : model names (column order of every array).
    scores : (K,) leaderboard scores ``S_a``; NaN only for a model with no comparisons.
    psi : (K, K) pairwise win probabilities, NaN where the pair was never compared.
    counts : (K, K) symmetric comparison counts ``n_ab``.
    weights : (K, K) opponent weights actually used.
    influence : (n, K) CSR matrix, two non-zeros per row (a, b).
    pair : (n,) index of each row's unordered pair into ``pairs``.
    pairs : (P, 2) observed unordered pairs (low code, high code).
    centered : (n,) pair-centred scores ``s_r - psi_ab`` of the lower-coded model.
    """

    models: np.ndarray
    scores: np.ndarray
    psi: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    influence: sp.csr_array
    pair: np.ndarray
    pairs: np.ndarray
    centered: np.ndarray

    @property
    def comparisons_per_model(self) -> np.ndarray:
        """n_a = sum_b n_ab (frequency-weighted)."""
        return self.counts.sum(axis=1)

    @property
    def unobserved_pairs(self) -> list[tuple[str, str]]:
        """Pairs of distinct models never compared, by name."""
        missing = np.argwhere(np.triu(self.counts == 0, k=1))
        return [(str(self.models[i]), str(self.models[j])) for i, j in missing]


def _canonical_pairs(log: ComparisonLog):
    """Order every row as (low, high) model code and score it for the low-coded model."""
    flip = log.model_a > log.model_b
    low = np.where(flip, log.model_b, log.model_a)
    high = np.where(flip, log.model_a, log.model_b)
    score_low = np.where(flip, 1.0 - log.score, log.score)
    return low, high, score_low


def pairwise_table(log: ComparisonLog):
    """Counts ``n_ab`` and win probabilities ``psi_ab`` on the (K, K) grid.

    Returns ``(psi, counts, pair, pairs, centered)``; see :class:`Leaderboard`.
    """
    k = log.n_models
    low, high, score_low = _canonical_pairs(log)
    key = low.astype(np.int64) * k + high
    weight = log.weight
    counts_flat = np.bincount(key, weights=weight, minlength=k * k)
    wins_flat = np.bincount(key, weights=weight * score_low, minlength=k * k)
    observed_keys = np.flatnonzero(counts_flat > 0)
    pair_of_key = np.full(k * k, -1, dtype=np.int64)
    pair_of_key[observed_keys] = np.arange(observed_keys.size)
    psi_flat = np.full(k * k, np.nan)
    psi_flat[observed_keys] = wins_flat[observed_keys] / counts_flat[observed_keys]
    upper = psi_flat.reshape(k, k)
    psi = np.where(np.isnan(upper), 1.0 - upper.T, upper)
    counts = counts_flat.reshape(k, k)
    counts = counts + counts.T
    pairs = np.column_stack(np.divmod(observed_keys, k))
    centered = score_low - psi_flat[key]
    return psi, counts, pair_of_key[key], pairs, centered


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
            f"weights must be one of {WEIGHT_SCHEMES} or a (K, K) matrix, got {weights!r}"
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
        names = [(models[i], models[j]) if models is not None else (i, j) for i, j in bad[:5]]
        raise WinrateInputError(
            f"weight matrix puts weight on {len(bad)} unobserved pair(s) (or the diagonal), "
            f"first: {names}; unobserved pairs are never imputed"
        )
    return matrix


def influence_matrix(log: ComparisonLog, weights: np.ndarray, counts: np.ndarray,
                     pair: np.ndarray, pairs: np.ndarray, centered: np.ndarray) -> sp.csr_array:
    """The (n, K) CSR influence matrix ``u_r`` (module doc): two non-zeros per row."""
    low, high = pairs[pair, 0], pairs[pair, 1]
    step = log.weight * centered / counts[low, high]
    data = np.empty(2 * log.n_rows)
    data[0::2] = weights[low, high] * step
    data[1::2] = -weights[high, low] * step
    indices = np.empty(2 * log.n_rows, dtype=np.int32)
    indices[0::2] = low
    indices[1::2] = high
    indptr = np.arange(0, 2 * log.n_rows + 1, 2, dtype=np.int64)
    return sp.csr_array((data, indices, indptr), shape=(log.n_rows, log.n_models))


def fit(log: ComparisonLog, weights="uniform") -> Leaderboard:
    """Scores ``S_a = sum_b w_ab psi_ab`` and their influence matrix for a comparison log."""
    psi, counts, pair, pairs, centered = pairwise_table(log)
    w = opponent_weights(counts, weights, log.models)
    has_games = counts.sum(axis=1) > 0
    scores = np.where(has_games, (w * np.nan_to_num(psi)).sum(axis=1), np.nan)
    infl = influence_matrix(log, w, counts, pair, pairs, centered)
    return Leaderboard(log.models, scores, psi, counts, w, infl, pair, pairs, centered)
