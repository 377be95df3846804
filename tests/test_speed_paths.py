"""Fast paths against the simple computations they replace (oracle tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse.csgraph import connected_components

from winrate import estimators
from winrate.errors import WinrateInputError
from winrate.estimators.bradley_terry_kernels import empirical_bayes_probabilities
from winrate.estimators.graph import component_labels
from winrate.estimators.small_sample import beta_binomial_floor, degenerate_pair_cov, wilson_floor
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog, read_comparisons
from winrate.variance.diagnostics import comparisons_per_cluster, single_cluster_pairs
from winrate.variance.sandwich import (
    group_meat,
    multiway_cluster_cov,
    repair_psd,
    small_sample_factor,
)

from .conftest import random_log


@pytest.mark.parametrize("seed", range(6))
def test_component_labels_partition_like_scipy(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 40))
    upper = np.triu(rng.random((k, k)) < rng.choice([0.02, 0.08, 0.3]), 1)
    adjacency = upper | upper.T
    labels = component_labels(adjacency)
    n_expected, expected = connected_components(adjacency, directed=False)
    assert labels.max() + 1 == n_expected
    # the same partition: labels map one-to-one onto scipy's
    pairs = set(zip(labels.tolist(), expected.tolist(), strict=True))
    assert len(pairs) == n_expected
    assert labels[0] == 0 and np.all(np.diff(np.maximum.accumulate(labels)) <= 1)


def test_small_sample_floor_equals_a_sum_of_outer_products():
    """Every single-outcome pair (lo, hi) adds var * v v^T, v = w_lo,hi e_lo - w_hi,lo e_hi,
    built here one pair at a time (with a baseline the reported models are a subset), for
    the empirical-Bayes floor and for the Wilson floor (a fully ordered log)."""
    rng = np.random.default_rng(3)
    a = np.array([0, 0, 1, 1, 2, 3, 0, 2, 3, 1, 0, 1, 2])
    b = np.array([1, 1, 2, 2, 3, 0, 2, 0, 1, 3, 3, 0, 1])
    mixed = np.array([1, 1, 0, 0, 1, 1, 0.5, 1, 0, 1, 0.5, 1, 1])
    ordered = (a < b).astype(float)  # lower code always wins: no cycle, Wilson floor
    for score, kind in ((mixed, "empirical Bayes"), (ordered, "Wilson")):
        log = ComparisonLog.from_arrays(a, b, score, frequency=rng.integers(1, 4, a.size))
        for baseline in (None, "0"):
            board = fit(log, baseline=baseline)
            cov, degenerate, used = degenerate_pair_cov(board, log.frequency, 1.96)
            assert used == kind and degenerate.sum() >= 2
            predicted = empirical_bayes_probabilities(board.psi, board.counts)
            expected = np.zeros((log.n_models,) * 2)
            for p in np.flatnonzero(degenerate):
                lo, hi = board.pairs[p]
                n, psi = board.counts[lo, hi], board.psi[lo, hi]
                var = (wilson_floor(psi, n, 1.96) if predicted is None else
                       beta_binomial_floor(predicted[0][lo, hi], n * psi, n))
                v = np.zeros(log.n_models)
                v[lo], v[hi] = board.weights[lo, hi], -board.weights[hi, lo]
                expected += var * np.outer(v, v)
            keep = board.codes
            np.testing.assert_allclose(cov, expected[np.ix_(keep, keep)], rtol=1e-13,
                                       atol=1e-16)


@pytest.mark.parametrize(("n", "k", "n_clusters"), [(500, 6, 40), (300, 90, 280), (50, 3, 1)])
def test_comparisons_per_cluster_against_a_pandas_groupby(n, k, n_clusters):
    """Both kernel paths (a bit per (model, cluster) when K G <= 64 n, else rows sorted by
    cluster; the second case here) against distinct (model, cluster) pairs counted by
    pandas, with frequency weights."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k if k > 1 else a
    codes = rng.integers(0, n_clusters, n)
    weight = rng.integers(1, 5, n).astype(float)
    frame = pd.DataFrame({"model": np.concatenate([a, b]), "cluster": np.tile(codes, 2),
                          "w": np.tile(weight, 2)})
    grouped = frame.groupby("model")
    expected = (grouped["w"].sum() / grouped["cluster"].nunique()).reindex(range(k + 2))
    n_weighted = grouped["w"].sum().reindex(range(k + 2), fill_value=0).to_numpy()
    got = comparisons_per_cluster(a, b, codes, n_weighted)  # two models never seen: NaN
    np.testing.assert_allclose(got, expected.to_numpy(), rtol=1e-15)
    n_rows = grouped.size().reindex(range(k + 2), fill_value=0).to_numpy().astype(float)
    unweighted = comparisons_per_cluster(a, b, codes, n_rows)
    counts = grouped.size() / grouped["cluster"].nunique()
    np.testing.assert_allclose(unweighted, counts.reindex(range(k + 2)).to_numpy(), rtol=1e-15)


@pytest.mark.filterwarnings("ignore::winrate.errors.WinrateWarning")  # random data: PSD repair
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("model", ["winrate", "bt"])
def test_two_way_single_pass_equals_each_term_on_its_own(seed, model):
    """The nested two-way pass (one radix pass: cells sorted by (outer, inner), outer totals
    from contiguous cells, inner totals dense) against each clustering computed on its own,
    every GroupMeat field, both axis orders, covariance with the estimator's bread."""
    log = random_log(seed, n=900, k=7, n_prompts=120, n_judges=6)
    board = estimators.fit(log, model)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    for axes in ([prompt, judge], [judge, prompt]):
        result = multiway_cluster_cov(board.influence, axes, "cr1", bread=board.bread)
        cell_codes = axes[0] * (axes[1].max() + 1) + axes[1]
        for got, codes in zip(result.term_meats, [*axes, cell_codes], strict=True):
            want = group_meat(board.influence, codes)
            np.testing.assert_allclose(got.meat, want.meat, rtol=1e-12, atol=1e-15)
            assert got.n_groups == want.n_groups
            for field in ("largest", "row_squares", "spread"):
                np.testing.assert_allclose(getattr(got, field), getattr(want, field),
                                           rtol=1e-12, atol=1e-15)
            labels = np.unique(codes)  # group_meat codes are dense; the pass keeps raw codes
            np.testing.assert_array_equal(
                np.where(got.argmax >= 0, got.argmax, -1),
                np.where(want.argmax >= 0, labels[np.maximum(want.argmax, 0)], -1))
        terms = [c * group_meat(board.influence, codes).meat for c, codes in
                 zip((1, 1, -1), [*axes, cell_codes], strict=True)]
        factors = [small_sample_factor(n, "cr1") for _, n, _ in result.terms]
        meat = sum(f * t for f, t in zip(factors, terms, strict=True))
        expected = repair_psd(meat)[0]
        if board.bread is not None:
            expected = board.bread @ expected @ board.bread.T
        np.testing.assert_allclose(result.cov, expected, rtol=1e-10, atol=1e-14)


def test_single_cluster_pairs_against_a_pandas_groupby():
    rng = np.random.default_rng(4)
    pair = rng.integers(0, 60, 400)
    codes = np.where(rng.random(400) < 0.7, pair % 7, rng.integers(0, 7, 400))
    expected = pd.Series(codes).groupby(pair).nunique().reindex(range(62)) <= 1
    expected[[60, 61]] = True  # pairs without rows: nothing leaves a cluster
    np.testing.assert_array_equal(single_cluster_pairs(pair, codes, 62), expected.to_numpy())


def _rows(log):
    """Each row's labels: what a log says, independent of how it was coded."""
    return (log.models[log.model_a].astype(str), log.models[log.model_b].astype(str),
            log.score, *(axis.labels[axis.codes].astype(str) for axis in log.axes.values()))


def test_parquet_string_columns_coded_by_arrow_equal_the_frame_path(tmp_path):
    """Parquet ids are coded by Arrow dictionary encoding: through the file's dictionaries
    for few-valued columns (judges, models, outcomes; several row groups, so the
    dictionaries are unified) and by hashing for many-valued ones (prompts). Row by row the
    log equals the one read from the same DataFrame."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from winrate.io.logs import _small_dictionaries

    rng = np.random.default_rng(2)
    n = 40_000
    a = rng.integers(0, 12, n)
    b = (a + rng.integers(1, 12, n)) % 12
    prompts = np.array([rng.bytes(12).hex() for _ in range(9000)])  # incompressible ids
    frame = pd.DataFrame({
        "prompt_id": prompts[rng.integers(0, 9000, n)],
        "judge_id": [f"judge {i}" for i in rng.integers(0, 4, n)],
        "model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
        "outcome": rng.choice(["a", "b", "tie"], n)})
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=20_000)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups > 1
    assert not _small_dictionaries(meta, "prompt_id")
    assert all(_small_dictionaries(meta, c) for c in ("judge_id", "model_a", "outcome"))
    read, direct = read_comparisons(path), read_comparisons(frame)
    assert sorted(read.models) == sorted(direct.models)
    for got, want in zip(_rows(read), _rows(direct), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_threaded_dictionary_encoding_equals_one_call(monkeypatch, parts):
    """A many-valued string column hashed in parts (one per core, each in a thread) and
    unified has the dictionary and codes of one ``pyarrow.compute.dictionary_encode``:
    values in order of first appearance, across row-group chunks and missing values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from winrate.io import logs

    monkeypatch.setattr(logs, "_THREADED_ENCODE_ROWS", 1_000)
    monkeypatch.setattr("winrate.parallel.usable_cores", lambda: parts)
    rng = np.random.default_rng(5)
    values = [f"p{i}" for i in rng.integers(0, 3_000, 20_000)]
    values[17] = values[15_000] = None
    column = pa.chunked_array([values[:6_000], values[6_000:6_001], values[6_001:]])
    got, want = logs.dictionary_encoded(column), pc.dictionary_encode(column)
    got, want = got.combine_chunks(), want.combine_chunks()
    assert got.dictionary.equals(want.dictionary)
    assert got.indices.equals(want.indices)


def test_parquet_missing_id_is_named_and_unused_categories_are_not_clusters(tmp_path):
    frame = pd.DataFrame({"prompt_id": ["p1", "p2", None, "p3"], "judge_id": "j",
                          "model_a": ["x", "y", "x", "y"], "model_b": ["y", "x", "y", "x"],
                          "outcome": ["a", "b", "tie", "a"]})
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(WinrateInputError,
                       match=r"'prompt_id': missing value in 1 row.*counted from 1\): 3"):
        read_comparisons(path)
    unused = frame.dropna().astype({"prompt_id": pd.CategoricalDtype(["p0", "p1", "p2", "p3"])})
    log = read_comparisons(unused)
    assert log.axes["prompt"].n_clusters == 3
    np.testing.assert_array_equal(log.axes["prompt"].labels[log.axes["prompt"].codes],
                                  ["p1", "p2", "p3"])
