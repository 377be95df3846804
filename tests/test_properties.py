"""Invariances: row order, model labels and a/b orientation do not change the answer."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.io.logs import ComparisonLog


@st.composite
def logs(draw):
    k = draw(st.integers(3, 6))
    n = draw(st.integers(12, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a[:k] = np.arange(k)  # every model appears
    b[:k] = (np.arange(k) + 1) % k
    score = rng.choice([0.0, 0.5, 1.0], n)
    prompt = rng.integers(0, max(3, n // 4), n)
    judge = rng.integers(0, 3, n)
    return a, b, score, prompt, judge, seed


def _fit(a, b, score, prompt, judge, weights="uniform", models=None):
    log = ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge, models=models)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, cluster="prompt+judge", weights=weights)


def _assert_same(first, second, order=None):
    order = np.arange(len(first.scores)) if order is None else order
    np.testing.assert_allclose(first.scores[order], second.scores, atol=1e-12)
    np.testing.assert_allclose(first.cov[np.ix_(order, order)], second.cov, atol=1e-12)
    np.testing.assert_allclose(first.cov_naive[np.ix_(order, order)], second.cov_naive,
                               atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(logs(), st.sampled_from(["uniform", "count"]))
def test_row_permutation(data, weights):
    a, b, score, prompt, judge, seed = data
    perm = np.random.default_rng(seed + 1).permutation(a.size)
    _assert_same(_fit(a, b, score, prompt, judge, weights),
                 _fit(a[perm], b[perm], score[perm], prompt[perm], judge[perm], weights))


@settings(max_examples=40, deadline=None)
@given(logs(), st.sampled_from(["uniform", "count"]))
def test_model_relabelling(data, weights):
    a, b, score, prompt, judge, seed = data
    k = int(max(a.max(), b.max())) + 1
    relabel = np.random.default_rng(seed + 2).permutation(k)
    original = _fit(a, b, score, prompt, judge, weights)
    relabelled = _fit(relabel[a], relabel[b], score, prompt, judge, weights)
    # model i of the original is model relabel[i] of the relabelled log
    inverse = np.argsort(relabel)
    _assert_same(original, relabelled, order=inverse)


@settings(max_examples=40, deadline=None)
@given(logs(), st.sampled_from(["uniform", "count"]))
def test_swapping_sides_with_flipped_outcome(data, weights):
    a, b, score, prompt, judge, seed = data
    swap = np.random.default_rng(seed + 3).random(a.size) < 0.5
    _assert_same(
        _fit(a, b, score, prompt, judge, weights),
        _fit(np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - score, score),
             prompt, judge, weights),
    )


@settings(max_examples=30, deadline=None)
@given(logs())
def test_cluster_relabelling(data):
    a, b, score, prompt, judge, seed = data
    rng = np.random.default_rng(seed + 4)
    new_prompt = rng.permutation(prompt.max() + 1)[prompt] * 7 + 1000
    _assert_same(_fit(a, b, score, prompt, judge), _fit(a, b, score, new_prompt, judge))
