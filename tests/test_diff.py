"""The diff between two releases (issue 34, part 3): the covariance of the change from the
stacked influence against a brute-force cluster bootstrap of the pair of fits over the
union's clusters (seeded), the disjoint case (no shared cluster: no covariance), the
blocks against each release's own analysis, row matching and ``split_since``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from winrate.diff import _rows, diff_releases, split_since
from winrate.errors import WinrateInputError
from winrate.estimators import fit
from winrate.io.logs import ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons


def crossed(seed: int, n_prompts: int = 120, n_judges: int = 1) -> ComparisonLog:
    design = SimulationDesign(n_models=5, n_prompts=n_prompts, n_judges=n_judges)
    return simulate_comparisons(design, seed=seed).log


def test_change_covariance_matches_a_cluster_bootstrap_of_both_fits():
    log = crossed(1)
    prompt = log.axes["prompt"].codes
    old = _rows(log, prompt < 90)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = diff_releases(old, log, cluster="prompt")
    rng = np.random.default_rng(5)
    n_prompts = log.axes["prompt"].n_clusters
    changes = []
    for _ in range(150):  # resample the union's prompts, refit both releases
        draw = np.bincount(rng.integers(0, n_prompts, n_prompts), minlength=n_prompts)
        scores = []
        for keep in (prompt < 90, np.ones(log.n_rows, bool)):
            chosen = keep & (draw[prompt] > 0)
            part = ComparisonLog(log.model_a[chosen], log.model_b[chosen], log.score[chosen],
                                 log.models, {}, draw[prompt][chosen].astype(float))
            s = fit(part, "bt").scores
            scores.append(s - s.mean())
        changes.append(scores[1] - scores[0])
    boot = np.var(np.array(changes), axis=0, ddof=1)
    analytic = np.diag(found.cov)
    ratio = boot / analytic
    assert ((ratio > 0.65) & (ratio < 1.5)).all(), ratio
    # the shared rows matter: the sum of the two releases' variances is far larger
    separate = np.diag(found.old_fit.cov) + np.diag(found.new_fit.cov)
    assert (separate > 2.5 * analytic).all()


def test_no_shared_cluster_means_no_covariance():
    log = crossed(2, n_judges=10)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    first = (prompt < 60) & (judge < 5)
    second = (prompt >= 60) & (judge >= 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = diff_releases(_rows(log, first), _rows(log, second), cluster="prompt+judge")
    assert found.shared_rows == 0 and found.shared_clusters == {"prompt": 0, "judge": 0}
    assert "releases-disjoint" in [note.code for note in found.notes]
    # Var(D) = V_old + V_new on the shared models' centred scores
    k = len(found.models)
    centre = np.eye(k) - 1.0 / k
    expected = centre @ (found.old_fit.cov + found.new_fit.cov) @ centre
    np.testing.assert_allclose(found.cov, expected, rtol=1e-9, atol=1e-9)


def test_stacked_blocks_are_each_release_covariance_and_the_change_uses_the_cross_block():
    from winrate.diff import _map, _stacked

    log = crossed(3, n_judges=8)
    prompt = log.axes["prompt"].codes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = diff_releases(_rows(log, prompt < 100), log, cluster="prompt+judge")
    fits = [found.old_fit, found.new_fit]
    stacked = _stacked(fits, ("prompt", "judge")).cov
    k = len(found.old_fit.models)
    # each diagonal block is that release's own analysis (its own CR1 factors)
    np.testing.assert_allclose(stacked[:k, :k], found.old_fit.cov, rtol=1e-9)
    np.testing.assert_allclose(stacked[k:, k:], found.new_fit.cov, rtol=1e-9)
    # and the change's covariance is V_new + V_old - C - C' on the centred scores
    maps = [_map(f, found.models) for f in fits]
    cross = maps[1] @ stacked[k:, :k] @ maps[0].T
    expected = (maps[0] @ found.old_fit.cov @ maps[0].T + maps[1] @ found.new_fit.cov
                @ maps[1].T - cross - cross.T)
    np.testing.assert_allclose(found.cov, expected, rtol=1e-9, atol=1e-9)
    assert found.shared_rows == int((prompt < 100).sum())
    frame = found.to_frame()
    assert list(frame.columns[:4]) == ["old", "new", "change", "se"] and len(frame) == 5
    assert {"changes", "rank_changes", "shared_rows", "added", "removed"} <= set(
        found.to_dict())


def test_rows_are_matched_by_content_with_duplicates_one_to_one():
    from winrate.diff import _matched_rows

    frame = pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p3"],
                          "model_a": ["a", "a", "b", "a"], "model_b": ["b", "b", "c", "c"],
                          "outcome": [1.0, 1.0, 0.0, 0.5]})
    from winrate.io.logs import read_comparisons

    old = read_comparisons(frame.iloc[[0, 1, 2]])
    new = read_comparisons(frame.iloc[[3, 0, 2, 1, 1]].reset_index(drop=True)
                           .assign(prompt_id=["p3", "p1", "p2", "p1", "p1"]))
    matched = _matched_rows(old, new)
    assert sorted(matched.tolist()) == [1, 2, 3]


def test_split_since_takes_the_rows_before_the_date():
    log = crossed(4)
    days = pd.date_range("2024-01-01", periods=log.axes["prompt"].n_clusters, freq="D")
    stamped = ComparisonLog(log.model_a, log.model_b, log.score, log.models,
                            {**log.axes, "time": type(log.axes["prompt"])(
                                log.axes["prompt"].codes, days.astype(str).to_numpy())})
    old, new = split_since(stamped, "time", "2024-03-01")
    assert old.n_rows == int((log.axes["prompt"].codes < 60).sum()) and new is stamped
    with pytest.raises(WinrateInputError, match="time column 'when'"):
        split_since(stamped, "when", "2024-03-01")
    with pytest.raises(WinrateInputError, match="both sides"):
        split_since(stamped, "time", "2020-01-01")


def _frame(log: ComparisonLog) -> pd.DataFrame:
    prompt, judge = log.axes["prompt"], log.axes["judge"]
    return pd.DataFrame({"prompt_id": prompt.labels[prompt.codes],
                         "judge_id": judge.labels[judge.codes],
                         "model_a": log.models[log.model_a],
                         "model_b": log.models[log.model_b], "outcome": log.score})


def test_diff_command_two_logs_and_since(tmp_path, capsys):
    import json

    from winrate.cli import main

    log = crossed(6, n_judges=6)
    frame = _frame(log)
    early = log.axes["prompt"].codes < 80
    frame[early].to_csv(tmp_path / "old.csv", index=False)
    frame.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "diff.json"
    assert main(["diff", str(tmp_path / "old.csv"), str(tmp_path / "new.csv"),
                 "--cluster", "prompt", "--json", str(out)]) == 0
    assert "Changes between releases" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["shared_rows"] == int(early.sum()) and doc["estimator"] == "bt"
    # the same split from one log with a time column
    frame.assign(day=np.where(early, "2024-01-01", "2024-02-01")).to_csv(
        tmp_path / "timed.csv", index=False)
    out2 = tmp_path / "since.json"
    assert main(["diff", str(tmp_path / "timed.csv"), "--since", "2024-01-15",
                 "--time-col", "day", "--cluster", "prompt", "--json", str(out2)]) == 0
    since = json.loads(out2.read_text())
    assert since["shared_rows"] == doc["shared_rows"]
    np.testing.assert_allclose([c["change"] for c in since["changes"]],
                               [c["change"] for c in doc["changes"]], rtol=1e-9)
    assert main(["diff", str(tmp_path / "timed.csv"), "--since", "2024-01-15"]) == 2


def test_rank_swaps_are_real_only_when_the_gap_change_is_significant():
    from winrate.diff import rank_swaps

    models = np.array(["a", "b", "c"])
    old, new = np.array([3.0, 2.0, 1.0]), np.array([2.0, 3.0, 1.0])
    change = new - old
    precise = rank_swaps(models, old, new, change, 0.01 * np.eye(3), 0.05)
    assert precise[["above_now", "below_now"]].values.tolist() == [["b", "a"]]
    assert precise.gap_change.tolist() == [2.0] and precise.real.tolist() == [True]
    # se of the gap change sqrt(2 * 10) ~ 4.5: a change of 2 is not shown
    assert rank_swaps(models, old, new, change, 10 * np.eye(3), 0.05).real.tolist() == [False]
    assert rank_swaps(models, old, old, 0 * old, np.eye(3), 0.05).empty


def test_extension_change_is_the_diffs_change_covariance_on_average():
    """``Components.extension_change`` (what ``winrate plan`` predicts for the change when a
    log of 300 prompts grows to 400) against the diff's own covariance of the change, from
    the stacked influence of both fits: the same quantity in expectation, so their traces
    agree on average over seeds (the sum ``V(old) + V(new)``, which ignores the shared
    rows, would be 7 times as large)."""
    from winrate.analysis import analyze
    from winrate.planning import components
    from winrate.settings import Variance

    ratios = []
    for seed in range(4):
        log = crossed(seed, n_prompts=400)
        old = _rows(log, log.axes["prompt"].codes < 300)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = diff_releases(old, log, cluster="prompt")
            pilot = analyze(old, cluster="prompt", model="bt",
                            variance=Variance("sandwich", "cr1"))
        centre = np.eye(5) - 1 / 5
        planned = centre @ components(pilot).extension_change(4 / 3) @ centre
        ratios.append(np.trace(planned) / np.trace(found.cov))
    assert 0.8 < np.mean(ratios) < 1.25, ratios


def test_diff_detects_a_change_at_the_planned_power_in_a_small_seeded_study():
    """The small version of scripts/diff_study.py: nothing changed, the simultaneous
    intervals cover 0 together; one model changed, the diff detects it about as often as
    ``winrate.planning.change_power`` plans from each old release."""
    from tests.script_modules import load_script

    study = load_script("diff_study", "diff_study_for_tests")
    study.DESIGN = SimulationDesign(n_models=6, n_prompts=160, n_judges=12)
    study.OLD_PROMPTS, study.DELTA, study.BIG = 120, 1.0, 30
    reps = 14
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = study.pseudo_true_change(study.DELTA)
        unchanged = study.nothing_changed(reps)
        changed = study.one_changed(reps, truth)
    assert unchanged["coverage"] >= 12 / 14, unchanged
    planned = changed["own_plan"]
    assert 0.3 < planned < 0.9  # a design whose power can be missed both ways
    assert abs(changed["detected"] - planned) < 3 * np.sqrt(planned * (1 - planned) / reps), \
        changed


def test_satterthwaite_df_of_one_term_is_its_clusters_less_one_and_matches_a_loop():
    from winrate.diff import satterthwaite_df

    rng = np.random.default_rng(0)
    sums = [rng.normal(size=(g, 3)) for g in (40, 7, 280)]
    terms = [(sign * s.T @ s, len(s)) for sign, s in zip((1, 1, -1), sums, strict=True)]
    contrasts = rng.normal(size=(4, 3))
    assert satterthwaite_df(contrasts, terms[:1]) == pytest.approx(np.full(4, 39.0))
    for c, df in zip(contrasts, satterthwaite_df(contrasts, terms), strict=True):
        a = [sign * float(c @ s.T @ s @ c) for sign, s in zip((1, 1, -1), sums, strict=True)]
        loop = sum(a) ** 2 / sum(x ** 2 / (len(s) - 1) for x, s in zip(a, sums, strict=True))
        assert df == pytest.approx(max(loop, 1.0), rel=1e-12)
    assert satterthwaite_df(contrasts, [(terms[0][0], 1)]).tolist() == [np.inf] * 4


def test_the_diffs_intervals_are_t_on_satterthwaites_df():
    from scipy import stats

    log = crossed(3, n_judges=8)
    old = _rows(log, log.axes["prompt"].codes < 90)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = diff_releases(old, log, cluster="prompt+judge")
    assert np.all((found.df >= 1) & (found.df < 119))  # below the prompts' G - 1
    half = stats.t.ppf(0.975, found.df) * found.se
    np.testing.assert_allclose(found.high - found.change, half, rtol=1e-12)
    assert "Satterthwaite df" in str(found.summary())
    assert [c["df"] for c in found.to_dict()["changes"]] == pytest.approx(
        list(pd.Series(found.df, index=found.models)[found.to_frame().index]))
