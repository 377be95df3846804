"""The O(rows) kernels that visit rows cluster by cluster (issue 35's speed): the CR2
block frequencies of :func:`winrate.variance.meats.stratum_leverage_scale` and the
:class:`~winrate.variance.meats.ColumnSpread` the effective cluster counts read, against
dense brute-force sums (numpy ``add.at`` over a (clusters, columns) table) and a pandas
group-by, on random sparse designs whose codes leave gaps."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from winrate import parallel
from winrate.variance import meats
from winrate.variance.cluster_sums import influence_sums
from winrate.variance.meats import column_spread, leverage_factor, stratum_leverage_scale


def _design(seed: int):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 400)), int(rng.integers(1, 12))
    n_range = int(rng.integers(1, 60))
    codes = rng.integers(0, n_range, n)
    per_row = rng.integers(0, 4, n)  # rows with no non-zero too
    indices = np.concatenate([rng.choice(k, size=min(m, k), replace=False)
                              for m in per_row]) if per_row.sum() else np.array([], int)
    indptr = np.concatenate([[0], np.cumsum(np.minimum(per_row, k))])
    data = rng.normal(size=indices.shape[0])
    infl = sp.csr_array((data, indices, indptr), shape=(n, k))
    return rng, infl, codes, n_range + int(rng.integers(0, 5))


@pytest.mark.parametrize("seed", range(40))
def test_column_spread_equals_dense_brute_force(seed):
    _, infl, codes, n_range = _design(seed)
    dense = infl.toarray()
    totals = np.zeros((n_range, dense.shape[1]))
    squares = np.zeros((n_range, dense.shape[1]))
    np.add.at(totals, codes, dense)
    np.add.at(squares, codes, dense**2)
    for found in (column_spread(infl, codes, n_range), column_spread(dense, codes, n_range)):
        np.testing.assert_allclose(found.own, (totals**2).sum(axis=0), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(found.row_squares, squares.sum(axis=0), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(found.spread, (squares**2).sum(axis=0), rtol=1e-12,
                                   atol=1e-14)


@pytest.mark.parametrize("seed", range(10))
def test_column_spread_is_the_one_way_meats_diagonal_and_sums(seed):
    _, infl, codes, _ = _design(seed)
    sums = influence_sums(infl, [codes])
    group, found = sums.term_meats("none")[0], sums.column_spread(0)
    np.testing.assert_allclose(found.own, np.diag(group.meat), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(found.row_squares, group.row_squares, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(found.spread, group.spread, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("path", ["as the size decides", "buckets", "buckets, threads"])
@pytest.mark.parametrize("seed", range(30))
def test_block_frequencies_equal_a_pandas_group_by(seed, path, monkeypatch):
    """Every path of :func:`winrate.variance.meats.block_frequency`: the dense table or
    buckets as the sizes decide, and forced buckets of 4 clusters, serial and threaded."""
    if path != "as the size decides":
        monkeypatch.setattr(meats, "DENSE_BLOCKS_PER_ROW", 0)
        monkeypatch.setattr(meats, "_BLOCK_BUCKET_BITS", 2)
    if path == "buckets, threads":
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    rng, infl, codes, n_range = _design(seed)
    strata = rng.integers(0, int(rng.integers(1, 20)), codes.shape[0]) * 7  # gaps
    freq = rng.integers(1, 4, codes.shape[0]) * 0.5
    frame = pd.DataFrame({"g": codes, "h": strata, "f": freq})
    m = frame.groupby(["g", "h"])["f"].transform("sum").to_numpy()
    n = frame.groupby("h")["f"].transform("sum").to_numpy()
    expected = leverage_factor(m, n)
    np.testing.assert_allclose(stratum_leverage_scale(codes, strata, freq, n_range=n_range),
                               expected, rtol=1e-13)
    np.testing.assert_allclose(stratum_leverage_scale(codes, strata, freq), expected,
                               rtol=1e-13)


@pytest.mark.parametrize("seed", range(30))
def test_group_meat_of_csr_rows_is_the_same_by_every_path(seed, monkeypatch):
    """:func:`winrate.variance.meats.meat_from_codes` of CSR rows by dense per-cluster
    totals (few clusters), by the radix pass (the dense limit set to 0, serial and
    threaded), and of the same rows as a dense array: one :class:`GroupMeat` (rows without
    a non-zero leave their cluster empty in the CSR paths, as in the radix pass)."""
    _, infl, codes, n_range = _design(seed)
    found = {"dense totals": meats.meat_from_codes(infl, codes, n_range)}
    monkeypatch.setattr(meats, "DENSE_TOTALS_LIMIT", 0)
    found["radix"] = meats.meat_from_codes(infl, codes, n_range)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    found["radix, threads"] = meats.meat_from_codes(infl, codes, n_range)
    dense = meats.meat_from_codes(infl.toarray(), codes, n_range)
    for name, group in found.items():
        for field in ("meat", "largest", "row_squares", "spread", "fourth"):
            np.testing.assert_allclose(getattr(group, field), getattr(dense, field),
                                       rtol=1e-12, atol=1e-14, err_msg=f"{name}: {field}")
        np.testing.assert_array_equal(group.argmax, dense.argmax, err_msg=name)
        occupied = np.unique(codes[np.diff(infl.indptr) > 0]).size
        assert group.n_groups == occupied, name
