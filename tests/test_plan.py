"""``winrate plan`` (issue 34, part 2): the variance components reproduce the analysis'
covariance, the projection's scaling laws, the closed-form multipliers reach the power they
promise on the projected covariance, and a seeded simulation of the planned design (the
small version of scripts/plan_study.py) reaches the target power within Monte-Carlo error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.script_modules import load_script
from winrate.analysis import analyze
from winrate.errors import WinrateInputError
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.planning import components, detection_power, plan
from winrate.settings import Variance

SANDWICH = Variance("sandwich", "cr1")


def pilot(cluster: str, seed: int = 0, n_prompts: int = 150):
    design = SimulationDesign(n_models=5, n_prompts=n_prompts, n_judges=20)
    log = simulate_comparisons(design, seed=seed).log
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analyze(log, cluster=cluster, variance=SANDWICH)


@pytest.mark.parametrize("cluster", ["prompt", "prompt+judge"])
def test_components_add_up_to_the_analysis_covariance(cluster):
    result = pilot(cluster)
    parts = components(result)
    np.testing.assert_allclose(parts.projected(), result.cov, atol=1e-15)
    assert set(parts.parts) == set(cluster.split("+"))


def test_one_axis_scales_as_one_over_the_prompts():
    result = pilot("prompt")
    parts = components(result)
    np.testing.assert_allclose(parts.projected(prompts=4.0), result.cov / 4, atol=1e-15)
    # more comparisons per prompt shrink only the residual (naive) part
    shrunk = parts.projected(comparisons=1e6)
    np.testing.assert_allclose(shrunk, parts.parts["prompt"], atol=1e-9)


def test_planned_multipliers_reach_the_power_on_the_projected_covariance():
    result = pilot("prompt+judge")
    found = plan(result, top=3, power=0.8)
    parts = found.components
    index = list(result.models.astype(str))
    for requirement in found.requirements:
        hi, lo = (index.index(m) for m in requirement.name.split(" - "))
        contrast = np.eye(len(index))[hi] - np.eye(len(index))[lo]
        for lever, scale in (("prompts", {"prompts": 1}), ("judges", {"judges": 1}),
                             ("comparisons", {"comparisons": 1}),
                             ("prompts and judges", {"prompts": 1, "judges": 1})):
            m = requirement.multipliers[lever]
            if not np.isfinite(m):
                continue
            cov = parts.projected(**{k: m for k in scale}, repair=False)
            se = np.sqrt(contrast @ cov @ contrast)
            power = detection_power(requirement.effect, se, requirement.critical_value)
            # the closed form drops the far tail: at least the power, barely more
            assert 0.8 <= power < 0.8 + 1e-3, (requirement.name, lever, power)


def test_simultaneous_plans_use_a_larger_critical_value_and_bad_input_is_one_line():
    result = pilot("prompt")
    single = plan(result, top=4)
    joint = plan(result, top=4, simultaneous=True)
    assert joint.requirements[0].critical_value > single.requirements[0].critical_value
    assert joint.requirements[0].multipliers["prompts"] > single.requirements[0].multipliers[
        "prompts"]
    with pytest.raises(WinrateInputError, match="delta"):
        plan(result, models=("model-00", "model-01"))
    with pytest.raises(WinrateInputError, match="not on the leaderboard"):
        plan(result, models=("model-00", "nope"), delta=0.1)
    doc = joint.to_dict()
    assert {"requirements", "projection", "pilot", "power"} <= set(doc)
    assert "Projected at more prompts" in str(joint.summary())


def test_the_planned_design_reaches_the_target_power_in_simulation():
    study = load_script("plan_study", "plan_study_for_tests")
    design, cluster = study.DESIGNS["prompts only (clustered by prompt)"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prompts, delta, found = study.planned_prompts(design, cluster)
        reps = 300
        power = study.simulated_power(design, cluster, prompts, reps)
    assert found.requirements[0].effect == delta
    mc_se = np.sqrt(0.8 * 0.2 / reps)
    assert abs(power - 0.8) < 3 * mc_se, power


def test_a_lever_that_cannot_reach_the_power_is_a_coded_note():
    result = pilot("prompt+judge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = plan(result, models=("model-00", "model-01"), delta=1e-3)
    (requirement,) = found.requirements
    assert np.isinf(requirement.multipliers["prompts"])
    assert np.isfinite(requirement.multipliers["prompts and judges"])
    assert [note.code for note in found.notes] == ["plan-unreachable"]


def test_plan_command(tmp_path, capsys):
    import json

    from winrate.cli import main
    from winrate.examples import write_examples

    write_examples(tmp_path)
    out = tmp_path / "plan.json"
    assert main(["plan", str(tmp_path / "example.csv"), "--top", "3", "--json",
                 str(out)]) == 0
    assert "Needed for 80% power" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["requirements"]) == 2


def test_an_extensions_change_keeps_the_prompt_and_residual_parts_of_the_added_prompts():
    """``V(old) - V(new)``: with one axis ``V (1/old - 1/new)``; with prompt and judge axes
    the judge part (the same judges in both releases) drops out."""
    one = components(pilot("prompt"))
    np.testing.assert_allclose(one.extension_change(4 / 3), one.projected() / 4, atol=1e-15)
    two = components(pilot("prompt+judge"))
    kept = (two.parts["prompt"] + two.residual) * (1 / 2 - 1 / 6)
    assert np.linalg.eigvalsh(kept).min() > -1e-15  # PSD to rounding: the repair is nil
    np.testing.assert_allclose(two.extension_change(6.0, 2.0), kept, atol=1e-15)
    with pytest.raises(WinrateInputError, match="new > old"):
        two.extension_change(1.0)


def test_change_power_is_the_detection_power_of_the_centred_change():
    from winrate.inference.joint import simultaneous_intervals
    from winrate.planning import change_power

    result = pilot("prompt")
    k = len(result.models)
    centre = np.eye(k) - 1 / k if not result.leaderboard.scale.bounded else np.eye(k)
    cov = centre @ (result.cov * (1 - 1 / 2)) @ centre
    # one axis: the diff's variance is its prompt term alone, G - 1 = 2 x 150 - 1 df
    crit = simultaneous_intervals(np.zeros(k), cov, 0.05, df=299).critical_value
    expected = detection_power(0.05, np.sqrt(cov[1, 1]), crit)
    assert change_power(result, "model-01", 0.05, 2.0) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(WinrateInputError, match="not on the leaderboard"):
        change_power(result, "nobody", 0.05, 2.0)


def test_planned_change_df_with_judges_counts_the_judge_terms_share():
    from winrate.planning import planned_change_df

    parts = components(pilot("prompt+judge"))
    contrast = np.eye(5)[[1]] - 1 / 5
    v = contrast[0] @ (parts.parts["prompt"] + parts.residual) @ contrast[0]
    r = contrast[0] @ parts.residual @ contrast[0]
    expected = 1 / (1 / (2 * 150 - 1) + (r / v) ** 2 / (20 - 1))
    assert planned_change_df(parts, contrast, 2.0)[0] == pytest.approx(expected, rel=1e-12)
