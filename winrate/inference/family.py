"""A family of boards (one per category) estimated jointly: its covariance and inference.

``--by COLUMN`` fits one board per category. Stacked, the categories' reported scores are
one parameter vector ``theta = (theta_1, ..., theta_C)`` (categories x models). Category
c's fit linearises its scores as ``theta_c - theta_c0 ~ sum_{r in c} B_c u_r`` over its own
rows r (``u_r`` the influence or score row, ``B_c`` its bread restricted to the reported
scores; :class:`winrate.estimators.leaderboard.Leaderboard`). A row belongs to one category,
so its push on the family is ``U_r = (0, ..., B_c u_r, ..., 0)``: the categories' influences
placed side by side, block-diagonally, as one influence matrix over all rows
(:func:`stacked_sums`). Clustered by the same clustering, its sandwich

    ``V = sum_{S non-empty} (-1)^(|S| + 1) c(G_S) B (sum_{g in S} t_g t_g^T) B^T``,
    ``t_g = sum_{r in g} u_r``, ``B = diag(B_1, ..., B_C)``

(Cameron, Gelbach & Miller 2011, eq. 2.11; :func:`winrate.variance.cluster_sums.clustered`,
the same code as one board's) is the joint covariance. Its diagonal block (c, c) is
category c's own clustered covariance (with the family's ``c(G)``); its off-diagonal block
(c, d) is ``sum_g B_c t_{g,c} t_{g,d}^T B_d^T``, zero unless a cluster (a prompt or a judge)
holds rows of both categories. Where clusters span categories it is what the Sidak or
Bonferroni combination of separate boards could only bound.

:func:`family_inference` reads the joint covariance's correlation ``R`` and scales it to
each score's own SE (its board's, which may carry a CR2 correction, a small-sample floor or
a resampling method): ``Sigma = D R D``, ``D = diag(se)``. The simultaneous intervals are
``theta_a -/+ c se_a`` with ``c`` the ``1 - alpha`` quantile of ``max_a |T_a|``, ``T ~ N(0,
R)`` (or the multivariate t on the family's smallest df), which reads ``R`` only
(:func:`winrate.inference.joint.simultaneous_intervals`); the rank sets rank each model
within its category, all categories' sets jointly
(:func:`winrate.inference.joint.rank_sets` with ``within``; Mogstad et al. 2024).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import block_diag

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.inference.joint import DEFAULT_DRAWS, rank_sets, simultaneous_intervals
from winrate.variance.cluster_sums import RowSums, clustered
from winrate.variance.reference import joint_df

__all__ = ["FamilyInference", "Member", "family_covariance", "family_inference",
           "reported_bread", "stacked_sums"]


@dataclass(frozen=True, eq=False)
class Member:
    """One category's fit as the family reads it: its ``influence`` rows (n_c, q_c), the
    ``bread`` (K_c, q_c) of its reported scores (:func:`reported_bread`), each clustering
    axis' cluster codes of its rows in the whole log's numbering (``clusters``), and the
    rows' ``frequency`` (None: 1)."""

    influence: object
    bread: np.ndarray
    clusters: tuple[np.ndarray, ...]
    frequency: np.ndarray | None = None


def reported_bread(board) -> np.ndarray:
    """The (K, q) map from a fit's influence columns to its K reported scores: the first K
    rows of its bread, or without one the reported models' columns (``board.codes``) of
    the identity."""
    k = len(board.models)
    if board.bread is not None:
        return np.asarray(board.bread)[:k]
    return np.eye(board.influence.shape[1])[board.codes]


def stacked_sums(members: list[Member], sizes: list[int]) -> RowSums:
    """The :class:`winrate.variance.cluster_sums.RowSums` of the family's stacked influence
    (module doc): the members' rows one after the other, their columns side by side
    (``diag(u_1, ..., u_C)``), bread ``diag(B_1, ..., B_C)``; ``sizes`` the clusters of each
    axis in the whole log."""
    influence = sp.block_diag([sp.csr_array(m.influence) for m in members], format="csr")
    codes = [np.concatenate([m.clusters[i] for m in members]) for i in range(len(sizes))]
    frequency = None
    if any(m.frequency is not None for m in members):
        frequency = np.concatenate([np.ones(m.influence.shape[0]) if m.frequency is None
                                    else m.frequency for m in members])
    bread = block_diag(*[m.bread for m in members])
    return RowSums(influence, codes, list(sizes), bread, None, frequency)


def family_covariance(members: list[Member], sizes: list[int], correction: str):
    """The joint covariance (P, P) of the stacked scores, ``P = sum_c K_c`` (module doc),
    with ``correction`` (``"none"`` or ``"cr1"``; CR2's leverage needs each estimator's
    strata and is left to the boards' own SEs), and whether the multiway sum was clipped
    to PSD; the naive covariance without clustering axes. A design the variance module
    refuses raises its :class:`winrate.errors.WinrateInputError`."""
    if correction not in ("none", "cr1"):
        raise WinrateInputError(f"the family's joint covariance takes correction 'none' or "
                                f"'cr1', not {correction!r}")
    found = clustered(stacked_sums(members, sizes), correction, designs=False)
    if found.covariance is None:
        return found.naive, False
    return found.covariance.cov, found.psd_repaired


@dataclass(frozen=True, eq=False)
class FamilyInference:
    """Joint inference over a family (module doc): ``cov`` the joint covariance of the
    stacked scores, ``scaled`` its correlation scaled to the scores' ``se`` (what the
    intervals and ranks use), ``critical_value`` the max-|T| one over the ``kept`` scores
    (finite, positive SE), ``low``/``high`` the simultaneous intervals (before any link),
    ``rank_low``/``rank_high`` each model's rank set within its category (None unless
    asked for), ``df`` the family's reference df (None: normal)."""

    cov: np.ndarray
    scaled: np.ndarray
    kept: np.ndarray
    critical_value: float
    low: np.ndarray
    high: np.ndarray
    df: float | None
    rank_low: np.ndarray | None = None
    rank_high: np.ndarray | None = None


def scaled_to(cov: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``D R D`` with ``R`` the correlation of ``cov`` and ``D = diag(se)``, and the mask
    of the scores it is defined for (finite, positive ``se`` and positive variance in
    ``cov``); zero elsewhere."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    kept = np.isfinite(se) & (se > 0) & (sd > 0)
    ratio = np.divide(se, sd, out=np.zeros_like(se, dtype=float), where=kept)
    return cov * np.outer(ratio, ratio), kept


def family_inference(estimate, se, cov, category, alpha: float, df, *, ranks: bool = False,
                     n_draws: int = DEFAULT_DRAWS, seed=0) -> FamilyInference:
    """Simultaneous intervals (and with ``ranks`` simultaneous rank sets within each
    ``category``) of the stacked ``estimate`` (P,) from the joint ``cov`` scaled to ``se``
    (module doc); ``df`` one or per score (the smallest over the kept scores is used,
    :func:`winrate.variance.reference.joint_df`). A score without an SE gets NaN bounds
    and, with ``ranks``, the whole range of its category; it widens the others' upper
    bounds by one."""
    estimate, category = np.asarray(estimate, float), np.asarray(category)
    scaled, kept = scaled_to(np.asarray(cov, float), np.asarray(se, float))
    family_df = joint_df(df, kept)
    low, high = np.full(estimate.shape, np.nan), np.full(estimate.shape, np.nan)
    critical = float("nan")
    if kept.any():
        sim = simultaneous_intervals(estimate[kept], scaled[np.ix_(kept, kept)], alpha,
                                     family_df, n_draws=n_draws, seed=seed)
        low[kept], high[kept], critical = sim.low, sim.high, sim.critical_value
    rank_low = rank_high = None
    if ranks:
        rank_low, rank_high = _rank_sets(estimate, scaled, kept, category, alpha, family_df,
                                         n_draws, seed)
    return FamilyInference(cov, scaled, kept, critical, low, high, family_df, rank_low,
                           rank_high)


def _rank_sets(estimate, scaled, kept, category, alpha, df, n_draws, seed):
    """Each model's rank set within its category, all jointly (simultaneous rank sets of
    the kept scores, :func:`winrate.inference.joint.rank_sets` ``within`` the categories);
    a model without an SE could rank anywhere in its category and lifts the others' upper
    bounds by one."""
    groups, code = np.unique(category, return_inverse=True)
    code = code.reshape(-1)
    size = np.bincount(code, minlength=groups.size)
    unknown = np.bincount(code[~kept], minlength=groups.size)
    low, high = np.ones(estimate.shape), size[code].astype(float)
    if kept.any():
        found = rank_sets(estimate[kept], scaled[np.ix_(kept, kept)], alpha, df,
                          method="simultaneous", n_draws=n_draws, seed=seed,
                          within=code[kept])
        low[kept] = found.low
        high[kept] = found.high + unknown[code[kept]]
    return low, high


def each_category(parts, why_thin, run, column: str, needed: str) -> tuple[dict, dict]:
    """``run(part)`` for each ``(label, part)`` of ``parts`` that ``why_thin(part)`` (a
    reason, or None) lets through: the results by label, and the categories left out with
    their reasons (refused, or whose run failed with an input error), said in one
    ``thin-categories`` note. ``needed`` completes the error when none gives a result
    ("comparisons for a board")."""
    results, thin = {}, {}
    for label, part in parts:
        reason = why_thin(part)
        if reason is None:
            try:
                results[label] = run(part)
            except WinrateInputError as error:
                reason = str(error)
        if reason is not None:
            thin[label] = reason
    if thin:
        notes.emit(notes.thin_categories(column, thin))
    if not results:
        raise WinrateInputError(f"no category of {column!r} has enough {needed}")
    return results, thin
