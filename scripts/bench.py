"""Benchmark the leaderboard engine at scale (a benchmark, not a timed test).

Builds a synthetic log of N comparisons (default 10,000,000) among K models (100),
P prompts (1,000,000) and J judges (10) directly as integer arrays, then times each stage
for each estimator (the half-tie win rate and Bradley-Terry): scores + influence (for
Bradley-Terry the fit and its sparse score rows), naive, prompt, judge and two-way
(prompt + judge) covariance (Bradley-Terry: the sandwich ``B M B'``). Reports
wall time per stage, the total, the peak resident memory of the process and, as a floor,
the time of one ``np.bincount`` over the same n.

Usage: ``python scripts/bench.py [--n 10000000] [--models 100] [--prompts 1000000]
[--judges 10] [--repeat 3] [--model winrate|bt]`` (``--model``: one estimator only).
The numba kernels are compiled (or loaded from cache) by a
small warm-up run first, so the timings measure steady-state work.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import warnings

import numpy as np

from winrate.data import ComparisonLog
from winrate.estimators import ESTIMATORS, fit
from winrate.variance import cluster_cov, multiway_cluster_cov, naive_cov


def synthetic_log(n: int, k: int, n_prompts: int, n_judges: int, seed: int = 0):
    """Random comparisons: a != b, scores in {0, 1/2, 1}, prompts and judges uniform."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n, dtype=np.int32)
    b = ((a + rng.integers(1, k, n, dtype=np.int32)) % k).astype(np.int32)
    score = rng.integers(0, 3, n).astype(np.float64) / 2
    prompt = rng.integers(0, n_prompts, n, dtype=np.int32)
    judge = rng.integers(0, n_judges, n, dtype=np.int32)
    return ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)


def run_stages(log: ComparisonLog, model: str) -> dict[str, float]:
    """Time each stage on its own; the two-way call also returns both one-way covariances
    (its singleton inclusion-exclusion terms), which is how :func:`analyze` gets them."""
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    timings = {}
    start = time.perf_counter()
    board = fit(log, model)
    timings["scores + influence"] = time.perf_counter() - start
    rows, bread = board.influence, board.bread
    stages = {
        "naive": lambda: naive_cov(rows, bread=bread),
        "prompt (one-way)": lambda: cluster_cov(rows, prompt, bread=bread),
        "judge (one-way)": lambda: cluster_cov(rows, judge, bread=bread),
        "prompt + judge": lambda: multiway_cluster_cov(rows, [prompt, judge], bread=bread),
    }
    for name, stage in stages.items():
        start = time.perf_counter()
        stage()
        timings[name] = time.perf_counter() - start
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--judges", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=ESTIMATORS, help="time one estimator only")
    args = parser.parse_args()
    models = (args.model,) if args.model else ESTIMATORS
    warnings.simplefilter("ignore")  # random data: the two-way estimate may need PSD repair

    for model in models:  # numba warm-up
        run_stages(synthetic_log(10_000, args.models, 1_000, args.judges), model)
    start = time.perf_counter()
    log = synthetic_log(args.n, args.models, args.prompts, args.judges)
    build = time.perf_counter() - start
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"log: {args.n:,} comparisons, {args.models} models, {args.prompts:,} prompts, "
          f"{args.judges} judges (built in {build:.2f} s, not counted)")
    for model in models:
        _report(model, log, args.repeat)
    floor = min(_timed(lambda: np.bincount(log.model_a, minlength=args.models))
                for _ in range(args.repeat))
    print(f"  np.bincount floor    {floor:7.3f} s   (one pass over n)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"peak resident memory: {peak:.2f} GB")


def _report(model: str, log: ComparisonLog, repeat: int) -> None:
    best: dict[str, float] = {}
    for _ in range(repeat):
        for name, seconds in run_stages(log, model).items():
            best[name] = min(best.get(name, np.inf), seconds)
    print(f"estimator {model}:")
    for name, seconds in best.items():
        print(f"  {name:<20} {seconds:7.3f} s")
    print(f"  {'total, every stage':<20} {sum(best.values()):7.3f} s   (best of {repeat})")
    shared = best["scores + influence"] + best["naive"] + best["prompt + judge"]
    print(f"  {'total, as analyze':<20} {shared:7.3f} s   (one-way covariances are terms "
          "of the two-way call)")


def _timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
