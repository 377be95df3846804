"""A small seeded version of the coverage study (scripts/coverage.py) and its summaries."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pytest
from scipy.special import stdtrit

from tests.logit_oracle import logit_interval
from tests.reproducibility import assert_same_result
from tests.script_modules import load_script
from winrate.errors import WinrateWarning
from winrate.settings import Joint, MonteCarlo, Variance

COVERAGE = Path(__file__).resolve().parents[1] / "paper" / "coverage"


@pytest.fixture(scope="module")
def study():
    module = load_script("coverage", "coverage_study")
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # tiny logs: numba's thread start-up dominates
    yield module
    numba.set_num_threads(threads)


def _reps(study, design, n_prompts=100, n_judges=10, reps=10) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        rows = [r for rep in range(reps)
                for r in study.one_rep(n_prompts, n_judges, rep, design)]
    return pd.DataFrame(rows)


def test_naive_undercovers_when_responses_are_shared(study):
    per_rep = _reps(study, study.DESIGN)
    by = per_rep.groupby("method")
    coverage, width = by["marginal"].mean(), by["width"].mean()
    assert set(coverage.index) == set(study.METHODS)  # auto: what analyze runs on each log
    assert coverage["naive"] < coverage["twoway"] - 0.15
    assert coverage["naive"] < 0.8 and coverage["twoway"] > 0.8
    wide = per_rep.pivot(index="rep", columns="method", values="width")
    assert (wide["naive"] < wide["twoway"]).all()  # every replication, not just on average
    assert width["twoway_t"] > width["twoway"]  # t(9) > z
    sim = by["simultaneous"].mean()
    assert sim["naive"] <= coverage["naive"] and sim["twoway"] > sim["naive"]


def test_naive_is_fine_without_shared_effects(study):
    per_rep = _reps(study, study.CONTROL)
    coverage = per_rep.groupby("method")["marginal"].mean()
    assert coverage["naive"] > 0.85
    wide = per_rep.pivot(index="rep", columns="method", values="width")
    # with no dependence the clustered widths are about the naive one
    assert np.all(np.abs(wide["twoway"] / wide["naive"] - 1) < 0.35)


def test_summary_mc_errors_are_computed_from_replications(study):
    rng = np.random.default_rng(0)
    marginal = rng.choice([0.5, 0.75, 1.0], size=40)
    simultaneous = rng.random(40) < 0.8
    per_rep = pd.DataFrame({"prompts": 10, "judges": 2, "rep": np.arange(40),
                            "method": "naive", "marginal": marginal,
                            "simultaneous": simultaneous, "width": 1.0, "sim_width": 2.0})
    row = study.summarise(per_rep).iloc[0]
    assert row["marginal"] == pytest.approx(100 * marginal.mean())
    assert row["marginal_mcse"] == pytest.approx(100 * marginal.std(ddof=1) / np.sqrt(40))
    p = simultaneous.mean()
    assert row["simultaneous_mcse"] == pytest.approx(100 * np.sqrt(p * (1 - p) / 40))


def test_closest_to_nominal_picks_the_smallest_gap(study):
    table = pd.DataFrame({"prompts": [10] * 3 + [30] * 3, "judges": 2,
                          "method": ["a", "b", "c"] * 2,
                          "marginal": [80.0, 97.5, 93.0, 94.0, 99.0, 95.5]})
    best = study.closest_to_nominal(table)
    assert list(best["method"]) == ["c", "c"]


def test_outputs_are_written(study, tmp_path):
    per_rep = pd.concat([_reps(study, study.DESIGN, 10, 2, reps=3),
                         _reps(study, study.DESIGN, 30, 3, reps=3)])
    table = study.summarise(per_rep)
    text = study.markdown(table, 3, study.summarise(per_rep[per_rep.prompts == 10]))
    assert "## Marginal coverage" in text and "| prompts | judges | naive |" in text
    study.figure(table, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_study_intervals_are_the_ones_analyze_reports(study):
    """The study's twoway / twoway_t / jackknife intervals are what `winrate leaderboard`
    prints for the same log (--cluster prompt+judge, --reference t, --method jackknife)."""
    from winrate.analysis import analyze
    from winrate.estimators.win_rate_kernels import fit
    from winrate.io.simulate import simulate_comparisons

    design = replace(study.DESIGN, n_prompts=40, n_judges=12)
    sim = simulate_comparisons(design, seed=5)
    board = fit(sim.log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        bounds = study.interval_bounds(sim.log, board, seed=5)
        kwargs = dict(cluster="prompt+judge", joint=Joint(simultaneous=True),
                      monte_carlo=MonteCarlo(n_draws=study.SIM_DRAWS, seed=5))
        runs = {"twoway": analyze(sim.log, variance=Variance("sandwich"), **kwargs),
                "twoway_t": analyze(sim.log, variance=Variance("sandwich", reference="t"),
                                    **kwargs),
                "jackknife": analyze(sim.log, variance=Variance("jackknife"), **kwargs),
                "pigeonhole": analyze(sim.log, variance=Variance(
                    "bootstrap", bootstrap_reps=study.PIGEONHOLE_REPS), **kwargs)}
    for method, run in runs.items():
        _assert_bounds(bounds[method], run)


@pytest.mark.parametrize("n_prompts, n_judges", [(40, 12), (100, 5)])
def test_the_grid_auto_row_is_what_analyze_runs_by_default(study, n_prompts, n_judges):
    """On each log the coverage grid's ``auto`` row is the method :func:`auto_method`
    names for that log; the default ``analyze`` gives exactly that method's intervals in
    a cell of each kind."""
    from winrate.analysis import analyze
    from winrate.estimators.win_rate_kernels import fit
    from winrate.io.simulate import simulate_comparisons

    sim = simulate_comparisons(replace(study.DESIGN, n_prompts=n_prompts, n_judges=n_judges),
                               seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        bounds = study.interval_bounds(sim.log, fit(sim.log), seed=3)
        run = analyze(sim.log, variance=Variance(bootstrap_reps=study.PIGEONHOLE_REPS),
                      joint=Joint(simultaneous=True),
                      monte_carlo=MonteCarlo(n_draws=study.SIM_DRAWS, seed=3))
    picked = study.auto_method(sim.log, fit(sim.log))
    _assert_bounds(bounds[picked] if picked else study._auto_bounds(sim.log, fit(sim.log), 3),
                   run)


def _assert_bounds(bounds, run):
    """The study's (marginal, simultaneous) bounds are the analysis' reported ones."""
    (low, high), (sim_low, sim_high) = bounds
    np.testing.assert_allclose(low, run.intervals.low, rtol=1e-10)
    np.testing.assert_allclose(high, run.intervals.high, rtol=1e-10)
    np.testing.assert_allclose(sim_low, run.joint.sim_low, rtol=1e-10)
    np.testing.assert_allclose(sim_high, run.joint.sim_high, rtol=1e-10)


def test_grid_auto_in_cells_without_a_grid_method_is_analyze_itself(study):
    """At 10 prompts with few judges auto runs CR2 with Pan-Wall t: the grid's row comes
    from analyze (logit-scale bounds; not-estimable models get the whole line, i.e.
    covered)."""
    from winrate.analysis import analyze
    from winrate.estimators.win_rate_kernels import fit
    from winrate.io.simulate import simulate_comparisons

    sim = simulate_comparisons(replace(study.DESIGN, n_prompts=10, n_judges=5), seed=4)
    board = fit(sim.log)
    (low, high), (sim_low, sim_high) = study._auto_bounds(sim.log, board, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        run = analyze(sim.log, joint=Joint(simultaneous=True),
                      monte_carlo=MonteCarlo(n_draws=study.SIM_DRAWS, seed=4))
    assert run.settings["correction"] == "cr2" and np.ndim(run.intervals.df) == 1
    q = stdtrit(run.intervals.df, 1 - run.alpha / 2)
    blank = np.isnan(run.se)
    assert (low[blank] == -np.inf).all() and (high[blank] == np.inf).all()
    inside = ~blank & (run.scores > 0) & (run.scores < 1)
    expected = logit_interval(run.scores[inside], q[inside] * run.se[inside])
    np.testing.assert_allclose(low[inside], expected[0], rtol=1e-10)
    np.testing.assert_allclose(high[inside], expected[1], rtol=1e-10)
    assert (sim_low <= low).all() and (sim_high >= high).all()
    rows = study.one_rep(10, 5, 0)
    assert [r["method"] for r in rows].count("auto") == 1


def test_grid_auto_is_decided_per_log_as_analyze_decides(study):
    """auto_method follows analyze's own choice on each log (method, correction and
    reference), including the logs of a 30-prompt cell whose median pair happens to be
    thin (CR2: no grid method), and one_rep's auto row repeats the chosen method's row."""
    from winrate.analysis import analyze
    from winrate.estimators.win_rate_kernels import fit
    from winrate.io.simulate import simulate_comparisons

    # since issue 24 auto never runs the pigeonhole bootstrap (30 x 30 is CR2 now)
    named = {"twoway": ("sandwich", "cr1", "normal"), "twoway_t": ("sandwich", "cr1", "t"),
             None: ("sandwich", "cr2", "t")}
    seen = set()
    for (prompts, judges), seed in itertools.product([(30, 3), (30, 30), (100, 5), (10, 2),
                                                      (400, 100)],
                                                     range(4)):
        log = simulate_comparisons(replace(study.DESIGN, n_prompts=prompts, n_judges=judges),
                                   seed=seed).log
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WinrateWarning)
            run = analyze(log, variance=Variance(bootstrap_reps=199),
                          monte_carlo=MonteCarlo(seed=seed))
        picked = study.auto_method(log, fit(log))
        seen.add(picked)
        assert (run.method.split()[-1],
                run.settings["correction"], run.settings["reference"]) == named[picked]
    assert seen == set(named)
    rows = {r["method"]: r for r in study.one_rep(100, 5, 0)}
    assert {k: v for k, v in rows["auto"].items() if k != "method"} == {
        k: v for k, v in rows["twoway_t"].items() if k != "method"}


def _committed_audit(study) -> pd.DataFrame:
    return pd.read_csv(study.audit_path(COVERAGE))


def _rerun_audit_cell(study, reps: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ``reps`` replications of the audited cell, rerun serially, and the
    committed rows they must reproduce."""
    prompts, judges = study.AUDIT_CELL
    rerun = study.run_study((prompts,), (judges,), reps=reps, workers=1, progress=False)
    audit = _committed_audit(study)
    return rerun, audit[audit.rep < reps].reset_index(drop=True)


def test_the_audited_cell_reproduces_the_committed_study(study):
    """The committed study is reproducible: the first 40 of the 600 committed replications
    of the 10 prompts x 2 judges cell (paper/coverage/coverage_reps_10x2.csv) rerun to
    1e-12 relative (coverage indicators exactly; tests/reproducibility.py), serially; and
    that file's 600 replications summarise to the cell's rows of coverage.csv byte for
    byte, the wild bootstrap's infinite mean widths included."""
    audit = _committed_audit(study)
    prompts, judges = study.AUDIT_CELL
    assert len(audit) == 600 * len(study.METHODS)
    assert_same_result(*_rerun_audit_cell(study, 40))
    committed = (COVERAGE / "coverage.csv").read_text().splitlines()
    ours = study.summarise(audit).to_csv(index=False, float_format="%.4f").splitlines()
    assert ours[0] == committed[0]
    assert ours[1:] == [line for line in committed if line.startswith(f"{prompts},{judges},")]


#: How far the perturbation test moves the kernels' results (relative): a few ulps, the size
#: of a difference in summation order or vector path between two machines.
KERNEL_NUDGE = 1e-15


def _nudged(kernel):
    """``kernel`` with its covariance scaled by ``1 + KERNEL_NUDGE``."""
    def nudged(*args, **kwargs):
        out = kernel(*args, **kwargs)
        if isinstance(out, np.ndarray):
            return out * (1 + KERNEL_NUDGE)
        return replace(out, cov=out.cov * (1 + KERNEL_NUDGE))
    return nudged


def _nudged_fit(fit):
    """``fit`` with its scores, influence and centred scores scaled by ``1 + KERNEL_NUDGE``:
    every method of the study (the resampling ones and ``analyze``'s auto too) starts from
    the fit, so the move reaches all of them."""
    def nudged(*args, **kwargs):
        board = fit(*args, **kwargs)
        influence = board.influence.copy()
        influence.data = influence.data * (1 + KERNEL_NUDGE)
        return replace(board, scores=board.scores * (1 + KERNEL_NUDGE), influence=influence,
                       centered=None if board.centered is None
                       else board.centered * (1 + KERNEL_NUDGE))
    return nudged


def test_the_audit_comparison_survives_round_off(study, monkeypatch):
    """Round-off is not a failure: with the fit's and the covariance kernels' results moved
    by 1e-15 relative (as another CPU may round them), the rerun of the audited cell differs
    from the plain rerun in the last bits for every method, and still passes the comparison
    above. (The committed rows themselves may differ from a plain rerun in the last bits on
    another machine, so the move is shown against the plain rerun, not against them.)"""
    plain, committed = _rerun_audit_cell(study, 10)
    monkeypatch.setattr(study, "fit", _nudged_fit(study.fit))
    for name in ("naive_cov", "cluster_cov", "multiway_cluster_cov"):
        monkeypatch.setattr(study, name, _nudged(getattr(study, name)))
    rerun, _ = _rerun_audit_cell(study, 10)
    unmoved = [method for method in study.METHODS
               if np.array_equal(rerun.loc[rerun.method == method, "width"].to_numpy(),
                                 plain.loc[plain.method == method, "width"].to_numpy())]
    assert not unmoved, f"the nudge did not reach the widths of {unmoved}"
    assert_same_result(rerun, committed)


def test_small_seeded_design_cells_both_orders_and_thin(study):
    """A small seeded version of the design cells (the committed study has 400
    replications; here 40 of the both-orders cell and 20 of the slower thin one): in the
    both-orders cell the naive interval over-covers and the old
    default's simultaneous interval under-covers, and auto (CR2, Pan-Wall t) is near
    nominal in both cells."""
    cells = {c.kind: c for c in study.design_cells()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        rows = pd.DataFrame([r for kind, reps in (("both orders", 40), ("thin", 20))
                             for rep in range(reps)
                             for r in study.one_design_rep(cells[kind], rep)])
    table = study.summarise_designs(rows).set_index(["kind", "method"])
    both, thin = table.loc["both orders"], table.loc["thin"]
    assert both.loc["naive", "marginal"] > 98.5
    assert both.loc["auto", "simultaneous"] > both.loc["sandwich", "simultaneous"] + 10
    for cell in (both, thin):
        assert 92 <= cell.loc["auto", "marginal"] <= 98
        assert cell.loc["auto", "simultaneous"] >= 85


def test_small_seeded_lopsided_cell_is_near_nominal(study):
    """20 replications of the lopsided thin cell (most pairs near-certain, so their few
    comparisons often agree): auto's marginal coverage is near nominal. The pair-only
    Wilson floor, used before the empirical-Bayes floor, covered 99.7% here (400
    replications), with intervals about 1.5 times as wide."""
    cell = next(c for c in study.design_cells() if c.kind == "thin, lopsided")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        rows = pd.DataFrame([r for rep in range(20) for r in study.one_design_rep(cell, rep)])
    auto = study.summarise_designs(rows).set_index("method").loc["auto"]
    assert 92 <= auto["marginal"] <= 98.5
    assert auto["simultaneous"] >= 80
