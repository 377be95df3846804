"""Seeded simulation study of ``winrate diff`` (issue 34 acceptance): the simultaneous
intervals of the changes cover 0 when nothing changed, and a model that changed is
detected at the power ``winrate plan`` promises.

Each replication draws one log of the design (:func:`winrate.io.simulate.simulate_comparisons`,
Bradley-Terry fits, clustered by prompt+judge); the old release is its first
:data:`OLD_PROMPTS` prompts, the new release all :data:`DESIGN` prompts (the old release's
rows and more, judged by the same judges).

1. Nothing changed: the abilities are the same on every prompt; the share of replications
   in which the simultaneous 95% intervals of all the models' changes cover 0 together.
2. One model changed: model-02 (:data:`CHANGED`, in the middle of the abilities) is
   ``DELTA`` (latent units) stronger on the new prompts. The log is drawn twice with the
   same seed, with and without the gain, and each prompt's rows are taken from the draw
   its release calls for, so the judges, pairs, prompts' responses and noise are the same
   and only model-02's ability differs. Detected: the simultaneous interval of model-02's
   change excludes 0. (The plan reads the variance of the releases as they were; a model
   that changes much moves its win probabilities and so its variance, which the plan
   cannot know: the study's change is moderate, as a power analysis assumes.)

   The planned power is :func:`winrate.planning.change_power`: the change's covariance
   from ``winrate plan``'s variance components (``V(old) - V(new)``,
   :meth:`winrate.planning.Components.extension_change`), centred as the diff centres the
   Elo scale, at the max-|T| critical value over the changes. Two plans: from one pilot
   log of :data:`PILOT_PROMPTS` prompts of the old design (scaled to the releases' sizes),
   and from each replication's own old release (what ``winrate plan old.csv`` would
   say; averaged). The change to detect is the pseudo-true change of the estimand: the
   centred change of the Bradley-Terry fits of one log :data:`BIG` times the design's
   prompts and judges (White 1982: the fit of a misspecified model defines its target).

Writes its table into ``docs/judges.md`` between the ``study:diff`` markers (with
``--reps`` replications; the Monte-Carlo SE of a share p is ``sqrt(p (1 - p) / reps)``).
Usage: ``nice -n 19 python scripts/diff_study.py [--reps 1000]`` (about 15 minutes on one
core).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from study_pages import mc_se, short_design, write_block

from winrate.analysis import analyze
from winrate.diff import diff_releases, split_since
from winrate.estimators import fit
from winrate.inference.joint import simultaneous_intervals
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.planning import change_power
from winrate.progress import bar
from winrate.settings import Variance

PAGE = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
MARKERS = ("<!-- study:diff -->\n", "<!-- /study:diff -->")
DESIGN = SimulationDesign(n_models=6, n_prompts=480, n_judges=12)
OLD_PROMPTS = 360
DELTA = 0.65
CHANGED = 2  # the model that changes: model-02, of ability 0.15 (the middle of the six)
THETA = np.linspace(1.5 * DESIGN.ability_sd, -1.5 * DESIGN.ability_sd, DESIGN.n_models)
PILOT_PROMPTS = 2000
BIG = 100
CLUSTER = "prompt+judge"
SANDWICH = Variance("sandwich", "cr1")


def release_logs(design: SimulationDesign, old_prompts: int, delta: float,
                 seed: int) -> tuple[ComparisonLog, ComparisonLog]:
    """(old release, new release) of one draw of ``design`` (module doc): the new release
    is every prompt, model :data:`CHANGED` ``delta`` stronger on the prompts from
    ``old_prompts`` on;
    the old release its first ``old_prompts`` prompts (cut by
    :func:`winrate.diff.split_since` on a made-up date)."""
    base = simulate_comparisons(design, seed=seed, abilities=THETA).log
    prompt = base.axes["prompt"]
    late = prompt.labels[prompt.codes].astype(int) >= old_prompts
    score = base.score
    if delta:
        gained = simulate_comparisons(design, seed=seed,
                                      abilities=THETA + delta * np.eye(len(THETA))[CHANGED]).log
        score = np.where(late, gained.score, base.score)
    dates = np.array(["2024-01-01", "2024-02-01"], dtype=object)
    axes = {**base.axes, "time": ClusterAxis(late.astype(np.int64), dates)}
    timed = ComparisonLog(base.model_a, base.model_b, score, base.models, axes)
    return split_since(timed, "time", "2024-01-15")


def centred_change(old: ComparisonLog, new: ComparisonLog) -> np.ndarray:
    """``M (S_new - S_old)``, ``M = I - 11'/K``: the Bradley-Terry ratings' change centred
    on the models, as the diff centres the Elo scale."""
    change = fit(new, "bt").scores - fit(old, "bt").scores
    return change - change.mean()


def pseudo_true_change(delta: float, seed: int = 10_000) -> float:
    """The changed model's centred change in one log :data:`BIG` times the design's prompts and
    judges (and old prompts)."""
    big = SimulationDesign(**{**DESIGN.__dict__, "n_prompts": BIG * DESIGN.n_prompts,
                              "n_judges": BIG * DESIGN.n_judges})
    old, new = release_logs(big, BIG * OLD_PROMPTS, delta, seed)
    return float(centred_change(old, new)[CHANGED])


def pilot_power(change: float, seed: int = 20_000) -> float:
    """The power planned from one pilot of :data:`PILOT_PROMPTS` prompts of the old design:
    the releases are ``OLD_PROMPTS / PILOT_PROMPTS`` and ``n_prompts / PILOT_PROMPTS``
    times its prompts."""
    design = SimulationDesign(**{**DESIGN.__dict__, "n_prompts": PILOT_PROMPTS})
    pilot = simulate_comparisons(design, seed=seed, abilities=THETA).log
    result = analyze(pilot, cluster=CLUSTER, model="bt", variance=SANDWICH)
    return change_power(result, _name(CHANGED), change, DESIGN.n_prompts / PILOT_PROMPTS,
                        OLD_PROMPTS / PILOT_PROMPTS)


def nothing_changed(reps: int, first_seed: int = 0) -> dict:
    """The share of ``reps`` release pairs without a change whose simultaneous intervals
    of every model's change all cover 0: as the diff gives them (t with Satterthwaite's
    df), and, for comparison, with a normal reference and with the few-cluster reference
    t(G - 1), G the smallest axis' clusters (Cameron & Miller 2015, sec. VI.C)."""
    covered = dict.fromkeys(("diff", "normal", "t"), 0)
    for seed in bar(range(first_seed, first_seed + reps), desc="nothing changed"):
        old, new = release_logs(DESIGN, OLD_PROMPTS, 0.0, seed)
        found = diff_releases(old, new, cluster=CLUSTER, seed=seed)
        few = min(new.axes[axis].n_clusters for axis in CLUSTER.split("+")) - 1
        for name, df in (("normal", None), ("t", few)):
            other = simultaneous_intervals(found.change, found.cov, df=df, seed=seed)
            covered[name] += _covers(other.low, other.high)
        covered["diff"] += _covers(found.sim_low, found.sim_high)
    return {"coverage": covered["diff"] / reps, "coverage_normal": covered["normal"] / reps,
            "coverage_t": covered["t"] / reps, "reps": reps}


def _covers(low: np.ndarray, high: np.ndarray) -> bool:
    return bool(((low <= 0) & (high >= 0)).all())


def one_changed(reps: int, change: float, first_seed: int = 0) -> dict:
    """The share of ``reps`` release pairs in which the changed model's gain is detected, and the
    mean power each replication's old release plans for the pseudo-true ``change``."""
    detected, planned, changes = 0, [], []
    for seed in bar(range(first_seed, first_seed + reps), desc="one model changed"):
        found = diff_releases(*release_logs(DESIGN, OLD_PROMPTS, DELTA, seed),
                              cluster=CLUSTER, seed=seed)
        at = list(found.models).index(_name(CHANGED))
        detected += bool(found.sim_low[at] > 0 or found.sim_high[at] < 0)
        changes.append(found.change[at])
        planned.append(change_power(found.old_fit, _name(CHANGED), change,
                                    DESIGN.n_prompts / OLD_PROMPTS, seed=seed))
    return {"detected": detected / reps, "own_plan": float(np.mean(planned)),
            "mean_change": float(np.mean(changes)), "reps": reps}


def _name(model: int) -> str:
    return f"model-{model:02d}"


def report(unchanged: dict, changed: dict, truth: float, planned: float,
           seconds: float) -> str:
    reps = changed["reps"]
    gap = changed["detected"] - planned
    lines = [
        "| study | replications | result | Monte-Carlo SE |",
        "|---|---|---|---|",
        f"| nothing changed: the simultaneous 95% intervals of all {DESIGN.n_models} "
        f"changes cover 0 (t, Satterthwaite df) | {unchanged['reps']} | "
        f"{100 * unchanged['coverage']:.1f}% | "
        f"{100 * mc_se(unchanged['coverage'], unchanged['reps']):.1f} points |",
        *(f"| the same with {label} (not what the diff does) | {unchanged['reps']} | "
          f"{100 * unchanged[key]:.1f}% | {100 * mc_se(unchanged[key], unchanged['reps']):.1f}"
          " points |" for key, label in (
              ("coverage_normal", "a normal reference"),
              ("coverage_t", f"t(G - 1), G = {DESIGN.n_judges} judges"))),
        f"| {_name(CHANGED)} {DELTA:g} stronger on the new prompts: detected (simultaneous) | "
        f"{reps} | {100 * changed['detected']:.1f}% | "
        f"{100 * mc_se(changed['detected'], reps):.1f} points |",
        f"| power planned by `winrate plan`'s components of a {PILOT_PROMPTS:,}-prompt "
        f"pilot | | {100 * planned:.1f}% (simulated {100 * gap:+.1f} points) | |",
        f"| power planned from each replication's own old release (mean) | | "
        f"{100 * changed['own_plan']:.1f}% | |",
        "",
        f"Design (`winrate.SimulationDesign`): {short_design(DESIGN)}; the old release the first "
        f"{OLD_PROMPTS} prompts, the new one all {DESIGN.n_prompts}; Bradley-Terry, "
        f"clustered by {CLUSTER}. The change to detect is the pseudo-true centred change "
        f"of {_name(CHANGED)}, {truth:.1f} Elo (the fits of one log {BIG} times the prompts and "
        f"judges; mean estimated change {changed['mean_change']:.1f}). Run time "
        f"{seconds / 60:.1f} minutes.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    args = parser.parse_args()
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = pseudo_true_change(DELTA)
        planned = pilot_power(truth)
        unchanged = nothing_changed(args.reps)
        changed = one_changed(args.reps, truth)
    text = report(unchanged, changed, truth, planned, time.time() - start)
    write_block(PAGE, MARKERS, text)
    print(text)


if __name__ == "__main__":
    main()
