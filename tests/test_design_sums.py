"""One axis' design sums of rows (:func:`winrate.variance.diagnostics.row_design_sums`:
the clusters each model appears in, the single-cluster pairs, each cluster's comparisons
and centred sum) against a pandas group-by, on every path of its kernel: one pass in row
order (tables that fit in cache), serially and in threads' chunks of the rows, and the radix
pass into buckets of clusters serially and threaded (the bucket bounds and the parallel
threshold lowered so small logs take it)."""

import numpy as np
import pandas as pd
import pytest

from winrate import parallel
from winrate.variance import diagnostics, meats


def _rows(seed: int):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 600)), int(rng.integers(2, 15))
    n_clusters = int(rng.integers(1, 90))
    a = rng.integers(0, k, n).astype(np.int32)
    b = ((a + rng.integers(1, k, n)) % k).astype(np.int32)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pair = (lo * k + hi).astype(np.int64)
    # codes leave gaps (empty clusters) and some pairs sit in one cluster
    codes = np.where(rng.random(n) < 0.3, lo % n_clusters, rng.integers(0, n_clusters, n))
    frequency = rng.integers(1, 4, n).astype(float) if seed % 2 else None
    return a, b, k, pair, k * k, codes.astype(np.int32), n_clusters, frequency, rng.normal(size=n)


def _expected(a, b, k, pair, n_pairs, codes, n_clusters, frequency, deviation):
    weight = np.ones(a.shape[0]) if frequency is None else frequency
    models = pd.DataFrame({"model": np.concatenate([a, b]), "cluster": np.tile(codes, 2)})
    clusters_of_model = (models.groupby("model")["cluster"].nunique()
                         .reindex(range(k), fill_value=0).to_numpy())
    per_pair = pd.DataFrame({"pair": pair, "cluster": codes}).groupby("pair")["cluster"]
    single = np.ones(n_pairs, bool)
    single[per_pair.nunique().index] = per_pair.nunique().to_numpy() == 1
    return (clusters_of_model, single, np.bincount(codes, weight, n_clusters),
            np.bincount(codes, weight * deviation, n_clusters))


@pytest.mark.parametrize("path", ["one pass", "one pass, threads", "buckets",
                                  "buckets, threads"])
@pytest.mark.parametrize("seed", range(12))
def test_design_sums_equal_a_pandas_group_by(seed, path, monkeypatch):
    if path.startswith("buckets"):  # buckets of 4 clusters (a bit table of 4 K bits)
        monkeypatch.setattr(diagnostics, "_DESIGN_BUCKET_CLUSTERS", 4)
    if path.endswith("threads"):
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    a, b, k, pair, n_pairs, codes, n_clusters, frequency, deviation = _rows(seed)
    got = diagnostics.row_design_sums(codes, n_clusters, a, b, k, pair, n_pairs, frequency,
                                      deviation)
    expected = _expected(a, b, k, pair, n_pairs, codes, n_clusters, frequency, deviation)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    for found, wanted in zip(got[2:], expected[2:], strict=True):
        np.testing.assert_allclose(found, wanted, rtol=1e-12, atol=1e-12)


def test_the_bucket_bounds_keep_tables_small_and_buckets_few():
    """Buckets of at most 2**13 clusters and a 2**21-bit table while 4096 buckets cover
    the clusters; more clusters per bucket only past that."""
    assert diagnostics._design_shift(1_000_000, 100) == 13
    assert diagnostics._design_shift(1_000_000, 1_000) == 11
    assert diagnostics._design_shift(100_000_000, 1_000) == 15  # 2**15 x 4096 >= 1e8
    assert ((100_000_000 - 1) >> 15) + 1 <= 4096


@pytest.mark.parametrize("n_chunks", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_the_radix_layout_is_a_stable_sort_by_bucket(seed, n_chunks):
    """:func:`~winrate.variance.meats.bucket_layout`: each bucket ``codes >> shift``
    starts after the rows of the buckets before it, and chunk c of the rows writes its
    rows of bucket b after the earlier chunks' rows of b (so a pass keeps row order within
    a bucket), against counts by numpy; exact (integer places)."""
    rng = np.random.default_rng(seed)
    n, shift = int(rng.integers(1, 500)), int(rng.integers(0, 4))
    codes = rng.integers(0, int(rng.integers(1, 60)), n).astype(np.int32)
    n_buckets = (int(codes.max()) >> shift) + 1 + int(rng.integers(0, 3))  # empty tail too
    offsets, bucket_start = meats.bucket_layout(codes, shift, n_buckets, n_chunks)
    bounds = np.arange(n_chunks + 1) * n // n_chunks  # chunk c: rows bounds[c]..bounds[c+1]
    per_chunk = np.array([np.bincount(codes[bounds[c]:bounds[c + 1]] >> shift,
                                      minlength=n_buckets) for c in range(n_chunks)])
    start = np.concatenate([[0], np.cumsum(per_chunk.sum(axis=0))])
    np.testing.assert_array_equal(bucket_start, start)
    np.testing.assert_array_equal(offsets, start[:-1] + np.cumsum(per_chunk, axis=0)
                                  - per_chunk)
