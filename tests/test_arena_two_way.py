"""Two-way clustering at arena shape (issue 40): about as many prompts as rows and many
judges, so the prompt x judge codes span far more values than there are rows. The radix
kernels sort such buckets by comparison (memory O(rows)); every sum must equal a
brute-force group-by of the dense influence, whichever sort a bucket took."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from winrate import parallel
from winrate.estimators import fit
from winrate.io.logs import ComparisonLog
from winrate.variance import cluster_sums, meats
from winrate.variance.cluster_sums import memory_sums

TOLERANCE = 1e-12


def arena_codes(n: int, n_prompts: int, n_judges: int, seed: int):
    """Prompt and judge codes of a log with ``n_prompts`` prompts and ``n_judges`` judges,
    each row in a random (prompt, judge) cell (arena shape: prompts ~ rows / 2)."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, n_prompts, n)
    judge = rng.integers(0, n_judges, n)
    return [meats.group_codes(prompt)[0], meats.group_codes(judge)[0]]


def sparse_influence(n: int, k: int, seed: int) -> sp.csr_array:
    """Rows with two non-zeros each (a pair's two models), as the win rate's influence."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    values = rng.normal(size=n)
    return sp.csr_array((np.column_stack([values, -0.5 * values]).ravel(),
                         np.column_stack([a, b]).ravel(), np.arange(0, 2 * n + 1, 2)),
                        shape=(n, k))


def brute_force_meat(dense: np.ndarray, codes: np.ndarray):
    """Group totals by a pandas group-by of the dense rows: meat, number of groups, largest
    squared total per column with its group's code, sums of squared rows, their squares per
    group summed, and fourth powers of the totals."""
    frame = pd.DataFrame(dense)
    totals = frame.groupby(codes).sum()
    within = (frame**2).groupby(codes).sum()
    squared = totals.to_numpy() ** 2
    touched = squared.max(axis=0) > 0
    return dict(meat=totals.to_numpy().T @ totals.to_numpy(), n_groups=len(totals),
                largest=squared.max(axis=0),
                argmax=np.where(touched, totals.index.to_numpy()[squared.argmax(axis=0)], -1),
                row_squares=within.to_numpy().sum(axis=0),
                spread=(within.to_numpy() ** 2).sum(axis=0), fourth=(squared**2).sum(axis=0))


def assert_meat_equal(found: meats.GroupMeat, expected: dict) -> None:
    scale = max(1.0, np.abs(expected["meat"]).max())
    np.testing.assert_allclose(found.meat, expected["meat"], rtol=0, atol=TOLERANCE * scale)
    assert found.n_groups == expected["n_groups"]
    for name in ("largest", "row_squares", "spread", "fourth"):
        np.testing.assert_allclose(getattr(found, name), expected[name], rtol=TOLERANCE,
                                   atol=TOLERANCE)
    np.testing.assert_array_equal(found.argmax, expected["argmax"])


@pytest.mark.parametrize(("n", "n_prompts", "n_judges", "seed"), [
    (6_000, 3_000, 3_000, 0),  # arena shape: buckets sorted by comparison
    (6_000, 100, 10, 1),       # dense cells: counting sort, the only sort before issue 40
    (3_000, 1_500, 700, 2),
])
def test_nested_pass_equals_a_brute_force_group_by(n, n_prompts, n_judges, seed):
    codes = arena_codes(n, n_prompts, n_judges, seed)
    sizes = [int(c.max()) + 1 for c in codes]
    infl = sparse_influence(n, 12, seed)
    dense = infl.toarray()
    prompt_meat, judge_meat, cell_meat = meats.nested_meats(infl, codes, sizes)[0]
    assert_meat_equal(prompt_meat, brute_force_meat(dense, codes[0]))
    assert_meat_equal(judge_meat, brute_force_meat(dense, codes[1]))
    assert_meat_equal(cell_meat, brute_force_meat(dense, codes[0] * sizes[1] + codes[1]))


def test_sparse_codes_of_one_clustering_equal_a_brute_force_group_by():
    """Codes spread over 2^40 values (beyond int32 offsets within a bucket)."""
    rng = np.random.default_rng(5)
    n = 5_000
    codes = rng.choice(1 << 40, size=n // 3, replace=False)[rng.integers(0, n // 3, n)]
    infl = sparse_influence(n, 9, 5)
    found = meats.meat_from_codes(infl, codes.astype(np.int64), 1 << 40)
    assert_meat_equal(found, brute_force_meat(infl.toarray(), codes))


def random_log(n: int, k: int, n_prompts: int, n_judges: int, seed: int) -> ComparisonLog:
    """A log of ``n`` rows among ``k`` models with uniform prompts, judges and outcomes
    (win, tie, loss)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    return ComparisonLog.from_arrays(a.astype(np.int32), b.astype(np.int32),
                                     rng.integers(0, 3, n) / 2.0,
                                     prompt=rng.integers(0, n_prompts, n).astype(np.int32),
                                     judge=rng.integers(0, n_judges, n).astype(np.int32))


def test_a_fitted_arena_log_reaches_the_brute_force_terms():
    """From a fitted log to its cluster sums (the route ``analyze`` takes): the prompt,
    judge and prompt x judge meats of the two-way CR1 sandwich (Cameron, Gelbach & Miller
    2011, eq. 2.11) equal a dense group-by, for both estimators."""
    log = random_log(4_000, 10, 2_000, 1_500, 11)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    for model in ("winrate", "bt"):
        board = fit(log, model)
        dense = board.influence.toarray() if sp.issparse(board.influence) else board.influence
        terms = memory_sums(log, board, ("prompt", "judge"), None).term_meats("cr1")
        cells = prompt.astype(np.int64) * (int(judge.max()) + 1) + judge
        for found, codes in zip(terms, (prompt, judge, cells), strict=True):
            assert_meat_equal(found, brute_force_meat(dense, codes))


def brute_force_leverage(codes: np.ndarray, strata: np.ndarray, frequency: np.ndarray):
    """CR2's row factors (Bell & McCaffrey 2002; the stratified form of
    :func:`winrate.variance.meats.stratum_leverage_scale`) by pandas group-bys: ``m`` the
    frequency of the row's stratum in its cluster, ``n`` in the whole log, the factor
    ``(1 - m / n)^{-1/2}`` and 1 where the block is the whole stratum."""
    frame = pd.DataFrame({"g": codes, "h": strata, "f": frequency})
    m = frame.groupby(["g", "h"])["f"].transform("sum").to_numpy()
    n = frame.groupby("h")["f"].transform("sum").to_numpy()
    rest = 1.0 - m / n
    return np.where(rest > 1e-12, 1.0 / np.sqrt(np.maximum(rest, 1e-12)), 1.0)


@pytest.mark.parametrize(("n", "n_prompts", "n_judges", "weighted", "seed", "threaded"), [
    (6_000, 3_000, 30, True, 3, False),   # arena shape: buckets sorted by comparison
    (6_000, 3_000, 30, True, 3, True),
    (6_000, 100, 10, False, 4, False),    # dense cells: counting sort
    (4_000, 40, 7, True, 5, True),        # few prompts: strata fill whole clusters (factor 1)
])
def test_cr2_terms_of_the_nested_pass_equal_a_brute_force_group_by(
        n, n_prompts, n_judges, weighted, seed, threaded, monkeypatch):
    """The two-way CR2 terms from one radix pass (each row scaled by its own leverage
    factor for each term, the factors' block frequencies summed inside the pass) equal
    a dense group-by of rows scaled by brute-force factors, with and without row
    frequencies, whichever sort a bucket took, serial and threaded; and the pass that
    makes the uncorrected and the CR2 terms together equals both group-bys."""
    if threaded:
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    codes = arena_codes(n, n_prompts, n_judges, seed)
    sizes = [int(c.max()) + 1 for c in codes]
    infl = sparse_influence(n, 12, seed)
    rng = np.random.default_rng(seed)
    strata = rng.integers(0, 20, n)
    frequency = rng.integers(1, 4, n).astype(float) if weighted else None
    leverage = meats.StrataLeverage(strata, frequency)
    assert meats.nests_leverage(infl, leverage, min(sizes))
    cr2 = meats.nested_meats(infl, codes, sizes, leverage)[0]
    uncorrected, paired_cr2 = meats.nested_meats(infl, codes, sizes, leverage, paired=True)
    cells = codes[0] * sizes[1] + codes[1]
    unit = np.ones(n) if frequency is None else frequency
    dense = infl.toarray()
    for i, term_codes in enumerate((codes[0], codes[1], cells)):
        scale = brute_force_leverage(term_codes, strata, unit)
        for found in (cr2[i], paired_cr2[i]):
            assert_meat_equal(found, brute_force_meat(dense * scale[:, None], term_codes))
        assert_meat_equal(uncorrected[i], brute_force_meat(dense, term_codes))


def test_rows_without_entries_keep_the_cr2_terms_off_the_nested_pass():
    """A row with no stored entry still counts in its block's frequency, which the
    nested pass reads from the entries: such an influence takes the per-term route."""
    infl = sparse_influence(50, 5, 6).tolil()
    infl[7, :] = 0
    infl = sp.csr_array(infl)
    assert not meats.nests_leverage(infl, meats.StrataLeverage(np.zeros(50, int)), 3)


def test_the_effective_cluster_counts_first_pair_the_two_way_passes(monkeypatch):
    """``auto`` reads the column spreads first: on a win-rate fit the two-way pass then
    makes the uncorrected and the CR2 terms together (one pass), and both equal the
    terms each made by its own pass (the route an explicit correction takes)."""
    passes = []

    def counted(*args, **kwargs):
        passes.append(kwargs.get("paired", False))
        return meats.nested_meats(*args, **kwargs)

    monkeypatch.setattr(cluster_sums, "nested_meats", counted)
    log = random_log(5_000, 8, 1_200, 6, 12)
    board = fit(log, "winrate")
    strata = board.pair
    paired = memory_sums(log, board, ("prompt", "judge"), strata)
    spreads = [paired.column_spread(axis) for axis in (0, 1)]
    found = {correction: paired.term_meats(correction) for correction in ("cr1", "cr2")}
    assert passes == [True]
    apart = memory_sums(log, board, ("prompt", "judge"), strata)
    for correction in ("cr1", "cr2"):
        for term, expected in zip(found[correction], apart.term_meats(correction),
                                  strict=True):
            assert_meat_equal(term, vars(expected))
    assert passes == [True, False, False]
    for axis, spread in enumerate(spreads):
        one_way = apart.term_meats("cr1")[axis]
        np.testing.assert_allclose(spread.own, np.diag(one_way.meat), rtol=TOLERANCE)
        np.testing.assert_allclose(spread.spread, one_way.spread, rtol=TOLERANCE)


@pytest.mark.parametrize("threaded", [False, True])
def test_a_pass_expecting_cr2_makes_its_terms_and_the_uncorrected_spread(threaded,
                                                                         monkeypatch):
    """Where ``auto`` will take CR2 whatever the effective counts, the first pass makes
    the CR2 terms with only the uncorrected column spread (each entry straight to its
    prompt and judge): the spread equals a dense group-by of the rows as they are, the
    CR2 terms the pass of their own; the uncorrected terms, asked for after all, take a
    pass of their own and equal the group-by."""
    if threaded:
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    passes = []

    def counted(*args, **kwargs):
        passes.append((kwargs.get("paired", False), kwargs.get("spread_only", False)))
        return meats.nested_meats(*args, **kwargs)

    monkeypatch.setattr(cluster_sums, "nested_meats", counted)
    log = random_log(6_000, 9, 1_500, 12, 13)
    board = fit(log, "winrate")
    sums = memory_sums(log, board, ("prompt", "judge"), board.pair)
    spreads = [sums.column_spread(axis, "cr2") for axis in (0, 1)]
    cr2 = sums.term_meats("cr2")
    assert passes == [(True, True)]
    dense = board.influence.toarray()
    for axis, spread in enumerate(spreads):
        codes = log.axes[("prompt", "judge")[axis]].codes
        expected = brute_force_meat(dense, codes)
        np.testing.assert_allclose(spread.own, np.diag(expected["meat"]), rtol=TOLERANCE)
        np.testing.assert_allclose(spread.row_squares, expected["row_squares"],
                                   rtol=TOLERANCE)
        np.testing.assert_allclose(spread.spread, expected["spread"], rtol=TOLERANCE)
    apart = memory_sums(log, board, ("prompt", "judge"), board.pair)
    for term, expected in zip(cr2, apart.term_meats("cr2"), strict=True):
        assert_meat_equal(term, vars(expected))
    prompt, judge = (log.axes[name].codes for name in ("prompt", "judge"))
    cells = prompt.astype(np.int64) * (int(judge.max()) + 1) + judge
    for term, codes in zip(sums.term_meats("cr1"), (prompt, judge, cells), strict=True):
        assert_meat_equal(term, brute_force_meat(dense, codes))
    assert passes == [(True, True), (False, False), (False, False)]
