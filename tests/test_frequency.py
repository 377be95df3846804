"""Frequency-weighted rows equal the expanded log (issue 3, part 2).

A row of frequency f stands for f identical comparisons. Everything the engine reports
must equal what it reports for the expanded log, where the row is repeated f times
(``np.repeat``): scores, psi, the influence summed over any cluster, the naive, one-way
and two-way covariances under both corrections, the ANOVA ICC and the design effects.

Besides weighted-vs-expanded, the scores, influence and covariances of the expanded log
are checked against a direct brute-force computation from the definitions (pair means by
pandas, outer products of cluster totals by explicit sums), so the equivalence is not
merely the code agreeing with itself.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog, read_comparisons
from winrate.notes import not_estimable_reason
from winrate.settings import Variance
from winrate.variance import diagnostics
from winrate.variance.sandwich import cluster_cov, multiway_cluster_cov, naive_cov

ATOL = 1e-12


@st.composite
def weighted_logs(draw):
    """A small random log (ties, unequal clusters) and a count vector >= 1 for its rows."""
    k = draw(st.integers(3, 6))
    n = draw(st.integers(10, 50))
    seed = draw(st.integers(0, 2**32 - 1))
    counts = np.array(draw(st.lists(st.integers(1, 6), min_size=n, max_size=n)))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a[:k], b[:k] = np.arange(k), (np.arange(k) + 1) % k  # every model appears
    frame = pd.DataFrame({
        "model_a": a, "model_b": b,
        "score": rng.choice([0.0, 0.5, 1.0], n),
        "prompt": rng.integers(0, max(3, n // 4), n),
        "judge": rng.integers(0, 3, n),
    })
    return frame, counts


def _log(frame: pd.DataFrame, frequency=None) -> ComparisonLog:
    return ComparisonLog.from_arrays(frame["model_a"], frame["model_b"], frame["score"],
                                     prompt=frame["prompt"], judge=frame["judge"],
                                     frequency=frequency)


def _pair(frame: pd.DataFrame, counts: np.ndarray):
    """(weighted log, expanded log, expanded frame)."""
    expanded = frame.loc[np.repeat(frame.index.to_numpy(), counts)].reset_index(drop=True)
    return _log(frame, counts.astype(float)), _log(expanded), expanded


def _brute_force(frame: pd.DataFrame, k: int):
    """Scores and the dense influence of an unweighted log, straight from the definitions.

    psi_ab = mean score of a over the rows of pair {a, b}; S_a = mean_b psi_ab over the
    observed opponents; u_r^(a) = (s_r - psi_ab) / (|O_a| n_ab), u_r^(b) = -(...)/(|O_b| n_ab)
    with s_r oriented for a (uniform opponent weights).
    """
    lo = np.minimum(frame["model_a"], frame["model_b"]).to_numpy()
    hi = np.maximum(frame["model_a"], frame["model_b"]).to_numpy()
    s_lo = np.where(frame["model_a"] < frame["model_b"], frame["score"], 1 - frame["score"])
    table = pd.DataFrame({"lo": lo, "hi": hi, "s": s_lo}).groupby(["lo", "hi"])["s"]
    mean, size = table.mean(), table.size()
    psi = np.full((k, k), np.nan)
    n_ab = np.zeros((k, k))
    for (i, j), value in mean.items():
        psi[i, j], psi[j, i] = value, 1 - value
        n_ab[i, j] = n_ab[j, i] = size[(i, j)]
    degree = (n_ab > 0).sum(axis=1)
    scores = np.nanmean(psi, axis=1)
    u = np.zeros((len(frame), k))
    rows = np.arange(len(frame))
    centred = s_lo - psi[lo, hi]
    u[rows, lo] = centred / (degree[lo] * n_ab[lo, hi])
    u[rows, hi] = -centred / (degree[hi] * n_ab[lo, hi])
    return scores, psi, u


def _meat(u: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """sum_g t_g t_g^T with t_g the column sums of u over the rows of cluster g."""
    totals = pd.DataFrame(u).groupby(groups).sum().to_numpy()
    return totals.T @ totals


@settings(max_examples=15, deadline=None)
@given(weighted_logs())
def test_scores_psi_and_influence_cluster_sums(data):
    frame, counts = data
    weighted, expanded, frame_x = _pair(frame, counts)
    bw, bx = fit(weighted), fit(expanded)
    scores, psi, u = _brute_force(frame_x, expanded.n_models)
    for board in (bw, bx):
        np.testing.assert_allclose(board.scores, scores, atol=ATOL)
        np.testing.assert_allclose(board.psi, psi, atol=ATOL)
    np.testing.assert_allclose(bw.counts, bx.counts, atol=ATOL)
    np.testing.assert_allclose(bx.influence.toarray(), u, atol=ATOL)
    # each weighted row's influence is the total push of the comparisons it stands for
    row_of = np.repeat(np.arange(len(frame)), counts)
    uw = bw.influence.toarray()
    np.testing.assert_allclose(uw, pd.DataFrame(u).groupby(row_of).sum().to_numpy(),
                               atol=ATOL)
    for col in ("prompt", "judge"):
        sums_w = pd.DataFrame(uw).groupby(frame[col].to_numpy()).sum()
        sums_x = pd.DataFrame(u).groupby(frame_x[col].to_numpy()).sum()
        np.testing.assert_allclose(sums_w.to_numpy(), sums_x.to_numpy(), atol=ATOL)
    np.testing.assert_allclose(uw.sum(axis=0), 0.0, atol=ATOL)


@settings(max_examples=15, deadline=None)
@given(weighted_logs(), st.sampled_from(["none", "cr1"]))
def test_naive_one_way_and_two_way_covariances(data, correction):
    frame, counts = data
    weighted, expanded, frame_x = _pair(frame, counts)
    uw, ux = fit(weighted).influence, fit(expanded).influence
    u = _brute_force(frame_x, expanded.n_models)[2]
    n = counts.sum()
    naive_factor = n / (n - 1) if correction == "cr1" else 1.0
    np.testing.assert_allclose(naive_cov(uw, correction, frequency=counts.astype(float)),
                               naive_factor * u.T @ u, atol=ATOL)
    np.testing.assert_allclose(naive_cov(ux, correction), naive_factor * u.T @ u, atol=ATOL)
    for col in ("prompt", "judge"):
        g = frame[col].nunique()  # clusters do not change when rows are repeated
        factor = g / (g - 1) if correction == "cr1" else 1.0
        oracle = factor * _meat(u, frame_x[col].to_numpy())
        np.testing.assert_allclose(cluster_cov(uw, frame[col], correction), oracle, atol=ATOL)
        np.testing.assert_allclose(cluster_cov(ux, frame_x[col], correction), oracle,
                                   atol=ATOL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        two_w = multiway_cluster_cov(uw, [frame["prompt"], frame["judge"]], correction)
        two_x = multiway_cluster_cov(ux, [frame_x["prompt"], frame_x["judge"]], correction)
    assert two_w.n_clusters == two_x.n_clusters
    assert [t[1] for t in two_w.terms] == [t[1] for t in two_x.terms]
    np.testing.assert_allclose(two_w.cov, two_x.cov, atol=ATOL)


@settings(max_examples=15, deadline=None)
@given(weighted_logs(), st.sampled_from(["uniform", "count"]),
       st.sampled_from(["none", "cr1"]))
def test_analysis_icc_and_design_effects(data, weights, correction):
    frame, counts = data
    weighted, expanded, _ = _pair(frame, counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        rw = analyze(weighted, "prompt+judge", weights=weights, variance=Variance("sandwich",
                                                                                  correction=correction))
        rx = analyze(expanded, "prompt+judge", weights=weights, variance=Variance("sandwich",
                                                                                  correction=correction))
    assert rw.n_comparisons == rx.n_comparisons == counts.sum()
    for name in ("scores", "cov", "cov_naive"):
        np.testing.assert_allclose(getattr(rw, name), getattr(rx, name), atol=ATOL,
                                   err_msg=name)
    # SEs are square roots: a zero variance is ~1e-19 of round-off, its root ~1e-10
    for name in ("se", "se_naive"):
        np.testing.assert_allclose(getattr(rw, name), getattr(rx, name), atol=1e-7)
    # ratios to the naive variance are compared where that variance is not round-off
    informed = np.diag(rx.cov_naive) > 1e-10
    np.testing.assert_allclose(rw.deff[informed], rx.deff[informed], rtol=1e-7, atol=1e-9)
    positive = informed & (rx.deff > 1e-9)
    np.testing.assert_allclose(rw.effective_n[positive], rx.effective_n[positive], rtol=1e-7)
    for axis in ("prompt", "judge"):
        aw, ax = rw.axes[axis], rx.axes[axis]
        assert aw.n_clusters == ax.n_clusters
        assert aw.single_cluster_pairs == ax.single_cluster_pairs
        for name in ("mean_cluster_size", "cov", "m", "icc"):
            np.testing.assert_allclose(getattr(aw, name), getattr(ax, name), rtol=1e-9,
                                       atol=ATOL, err_msg=f"{axis}.{name}")
        for name in ("deff", "rho"):
            np.testing.assert_allclose(getattr(aw, name)[informed],
                                       getattr(ax, name)[informed], rtol=1e-7, atol=1e-9,
                                       err_msg=f"{axis}.{name}")
    # "zero estimated variance" compares an SE with 0 exactly, so round-off may flip it
    assert rw.notes.without("not-estimable") == rx.notes.without("not-estimable")
    zero = not_estimable_reason(1, [])
    assert ({m: why for m, why in rw.not_estimable.items() if why != zero}
            == {m: why for m, why in rx.not_estimable.items() if why != zero})


@settings(max_examples=15, deadline=None)
@given(weighted_logs())
def test_anova_icc_against_direct_anova(data):
    """Weighted ICC = the textbook one-way ANOVA ICC of the expanded values."""
    frame, counts = data
    values = frame["score"].to_numpy()
    codes = pd.factorize(frame["prompt"])[0]
    x, g = np.repeat(values, counts), np.repeat(codes, counts)
    sizes = np.bincount(g).astype(float)
    n, k = sizes.sum(), sizes.size
    means = np.bincount(g, weights=x) / sizes
    msb = (sizes * (means - x.mean()) ** 2).sum() / (k - 1)
    msw = ((x - means[g]) ** 2).sum() / (n - k)
    n0 = (n - (sizes**2).sum() / n) / (k - 1)
    denominator = msb + (n0 - 1) * msw
    expected = (msb - msw) / denominator if denominator > 0 else np.nan
    got = diagnostics.anova_icc(values, codes, counts.astype(float))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=ATOL)


def test_read_comparisons_weight_column_equals_expanded_frame():
    rng = np.random.default_rng(7)
    n = 60
    frame = pd.DataFrame({
        "prompt_id": rng.integers(0, 9, n), "judge_id": rng.choice(["x", "y", "z"], n),
        "model_a": rng.choice(["m1", "m2"], n), "model_b": rng.choice(["m3", "m4"], n),
        "outcome": rng.choice(["a", "b", "tie"], n), "count": rng.integers(0, 5, n),
    })
    frame.loc[0, "count"] = 3  # at least one row survives
    expanded = frame.loc[np.repeat(frame.index.to_numpy(), frame["count"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        rw = analyze(read_comparisons(frame, weight_col="count"), "prompt+judge")
        rx = analyze(read_comparisons(expanded.drop(columns="count")), "prompt+judge")
    assert rw.n_rows == int((frame["count"] > 0).sum()) and rx.n_rows == frame["count"].sum()
    for name in ("scores", "cov", "cov_naive", "deff"):
        np.testing.assert_allclose(getattr(rw, name), getattr(rx, name), atol=ATOL,
                                   err_msg=name)


@pytest.mark.parametrize("frequency", [[2.0, 0.0, 1.0, 3.0, 1.0, 2.0],
                                       [0.0, 0.0, 1.0, 3.0, 1.0, 2.0]])
def test_zero_frequency_rows_count_for_nothing(frequency):
    """A row of frequency 0 stands for no comparison: same answer as leaving it out."""
    a = np.array([0, 0, 1, 2, 2, 1])
    b = np.array([1, 1, 2, 0, 0, 0])
    score = np.array([1.0, 0.0, 0.5, 1.0, 0.0, 1.0])
    prompt = np.array([0, 1, 1, 2, 0, 2])
    judge = np.array([0, 1, 0, 1, 0, 1])
    freq = np.array(frequency)
    keep = freq > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        full = analyze(ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge,
                                                 frequency=freq), "prompt+judge")
        kept = analyze(ComparisonLog.from_arrays(a[keep], b[keep], score[keep],
                                                 prompt=prompt[keep], judge=judge[keep],
                                                 frequency=freq[keep]), "prompt+judge")
    for name in ("scores", "cov", "cov_naive"):
        np.testing.assert_allclose(getattr(full, name), getattr(kept, name), atol=ATOL,
                                   err_msg=name)


def test_frequency_errors_are_plain():
    a, b, score = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 0.0])
    with pytest.raises(WinrateInputError, match="every row has frequency 0"):
        ComparisonLog.from_arrays(a, b, score, frequency=[0.0, 0.0])
    with pytest.raises(WinrateInputError, match=r"frequency has shape \(3,\)"):
        ComparisonLog.from_arrays(a, b, score, frequency=[1.0, 2.0, 3.0])
    with pytest.raises(WinrateInputError, match="finite number >= 0"):
        ComparisonLog.from_arrays(a, b, score, frequency=[1.0, -1.0])
