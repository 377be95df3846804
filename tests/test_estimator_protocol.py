"""The estimator protocol: the registry, options on the fit, Rao-Kupper through every step,
coded notes, the option objects, and the layout rule that only the estimators package
knows an estimator by name."""

from __future__ import annotations

import ast
import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

import winrate
from winrate import estimators
from winrate.cli import main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.notes import CODES, Note
from winrate.report.leaderboard import to_dict
from winrate.settings import Joint, MonteCarlo, Variance

ROOT = Path(__file__).resolve().parents[1]


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return function(*args, **kwargs)


def rao_kupper_log(seed: int, k: int = 5, n: int = 3000, kappa: float = 0.7):
    """Comparisons drawn from Rao-Kupper with known ratings, 3 per prompt, 6 judges."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 0.8, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    eta = theta[a] - theta[b]
    p_a, p_b = expit(eta - kappa), expit(-eta - kappa)
    u = rng.random(n)
    outcome = np.where(u < p_a, "a", np.where(u < p_a + p_b, "b", "tie"))
    return winrate.read_comparisons(pd.DataFrame({
        "prompt_id": np.arange(n) // 3, "judge_id": rng.integers(0, 6, n),
        "model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
        "outcome": outcome}))


def _row_mle(log):
    """Rao-Kupper's MLE by BFGS on the row log-likelihood (theta sums to 0)."""
    k = log.n_models

    def nll(p):
        theta = np.append(p[:k - 1], -p[:k - 1].sum())
        eta = theta[log.model_a] - theta[log.model_b]
        kappa = p[-1]
        prob = np.where(log.score == 1, expit(eta - kappa),
                        np.where(log.score == 0, expit(-eta - kappa),
                                 expit(kappa - eta) - expit(-kappa - eta)))
        return -np.log(prob).sum()

    res = minimize(nll, np.append(np.zeros(k - 1), 1.0), method="L-BFGS-B",
                   bounds=[(None, None)] * (k - 1) + [(1e-6, None)],
                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10_000})
    return np.append(res.x[:k - 1], -res.x[:k - 1].sum()), res.x[-1], nll, res.x


@pytest.mark.parametrize("seed", [1, 2])
def test_rao_kupper_equals_an_independent_maximum_likelihood_fit(seed):
    log = rao_kupper_log(seed)
    board = estimators.fit(log, "rao-kupper")
    theta, kappa, _, _ = _row_mle(log)
    np.testing.assert_allclose(board.fitted["theta"], theta, atol=1e-6)
    np.testing.assert_allclose(board.coef[0], kappa, atol=1e-6)
    np.testing.assert_allclose(board.scores, 1000 + 400 / np.log(10) * theta, atol=1e-4)


def test_rao_kupper_naive_covariance_is_the_row_sandwich_of_numerical_derivatives():
    """The naive covariance H^-1 (sum g g') H^-1 with the score rows and information
    recomputed by finite differences of the row log-likelihood (independent of the
    analytic derivatives)."""
    log = rao_kupper_log(3, k=4, n=1500)
    result = _quiet(winrate.analyze, log, "none", "rao-kupper",
                    variance=Variance("sandwich", "none"))
    theta, kappa, nll, x = _row_mle(log)
    k = log.n_models

    def rows(p):
        t = np.append(p[:k - 1], -p[:k - 1].sum())
        eta = t[log.model_a] - t[log.model_b]
        kap = p[-1]
        return np.log(np.where(log.score == 1, expit(eta - kap),
                               np.where(log.score == 0, expit(-eta - kap),
                                        expit(kap - eta) - expit(-kap - eta))))

    h = 1e-5
    grads = np.column_stack([(rows(x + h * e) - rows(x - h * e)) / (2 * h)
                             for e in np.eye(len(x))])
    hess = np.array([[(nll(x + h * (ei + ej)) - nll(x + h * (ei - ej))
                       - nll(x - h * (ei - ej)) + nll(x - h * (ei + ej))) / (4 * h * h)
                      for ej in np.eye(len(x))] for ei in np.eye(len(x))])
    bread = np.linalg.inv(hess)
    cov_free = bread @ (grads.T @ grads) @ bread  # of (theta_1..theta_{k-1}, kappa)
    to_theta = np.vstack([np.eye(k - 1), -np.ones(k - 1)])  # theta = M theta_free
    elo = 400 / np.log(10)
    cov_theta = elo**2 * to_theta @ cov_free[:k - 1, :k - 1] @ to_theta.T
    np.testing.assert_allclose(result.cov_naive, cov_theta, rtol=2e-3)
    np.testing.assert_allclose(result.coefficients.se_naive[0] ** 2, cov_free[-1, -1],
                               rtol=2e-3)


def test_rao_kupper_runs_through_clustering_jackknife_joint_inference_and_reports(tmp_path):
    log = rao_kupper_log(4, k=4, n=600)
    sandwich = _quiet(winrate.analyze, log, "prompt+judge", "rao-kupper",
                      joint=Joint(simultaneous=True, ranks=True, pairwise=True))
    jack = _quiet(winrate.analyze, log, "judge", "rao-kupper",
                  variance=Variance("jackknife"))
    # the jackknife refits the rows: its replicates by brute force
    judges = log.axes["judge"].codes
    reps = []
    for g in range(log.axes["judge"].n_clusters):
        keep = judges != g
        sub = winrate.io.logs.ComparisonLog(log.model_a[keep], log.model_b[keep], log.score[keep],
                                         log.models, {}, None, {})
        reps.append(estimators.fit(sub, "rao-kupper").scores)
    reps = np.array(reps)
    n_g = len(reps)
    centred = reps - reps.mean(axis=0)
    np.testing.assert_allclose(jack.cov, (n_g - 1) / n_g * centred.T @ centred, rtol=1e-6)
    assert sandwich.joint.sim_low is not None and sandwich.joint.rank_low is not None
    assert "Rao-Kupper" in sandwich.summary()
    doc = to_dict(sandwich)
    assert doc["settings"]["estimator"] == "rao-kupper"
    assert doc["coefficients"]["names"] == ["tie threshold kappa (Rao-Kupper)"]
    path = tmp_path / "rk.csv"
    frame = pd.DataFrame({"prompt_id": log.axes["prompt"].labels[log.axes["prompt"].codes],
                          "model_a": log.models[log.model_a], "model_b": log.models[log.model_b],
                          "outcome": np.select([log.score == 1, log.score == 0],
                                               ["a", "b"], "tie")})
    frame.to_csv(path, index=False)
    out = tmp_path / "rk.json"
    assert _quiet(main, ["leaderboard", str(path), "--model", "rao-kupper", "--cluster",
                         "prompt", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["settings"]["estimator"] == "rao-kupper"


def test_rao_kupper_refuses_what_it_cannot_estimate():
    log = rao_kupper_log(5, k=3, n=300)
    no_ties = winrate.io.logs.ComparisonLog(log.model_a, log.model_b,
                                         np.where(log.score == 0.5, 1.0, log.score),
                                         log.models, {}, None, {})
    with pytest.raises(WinrateInputError, match="needs ties"):
        estimators.fit(no_ties, "rao-kupper")
    with pytest.raises(WinrateInputError, match="cr2 is not defined for model 'rao-kupper'"):
        _quiet(winrate.analyze, log, "prompt", "rao-kupper", variance=Variance(correction="cr2"))
    with pytest.raises(WinrateInputError, match="'ties' applies to bt, not to model"):
        estimators.fit(log, "rao-kupper", ties="davidson")


# ------------------------------------------------------------------ options on the fit


def _weights_log():
    return winrate.simulate_comparisons(winrate.SimulationDesign(
        n_models=5, n_prompts=60, n_judges=4, pairs_per_prompt=3), seed=11).log


def test_reused_fit_with_other_weights_is_an_error_naming_both():
    """Before the protocol, analyze(log, weights="uniform", board=<count fit>,
    method="jackknife") refitted its replicates with uniform weights: SEs of neither
    estimator and settings naming the wrong weights."""
    log = _weights_log()
    board = estimators.fit(log, "winrate", weights="count")
    with pytest.raises(WinrateInputError, match="'weights' is 'uniform' in this call but "
                                                "'count' in the reused fit"):
        _quiet(winrate.analyze, log, "prompt", weights="uniform", board=board,
               variance=Variance("jackknife"))
    reused = _quiet(winrate.analyze, log, "prompt", board=board, variance=Variance("jackknife"))
    fresh = _quiet(winrate.analyze, log, "prompt", weights="count",
                   variance=Variance("jackknife"))
    np.testing.assert_allclose(reused.se, fresh.se, rtol=1e-12)
    assert reused.settings["weights"] == "count"


def test_reused_fit_jackknife_uses_the_fits_weights_by_brute_force():
    log = _weights_log()
    board = estimators.fit(log, "winrate", weights="count")
    jack = _quiet(winrate.analyze, log, "prompt", board=board, variance=Variance("jackknife"))
    prompts = log.axes["prompt"].codes
    reps = []
    for g in range(log.axes["prompt"].n_clusters):
        keep = prompts != g
        sub = winrate.io.logs.ComparisonLog(log.model_a[keep], log.model_b[keep], log.score[keep],
                                         log.models, {}, None, {})
        reps.append(estimators.fit(sub, "winrate", weights="count").scores)
    reps = np.array(reps)
    n_g = len(reps)
    centred = reps - reps.mean(axis=0)
    np.testing.assert_allclose(jack.cov - jack.small_sample_floor,
                               (n_g - 1) / n_g * centred.T @ centred, rtol=1e-9)


def test_options_an_estimator_lacks_are_refused_and_kept_on_the_fit():
    log = _weights_log()
    with pytest.raises(WinrateInputError, match="'anchor' applies to bt, rao-kupper"):
        estimators.fit(log, "winrate", anchor="m0=1000")
    with pytest.raises(WinrateInputError, match="model must be one of"):
        estimators.fit(log, "elo")
    board = estimators.fit(log, "bt", prior=2.0)
    assert board.options["prior"] == 2.0 and board.options["ties"] == "half"
    with pytest.raises(WinrateInputError, match="model 'winrate' was asked for"):
        _quiet(winrate.analyze, log, "prompt", "winrate", board=board)


# ------------------------------------------------------------------ notes and settings


def test_notes_are_coded_on_the_result_in_json_and_on_the_command_line(tmp_path, capsys):
    log = _weights_log()
    result = _quiet(winrate.analyze, log, "prompt+judge", variance=Variance("sandwich"))
    assert result.notes and all(isinstance(n, Note) and n.code in CODES for n in result.notes)
    assert "few-clusters" in result.notes.codes
    assert result.notes.only("few-clusters")[0].axis == "judge"
    assert "few-clusters" not in result.notes.without("few-clusters").codes
    doc = to_dict(result)
    assert [n["code"] for n in doc["notes"]] == result.notes.codes
    assert doc["warnings"] == [n["text"] for n in doc["notes"]]
    assert "(few-clusters)" in result.summary()
    with pytest.raises(WinrateInputError, match="unknown note code"):
        result.notes.only("few-cluster")
    with pytest.warns(WinrateWarning) as caught:
        winrate.analyze(log, "prompt+judge", variance=Variance("sandwich"))
    assert {w.message.args[0].code for w in caught} >= {"few-clusters"}


def test_prior_note_reaches_every_output():
    """A ridge prior that alone keeps a rating finite is said in the notes (the CLI once
    silenced it)."""
    frame = pd.DataFrame({"prompt_id": range(40), "model_a": ["a", "b", "c", "d"] * 10,
                          "model_b": ["b", "c", "a", "a"] * 10,
                          "outcome": ["a", "a", "tie", "a"] * 10})
    result = _quiet(winrate.analyze, frame, "prompt", "bt", prior=1.0)
    assert "prior-dominates" in result.notes.codes


def test_analyze_signature_option_objects_and_no_flat_keywords():
    assert len(inspect.signature(winrate.analyze).parameters) <= 10
    log = _weights_log()
    new = _quiet(winrate.analyze, log, "prompt", variance=Variance("jackknife"),
                 monte_carlo=MonteCarlo(seed=3))
    assert new.method == "jackknife" and new.settings["seed"] == 3
    for flat in ({"method": "jackknife"}, {"seed": 3}, {"ranks": True}):
        with pytest.raises(WinrateInputError, match="applies to no estimator"):
            winrate.analyze(log, "prompt", **flat)
    with pytest.raises(WinrateInputError, match="method must be one of"):
        Variance("bootstrapp")
    assert new.settings.method == new.settings["method"] == "jackknife"
    assert new.settings["seed"] == 3


def test_labelled_results_and_reinference_without_refitting():
    log = _weights_log()
    result = _quiet(winrate.analyze, log, "prompt", variance=Variance("sandwich", "cr1"))
    assert list(result.params.index) == [str(m) for m in result.models]
    np.testing.assert_array_equal(result.std_errors.to_numpy(), result.se)
    assert result.cov_params().loc[str(result.models[0]), str(result.models[0])] == \
        result.cov[0, 0]
    judge = result.with_clustering("judge")
    direct = _quiet(winrate.analyze, log, "judge", variance=Variance("sandwich", "cr1"))
    assert judge.leaderboard is result.leaderboard
    np.testing.assert_allclose(judge.se, direct.se, rtol=1e-12)
    assert repr(log) == (f"ComparisonLog(rows={log.n_rows:,}, models=5, clusters: "
                         f"prompt={log.axes['prompt'].n_clusters}, judge=4)")


# ------------------------------------------------------------------ the layout rule


def _name_comparisons(path: Path) -> list[str]:
    """Comparisons (==, !=, in) of anything with an estimator's name as a string."""
    names = set(estimators.ESTIMATORS)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                values = (operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set))
                          else [operand])
                if any(isinstance(v, ast.Constant) and v.value in names for v in values):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_code_outside_the_estimators_package_compares_an_estimator_name():
    package = ROOT / "winrate"
    outside = [p for p in package.rglob("*.py") if "estimators" not in p.parts]
    found = [hit for path in outside for hit in _name_comparisons(path)]
    assert found == []


def test_the_name_rule_catches_a_comparison(tmp_path):
    bad = ROOT / "winrate" / "_probe_for_test.py"
    try:
        bad.write_text('def f(board):\n    return board.estimator == "bt"\n')
        assert _name_comparisons(bad) == ["winrate/_probe_for_test.py:2"]
    finally:
        bad.unlink()


def test_every_note_code_is_documented():
    page = (ROOT / "docs" / "notes.md").read_text()
    missing = [code for code in CODES if f"`{code}`" not in page]
    assert missing == []


def test_the_cli_json_carries_the_default_clustering_and_loader_notes(tmp_path, capsys):
    """The clustering chosen by default and the reader's notes reach the JSON, as stderr."""
    path = tmp_path / "log.csv"
    pd.DataFrame({"prompt_id": np.arange(60) % 20, "model_a": ["a", "b", "c"] * 20,
                  "model_b": ["b", "c", "a"] * 20,
                  "outcome": ["a", "b", "tie", "b"] * 15}).to_csv(path, index=False)
    out = tmp_path / "r.json"
    assert _quiet(main, ["leaderboard", str(path), "--json", str(out)]) == 0
    codes = [n["code"] for n in json.loads(out.read_text())["notes"]]
    assert codes[0] == "default-clustering"
    assert "note [default-clustering]" in capsys.readouterr().err


# ------------------------------------------------------------------ what the protocol declares


def test_every_estimator_declares_its_scale_and_the_json_carries_it():
    from winrate.estimators.base import ELO, PROBABILITY, Estimator, Scale

    declared = {name: est.scale for name, est in estimators.REGISTRY.items()}
    assert declared == {"winrate": PROBABILITY, "bt": ELO, "rao-kupper": ELO, "lc": PROBABILITY}
    assert all(isinstance(est, Estimator) for est in estimators.REGISTRY.values())
    for scale in (PROBABILITY, ELO):
        assert Scale.of(json.loads(json.dumps(scale.to_dict()))) == scale
        assert Scale.of(scale.name) is scale  # documents written with the name alone
    assert (PROBABILITY.link, PROBABILITY.range) == ("logit", (0.0, 1.0))
    assert (ELO.link, ELO.bounded) == ("identity", False)
    log = rao_kupper_log(1)
    result = _quiet(winrate.analyze, log, "prompt", "bt")
    assert result.leaderboard.scale is ELO
    assert to_dict(result)["settings"]["scale"] == ELO.to_dict()


def test_fixed_models_are_the_anchor_only():
    log = rao_kupper_log(2)
    for model in ("bt", "rao-kupper"):
        board = estimators.fit(log, model, anchor="m1=1200")
        fixed = estimators.of(board).fixed_models(board)
        assert board.models[fixed].tolist() == ["m1"]
        free = estimators.fit(log, model)
        assert not estimators.of(free).fixed_models(free).any()
    board = estimators.fit(log)
    assert not estimators.of(board).fixed_models(board).any()


def test_refits_read_rows_or_pair_totals_as_the_estimator_declares():
    from winrate.estimators.base import RowRefit

    log = rao_kupper_log(3)
    win_rate, bt = estimators.get("winrate"), estimators.get("bt")
    assert not win_rate.refits_rows(win_rate.settle({}))
    assert not bt.refits_rows(bt.settle({}))
    assert bt.refits_rows(bt.settle({"ties": "davidson"}))
    assert estimators.get("rao-kupper").refits_rows({}) and estimators.get("lc").refits_rows({})
    board = estimators.fit(log)
    unit, n_units = win_rate.resampling_units(board)
    assert n_units == len(board.pairs) and (unit == board.pair).all()
    with pytest.raises(TypeError, match="'winrate' refits from pair totals"):
        RowRefit(win_rate, board, log)
