"""Dense integer labels found in one counting pass
(:func:`winrate.variance.meats.dense_label_totals`, used by ``group_codes`` and the CR2
strata): against ``np.bincount`` and ``factorize_groups``, exactly (counts are integers,
weight totals sum in row order as ``np.bincount`` sums them)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from winrate.io.logs import factorize_groups
from winrate.variance import meats

labels = arrays(st.sampled_from([np.int32, np.int64, np.uint16]), st.integers(1, 60),
                elements=st.integers(0, 12))


@settings(max_examples=200, deadline=None)
@given(labels, st.booleans(), st.integers(0, 2**31 - 1))
def test_dense_labels_match_bincount_and_factorize(values, weighted, seed):
    weights = np.random.default_rng(seed).random(values.size) if weighted else None
    found = meats.dense_label_totals(values, weights)
    dense = np.unique(values).size == int(values.max()) + 1
    assert (found is not None) == dense
    if dense:
        np.testing.assert_array_equal(found, np.bincount(values, weights=weights))
    codes, n_groups = meats.group_codes(values)
    expected_codes, expected_labels = factorize_groups(values)
    np.testing.assert_array_equal(codes, expected_codes)
    assert n_groups == len(expected_labels)


def test_other_labels_are_left_to_factorize():
    assert meats.dense_label_totals(np.array([0, -1, 1])) is None  # negative
    assert meats.dense_label_totals(np.array([0.0, 1.0])) is None  # not integers
    assert meats.dense_label_totals(np.array(["a", "b"])) is None
    assert meats.dense_label_totals(np.array([0, 10**9])) is None  # range too wide
    assert meats.dense_label_totals(np.array([], np.int64)) is None
    codes, n_groups = meats.group_codes(np.array([5, 3, 5]))
    np.testing.assert_array_equal(codes, [1, 0, 1])
    assert n_groups == 2


def test_strata_of_dense_codes_size_as_bincount_does():
    """A fit's pair codes (dense) take the one-pass path; their sizes, weighted, equal the
    factorize-and-bincount path's bit for bit."""
    rng = np.random.default_rng(3)
    strata = rng.integers(0, 40, 5_000)
    frequency = rng.integers(1, 5, 5_000) + rng.random(5_000)
    fast = meats.StrataLeverage(strata, frequency)
    slow = meats.StrataLeverage(strata + 7, frequency)  # not dense: factorize_groups
    assert fast.n_strata == slow.n_strata == 40
    np.testing.assert_array_equal(fast.stratum, strata)
    np.testing.assert_array_equal(fast.stratum_size, slow.stratum_size)
