"""How much clustering matters: design effects, intraclass correlations, cluster sizes.

* Design effect (Kish 1965, sec. 8.2): ``DEFF_a = V_aa / V_naive_aa``; the SE inflation is
  ``sqrt(DEFF_a)`` and the effective number of comparisons ``n_a / DEFF_a``.
* Shared-response correlation: solving Kish's ``DEFF = 1 + (m - 1) rho`` for rho,
  ``rho_a = (DEFF_a - 1) / (m_a - 1)``, with ``m_a`` the mean number of comparisons of
  model a per cluster (per prompt, for the prompt axis).
* ANOVA intraclass correlation with unequal cluster sizes (Snedecor & Cochran 1989,
  sec. 13.11; Donner 1986, eq. 2.1)::

      ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW),   n0 = (N - sum_g n_g^2 / N) / (G - 1)

  here of the pair-centred scores ``s_r - psi_ab`` (the "pair-level ICC").
* Connectivity: scores of models in different components of the comparison graph share no
  comparison, so no estimator puts them on one scale;
  :func:`winrate.estimators.graph.check_connected` refuses them.
* Dominant cluster (the Lindeberg condition): the largest cluster's share of a model's
  clustered variance, :func:`largest_cluster_share` (threshold in its docstring).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit

from winrate.estimators.cells import CellTotals
from winrate.parallel import sized_kernel
from winrate.variance.meats import (
    ColumnSpread,
    GroupMeat,
    as_rows,
    bucket_layout,
    group_codes,
    meat_from_codes,
    radix_arrays,
    radix_place,
)

#: A cluster holding more than this share of a model's clustered variance dominates it.
#: Why one half (``largest_cluster_share``): for independent normal cluster totals the
#: Satterthwaite (1946, Biometrics Bull. 2(6)) degrees of freedom of ``sum_g t_g^2`` are
#: ``1 / sum_g s_g^2 <= 1 / s_max^2``, the "effective number of clusters" (Bell &
#: McCaffrey 2002, Survey Methodology 28(2); Carter, Schnepel & Steigerwald 2017, REStat
#: 99(4)). A share above 1/2 leaves fewer than 4 effective clusters whatever the others
#: do, and a normal-reference 95% interval then covers about P(|t_4| <= 1.96) = 88%;
#: deleting that one cluster would remove more than half the variance estimate. Chance
#: alone does not produce it with 30 or more equal clusters: the share of the largest of G
#: one-degree-of-freedom variances (Cochran 1941, Annals of Eugenics 11, the C statistic;
#: each share ~ Beta(1/2, (G - 1)/2)) exceeds 1/2 with probability
#: ``G P(F(1, G - 1) > G - 1)``, 2.6e-4 at G = 30. A lower bar, 1/sqrt(30) (fewer than
#: 30 effective clusters), fires on most simulated 120-prompt logs of unequal prompt sizes
#: (`winrate.io.simulate` defaults), where each estimated share is a noisy one-draw estimate.
DOMINANT_SHARE = 0.5


def design_effect(cov: np.ndarray, cov_naive: np.ndarray) -> np.ndarray:
    """``DEFF_a = V_aa / V_naive_aa``; NaN where the naive variance is zero (no information)."""
    naive = np.diag(cov_naive)
    return np.divide(np.diag(cov), naive, out=np.full(naive.shape, np.nan), where=naive > 0)


def effective_n(n: np.ndarray, deff: np.ndarray) -> np.ndarray:
    """``n_a / DEFF_a``: the number of independent comparisons the data is worth (Kish 1965);
    NaN where the design effect is zero or undefined."""
    return np.divide(n, deff, out=np.full(np.shape(n), np.nan), where=deff > 0)


def anova_icc(values: np.ndarray, codes: np.ndarray, weight: np.ndarray | None = None) -> float:
    """One-way ANOVA intraclass correlation of ``values`` grouped by ``codes`` (module doc).

    ``weight`` are frequency weights (a row stands for that many identical observations).
    Returns NaN when it is not identified: fewer than 2 groups, or no within-group
    degrees of freedom, or no variation at all.
    """
    n_groups = int(codes.max()) + 1 if codes.size else 0
    size = np.bincount(codes, weights=weight, minlength=n_groups).astype(float)
    total = size.sum()
    if total <= 0:
        return float("nan")
    grand_mean = (values if weight is None else weight * values).sum() / total
    # SSW = SST - SSB on values centred at the grand mean, so a large common offset cancels
    # before any square is taken; no pass gathers each row's group mean
    centred = values - grand_mean
    weighted = centred if weight is None else weight * centred
    group_sum = np.bincount(codes, weights=weighted, minlength=n_groups)
    return icc_of_sums(size, group_sum, float(centred @ weighted))


def icc_of_sums(size: np.ndarray, group_sum: np.ndarray, squares: float) -> float:
    """:func:`anova_icc` from each group's size and sum of the values centred at their
    grand mean, and the total sum of their squares (NaN when not identified)."""
    present = size > 0
    size_present = size[present]
    return icc_of_moments(size_present.size, float(size_present.sum()),
                          float((size_present**2).sum()),
                          float((group_sum[present]**2 / size_present).sum()), squares)


def icc_of_moments(n_groups: int, total: float, size_squares: float, between: float,
                   squares: float) -> float:
    """:func:`anova_icc` from the non-empty groups' number ``G``, total size ``N``, sum of
    squared sizes ``sum_g n_g^2``, between sum of squares ``sum_g S_g^2 / n_g`` (``S_g``
    the group's sum of the centred values) and the total sum of squares: all an engine
    has to return (:mod:`winrate.variance.buckets`). NaN when not identified."""
    if n_groups < 2 or total - n_groups <= 0:
        return float("nan")
    ss_within = max(squares - between, 0.0)
    ms_between = between / (n_groups - 1)
    ms_within = ss_within / (total - n_groups)
    n0 = (total - size_squares / total) / (n_groups - 1)
    denominator = ms_between + (n0 - 1) * ms_within
    return float((ms_between - ms_within) / denominator) if denominator > 0 else float("nan")


def comparisons_per_cluster(model_a: np.ndarray, model_b: np.ndarray, codes: np.ndarray,
                            n_per_model: np.ndarray) -> np.ndarray:
    """``m_a``: comparisons of model a (``n_per_model``, frequency-weighted, e.g. the row
    sums of a fit's pair counts) divided by the number of clusters a appears in.

    ``codes`` are the axis' dense cluster codes ``0..G-1``."""
    return per_cluster(n_per_model,
                       clusters_per_model(model_a, model_b, codes, len(n_per_model)))


def clusters_per_model(model_a: np.ndarray, model_b: np.ndarray, codes: np.ndarray,
                       n_models: int) -> np.ndarray:
    """Number of distinct clusters (dense ``codes``) each model appears in (as model_a or
    model_b): :func:`row_design_sums`' first sum."""
    n = codes.shape[0]
    n_clusters = int(codes.max()) + 1 if n else 0
    return row_design_sums(codes, n_clusters, model_a, model_b, n_models,
                           np.zeros(n, np.int32), 1, None, np.zeros(n))[0]


def per_cluster(n_per_model: np.ndarray, clusters_of_model: np.ndarray) -> np.ndarray:
    """``m_a = n_a / G_a``: model a's comparisons over the clusters it appears in; NaN for a
    model in no cluster."""
    return np.divide(n_per_model, clusters_of_model,
                     out=np.full(np.shape(n_per_model), np.nan), where=clusters_of_model > 0)


def centred_scores(centered: np.ndarray, frequency: np.ndarray | None) -> tuple[np.ndarray, float]:
    """The pair-centred scores minus their (frequency-weighted) grand mean, and their
    weighted sum of squares: the ANOVA ICC's deviations, the same for every axis (centring
    first, so a large common offset cancels before any square is taken)."""
    total = centered.shape[0] if frequency is None else frequency.sum()
    grand_mean = (centered if frequency is None else frequency * centered).sum() / total
    deviation = centered - grand_mean
    weighted = deviation if frequency is None else frequency * deviation
    return deviation, float(deviation @ weighted)


def row_design_sums(codes: np.ndarray, n_clusters: int, model_a: np.ndarray,
                    model_b: np.ndarray, n_models: int, pair: np.ndarray, n_pairs: int,
                    frequency: np.ndarray | None, deviation: np.ndarray):
    """One axis' design sums from the rows (cluster ``codes`` in ``[0, n_clusters)``): the
    clusters each model appears in (:func:`clusters_per_model`), the pairs whose rows all
    lie in one cluster (:func:`single_cluster_pairs`), and each cluster's frequency and
    sum of frequency x ``deviation`` (:func:`centred_scores`), the ANOVA ICC's sums
    (:func:`icc_of_sums`); every cluster's sums added in row order, as ``np.bincount``
    adds them (where a few clusters' rows are split over threads, in row order within
    each thread's part). Returns ``(clusters_of_model, single, size, centred_sum)``.

    One radix pass (:func:`_design_by_buckets`) moves the rows into buckets of clusters
    small enough that a bucket's tables (a bit per (cluster, model), two sums per
    cluster) stay in a core's cache; a pass per quantity over the rows in their own
    order touched those tables at random (a third of a 10M-row two-way analysis)."""
    n = codes.shape[0]
    if n == 0 or n_clusters == 0:
        return (np.zeros(n_models, np.int64), np.ones(n_pairs, bool), np.zeros(n_clusters),
                np.zeros(n_clusters))
    weighted = frequency is not None
    frequency = frequency if weighted else np.zeros(0)
    shift = _design_shift(n_clusters, n_models)
    if n_clusters <= 1 << shift:  # the tables fit in cache as they are: rows in order
        return _design_by_chunks(codes, n_clusters, model_a, model_b, n_models, pair,
                                 n_pairs, frequency, deviation, weighted)
    kernel, n_chunks = _design_by_buckets.choose(n)
    layout = bucket_layout(codes, shift, ((n_clusters - 1) >> shift) + 1, n_chunks)
    moved = radix_arrays(((n, 4), np.int32), (n, np.float64),
                         (n if weighted else 0, np.float64))
    count, first, single, sums = kernel(codes, model_a, model_b, pair, frequency,
                                        deviation, weighted, n_models, n_pairs,
                                        n_clusters, shift, *layout, *moved, n_chunks)
    # buckets hold disjoint clusters: a pair seen by two threads lies in two clusters
    single = single.all(axis=0) & ((first >= 0).sum(axis=0) <= 1)
    return count.sum(axis=0), single, sums[:, 0].copy(), sums[:, 1].copy()


def _design_by_chunks(codes, n_clusters, model_a, model_b, n_models, pair, n_pairs,
                      frequency, deviation, weighted):
    """:func:`row_design_sums` of clusters whose tables fit in a core's cache as they are
    (few clusters, as on a judge axis): each thread sweeps its chunk of the rows in order
    (:func:`_chunk_designs`), then a (cluster, model) bit is set where any chunk set it, a
    pair is single where each chunk saw it in at most one cluster and the chunks that saw
    it saw the same one, and the per-cluster sums add over the chunks (in row order within
    a chunk: one chunk gives ``np.bincount``'s sums bit for bit, several agree with them to
    round-off)."""
    kernel, n_chunks = _chunk_designs.choose(codes.shape[0])
    seen, first, single, sums = kernel(codes, model_a, model_b, pair, frequency, deviation,
                                       weighted, n_models, n_pairs, n_clusters, n_chunks)
    bits = np.unpackbits(np.bitwise_or.reduce(seen, axis=0), bitorder="little")
    count = bits[: n_clusters * n_models].reshape(n_clusters, n_models).sum(axis=0)
    last_first = first.max(axis=0)  # -1: no chunk saw the pair
    seen_first = np.where(first >= 0, first, np.iinfo(np.int64).max).min(axis=0)
    one_cluster = (last_first < 0) | (seen_first == last_first)
    total = sums.sum(axis=0)
    return (count.astype(np.int64), single.all(axis=0) & one_cluster, total[:, 0].copy(),
            total[:, 1].copy())


@sized_kernel
def _chunk_designs(codes, model_a, model_b, pair, frequency, deviation, weighted, n_models,
                   n_pairs, n_clusters, n_chunks):  # pragma: no cover - numba
    """:func:`_design_by_chunks`' kernel: per chunk of the rows, in order
    (:func:`_sweep_design`), its (cluster, model) bit table, each pair's first cluster and
    single flag, and each cluster's sums."""
    n = codes.shape[0]
    seen = np.zeros((n_chunks, (n_models * n_clusters + 7) >> 3), np.uint8)
    count = np.zeros((n_chunks, n_models), np.int64)
    first = np.full((n_chunks, n_pairs), -1, np.int64)
    single = np.ones((n_chunks, n_pairs), np.bool_)
    sums = np.zeros((n_chunks, n_clusters, 2))
    for c in numba.prange(n_chunks):
        lo, hi = c * n // n_chunks, (c + 1) * n // n_chunks
        _sweep_design(codes[lo:hi], model_a[lo:hi], model_b[lo:hi], pair[lo:hi],
                      frequency[lo:hi] if weighted else frequency, deviation[lo:hi],
                      weighted, 0, n_models, seen[c], count[c], first[c], single[c],
                      sums[c])
    return seen, first, single, sums


#: Largest (cluster, model) bit table and number of clusters of one bucket of
#: :func:`_design_by_buckets` (256 KiB and 128 KiB of sums: a core's L2 cache), and the most
#: buckets (each a write stream of the radix pass).
_DESIGN_BUCKET_BITS = 1 << 21
_DESIGN_BUCKET_CLUSTERS = 1 << 13
_DESIGN_MAX_BUCKETS = 1 << 12


def _design_shift(n_clusters: int, n_models: int) -> int:
    """log2 of the clusters per bucket of :func:`_design_by_buckets`: as many as the
    cache bounds allow, more when the bucket count would exceed its bound."""
    fits = min(_DESIGN_BUCKET_CLUSTERS, max(1, _DESIGN_BUCKET_BITS // max(n_models, 1)))
    least = -(-n_clusters // _DESIGN_MAX_BUCKETS)
    return max(fits.bit_length() - 1, (least - 1).bit_length())


@njit(inline="always")
def _mark(seen, count, key, m):  # pragma: no cover - numba
    """Count model m in a cluster the first time its (cluster, model) bit ``key`` is set;
    branch-free (whether a bit is new is unpredictable, a branch on it costs a quarter)."""
    i = key >> 3
    bit = np.uint8(1 << (key & 7))
    old = seen[i]
    seen[i] = old | bit
    count[m] += (old & bit) == 0


@njit(cache=True)
def _bit_table(n_models, n_clusters):  # pragma: no cover - numba
    """A zeroed bit per (cluster, model)."""
    return np.zeros((n_models * n_clusters + 7) >> 3, np.uint8)


@njit(cache=True)
def _sweep_design(local, model_a, model_b, pair, frequency, deviation, weighted, base,
                  n_models, seen, count, first, single, sums):  # pragma: no cover - numba
    """Add rows (clusters ``base + local``) to the design sums in row order: each model's
    clusters counted with the bit table ``seen`` (:func:`_mark`; bits indexed by
    ``local``), each pair's first cluster and whether another follows, and each cluster's
    frequency and frequency x deviation (frequency 1 unless ``weighted``)."""
    for i in range(local.shape[0]):
        g = local[i]
        cluster = base + g
        _mark(seen, count, g * n_models + model_a[i], model_a[i])
        _mark(seen, count, g * n_models + model_b[i], model_b[i])
        p = pair[i]
        if first[p] < 0:
            first[p] = cluster
        elif first[p] != cluster:
            single[p] = False
        f = frequency[i] if weighted else 1.0
        sums[cluster, 0] += f
        sums[cluster, 1] += f * deviation[i]


@sized_kernel
def _design_by_buckets(codes, model_a, model_b, pair, frequency, deviation, weighted,
                       n_models, n_pairs, n_clusters, shift, offsets, bucket_start, ints,
                       values, weights, n_chunks):  # pragma: no cover - numba
    """:func:`row_design_sums`' kernel. A stable radix pass copies each row's (cluster
    within its bucket, models, pair) to ``ints`` (n, 4), its deviation to ``values`` and
    (when ``weighted``) its frequency to ``weights``, in buckets of ``2**shift`` clusters,
    chunk c of the rows from its places ``offsets[c]`` on (a bucket keeps row order;
    ``offsets``, ``bucket_start``: :func:`~winrate.variance.meats.bucket_layout`; the
    arrays numpy's, :func:`~winrate.variance.meats.radix_arrays`); then each thread
    sweeps its buckets (:func:`_sweep_design`). Returns per thread the counts
    (n_chunks, L), first clusters and single flags (n_chunks, P), and the per-cluster
    sums (G, 2)."""
    n = codes.shape[0]
    for c in numba.prange(n_chunks):
        fill = offsets[c].copy()
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            i, within = radix_place(fill, codes[r], shift)
            ints[i, 0] = within
            ints[i, 1] = model_a[r]
            ints[i, 2] = model_b[r]
            ints[i, 3] = pair[r]
            values[i] = deviation[r]
            if weighted:
                weights[i] = frequency[r]
    n_buckets = bucket_start.shape[0] - 1
    count = np.zeros((n_chunks, n_models), np.int64)
    first = np.full((n_chunks, n_pairs), -1, np.int64)
    single = np.ones((n_chunks, n_pairs), np.bool_)
    sums = np.zeros((n_clusters, 2))
    for c in numba.prange(n_chunks):
        seen = _bit_table(n_models, 1 << shift)
        for b in range(c * n_buckets // n_chunks, (c + 1) * n_buckets // n_chunks):
            lo, hi = bucket_start[b], bucket_start[b + 1]
            seen[:] = 0
            _sweep_design(ints[lo:hi, 0], ints[lo:hi, 1], ints[lo:hi, 2], ints[lo:hi, 3],
                          weights[lo:hi], values[lo:hi], weighted,
                          b << shift, n_models, seen, count[c], first[c], single[c], sums)
    return count, first, single, sums


def cell_design_sums(cells: CellTotals, pairs: np.ndarray, counts: np.ndarray,
                     codes: np.ndarray):
    """:func:`row_design_sums` of a fit held as cell totals (``codes`` the cells'
    clusters), and the sum of squares of :func:`centred_scores`: a cluster's comparisons
    and centred sum are its cells', the centred scores' sum of squares is the pairs'
    (``pairs`` (P, 2) observed, ``counts`` (L, L)); cells are complete, so a pair is in a
    cluster when both its models have comparisons in one of its cells. Returns
    ``(clusters_of_model, single, size, centred_sum, squares)``."""
    lo, hi = pairs[:, 0], pairs[:, 1]
    if np.bincount(codes).max(initial=0) <= 1:  # every cluster one cell
        pair_clusters = counts[lo, hi]
    else:
        order = np.argsort(codes, kind="stable")
        pair_clusters = _pair_clusters(cells.model_rows > 0, codes, order)[lo, hi]
    total = cells.rows.sum()
    mean = cells.centred.sum() / total
    size = _by_cluster(codes, cells.rows[:, None])[:, 0]
    return (_cell_clusters_of_model(cells, codes), pair_clusters == 1,
            size, _by_cluster(codes, cells.centred[:, None])[:, 0] - size * mean,
            cells.pair_spread.sum() - total * mean**2)


def cells_per_cluster(cells: CellTotals, codes: np.ndarray,
                      n_per_model: np.ndarray) -> np.ndarray:
    """:func:`comparisons_per_cluster` from cell totals (``codes`` the cells' clusters)."""
    return per_cluster(n_per_model, _cell_clusters_of_model(cells, codes))


def _cell_clusters_of_model(cells: CellTotals, codes: np.ndarray) -> np.ndarray:
    """The clusters each model appears in: those holding a cell where it has comparisons."""
    return (_by_cluster(codes, cells.model_rows) > 0).sum(axis=0)


def cells_shared_icc(cells: CellTotals, pairs: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per model, the ANOVA ICC by cluster of its own centred scores oriented for it (the
    eda's shared-response ICC, :func:`winrate.eda.shared_response_icc`) from cell totals:
    cluster sizes from each cell's comparisons of the model, sums from its own centred
    sums, and the sum of squares over the pairs it is in."""
    size = _by_cluster(codes, cells.model_rows)
    sums = _by_cluster(codes, cells.own)
    squares = (np.bincount(pairs[:, 0], cells.pair_spread, size.shape[1])
               + np.bincount(pairs[:, 1], cells.pair_spread, size.shape[1]))
    total = size.sum(axis=0)
    mean = np.divide(sums.sum(axis=0), total, out=np.zeros(total.shape), where=total > 0)
    return np.array([icc_of_sums(size[:, a], sums[:, a] - size[:, a] * mean[a],
                                 squares[a] - total[a] * mean[a]**2)
                     for a in range(size.shape[1])])  # per model


def _by_cluster(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(G, k) sums of the (C, k) per-cell ``values`` over each cluster's cells."""
    indicator = sp.csr_array((np.ones(codes.shape[0]), (codes, np.arange(codes.shape[0]))),
                             shape=(int(codes.max(initial=-1)) + 1, codes.shape[0]))
    return np.asarray(indicator @ values)


@njit(cache=True)
def _pair_clusters(present, codes, order):  # pragma: no cover - numba
    """(K, K) number of clusters in which each pair of models is present together in a
    cell (upper triangle): cells visited cluster by cluster (``order``), each pair
    stamped with the last cluster it was counted in. O(sum over cells of m_c^2)."""
    k = present.shape[1]
    last = np.full((k, k), -1, np.int64)
    count = np.zeros((k, k), np.int64)
    models = np.empty(k, np.int64)
    for cell in order:
        g = codes[cell]
        m = 0
        for a in range(k):
            if present[cell, a]:
                models[m] = a
                m += 1
        for i in range(m):
            for j in range(i + 1, m):
                a, b = models[i], models[j]
                if last[a, b] != g:
                    last[a, b] = g
                    count[a, b] += 1
    return count


def shared_response_correlation(deff: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``rho_a = (DEFF_a - 1) / (m_a - 1)``; NaN where ``m_a <= 1`` (not identified)."""
    return np.divide(deff - 1.0, m - 1.0, out=np.full(deff.shape, np.nan), where=m > 1)


def single_cluster_pairs(pair: np.ndarray, codes: np.ndarray, n_pairs: int) -> np.ndarray:
    """Boolean (P,): pairs all of whose rows fall in one cluster of the axis.

    For such a pair the centred scores sum to zero within that cluster, so the axis'
    variance gets no information about the pair: its contribution is not identified.
    """
    n = codes.shape[0]
    n_clusters = int(codes.max()) + 1 if n else 0
    return row_design_sums(codes, n_clusters, np.zeros(n, np.int32), np.ones(n, np.int32), 2,
                           pair, n_pairs, None, np.zeros(n))[1]


def largest_cluster_share(influence, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per model a: the largest cluster's share of its clustered variance and that cluster.

    With cluster totals of the influence ``t_ga = sum_{r in g} u_r^(a)``, the (CR0)
    clustered variance is ``V_aa = sum_g t_ga^2`` (CR1 rescales every term alike, so the
    shares are the same), and cluster g's share is ``s_ga = t_ga^2 / V_aa``. Returns
    ``(max_g s_ga, argmax_g s_ga)`` as float and int arrays of length K; NaN and -1 for a
    model whose clustered variance is zero. For an M-estimator (Bradley-Terry) pass its
    score rows: the shares are then those of each model's score component, the summands
    ``t_g`` of the estimating equation whose central limit theorem the sandwich relies on
    (the bread is a fixed linear map of their sum). See :func:`dominant_share` to read it
    off a clustering already computed.

    Why it matters: the clustered SE treats the cluster totals as independent summands of
    a central limit theorem; Lindeberg's condition (implied Feller condition
    ``max_g Var(t_g) / sum_g Var(t_g) -> 0``; Billingsley 1995, Probability and Measure,
    Thm 27.2) fails when one cluster keeps a fixed share, however many clusters there
    are (Djogbenou, MacKinnon & Nielsen 2019, J. Econometrics 212(2), on clusters whose
    size does not vanish relative to the sample). ``s_ga`` is its sample analogue; a
    share above :data:`DOMINANT_SHARE` is flagged (the threshold's justification is there).
    """
    rows = as_rows(influence)
    return dominant_share(meat_from_codes(rows, *group_codes(codes)))


def dominant_share(group: GroupMeat) -> tuple[np.ndarray, np.ndarray]:
    """``largest / diag(meat)`` and the maximising group code of a :class:`GroupMeat` (the
    kernels of the clustered variance keep both, so this costs nothing extra)."""
    variance = np.diag(group.meat)
    positive = variance > 0
    share = np.divide(group.largest, variance, out=np.full(variance.shape, np.nan),
                      where=positive)
    return share, np.where(positive, group.argmax, -1)


def effective_size(group: ColumnSpread, columns: np.ndarray) -> np.ndarray:
    """Each reported model's effective number of clusters G* on one axis
    (:func:`effective_clusters`) from that axis' one-way ``group`` sums, before any
    covariance is computed (``method="auto"`` reads it,
    :func:`winrate.variance.method_choice.choose`); ``columns`` maps models to influence
    columns. NaN where the model's variance on the axis is not identified (all of its
    comparisons in one cluster: its cluster totals are zero, as in the covariance step)."""
    own, rows = group.own, group.row_squares
    unidentified = (own <= 1e-12 * rows) & (rows > 0)
    return np.where(unidentified, np.nan, effective_clusters(group))[columns]


def effective_clusters(group: GroupMeat | ColumnSpread) -> np.ndarray:
    """Effective number of clusters behind each column (Carter, Schnepel & Steigerwald 2017,
    "Asymptotic behavior of a t-test robust to cluster heterogeneity", Review of Economics
    and Statistics 99(4)): ``G* = G / (1 + Gamma) = (sum_g gamma_g)^2 / sum_g gamma_g^2``,
    with ``Gamma`` the squared coefficient of variation of the clusters' contributions
    ``gamma_g`` to the variance of the estimate.

    We evaluate ``gamma_g`` at their working-independence value (their rho = 0),
    ``gamma_ga = sum_{r in g} u_ra^2``: cluster g's share of model a's squared influence,
    so ``G*_a`` is the inverse Herfindahl index of how a model's comparisons (weighted by
    their influence on its score) spread over the clusters. It equals G when every cluster
    carries the same weight, falls towards 1 as one cluster carries it all, and is
    estimator-agnostic (for Bradley-Terry it reads the score rows, like
    :func:`largest_cluster_share`). ``group.row_squares`` is ``sum_g gamma_ga`` and
    ``group.spread`` is ``sum_g gamma_ga^2`` (kept by the clustered-variance kernel, so this
    costs nothing extra); a row of frequency f
    counts as one unit (its f comparisons share every cluster). NaN for an untouched
    column. Realised cluster totals (``gamma = t_g^2``) would scatter around their means
    and put G* near G / 3 even for equal clusters, so the working value is used.
    """
    return np.divide(group.row_squares**2, group.spread,
                     out=np.full(group.spread.shape, np.nan), where=group.spread > 0)
