"""Compile and cache the numba kernels of a leaderboard run (``make demo`` runs this first).

numba compiles an ``@njit(cache=True)`` kernel at its first call with new argument types
and keeps the machine code in ``__pycache__`` beside its module, where later processes load
it; a kernel that runs threaded on large inputs (:mod:`winrate.parallel`) has a second,
threaded compilation made at its first large call. Compiling takes minutes on a loaded
machine, so this script pays it once at install: it runs ``winrate leaderboard`` as a
user does (a Parquet log with text ids, read from a file) for the half-tie win rate and
Bradley-Terry, on a small log (the serial kernels) and on one of ``--rows`` comparisons
(default 1,200,000: enough rows for the threaded kernels), clustered by prompt + judge
and by prompt alone. A user's first leaderboard then loads the kernels instead of
compiling them.

Usage: ``python scripts/warm_kernels.py [--rows 1200000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np

ESTIMATORS = ("winrate", "bt")
CLUSTERINGS = ("prompt+judge", "prompt")


def write_log(path: Path, n: int, n_models: int = 20, seed: int = 0) -> None:
    """``n`` random comparisons among ``n_models`` models on ``n / 10`` prompts and 10
    judges, text ids and outcomes (``model_a`` / ``model_b`` / ``tie``), as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    names = np.array([f"model-{i:02d}" for i in range(n_models)])
    columns = {
        "prompt_id": np.char.add("prompt-", rng.integers(0, max(n // 10, 1), n).astype(str)),
        "judge_id": np.char.add("judge-", rng.integers(0, 10, n).astype(str)),
        "model_a": names[a], "model_b": names[b],
        "outcome": np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, n)],
    }
    pq.write_table(pa.table(columns), path)


def warm(path: Path) -> None:
    """``winrate leaderboard PATH`` for every estimator and clustering, in this process."""
    from winrate.cli import main

    for model in ESTIMATORS:
        for cluster in CLUSTERINGS:
            argv = ["leaderboard", str(path), "--model", model, "--cluster", cluster]
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                code = main(argv)
            if code != 0:
                raise SystemExit(f"winrate {' '.join(argv)} exited with {code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_200_000,
                        help="comparisons of the large log (threaded kernels)")
    args = parser.parse_args()
    start = time.perf_counter()
    print("compiling the numba kernels of a leaderboard run (once; cached for later runs)")
    with tempfile.TemporaryDirectory() as scratch:
        for n in (2_000, args.rows):
            path = Path(scratch) / f"log_{n}.parquet"
            write_log(path, n)
            warm(path)
    print(f"kernels compiled and cached in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
