"""A Parquet log's string columns become categoricals over Arrow's dictionary without pandas
hashing the labels again (:func:`winrate.io.logs._known_categories`, pandas' private fast
path where this pandas has it): the dtype equals the checked constructor's, and a log read
with the fast path equals one read without it (as a newer pandas without it would read)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from winrate.io import logs


@pytest.mark.parametrize("values", [["b", "a", "c", "a"], [3, 1, 2, 1], ["x", "é", "y"]])
def test_known_categories_equal_the_checked_constructor(values):
    labels = pc.dictionary_encode(pa.array(values)).dictionary.to_pandas()
    fast, checked = logs._known_categories(labels), pd.CategoricalDtype(labels)
    assert fast == checked
    assert fast.categories.dtype == checked.categories.dtype
    assert fast.categories.equals(checked.categories)


def test_a_log_reads_alike_with_and_without_pandas_fast_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    n = 500
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({
        "prompt_id": [f"p{i}" for i in rng.integers(0, 60, n)],
        "judge_id": [f"j{i}" for i in rng.integers(0, 3, n)],
        "model_a": [f"m{i}" for i in rng.integers(0, 4, n)],
        "model_b": [f"m{i}" for i in rng.integers(4, 8, n)],
        "outcome": np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, n)]}), path)
    fast = logs.read_comparisons(path)
    monkeypatch.delattr(pd.CategoricalDtype, "_from_fastpath", raising=False)
    checked = logs.read_comparisons(path)
    np.testing.assert_array_equal(fast.model_a, checked.model_a)
    np.testing.assert_array_equal(fast.model_b, checked.model_b)
    np.testing.assert_array_equal(fast.score, checked.score)
    np.testing.assert_array_equal(fast.models, checked.models)
    for name in ("prompt", "judge"):
        np.testing.assert_array_equal(fast.axes[name].codes, checked.axes[name].codes)
        np.testing.assert_array_equal(fast.axes[name].labels, checked.axes[name].labels)
