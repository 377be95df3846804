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
  bucket's :class:`~winrate.variance.meats.GroupMeat` computed by the in-memory kernels;
  the largest cluster total is the largest over buckets;
* a term whose clusters span buckets (the judge axis, when buckets hold prompts) keeps its
  clusters' totals ``t_g`` and sums of squared rows (G x q, dense) and adds each bucket's;
  its meat follows at the end.

CR2 scales each row by ``(1 - m_gh / n_h)^{-1/2}`` (:func:`stratum_leverage_scale`): ``n_h``
is the stratum's total in the key log, ``m_gh`` its frequency in the row's cluster, known
within a bucket for a term inside buckets and gathered by a first sweep over the buckets for
a term spanning them. The design sums of each axis
(:class:`winrate.variance.cluster_sums.DesignSums`) add up the same way
(:class:`winrate.variance.diagnostics.DesignState`): clusters per model (counted per
bucket, or from a bit per (cluster, model)), single-cluster pairs (each pair's first
cluster and whether another appears, merged across buckets) and the ANOVA ICC's cluster
sizes and centred sums. :class:`BucketSums` is this form of
:class:`~winrate.variance.cluster_sums.ClusterSums`; everything equals the in-memory
computation up to the order of floating-point sums.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

from winrate.variance import diagnostics
from winrate.variance.cluster_sums import ClusterSums, DesignSums
from winrate.variance.meats import (
    DENSE_INNER_LIMIT,
    GroupMeat,
    csr_parts,
    leverage_factor,
    meat_from_codes,
    meat_of_parts,
    nested_sums,
    require_two_clusters,
    scale_rows,
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
        indptr, indices, data = _gather_rows(*csr_parts(self.influence), rows, scale)
        influence = sp.csr_array((data, indices, indptr),
                                 shape=(rows.shape[0], self.influence.shape[1]))
        return Bucket(rows, scale, codes, influence)


class BucketSums(ClusterSums):
    """:class:`~winrate.variance.cluster_sums.ClusterSums` of a key fit read from the buckets
    ``sweep()`` yields (module doc); ``bucket_dim`` is the axis whose clusters the buckets
    hold whole, ``sizes`` each axis' clusters in the scan's dictionary. The naive meat is
    the key log's (``naive``: the in-memory sums of the key fit, which stand for every row).
    One sweep gives every term and every axis' design sums (two with CR2 across buckets)."""

    def __init__(self, fit: KeyFit, sweep: Callable[[], Iterable[dict]], sizes: list[int],
                 bucket_dim: int, bread: np.ndarray | None, naive: ClusterSums,
                 progress=None):
        super().__init__(bread, fit.n_per_model)
        self.fit, self.sweep, self.sizes, self.bucket_dim = fit, sweep, sizes, bucket_dim
        self.naive, self.progress = naive, progress
        self._swept: dict[bool, tuple[list[GroupMeat], list[DesignSums]]] = {}

    @property
    def n_clusters(self) -> tuple[int, ...]:
        return tuple(self.sizes)

    def naive_meat(self, correction: str) -> np.ndarray:
        return self.naive.naive_meat(correction)

    def term_meats(self, correction: str) -> list[GroupMeat]:
        return self._read(correction == "cr2")[0]

    def design_sums(self, axis: int) -> DesignSums:
        cr2 = next(iter(self._swept), False)  # any sweep's designs: they do not depend on CR2
        return self._read(cr2)[1][axis]

    def _read(self, cr2: bool) -> tuple[list[GroupMeat], list[DesignSums]]:
        if cr2 not in self._swept:
            self._swept[cr2] = _sweep_buckets(self.fit, self.sweep, self.sizes,
                                              self.bucket_dim, cr2, self.progress)
        return self._swept[cr2]


def _sweep_buckets(fit: KeyFit, sweep, sizes: list[int], bucket_dim: int, cr2: bool,
                   progress) -> tuple[list[GroupMeat], list[DesignSums]]:
    """Every inclusion-exclusion term's :class:`GroupMeat` and each axis'
    :class:`DesignSums` from the buckets (module doc)."""
    n_dims = len(sizes)
    terms = [_Term(dims, bucket_dim in dims, int(np.prod([sizes[d] for d in dims])))
             for dims in subsets(n_dims)]
    designs = [diagnostics.DesignState(sizes[d], fit.n_models, fit.n_pairs,
                                       bits=d != bucket_dim)
               for d in range(n_dims)]
    spanning_cr2 = [t for t in terms if cr2 and not t.inside]
    if spanning_cr2:
        for part in sweep():
            bucket = fit.bucket(part, n_dims)
            for term in spanning_cr2:
                _add_leverage(term, term.codes(bucket, sizes), fit.strata[bucket.rows],
                              bucket.scale * fit.frequency[bucket.rows])
    nested = (n_dims == 2 and not cr2 and sp.issparse(fit.influence)
              and min(sizes) * fit.influence.shape[1] <= DENSE_INNER_LIMIT)
    for part in _progress(sweep(), progress):
        bucket = fit.bucket(part, n_dims)
        if bucket.rows.size:
            _add_bucket(terms, designs, bucket, fit, sizes, bucket_dim, cr2, nested)
    groups = []
    for term in terms:
        group = _finish_term(term)
        if len(term.dims) == 1:  # as in memory: the fit's rows must span two clusters
            require_two_clusters(group.n_groups, f"groups[{term.dims[0]}]")
        groups.append(group)
    squares = float(fit.frequency @ (fit.centered - fit.grand_mean) ** 2)
    return groups, [DesignSums(d.count, d.single, d.size, d.centred_sum, squares)
                    for d in designs]


def _add_bucket(terms: list[_Term], designs: list, bucket: Bucket, fit: KeyFit,
                sizes: list[int], bucket_dim: int, cr2: bool, nested: bool) -> None:
    """Add one bucket to every term (both axes and their cells in one pass when
    ``nested``) and to every axis' design sums."""
    if nested:
        _add_nested(terms, bucket, sizes)
    else:
        for term in terms:
            _add_term(term, bucket, fit, sizes, cr2)
    for d, design in enumerate(designs):
        _add_design(design, bucket, fit, bucket.codes[d], inside=d == bucket_dim)


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
    return scale_rows(bucket.influence, scale)


def _add_term(term: _Term, bucket: Bucket, fit: KeyFit, sizes: list[int], cr2: bool) -> None:
    codes = term.codes(bucket, sizes)
    rows = _rows_for(term, bucket, fit, codes, cr2)
    if term.inside:
        _add_inside(term, meat_from_codes(rows, codes, term.n_range))
        return
    if term.totals is None:
        term.totals = np.zeros((term.n_range, rows.shape[1]))
        term.within = np.zeros((term.n_range, rows.shape[1]))
        term.present = np.zeros(term.n_range, bool)
    _scatter_rows(term.totals, term.within, codes, *csr_parts(rows))
    term.present[codes] = True


def _add_inside(term: _Term, group: GroupMeat) -> None:
    term.meat = group if term.meat is None else term.meat.merged(group)


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


def _finish_term(term: _Term) -> GroupMeat:
    if term.inside:
        return term.meat
    clusters = np.flatnonzero(term.present)  # the clusters of the fit's rows
    group = meat_of_parts(term.totals[clusters], term.within[clusters],
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


def _add_design(design: diagnostics.DesignState, bucket: Bucket, fit: KeyFit,
                codes: np.ndarray, inside: bool) -> None:
    """Add a bucket's rows to an axis' design sums; the bucket axis' models are counted
    per bucket (its clusters lie whole in one), a spanning axis' by its (cluster, model)
    bits across buckets."""
    a, b = fit.model_a[bucket.rows], fit.model_b[bucket.rows]
    if inside:
        design.count += diagnostics.clusters_per_model(a, b, codes, fit.n_models)
    design.add(codes, a, b, fit.pair[bucket.rows], bucket.scale * fit.frequency[bucket.rows],
               fit.centered[bucket.rows] - fit.grand_mean)


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
