"""Seeded simulation study of the judge audit's position bias (issue 34 acceptance); the
release diff's study is scripts/diff_study.py.

Logs from :func:`winrate.io.simulate.simulate_comparisons` with a first-shown effect
(``position_bias``) and crossed prompt and judge effects; the audit's first-shown
coefficient (Bradley-Terry covariate, clustered by prompt+judge) and its 95% interval. Its
target is the pseudo-true coefficient, the Bradley-Terry fit of one very large log of the
same design (the latent model is not a logit, so the logit coefficient is defined by the
fit; White 1982, "Maximum likelihood estimation of misspecified models", Econometrica
50(1)).

Writes its table into ``docs/judges.md`` between the ``study:judges`` markers. Usage:
``nice -n 19 python scripts/judges_study.py [--reps 400]`` (a few minutes on one core).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from study_pages import mc_se, short_design, write_block

from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.judges import POSITION, covariate_effects

PAGE = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
MARKERS = ("<!-- study:judges -->\n", "<!-- /study:judges -->")
POSITION_DESIGN = SimulationDesign(n_models=6, n_prompts=80, n_judges=12, position_bias=0.3,
                                   position_bias_sd=0.1)


def pseudo_true_position(seed: int = 10_000) -> float:
    """The first-shown coefficient of one log 200 times the design's prompts and 20 times
    its judges."""
    big = simulate_comparisons(SimulationDesign(
        **{**POSITION_DESIGN.__dict__, "n_prompts": 200 * POSITION_DESIGN.n_prompts,
           "n_judges": 20 * POSITION_DESIGN.n_judges}), seed=seed).log
    effects, _ = covariate_effects(big, {POSITION: np.ones(big.n_rows)}, "prompt")
    return effects[0].logit


def position_study(reps: int) -> dict:
    truth = pseudo_true_position()
    covered, estimates = 0, []
    for seed in range(reps):
        log = simulate_comparisons(POSITION_DESIGN, seed=seed).log
        effect = covariate_effects(log, {POSITION: np.ones(log.n_rows)}, "prompt+judge")[0][0]
        covered += effect.low <= truth <= effect.high
        estimates.append(effect.logit)
    return {"truth": truth, "coverage": covered / reps, "mean": float(np.mean(estimates)),
            "reps": reps}


def report(position: dict, seconds: float) -> str:
    lines = [
        "| study | replications | result | Monte-Carlo SE |",
        "|---|---|---|---|",
        f"| position bias: 95% CI covers the pseudo-true first-shown coefficient "
        f"({position['truth']:.4f} logits; mean estimate {position['mean']:.4f}) | "
        f"{position['reps']} | {100 * position['coverage']:.1f}% | "
        f"{100 * mc_se(position['coverage'], position['reps']):.1f} points |",
        "",
        f"Design (`winrate.SimulationDesign`): {short_design(POSITION_DESIGN)}, clustered by "
        f"prompt+judge. Run time {seconds / 60:.1f} minutes.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        position = position_study(args.reps)
    text = report(position, time.time() - start)
    write_block(PAGE, MARKERS, text)
    print(text)


if __name__ == "__main__":
    main()
