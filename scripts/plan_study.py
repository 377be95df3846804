"""Seeded study of ``winrate plan``: does the planned design reach the promised power?

For each design: one large pilot log (:func:`winrate.io.simulate.simulate_comparisons`)
is analysed (sandwich, CR1) and :func:`winrate.planning.plan` gives the number of prompts
(at the design's judges and comparisons per prompt) needed to detect the population
difference of two adjacent models with 80% power at level 0.05. Logs of the planned size
are then drawn from the same design, each fitted and tested (two-sided Wald test of the
contrast with its clustered SE); the share of rejections is the simulated power, with its
Monte-Carlo SE ``sqrt(p (1 - p) / reps)``. The population difference is the simulation's
own (``SimulatedLog.true_scores``, the half-tie win rate against uniform opponents).

Writes its table into ``docs/judges.md`` between the ``study:plan`` markers. Usage:
``python scripts/plan_study.py [--reps 2000]`` (about a minute).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import ndtri
from study_pages import write_block

from winrate.analysis import analyze
from winrate.estimators import fit
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.planning import plan
from winrate.settings import Variance
from winrate.variance.sandwich import multiway_cluster_cov

PAGE = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
MARKERS = ("<!-- study:plan -->\n", "<!-- /study:plan -->")
DESIGNS = {
    "prompts only (clustered by prompt)": (
        SimulationDesign(n_models=4, n_judges=50, judge_sd=0.0, missing_pair_share=0.0),
        "prompt"),
    "prompts and judges (clustered by prompt+judge)": (
        SimulationDesign(n_models=4, n_judges=40, judge_sd=0.15, missing_pair_share=0.0,
                         response_sd=0.8), "prompt+judge"),
}
PILOT_PROMPTS = 2000
POWER = 0.8
PAIR = (1, 2)


def planned_prompts(design: SimulationDesign, cluster: str, seed: int = 0):
    """The pilot's plan: (prompts needed, the population difference, the plan)."""
    pilot = simulate_comparisons(SimulationDesign(**{**design.__dict__,
                                                     "n_prompts": PILOT_PROMPTS}), seed=seed)
    result = analyze(pilot.log, cluster=cluster, variance=Variance("sandwich", "cr1"))
    delta = float(pilot.true_scores[PAIR[0]] - pilot.true_scores[PAIR[1]])
    found = plan(result, models=tuple(result.models[list(PAIR)]), delta=delta, power=POWER)
    return int(found.requirements[0].needed["prompts"]), delta, found


def simulated_power(design: SimulationDesign, cluster: str, prompts: int, reps: int,
                    seed: int = 1) -> float:
    """The share of ``reps`` logs of ``prompts`` prompts whose Wald test of the pair's
    difference rejects at level 0.05."""
    crit = float(ndtri(0.975))
    sized = SimulationDesign(**{**design.__dict__, "n_prompts": prompts})
    rejected = 0
    for rep in range(reps):
        log = simulate_comparisons(sized, seed=seed + rep).log
        board = fit(log)
        groups = [log.axes[axis].codes for axis in cluster.split("+")]
        cov = multiway_cluster_cov(board.influence, groups, "cr1", bread=board.bread).cov
        i, j = PAIR
        se = np.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j])
        rejected += abs(board.scores[i] - board.scores[j]) / se > crit
    return rejected / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    start = time.time()
    rows = ["| design | pilot prompts | planned prompts | target power | simulated power | "
            "Monte-Carlo SE |", "|---|---|---|---|---|---|"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (design, cluster) in DESIGNS.items():
            prompts, _, _ = planned_prompts(design, cluster)
            power = simulated_power(design, cluster, prompts, args.reps)
            se = np.sqrt(power * (1 - power) / args.reps)
            rows.append(f"| {name} | {PILOT_PROMPTS} | {prompts} | {POWER:.0%} | "
                        f"{100 * power:.1f}% | {100 * se:.1f} points |")
    rows.append("")
    rows.append(f"{args.reps} replications per design, seeded; run time "
                f"{(time.time() - start) / 60:.1f} minutes.")
    text = "\n".join(rows) + "\n"
    write_block(PAGE, MARKERS, text)
    print(text)


if __name__ == "__main__":
    main()
