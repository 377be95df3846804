"""``winrate check``: the coverage of an analysis on its own design (winrate.check).

Oracles, each independent of winrate.check's code:

* recovery: logs drawn here from a crossed random-effects Bradley-Terry model with known
  components (its own generator) -> the fitted simulation model gives them back;
* the truth: the win rate's by Gauss-Hermite quadrature (numpy's nodes) over the random
  effects, Bradley-Terry's pseudo-true ratings by scipy's root finder on the expected
  estimating equations (or, in a baseline design, their closed form logit(psi));
* the acceptance test of issue 24: on two designs, the coverage ``check_coverage`` reports
  agrees within 2 Monte-Carlo SEs with a brute-force loop written here (its own draws,
  truth and coverage count) from the same fitted parameters;
* the Bradley-Terry refits' identification kernel against scipy's connected components.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import root
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

import winrate
from winrate.check import check_coverage, fit_simulation_model
from winrate.cli import main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.logs import ComparisonLog
from winrate.settings import Joint, MonteCarlo

ELO = 400 / np.log(10)


def draw_log(seed, theta, kappa, prompt_var, judge_var, n_prompts, n_judges, rows_per_cell=1,
             baseline=None, score_only=False):
    """A crossed log: each (prompt, judge) cell has ``rows_per_cell`` comparisons of random
    distinct pairs (or of a random contestant against ``baseline``), outcomes from the
    random-effects model of winrate.check's module doc (only the baseline responds with a
    prompt effect in a baseline design)."""
    rng = np.random.default_rng(seed)
    k = theta.size
    cells = n_prompts * n_judges * rows_per_cell
    p = np.repeat(np.arange(n_prompts), n_judges * rows_per_cell)
    j = np.tile(np.repeat(np.arange(n_judges), rows_per_cell), n_prompts)
    if baseline is None:
        a = rng.integers(0, k, cells)
        b = (a + rng.integers(1, k, cells)) % k
    else:
        others = np.delete(np.arange(k), baseline)  # distinct contestants in a cell
        picked = np.argsort(rng.random((cells // rows_per_cell, k - 1)), axis=1)
        a, b = others[picked[:, :rows_per_cell].ravel()], np.full(cells, baseline)
        swap = rng.random(cells) < 0.5
        a, b = np.where(swap, b, a), np.where(swap, a, b)
    responds = np.ones(k) if baseline is None else (np.arange(k) == baseline) * 1.0
    u = rng.normal(0, np.sqrt(prompt_var), (n_prompts, k)) * responds
    v = rng.normal(0, np.sqrt(judge_var), (n_judges, k))
    eta = theta[a] - theta[b] + u[p, a] - u[p, b] + v[j, a] - v[j, b]
    draw = rng.random(cells)
    score = np.where(draw < expit(eta - kappa), 1.0,
                     np.where(draw >= 1 - expit(-eta - kappa), 0.0, 0.5))
    if score_only:
        return score
    return ComparisonLog.from_arrays(a, b, score, models=np.array([f"m{i:02d}" for i in range(k)]),
                                     prompt=p, judge=j)


def analysed(log, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return winrate.analyze(log, **options)


# ----------------------------------------------------------------------- the fitted model


def test_fit_recovers_known_components_on_simulated_logs():
    theta = np.linspace(-1.2, 1.2, 12)
    fits = [fit_simulation_model(draw_log(seed, theta, 0.6, 0.5, 0.2, 300, 30))
            for seed in range(3)]
    prompt_var = np.mean([m.prompt_var for m in fits])
    judge_var = np.mean([m.judge_var for m in fits])
    assert prompt_var == pytest.approx(0.5, rel=0.2)
    assert judge_var == pytest.approx(0.2, rel=0.25)
    assert np.mean([m.kappa for m in fits]) == pytest.approx(0.6, rel=0.05)
    scale = np.mean([np.polyfit(theta, m.theta, 1)[0] for m in fits])
    assert scale == pytest.approx(1.0, abs=0.08)
    assert all(m.calibrated for m in fits)
    # the first-order moments alone are biased down (why step 3 exists)
    assert np.mean([m.moments[0] for m in fits]) < 0.8 * prompt_var


def test_fit_recovers_a_baseline_design_and_no_effects():
    theta = np.linspace(-1.0, 1.0, 16)
    model = fit_simulation_model(draw_log(7, theta, 0.4, 1.0, 0.0, 500, 1, rows_per_cell=8,
                                          baseline=0))
    assert model.baseline == 0
    assert model.prompt_var == pytest.approx(1.0, rel=0.25)
    assert model.judge_var == 0.0  # one judge: not identified
    flat = fit_simulation_model(draw_log(3, theta, 0.4, 0.0, 0.0, 200, 20))
    assert flat.prompt_var < 0.05 and flat.judge_var < 0.05


# ----------------------------------------------------------------------- the truth


def hermite_probabilities(model, first, second):
    """P(first wins), P(second wins) averaged over the random effects by Gauss-Hermite."""
    x, w = np.polynomial.hermite.hermgauss(120)
    responds = np.ones(model.theta.size)
    if model.baseline is not None:
        responds = (np.arange(model.theta.size) == model.baseline) * 1.0
    var = model.prompt_var * (responds[first] + responds[second]) + 2 * model.judge_var
    eta = (model.theta[first] - model.theta[second])[:, None] + np.sqrt(2 * var)[:, None] * x
    weights = w / np.sqrt(np.pi)
    return expit(eta - model.kappa) @ weights, expit(-eta - model.kappa) @ weights


def pair_psi(log, model):
    """(K, K) psi_ab (P(a wins) + P(tie) / 2 in a's order mix) and pair counts n_ab."""
    k = log.n_models
    win, lose = hermite_probabilities(model, log.model_a, log.model_b)
    half = win + (1 - win - lose) / 2  # a's expected half-tie score in each row
    total = np.zeros((k, k))
    count = np.zeros((k, k))
    np.add.at(total, (log.model_a, log.model_b), half)
    np.add.at(total, (log.model_b, log.model_a), 1 - half)
    np.add.at(count, (log.model_a, log.model_b), 1)
    np.add.at(count, (log.model_b, log.model_a), 1)
    return np.divide(total, count, out=np.full((k, k), np.nan), where=count > 0), count


def winrate_truth(log, model):
    psi, count = pair_psi(log, model)
    return np.nanmean(np.where(count > 0, psi, np.nan), axis=1)


def bt_truth(log, model):
    """Pseudo-true Elo ratings (mean 1000): root of sum_b n_ab (psi_ab - expit(t_a - t_b))
    = 0 with sum t = 0, by scipy."""
    psi, count = pair_psi(log, model)
    psi = np.nan_to_num(psi)
    k = log.n_models

    def equations(t):
        gap = expit(t[:, None] - t[None, :])
        score = (count * (psi - gap)).sum(axis=1)
        return np.r_[score[:-1], t.sum()]

    t = root(equations, np.zeros(k), tol=1e-13).x
    return 1000 + ELO * (t - t.mean())


def test_truth_is_the_expected_win_rate_and_the_bt_pseudo_truth():
    theta = np.linspace(-1.5, 1.5, 9)
    log = draw_log(11, theta, 0.5, 0.8, 0.3, 80, 10)
    result = analysed(log)
    checked = check_coverage(result, reps=20, workers=1)
    np.testing.assert_allclose(checked.truth, winrate_truth(log, checked.simulation),
                               atol=1e-9)
    bt = check_coverage(analysed(log, model="bt"), reps=20, workers=1)
    np.testing.assert_allclose(bt.truth, bt_truth(log, bt.simulation), atol=1e-6)


# ----------------------------------------------------------------------- acceptance


def brute_force(result, model, reps: int, seed: int):
    """Coverage of ``result``'s analysis on its design by a loop of its own: draws from
    ``model``'s parameters, the truth of :func:`winrate_truth` or the baseline design's
    closed form, every analysis rerun as ``result`` was run. Returns (marginal, its MC SE,
    simultaneous, its MC SE)."""
    log = result.log
    board = result.leaderboard
    options = dict(board.options)
    if board.estimator == "winrate":
        truth = winrate_truth(log, model)
    else:  # a baseline design: each contestant's rating is logit(psi) of its one pair
        psi, _ = pair_psi(log, model)
        base = int(np.flatnonzero(log.models == options["baseline"])[0])
        truth = 1000 + ELO * np.log(psi[:, base] / (1 - psi[:, base]))
    truth = truth[board.contestants] if board.contestants is not None else truth
    p, j = log.axes["prompt"].codes, log.axes["judge"].codes
    variance, _, _ = result.requested
    shares, joint = [], []
    for rep in range(reps):
        score = draw_log_scores(model, log.model_a, log.model_b, p, j, seed + rep)
        sim = ComparisonLog.from_arrays(log.model_a, log.model_b, score, models=log.models,
                                        prompt=p, judge=j)
        run = analysed(sim, cluster=result.clustering, model=board.estimator, variance=variance,
                       joint=Joint(simultaneous=True),
                       monte_carlo=MonteCarlo(n_draws=10_000, seed=rep), alpha=result.alpha,
                       **options)
        blank = np.isnan(run.se)
        inside = (run.intervals.low <= truth) & (truth <= run.intervals.high)
        shares.append(np.mean(inside | blank))
        joint.append(np.all(((run.joint.sim_low <= truth) & (truth <= run.joint.sim_high))
                            | blank))
    shares, joint = np.array(shares), np.array(joint, float)
    return (shares.mean(), shares.std(ddof=1) / np.sqrt(reps), joint.mean(),
            np.sqrt(joint.mean() * (1 - joint.mean()) / reps))


def draw_log_scores(model, a, b, p, j, seed):
    rng = np.random.default_rng([99, seed])
    k = model.theta.size
    responds = np.ones(k) if model.baseline is None else (np.arange(k) == model.baseline) * 1.0
    u = rng.normal(0, np.sqrt(model.prompt_var), (p.max() + 1, k)) * responds
    v = rng.normal(0, np.sqrt(model.judge_var), (j.max() + 1, k))
    eta = model.theta[a] - model.theta[b] + u[p, a] - u[p, b] + v[j, a] - v[j, b]
    draw = rng.random(a.size)
    return np.where(draw < expit(eta - model.kappa), 1.0,
                    np.where(draw >= 1 - expit(-eta - model.kappa), 0.0, 0.5))


DESIGNS = {
    "win rate, crossed 120 prompts x 20 judges": (
        lambda: draw_log(5, np.linspace(-1.4, 1.4, 10), 0.5, 0.6, 0.25, 120, 20), {}),
    "Bradley-Terry, baseline design, 150 prompts": (
        lambda: draw_log(6, np.linspace(-1.0, 1.0, 13), 0.3, 1.5, 0.0, 150, 1,
                         rows_per_cell=12, baseline=0),
        {"model": "bt", "baseline": "m00"}),
}


@pytest.mark.parametrize("name", DESIGNS)
def test_check_agrees_with_a_brute_force_simulation(name):
    make, options = DESIGNS[name]
    result = analysed(make(), **options)
    checked = check_coverage(result, reps=100, seed=1, workers=1)
    marginal, marginal_se, joint, joint_se = brute_force(result, checked.simulation, 100,
                                                         seed=5000)
    c = checked.coverage
    assert c.reps == 100 and c.failed == 0
    assert abs(c.marginal - marginal) <= 2 * np.hypot(c.marginal_se, marginal_se)
    assert abs(c.simultaneous - joint) <= 2 * np.hypot(c.simultaneous_se, max(joint_se, 0.01))
    assert 0.8 < c.marginal <= 1.0  # not a degenerate comparison


# ----------------------------------------------------------------------- behaviour


def test_results_do_not_depend_on_the_number_of_workers():
    result = analysed(draw_log(2, np.linspace(-1, 1, 6), 0.5, 0.5, 0.2, 40, 10))
    one = check_coverage(result, reps=20, seed=3, workers=1)
    two = check_coverage(result, reps=20, seed=3, workers=2)
    assert two.workers == 2
    np.testing.assert_array_equal(one.coverage.per_model, two.coverage.per_model)
    np.testing.assert_array_equal(one.coverage.sd_z, two.coverage.sd_z)
    assert one.coverage.simultaneous == two.coverage.simultaneous


def test_an_under_covering_method_is_named_with_one_that_covers():
    log = draw_log(4, np.linspace(-1, 1, 6), 0.5, 0.3, 1.0, 60, 4)
    result = analysed(log, variance=winrate.Variance("sandwich", "cr1", "normal"))
    with pytest.warns(WinrateWarning) as caught:
        checked = check_coverage(result, reps=40, workers=1)
    assert checked.coverage.status == "under-covers"
    assert "check-under-covers" in checked.notes.codes
    assert "check-under-covers" in [w.message.args[0].code for w in caught]
    assert {"sandwich CR1, t", "jackknife"} <= set(checked.alternatives)
    tried = checked.alternatives.values()
    named = ([flags for cov, flags in tried if cov.covers]
             or [flags for cov, flags in tried if not cov.under_covers])
    if named:
        assert f"rerun with {named[0]}." in checked.verdict
    else:
        assert "None of the other methods" in checked.verdict
    doc = json.loads(json.dumps(checked.to_dict()))
    assert doc["coverage"]["status"] == "under-covers"
    assert len(doc["alternatives"]) == len(checked.alternatives)


def test_graded_and_weighted_logs_are_simulated_with_a_note():
    log = draw_log(8, np.linspace(-1, 1, 5), 0.5, 0.4, 0.0, 60, 1, rows_per_cell=5)
    graded = np.where(log.score == 1, 0.9, np.where(log.score == 0, 0.2, 0.5))
    counts = np.random.default_rng(0).integers(1, 4, log.n_rows)
    weighted = ComparisonLog.from_arrays(log.model_a, log.model_b, graded, models=log.models,
                                         frequency=counts, prompt=log.axes["prompt"].codes)
    checked = check_coverage(analysed(weighted, cluster="prompt"), reps=20, workers=1)
    assert "check-simulation-model" in checked.notes.codes
    assert checked.simulation.discretised and checked.coverage.reps == 20
    frame = checked.to_frame()
    assert list(frame.index) == [str(m) for m in log.models]
    assert "Coverage check" in checked.summary()


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    result = analysed(draw_log(1, np.linspace(-1, 1, 4), 0.5, 0.3, 0.0, 30, 1))
    with pytest.raises(WinrateInputError, match="reps"):
        check_coverage(result, reps=5)
    with pytest.raises(WinrateInputError, match="seed"):
        check_coverage(result, seed=-1)
    path = tmp_path / "log.csv"
    path.write_text("prompt_id,model_a,model_b,outcome\n1,x,y,a\n")
    assert main(["check", str(path), "--reps", "5"]) == 2
    assert "--reps must be at least 20" in capsys.readouterr().err


def test_cli_writes_json_and_fails_under_a_threshold(tmp_path, capsys):
    log = draw_log(9, np.linspace(-1, 1, 6), 0.5, 0.5, 0.2, 50, 8)
    path = tmp_path / "log.csv"
    rows = np.column_stack([log.axes["prompt"].codes, log.axes["judge"].codes,
                            log.models[log.model_a], log.models[log.model_b], log.score])
    path.write_text("prompt_id,judge_id,model_a,model_b,outcome\n"
                    + "\n".join(",".join(map(str, row)) for row in rows) + "\n")
    out = tmp_path / "check.json"
    code = main(["check", str(path), "--reps", "20", "--json", str(out), "--fail-under", "0"])
    assert code == 0
    doc = json.loads(out.read_text())
    marginal = doc["coverage"]["marginal"]
    assert doc["settings"]["reps"] == 20 and 0 < marginal <= 1
    assert "Coverage check" in capsys.readouterr().out
    above = round(100 * marginal + 0.05, 1)
    assert main(["check", str(path), "--reps", "20", "--json", "-",
                 "--fail-under", str(above)]) == 1
    assert json.loads(capsys.readouterr().out)["coverage"]["marginal"] == marginal


# ----------------------------------------------------------------------- BT refits


def test_bt_replicate_identification_matches_scipy():
    from winrate.estimators.bradley_terry_kernels import _replicates_identified

    rng = np.random.default_rng(1)
    for _ in range(200):
        k = int(rng.integers(2, 8))
        pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)])
        pairs = pairs[rng.random(len(pairs)) < rng.uniform(0.3, 1)]
        if not len(pairs):
            continue
        lo, hi = pairs[:, 0], pairs[:, 1]
        counts = rng.integers(0, 3, (10, len(lo))).astype(float)
        wins = np.minimum(rng.integers(0, 3, (10, len(lo))), counts).astype(float)
        tol = np.full(len(lo), 1e-10)
        for ridge in (False, True):
            expected = []
            for c, w in zip(counts, wins, strict=True):
                seen = c > tol
                graph = np.zeros((k, k))
                graph[lo[seen], hi[seen]] = w[seen]
                graph[hi[seen], lo[seen]] = c[seen] - w[seen]
                strong = connected_components(sp.csr_array(graph > 0), connection="strong")[0]
                linked = connected_components(sp.csr_array(graph + graph.T > 0),
                                              directed=False)[0]
                expected.append(strong == 1 or (ridge and linked == 1))
            found = _replicates_identified(counts, wins, tol, lo, hi, k, ridge)
            np.testing.assert_array_equal(found, expected)


def test_replications_whose_analysis_fails_are_counted_with_a_note():
    """A strong model with six comparisons (one lost): in many simulated logs it never
    loses, Bradley-Terry's MLE is not finite and that replication is left out."""
    rng = np.random.default_rng(5)
    a = np.r_[rng.integers(1, 4, 300), np.zeros(6, int)]
    b = np.r_[(a[:300] % 3) + 1, np.arange(6) % 3 + 1]
    score = np.r_[rng.integers(0, 2, 300), 1, 1, 1, 1, 1, 0].astype(float)
    log = ComparisonLog.from_arrays(a, b, score, prompt=np.arange(306) // 3)
    checked = check_coverage(analysed(log, model="bt", cluster="prompt"), reps=20, workers=1)
    c = checked.coverage
    assert c.failed > 0 and c.failed + c.reps == 20
    assert "check-failed-replications" in checked.notes.codes


TINY_LOGS = {
    # one strict win and two ties: Rao-Kupper's MLE runs off along a ray of (theta, kappa)
    "no strict win for one model": [("p1", "M0", "M1", 0.5), ("p0", "M1", "M0", 0.0),
                                    ("p1", "M1", "M0", 0.5)],
    "three rows, one prompt": [("p0", "M1", "M0", 0.0), ("p0", "M1", "M0", 0.5),
                               ("p0", "M0", "M1", 0.0)],
    "three rows, two models": [("p1", "A", "B", 1.0), ("p2", "A", "B", 0.0),
                               ("p3", "B", "A", 1.0)],
}


@pytest.mark.parametrize("name", list(TINY_LOGS))
def test_check_on_a_tiny_log_gives_a_result_or_a_one_line_error(name, tmp_path, capsys):
    """A log of a few rows gets the check's verdict or one error line on the command line,
    never a traceback; so does the library call."""
    import pandas as pd

    frame = pd.DataFrame(TINY_LOGS[name], columns=["prompt_id", "model_a", "model_b",
                                                   "outcome"])
    path = tmp_path / "tiny.csv"
    frame.to_csv(path, index=False)
    code = main(["check", str(path), "--reps", "20"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0 or (code == 2 and len(err) == 1 and "Traceback" not in err[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        try:
            found = check_coverage(winrate.analyze(winrate.read_comparisons(frame)), reps=20)
        except WinrateInputError as error:
            assert "\n" not in str(error)
        else:
            assert 0 <= found.coverage.marginal <= 1


def test_a_rao_kupper_mle_off_to_infinity_is_an_input_error_not_a_singular_matrix():
    """One strict win and two ties: the MLE runs off along a ray (a model never won, the
    tie threshold grows with its distance); the fit says so and points to the prior."""
    import pandas as pd

    frame = pd.DataFrame(TINY_LOGS["no strict win for one model"],
                         columns=["prompt_id", "model_a", "model_b", "outcome"])
    log = winrate.read_comparisons(frame)
    with pytest.raises(WinrateInputError, match="prior"):
        winrate.fit(log, "rao-kupper")
    assert np.isfinite(winrate.fit(log, "rao-kupper", prior=4.0).scores).all()


@pytest.mark.parametrize(("first", "later", "slow"), [
    (0.4, 0.0, False),   # the first replication compiles the kernels: no note
    (0.15, 0.15, True),  # every replication slow: the note, from a warm one's time
])
def test_the_slow_note_reads_a_warm_replications_time(monkeypatch, first, later, slow):
    """``check-slow-method`` estimates the run from the second replication, not the first,
    whose time includes numba compiling the kernels in a fresh process (7 s on a fresh
    clone for a check that then takes seconds): 10 replications, a 1 s limit, one worker."""
    import time

    from winrate import check

    def replicate(spec, rep):
        time.sleep(first if rep == 0 else later)
        return rep

    monkeypatch.setattr(check, "replicate", replicate)
    monkeypatch.setattr(check, "SLOW_SECONDS", 1.0)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        found, workers, note = check.run_replications(None, 10, 1, False, "sandwich CR1")
    assert found == list(range(10)) and workers == 1
    assert (note is not None) == slow
    if slow:
        assert note.code == "check-slow-method"
