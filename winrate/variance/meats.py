"""Sums of an influence by cluster, and their algebra: the kernels under every meat.

A clustered covariance reads an ``(n, q)`` influence (or score rows) only through sums over
the clusters of a clustering (:mod:`winrate.variance.sandwich` has the math and sources,
:mod:`winrate.variance.cluster_sums` the forms an influence comes in). This module holds
what those forms share: :class:`GroupMeat`, the sums ``sum_g t_g t_g^T`` of one clustering
with the pieces the diagnostics read (largest total, sums of squared rows, fourth powers),
the numba kernels that compute them from CSR rows in one radix pass (two-way: both axes
and their cells in one pass), the CR2 leverage factors, the small-sample factor, the PSD
repair and the inclusion-exclusion sum of Cameron, Gelbach & Miller (2011, JBES 29(2),
eq. 2.11).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit

from winrate.constants import CORRECTIONS
from winrate.errors import WinrateInputError, one_of
from winrate.io.logs import factorize_groups
from winrate.parallel import sized_kernel

_PSD_TOLERANCE = 1e-10


def as_rows(influence):
    """Influence rows as a CSR matrix or a 2-D float ndarray, never a densified sparse
    matrix."""
    if isinstance(influence, sp.csr_array):
        return influence
    if sp.issparse(influence):
        return sp.csr_array(influence)
    arr = np.asarray(influence, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"influence must be 2-D (n, K), got shape {arr.shape}")
    return arr


def check_correction(correction: str) -> None:
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {one_of(CORRECTIONS)}, got {correction!r}")


def sandwich(meat: np.ndarray, bread: np.ndarray | None) -> np.ndarray:
    """``B M B^T`` (module doc); the meat itself when there is no bread."""
    if bread is None:
        return meat
    return bread @ meat @ bread.T


def small_sample_factor(n_clusters: int, correction: str) -> float:
    """Multiplier c(G): 1 for CR0 and CR2 (whose correction scales the rows,
    :func:`stratum_leverage_scale`), G / (G - 1) for CR1 (infinite for G = 1)."""
    check_correction(correction)
    if correction in ("none", "cr2"):
        return 1.0
    return n_clusters / (n_clusters - 1) if n_clusters > 1 else np.inf


def stratum_leverage_scale(codes: np.ndarray, strata: np.ndarray,
                           frequency: np.ndarray | None = None,
                           stratum_total: np.ndarray | None = None,
                           n_range: int | None = None) -> np.ndarray:
    """CR2 row factors ``(1 - m_gh / n_h)^{-1/2}`` for clusters ``codes`` and strata
    ``strata`` (module doc, ``"cr2"``): ``m_gh`` is the frequency of stratum h in cluster g,
    ``n_h`` that of stratum h (from these rows, or ``stratum_total[h]`` when the rows are a
    part of the log holding whole clusters); 1 where the stratum lies wholly in the
    cluster. Codes in ``[0, n_range)`` (default: ``max + 1``)."""
    return StrataLeverage(strata, frequency, stratum_total).scale(codes, n_range)


class StrataLeverage:
    """What CR2's row factors (:func:`stratum_leverage_scale`) need of the rows' strata
    whatever the clustering, made once for the terms of a multiway sum: the strata's dense
    codes, each stratum's frequency ``n_h`` (from the rows' ``frequency``, 1 each when None,
    or ``stratum_total`` by label when the rows are a part of the log), and the per-row
    values only when asked for (each an array the length of the log)."""

    def __init__(self, strata: np.ndarray, frequency: np.ndarray | None = None,
                 stratum_total: np.ndarray | None = None):
        self.frequency = None if frequency is None else np.asarray(frequency, float)
        sizes = None if stratum_total is not None else dense_label_totals(strata,
                                                                          self.frequency)
        if sizes is not None:  # dense codes (a fit's pairs): codes and sizes in one pass
            self.stratum, self.n_strata = np.asarray(strata), sizes.shape[0]
            self.stratum_size = sizes.astype(float, copy=False)
            return
        self.stratum, labels = factorize_groups(strata)
        self.n_strata = len(labels)
        self.stratum_size = (
            np.bincount(self.stratum, weights=self.frequency,
                        minlength=self.n_strata).astype(float, copy=False)
            if stratum_total is None else np.asarray(stratum_total, float)[labels])

    @cached_property
    def freq(self) -> np.ndarray:
        """Each row's frequency (ones when the rows carry none)."""
        return (np.ones(self.stratum.shape[0]) if self.frequency is None
                else self.frequency)

    @cached_property
    def total(self) -> np.ndarray:
        """Each row's stratum frequency ``n_h``."""
        return self.stratum_size[self.stratum]

    def block_table(self, codes: np.ndarray, n_range: int) -> np.ndarray:
        """Each (cluster, stratum) block's frequency ``m`` as a dense (n_range, H) table,
        for clusters ``codes`` in ``[0, n_range)``."""
        totals = _dense_blocks(codes, n_range, self.stratum, self.n_strata, self.frequency)[1]
        return totals.astype(float, copy=False).reshape(n_range, self.n_strata)

    def scale(self, codes: np.ndarray, n_range: int | None = None) -> np.ndarray:
        """The factors for clusters ``codes`` in ``[0, n_range)`` (default ``max + 1``)."""
        n_range = int(codes.max(initial=-1)) + 1 if n_range is None else n_range
        m = block_frequency(codes, n_range, self.stratum, self.n_strata, self.freq)
        return leverage_factor(m, self.total)


def block_frequency(codes: np.ndarray, n_range: int, stratum: np.ndarray, n_strata: int,
                    freq: np.ndarray) -> np.ndarray:
    """Per row, the total ``freq`` of the rows sharing its cluster (``codes`` in
    ``[0, n_range)``) and its stratum (dense codes ``[0, n_strata)``), every block summed
    in row order: a bincount over the blocks when their table is small per
    row (:data:`DENSE_BLOCKS_PER_ROW`), else buckets of clusters
    (:func:`_bucketed_block_frequency`), both ``np.bincount``'s sums without coding the
    blocks."""
    if n_range * n_strata <= DENSE_BLOCKS_PER_ROW * codes.shape[0]:
        block, totals = _dense_blocks(codes, n_range, stratum, n_strata, freq)
        return totals[block]
    shift = max(_BLOCK_BUCKET_BITS, (-(-n_range // _MAX_BLOCK_BUCKETS) - 1).bit_length())
    n = codes.shape[0]
    kernel, n_chunks = _bucketed_block_frequency.choose(n)
    return kernel(codes, stratum, freq, n_strata, shift,
                  *bucket_layout(codes, shift, ((n_range - 1) >> shift) + 1, n_chunks),
                  *radix_arrays((n, np.int32), (n, stratum.dtype), (n, np.float64),
                                (n, np.int64), (n, np.float64)), n_chunks)


def _dense_blocks(codes: np.ndarray, n_range: int, stratum: np.ndarray, n_strata: int,
                  freq: np.ndarray | None):
    """Each row's (cluster, stratum) block ``codes * n_strata + stratum`` and every block's
    total ``freq`` (row counts when None), by one bincount over the dense table."""
    block = np.asarray(codes, np.int64) * n_strata + stratum  # no copy of int64 codes
    return block, np.bincount(block, weights=freq, minlength=n_range * n_strata)


#: Most (cluster, stratum) blocks per row for which :func:`block_frequency` sums them in one
#: dense table (a bincount in cache for a few clusters, as on a judge axis).
DENSE_BLOCKS_PER_ROW = 4
#: log2 of the clusters in a bucket of :func:`_bucketed_block_frequency` (its counting
#: sort's tables stay in a core's cache), unless that makes more buckets than
#: :data:`_MAX_BLOCK_BUCKETS` (each a write stream of the radix pass). 11 against 13 at 10M
#: rows: 1M clusters 1.5-1.6 against 1.9-2.2 s of processor time, 10M (so 12 bits) 2.3-2.6
#: against 2.1 (best of four, load 6-7).
_BLOCK_BUCKET_BITS = 11
_MAX_BLOCK_BUCKETS = 1 << 12


@njit(cache=True)
def bucket_offsets(histogram):  # pragma: no cover - numba
    """From the entries each chunk of rows puts in each bucket (``histogram``, (n_chunks,
    n_buckets)): where each chunk writes its first entry of each bucket, chunk after chunk
    within a bucket so that a bucket keeps row order, and where each bucket starts
    (n_buckets + 1 offsets)."""
    n_chunks, n_buckets = histogram.shape
    offsets = np.empty((n_chunks, n_buckets), np.int64)
    bucket_start = np.zeros(n_buckets + 1, np.int64)
    running = 0
    for b in range(n_buckets):
        bucket_start[b] = running
        for c in range(n_chunks):
            offsets[c, b] = running
            running += histogram[c, b]
    bucket_start[n_buckets] = running
    return offsets, bucket_start


@sized_kernel
def _bucket_histogram(codes, shift, n_buckets, n_chunks):  # pragma: no cover - numba
    """Per chunk of rows (``n_chunks`` equal ranges), how many rows fall in each bucket
    ``codes >> shift``: (n_chunks, n_buckets)."""
    n = codes.shape[0]
    histogram = np.zeros((n_chunks, n_buckets), np.int64)
    for c in numba.prange(n_chunks):
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            histogram[c, codes[r] >> shift] += 1
    return histogram


def bucket_layout(codes: np.ndarray, shift: int, n_buckets: int, n_chunks: int):
    """Where a stable radix pass of the rows into buckets ``codes >> shift`` writes, the
    rows split in ``n_chunks`` equal ranges, one per thread (1: serially): ``(offsets,
    bucket_start)``, chunk c's first place in each bucket and each bucket's start
    (:func:`bucket_offsets`); a pass writing chunk c's rows at ``offsets[c]``, each
    bucket's place advanced after a write, keeps row order within a bucket."""
    kernel = _bucket_histogram.parallel if n_chunks > 1 else _bucket_histogram.serial
    return bucket_offsets(kernel(codes, shift, n_buckets, n_chunks))


@njit(inline="always")
def radix_place(fill, code, shift):  # pragma: no cover - numba
    """Where a stable radix pass writes a row of ``code`` (buckets of ``2**shift`` codes;
    ``fill`` the pass' next place in each bucket, advanced) and its code within the bucket:
    the step every row-moving pass takes (:func:`bucket_layout` gives the first places)."""
    bucket = code >> shift
    i = fill[bucket]
    fill[bucket] = i + 1
    return i, code & ((1 << shift) - 1)


@sized_kernel
def _bucketed_block_frequency(codes, stratum, freq, n_strata, shift, offsets, bucket_start,
                              local, strata, weight, rows, m,
                              n_chunks):  # pragma: no cover - numba
    """:func:`block_frequency` by buckets of ``2**shift`` clusters: a stable radix pass
    copies each row's (cluster within its bucket, stratum, frequency, row) into its bucket
    (to ``local``, ``strata``, ``weight``, ``rows``), chunk c of the rows from its places
    ``offsets[c]`` on (``offsets``, ``bucket_start``: :func:`bucket_layout`); each thread
    then sorts its buckets by cluster (:func:`_bucket_order`, in cache) and sums each
    cluster's blocks in a (n_strata,) scratch, in row order, writing every row's block
    total back to its row of ``m``. The arrays are numpy's (:func:`radix_arrays`)."""
    n = codes.shape[0]
    for c in numba.prange(n_chunks):
        fill = offsets[c].copy()
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            i, within = radix_place(fill, codes[r], shift)
            local[i], strata[i], weight[i], rows[i] = within, stratum[r], freq[r], r
    n_buckets = bucket_start.shape[0] - 1
    for c in numba.prange(n_chunks):
        buffers = _sort_buffers(bucket_start, 1 << shift)
        scratch = np.zeros(n_strata)
        for b in range(c * n_buckets // n_chunks, (c + 1) * n_buckets // n_chunks):
            _bucket_blocks(_bucket_order(bucket_start[b], bucket_start[b + 1], local,
                                         1 << shift, buffers),
                           local, strata, weight, rows, scratch, m)
    return m


@njit(cache=True)
def _bucket_blocks(order, local, strata, weight, rows, scratch, m):  # pragma: no cover
    """One bucket of :func:`_bucketed_block_frequency`, its entries in cluster ``order``:
    each cluster's block totals summed in ``scratch`` and written to their rows of ``m``."""
    first = 0
    while first < order.shape[0]:
        last = first
        while last < order.shape[0] and local[order[last]] == local[order[first]]:
            scratch[strata[order[last]]] += weight[order[last]]
            last += 1
        for i in range(first, last):
            m[rows[order[i]]] = scratch[strata[order[i]]]
        for i in range(first, last):
            scratch[strata[order[i]]] = 0.0
        first = last


@njit(cache=True)
def cluster_order(codes, n_range):  # pragma: no cover - numba
    """The rows in order of their cluster code, rows of a cluster in row order (a stable
    counting sort, O(n + n_range)), and where each cluster starts in that order
    (``n_range + 1`` offsets)."""
    start = np.zeros(n_range + 1, np.int64)
    for r in range(codes.shape[0]):
        start[codes[r] + 1] += 1
    for g in range(n_range):
        start[g + 1] += start[g]
    fill = start[:-1].copy()
    order = np.empty(codes.shape[0], np.int64)
    for r in range(codes.shape[0]):
        order[fill[codes[r]]] = r
        fill[codes[r]] += 1
    return order, start


def leverage_factor(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``(1 - m / n)^{-1/2}`` for a block of frequency m in a stratum of frequency n; 1 where
    the block is the whole stratum (:func:`stratum_leverage_scale`)."""
    rest = 1.0 - m / n
    return np.where(rest > 1e-12, 1.0 / np.sqrt(np.maximum(rest, 1e-12)), 1.0)


def scale_rows(infl, scale: np.ndarray):
    """The influence with row r multiplied by ``scale[r]`` (CSR or dense)."""
    if sp.issparse(infl):
        return sp.csr_array((infl.data * np.repeat(scale, np.diff(infl.indptr)),
                             infl.indices, infl.indptr), shape=infl.shape)
    return infl * scale[:, None]


def group_codes(groups) -> tuple[np.ndarray, int]:
    """Dense codes ``0..G-1`` of the groups and the number of groups G: integer labels
    that are dense codes already (a log's axes) as they are, found in one counting pass
    (:func:`dense_label_totals`), anything else by
    :func:`~winrate.io.logs.factorize_groups` (which returns dense codes as they are too)."""
    found = dense_label_totals(groups)
    if found is not None:
        return np.asarray(groups), found.shape[0]
    codes, labels = factorize_groups(groups)
    return codes, len(labels)


def dense_label_totals(labels, weights: np.ndarray | None = None) -> np.ndarray | None:
    """Where ``labels`` are integers taking every value of ``0..max`` (dense codes), each
    code's total ``weights`` (its count when None), summed in row order as
    ``np.bincount`` sums them, from one serial pass (:func:`_label_totals`: a third of
    ``factorize_groups`` and a bincount over 10M codes); None for anything else (other
    types, negative or missing codes, a range wider than ``factorize_groups`` counts
    densely)."""
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu" or labels.ndim != 1 or labels.size == 0:
        return None
    n_range = int(labels.max()) + 1
    if n_range > max(4 * labels.size, 1 << 16):
        return None
    weighted = weights is not None
    count, totals = _label_totals(labels, n_range, np.asarray(weights, float) if weighted
                                  else np.zeros(0), weighted)
    if count.shape[0] == 0:
        return None
    return totals if weighted else count


@njit(cache=True)
def _label_totals(labels, n_range, weights, weighted):  # pragma: no cover - numba
    """Each code's count and, when ``weighted``, total weight in row order (empty arrays
    where a code of ``0..n_range - 1`` is missing or one lies outside)."""
    count = np.zeros(n_range, np.int64)
    totals = np.zeros(n_range if weighted else 0)
    for r in range(labels.shape[0]):
        v = labels[r]
        if v < 0 or v >= n_range:
            return np.zeros(0, np.int64), totals
        count[v] += 1
        if weighted:
            totals[v] += weights[r]
    for g in range(n_range):
        if count[g] == 0:
            return np.zeros(0, np.int64), totals
    return count, totals


def intersect_codes(code_list: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, int]:
    """Codes of the intersection clustering (rows agree on every listed dimension).

    Returns ``(codes, n_range)`` with codes in ``[0, n_range)``, not necessarily dense:
    mixed-radix ``((c_1 * G_2 + c_2) * G_3 + c_3) ...``, compacted only if the range is huge.
    """
    combined = np.zeros(code_list[0].shape[0], dtype=np.int64)
    n_range = 1
    dense_limit = max(4 * combined.shape[0], 1 << 16)
    for codes, size in zip(code_list, sizes, strict=True):
        combined = combined * size + codes
        n_range *= size
        if n_range > dense_limit:  # compact now, so the next product cannot overflow
            combined, n_range = group_codes(combined)
    return combined, n_range


#: Buckets of the radix pass (:func:`_buckets`): more buckets write more streams, fewer
#: make each bucket's sort leave the cache; on the development machine 1,024 beat 512 by
#: about a tenth at 10M rows and 1M prompts two-way (3.14 against 3.49 s of processor
#: time, best of five under load 7-9), and 2,048 to 8,192 were slower again.
_TARGET_BUCKETS = 1024


@sized_kernel
def _scatter_to_buckets(indptr, indices, data, group, shift, n_buckets, stratum, frequency,
                        local, columns, values, tags, weights,
                        n_chunks):  # pragma: no cover - numba
    """Radix pass: copy each non-zero into its bucket ``group >> shift``, threads in parallel.

    Stores (group offset within the bucket, in ``local``: int32, or int64 when ``shift``
    exceeds 31 bits; column; value) and, when ``stratum`` (n,) is not empty, the row's
    stratum in ``tags`` and, on the row's first entry only, its frequency in ``weights``
    (``frequency``, 1 when empty; 0 on its other entries), so that summing the entries of
    a group sums its rows' frequencies. Reads are sequential and each thread writes to
    ``n_buckets`` streams at offsets fixed by per-thread histograms. The outputs are the
    caller's (:func:`_buckets`). Returns where each bucket starts.
    """
    n = group.shape[0]
    histogram = np.zeros((n_chunks, n_buckets), np.int64)
    for c in numba.prange(n_chunks):
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            histogram[c, group[r] >> shift] += indptr[r + 1] - indptr[r]
    offsets, bucket_start = bucket_offsets(histogram)
    tagged = stratum.shape[0] > 0
    mask = (1 << shift) - 1
    for c in numba.prange(n_chunks):
        fill = offsets[c]
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            g = group[r]
            b = g >> shift
            for p in range(indptr[r], indptr[r + 1]):
                i = fill[b]
                local[i] = g & mask
                columns[i] = indices[p]
                values[i] = data[p]
                if tagged:
                    tags[i] = stratum[r]
                    f = frequency[r] if frequency.shape[0] > 0 else 1.0
                    weights[i] = f if p == indptr[r] else 0.0
                fill[b] = i + 1
    return bucket_start


#: A bucket's entries are sorted by counting while its range of local codes is at most this
#: many times its number of entries, by a stable comparison sort otherwise (two-way codes
#: ``prompt << bits | judge`` can span far more codes than there are rows).
_COUNTING_SPAN = 8


@njit(cache=True)
def _bucket_order(lo, hi, local, n_local, buffers):  # pragma: no cover - numba
    """The entries ``lo..hi`` of one bucket in order of their local code, ties in entry
    order (a stable sort): a counting sort over the ``n_local`` codes when ``n_local <=``
    :data:`_COUNTING_SPAN` ``* (hi - lo)`` and the counting buffers exist, else a merge
    sort, O((hi - lo) log(hi - lo)) time and O(hi - lo) memory whatever the code range.
    ``buffers`` = (start, fill, order) from :func:`_sort_buffers`, reused from bucket to
    bucket: fresh arrays per bucket cost a page fault per 4 KiB."""
    start, fill, order = buffers
    if not _counts(lo, hi, local, n_local, start, fill):
        return np.argsort(local[lo:hi], kind="mergesort") + lo
    for i in range(lo, hi):
        order[fill[local[i]]] = i
        fill[local[i]] += 1
    return order[: hi - lo]


@njit(cache=True)
def _counts(lo, hi, local, n_local, start, fill):  # pragma: no cover - numba
    """Whether the entries ``lo..hi`` of a bucket are sorted by counting (their code range
    ``n_local`` at most :data:`_COUNTING_SPAN` times their number, and counting buffers
    ``start``, ``fill`` that hold it); if so, ``fill[g]`` is set to where code g's first
    entry goes."""
    if start.shape[0] <= n_local or n_local > _COUNTING_SPAN * (hi - lo):
        return False
    start[: n_local + 1] = 0
    for i in range(lo, hi):
        start[local[i] + 1] += 1
    for g in range(n_local):
        start[g + 1] += start[g]
        fill[g] = start[g]
    return True


@njit(cache=True)
def _sort_buffers(bucket_start, n_local):  # pragma: no cover - numba
    """Buffers for :func:`_bucket_order` that fit every bucket; the counting sort's (sized
    by the code range) only where some bucket is dense enough to use them, so memory
    follows the entries, never the code range."""
    largest = 0
    for b in range(bucket_start.shape[0] - 1):
        largest = max(largest, bucket_start[b + 1] - bucket_start[b])
    counting = n_local if n_local <= _COUNTING_SPAN * largest else 0
    return (np.empty(counting + 1, np.int64), np.empty(counting, np.int64),
            np.empty(largest, np.int64))


@njit(cache=True)
def _bucket_sorted(lo, hi, local, columns, values, tags, weights, n_local, buffers,
                   entries):  # pragma: no cover - numba
    """The entries ``lo..hi`` of one bucket copied in order of their local code, ties in
    entry order, into ``entries`` = (local, column, value, tag, weight) buffers (the last
    two when ``tags`` is not empty): by counting, each entry read in turn and written to
    its place, when :func:`_bucket_order` would count, else gathered in its merge order.
    Returns the filled prefixes."""
    start, fill, order = buffers
    sorted_local, sorted_columns, sorted_values, sorted_tags, sorted_weights = entries
    m = hi - lo
    tagged = tags.shape[0] > 0
    if not _counts(lo, hi, local, n_local, start, fill):
        order = np.argsort(local[lo:hi], kind="mergesort") + lo
        for i in range(m):
            sorted_local[i] = local[order[i]]
            sorted_columns[i] = columns[order[i]]
            sorted_values[i] = values[order[i]]
            if tagged:
                sorted_tags[i] = tags[order[i]]
                sorted_weights[i] = weights[order[i]]
    else:
        for i in range(lo, hi):
            j = fill[local[i]]
            sorted_local[j] = local[i]
            sorted_columns[j] = columns[i]
            sorted_values[j] = values[i]
            if tagged:
                sorted_tags[j] = tags[i]
                sorted_weights[j] = weights[i]
            fill[local[i]] = j + 1
    m_tagged = m if tagged else 0
    return (sorted_local[:m], sorted_columns[:m], sorted_values[:m],
            sorted_tags[:m_tagged], sorted_weights[:m_tagged])


@njit(cache=True)
def _sweep_bucket(  # noqa: C901 - one kernel: its two steps are closures (docstring)
        lo, hi, local, columns, values, tags, weights, n_local, inner_bits, n_levels,
        outer_base, outer_scale, inner_scale, meat, top, arg, row_squares, spread, fourth,
        nonempty, sums, squares, seen, touched, inner_totals, inner_squares, inner_rows,
        buffers, entries, stratum_size, single_factor, inner_factor, scratch,
        spread_only):  # pragma: no cover - numba
    """Group sums of one bucket, its entries sorted by local code g (:func:`_bucket_sorted`
    into ``entries``).

    Level 0 groups the entries by g; with ``n_levels == 2`` level 1 groups them by
    ``g >> inner_bits`` (the outer cluster of a cell ``g = outer << inner_bits | inner``),
    each outer total the sum of its cells, which are contiguous in code order, and the
    few inner clusters' totals (and sums of squares) are added densely to
    ``inner_totals`` / ``inner_squares`` (kinds, J, k), ``inner_rows`` marking them
    non-empty.
    A closed group with totals t adds the half outer product of t to ``meat[level]``,
    keeps per column the largest ``t^2`` in ``top[level]`` with the group's code in
    ``arg[level]``, adds its sums of squared values to ``row_squares[level]`` and their
    squares to ``spread[level]``, ``t^4`` to ``fourth[level]``, and counts in
    ``nonempty[level]``. Codes: level 1
    ``outer_base + outer``; level 0 ``outer_scale * (outer_base + outer) + inner_scale *
    inner`` (``inner_bits = 0, outer_scale = 1, inner_scale = 0`` for a plain clustering).
    ``sums``, ``squares``, ``seen``, ``touched`` (2, k) hold each level's open group.

    With stratum ``tags`` (and row ``weights``, :func:`_scatter_to_buckets`) every entry
    is first scaled by CR2's leverage factor :func:`_leverage` of its row for each term
    (:class:`StrataLeverage`): ``m`` its stratum's frequency in its cell, summed in
    ``scratch[0]``, in its outer cluster, ``scratch[1]`` (both from the group's entries,
    which are contiguous), and in its inner cluster; ``n`` its stratum's
    ``stratum_size``. The inner clusters' factors come made (``inner_factor`` (J, H)), and
    a block of one row's frequency 1 (a one-row cell or outer cluster) reads its
    stratum's ``single_factor`` (:func:`leverage_tables`: the same :func:`_leverage`, so the
    same bits, without a square root per row). The outer and inner sums then come from the scaled
    entries, not from the cells. With four levels (and two kinds of inner totals) the
    rows as they are fill levels 0 and 1 and inner kind 0, the scaled rows levels 2 and 3
    and inner kind 1, in the same pass; with ``spread_only`` the rows as they are give only
    what the effective cluster counts read (:class:`ColumnSpread`): each entry goes
    straight to its outer group (level 1) and inner cluster, level 0 stays empty and
    level 1's meat holds its diagonal only.
    The two steps are closures, not functions taking arrays: every array argument of a
    call costs an atomic reference-count update, which was a third of the running time.
    """
    local, columns, values, tags, weights = _bucket_sorted(
        lo, hi, local, columns, values, tags, weights, n_local, buffers, entries)
    leverage = tags.shape[0] > 0
    unscaled = not leverage or meat.shape[0] == 4  # levels 0, 1 of the rows as they are
    cells = unscaled and not spread_only  # level 0 of the rows as they are
    low = meat.shape[0] - 2  # the scaled levels: low (cells) and low + 1 (outer)
    kind = inner_totals.shape[0] - 1  # the scaled inner totals
    n_open = np.zeros(meat.shape[0], np.int64)

    def add(level, col, total, square):
        if not seen[level, col]:
            seen[level, col] = True
            touched[level, n_open[level]] = col
            n_open[level] += 1
        sums[level, col] += total
        squares[level, col] += square

    def close(level, code, diagonal):
        m = n_open[level]
        for i in range(m):
            ti = touched[level, i]
            vi = sums[level, ti]
            for j in range(i, i + 1 if diagonal else m):
                meat[level, ti, touched[level, j]] += vi * sums[level, touched[level, j]]
            row_squares[level, ti] += squares[level, ti]
            spread[level, ti] += squares[level, ti] * squares[level, ti]
            fourth[level, ti] += (vi * vi) * (vi * vi)
            if vi * vi > top[level, ti]:
                top[level, ti] = vi * vi
                arg[level, ti] = code
        for i in range(m):
            sums[level, touched[level, i]] = 0.0
            squares[level, touched[level, i]] = 0.0
            seen[level, touched[level, i]] = False
        n_open[level] = 0
        nonempty[level] += 1

    inner_mask = (1 << inner_bits) - 1
    first = 0
    while first < local.shape[0]:
        outer = local[first] >> inner_bits
        end = first
        while end < local.shape[0] and local[end] >> inner_bits == outer:
            end += 1
        for i in range(first, end if leverage else first):
            scratch[1, tags[i]] += weights[i]
        cell = first
        while cell < end:
            inner = local[cell] & inner_mask
            last = cell
            while last < end and local[last] == local[cell]:
                last += 1
            for i in range(cell, last if leverage else cell):
                scratch[0, tags[i]] += weights[i]
            stratum = -1  # the factors depend on the entry's stratum only, within a cell
            by_cell, by_outer, by_inner = 1.0, 1.0, 1.0
            for i in range(cell, last):
                value = values[i]
                if cells:
                    add(0, columns[i], value, value * value)
                elif unscaled:
                    add(1, columns[i], value, value * value)
                    if n_levels == 2:
                        inner_totals[0, inner, columns[i]] += value
                        inner_squares[0, inner, columns[i]] += value * value
                if not leverage:
                    continue
                if tags[i] != stratum:
                    stratum = tags[i]
                    size, single = stratum_size[stratum], single_factor[stratum]
                    m = scratch[0, stratum]
                    by_cell = single if m == 1.0 else _leverage(m, size)
                    if n_levels == 2:
                        m = scratch[1, stratum]
                        by_outer = single if m == 1.0 else _leverage(m, size)
                        by_inner = inner_factor[inner, stratum]
                scaled = value * by_cell
                add(low, columns[i], scaled, scaled * scaled)
                if n_levels == 2:
                    scaled = value * by_outer
                    add(low + 1, columns[i], scaled, scaled * scaled)
                    scaled = value * by_inner
                    inner_totals[kind, inner, columns[i]] += scaled
                    inner_squares[kind, inner, columns[i]] += scaled * scaled
            if n_levels == 2:
                for i in range(n_open[0] if cells else 0):
                    col = touched[0, i]
                    add(1, col, sums[0, col], squares[0, col])
                    inner_totals[0, inner, col] += sums[0, col]
                    inner_squares[0, inner, col] += squares[0, col]
                inner_rows[inner] = True
            for i in range(cell, last if leverage else cell):
                scratch[0, tags[i]] = 0.0
            code = outer_scale * (outer_base + outer) + inner_scale * inner
            if cells:
                close(0, code, False)
            if leverage:
                close(low, code, False)
            cell = last
        if n_levels == 2 and unscaled:
            close(1, outer_base + outer, spread_only)
        if n_levels == 2 and leverage:
            close(low + 1, outer_base + outer, False)
        for i in range(first, end if leverage else first):
            scratch[1, tags[i]] = 0.0
        first = end


@njit(inline="always")
def _leverage(m, n):  # pragma: no cover - numba
    """CR2's row factor ``(1 - m / n)^{-1/2}``, 1 where the block is the whole stratum:
    :func:`leverage_factor` of one row."""
    rest = 1.0 - m / n
    return 1.0 / np.sqrt(rest) if rest > 1e-12 else 1.0


@njit(cache=True)
def leverage_tables(stratum_size, inner_block):  # pragma: no cover - numba
    """CR2's factors :func:`_leverage` made once for the two-way sweep: each stratum's for
    a block of frequency 1 (H,), and each (inner cluster, stratum) block's, ``inner_block``
    (J, H) its frequencies; computed by the sweep's own function, so bit for bit the
    factors it computed row by row."""
    single = np.empty(stratum_size.shape[0])
    inner = np.empty(inner_block.shape)
    for h in range(stratum_size.shape[0]):
        single[h] = _leverage(1.0, stratum_size[h])
        for j in range(inner_block.shape[0]):
            inner[j, h] = _leverage(inner_block[j, h], stratum_size[h])
    return single, inner


@sized_kernel
def _bucketed_sums(bucket_start, local, columns, values, tags, weights, shift, inner_bits,
                   n_levels, n_inner, outer_scale, inner_scale, k, stratum_size,
                   single_factor, inner_factor, paired, spread_only,
                   n_chunks):  # pragma: no cover
    """:func:`_sweep_bucket` over every bucket, buckets split over threads: per thread the
    half-filled meats ``(n_chunks, 2, k, k)``, largest squared totals and their codes,
    sums of squares and non-empty counts per level, and the dense inner-cluster totals;
    with ``tags``, of the rows scaled by CR2's leverage (``stratum_size``,
    ``single_factor``, ``inner_factor``: :func:`_sweep_bucket`), and with ``paired`` of
    both the rows as they are (levels 0, 1; with ``spread_only`` what the effective
    cluster counts read of them) and scaled (levels 2, 3)."""
    n_buckets = bucket_start.shape[0] - 1
    kinds = 2 if paired else 1
    levels = 2 * kinds
    meat = np.zeros((n_chunks, levels, k, k))
    top = np.zeros((n_chunks, levels, k))
    arg = np.full((n_chunks, levels, k), -1, np.int64)
    row_squares = np.zeros((n_chunks, levels, k))
    spread = np.zeros((n_chunks, levels, k))
    fourth = np.zeros((n_chunks, levels, k))
    nonempty = np.zeros((n_chunks, levels), np.int64)
    inner_totals = np.zeros((n_chunks, kinds, n_inner, k))
    inner_squares = np.zeros((n_chunks, kinds, n_inner, k))
    inner_rows = np.zeros((n_chunks, n_inner), np.bool_)
    for c in numba.prange(n_chunks):
        sums = np.zeros((levels, k))
        squares = np.zeros((levels, k))
        seen = np.zeros((levels, k), np.bool_)
        touched = np.empty((levels, k), np.int64)
        buffers = _sort_buffers(bucket_start, 1 << shift)
        largest = buffers[2].shape[0]
        tagged = largest if tags.shape[0] > 0 else 0
        entries = (np.empty(largest, local.dtype), np.empty(largest, columns.dtype),
                   np.empty(largest), np.empty(tagged, tags.dtype), np.empty(tagged))
        scratch = np.zeros((2, stratum_size.shape[0]))
        for b in range(c * n_buckets // n_chunks, (c + 1) * n_buckets // n_chunks):
            _sweep_bucket(bucket_start[b], bucket_start[b + 1], local, columns, values, tags,
                          weights, 1 << shift, inner_bits, n_levels, b << (shift - inner_bits),
                          outer_scale, inner_scale, meat[c], top[c], arg[c], row_squares[c],
                          spread[c], fourth[c], nonempty[c], sums, squares, seen, touched,
                          inner_totals[c], inner_squares[c], inner_rows[c], buffers,
                          entries, stratum_size, single_factor, inner_factor, scratch,
                          spread_only)
    return (meat, top, arg, row_squares, spread, fourth, nonempty, inner_totals,
            inner_squares, inner_rows)


def _level_meats(sums) -> list[GroupMeat]:
    """The :class:`GroupMeat` of each level of :func:`_bucketed_sums`' output: thread
    parts added, half-filled meats M completed as ``M + M^T - diag(M)``, and the largest
    total taken from the earliest thread on ties (the lowest code, as one pass would)."""
    meat, top, arg, row_squares, spread, fourth, nonempty = sums[:7]
    half = meat.sum(axis=0)
    first_best = top.argmax(axis=0)
    return [GroupMeat(half[level] + half[level].T - np.diag(np.diag(half[level])),
                      int(nonempty[:, level].sum()), top[:, level].max(axis=0),
                      np.take_along_axis(arg[:, level], first_best[None, level], 0)[0],
                      row_squares[:, level].sum(axis=0), spread[:, level].sum(axis=0),
                      fourth[:, level].sum(axis=0))
            for level in range(meat.shape[1])]


@sized_kernel
def _csr_row_meat(indptr, indices, data, row_scale, stratum, stratum_scale, k,
                  n_chunks):  # pragma: no cover - numba
    """sum_r c_r u_r u_r^T over CSR rows (every row its own cluster), threaded: ``c_r`` is
    ``row_scale[r]`` times ``stratum_scale[stratum[r]]``, each factor 1 where its array is
    empty (the product is the one numpy forms from the two arrays, so the meat is the
    same to the last bit; the per-row product is never written out)."""
    n = indptr.shape[0] - 1
    by_row, by_stratum = row_scale.shape[0] > 0, stratum.shape[0] > 0
    partial = np.zeros((n_chunks, k, k))
    for c in numba.prange(n_chunks):
        meat = partial[c]
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            scale = row_scale[r] if by_row else 1.0  # times 1.0: exact
            if by_stratum:
                scale *= stratum_scale[stratum[r]]
            for p in range(indptr[r], indptr[r + 1]):
                vp = data[p] * scale
                for q in range(indptr[r], indptr[r + 1]):
                    meat[indices[p], indices[q]] += vp * data[q]
    return partial.sum(axis=0)


def row_meat(infl, row_scale: np.ndarray | None = None, stratum: np.ndarray | None = None,
             stratum_scale: np.ndarray | None = None) -> np.ndarray:
    """``sum_r c_r u_r u_r^T`` of influence rows (CSR or dense): the naive meat, every row
    its own cluster, ``c_r = row_scale[r] * stratum_scale[stratum[r]]`` (a factor 1 where
    its array is None; ``stratum`` dense codes of ``stratum_scale``'s entries)."""
    if sp.issparse(infl):
        kernel, n_chunks = _csr_row_meat.choose(infl.nnz)
        empty = np.zeros(0)
        return kernel(*csr_parts(infl), empty if row_scale is None else row_scale,
                      np.zeros(0, np.int64) if stratum is None else stratum,
                      empty if stratum is None else stratum_scale, infl.shape[1], n_chunks)
    scale = row_scale
    if stratum is not None:
        by_stratum = stratum_scale[stratum]
        scale = by_stratum if row_scale is None else row_scale * by_stratum
    return (infl if scale is None else infl * scale[:, None]).T @ infl


def _buckets(infl, codes: np.ndarray, n_range: int, min_shift: int = 0,
             strata: StrataLeverage | None = None):
    """The radix pass (:func:`_scatter_to_buckets`) with about :data:`_TARGET_BUCKETS`
    buckets of groups (each bucket ``2**shift`` codes, ``shift >= min_shift``), the
    entries tagged with their rows' ``strata`` when given; returns ``(bucket_start, local,
    columns, values, tags, weights)`` and the bucket shift. The entries' arrays are
    numpy's (:func:`radix_arrays`)."""
    shift = max(min_shift, int(np.ceil(np.log2(max(n_range, 1) / _TARGET_BUCKETS))))
    n_buckets = ((max(n_range, 1) - 1) >> shift) + 1
    tagged = infl.nnz if strata is not None else 0
    entries = radix_arrays((infl.nnz, np.int32 if shift < 31 else np.int64),
                           (infl.nnz, np.int32), (infl.nnz, np.float64), (tagged, np.int32),
                           (tagged, np.float64))
    kernel, n_chunks = _scatter_to_buckets.choose(infl.nnz)
    stratum, frequency = ((np.zeros(0, np.int64), np.zeros(0)) if strata is None else
                          (strata.stratum, _or_empty(strata.frequency)))
    bucket_start = kernel(*csr_parts(infl), codes, shift, n_buckets, stratum, frequency,
                          *entries, n_chunks)
    return (bucket_start, *entries), shift


def radix_arrays(*shapes) -> list[np.ndarray]:
    """Uninitialised arrays of the given ``(shape, dtype)`` for a radix pass to write,
    allocated by numpy, not inside a kernel: numpy asks the kernel for transparent huge
    pages (``madvise``) on large arrays, so the pass's write streams (one per bucket and
    thread, thousands) stay within the TLB's reach; with 4 KiB pages from numba's
    allocator each write stream missed it (a pass of 20M entries into 1,024 buckets took
    0.83 s of CPU against 0.43 s)."""
    return [np.empty(shape, dtype) for shape, dtype in shapes]


def _or_empty(frequency: np.ndarray | None) -> np.ndarray:
    return np.zeros(0) if frequency is None else frequency


def csr_parts(infl):
    return infl.indptr, infl.indices, infl.data.astype(np.float64, copy=False)


@dataclass(frozen=True)
class GroupMeat:
    """``meat = sum_g t_g t_g^T`` of one clustering, its number of non-empty groups, and per
    column the largest squared group total ``largest`` with that group's code ``argmax``
    (-1 for a column no group touches): the numerator of the dominant-cluster share
    ``largest / diag(meat)`` (:func:`winrate.variance.diagnostics.largest_cluster_share`); and
    ``row_squares = sum_r u_r^2`` and ``spread = sum_g (sum_{r in g} u_r^2)^2``, from which
    the effective number of clusters follows
    (:func:`winrate.variance.diagnostics.effective_clusters`); and ``fourth = sum_g t_g^4`` per
    column, the spread of the clusters' contributions to the variance
    (:func:`winrate.variance.sandwich.pan_wall_df`)."""

    meat: np.ndarray
    n_groups: int
    largest: np.ndarray
    argmax: np.ndarray
    row_squares: np.ndarray
    spread: np.ndarray
    fourth: np.ndarray

    def merged(self, other: GroupMeat) -> GroupMeat:
        """The meat of two disjoint sets of clusters (two buckets): sums add; the largest
        total is the larger of the two (this one's on ties)."""
        later = other.largest > self.largest
        return GroupMeat(self.meat + other.meat, self.n_groups + other.n_groups,
                         np.maximum(self.largest, other.largest),
                         np.where(later, other.argmax, self.argmax),
                         self.row_squares + other.row_squares, self.spread + other.spread,
                         self.fourth + other.fourth)


def meat_from_codes(infl, codes: np.ndarray, n_range: int) -> GroupMeat:
    """:class:`GroupMeat` of influence rows (CSR or dense, :func:`as_rows`) for integer
    codes in ``[0, n_range)`` (codes need not be dense)."""
    if codes.shape[0] != infl.shape[0]:
        raise ValueError(
            f"groups has {codes.shape[0]} entries but influence has {infl.shape[0]} rows"
        )
    if sp.issparse(infl) and n_range * infl.shape[1] <= DENSE_TOTALS_LIMIT:
        kernel, n_chunks = _csr_cluster_totals.choose(infl.nnz)
        totals, within, entries = kernel(*csr_parts(infl), codes, n_range, infl.shape[1],
                                         n_chunks)
        return _meat_of_totals(totals, within, int(np.count_nonzero(entries)))
    if sp.issparse(infl):
        buckets, shift = _buckets(infl, codes, n_range)
        kernel, n_chunks = _bucketed_sums.choose(infl.nnz)
        return _level_meats(kernel(*buckets, shift, 0, 1, 1, 1, 0, infl.shape[1], *_NO_LEVERAGE,
                                   False, False, n_chunks))[0]
    return meat_of_parts(infl, infl**2, codes, n_range)


#: Largest (clusters x columns) whose totals :func:`meat_from_codes` sums densely, in one
#: pass over the rows in their own order, per thread (2 MiB: a few clusters, as on a judge
#: axis), instead of the radix pass.
DENSE_TOTALS_LIMIT = 1 << 18


@sized_kernel
def _csr_cluster_totals(indptr, indices, data, codes, n_range, k,
                        n_chunks):  # pragma: no cover - numba
    """Per cluster (``n_range``) and column, the sum of the CSR rows' values and of their
    squares, and each cluster's stored entries; threads over row chunks, each with its own
    tables, added at the end."""
    n = indptr.shape[0] - 1
    totals = np.zeros((n_chunks, n_range, k))
    within = np.zeros((n_chunks, n_range, k))
    entries = np.zeros((n_chunks, n_range), np.int64)
    for c in numba.prange(n_chunks):
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            g = codes[r]
            entries[c, g] += indptr[r + 1] - indptr[r]
            for p in range(indptr[r], indptr[r + 1]):
                totals[c, g, indices[p]] += data[p]
                within[c, g, indices[p]] += data[p] * data[p]
    return totals.sum(axis=0), within.sum(axis=0), entries.sum(axis=0)


def _cluster_parts(totals, within, codes: np.ndarray, n_range: int):
    """Per cluster (``n_range`` rows), the sums of its parts' ``totals`` and ``within``:
    the parts themselves when part i is cluster i (a score table clustered by question)."""
    if n_range == codes.shape[0] and np.array_equal(codes, np.arange(n_range)):
        return totals, within
    indicator = sp.csr_array(
        (np.ones(codes.shape[0]), (codes, np.arange(codes.shape[0]))),
        shape=(n_range, codes.shape[0]),
    )
    return indicator @ totals, indicator @ within


def meat_of_parts(totals, within, codes: np.ndarray, n_range: int) -> GroupMeat:
    """:class:`GroupMeat` from per-part influence sums and sums of squares (rows of a dense
    influence, or cells), each part's cluster given by ``codes``: a cluster's total is the
    sum of its parts' totals, its sum of squared rows the sum of theirs."""
    totals, within = _cluster_parts(totals, within, codes, n_range)
    return _meat_of_totals(totals, within,
                           int(np.count_nonzero(np.bincount(codes, minlength=n_range))))


def _meat_of_totals(totals: np.ndarray, within: np.ndarray, n_groups: int) -> GroupMeat:
    """:class:`GroupMeat` of dense per-cluster ``totals`` and sums of squared rows
    ``within`` (G, q), ``n_groups`` of those clusters non-empty."""
    squared = totals**2
    largest = squared.max(axis=0, initial=0.0)
    # the first cluster reaching the largest, as argmax(axis=0), over a bool array
    first = (squared == largest).argmax(axis=0)
    return GroupMeat(totals.T @ totals, n_groups, largest, np.where(largest > 0, first, -1),
                     within.sum(axis=0), _column_squares(within), _column_squares(squared))


def _column_squares(values: np.ndarray) -> np.ndarray:
    """``(values**2).sum(axis=0)`` of a dense (n, q) array without the (n, q) square."""
    return np.einsum("ij,ij->j", values, values)


@dataclass(frozen=True)
class ColumnSpread:
    """Per column of one clustering: ``own = sum_g t_g^2`` (the diagonal of the
    :class:`GroupMeat`'s meat), ``row_squares = sum_r u_r^2`` and ``spread = sum_g (sum_{r in
    g} u_r^2)^2``: what the effective number of clusters reads
    (:func:`winrate.variance.diagnostics.effective_size`), in O(non-zeros), without the
    (q, q) meat."""

    own: np.ndarray
    row_squares: np.ndarray
    spread: np.ndarray


def spread_of_parts(totals, within, codes: np.ndarray, n_range: int) -> ColumnSpread:
    """:class:`ColumnSpread` from per-part sums (:func:`meat_of_parts`' parts)."""
    totals, within = _cluster_parts(totals, within, codes, n_range)
    return ColumnSpread(_column_squares(totals), within.sum(axis=0), _column_squares(within))


def column_spread(infl, codes: np.ndarray, n_range: int) -> ColumnSpread:
    """:class:`ColumnSpread` of influence rows (CSR or dense) clustered by ``codes`` in
    ``[0, n_range)``: CSR rows in one pass in cluster order (:func:`cluster_order`)."""
    if sp.issparse(infl):
        return ColumnSpread(*_csr_column_spread(*cluster_order(codes, n_range),
                                                *csr_parts(infl), infl.shape[1]))
    return spread_of_parts(infl, infl**2, codes, n_range)


@njit(cache=True)
def _csr_column_spread(order, start, indptr, indices, data, k):  # pragma: no cover
    """:class:`ColumnSpread`'s three sums of CSR rows visited cluster by cluster: each
    cluster's per-column total and sum of squares gathered in (k,) scratch, touched
    columns listed so that closing a cluster costs its own columns only."""
    own, row_squares, spread = np.zeros(k), np.zeros(k), np.zeros(k)
    total, square = np.zeros(k), np.zeros(k)
    seen, touched = np.zeros(k, np.bool_), np.empty(k, np.int64)
    for g in range(start.shape[0] - 1):
        m = 0
        for i in range(start[g], start[g + 1]):
            r = order[i]
            for p in range(indptr[r], indptr[r + 1]):
                c = indices[p]
                if not seen[c]:
                    seen[c] = True
                    touched[m] = c
                    m += 1
                total[c] += data[p]
                square[c] += data[p] * data[p]
        for j in range(m):
            c = touched[j]
            own[c] += total[c] * total[c]
            row_squares[c] += square[c]
            spread[c] += square[c] * square[c]
            total[c], square[c], seen[c] = 0.0, 0.0, False
    return own, row_squares, spread


#: Largest (inner clusters x columns) whose totals a two-way pass keeps densely per thread,
#: and largest (inner clusters x strata) table of the leverage it reads.
DENSE_INNER_LIMIT = 1 << 21

#: :func:`_bucketed_sums`' leverage arguments (stratum sizes, one-row factors, inner
#: factors: :func:`leverage_tables`) where no leverage is applied.
_NO_LEVERAGE = (np.ones(1), np.ones(1), np.ones((1, 1)))


def nests_leverage(infl, strata: StrataLeverage, n_inner: int) -> bool:
    """Whether :func:`nested_meats` can scale CR2's terms itself: every CSR row holds an
    entry and the inner axis' (cluster, stratum) table is small."""
    return (n_inner * strata.n_strata <= DENSE_INNER_LIMIT
            and bool((np.diff(infl.indptr) > 0).all()))


def nested_meats(infl, codes: list[np.ndarray], sizes: list[int],
                 strata: StrataLeverage | None = None, paired: bool = False,
                 spread_only: bool = False) -> list[list[GroupMeat]]:
    """:class:`GroupMeat` of both axes and of their intersection (in that order) from one
    radix pass over a CSR influence (:func:`nested_sums`), in a list of one: of the rows as
    they are, or with ``strata`` of each term's rows scaled by CR2's leverage factors for
    that term (:class:`StrataLeverage`); with ``paired`` both, in that order, and with
    ``spread_only`` too of the rows as they are only what :func:`spread_of_meats` reads
    (the outer axis' meat holds its diagonal, the cells' is empty). The leverage
    needs every row to hold an entry (its frequency rides on its first) and the inner
    axis' (cluster, stratum) table to be small: :func:`nests_leverage`."""
    outer_dim = int(sizes[1] > sizes[0])
    found = []
    for outer, cells, totals, squares, nonempty in nested_sums(infl, codes, sizes, strata,
                                                               paired, spread_only):
        inner_meat = _meat_of_totals(totals, squares, int(nonempty.sum()))
        by_axis = [outer, inner_meat] if outer_dim == 0 else [inner_meat, outer]
        found.append([*by_axis, cells])
    return found


def nested_sums(infl, codes: list[np.ndarray], sizes: list[int],
                strata: StrataLeverage | None = None, paired: bool = False,
                spread_only: bool = False):
    """One radix pass over a CSR influence clustered two ways: the :class:`GroupMeat` of
    the axis with more clusters (the outer axis) and of the intersection cells, and the
    inner axis' cluster totals and sums of squared rows (G_inner, q) with a mask of its
    non-empty clusters, per kind of rows (:func:`nested_meats`). Every intersection cell
    lies inside one outer cluster, so sorting the cells by (outer, inner) gives each outer
    total as the sum of its contiguous cells, and the inner axis, which has few clusters,
    is summed densely from the cells. No intersection codes are factorised. Cells are
    coded ``c_0 * G_1 + c_1`` (:func:`intersect_codes` before any compaction)."""
    outer_dim = int(sizes[1] > sizes[0])
    outer, inner = codes[outer_dim], codes[1 - outer_dim]
    n_outer, n_inner = sizes[outer_dim], sizes[1 - outer_dim]
    inner_bits = max(1, (n_inner - 1).bit_length())
    key = (np.asarray(outer, np.int64) << inner_bits) | inner  # no copy of int64 codes
    buckets, shift = _buckets(infl, key, n_outer << inner_bits, min_shift=inner_bits,
                              strata=strata)
    scales = (n_inner, 1) if outer_dim == 0 else (1, n_outer)
    kernel, n_chunks = _bucketed_sums.choose(infl.nnz)
    leverage = _NO_LEVERAGE if strata is None else (
        strata.stratum_size, *leverage_tables(strata.stratum_size,
                                              strata.block_table(inner, n_inner)))
    paired = paired and strata is not None
    sums = kernel(*buckets, shift, inner_bits, 2, n_inner, *scales, infl.shape[1], *leverage,
                  paired, spread_only and paired, n_chunks)
    levels = _level_meats(sums)
    present = sums[9].any(axis=0)
    return [(levels[2 * kind + 1], levels[2 * kind], sums[7][:, kind].sum(axis=0),
             sums[8][:, kind].sum(axis=0), present) for kind in range(sums[7].shape[1])]


def spread_of_meats(axes: list[GroupMeat]) -> list[ColumnSpread]:
    """Each axis' :class:`ColumnSpread` from its one-way :class:`GroupMeat`: the diagonal
    of its meat, its sums of squared rows and their squares per cluster."""
    return [ColumnSpread(np.diag(group.meat), group.row_squares, group.spread)
            for group in axes]


def require_two_clusters(n_groups: int, what: str = "groups") -> None:
    """One cluster carries no between-cluster information: the variance is not identified
    (the centred influence sums to zero within it, and CR1's G/(G-1) is infinite)."""
    if n_groups < 2:
        raise WinrateInputError(
            f"{what} form a single cluster among the rows the estimator uses: a clustered "
            "variance needs at least 2 clusters (between-cluster variation is not "
            "identified); cluster by the other axes only")


@dataclass(frozen=True)
class MultiwayCovariance:
    """Result of :func:`winrate.variance.sandwich.multiway_cluster_cov`.

    Attributes
    ----------
    cov : (K, K) covariance after any PSD repair.
    n_clusters : clusters per input dimension, in input order.
    terms : ``(dimensions, G, sign)`` for every inclusion-exclusion term.
    term_covs : ``c(G) * meat`` of every term, unsigned, in the order of ``terms``; the
        singleton terms are the one-way covariances of each dimension.
    correction : the small-sample correction used.
    min_eigenvalue : smallest eigenvalue before repair (of the meat when a bread is given).
    psd_repaired : True if negative eigenvalues were clipped to zero (CGM 2011, sec. 2.3).
    term_meats : the :class:`GroupMeat` of every term (uncorrected, before the bread), in
        the order of ``terms``: the dominant-cluster diagnostic reads them.
    """

    cov: np.ndarray
    n_clusters: tuple[int, ...]
    terms: tuple[tuple[tuple[int, ...], int, int], ...]
    term_covs: tuple[np.ndarray, ...]
    correction: str
    min_eigenvalue: float
    psd_repaired: bool
    term_meats: tuple[GroupMeat, ...] = ()


def repair_psd(cov: np.ndarray, scale: float | None = None) -> tuple[np.ndarray, float, bool]:
    """Clip negative eigenvalues to zero (Cameron, Gelbach & Miller 2011, sec. 2.3).

    Eigenvalues above ``-1e-10 * scale`` count as round-off and are left alone. ``scale``
    is the size of the terms ``cov`` was summed from (default ``max|lambda|`` of ``cov``):
    a sum that cancels to zero leaves round-off that is large relative to itself.
    Returns ``(cov, min_eigenvalue, repaired)``.
    """
    eigval, eigvec = np.linalg.eigh((cov + cov.T) / 2)
    scale = max(np.abs(eigval).max(initial=0.0), scale or 0.0, np.finfo(float).tiny)
    min_eig = float(eigval.min(initial=0.0))
    if min_eig >= -_PSD_TOLERANCE * scale:
        return cov, min_eig, False
    return (eigvec * np.clip(eigval, 0.0, None)) @ eigvec.T, min_eig, True


def subsets(n_dims: int) -> list[tuple[int, ...]]:
    """Non-empty subsets of ``range(n_dims)``, singletons first (inclusion-exclusion order)."""
    return [dims for order in range(1, n_dims + 1)
            for dims in combinations(range(n_dims), order)]


def term_sign(dims: tuple[int, ...]) -> int:
    """The sign ``(-1)^(|S|+1)`` of the inclusion-exclusion term of the dimensions S."""
    return 1 if len(dims) % 2 else -1


def combine_terms(parts):
    """``sum_S sign_S V_S`` over ``parts`` = ``[(dims, sign, V_S, info), ...]`` in
    inclusion-exclusion order, repaired by :func:`repair_psd` when there are two or more
    dimensions. Returns ``(cov, min_eigenvalue, repaired)``: the caller decides whether a
    repair is a note (a library step returns the flag)."""
    total = sum(sign * term_cov for _, sign, term_cov, _ in parts)
    n_dims = max(len(dims) for dims, *_ in parts)
    if n_dims <= 1:
        return total, np.nan, False
    size = max(np.abs(np.diag(term_cov)).max(initial=0.0) for _, _, term_cov, _ in parts)
    return repair_psd(total, size)
