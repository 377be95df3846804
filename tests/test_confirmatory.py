"""The confirmatory coverage study (scripts/heldout/confirmatory.py, issue 36): its seeds
differ from every earlier run's, the Bell-McCaffrey df against a brute-force computation
from the hat and adjustment matrices, the new generator's truth against Monte Carlo over
its random effects, and the rule. The new generator is exercised on a tiny hand-made
design with a seed no study replication uses; no cell of the study is run here."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from heldout import confirmatory as cf  # noqa: E402
from heldout.cells import heavy_tailed_cells, held_out_cells  # noqa: E402
from heldout.semi import _log_rows  # noqa: E402
from heldout.slopes import RandomSlopes  # noqa: E402

from winrate.io.logs import read_comparisons  # noqa: E402

#: The registered number of replications per cell (paper/confirmatory/registration.md).
REGISTERED_REPS = 2000


def _earlier_seeds() -> set[int]:
    """Every seed an earlier coverage run drew from (each run's registered maximum):
    issue 24's held-out cells (base 20260024, 2,000 replications), issue 37's heavy-tailed
    cells (20260037, 2,000), issue 37's exploratory runs (raw 3700000 + r, r < 300), the
    tuning grid and its design cells (``SeedSequence([20240611, ...])``, 600 and 400
    replications, 1,000 here), the fix checks' grid (``SeedSequence([7, P, J, r])``) and
    the semi-synthetic calibration (raw 20260024)."""
    def word(*entropy):
        return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])

    seeds = {3700000 + r for r in range(300)} | {20260024}
    for base, cells in ((20260024, held_out_cells()), (20260037, heavy_tailed_cells())):
        for cell in cells:
            crc = zlib.crc32(cell.key.encode())
            seeds |= {word(base, crc, r) for r in range(2000)}
    for base in (20240611, 7):
        seeds |= {word(base, p, j, r) for p in (10, 30, 60, 100, 300)
                  for j in (2, 3, 5, 10, 30) for r in range(1000)}
    return seeds


def test_no_study_seed_equals_an_earlier_runs_seed():
    study_seeds = [cf.confirmatory_seed(c.key, r) for c in cf.confirmatory_cells()
                   for r in range(REGISTERED_REPS)]
    assert len(set(study_seeds)) == len(study_seeds)
    assert not set(study_seeds) & _earlier_seeds()
    # one 64-bit word each: none can equal a 32-bit seed of an earlier run
    assert min(study_seeds) >= 2**32
    assert cf.CONFIRMATORY_SEED not in (20260024, 20260037, 20240611)


def test_cells_are_every_registered_cell_and_the_new_ones():
    keys = [c.key for c in cf.confirmatory_cells()]
    earlier = [c.key for c in (*held_out_cells(), *heavy_tailed_cells())]
    assert keys == [*earlier, "N-prd", "N-qlora"]
    assert {c.seed for c in cf.confirmatory_cells()} == {cf.CONFIRMATORY_SEED}
    limits = {c.key: c.rule_simultaneous for c in cf.confirmatory_cells()}
    assert {limits[c.key] for c in heavy_tailed_cells()} == {90.0}
    assert {limits[c.key] for c in held_out_cells()} == {92.0}


def _random_log(rng, n_models=5, n_prompts=7, n_judges=3, n_rows=90):
    first = rng.integers(0, n_models, n_rows)
    second = (first + rng.integers(1, n_models, n_rows)) % n_models
    frame = pd.DataFrame({
        "prompt_id": [f"p{i}" for i in rng.integers(0, n_prompts, n_rows)],
        "judge_id": [f"j{i}" for i in rng.integers(0, n_judges, n_rows)],
        "model_a": [f"m{i}" for i in first], "model_b": [f"m{i}" for i in second],
        "outcome": rng.choice(["a", "b", "tie"], n_rows)})
    return read_comparisons(frame)


def _brute_force_bm(log, axis: str, model: int) -> float:
    """Bell-McCaffrey df of model's CR2 variance on one axis from dense matrices: the
    pair means' hat matrix H, each cluster's (I - H_gg)^(-1/2) (pseudo-inverse square
    root), the score's coefficients, and S_gh = w_g' w_h with w_g the cluster total's
    loading on the independent errors."""
    k = log.n_models
    low, high = np.minimum(log.model_a, log.model_b), np.maximum(log.model_a, log.model_b)
    pair = low * k + high
    same = pair[:, None] == pair[None, :]
    n_h = same.sum(1)
    hat = same / n_h[:, None]
    opponents = {int(b) for a, b in zip(low, high, strict=True) if a == model} | {
        int(a) for a, b in zip(low, high, strict=True) if b == model}
    coef = np.where((low == model) | (high == model), 1 / (len(opponents) * n_h), 0.0)
    codes = log.axes[axis].codes
    resid = np.eye(log.n_rows) - hat
    loadings = []
    for g in np.unique(codes):
        rows = np.flatnonzero(codes == g)
        values, vectors = np.linalg.eigh(np.eye(rows.size) - hat[np.ix_(rows, rows)])
        inv_sqrt = np.where(values > 1e-10, 1 / np.sqrt(np.clip(values, 1e-10, None)), 0.0)
        adjust = (vectors * inv_sqrt) @ vectors.T
        loadings.append(resid[rows].T @ adjust @ coef[rows])
    s = np.array(loadings) @ np.array(loadings).T
    g = log.axes[axis].n_clusters
    return float(np.clip(np.trace(s) ** 2 / (s**2).sum(), 1, g - 1))


@pytest.mark.parametrize("seed", [3, 11])
def test_bell_mccaffrey_df_matches_the_brute_force_matrices(seed):
    log = _random_log(np.random.default_rng(seed))
    for axes in (("prompt",), ("judge",), ("prompt", "judge")):
        got = cf.bm_df(log, axes)
        for model in range(log.n_models):
            expected = min(_brute_force_bm(log, axis, model) for axis in axes)
            assert got[model] == pytest.approx(expected, rel=1e-9)


def test_bell_mccaffrey_df_of_equal_clusters_is_the_cluster_count_less_one():
    """Two models, every prompt with the same m comparisons: S = (m - m^2 / n) I - ...,
    whose Satterthwaite df is G - 1 exactly (the centring removes one)."""
    g, m = 12, 4
    frame = pd.DataFrame({"prompt_id": np.repeat([f"p{i}" for i in range(g)], m),
                          "judge_id": "j", "model_a": "x", "model_b": "y",
                          "outcome": np.tile(["a", "b", "a", "tie"], g)})
    log = read_comparisons(frame)
    assert cf.bm_df(log, ("prompt",)) == pytest.approx([g - 1, g - 1])


def _tiny_source(seed: int):
    """A hand-made design (5 models, 7 prompts, 3 judges) in RealDesign's shape."""
    log = _random_log(np.random.default_rng(seed))
    return SimpleNamespace(log=log, rows=_log_rows(log), rare=("m4",))


def test_random_slopes_truth_matches_monte_carlo_over_its_effects():
    generator = RandomSlopes(_tiny_source(5))
    theta, phi = generator.attributes
    rng = np.random.default_rng(424242)  # not a study seed (a study seed is 64-bit)
    draws = 400_000
    slope = generator.slope_sd * rng.standard_normal(draws)
    skill = generator.skill_slope_sd * rng.standard_normal(draws)
    bias = generator.position_bias + generator.position_bias_sd * rng.standard_normal(draws)
    p_first = np.array([[expit((1 + slope) * (theta[a] - theta[b]) + skill * (phi[a] - phi[b])
                               + bias).mean() for b in range(theta.size)]
                        for a in range(theta.size)])
    rows = generator.source.rows
    k = theta.size
    counts = np.zeros((k, k))
    np.add.at(counts, (rows["first"], rows["second"]), 1)
    total = counts + counts.T
    share = np.divide(counts, total, out=np.full((k, k), 0.5), where=total > 0)
    expected = share * p_first + (1 - share) * (1 - p_first.T)
    assert np.abs(generator.psi - expected).max() < 4e-3


def test_random_slopes_draw_keeps_the_design_and_reports_truths():
    source = _tiny_source(8)
    sample = RandomSlopes(source).draw(777)  # not a study seed
    log = source.log
    assert len(sample.frame) == log.n_rows
    assert set(sample.frame["outcome"]) <= {"a", "b"}
    np.testing.assert_array_equal(sample.frame["model_a"].to_numpy(),
                                  log.models[log.model_a].astype(str))
    np.testing.assert_array_equal(sample.frame["prompt_id"].to_numpy(),
                                  np.asarray(log.axes["prompt"].labels)[log.axes["prompt"]
                                                                         .codes])
    assert set(sample.truth) == {"winrate", "bt"}
    assert sample.truth["bt"].mean() == pytest.approx(1000.0)
    assert sample.truth["winrate"].between(0, 1).all()
    again = RandomSlopes(source).draw(777)
    pd.testing.assert_frame_equal(sample.frame, again.frame)


def _summary_row(**overrides):
    row = {"rule_i": True, "cr1_covers": True, "bm_covers": False,
           "width_ratio_cr1": 1.10, "width_ratio_bm": 0.9}
    row.update(overrides)
    return row


def test_verdict_applies_the_width_rule_to_alternatives_that_cover():
    assert cf.verdict(_summary_row()) == {"rule_ii": True, "verdict": "pass"}
    assert cf.verdict(_summary_row(width_ratio_cr1=1.2))["verdict"] == "fail"
    # an alternative that does not meet rule (i) does not set the width bar
    assert cf.verdict(_summary_row(cr1_covers=False, width_ratio_cr1=2.0)) == {
        "rule_ii": "n/a", "verdict": "pass"}
    assert cf.verdict(_summary_row(rule_i=False))["verdict"] == "fail"


def test_rule_i_reads_the_monte_carlo_intervals_and_covers_the_point_estimates():
    assert cf.meets_rule_i(96.0, 98.0, 93.0, 92.0)
    assert not cf.meets_rule_i(97.5, 98.5, 99.0, 92.0)
    assert not cf.meets_rule_i(94.0, 96.0, 91.0, 92.0)
    assert cf.covers(95.0, 93.0, 92.0)
    assert not cf.covers(90.0, 99.0, 92.0)  # its MC interval might meet the band: not enough
    assert not cf.covers(95.0, 91.0, 92.0)


def test_committed_run_reports_every_cell_and_estimator_once():
    """The committed summary (paper/confirmatory/summary.csv) has one row per registered
    cell and estimator, each with the run's number of replications, and its verdicts
    follow from its own columns."""
    source = Path(__file__).resolve().parents[1] / "paper" / "confirmatory"
    summary = pd.read_csv(source / "summary.csv")
    expected = [(c.key, e) for c in cf.confirmatory_cells() for e in c.estimators]
    assert list(zip(summary.cell, summary.estimator, strict=True)) == expected
    reps = summary.reps + summary.dropped_no_estimate
    assert reps.nunique() == 1
    for row in summary.to_dict("records"):
        row["rule_ii"] = {"True": True, "False": False}.get(str(row["rule_ii"]), "n/a")
        assert cf.verdict(row)["verdict"] == row["verdict"]
