"""`winrate leaderboard` inference flags: --method, --simultaneous, --ranks, --pairwise,
--plot, --bootstrap-reps, --seed; JSON keys checked against the library functions."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from tests.logit_oracle import logit_interval
from winrate.cli import main
from winrate.errors import WinrateWarning
from winrate.inference.joint import pairwise_differences, rank_sets, simultaneous_intervals
from winrate.io.logs import read_comparisons
from winrate.variance.resampling import multiway_jackknife_cov, wild_cluster_bootstrap

NEW_KEYS = {"method", "method_note", "simultaneous_critical_value", "sim_low", "sim_high",
            "rank_low", "rank_high", "rank_method", "pairwise"}


@pytest.fixture(scope="module")
def log_file(simulated_log_file):
    return simulated_log_file


def _run(argv, tmp_path, capsys):
    out = tmp_path / "out.json"
    if "--method" not in argv:  # these tests check the sandwich's joint inference
        argv = [*argv, "--method", "sandwich"]
    assert main(["leaderboard", *map(str, argv), "--json", str(out)]) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def test_default_run_has_new_keys_as_null(log_file, tmp_path, capsys):
    doc, printed = _run([log_file], tmp_path, capsys)
    assert NEW_KEYS <= set(doc)
    assert doc["method"] == "sandwich" and doc["settings"]["method"] == "sandwich"
    assert doc["sim_low"] is None and doc["rank_low"] is None and doc["pairwise"] is None
    assert "variance: sandwich (cr1) clustered by prompt (60 clusters) + judge (4 clusters)" \
        in printed
    assert "use method 'auto' (t(3) critical values)" in printed


def test_simultaneous_ranks_and_pairwise_match_the_library(log_file, tmp_path, capsys):
    doc, printed = _run([log_file, "--simultaneous", "--ranks", "--seed", 3], tmp_path, capsys)
    score, cov = np.array(doc["score"]), np.array(doc["cov"])
    sim = simultaneous_intervals(score, cov, 0.05, None, seed=3)
    assert doc["simultaneous_critical_value"] == pytest.approx(sim.critical_value, rel=1e-12)
    # win probabilities: the max-|T| interval built on the logit scale (issue 24)
    np.testing.assert_allclose(doc["sim_low"], logit_interval(score, sim.high - score)[0],
                               rtol=1e-10)
    assert np.all(np.array(doc["sim_low"]) < np.array(doc["ci_low"]))
    rank = 1 + (score[None, :] > score[:, None]).sum(axis=1)
    low, high = np.array(doc["rank_low"]), np.array(doc["rank_high"])
    assert all(isinstance(v, int) for v in doc["rank_low"])
    assert np.all((low <= rank) & (rank <= high)) and doc["rank_method"] == "marginal"
    pairs = pd.DataFrame(doc["pairwise"])
    assert len(pairs) == 10
    ref = pairwise_differences(score, cov, 0.05, None, seed=3)
    np.testing.assert_allclose(pairs["estimate"], ref.estimate, atol=1e-15)
    np.testing.assert_allclose(pairs["p_holm"], ref.p_holm, rtol=1e-12)
    assert (pairs["p_holm"] >= pairs["p"]).all()
    names = doc["models"]
    first = pairs.iloc[0]
    assert first["estimate"] == pytest.approx(score[names.index(first["model_i"])]
                                              - score[names.index(first["model_j"])])
    assert "95% simult." in printed and "rank set" in printed


def test_jackknife_method_uses_cv3_and_t_reference(log_file, tmp_path, capsys):
    doc, printed = _run([log_file, "--method", "jackknife"], tmp_path, capsys)
    log = read_comparisons(log_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        jack = multiway_jackknife_cov(log, [log.axes["prompt"].codes, log.axes["judge"].codes])
    np.testing.assert_allclose(np.array(doc["cov"]), jack.cov, atol=1e-15)
    assert doc["settings"]["df"] == 3 and doc["method"] == "jackknife"
    assert "variance: jackknife (CV3J" in printed and "t(3) reference" in printed
    assert "reference t(3)" in printed


def test_bootstrap_one_axis_is_the_wild_bootstrap(log_file, tmp_path, capsys):
    doc, printed = _run([log_file, "--method", "bootstrap", "--cluster", "judge",
                         "--simultaneous", "--seed", 5], tmp_path, capsys)
    log = read_comparisons(log_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        wild = wild_cluster_bootstrap(log, log.axes["judge"].codes, reps=999, seed=5)
    assert doc["method"] == "wild bootstrap" and wild.distribution == "webb"
    np.testing.assert_allclose(doc["ci_low"], wild.low, rtol=1e-12)
    assert doc["simultaneous_critical_value"] == pytest.approx(wild.simultaneous_critical_value)
    assert "Webb 6-point weights" in printed and "all enumerated" in printed


def test_bootstrap_two_axes_is_the_pigeonhole(log_file, tmp_path, capsys):
    doc, printed = _run([log_file, "--method", "bootstrap", "--bootstrap-reps", 199],
                        tmp_path, capsys)
    assert doc["method"] == "pigeonhole bootstrap" and doc["settings"]["bootstrap_reps"] == 199
    assert "Owen's (2007) pigeonhole bootstrap" in printed


def test_plot_writes_a_png(log_file, tmp_path, capsys):
    path = tmp_path / "board.png"
    doc, _ = _run([log_file, "--plot", path], tmp_path, capsys)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert doc["sim_low"] is not None and doc["rank_low"] is not None


def test_separated_models_get_singleton_rank_sets(tmp_path, capsys):
    """Constructed case with a known answer: model k beats every lower-ranked model in 95%
    of 200 comparisons spread over 40 prompts, so every rank is pinned down."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(4):
        for j in range(i + 1, 4):
            for r in range(200):
                rows.append({"prompt_id": r % 40, "judge_id": r % 7, "model_a": f"m{i}",
                             "model_b": f"m{j}", "outcome": "a" if rng.random() < 0.95 else "b"})
    path = tmp_path / "separated.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    doc, _ = _run([path, "--ranks", "--rank-method", "simultaneous"], tmp_path, capsys)
    assert doc["rank_low"] == [1, 2, 3, 4] and doc["rank_high"] == [1, 2, 3, 4]


@pytest.mark.parametrize("argv, message", [
    (["--method", "bootstrap", "--bootstrap-reps", "10"], "--bootstrap-reps"),
    (["--plot", "/nonexistent-dir/x.png"], "directory"),
])
def test_bad_inference_flags_exit_2(log_file, capsys, argv, message):
    assert main(["leaderboard", str(log_file), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("winrate leaderboard: error:")


def test_weighted_log_without_clustering_resamples_comparisons(tmp_path, capsys):
    """--weight-col w --cluster none: a row of weight f is f comparisons, so the jackknife
    equals that of the log with every row written out f times, and the bootstrap variance
    is near the naive one (before the fix both were ~E[f] = 4 times too large)."""
    rng = np.random.default_rng(1)
    n = 120
    models = np.array(["m0", "m1", "m2"])
    a = rng.integers(0, 3, n)
    b = (a + 1 + rng.integers(0, 2, n)) % 3
    frame = pd.DataFrame({"model_a": models[a], "model_b": models[b],
                          "outcome": rng.choice(["a", "b", "tie"], n),
                          "w": rng.integers(1, 8, n)})
    weighted, expanded = tmp_path / "weighted.csv", tmp_path / "expanded.csv"
    frame.to_csv(weighted, index=False)
    frame.loc[frame.index.repeat(frame["w"])].drop(columns="w").to_csv(expanded, index=False)
    base = ["--cluster", "none", "--method", "jackknife"]
    doc_w, printed = _run([weighted, "--weight-col", "w", *base], tmp_path, capsys)
    doc_e, _ = _run([expanded, *base], tmp_path, capsys)
    np.testing.assert_allclose(doc_w["cov"], doc_e["cov"], rtol=1e-9)
    assert doc_w["settings"]["df"] == frame["w"].sum() - 1
    assert "each comparison is deleted in turn" in printed
    doc_b, _ = _run([weighted, "--weight-col", "w", "--cluster", "none", "--method",
                     "bootstrap", "--bootstrap-reps", 2000], tmp_path, capsys)
    ratio = np.diag(doc_b["cov"]) / np.diag(doc_e["cov"])
    assert np.all(np.abs(ratio - 1) < 0.15), ratio


def test_json_reports_the_monte_carlo_precision(log_file, tmp_path, capsys):
    """``monte_carlo``: the tolerance, and for each joint part its critical value, MC SE and
    draws, equal to the library's; every MC SE within the tolerance (or the draws at the
    cap); null without joint inference."""
    plain, _ = _run([log_file, "--method", "sandwich"], tmp_path, capsys)
    assert plain["monte_carlo"] is None
    doc, _ = _run([log_file, "--method", "sandwich", "--simultaneous", "--ranks"], tmp_path,
                  capsys)
    mc = doc["monte_carlo"]
    df = doc["settings"]["df"]
    score, cov = np.array(doc["score"]), np.array(doc["cov"])
    sim = simultaneous_intervals(score, cov, 0.05, df, seed=0)
    pairs = pairwise_differences(score, cov, 0.05, df, seed=0)
    assert mc["tolerance"] == sim.mc_tolerance
    for name, ref in (("simultaneous", sim), ("pairwise", pairs)):
        assert mc[name] == {"critical_value": pytest.approx(ref.critical_value, rel=1e-12),
                            "mc_se": pytest.approx(ref.mc_se, rel=1e-12),
                            "n_draws": ref.n_draws}
    ranks = rank_sets(score, cov, 0.05, df, seed=0)  # draws chosen at the first step
    np.testing.assert_allclose(mc["ranks"]["critical_value"], ranks.critical_value, rtol=1e-12)
    np.testing.assert_allclose(mc["ranks"]["mc_se"], ranks.mc_se, rtol=1e-12)
    assert mc["ranks"]["n_draws"] == ranks.n_draws
    assert sim.mc_se <= sim.mc_tolerance * sim.critical_value
