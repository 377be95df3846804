"""Joint coverage of the family intervals of ``analyze_by(..., family=True)`` (one board per
category, all covered at once, estimated jointly), by seeded simulation.

Each replication draws a log of ``categories`` categories, each with its own ``prompts``
prompts and ``per_prompt`` comparisons of three models per prompt; a prompt shifts the
odds of the lower-named model of each pair by a normal effect (sd ``effect_sd``, logit
scale), symmetric in sign, so every pair's true win probability over prompts is 1/2 and
every model's true half-tie win rate is 1/2, while comparisons of one prompt are
correlated (the clustering matters). A replication covers when every family interval
of every board (categories x models) contains 1/2. Prompts never span categories.

``--judges J`` adds J judges shared by every category: each comparison is judged by one
drawn at random, whose effect (sd ``judge_sd``) shifts the odds as a prompt's does in
every category alike, so the categories' estimates are correlated through the judges;
the log is clustered by prompt + judge, and only the family's joint covariance
(:mod:`winrate.inference.family`) accounts for that correlation.

The log is built as a :class:`winrate.io.logs.ComparisonLog` directly (no reading), and
the max-|T| critical values use :data:`DRAWS` Monte-Carlo draws (their MC SE about 0.4%
of the value), which keeps a replication near 60 ms.

Usage: ``python scripts/family_coverage.py [--reps 400] [--seed 20260033] [--judges 0]``;
prints the coverage with its binomial standard error and writes
``scripts/family_coverage.json`` (``--judges``: ``scripts/family_coverage_judges.json``).
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from winrate.by_category import analyze_by
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.progress import bar
from winrate.settings import MonteCarlo

MODELS = np.array(["a", "b", "c"])
#: Monte-Carlo draws of each critical value (module doc)
DRAWS = 10_000


def simulated_log(rng: np.random.Generator, categories: int, prompts: int, per_prompt: int,
                  effect_sd: float, judges: int = 0, judge_sd: float = 0.0):
    """One replication's log (module docstring)."""
    n = categories * prompts * per_prompt
    prompt = np.repeat(np.arange(categories * prompts), per_prompt)
    effect = rng.normal(0.0, effect_sd, categories * prompts)[prompt]
    first = rng.integers(0, 3, n)
    second = (first + rng.integers(1, 3, n)) % 3
    axes = {"prompt": _axis(prompt), "category": _axis(prompt // prompts)}
    if judges:
        judge = rng.integers(0, judges, n)
        effect = effect + rng.normal(0.0, judge_sd, judges)[judge]
        axes["judge"] = _axis(judge)
    sign = np.where(first < second, 1.0, -1.0)
    wins = rng.random(n) < 1 / (1 + np.exp(-effect * sign))
    return ComparisonLog(first.astype(np.int32), second.astype(np.int32),
                         wins.astype(float), MODELS.astype(object), axes)


def _axis(codes: np.ndarray) -> ClusterAxis:
    """The axis of integer ``codes`` 0..G-1, labelled by their text."""
    return ClusterAxis(codes.astype(np.int32),
                       np.arange(codes.max() + 1).astype(str).astype(object))


def covered(boards) -> bool:
    """Whether every family interval contains the true win rate 1/2."""
    family = boards.family
    return all(((family.low[label] <= 0.5) & (0.5 <= family.high[label])).all()
               for label in boards.boards)


def coverage(reps: int, seed: int, categories: int = 5, prompts: int = 40,
             per_prompt: int = 4, effect_sd: float = 0.8, progress: bool = True,
             judges: int = 0, judge_sd: float = 0.0) -> float:
    """The share of ``reps`` seeded replications whose family intervals all cover."""
    hits = 0
    cluster = "prompt+judge" if judges else "prompt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the few-clusters notes of every small board
        for child in bar(np.random.SeedSequence(seed).spawn(reps), desc="replications",
                         unit="rep", progress=progress):
            log = simulated_log(np.random.default_rng(child), categories, prompts,
                                per_prompt, effect_sd, judges, judge_sd)
            boards = analyze_by(log, "category", cluster=cluster, family=True,
                                monte_carlo=MonteCarlo(n_draws=DRAWS))
            hits += covered(boards)
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20260033)
    parser.add_argument("--categories", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--per-prompt", type=int, default=4)
    parser.add_argument("--effect-sd", type=float, default=0.8)
    parser.add_argument("--judges", type=int, default=0)
    parser.add_argument("--judge-sd", type=float, default=0.0)
    args = parser.parse_args()
    share = coverage(args.reps, args.seed, args.categories, args.prompts, args.per_prompt,
                     args.effect_sd, judges=args.judges, judge_sd=args.judge_sd)
    se = float(np.sqrt(share * (1 - share) / args.reps))
    result = {"coverage": share, "se": se, "reps": args.reps, "seed": args.seed,
              "categories": args.categories, "prompts": args.prompts,
              "per_prompt": args.per_prompt, "effect_sd": args.effect_sd, "nominal": 0.95,
              "family": "joint", "draws": DRAWS}
    name = "family_coverage.json"
    if args.judges:
        result.update(judges=args.judges, judge_sd=args.judge_sd)
        name = "family_coverage_judges.json"
    print(json.dumps(result, indent=1))
    Path(__file__).with_name(name).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
