"""What a clustered covariance needs of a fit: its sums by cluster, in one protocol.

A fit linearises its estimates as ``sum_r u_r`` (influence rows ``u_r``, or score rows
with a bread ``B``: :mod:`winrate.variance.sandwich`). The multiway covariance, its
small-sample corrections and every per-axis diagnostic read that influence only through
sums over clusters. :class:`ClusterSums` is that reading, whatever form the influence
takes:

* the naive meat ``sum_r u_r u_r^T`` (with CR1, Cochran's per-stratum ``n_h / (n_h - 1)``
  when the estimator has strata, else ``n / (n - 1)``);
* for each inclusion-exclusion term of the clustering axes (Cameron, Gelbach & Miller
  2011, eq. 2.11) the :class:`~winrate.variance.meats.GroupMeat` of its clusters, the rows
  scaled by that term's CR2 leverage factor when CR2 is asked for (Bell & McCaffrey 2002);
* for each axis its design sums (:class:`DesignSums`): the clusters each model appears
  in, the pairs seen in one cluster only, and the ANOVA ICC's cluster sizes and centred
  sums.

Three forms implement it: influence rows in memory (CSR or dense, :class:`RowSums`), sums
within cells that every clustering keeps whole (:class:`CellSums`, a per-question score
table's :class:`~winrate.estimators.cells.CellTotals`), and per-cluster sums reduced by
grouped SQL inside an engine (:class:`winrate.variance.buckets.EngineSums`). :func:`clustered`
is the one place that combines them: the inclusion-exclusion sum with ``c(G)``, the PSD
repair (a flag, never a note: the caller decides), the bread, and each axis' ``m``, pair
mask and ICC (:mod:`winrate.variance.diagnostics`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from winrate.errors import WinrateInputError
from winrate.estimators.cells import CellTotals, keeps_rows
from winrate.variance import diagnostics
from winrate.variance.meats import (
    DENSE_INNER_LIMIT,
    ColumnSpread,
    GroupMeat,
    MultiwayCovariance,
    StrataLeverage,
    as_rows,
    check_correction,
    column_spread,
    combine_terms,
    group_codes,
    intersect_codes,
    meat_from_codes,
    meat_of_parts,
    nested_meats,
    nests_leverage,
    require_two_clusters,
    row_meat,
    sandwich,
    scale_rows,
    small_sample_factor,
    spread_of_meats,
    spread_of_parts,
    subsets,
    term_sign,
)


@dataclass(frozen=True)
class DesignSums:
    """One clustering axis' design sums: ``clusters_of_model`` (L,) the clusters each model
    appears in; ``single`` (P,) the pairs whose rows all lie in one cluster; ``size`` (G,)
    each cluster's comparisons and ``centred_sum`` (G,) its sum of the pair-centred scores
    ``s_r - psi_ab`` minus their grand mean, and ``squares`` the total sum of squares of
    those centred scores about the grand mean (:func:`winrate.variance.diagnostics.icc_of_sums`)."""

    clusters_of_model: np.ndarray
    single: np.ndarray
    size: np.ndarray
    centred_sum: np.ndarray
    squares: float


class AxisDesign(NamedTuple):
    """One axis' design diagnostics: ``m`` (L,) comparisons per cluster of each model
    (:func:`winrate.variance.diagnostics.comparisons_per_cluster`), ``single`` (P,) the
    single-cluster pairs, ``icc`` the pair-level ANOVA ICC."""

    m: np.ndarray
    single: np.ndarray
    icc: float


class ClusterSums(ABC):
    """The sums of a fit's influence by cluster of the clustering axes (module doc).

    ``bread`` (q', q) or None, ``n_per_model`` (L,) each model's comparisons (for ``m``).
    """

    #: whether the influence rows exist (resampling, which refits on subsets of the rows,
    #: needs them; a fit held as cell totals does not keep them)
    keeps_rows: bool = True

    def __init__(self, bread: np.ndarray | None, n_per_model: np.ndarray | None):
        self.bread = bread
        self.n_per_model = n_per_model

    @property
    @abstractmethod
    def n_clusters(self) -> tuple[int, ...]:
        """Clusters of each axis among the fit's rows, in clustering order."""

    @abstractmethod
    def naive_meat(self, correction: str) -> np.ndarray:
        """``sum_r u_r u_r^T`` (q, q) with the correction's factor: ``n / (n - 1)`` for CR1,
        or Cochran's per-stratum ``n_h / (n_h - 1)`` when the fit has strata
        (:func:`winrate.variance.sandwich.naive_cov`); before the bread."""

    @abstractmethod
    def term_meats(self, correction: str) -> list[GroupMeat]:
        """The :class:`GroupMeat` of each inclusion-exclusion term in :func:`subsets` order,
        the rows scaled by the term's CR2 leverage factor for ``"cr2"``; before ``c(G)``
        and the bread."""

    @abstractmethod
    def design_sums(self, axis: int) -> DesignSums:
        """The :class:`DesignSums` of clustering axis ``axis``."""

    def column_spread(self, axis: int, expected: str | None = None) -> ColumnSpread:
        """The :class:`~winrate.variance.meats.ColumnSpread` of axis ``axis``'s clusters
        (uncorrected): what the effective cluster counts read; from its one-way term here,
        in fewer operations where the form allows. ``expected`` is the correction the
        caller will ask :meth:`term_meats` for next when it is known already (None: not
        known): a form may make both in one pass; the spread is the same either way."""
        return spread_of_meats([self.term_meats("none")[axis]])[0]

    def same_pair_icc(self, axis: int) -> float | None:
        """The ANOVA ICC of the pair-centred scores grouped by (cluster, pair) cells of
        axis ``axis`` (what the single-cluster pairs' bound reads:
        :func:`winrate.inference.covariance._same_pair_icc`) where this form reduced it;
        None: the caller computes it from the rows or cells it holds in memory."""
        return None

    def design(self, axis: int) -> AxisDesign:
        """``m``, single-cluster pairs and ICC of an axis from its :class:`DesignSums`."""
        sums = self.design_sums(axis)
        m = diagnostics.per_cluster(self.n_per_model, sums.clusters_of_model)
        return AxisDesign(m, sums.single,
                          diagnostics.icc_of_sums(sums.size, sums.centred_sum, sums.squares))


@dataclass(frozen=True)
class Clustered:
    """:func:`clustered`'s result: ``naive`` (q', q') the naive covariance of every
    parameter (bread applied), ``covariance`` the :class:`MultiwayCovariance` (None
    without clustering axes), ``designs`` each axis' :class:`AxisDesign` in clustering
    order."""

    naive: np.ndarray
    covariance: MultiwayCovariance | None
    designs: tuple[AxisDesign, ...]

    @property
    def psd_repaired(self) -> bool:
        """Whether the multiway sum was clipped to PSD (CGM 2011, sec. 2.3)."""
        return self.covariance is not None and self.covariance.psd_repaired


def clustered(sums: ClusterSums, correction: str, designs: bool = True) -> Clustered:
    """The naive and the multiway cluster-robust covariance of ``sums`` and each axis'
    design (``designs=False``: none).

    ``V = sum_{S non-empty} (-1)^(|S|+1) c(G_S) B M_S B^T`` over subsets S of the axes
    (Cameron, Gelbach & Miller 2011, eq. 2.11), ``G_S`` the non-empty clusters of the
    term, ``c`` :func:`small_sample_factor`. With two or more axes a non-PSD sum is
    clipped (:func:`~winrate.variance.meats.repair_psd`) on the combined meat before the
    bread, so the repaired covariance transforms with the bread (``T B`` gives
    ``T V T^T``); the repair is returned as ``psd_repaired``, not emitted.
    """
    check_correction(correction)
    naive = sandwich(sums.naive_meat(correction), sums.bread)
    n_axes = len(sums.n_clusters)
    if n_axes == 0:
        return Clustered(naive, None, ())
    for i, size in enumerate(sums.n_clusters):
        require_two_clusters(size, f"groups[{i}]")
    parts = [(dims, term_sign(dims), small_sample_factor(group.n_groups, correction)
              * group.meat, group)
             for dims, group in zip(subsets(n_axes), sums.term_meats(correction), strict=True)]
    meat, min_eig, repaired = combine_terms(parts)
    covariance = MultiwayCovariance(
        cov=sandwich(meat, sums.bread), n_clusters=sums.n_clusters,
        terms=tuple((dims, group.n_groups, sign) for dims, sign, _, group in parts),
        term_covs=tuple(sandwich(term_meat, sums.bread) for _, _, term_meat, _ in parts),
        correction=correction, min_eigenvalue=min_eig, psd_repaired=repaired,
        term_meats=tuple(group for *_, group in parts))
    found = tuple(sums.design(d) for d in range(n_axes)) if designs else ()
    return Clustered(naive, covariance, found)


def _require_comparisons(n_total: float, correction: str) -> None:
    if correction != "none" and n_total <= 1:
        raise WinrateInputError("the log holds a single comparison: no variance can be "
                                "estimated from it")


@dataclass(frozen=True)
class RowDesign:
    """What the design sums read of a fit's rows: each row's models, its pair (of
    ``n_pairs``), its pair-centred score and its frequency (None: 1)."""

    model_a: np.ndarray
    model_b: np.ndarray
    n_models: int
    pair: np.ndarray
    n_pairs: int
    centered: np.ndarray
    frequency: np.ndarray | None

    @cached_property
    def centred(self) -> tuple[np.ndarray, float]:
        """:func:`winrate.variance.diagnostics.centred_scores`, once for every axis."""
        return diagnostics.centred_scores(self.centered, self.frequency)


class RowSums(ClusterSums):
    """:class:`ClusterSums` of influence rows in memory (CSR or dense), the axes' cluster
    ``codes`` per row, CR2 ``strata`` (the estimator's) and row ``frequency``; the design
    sums from ``rows`` (:class:`RowDesign`; None: not asked for)."""

    def __init__(self, influence, codes: list[np.ndarray], sizes: list[int],
                 bread=None, strata=None, frequency=None, rows: RowDesign | None = None,
                 n_per_model=None):
        super().__init__(bread, n_per_model)
        self.influence = as_rows(influence)
        n = self.influence.shape[0]
        for c in codes:
            if c.shape[0] != n:
                raise ValueError(f"groups has {c.shape[0]} entries but influence has {n} rows")
        self.codes, self.sizes = codes, sizes
        if strata is not None and np.shape(strata) != (n,):
            raise ValueError(f"strata has shape {np.shape(strata)}, expected ({n},)")
        self.strata = strata
        self.frequency = None if frequency is None else np.asarray(frequency, dtype=float)
        if self.frequency is not None and self.frequency.shape != (n,):
            raise ValueError(f"frequency has shape {self.frequency.shape}, expected ({n},)")
        self.rows = rows
        self._meats: dict[str, list[GroupMeat]] = {}
        self._spreads: list[ColumnSpread] | None = None

    @property
    def n_clusters(self) -> tuple[int, ...]:
        return tuple(self.sizes)

    def naive_meat(self, correction: str) -> np.ndarray:
        infl, freq = self.influence, self.frequency
        n_total = infl.shape[0] if freq is None else freq.sum()
        _require_comparisons(n_total, correction)
        row_scale = None if freq is None else 1.0 / freq
        if self.strata is None or correction == "none":
            return small_sample_factor(n_total, correction) * row_meat(infl, row_scale)
        size = self._strata.stratum_size
        ratio = np.divide(size, size - 1, out=np.ones(size.shape[0]), where=size > 1)
        return row_meat(infl, row_scale, self._strata.stratum, ratio)

    @property
    def _nested(self) -> bool:
        """Whether the uncorrected terms come from one two-way radix pass
        (:func:`~winrate.variance.meats.nested_meats`): two axes, CSR rows, and the smaller
        axis' dense totals small enough."""
        return (sp.issparse(self.influence) and len(self.codes) == 2
                and min(self.sizes) * self.influence.shape[1] <= DENSE_INNER_LIMIT)

    @cached_property
    def _nests_leverage(self) -> bool:
        """Whether the two-way pass also scales CR2's terms itself
        (:func:`~winrate.variance.meats.nests_leverage`)."""
        return (self._nested and self.strata is not None
                and nests_leverage(self.influence, self._strata, min(self.sizes)))

    def _term_codes(self, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
        return intersect_codes([self.codes[d] for d in dims], [self.sizes[d] for d in dims])

    def term_meats(self, correction: str) -> list[GroupMeat]:
        """Each kind (uncorrected, ``"cr2"``) computed once: the effective cluster counts
        of ``auto`` and then the variance read the same."""
        kind = "cr2" if correction == "cr2" else "none"
        if kind not in self._meats:
            self._meats[kind] = (self._cr2_meats() if kind == "cr2"
                                 else self._uncorrected_meats())
        return self._meats[kind]

    def _uncorrected_meats(self) -> list[GroupMeat]:
        if self._nested:
            return nested_meats(self.influence, self.codes, self.sizes)[0]
        return [meat_from_codes(self.influence, *self._term_codes(dims))
                for dims in subsets(len(self.codes))]

    def _cr2_meats(self) -> list[GroupMeat]:
        if self._nests_leverage:
            return nested_meats(self.influence, self.codes, self.sizes, self._strata)[0]
        found = []
        for dims in subsets(len(self.codes)):
            codes, n_range = self._term_codes(dims)
            scale = self._strata.scale(codes, n_range)
            found.append(meat_from_codes(scale_rows(self.influence, scale), codes, n_range))
        return found

    @cached_property
    def _strata(self) -> StrataLeverage:
        """The strata's codes and per-row totals, once for the naive meat's per-stratum
        factor and every CR2 term."""
        return StrataLeverage(self.strata, self.frequency)

    def column_spread(self, axis: int, expected: str | None = None) -> ColumnSpread:
        """From the two-way pass when it applies (its meats serve the variance too), else
        in O(non-zeros) (:func:`~winrate.variance.meats.column_spread`). Asked first (by
        ``auto``) where the pass scales CR2's terms too, it makes the CR2 terms in the same
        pass: with the uncorrected ones, which ``auto`` reads where it takes CR1, or, where
        CR2 is ``expected``, with only the uncorrected spread (the 5M-row CLI bench log's
        method choice took 1.7 s instead of 2.0-2.4 s; were CR1 asked for after all, its
        terms take a pass of their own)."""
        if not self._nested:
            return column_spread(self.influence, self.codes[axis], self.sizes[axis])
        if not self._meats and self._nests_leverage:
            spread_only = expected == "cr2"
            unscaled, self._meats["cr2"] = nested_meats(
                self.influence, self.codes, self.sizes, self._strata, paired=True,
                spread_only=spread_only)
            if spread_only:
                self._spreads = spread_of_meats(unscaled[:2])
            else:
                self._meats["none"] = unscaled
        if "none" not in self._meats and self._spreads is not None:
            return self._spreads[axis]
        return super().column_spread(axis)

    def design_sums(self, axis: int) -> DesignSums:
        rows = self.rows
        deviation, squares = rows.centred
        return DesignSums(*diagnostics.row_design_sums(
            self.codes[axis], self.sizes[axis], rows.model_a, rows.model_b, rows.n_models,
            rows.pair, rows.n_pairs, rows.frequency, deviation), squares)


class CellSums(ClusterSums):
    """:class:`ClusterSums` of influence held as cell totals
    (:class:`~winrate.estimators.cells.CellTotals`; the axes' ``codes`` are the cells'),
    with the fit's observed ``pairs`` (P, 2) and pair ``counts`` (L, L). CR2 needs clusters
    of one cell (:meth:`CellTotals.leverage_scaled`); the naive meats were summed with the
    cells, Cochran's per-stratum one among them."""

    keeps_rows = False

    def __init__(self, cells: CellTotals, codes: list[np.ndarray], sizes: list[int],
                 bread=None, pairs=None, counts=None):
        super().__init__(bread, None if counts is None else counts.sum(axis=1))
        for c in codes:
            if c.shape[0] != cells.shape[0]:
                raise ValueError(f"groups has {c.shape[0]} entries but influence has "
                                 f"{cells.shape[0]} rows")
        self.cells, self.codes, self.sizes = cells, codes, sizes
        self.pairs, self.counts = pairs, counts

    @property
    def n_clusters(self) -> tuple[int, ...]:
        return tuple(self.sizes)

    def naive_meat(self, correction: str) -> np.ndarray:
        cells = self.cells
        _require_comparisons(cells.n_rows, correction)
        if correction != "none" and cells.stratum_row_meat is not None:
            return cells.stratum_row_meat
        return small_sample_factor(cells.n_rows, correction) * cells.row_meat

    def term_meats(self, correction: str) -> list[GroupMeat]:
        found = []
        for dims in subsets(len(self.codes)):
            codes, n_range = intersect_codes([self.codes[d] for d in dims],
                                             [self.sizes[d] for d in dims])
            cells = self.cells.leverage_scaled(codes) if correction == "cr2" else self.cells
            found.append(meat_of_parts(cells.totals, cells.within, codes, n_range))
        return found

    def column_spread(self, axis: int, expected: str | None = None) -> ColumnSpread:
        return spread_of_parts(self.cells.totals, self.cells.within, self.codes[axis],
                               self.sizes[axis])

    def design_sums(self, axis: int) -> DesignSums:
        return DesignSums(*diagnostics.cell_design_sums(self.cells, self.pairs, self.counts,
                                                        self.codes[axis]))


def influence_sums(influence, groups: list, *, bread=None, strata=None, frequency=None,
                   log=None, board=None) -> ClusterSums:
    """The :class:`ClusterSums` of an influence (CSR or dense rows, or cell totals)
    clustered by ``groups`` (one array of labels or codes per axis); the design sums
    read the fit ``board`` and its ``log`` when given."""
    coded = [group_codes(g) for g in groups]
    codes, sizes = [c for c, _ in coded], [s for _, s in coded]
    if not keeps_rows(influence):  # cell totals
        return CellSums(influence, codes, sizes, bread,
                        *((board.pairs, board.counts) if board is not None else ()))
    rows = None
    if board is not None and board.pair is not None:
        rows = RowDesign(log.model_a, log.model_b, log.n_models, board.pair,
                         len(board.pairs), board.centered, frequency)
    return RowSums(influence, codes, sizes, bread, strata, frequency, rows,
                   None if board is None else board.counts.sum(axis=1))


def memory_sums(log, board, clustering: tuple[str, ...], strata) -> ClusterSums:
    """The :class:`ClusterSums` of ``board`` fitted to ``log`` in memory, by the
    ``clustering`` axes of the log; ``strata`` the estimator's
    (:meth:`winrate.estimators.base.Estimator.cr2_strata`): the naive meat's per-stratum
    factor, and CR2's leverage."""
    return influence_sums(board.influence, [log.axes[name].codes for name in clustering],
                          bread=board.bread, strata=strata, frequency=log.frequency,
                          log=log, board=board)
