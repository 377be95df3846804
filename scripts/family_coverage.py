"""Joint coverage of the family intervals of ``analyze_by(..., family=True)`` (one board per
category, all covered at once), by seeded simulation.

Each replication draws a log of ``categories`` categories, each with its own ``prompts``
prompts and ``per_prompt`` comparisons of three models per prompt; a prompt shifts the
odds of the lower-named model of each pair by a normal effect (sd ``effect_sd``, logit
scale), symmetric in sign, so every pair's true win probability over prompts is 1/2 and
every model's true half-tie win rate is 1/2, while comparisons of one prompt are
correlated (the clustering matters). A replication covers when every family interval
of every board (categories x models) contains 1/2. Prompts never span categories, so the
Sidak rule applies.

Usage: ``python scripts/family_coverage.py [--reps 400] [--seed 20260033]``; prints the
coverage with its binomial standard error and writes ``scripts/family_coverage.json``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from winrate import read_comparisons
from winrate.by_category import analyze_by
from winrate.progress import bar

MODELS = np.array(["a", "b", "c"])


def simulated_log(rng: np.random.Generator, categories: int, prompts: int, per_prompt: int,
                  effect_sd: float):
    """One replication's log (module docstring)."""
    n = categories * prompts * per_prompt
    prompt = np.repeat(np.arange(categories * prompts), per_prompt)
    effect = rng.normal(0.0, effect_sd, categories * prompts)[prompt]
    first = rng.integers(0, 3, n)
    second = (first + rng.integers(1, 3, n)) % 3
    sign = np.where(first < second, 1.0, -1.0)
    wins = rng.random(n) < 1 / (1 + np.exp(-effect * sign))
    frame = pd.DataFrame({"prompt_id": prompt.astype(str), "model_a": MODELS[first],
                          "model_b": MODELS[second], "outcome": wins.astype(float),
                          "category": (prompt // prompts).astype(str)})
    return read_comparisons(frame, cluster_cols=("category",))


def covered(boards) -> bool:
    """Whether every family interval contains the true win rate 1/2."""
    family = boards.family
    return all(((family.low[label] <= 0.5) & (0.5 <= family.high[label])).all()
               for label in boards.boards)


def coverage(reps: int, seed: int, categories: int = 5, prompts: int = 40,
             per_prompt: int = 4, effect_sd: float = 0.8, progress: bool = True) -> float:
    """The share of ``reps`` seeded replications whose family intervals all cover."""
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the few-clusters notes of every small board
        for child in bar(np.random.SeedSequence(seed).spawn(reps), desc="replications",
                         unit="rep", progress=progress):
            log = simulated_log(np.random.default_rng(child), categories, prompts,
                                per_prompt, effect_sd)
            hits += covered(analyze_by(log, "category", cluster="prompt", family=True))
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20260033)
    parser.add_argument("--categories", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--per-prompt", type=int, default=4)
    parser.add_argument("--effect-sd", type=float, default=0.8)
    args = parser.parse_args()
    share = coverage(args.reps, args.seed, args.categories, args.prompts, args.per_prompt,
                     args.effect_sd)
    se = float(np.sqrt(share * (1 - share) / args.reps))
    result = {"coverage": share, "se": se, "reps": args.reps, "seed": args.seed,
              "categories": args.categories, "prompts": args.prompts,
              "per_prompt": args.per_prompt, "effect_sd": args.effect_sd, "nominal": 0.95}
    print(json.dumps(result, indent=1))
    Path(__file__).with_name("family_coverage.json").write_text(json.dumps(result, indent=1)
                                                               + "\n")


if __name__ == "__main__":
    main()
