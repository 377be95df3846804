"""Influence summed within cells: the variance input of a fit that never held its rows.

A fit of n comparisons linearises its estimates as ``sum_r u_r`` with the (n, K) influence
``u_r`` (:class:`winrate.estimators.leaderboard.Leaderboard`). A clustered covariance
reads the influence only through cluster sums (:mod:`winrate.variance.sandwich`), and the
design diagnostics through per-cluster counts and sums. When every clustering of interest
groups whole *cells* -- a per-question eval's questions, which its subjects and sources
group, and which no comparison straddles -- sums over the cells hold all of it, and the
rows need never exist (:mod:`winrate.estimators.win_rate_scores` computes them from a
score table). With ``c`` a cell and ``g`` a cluster, a union of cells:

* ``totals`` ``t_c = sum_{r in c} u_r``: the meat ``sum_g t_g t_g^T`` of any such
  clustering from ``t_g = sum_{c in g} t_c`` (Liang & Zeger 1986);
* ``within`` ``sum_{r in c} u_r^2`` per column: each cluster's sum of squared rows, which
  the effective number of clusters and the not-identified check read
  (:class:`winrate.variance.sandwich.GroupMeat`);
* ``row_meat`` ``sum_r u_r u_r^T``, the naive meat, and ``stratum_row_meat``
  ``sum_r n_h / (n_h - 1) u_r u_r^T`` with Cochran's per-stratum factor of the rows'
  stratum h (the win rate's pairs; :func:`winrate.variance.sandwich.naive_cov`);
* per cell the comparisons ``rows``, each model's comparisons ``model_rows``, the sum of
  the pair-centred scores ``s_r - psi_ab`` of the lower-coded model ``centred``, and per
  model the sum of its own centred scores, oriented for it, ``own``; per observed pair the
  sum of its squared centred scores ``pair_spread``: the design diagnostics (comparisons
  per cluster, ANOVA ICCs, single-cluster pairs; :mod:`winrate.variance.diagnostics`) and
  the small-sample floor's single-outcome pairs (:mod:`winrate.estimators.small_sample`).

Cells are complete: two models with comparisons in a cell are compared in it (every two
models that answered a question are), so a pair is observed in the clusters where both of
its models have comparisons. Resampling needs each (cluster, pair)'s score totals, which
cells do not keep, and so does CR2 (:mod:`winrate.variance.sandwich`) for a cluster of
several cells; for clusters of one cell its leverage ``m_gh / n_h`` is ``c_h / n_h`` with
``c_h`` the comparisons of pair h in that cell (one, for a question), so CR2 is the
sandwich of the rows scaled by a per-pair factor, whose totals the fit supplies on demand
(``leverage``). Everything else is refused with a message naming what to use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from winrate.errors import WinrateInputError


@dataclass(frozen=True, eq=False)
class CellTotals:
    """The influence of a fit summed within cells (module doc): ``totals`` and ``within``
    (C, q), ``row_meat`` and ``stratum_row_meat`` (q, q), the number of comparisons
    ``n_rows``, and the cells' design sums ``rows`` (C,), ``model_rows`` (C, L),
    ``centred`` (C,), ``own`` (C, L) and the per-pair ``pair_spread`` (P,)."""

    totals: np.ndarray
    within: np.ndarray
    row_meat: np.ndarray
    stratum_row_meat: np.ndarray | None
    n_rows: float
    rows: np.ndarray
    model_rows: np.ndarray
    centred: np.ndarray
    own: np.ndarray
    pair_spread: np.ndarray
    #: the cell totals of the rows scaled by CR2's per-pair leverage factor for clusters of
    #: one cell (module doc), computed on first call; None: not available
    leverage: Callable[[], CellTotals] | None = None
    #: the rows themselves are not kept (:func:`require_rows`)
    keeps_rows: ClassVar[bool] = False

    @property
    def shape(self) -> tuple[int, int]:
        """(cells, columns), as the shape of a row-level influence is (rows, columns)."""
        return self.totals.shape

    def leverage_scaled(self, codes: np.ndarray) -> CellTotals:
        """The CR2 leverage-scaled cell totals for the clustering of the cells by
        ``codes``; an error when a cluster holds several cells (module doc)."""
        if self.leverage is None or np.bincount(codes).max(initial=0) > 1:
            raise WinrateInputError(
                "CR2 needs the comparisons of each (cluster, pair), which a fit of "
                "per-question scores keeps only for clusters of one question: cluster by "
                "prompt alone, or use correction 'cr1' (or the pairwise log of the scores)")
        return self.leverage()


def keeps_rows(influence) -> bool:
    """Whether the fit's influence keeps its rows: influence rows do, :class:`CellTotals`
    (and the :class:`~winrate.variance.cluster_sums.ClusterSums` built on them) do not."""
    return getattr(influence, "keeps_rows", True)


def require_rows(influence, method: str) -> None:
    """An error when a variance ``method`` needs the rows and ``influence`` (influence rows,
    :class:`CellTotals`, or the fit's
    :class:`~winrate.variance.cluster_sums.ClusterSums`) does not keep them (its
    ``keeps_rows``; module doc): every method but the sandwich refits on the rows."""
    if not keeps_rows(influence) and method != "sandwich":
        raise WinrateInputError(
            f"the {method} needs the comparisons of each (cluster, pair), which a fit of "
            "per-question scores does not build: use method 'sandwich' (or the pairwise log "
            "of the same scores)")
