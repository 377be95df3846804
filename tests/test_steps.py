"""The analysis as typed steps (issue 35): fit -> plan -> variance -> inference, with the
level of the intervals read by the inference step only, and notes as values."""

from __future__ import annotations

import inspect
import sys
import warnings

import numpy as np
import pytest

from winrate import notes
from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.inference import analysis, covariance, plan
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.settings import Joint, MonteCarlo, Variance


@pytest.fixture(scope="module")
def log():
    return simulate_comparisons(SimulationDesign(n_models=6, n_prompts=60, n_judges=8),
                                seed=3).log


def _steps(log, cluster="prompt+judge"):
    source = plan.source_of(log, None, None)
    fitted = plan.fit(source, None, None, {})
    chosen = plan.resolve(source, fitted, cluster, Variance(), MonteCarlo())
    return fitted, chosen, covariance.estimate_variance(chosen, fitted, source)


def test_no_step_before_the_inference_takes_a_level():
    for step in (plan.source_of, plan.fit, plan.resolve, covariance.estimate_variance):
        assert "alpha" not in inspect.signature(step).parameters, step.__name__
    assert "alpha" in inspect.signature(analysis.infer).parameters


def _frames_with_alpha(call) -> set[str]:
    """The winrate functions that received a value named ``alpha`` while ``call`` ran."""
    seen = set()

    def profile(frame, event, _arg):
        code = frame.f_code
        if event == "call" and "alpha" in code.co_varnames[:code.co_argcount
                                                           + code.co_kwonlyargcount]:
            module = frame.f_globals.get("__name__", "")
            if module.startswith("winrate"):
                seen.add(f"{module}.{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("variance", [Variance(), Variance("bootstrap", bootstrap_reps=99)])
def test_following_alpha_from_analyze_reaches_only_the_inference_step(log, variance):
    with notes.gathered():
        reached = _frames_with_alpha(lambda: analyze(
            log, "judge", variance=variance, alpha=0.1,
            joint=Joint(simultaneous=True, ranks=True, pairwise=True),
            monte_carlo=MonteCarlo(n_draws=2_000)))
    inference = ("winrate.inference.", "winrate.variance.reference.")
    records = ("__init__",)  # a result records its level (Settings, WildBootstrapResult)
    wild_level = ("winrate.variance.resampling.at",  # WildDraws.at: the wild bootstrap's
                  "winrate.variance.resampling._warn_coarse_support")  # level, its note
    outside = {name for name in reached
               if not name.startswith(inference) and not name.endswith(records)
               and name not in ("winrate.analysis.analyze", *wild_level)}
    assert not outside, outside
    assert not any(name.startswith(("winrate.inference.plan.", "winrate.inference.covariance."))
                   for name in reached), reached
    assert "winrate.inference.analysis.infer" in reached


def test_one_variance_result_serves_every_level(log):
    fitted, chosen, found = _steps(log)
    for alpha in (0.01, 0.05, 0.2):
        step = analysis.infer(fitted, found, alpha, Joint(), MonteCarlo())
        whole = analyze(log, "prompt+judge", alpha=alpha)
        np.testing.assert_allclose(step.intervals.low, whole.intervals.low, rtol=1e-12)
        np.testing.assert_allclose(step.intervals.high, whole.intervals.high, rtol=1e-12)
        np.testing.assert_allclose(found.cov, whole.cov, rtol=1e-12)
    assert chosen.clustering == ("prompt", "judge") and found.method == "sandwich"


def test_notes_are_values_of_the_steps_and_given_once_at_the_boundary(log):
    fitted, chosen, found = _steps(log)
    assert "few-clusters" in found.notes.codes  # 8 judges
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = analyze(log, "prompt+judge")
    given = [w for w in caught if issubclass(w.category, WinrateWarning)]
    assert [w.message.args[0].code for w in given] == result.notes.codes
    assert all(w.filename == __file__ for w in given)  # the user's line
    with notes.gathered() as outer, warnings.catch_warnings(record=True) as none:
        warnings.simplefilter("always")
        again = analyze(log, "prompt+judge")
    assert not none and outer.codes == again.notes.codes


def test_the_plan_refuses_what_the_source_cannot_do(log):
    source = plan.source_of(log, None, None)
    fitted = plan.fit(source, None, None, {})
    with pytest.raises(WinrateInputError, match="cannot cluster by topic"):
        plan.resolve(source, fitted, "topic", Variance(), MonteCarlo())
    chosen = plan.resolve(source, fitted, "judge", Variance("jackknife"), MonteCarlo())
    assert chosen.method == "jackknife" and chosen.auto_reason == ""
    auto = plan.resolve(source, fitted, "judge", Variance(correction="none"), MonteCarlo())
    assert "correction none as requested" in auto.auto_reason and auto.correction == "none"
