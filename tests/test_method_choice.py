"""Valid by default: effective clusters G*, the CR2 leverage correction, ``method="auto"``
and the design notes (issue: intervals that cover in thin, few-cluster and few-judge
designs)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.linalg import eigh
from scipy.special import stdtrit

from tests.logit_oracle import logit_interval
from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.inference.joint import simultaneous_intervals
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.settings import Joint, Variance
from winrate.variance.diagnostics import effective_clusters
from winrate.variance.method_choice import (
    LARGE_AXIS,
    MIN_CROSSED_AXIS,
    SMALL_AXIS,
    THIN_PAIR,
    certain_correction,
    choose,
    thinnest_pair_size,
)
from winrate.variance.sandwich import (
    cluster_cov,
    group_meat,
    multiway_cluster_cov,
    pan_wall_df,
    stratum_leverage_scale,
)

THIN = SimulationDesign(n_models=8, n_prompts=60, n_judges=1, pairs_per_prompt=3,
                        judge_sd=0.0, missing_pair_share=0.0, rare_models=2, rare_weight=0.3)


def quiet(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


# ---------------------------------------------------------------------- G*


def test_effective_clusters_match_a_loop_over_clusters():
    rng = np.random.default_rng(3)
    infl = rng.normal(size=(400, 3)) * rng.exponential(size=(400, 1))
    codes = rng.integers(0, 25, 400)
    gamma = np.array([[(infl[codes == g, k] ** 2).sum() for k in range(3)]
                      for g in range(25)])
    expected = gamma.sum(0) ** 2 / (gamma**2).sum(0)
    np.testing.assert_allclose(effective_clusters(group_meat(infl, codes)), expected)
    import scipy.sparse as sp
    np.testing.assert_allclose(effective_clusters(group_meat(sp.csr_array(infl), codes)),
                               expected)


def test_effective_clusters_equal_g_for_balanced_clusters_and_one_for_a_single():
    infl = np.ones((40, 2))
    codes = np.repeat(np.arange(8), 5)
    np.testing.assert_allclose(effective_clusters(group_meat(infl, codes)), [8, 8])
    infl[5:, 1] = 0.0  # column 1 lives in cluster 0 only
    assert effective_clusters(group_meat(infl, codes))[1] == pytest.approx(1.0)


def test_analysis_reports_the_smallest_g_star_over_axes():
    sim = simulate_comparisons(SimulationDesign(n_prompts=80, n_judges=6), seed=2)
    run = quiet(sim.log, variance=Variance("sandwich"))
    per_axis = np.vstack([a.effective_clusters for a in run.axes.values()])
    np.testing.assert_allclose(run.effective_clusters, per_axis.min(axis=0))
    assert (run.axes["judge"].effective_clusters <= 6 + 1e-9).all()


def test_few_effective_clusters_warning_names_the_rare_models():
    design = SimulationDesign(n_models=12, n_prompts=300, n_judges=1, pairs_per_prompt=2,
                              judge_sd=0.0, missing_pair_share=0.0, rare_models=2,
                              rare_weight=0.05)
    run = quiet(simulate_comparisons(design, seed=1).log, cluster="prompt")
    (note,) = run.notes.only("few-effective-clusters")
    g_star = run.effective_clusters
    assert note.axis == "prompt"
    assert set(note.models) == {str(m) for m in run.models[g_star < 10]} != set()
    # auto's CR2 with t on at most G* - 1 df allows for it; CR1 with a normal reference is
    # told that its intervals are too narrow, what auto runs and the critical value it gives
    assert run.settings["correction"] == "cr2" and "the method in use allows for that" in note
    cr1 = quiet(simulate_comparisons(design, seed=1).log, cluster="prompt",
                variance=Variance("sandwich"))
    (told,) = cr1.notes.only("few-effective-clusters")
    worst = np.nanmin(cr1.axes["prompt"].effective_clusters)
    assert "too narrow: method 'auto' widens them (CR2 with t on at most G* - 1 df" in told
    assert f"critical value of {stdtrit(worst - 1, 0.975):.2f} instead of 1.96" in told


# ---------------------------------------------------------------------- CR2


def _bell_mccaffrey_meat(log, board, codes):
    """CR2 by its definition: hat matrix of the pair means, ``(I - H_gg)^{-1/2}`` per
    cluster by eigendecomposition, applied to the residuals; loadings from the weights."""
    a, b = log.model_a, log.model_b
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    y = np.where(a < b, log.score, 1.0 - log.score)  # oriented for the lower model
    pair = lo * log.n_models + hi
    _, pair_code = np.unique(pair, return_inverse=True)
    x = np.eye(pair_code.max() + 1)[pair_code]
    hat = x @ np.linalg.inv(x.T @ x) @ x.T
    e = y - hat @ y
    n_pair = x.sum(axis=0)[pair_code]
    w = board.weights
    k = len(board.models)
    loading = np.zeros((log.n_rows, k))
    loading[np.arange(log.n_rows), lo] = w[lo, hi] / n_pair
    loading[np.arange(log.n_rows), hi] = -w[hi, lo] / n_pair
    meat = np.zeros((k, k))
    for g in np.unique(codes):
        rows = codes == g
        vals, vecs = eigh(np.eye(rows.sum()) - hat[np.ix_(rows, rows)])
        inv_sqrt = vecs @ np.diag(np.where(vals > 1e-10, vals, np.inf) ** -0.5) @ vecs.T
        t = loading[rows].T @ (inv_sqrt @ e[rows])
        meat += np.outer(t, t)
    return meat


def test_cr2_equals_bell_mccaffrey_from_the_hat_matrix():
    sim = simulate_comparisons(THIN, seed=4)
    log, board = sim.log, fit(sim.log)
    codes = log.axes["prompt"].codes
    expected = _bell_mccaffrey_meat(log, board, codes)
    got = cluster_cov(board.influence, codes, "cr2", strata=board.pair)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    # and it is larger than CR0, by the leverage
    assert (np.diag(got) >= np.diag(cluster_cov(board.influence, codes, "none")) - 1e-15).all()


def _pan_wall_by_loop(influence, codes, variance):
    """Pan & Wall's df by a loop over clusters: squared totals P_g, their sample variance,
    the df kept within [1, G - 1]."""
    dense = influence.toarray() if hasattr(influence, "toarray") else influence
    groups = np.unique(codes)
    p = np.array([dense[codes == g].sum(axis=0) ** 2 for g in groups])
    var_of_v = len(groups) * p.var(axis=0, ddof=1)
    with np.errstate(divide="ignore"):  # a model left with only a fixed part: G - 1
        return np.clip(2 * variance**2 / var_of_v, 1, len(groups) - 1)


@pytest.mark.parametrize("dense", [False, True])
def test_pan_wall_df_and_the_kernels_fourth_powers_match_a_loop(dense):
    sim = simulate_comparisons(THIN, seed=10)
    board, codes = fit(sim.log), sim.log.axes["prompt"].codes
    infl = board.influence.toarray() if dense else board.influence
    group = group_meat(infl, codes)
    totals = np.array([board.influence.toarray()[codes == g].sum(axis=0)
                       for g in np.unique(codes)])
    np.testing.assert_allclose(group.fourth, (totals**4).sum(axis=0), rtol=1e-12)
    variance = np.diag(group.meat) + 0.001  # a fixed part (the floor) adds no noise
    np.testing.assert_allclose(pan_wall_df(group, variance),
                               _pan_wall_by_loop(infl, codes, variance), rtol=1e-10)


def test_two_way_pass_keeps_the_fourth_powers_of_both_axes():
    sim = simulate_comparisons(SimulationDesign(n_prompts=40, n_judges=6), seed=2)
    board, log = fit(sim.log), sim.log
    groups = [log.axes["prompt"].codes, log.axes["judge"].codes]
    result = multiway_cluster_cov(board.influence, groups, "cr1")
    for i, codes in enumerate(groups):
        np.testing.assert_allclose(result.term_meats[i].fourth,
                                   group_meat(board.influence, codes).fourth, rtol=1e-10)


def test_pan_wall_df_is_about_g_for_equal_normal_clusters_and_small_for_heavy_tails():
    rng = np.random.default_rng(0)
    g = 400
    codes = np.arange(g)
    normal = group_meat(rng.standard_normal((g, 1)), codes)
    nu = pan_wall_df(normal, np.diag(normal.meat))[0]
    assert 0.8 * g < nu < 1.25 * g
    spikes = rng.standard_normal((g, 1)) * (rng.random((g, 1)) < 0.05)  # rare large values
    heavy = group_meat(spikes, codes)
    assert pan_wall_df(heavy, np.diag(heavy.meat))[0] < 0.2 * g
    # only a fixed part left: no sampling noise, the most the axis allows (G - 1)
    flat = group_meat(np.zeros((g, 1)), codes)
    assert pan_wall_df(flat, np.array([1.0]))[0] == g - 1
    # two equal clusters: the moment estimate would be unbounded, t(1) it is
    two = group_meat(np.array([[1.0], [-1.0]]), np.array([0, 1]))
    assert pan_wall_df(two, np.diag(two.meat))[0] == 1
    assert np.isnan(pan_wall_df(flat, np.array([0.0]))[0])


def test_thin_auto_intervals_use_each_models_pan_wall_t_and_the_smallest_jointly():
    sim = simulate_comparisons(THIN, seed=9)
    log = sim.log
    run = quiet(log, cluster="prompt", joint=Joint(simultaneous=True))
    assert run.settings["correction"] == "cr2" and run.settings["reference"] == "t"
    codes, board = log.axes["prompt"].codes, run.leaderboard
    scaled = board.influence.multiply(stratum_leverage_scale(codes, board.pair)[:, None])
    np.testing.assert_allclose(run.intervals.df,
                               _pan_wall_by_loop(scaled.tocsr(), codes, run.se**2), rtol=1e-10)
    q = stdtrit(run.intervals.df, 0.975)
    # win probabilities: the bounds are built on the logit scale (issue 24)
    np.testing.assert_allclose(run.intervals.high, logit_interval(run.scores, q * run.se)[1],
                               rtol=1e-10)
    assert "df per model" in str(run.summary())
    joint = simultaneous_intervals(run.scores, run.cov, 0.05, run.intervals.df.min(), seed=0)
    np.testing.assert_allclose(run.joint.sim_high, logit_interval(run.scores, joint.high
                                                                  - run.scores)[1], rtol=1e-10)



def test_cr2_with_every_row_its_own_cluster_is_cochrans_stratified_variance():
    from winrate.variance.sandwich import naive_cov
    sim = simulate_comparisons(THIN, seed=5)
    board = fit(sim.log)
    rows = np.arange(sim.log.n_rows)
    np.testing.assert_allclose(
        cluster_cov(board.influence, rows, "cr2", strata=board.pair),
        naive_cov(board.influence, "cr1", strata=board.pair), atol=1e-14)


def test_cr2_needs_strata_and_bradley_terry_gets_a_clear_error():
    sim = simulate_comparisons(THIN, seed=6)
    board = fit(sim.log)
    with pytest.raises(ValueError, match="strata"):
        multiway_cluster_cov(board.influence, [sim.log.axes["prompt"].codes], "cr2")
    with pytest.raises(WinrateInputError, match="cr1"):
        quiet(sim.log, cluster="prompt", model="bt", variance=Variance(correction="cr2"))


# ---------------------------------------------------------------------- auto


def test_choose_follows_the_documented_rule():
    assert choose((), [], True, 100).method == "sandwich"
    both_small = choose(("prompt", "judge"), [60, 30], True, 100)
    assert (both_small.method, both_small.correction, both_small.reference) == (
        "sandwich", "cr2", "t")
    assert "fewer than 100 clusters" in both_small.reason
    bt_small = choose(("prompt", "judge"), [60, 30], False, 100)  # no CR2 strata: rule 4
    assert (bt_small.method, bt_small.correction, bt_small.reference) == ("sandwich", "cr1", "t")
    few_judges = choose(("prompt", "judge"), [60, MIN_CROSSED_AXIS - 1], True, 100)
    assert (few_judges.method, few_judges.reference) == ("sandwich", "t")
    big = choose(("prompt", "judge"), [SMALL_AXIS, 30], True, 100)
    assert (big.method, big.correction, big.reference) == ("sandwich", "cr1", "t")
    many = choose(("prompt",), [LARGE_AXIS], True, 100)
    assert many.reference == "normal" and "normal reference" in many.reason
    thin = choose(("prompt",), [300], True, THIN_PAIR - 1)
    assert thin.correction == "cr2" and "leverage" in thin.reason
    assert choose(("prompt",), [300], False, 1).correction == "cr1"


def test_thinnest_pair_size_is_the_smallest_per_model_median_of_observed_pairs():
    """Per model, the median over its observed pairs (zeros are unobserved): 4, median(4,
    10) = 7 and 10, against a brute-force loop on a random sparse matrix."""
    counts = np.array([[0, 4, 0], [4, 0, 10], [0, 10, 0]])
    assert thinnest_pair_size(counts) == 4.0
    rng = np.random.default_rng(1)
    upper = np.triu(rng.integers(0, 30, (9, 9)) * (rng.random((9, 9)) < 0.5), k=1)
    counts = upper + upper.T
    medians = [np.median([c for c in row if c > 0]) for row in counts if (row > 0).any()]
    assert thinnest_pair_size(counts) == min(medians)
    assert np.isnan(thinnest_pair_size(np.zeros((3, 3))))


def test_auto_is_the_sandwich_it_names():
    sim = simulate_comparisons(THIN, seed=7)
    auto = quiet(sim.log, cluster="prompt")
    assert auto.settings["method"] == "auto" and auto.method == "sandwich"
    assert auto.settings["correction"] == "cr2"
    explicit = quiet(sim.log, cluster="prompt", variance=Variance("sandwich", correction="cr2"))
    np.testing.assert_array_equal(auto.cov, explicit.cov)
    assert auto.method_note.startswith("auto: some model's median pair rests on")


def test_rare_models_make_a_design_thin_though_the_median_pair_is_large():
    """Six models compared 40 times per pair and a rare one compared 3 times with each:
    the median pair has 40 comparisons, but the rare model's pairs are thin, so auto takes
    CR2 (the study's 5-pairs-per-prompt cell: CR1 covered 89.8% simultaneously there)."""
    counts = np.full((7, 7), 40) - 40 * np.eye(7, dtype=int)
    counts[6, :6] = counts[:6, 6] = 3
    upper = counts[np.triu_indices(7, k=1)]
    assert np.median(upper) == 40 and thinnest_pair_size(counts) == 3
    choice = choose(("prompt",), [300], True, thinnest_pair_size(counts))
    assert choice.correction == "cr2" and choice.reference == "t"


def test_auto_uses_t_below_50_effective_clusters_and_normal_above():
    """Few judges: CR1 with t(G - 1) (rule 5); prompts alone: 400 near-equal prompts
    (G* of every model far above LARGE_AXIS) take CR1 with the normal reference, the same
    as the explicit CR1 sandwich; 120 gamma-Poisson prompts (some model's G* below
    LARGE_AXIS) take the few-effective-clusters rule (issue 37)."""
    few = simulate_comparisons(SimulationDesign(n_prompts=120, n_judges=5), seed=1)
    run = quiet(few.log)
    assert run.settings["df"] == 4 and run.settings["reference"] == "t"
    assert min(np.nanmin(a.effective_clusters) for a in run.axes.values()) < LARGE_AXIS
    unequal = quiet(few.log, cluster="prompt")
    assert unequal.settings["correction"] == "cr2" and "effective prompt clusters" in (
        unequal.method_note)
    even = simulate_comparisons(SimulationDesign(n_prompts=400, n_judges=5,
                                                 size_dispersion=1000.0), seed=1)
    many = quiet(even.log, cluster="prompt")
    assert np.nanmin(many.axes["prompt"].effective_clusters) >= LARGE_AXIS
    assert many.settings["df"] is None
    # the default changes nothing where the design needs nothing: same as the CR1 sandwich
    np.testing.assert_array_equal(many.cov, quiet(even.log, cluster="prompt",
                                                  variance=Variance("sandwich")).cov)


def test_auto_takes_cr2_with_pan_wall_df_when_every_axis_is_small():
    """Every axis below SMALL_AXIS clusters (issue 24: the pigeonhole bootstrap, the rule
    before, over-covered a held-out design, 98.7 / 99.5%): the win rate's auto is the
    explicit CR2 sandwich with per-model Pan-Wall df; Bradley-Terry's (few effective clusters,
    issue 37) the jackknife with t on each model's G* - 1."""
    sim = simulate_comparisons(SimulationDesign(n_prompts=20, n_judges=12), seed=3)
    run = quiet(sim.log)
    assert run.method == "sandwich" and run.settings["correction"] == "cr2"
    assert f"fewer than {SMALL_AXIS} clusters" in run.method_note
    explicit = quiet(sim.log, variance=Variance("sandwich", correction="cr2", reference="t"))
    np.testing.assert_array_equal(run.cov, explicit.cov)
    np.testing.assert_array_equal(run.intervals.df, explicit.intervals.df)
    assert np.all(np.asarray(run.intervals.df) <= 11)  # Pan-Wall: at most G_min - 1
    bt = quiet(sim.log, model="bt")
    assert bt.method == "jackknife" and "effective" in bt.method_note
    np.testing.assert_allclose(bt.intervals.df, effective_df_by_loop(bt, sim.log))


def effective_df_by_loop(run, log) -> np.ndarray:
    """Each model's smallest ``G* - 1`` over the run's axes, clipped to [1, G - 1], with G* by a
    loop over clusters of the fit's influence rows."""
    board = run.leaderboard
    infl = board.influence.toarray()
    expected = []
    for axis in (log.axes[name] for name in run.axes):
        gamma = np.array([(infl[axis.codes == g] ** 2).sum(0) for g in range(axis.n_clusters)])
        g_star = gamma.sum(0) ** 2 / (gamma**2).sum(0)
        expected.append(np.clip(g_star[board.codes] - 1, 1, axis.n_clusters - 1))
    return np.minimum.reduce(expected)


def test_explicit_choices_override_auto():
    sim = simulate_comparisons(THIN, seed=8)
    run = quiet(sim.log, cluster="prompt", variance=Variance(correction="cr1", reference="normal"))
    assert run.settings["correction"] == "cr1" and run.settings["df"] is None


# ---------------------------------------------------------------------- notes


def test_prompt_only_clustering_with_few_judges_says_it_is_conditional():
    sim = simulate_comparisons(SimulationDesign(n_prompts=60, n_judges=4), seed=2)
    prompt_only = quiet(sim.log, cluster="prompt")
    (note,) = prompt_only.notes.only("judges-fixed")
    assert note.axis == "judge" and "conditional on these 4 judges" in note
    both = quiet(sim.log, cluster="prompt+judge")
    assert "judges-fixed" not in both.notes.codes


def test_two_judges_get_the_no_reliable_method_caveat():
    sim = simulate_comparisons(SimulationDesign(n_prompts=60, n_judges=2), seed=2)
    run = quiet(sim.log)
    assert run.notes.only("no-reliable-method")[0].axis == "judge"
    ten = simulate_comparisons(SimulationDesign(n_prompts=10, n_judges=30,
                                                comparisons_per_prompt=30), seed=2)
    assert "no-reliable-method" in quiet(ten.log, variance=Variance(bootstrap_reps=49)).notes.codes
    fine = simulate_comparisons(SimulationDesign(n_prompts=100, n_judges=30), seed=2)
    assert "no-reliable-method" not in quiet(fine.log).notes.codes


# ---------------------------------------------------------------------- simulator


def test_simulator_thin_rare_and_both_orders_designs():
    thin = simulate_comparisons(THIN, seed=1).log
    assert (np.bincount(thin.axes["prompt"].codes) == 3).all()
    rare = np.isin(thin.model_a, [6, 7]) | np.isin(thin.model_b, [6, 7])
    assert rare.mean() < 0.3  # 2 of 8 models at weight 0.3
    paired = simulate_comparisons(
        SimulationDesign(n_models=6, n_prompts=40, n_judges=3, pairs_per_prompt=2,
                         both_orders=True), seed=1).log
    a, b = paired.model_a.reshape(-1, 2), paired.model_b.reshape(-1, 2)
    np.testing.assert_array_equal(a[:, 0], b[:, 1])
    np.testing.assert_array_equal(a[:, 1], b[:, 0])
    judge = paired.axes["judge"].codes.reshape(-1, 2)
    np.testing.assert_array_equal(judge[:, 0], judge[:, 1])


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.sampled_from([2, 9, 10, 11, 30, 49, 50, 51, 70, 99, 100, 101, 400]),
                     min_size=1, max_size=3),
       thin_rule=st.booleans(), pair_size=st.sampled_from([1.0, 19.9, 20.0, 35.0]),
       shares=st.lists(st.sampled_from([0.02, 0.3, 0.7, 0.95, 1.0]), min_size=3,
                       max_size=3),
       spread=st.sampled_from([0.5, 0.9, 1.0]), jackknife=st.booleans())
@example(sizes=[50], thin_rule=True, pair_size=35.0, shares=[1.0, 1.0, 1.0], spread=1.0,
         jackknife=False)  # equal clusters: G* = G = LARGE_AXIS, CR1 with a normal reference
def test_a_certain_correction_is_the_one_auto_takes(sizes, thin_rule, pair_size, shares,
                                                     spread, jackknife):
    """Where :func:`certain_correction` says CR2, :func:`choose` takes CR2 for every set
    of effective cluster counts a design can have (each model's G* at most its axis' G)."""
    names = ("prompt", "judge", "task")[:len(sizes)]
    effective = [g * share * np.array([1.0, spread, 1.0, spread])
                 for share, g in zip(shares[:len(sizes)], sizes, strict=True)]
    hint = certain_correction(names, sizes, thin_rule, pair_size)
    choice = choose(names, sizes, thin_rule, pair_size, effective, jackknife=jackknife)
    assert hint in (None, "cr2")
    if hint == "cr2":
        assert (choice.method, choice.correction) == ("sandwich", "cr2")
