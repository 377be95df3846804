"""Clustered covariance and design diagnostics summed over buckets of whole clusters.

A log too large for memory arrives in buckets (:meth:`winrate.io.scan.Scan.bucket_rows`):
each bucket holds every row of some clusters of one axis, the bucket axis, and each row
comes as its key (a row of the fitted key log, whose influence ``U_k`` is the total of its
``F_k`` comparisons) with its weight ``w`` and cluster codes. Row r's influence is
``u_r = U_k w_r / F_k`` (exact: the estimating equations are sums of a function of the
key, :mod:`winrate.io.scan`). With ``t_g = sum_{r in g} u_r``:

* a term of the multiway sum whose clusters lie inside buckets (every term containing the
  bucket axis: its clusters, and their intersections with other axes) has its meat
  ``sum_g t_g t_g^T`` summed over the buckets from each bucket's rows alone, with the
  bucket's :class:`~winrate.variance.sandwich.GroupMeat` computed by the in-memory kernels;
  the largest cluster total is the largest over buckets;
* a term whose clusters span buckets (the judge axis, when buckets hold prompts) keeps its
  clusters' totals ``t_g`` and sums of squared rows (G x q, dense) and adds each bucket's;
  its meat follows at the end.

CR2 scales each row by ``(1 - m_gh / n_h)^{-1/2}`` (:func:`stratum_leverage_scale`): ``n_h``
is the stratum's total in the key log, ``m_gh`` its frequency in the row's cluster, known
within a bucket for a term inside buckets and gathered by a first sweep over the buckets for
a term spanning them. The design diagnostics of each axis (:func:`axis_design` in memory)
add up the same way: clusters per model (counted per bucket, or from a cluster x model
presence table), single-cluster pairs (each pair's first cluster and whether another
appears, merged across buckets) and the ANOVA ICC's cluster sizes and centred sums.
Everything equals the in-memory computation up to the order of floating-point sums.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

from winrate.variance import diagnostics
from winrate.variance.sandwich import (
    _DENSE_INNER_LIMIT,
    GroupMeat,
    MultiwayCovariance,
    _csr_parts,
    _meat_from_codes,
    _meat_of_parts,
    _require_two_clusters,
    _scale_rows,
    _sign,
    combine_terms,
    leverage_factor,
    nested_sums,
    sandwich,
    small_sample_factor,
    stratum_leverage_scale,
    subsets,
)


@dataclass
class Bucket:
    """One bucket's rows as the fit sees them: ``rows`` (indices into the fit's rows),
    ``scale`` (``w / F``), ``codes`` (one array per clustering axis, global codes) and the
    rows' ``influence`` (CSR, ``U_k`` scaled)."""

    rows: np.ndarray
    scale: np.ndarray
    codes: list[np.ndarray]
    influence: sp.csr_array


@dataclass
class _Term:
    """One inclusion-exclusion term's running sums (module doc)."""

    dims: tuple[int, ...]
    inside: bool
    n_range: int
    meat: GroupMeat | None = None
    totals: np.ndarray | None = None
    within: np.ndarray | None = None
    #: the spanning term's clusters that hold rows of the fit (a cluster of the scan's
    #: dictionary may hold only rows the estimator leaves out: no cluster of the fit)
    present: np.ndarray | None = None
    #: (cluster << 32 | stratum) keys and their frequencies, for a spanning CR2 term
    leverage: tuple | None = None

    def codes(self, bucket: Bucket, sizes: list[int]) -> np.ndarray:
        """Global codes of the term's clusters: mixed radix over its axes, never compacted
        (so a code means the same cluster in every bucket)."""
        combined = np.zeros(bucket.rows.shape[0], np.int64)
        for d in self.dims:
            combined = combined * sizes[d] + bucket.codes[d]
        return combined


@dataclass
class _AxisDesign:
    """One axis' design sums (module doc)."""

    n_clusters: int
    inside: bool
    n_models: int
    n_pairs: int
    clusters_of_model: np.ndarray = None
    presence: np.ndarray | None = None
    first: np.ndarray = None
    single: np.ndarray = None
    size: np.ndarray = None
    centred_sum: np.ndarray = None

    def __post_init__(self):
        self.clusters_of_model = np.zeros(self.n_models, np.int64)
        if not self.inside:
            self.presence = np.zeros((self.n_clusters, self.n_models), bool)
        self.first = np.full(self.n_pairs, -1, np.int64)
        self.single = np.ones(self.n_pairs, bool)
        self.size = np.zeros(self.n_clusters)
        self.centred_sum = np.zeros(self.n_clusters)


@dataclass
class KeyFit:
    """What the buckets are read against: the fit of the key log (``influence`` rows,
    ``pair`` and ``centered`` per key row, ``frequency`` F per key row, the key rows'
    models ``model_a``/``model_b``, each model's comparisons ``n_per_model``),
    ``key_rows`` mapping a key index of the scan to its row of the fit (-1: left out by
    the estimator), and the CR2 ``strata`` per key row with ``stratum_total`` (None
    without CR2)."""

    influence: sp.csr_array
    pair: np.ndarray
    centered: np.ndarray
    frequency: np.ndarray
    model_a: np.ndarray
    model_b: np.ndarray
    n_per_model: np.ndarray
    n_pairs: int
    key_rows: np.ndarray
    strata: np.ndarray | None = None
    stratum_total: np.ndarray | None = None
    grand_mean: float = field(init=False)

    @property
    def n_models(self) -> int:
        return self.n_per_model.shape[0]

    def __post_init__(self):
        self.grand_mean = float(self.frequency @ self.centered / self.frequency.sum())

    def bucket(self, part: dict, n_axes: int) -> Bucket:
        """A bucket of the scan (:meth:`winrate.io.scan.Scan.bucket_rows`) as fit rows."""
        from winrate.io.scan import KEY

        rows = self.key_rows[part[KEY]]
        kept = rows >= 0
        codes = [part[f"axis{i}"] for i in range(n_axes)]
        weight = part.get("weight")
        if not kept.all():
            rows, codes = rows[kept], [c[kept] for c in codes]
            weight = None if weight is None else weight[kept]
        scale = (1.0 if weight is None else weight) / self.frequency[rows]
        indptr, indices, data = _gather_rows(*_csr_parts(self.influence), rows, scale)
        influence = sp.csr_array((data, indices, indptr),
                                 shape=(rows.shape[0], self.influence.shape[1]))
        return Bucket(rows, scale, codes, influence)


def bucket_covariance(fit: KeyFit, sweep: Callable[[], Iterable[dict]], sizes: list[int],
                      bucket_dim: int, correction: str, bread: np.ndarray | None,
                      progress=None) -> tuple[MultiwayCovariance, list[tuple]]:
    """The multiway covariance of :func:`winrate.variance.sandwich.multiway_cluster_cov`
    and each axis' ``(m, single-cluster pairs, ICC)`` of
    :func:`winrate.variance.diagnostics.axis_design`, from the buckets ``sweep()`` yields
    (module doc); ``bucket_dim`` is the axis whose clusters the buckets hold whole."""
    n_dims = len(sizes)
    terms = [_Term(dims, bucket_dim in dims, int(np.prod([sizes[d] for d in dims])))
             for dims in subsets(n_dims)]
    designs = [_AxisDesign(sizes[d], d == bucket_dim, fit.n_models, fit.n_pairs)
               for d in range(n_dims)]
    cr2 = correction == "cr2"
    spanning_cr2 = [t for t in terms if cr2 and not t.inside]
    if spanning_cr2:
        for part in sweep():
            bucket = fit.bucket(part, n_dims)
            for term in spanning_cr2:
                _add_leverage(term, term.codes(bucket, sizes), fit.strata[bucket.rows],
                              bucket.scale * fit.frequency[bucket.rows])
    nested = (n_dims == 2 and not cr2 and sp.issparse(fit.influence)
              and min(sizes) * fit.influence.shape[1] <= _DENSE_INNER_LIMIT)
    for part in _progress(sweep(), progress):
        bucket = fit.bucket(part, n_dims)
        if not bucket.rows.size:
            continue
        if nested:
            _add_nested(terms, bucket, sizes)
        else:
            for term in terms:
                _add_term(term, bucket, fit, sizes, cr2)
        for d, design in enumerate(designs):
            _add_design(design, bucket, fit, bucket.codes[d])
    parts = []
    for term in terms:
        group = _finish_term(term)
        if len(term.dims) == 1:  # as in memory: the fit's rows must span two clusters
            _require_two_clusters(group.n_groups, f"groups[{term.dims[0]}]")
        parts.append((term.dims, _sign(term.dims),
                      small_sample_factor(group.n_groups, correction) * group.meat, group))
    meat, min_eig, repaired = combine_terms(parts)
    covariance = MultiwayCovariance(
        cov=sandwich(meat, bread), n_clusters=tuple(sizes),
        terms=tuple((dims, group.n_groups, sign) for dims, sign, _, group in parts),
        term_covs=tuple(sandwich(term_meat, bread) for _, _, term_meat, _ in parts),
        correction=correction, min_eigenvalue=min_eig, psd_repaired=repaired,
        term_meats=tuple(group for *_, group in parts))
    squares = float(fit.frequency @ (fit.centered - fit.grand_mean) ** 2)
    return covariance, [_finish_design(design, fit, squares) for design in designs]


def _progress(parts, progress):
    return parts if progress is None else progress(parts)


def _rows_for(term: _Term, bucket: Bucket, fit: KeyFit, codes: np.ndarray, cr2: bool):
    """The bucket's influence, CR2-scaled for this term when asked (module doc)."""
    if not cr2:
        return bucket.influence
    strata = fit.strata[bucket.rows]
    freq = bucket.scale * fit.frequency[bucket.rows]
    if term.inside:
        scale = stratum_leverage_scale(codes, strata, freq, fit.stratum_total)
    else:
        scale = _spanning_leverage(term, codes, strata, fit.stratum_total)
    return _scale_rows(bucket.influence, scale)


def _add_term(term: _Term, bucket: Bucket, fit: KeyFit, sizes: list[int], cr2: bool) -> None:
    codes = term.codes(bucket, sizes)
    rows = _rows_for(term, bucket, fit, codes, cr2)
    if term.inside:
        _add_inside(term, _meat_from_codes(rows, codes, term.n_range))
        return
    if term.totals is None:
        term.totals = np.zeros((term.n_range, rows.shape[1]))
        term.within = np.zeros((term.n_range, rows.shape[1]))
        term.present = np.zeros(term.n_range, bool)
    _scatter_rows(term.totals, term.within, codes, *_csr_parts(rows))
    term.present[codes] = True


def _add_inside(term: _Term, group: GroupMeat) -> None:
    term.meat = group if term.meat is None else _merge(term.meat, group)


def _add_nested(terms: list[_Term], bucket: Bucket, sizes: list[int]) -> None:
    """Both axes and their cells from one radix pass (:func:`nested_sums`), when the
    buckets hold the outer axis: its meat and the cells' add up, the inner axis keeps its
    cluster totals."""
    outer, cells, totals, squares, present = nested_sums(bucket.influence, bucket.codes,
                                                         sizes)
    outer_term, inner_term, cells_term = (terms if sizes[0] >= sizes[1]
                                          else (terms[1], terms[0], terms[2]))
    _add_inside(outer_term, outer)
    _add_inside(cells_term, cells)
    if inner_term.totals is None:
        inner_term.totals, inner_term.within, inner_term.present = totals, squares, present
    else:
        inner_term.totals += totals
        inner_term.within += squares
        inner_term.present |= present


@njit(cache=True)
def _scatter_rows(totals, within, codes, indptr, indices, data):  # pragma: no cover
    """Add each CSR row to its cluster's totals and its squares to the cluster's sums of
    squares (one pass)."""
    for r in range(codes.shape[0]):
        g = codes[r]
        for j in range(indptr[r], indptr[r + 1]):
            totals[g, indices[j]] += data[j]
            within[g, indices[j]] += data[j] * data[j]


def _merge(a: GroupMeat, b: GroupMeat) -> GroupMeat:
    """Two buckets' meats of disjoint clusters as one: sums add; the largest total is the
    larger of the two (the earlier bucket's on ties)."""
    later = b.largest > a.largest
    return GroupMeat(a.meat + b.meat, a.n_groups + b.n_groups, np.maximum(a.largest, b.largest),
                     np.where(later, b.argmax, a.argmax), a.row_squares + b.row_squares,
                     a.spread + b.spread, a.fourth + b.fourth)


def _finish_term(term: _Term) -> GroupMeat:
    if term.inside:
        return term.meat
    clusters = np.flatnonzero(term.present)  # the clusters of the fit's rows
    group = _meat_of_parts(term.totals[clusters], term.within[clusters],
                           np.arange(clusters.size), clusters.size)
    return GroupMeat(group.meat, group.n_groups, group.largest,
                     np.where(group.argmax >= 0, clusters[np.maximum(group.argmax, 0)], -1),
                     group.row_squares, group.spread, group.fourth)


def _add_leverage(term: _Term, codes: np.ndarray, strata: np.ndarray,
                  freq: np.ndarray) -> None:
    """Add a bucket's (cluster, stratum) frequencies to a spanning CR2 term's table."""
    keys, inverse = np.unique(_block(codes, strata), return_inverse=True)
    found = [] if term.leverage is None else [term.leverage]
    keys = np.concatenate([k for k, _ in found] + [keys])
    sums = np.concatenate([v for _, v in found] + [np.bincount(inverse, weights=freq)])
    merged, inverse = np.unique(keys, return_inverse=True)
    term.leverage = (merged, np.bincount(inverse, weights=sums))


def _block(codes: np.ndarray, strata: np.ndarray) -> np.ndarray:
    return codes.astype(np.int64) << 32 | strata.astype(np.int64)


def _spanning_leverage(term: _Term, codes: np.ndarray, strata: np.ndarray,
                       stratum_total: np.ndarray) -> np.ndarray:
    """CR2 row factors of a spanning term from its gathered (cluster, stratum) table."""
    keys, values = term.leverage
    m = values[np.searchsorted(keys, _block(codes, strata))]
    return leverage_factor(m, stratum_total[strata])


def _add_design(design: _AxisDesign, bucket: Bucket, fit: KeyFit, codes: np.ndarray) -> None:
    a, b = fit.model_a[bucket.rows], fit.model_b[bucket.rows]
    if design.inside:
        design.clusters_of_model += diagnostics.clusters_per_model(a, b, codes, fit.n_models)
    freq = bucket.scale * fit.frequency[bucket.rows]
    _design_pass(codes, a, b, fit.pair[bucket.rows], freq,
                 fit.centered[bucket.rows] - fit.grand_mean,
                 design.presence if design.presence is not None else np.zeros((0, 0), bool),
                 design.first, design.single, design.size, design.centred_sum)


@njit(cache=True)
def _design_pass(codes, model_a, model_b, pairs, freq, deviation, presence, first, single,
                 size, centred_sum):  # pragma: no cover - numba
    """One pass over a bucket's rows for one axis (module doc): the (cluster, model)
    presence of a spanning axis (``presence`` of shape (0, 0): not kept), each pair's first
    cluster and whether another appears (over every bucket so far, so the buckets merge
    as one pass over all rows would), and each cluster's frequency and sum of centred
    scores."""
    spanning = presence.shape[0] > 0
    for r in range(codes.shape[0]):
        g = codes[r]
        if spanning:
            presence[g, model_a[r]] = True
            presence[g, model_b[r]] = True
        p = pairs[r]
        if first[p] < 0:
            first[p] = g
        elif first[p] != g:
            single[p] = False
        size[g] += freq[r]
        centred_sum[g] += freq[r] * deviation[r]


@njit(cache=True)
def _gather_rows(indptr, indices, data, rows, scale):  # pragma: no cover - numba
    """The CSR rows ``rows`` of a matrix, row i scaled by ``scale[i]`` (a row's influence
    is its key's times ``w / F``)."""
    n = rows.shape[0]
    out_ptr = np.empty(n + 1, np.int64)
    out_ptr[0] = 0
    for i in range(n):
        out_ptr[i + 1] = out_ptr[i] + indptr[rows[i] + 1] - indptr[rows[i]]
    out_indices = np.empty(out_ptr[n], indices.dtype)
    out_data = np.empty(out_ptr[n], np.float64)
    for i in range(n):
        o = out_ptr[i]
        for j in range(indptr[rows[i]], indptr[rows[i] + 1]):
            out_indices[o] = indices[j]
            out_data[o] = data[j] * scale[i]
            o += 1
    return out_ptr, out_indices, out_data


def _finish_design(design: _AxisDesign, fit: KeyFit, squares: float) -> tuple:
    counts = (design.clusters_of_model if design.inside
              else design.presence.sum(axis=0))
    n_per_model = fit.n_per_model
    m = np.divide(n_per_model, counts, out=np.full(fit.n_models, np.nan), where=counts > 0)
    return m, design.single, diagnostics.icc_of_sums(design.size, design.centred_sum, squares)
