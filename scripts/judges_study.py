"""Seeded simulation studies of the judge audit and the release diff (issue 34 acceptance).

1. Position bias: logs from :func:`winrate.io.simulate.simulate_comparisons` with a
   first-shown effect (``position_bias``) and crossed prompt and judge effects; the audit's
   first-shown coefficient (Bradley-Terry covariate, clustered by prompt+judge) and its
   95% interval. Its target is the pseudo-true coefficient, the Bradley-Terry fit of one
   very large log of the same design (the latent model is not a logit, so the logit
   coefficient is defined by the fit; White 1982, "Maximum likelihood estimation of
   misspecified models", Econometrica 50(1)).
2. Release diff, nothing changed: one log split by prompt (the first 3/4 of its prompts
   the old release, all of them the new one); the simultaneous 95% intervals of every
   model's change must cover 0 jointly.
3. Release diff, one model changed: the new release adds prompts on which model 0's
   ability is higher by ``delta``; the share of replications whose simultaneous interval
   of model 0's change excludes 0, against the power the diff's own SEs promise
   (:func:`winrate.planning.detection_power`, ``P(|Z + mu / se| > c)`` averaged over the
   replications' SE and simultaneous critical value ``c``, with ``mu`` the mean
   estimated change: the true change of the estimand, which the shared rows dilute).

Writes its table into ``docs/judges.md`` between the ``study:judges`` markers. Usage:
``python scripts/judges_study.py [--reps 400]`` (about 5 minutes on one core).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from winrate.diff import diff_releases, split_since
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.judges import POSITION, covariate_effects
from winrate.planning import detection_power

PAGE = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
MARKERS = ("<!-- study:judges -->\n", "<!-- /study:judges -->")
POSITION_DESIGN = SimulationDesign(n_models=6, n_prompts=80, n_judges=12, position_bias=0.3,
                                   position_bias_sd=0.1)
DIFF_DESIGN = SimulationDesign(n_models=6, n_prompts=160, n_judges=12)
OLD_SHARE = 0.75
DELTA = 0.9  # model 0's ability gain on the new prompts (latent units)


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


def _split(log: ComparisonLog, keep: np.ndarray) -> ComparisonLog:
    """The rows ``keep`` (through :func:`winrate.diff.split_since` of a made-up date)."""
    labels = np.where(keep, "2024-01-01", "2024-02-01")
    axes = {**log.axes, "time": ClusterAxis(*_codes(labels))}
    timed = ComparisonLog(log.model_a, log.model_b, log.score, log.models, axes)
    return split_since(timed, "time", "2024-01-15")[0]


def _codes(labels: np.ndarray):
    uniques, codes = np.unique(labels, return_inverse=True)
    return codes, uniques.astype(object)


def nothing_changed(reps: int) -> dict:
    covered = 0
    for seed in range(reps):
        log = simulate_comparisons(DIFF_DESIGN, seed=seed).log
        old = _split(log, log.axes["prompt"].codes < OLD_SHARE * DIFF_DESIGN.n_prompts)
        found = diff_releases(old, log, cluster="prompt+judge", seed=seed)
        covered += bool(((found.sim_low <= 0) & (found.sim_high >= 0)).all())
    return {"coverage": covered / reps, "reps": reps}


def one_changed(reps: int) -> dict:
    n_old = int(OLD_SHARE * DIFF_DESIGN.n_prompts)
    old_design = SimulationDesign(**{**DIFF_DESIGN.__dict__, "n_prompts": n_old})
    new_design = SimulationDesign(**{**DIFF_DESIGN.__dict__,
                                     "n_prompts": DIFF_DESIGN.n_prompts - n_old})
    theta = np.linspace(DIFF_DESIGN.ability_sd * 1.5, -DIFF_DESIGN.ability_sd * 1.5,
                        DIFF_DESIGN.n_models)
    gained = theta + np.eye(DIFF_DESIGN.n_models)[0] * DELTA
    detected, changes, ses, crits = 0, [], [], []
    for seed in range(reps):
        old = simulate_comparisons(old_design, seed=seed, abilities=theta).log
        extra = simulate_comparisons(new_design, seed=10**6 + seed, abilities=gained).log
        new = _joined(old, extra)
        found = diff_releases(old, new, cluster="prompt+judge", seed=seed)
        index = list(found.models).index(str(old.models[0]))
        detected += bool(found.sim_low[index] > 0 or found.sim_high[index] < 0)
        changes.append(found.change[index])
        ses.append(found.se[index])
        crits.append((found.sim_high[index] - found.change[index]) / found.se[index])
    mu, ses, crits = float(np.mean(changes)), np.array(ses), np.array(crits)
    predicted = np.mean([detection_power(mu, se, crit) for se, crit in zip(ses, crits,
                                                                          strict=True)])
    return {"detected": detected / reps, "predicted": float(predicted), "reps": reps,
            "mean_change": mu, "mean_se": float(ses.mean())}


def _joined(old: ComparisonLog, extra: ComparisonLog) -> ComparisonLog:
    """The old log and the extra one's rows on new prompts (the same judges' labels)."""
    prompt = np.concatenate([old.axes["prompt"].labels[old.axes["prompt"].codes].astype(str),
                             np.char.add("new-", extra.axes["prompt"].labels[
                                 extra.axes["prompt"].codes].astype(str))])
    judge = np.concatenate([old.axes["judge"].labels[old.axes["judge"].codes],
                            extra.axes["judge"].labels[extra.axes["judge"].codes]])
    log = ComparisonLog.from_arrays(np.concatenate([old.model_a, extra.model_a]),
                                    np.concatenate([old.model_b, extra.model_b]),
                                    np.concatenate([old.score, extra.score]),
                                    models=old.models, prompt=prompt, judge=judge)
    return log


def mc_se(p: float, reps: int) -> float:
    return float(np.sqrt(p * (1 - p) / reps))


def report(position: dict, unchanged: dict, changed: dict, seconds: float) -> str:
    lines = [
        "| study | replications | result | Monte-Carlo SE |",
        "|---|---|---|---|",
        f"| position bias: 95% CI covers the pseudo-true first-shown coefficient "
        f"({position['truth']:.4f} logits; mean estimate {position['mean']:.4f}) | "
        f"{position['reps']} | {100 * position['coverage']:.1f}% | "
        f"{100 * mc_se(position['coverage'], position['reps']):.1f} points |",
        f"| diff, nothing changed: simultaneous 95% intervals of all 6 changes cover 0 | "
        f"{unchanged['reps']} | {100 * unchanged['coverage']:.1f}% | "
        f"{100 * mc_se(unchanged['coverage'], unchanged['reps']):.1f} points |",
        f"| diff, one model gained {DELTA:g} on the new prompts: detected (simultaneous) | "
        f"{changed['reps']} | {100 * changed['detected']:.1f}% (predicted from the diff's "
        f"SE: {100 * changed['predicted']:.1f}%; mean change {changed['mean_change']:.1f}, "
        f"mean SE {changed['mean_se']:.1f} Elo) | "
        f"{100 * mc_se(changed['detected'], changed['reps']):.1f} points |",
        "",
        f"Designs (`winrate.SimulationDesign`): position bias {_short(POSITION_DESIGN)}; "
        f"diff {_short(DIFF_DESIGN)}, the old release the first {OLD_SHARE:.0%} of the "
        f"prompts, clustered by prompt+judge. Run time {seconds / 60:.1f} minutes.",
    ]
    return "\n".join(lines) + "\n"


def _short(design: SimulationDesign) -> str:
    """The fields of ``design`` that differ from the defaults."""
    default = SimulationDesign().__dict__
    return ", ".join(f"{k}={v}" for k, v in design.__dict__.items() if default[k] != v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        position = position_study(args.reps)
        unchanged = nothing_changed(args.reps)
        changed = one_changed(args.reps)
    text = report(position, unchanged, changed, time.time() - start)
    page = PAGE.read_text()
    start = page.index(MARKERS[0]) + len(MARKERS[0])
    PAGE.write_text(page[:start] + "\n" + text + "\n" + page[page.index(MARKERS[1]):])
    print(text)


if __name__ == "__main__":
    main()
