"""Unequal clusters (issue 37): ``auto`` reads the effective number of clusters G*
(Carter, Schnepel & Steigerwald 2017), not the raw count."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from winrate.analysis import analyze
from winrate.cli import main
from winrate.errors import WinrateWarning
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.variance.method_choice import (
    JACKKNIFE_MAX_CLUSTERS,
    JACKKNIFE_MAX_ROW_REFITS,
    LARGE_AXIS,
    choose,
    effective_df,
    jackknife_affordable,
)

#: 60 prompts whose sizes are heavy-tailed (gamma-Poisson with shape 0.15: a few prompts
#: carry most comparisons), one judge: G = 60 >= LARGE_AXIS, G* far fewer.
HEAVY = SimulationDesign(n_models=6, n_prompts=60, n_judges=1, judge_sd=0.0,
                         comparisons_per_prompt=30.0, size_dispersion=0.15,
                         missing_pair_share=0.0)


def quiet(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


def brute_force_g_star(influence: np.ndarray, codes: np.ndarray, n_clusters: int):
    """G* = (sum_g gamma_g)^2 / sum_g gamma_g^2, gamma_g = sum_{r in g} u_r^2, by a loop."""
    gamma = np.array([(influence[codes == g] ** 2).sum(0) for g in range(n_clusters)])
    return gamma.sum(0) ** 2 / (gamma**2).sum(0)


@pytest.mark.parametrize("model", ["winrate", "bt"])
def test_few_effective_clusters_on_many_clusters_never_take_a_normal_reference(model):
    """G >= 50 prompts but G* < 10 for some model: auto's reference is t, not normal, with
    df at most each model's G* - 1 (CR2's Pan-Wall df for the win rate, G* - 1 for
    Bradley-Terry's jackknife), while naming the effective clusters in its reason."""
    log = simulate_comparisons(HEAVY, seed=11).log
    assert log.axes["prompt"].n_clusters >= LARGE_AXIS
    run = quiet(log, model=model)
    board = run.leaderboard
    g_star = brute_force_g_star(board.influence.toarray(), log.axes["prompt"].codes,
                                log.axes["prompt"].n_clusters)[board.codes]
    assert g_star.min() < 10
    assert run.settings["reference"] == "t" and run.intervals.df is not None
    assert f"{g_star.min():.1f} effective prompt clusters" in run.method_note
    if model == "bt":
        assert run.method == "jackknife"
        np.testing.assert_allclose(run.intervals.df, np.clip(g_star - 1, 1, 59))


def test_rows_per_prompt_do_not_flip_the_win_rate_to_a_normal_reference():
    """The issue's flip: with more rows per prompt the pairs stop being thin (median pair
    >= 20), and the old rule fell back to CR1 with a normal reference on G = 60 prompts.
    The same prompts with ten times the rows keep few effective clusters, so CR2 with t."""
    thick = SimulationDesign(**{**HEAVY.__dict__, "comparisons_per_prompt": 300.0})
    run = quiet(simulate_comparisons(thick, seed=11).log)
    assert np.nanmin(run.axes["prompt"].effective_clusters) < LARGE_AXIS
    assert (run.settings["correction"], run.settings["reference"]) == ("cr2", "t")


def test_choose_reads_effective_clusters_not_the_raw_count():
    """The rule on its inputs: the same raw counts with many or few effective clusters."""
    many = [np.array([80.0, 90.0, 100.0])]
    few = [np.array([8.0, 90.0, np.nan])]  # NaN: a model not identified on the axis
    assert choose(("prompt",), [100], False, 50, many).reference == "normal"
    bt = choose(("prompt",), [100], False, 50, few)
    assert (bt.method, bt.reference) == ("jackknife", "t")
    np.testing.assert_array_equal(bt.df, [7.0, 89.0, np.nan])
    assert choose(("prompt",), [100], False, 50, few, jackknife=False).method == "sandwich"
    wr = choose(("prompt",), [100], True, 50, few)
    assert (wr.method, wr.correction, wr.reference) == ("sandwich", "cr2", "t")
    np.testing.assert_array_equal(wr.df, bt.df)  # CR2's Pan-Wall df capped at G* - 1
    # the jackknife only where its refits are affordable: clusters, and clusters x rows when
    # each refit reads the rows (covariates)
    assert jackknife_affordable([JACKKNIFE_MAX_CLUSTERS], False, 10**9)
    assert not jackknife_affordable([JACKKNIFE_MAX_CLUSTERS + 1], False, 10)
    assert jackknife_affordable([100, 20], True, JACKKNIFE_MAX_ROW_REFITS // 120)
    assert not jackknife_affordable([100, 20], True, JACKKNIFE_MAX_ROW_REFITS // 120 + 1)
    # the smallest df over the axes, never above G - 1
    np.testing.assert_array_equal(
        effective_df([100, 12], [np.array([30.0, 60.0]), np.array([11.5, 40.0])]),
        [10.5, 11.0])


def single_prompt_pair_log(seed: int = 0) -> pd.DataFrame:
    """Models m0-m3 meet in every pair on each of 30 prompts (twice), m4 meets m1 on each
    prompt and m0 only on prompt p0 (6 comparisons): the pair (m0, m4) lies in a single
    prompt. A pair's two comparisons on a prompt share its chance of a win (0.15 or 0.85,
    drawn per prompt and pair), so comparisons of one pair within a prompt correlate, while
    different pairs of a prompt do not."""
    rng = np.random.default_rng(seed)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (1, 4)]
    chance = rng.choice([0.15, 0.85], (30, len(pairs)))
    wins = rng.random((30, len(pairs), 2)) < chance[:, :, None]
    rows = [(f"p{p}", f"m{a}", f"m{b}", "a" if wins[p, i, r] else "b")
            for p in range(30) for i, (a, b) in enumerate(pairs) for r in range(2)]
    rows += [("p0", "m0", "m4", outcome) for outcome in ["a", "b", "a", "tie", "b", "a"]]
    return pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "outcome"])


def hand_icc(frame: pd.DataFrame, by: pd.Series) -> float:
    """One-way ANOVA ICC of the pair-centred scores (each pair's rows written in one
    orientation here) grouped by ``by``: (MSB - MSW) / (MSB + (n0 - 1) MSW), n0 = (N - sum
    n_g^2 / N) / (G - 1) (Snedecor & Cochran; Donner 1986), by plain pandas group sums."""
    score = frame["outcome"].map({"a": 1.0, "b": 0.0, "tie": 0.5})
    pair = frame["model_a"] + "|" + frame["model_b"]
    value = score - score.groupby(pair).transform("mean")
    groups = value.groupby(by.to_numpy())
    size, mean = groups.size(), groups.mean()
    total, g = len(value), len(size)
    ms_between = (size * (mean - value.mean()) ** 2).sum() / (g - 1)
    ms_within = ((value - groups.transform("mean")) ** 2).sum() / (total - g)
    n0 = (total - (size**2).sum() / total) / (g - 1)
    return (ms_between - ms_within) / (ms_between + (n0 - 1) * ms_within)


def test_a_pair_seen_in_one_prompt_gets_its_variance_inflated_by_the_design_effect():
    """The pair (m0, m4)'s centred scores sum to zero on its one prompt, so the clustered
    sandwich sees none of its variance; it is given Kish's s^2 (1 + (n - 1) rho) / n with
    its sample variance s^2 (ddof 1), n = 6 and rho the ICC of the (prompt, pair) cells --
    the correlation of one pair's comparisons within a prompt (computed here by hand), not
    the prompt axis' pooled ICC, which this design makes much smaller -- through the win
    rate's weights: 1/16 of it to m0 (four opponents), 1/4 to m4 (two) and -1/8 between
    them, and nothing else (no pair is degenerate, so there is no other floor). The note
    says it widened."""
    frame = single_prompt_pair_log()
    cell_icc = hand_icc(frame, frame["prompt_id"] + "/" + frame["model_a"] + "|"
                        + frame["model_b"])
    axis_icc = hand_icc(frame, frame["prompt_id"])
    assert 0.3 < cell_icc < 1 and axis_icc < cell_icc / 3  # the two readings differ
    var = np.var([1, 0, 1, 0.5, 0, 1], ddof=1) * (1 + 5 * cell_icc) / 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = analyze(frame, cluster="prompt")
    np.testing.assert_allclose(run.axes["prompt"].icc, axis_icc)  # the diagnostics' ICC
    expected = np.zeros((5, 5))
    expected[0, 0], expected[4, 4], expected[0, 4] = var / 16, var / 4, -var / 8
    expected[4, 0] = expected[0, 4]
    order = np.argsort(run.models.astype(str))
    np.testing.assert_allclose(run.unidentified_bound[np.ix_(order, order)], expected,
                               atol=1e-15)
    np.testing.assert_array_equal(run.small_sample_floor, 0.0)
    assert (np.diag(run.cov) - np.diag(run.unidentified_bound) > 0).all()  # plus the sandwich
    said = [str(w.message) for w in caught if "single prompt cluster" in str(w.message)]
    assert said and "widens the intervals" in said[0]


def test_check_best_reports_the_narrowest_method_whose_coverage_meets_the_level(tmp_path,
                                                                                 capsys):
    """``winrate check --method best``: every method is run on the same replications and
    the narrowest (smallest mean width) among those whose marginal and simultaneous
    coverage reach the band (estimate at or above 93% / 92%, alpha 0.05) is reported, in
    the verdict and the JSON; recomputed here from the reported coverages and widths."""
    log = simulate_comparisons(HEAVY, seed=5).log
    rows = np.column_stack([log.axes["prompt"].codes, log.models[log.model_a],
                            log.models[log.model_b], log.score])
    path = tmp_path / "log.csv"
    path.write_text("prompt_id,model_a,model_b,outcome\n"
                    + "\n".join(",".join(map(str, row)) for row in rows) + "\n")
    assert main(["check", str(path), "--reps", "20", "--method", "best", "--workers", "1",
                 "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    methods = [doc["coverage"], *doc["alternatives"]]
    # auto's (its df from G*) and every named method, whatever auto's coverage was
    assert doc["coverage"]["method"].startswith("auto: ") and len(methods) == 5
    covering = [m for m in methods if m["marginal"] >= 0.93 and m["simultaneous"] >= 0.92]
    if covering:
        narrowest = min(covering, key=lambda m: m["width"])
        assert doc["best"]["method"] == narrowest["method"]
        assert doc["best"]["width"] == narrowest["width"]
        assert "Narrowest method that covers" in doc["verdict"]
    else:
        assert doc["best"] is None and "No method tried covers" in doc["verdict"]
