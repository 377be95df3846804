"""Benchmark the leaderboard engine at scale (a benchmark, not a timed test).

Sections (``--only`` runs one):

* ``kernels``: a synthetic log of N comparisons (default 10,000,000) among K models (100),
  P prompts (1,000,000) and J judges (10), built directly as integer arrays; each stage
  timed on its own for each estimator (the half-tie win rate and Bradley-Terry): scores +
  influence (for Bradley-Terry the fit and its sparse score rows), naive, prompt, judge
  and two-way (prompt + judge) covariance (Bradley-Terry: the sandwich ``B M B'``), and
  as a floor one ``np.bincount`` over the same n.
* ``analyze``: :func:`winrate.analysis.analyze` on that log as users call it (default
  clustering and method, diagnostics included), with a per-stage breakdown.
* ``joint``: ``winrate leaderboard FILE --simultaneous --ranks --pairwise`` on a Parquet
  log of 1,000,000 comparisons among 100 models (string ids), run as a user runs it (a
  fresh process) and in this process, each against the core (the same command without
  the joint flags; issue 35's target: joint <= 1.4 x core), and against a FastChat-style
  Bradley-Terry bootstrap of 100 resamples of the same log (FastChat's
  ``elo_analysis.get_bootstrap_result``: resample the rows, aggregate, refit; here the
  refit is a logistic MLE on the pair totals).
* ``cli``: the end-to-end case: write a Parquet log of 5,000,000 comparisons (100 models,
  500,000 prompts, 10 judges; string ids), run ``winrate leaderboard FILE --cluster
  prompt+judge`` in a fresh process, and as the physical floor a fresh process that runs
  ``pd.read_parquet``, factorises each of the five columns and takes one ``np.bincount``:
  the work any tool must do to see the log. Ratios are of the same run. A per-stage
  breakdown (read, code, fit, covariance, diagnostics, inference, report; start-up is the
  fresh process' remainder) comes from the same command run in this process with each
  stage's functions timed.
* ``ranks``: ``winrate leaderboard FILE --ranks`` on a Parquet log of ``--ranks-n``
  comparisons (200,000) among ``--ranks-models`` models (1,000), 20 per prompt, in a
  fresh process: wall time and the child's peak resident memory (issue 26's target:
  <= 10 s and <= 1 GiB at 1,000 models; the K(K - 1) contrasts of marginal rank sets then
  take Bonferroni critical values, ``winrate.inference.MC_WORK``).
* ``startup``: ``winrate --help`` in a fresh process.
* ``check``: ``check_coverage(analyze(log, ...), reps=--check-reps)`` (``winrate check``,
  issue 24's target: 200 replications of a 10,000-row log in under a minute with a
  sandwich or the jackknife) on a log of ``--check-n`` comparisons (10,000) drawn from a
  crossed random-effects Bradley-Terry model (20 models, n / 10 prompts, 40 judges), for
  each estimator with the default method (``auto``), the jackknife and the bootstrap, on
  every core.
* ``evals-scale``: a per-question eval of ``--eval-models`` models (200) on
  ``--eval-questions`` questions (12,032, MMLU-Pro's), 0/1 scores from a logistic model of
  ability and difficulty with 1% of the answers missing, as a Parquet table of one row per
  answer (string ids): ``winrate leaderboard FILE --format scores --cluster prompt`` in a
  fresh process, wall time, processor time and that process' peak resident memory (median
  of ``--repeat`` runs and their range; issue 23's target <= 5 s and <= 1 GiB; the pairwise
  log it stands for has 239 million rows; issue 38's: 1,000 models x 50,000 questions
  <= 20 s), each run paired with a floor in the next fresh process (``pd.read_parquet``,
  factorise the three columns, one ``np.bincount``, as in ``cli``) and their ratio, with
  the load average before and after; and in this process the time of reading the table,
  the fit (pair table and per-question influence totals) and the analysis.
* ``scale``: logs beyond memory on an engine (issues 23, 38). For each of ``--scale-n``
  (row counts, default 50M and 200M) a prompt-partitioned zstd Parquet log with integer
  ids (100 models, 1,000 judges, 200 rows per prompt; written once by DuckDB into
  ``--workdir``), then ``winrate leaderboard FILE --engine duckdb --model bt --cluster
  prompt+judge --method sandwich --correction cr1 --memory --scale-memory`` in a fresh
  process: wall time and peak resident memory (median of ``--repeat`` runs, with the
  range), paired with a floor measured in the same run on the same engine and memory
  limit (:func:`scale_floor`: the grouped SQL any exact method runs, one pass per pair
  and, per term, per (cluster, model) totals reduced to K x K sums) and their ratio.
  ``--scale-random N`` adds a log of N rows in random row order with string ids,
  ``--scale-wide N`` one of N rows with N / 10 string prompts and 100,000 string judges
  (about one row per (prompt, judge) cell). ``--scale-no-floor`` times winrate alone (a
  log so large that its floor would double a run of hours).
* ``arena``: two-way clustering at LMArena's shape (issue 40): for each of ``--arena-n``
  (default 1,000,000 and 10,000,000 rows) a Parquet log of 20 models, rows / 2 string
  prompts drawn uniformly (so about 0.43 n distinct) and 100,000 string judges, nearly one
  row per (prompt, judge) cell; ``winrate leaderboard FILE --cluster prompt+judge --method
  sandwich`` in memory and on DuckDB with ``--memory 1G`` (``--arena-engines``: both by
  default), each in a fresh process: wall time and peak resident memory (median of
  ``--repeat`` runs and their range, after one warm-up run when there are several) with
  the load average before and after (issue 40's targets in memory:
  1M rows <= 5 s and 1.5 GiB, 10M rows <= 60 s and 6 GiB; DuckDB peak <= 1.5 GiB).

Usage: ``python scripts/bench.py [--only SECTION] [--n 10000000] [--models 100]
[--prompts 1000000] [--judges 10] [--repeat 3] [--model winrate|bt] [--joint-n 1000000]
[--cli-n 5000000] [--cli-prompts 500000] [--ranks-n 200000] [--ranks-models 1000]
[--check-n 10000] [--check-reps 200] [--eval-models 200] [--eval-questions 12032]
[--workdir DIR]``. The numba kernels are
compiled (or loaded from cache) by a small warm-up run first, so in-process timings
measure steady-state work; fresh processes pay their start-up, as a user does. Every time
is the best of ``--repeat`` runs; the machine may be shared, so compare ratios of one run.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import winrate
from winrate.errors import WinrateInputError
from winrate.estimators import ESTIMATORS, fit
from winrate.io.logs import ComparisonLog
from winrate.variance.sandwich import cluster_cov, multiway_cluster_cov, naive_cov

SECTIONS = ("kernels", "analyze", "joint", "cli", "ranks", "startup", "check", "evals-scale",
            "scale", "arena")


def _estimators(args) -> tuple[str, ...]:
    """``--model``, else every estimator that fits the benchmark's all-pairs design (``lc``
    needs a baseline design and is left out)."""
    if args.model:
        return (args.model,)
    probe = synthetic_log(2_000, 4, 100, 2)
    fitting = []
    for model in ESTIMATORS:
        try:
            fit(probe, model)
        except WinrateInputError:
            continue
        fitting.append(model)
    return tuple(fitting)


def synthetic_log(n: int, k: int, n_prompts: int, n_judges: int, seed: int = 0):
    """Random comparisons: a != b, scores in {0, 1/2, 1}, prompts and judges uniform."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n, dtype=np.int32)
    b = ((a + rng.integers(1, k, n, dtype=np.int32)) % k).astype(np.int32)
    score = rng.integers(0, 3, n).astype(np.float64) / 2
    prompt = rng.integers(0, n_prompts, n, dtype=np.int32)
    judge = rng.integers(0, n_judges, n, dtype=np.int32)
    return ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)


def write_parquet_log(path: Path, n: int, k: int, n_prompts: int, n_judges: int,
                      seed: int = 0) -> None:
    """The log of :func:`synthetic_log` with string ids (``prompt-000017``, ``judge-03``,
    ``model-042``) and text outcomes (``model_a`` / ``model_b`` / ``tie``), as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    names = np.array([f"model-{i:03d}" for i in range(k)])
    columns = {
        "prompt_id": np.array([f"prompt-{i:07d}" for i in range(n_prompts)])[
            rng.integers(0, n_prompts, n)],
        "judge_id": np.array([f"judge-{i:02d}" for i in range(n_judges)])[
            rng.integers(0, n_judges, n)],
        "model_a": names[a], "model_b": names[b],
        "outcome": np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, n)],
    }
    pq.write_table(pa.table(columns), path)


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


# --------------------------------------------------------------------- stage timing


#: Stages of a leaderboard run and the functions whose time they collect, as
#: ``"module:qualified.name"`` (a method as ``Class.method``), on the call path of
#: :func:`winrate.inference.analysis.run_analysis` (fit -> resolve -> estimate_variance ->
#: infer) and of the command line; a stage's time excludes the stages nested inside it
#: (coding a log includes reading it, the variance step the axis diagnostics).
#: :class:`StageTimer` refuses a name that no longer resolves, so a renamed step fails
#: here instead of printing 0.000 s.
STAGES = {
    "read": ("winrate.io.logs:read_table",),
    "code": ("winrate.io.logs:read_comparisons",),
    "fit": ("winrate.inference.plan:fit",),
    "method choice": ("winrate.inference.plan:resolve",),
    "covariance": ("winrate.inference.covariance:estimate_variance",),
    "diagnostics": ("winrate.variance.cluster_sums:ClusterSums.design",
                    "winrate.inference.covariance:_axis_summaries"),
    "inference": ("winrate.inference.analysis:infer",),
    "report": ("winrate.report.leaderboard:format_report",
               "winrate.report.leaderboard:format_pairwise",
               "winrate.report.leaderboard:write_json"),
}


def resolve_stage_function(spec: str) -> tuple[object, str, object]:
    """``(owner, attribute, function)`` of a :data:`STAGES` entry: the module (or class)
    that holds it under ``attribute``; an error naming the entry if it does not resolve."""
    import importlib

    module_name, _, qualname = spec.partition(":")
    owner = importlib.import_module(module_name)
    *path, attribute = qualname.split(".")
    try:
        for name in path:
            owner = getattr(owner, name)
        return owner, attribute, getattr(owner, attribute)
    except AttributeError:
        raise SystemExit(f"bench.STAGES names {spec!r}, which no longer exists: update the "
                         "stage table to the current call path") from None


class StageTimer:
    """Within ``with StageTimer() as timer:``, every function of :data:`STAGES` is wrapped
    (a function under every name a loaded winrate module holds it by, a method on its
    class), and ``timer.seconds`` collects each stage's own time. On exit every name is
    given its function back, also in modules the run imported (whose ``from ... import``
    took the wrapper), so a later timer finds the functions, not a stale wrapper."""

    def __init__(self):
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self._stack: list[list[float]] = []
        self._patched: list[tuple[object, str, object]] = []
        self._originals: dict[int, tuple[object, object]] = {}  # id -> (wrapper, function)

    def __enter__(self):
        resolved = [(stage, resolve_stage_function(spec))  # every name, before any patch
                    for stage, specs in STAGES.items() for spec in specs]
        for stage, (owner, attribute, original) in resolved:
            wrapper = self._wrap(stage, original)
            self._originals[id(wrapper)] = (wrapper, original)
            if isinstance(owner, type):
                self._patch(owner, attribute, wrapper)
                continue
            for module in _winrate_modules():
                for name, value in list(vars(module).items()):
                    if value is original:
                        self._patch(module, name, wrapper)
        return self

    def _patch(self, owner, name: str, wrapper) -> None:
        self._patched.append((owner, name, getattr(owner, name)))
        setattr(owner, name, wrapper)

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        for module in _winrate_modules():
            for name, value in list(vars(module).items()):
                wrapper, original = self._originals.get(id(value), (None, None))
                if value is wrapper:
                    setattr(module, name, original)

    def _wrap(self, stage: str, func):
        def timed(*args, **kwargs):
            self._stack.append([0.0])
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                nested = self._stack.pop()[0]
                self.seconds[stage] += elapsed - nested
                if self._stack:
                    self._stack[-1][0] += elapsed
        return timed


def _winrate_modules() -> list:
    return [module for module in list(sys.modules.values())
            if getattr(module, "__name__", "").startswith("winrate")]


def _cli_in_process(argv: list[str]) -> tuple[float, dict[str, float]]:
    """Wall time of ``winrate ARGV`` run in this process, and its stage breakdown."""
    from winrate.cli import main

    with StageTimer() as timer, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        start = time.perf_counter()
        code = main(argv)
        total = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"winrate {' '.join(argv)} exited with {code}")
    return total, timer.seconds


def _fresh_process(command: list[str], repeat: int) -> float:
    """Best wall time of ``command`` in a fresh process (start-up included)."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def _winrate_command() -> list[str]:
    script = Path(sys.executable).with_name("winrate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "winrate.cli"]


_FLOOR = """
import sys
import numpy as np
import pandas as pd
frame = pd.read_parquet(sys.argv[1])
codes = [pd.factorize(frame[column])[0] for column in frame.columns]
np.bincount(codes[2])
"""


def _print_stages(total: float, stages: dict[str, float], fresh: float | None = None) -> None:
    for name, seconds in stages.items():
        print(f"    {name:<14} {seconds:7.3f} s")
    print(f"    {'other':<14} {total - sum(stages.values()):7.3f} s")
    if fresh is not None:
        print(f"    {'start-up':<14} {fresh - total:7.3f} s   (fresh process minus in-process)")


# ------------------------------------------------------------------------- sections


def bench_kernels(args, log) -> None:
    models = _estimators(args)
    for model in models:
        _report(model, log, args.repeat)
    floor = min(_timed(lambda: np.bincount(log.model_a, minlength=args.models))
                for _ in range(args.repeat))
    print(f"  np.bincount floor    {floor:7.3f} s   (one pass over n)")


def bench_analyze(args, log) -> None:
    from winrate.analysis import analyze

    for model in _estimators(args):
        best, stages, runs = np.inf, None, []
        for _ in range(args.repeat):
            with StageTimer() as timer:
                start = time.perf_counter()
                result = analyze(log, model=model)
                seconds = time.perf_counter() - start
            runs.append(seconds)
            if seconds < best:
                best, stages = seconds, dict(timer.seconds)
        kept = {k: v for k, v in stages.items() if k in ("fit", "covariance", "diagnostics",
                                                          "inference")}
        print(f"analyze({args.n:,} rows, model={model!r}) as users call it: "
              f"{_median_range(runs, 's')} (method {result.settings['method']!r}, "
              f"{result.method_note.split('.')[0]}); stages of the fastest run:")
        _print_stages(best, kept)


def bench_joint(args, workdir: Path) -> None:
    path = workdir / f"joint_{args.joint_n}.parquet"
    if not path.exists():
        write_parquet_log(path, args.joint_n, args.models, args.joint_n // 10, args.judges)
    core = ["leaderboard", str(path)]
    argv = [*core, "--simultaneous", "--ranks", "--pairwise"]
    _cli_in_process(argv)  # warm-up
    runs = {"core": [], "joint": []}
    for _ in range(args.repeat):  # alternate, so both see the same machine
        runs["core"].append(_cli_in_process(core))
        runs["joint"].append(_cli_in_process(argv))
    (core_total, _), (total, stages) = (min(runs[kind], key=lambda run: run[0])
                                        for kind in ("core", "joint"))
    fresh = _fresh_process([*_winrate_command(), *argv], args.repeat)
    fresh_core = _fresh_process([*_winrate_command(), *core], args.repeat)
    bootstrap = min(_timed(lambda: fastchat_style_bootstrap(path, 100))
                    for _ in range(args.repeat))
    print(f"joint inference: winrate leaderboard --simultaneous --ranks --pairwise, "
          f"{args.joint_n:,} rows, {args.models} models")
    print(f"  fresh process        {fresh:7.3f} s   (core, without the joint flags: "
          f"{fresh_core:.3f} s; joint / core = {fresh / fresh_core:.2f})")
    print(f"  in process           {total:7.3f} s   (core: {core_total:.3f} s; joint / core = "
          f"{total / core_total:.2f})")
    _print_stages(total, stages, fresh)
    print(f"  FastChat-style BT bootstrap, 100 resamples: {bootstrap:.3f} s   "
          f"(winrate / bootstrap = {fresh / bootstrap:.2f})")


def fastchat_style_bootstrap(path, rounds: int, seed: int = 0) -> np.ndarray:
    """Bradley-Terry ratings of ``rounds`` bootstrap resamples of the rows, the way
    FastChat's ``elo_analysis.get_bootstrap_result`` does it (``battles.sample(frac=1.0,
    replace=True)`` and a refit per round; ties count half a win): a yardstick, not part of
    winrate."""
    import pandas as pd

    frame = pd.read_parquet(path)
    a_codes, names = pd.factorize(pd.concat([frame["model_a"], frame["model_b"]]))
    n = len(frame)
    battles = pd.DataFrame({"a": a_codes[:n], "b": a_codes[n:],
                            "win": frame["outcome"].map({"model_a": 1.0, "model_b": 0.0,
                                                         "tie": 0.5}).to_numpy()})
    rng = np.random.default_rng(seed)
    ratings = []
    for _ in range(rounds):
        sample = battles.sample(frac=1.0, replace=True, random_state=rng)
        totals = sample.groupby(["a", "b"])["win"].agg(["sum", "size"]).reset_index()
        ratings.append(_bt_mle(totals["a"].to_numpy(), totals["b"].to_numpy(),
                               totals["sum"].to_numpy(), totals["size"].to_numpy(),
                               len(names)))
    return np.array(ratings)


def _bt_mle(a, b, wins, games, k: int) -> np.ndarray:
    """Bradley-Terry MLE from pair totals (Elo scale, mean 1000): maximises
    ``sum wins log s(t_a - t_b) + (games - wins) log s(t_b - t_a)`` by L-BFGS."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def loss(theta):
        eta = theta[a] - theta[b]
        value = -(wins * log_expit(eta) + (games - wins) * log_expit(-eta)).sum()
        push = games * expit(eta) - wins
        return value, np.bincount(a, push, k) - np.bincount(b, push, k)

    theta = minimize(loss, np.zeros(k), jac=True, method="L-BFGS-B").x
    return 1000 + 400 / np.log(10) * (theta - theta.mean())


def bench_cli(args, workdir: Path) -> None:
    path = workdir / f"cli_{args.cli_n}_{args.cli_prompts}.parquet"
    if not path.exists():
        write_parquet_log(path, args.cli_n, args.models, args.cli_prompts, args.judges)
    argv = ["leaderboard", str(path), "--cluster", "prompt+judge",
            "--json", str(workdir / "cli.json")]
    fresh, floor = np.inf, np.inf
    for _ in range(args.repeat):  # alternate, so both see the same machine
        fresh = min(fresh, _fresh_process([*_winrate_command(), *argv], 1))
        floor = min(floor, _fresh_process([sys.executable, "-c", _FLOOR, str(path)], 1))
    _cli_in_process(argv)  # warm-up
    total, stages = min((_cli_in_process(argv) for _ in range(args.repeat)),
                        key=lambda run: run[0])
    print(f"end to end: winrate leaderboard FILE --cluster prompt+judge, {args.cli_n:,} rows "
          f"({args.models} models, {args.cli_prompts:,} prompts, {args.judges} judges; "
          "string ids, Parquet)")
    print(f"  fresh process        {fresh:7.3f} s")
    print(f"  physical floor       {floor:7.3f} s   (fresh process: pd.read_parquet, factorise "
          "5 columns, np.bincount)")
    print(f"  CLI / floor          {fresh / floor:7.2f}")
    print(f"  in process           {total:7.3f} s")
    _print_stages(total, stages, fresh)


def bench_ranks(args, workdir: Path) -> None:
    path = workdir / f"ranks_{args.ranks_n}_{args.ranks_models}.parquet"
    if not path.exists():
        write_parquet_log(path, args.ranks_n, args.ranks_models, args.ranks_n // 20,
                          args.judges)
    command = [*_winrate_command(), "leaderboard", str(path), "--ranks"]
    best, peak = np.inf, 0.0
    for _ in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    print(f"rank sets: winrate leaderboard --ranks, {args.ranks_n:,} rows, "
          f"{args.ranks_models} models, fresh process")
    print(f"  wall time            {best:7.3f} s")
    print(f"  peak resident memory {peak / 1024**2:7.3f} GB (largest child so far)")


def check_log(n: int, k: int = 20, n_judges: int = 40, seed: int = 0) -> ComparisonLog:
    """``n`` comparisons of random pairs among ``k`` models on ``n / 10`` prompts and
    ``n_judges`` judges, outcomes from a crossed random-effects Bradley-Terry model
    (abilities evenly spread over [-1.5, 1.5], prompt x model variance 0.5, judge x model
    0.1, Rao-Kupper tie threshold 0.5; :mod:`winrate.check`'s model)."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    n_prompts = n // 10
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    prompt, judge = rng.integers(0, n_prompts, n), rng.integers(0, n_judges, n)
    u = rng.normal(0, np.sqrt(0.5), (n_prompts, k))
    v = rng.normal(0, np.sqrt(0.1), (n_judges, k))
    eta = (np.linspace(-1.5, 1.5, k)[a] - np.linspace(-1.5, 1.5, k)[b]
           + u[prompt, a] - u[prompt, b] + v[judge, a] - v[judge, b])
    draw = rng.random(n)
    score = np.where(draw < expit(eta - 0.5), 1.0, np.where(draw >= 1 - expit(-eta - 0.5),
                                                             0.0, 0.5))
    return ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)


def bench_check(args) -> None:
    from winrate.analysis import analyze
    from winrate.check import check_coverage
    from winrate.parallel import usable_cores
    from winrate.settings import Variance

    log = check_log(args.check_n)
    print(f"winrate check: {args.check_reps} replications of a {args.check_n:,}-row log "
          f"(20 models, {args.check_n // 10:,} prompts, 40 judges), {usable_cores()} cores")
    for model in (args.model,) if args.model else ESTIMATORS[:2]:
        for method in ("auto", "jackknife", "bootstrap"):
            result = analyze(log, model=model, variance=Variance(method))
            start = time.perf_counter()
            check = check_coverage(result, reps=args.check_reps, progress=False)
            seconds = time.perf_counter() - start
            c = check.coverage
            print(f"  {model:8} {c.label:22} {seconds:7.1f} s   ({check.workers} "
                  f"workers; marginal {100 * c.marginal:.1f}%, simultaneous "
                  f"{100 * c.simultaneous:.1f}%)")
def write_score_table(path: Path, n_models: int, n_questions: int, missing: float = 0.01,
                      seed: int = 0) -> None:
    """One row per answer (``question_id``, ``model``, 0/1 ``score``): right with
    probability ``logistic(ability - difficulty)``, ``missing`` of the answers left out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1, n_models)
    difficulty = rng.normal(0, 1.5, n_questions)
    p = 1 / (1 + np.exp(difficulty[:, None] - ability[None, :]))
    q, m = np.nonzero(rng.random(p.shape) >= missing)
    columns = {"question_id": np.array([f"q-{i:05d}" for i in range(n_questions)])[q],
               "model": np.array([f"model-{i:03d}" for i in range(n_models)])[m],
               "score": (rng.random(q.size) < p[q, m]).astype(np.int8)}
    pq.write_table(pa.table(columns), path)


class ChildFailed(RuntimeError):
    """A timed child process failed (or was stopped); the message has its exit code, time,
    peak resident memory and last line of error output."""


def _child_run(command: list[str], cpu: bool = False) -> tuple[float, ...]:
    """Wall time and peak resident memory (GiB) of ``command`` in a fresh process (its own
    rusage, from ``os.wait4``), and with ``cpu`` its processor time (user + system, all
    threads), which a busy machine stretches less than the wall time."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            last = (errors.read().decode(errors="replace").strip().splitlines() or [""])[-1]
            raise ChildFailed(f"exited with {child.returncode} after {seconds:.0f} s, peak "
                              f"{usage.ru_maxrss / 1024**2:.2f} GiB: {last[:300]}")
    found = (seconds, usage.ru_maxrss / 1024**2)
    return (*found, usage.ru_utime + usage.ru_stime) if cpu else found


def _median_range(values, unit: str, digits: int = 3) -> str:
    values = np.asarray(values)
    return (f"{np.median(values):.{digits}f} {unit} (range {values.min():.{digits}f}-"
            f"{values.max():.{digits}f}, {values.size} runs)")


def bench_evals_scale(args, workdir: Path) -> None:
    """The per-question eval (module doc), each run of the command paired with the floor
    (:data:`_FLOOR`: read the table, factorise its columns, one ``np.bincount``) in
    alternating fresh processes, with the load average before and after."""
    from winrate.analysis import analyze
    from winrate.io.scores import scores_log

    k, n_q = args.eval_models, args.eval_questions
    path = workdir / f"scores_{k}x{n_q}.parquet"
    if not path.exists():  # in a child: its arrays would count in the runs' peak memory
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, "
                        f"{str(Path(__file__).parent)!r}); import bench; "
                        f"bench.write_score_table(bench.Path({str(path)!r}), {k}, {n_q})"],
                       check=True)
    command = [*_winrate_command(), "leaderboard", str(path), "--format", "scores",
               "--cluster", "prompt"]
    floor_command = [sys.executable, "-c", _FLOOR, str(path)]
    load_before = os.getloadavg()[0]
    _child_run(command)  # numba's cache and the page cache warm, as after a first run
    runs, floors = [], []
    for _ in range(args.repeat):  # alternate, so both see the same machine
        runs.append(_child_run(command, cpu=True))
        floors.append(_child_run(floor_command, cpu=True))
    load_after = os.getloadavg()[0]
    stages: dict[str, list[float]] = {"read": [], "fit": [], "analysis": []}
    for _ in range(args.repeat):
        start = time.perf_counter()
        table = scores_log(path)
        stages["read"].append(time.perf_counter() - start)
        start = time.perf_counter()
        board = fit(table)
        stages["fit"].append(time.perf_counter() - start)
        start = time.perf_counter()
        analyze(table, cluster="prompt", board=board)
        stages["analysis"].append(time.perf_counter() - start)
        n_rows = table.n_rows
        del table, board
    print(f"per-question eval: {k} models x {n_q:,} questions, 0/1 scores, 1% of the "
          f"answers missing ({n_rows:,} pairwise comparisons, never built); load "
          f"average {load_before:.1f} before the runs, {load_after:.1f} after")
    print(f"  winrate leaderboard --format scores --cluster prompt, fresh process: "
          f"{_median_range([r[0] for r in runs], 's')}")
    print(f"    processor time (all threads): {_median_range([r[2] for r in runs], 's')}")
    print(f"  peak resident memory of that process: "
          f"{_median_range([r[1] for r in runs], 'GiB')}")
    print(f"  floor (pd.read_parquet, factorise the 3 columns, one np.bincount), fresh "
          f"process: {_median_range([f[0] for f in floors], 's')}")
    print(f"    processor time: {_median_range([f[2] for f in floors], 's')}")
    ratios = [r[0] / f[0] for r, f in zip(runs, floors, strict=True)]
    print(f"  winrate / floor, paired runs: {_median_range(ratios, 'x', 2)}")
    print("  in this process:")
    for name, seconds in stages.items():
        print(f"    {name:<14} {_median_range(seconds, 's')}")


def write_scale_log(path: Path, n: int, kind: str) -> None:
    """A Bradley-Terry log of ``n`` rows written by DuckDB (in a child process): 100 models
    with abilities spread over 4 logits, 10% ties. ``kind``: ``partitioned`` (1,000
    judges, 200 rows per prompt, rows in prompt order, integer ids), ``random`` (the same
    in random order with string ids) or ``wide`` (n / 10 string prompts drawn at random,
    100,000 string judges, random order). Draws are hashes of the row number, so the file
    is the same on every run."""
    order = "ORDER BY hash(i, 6)"
    if kind == "random":
        ids = ("'prompt-' || (hash(i, 5) % {p})::VARCHAR AS prompt_id, "
               "'judge-' || (hash(i, 1) % 1000)::VARCHAR AS judge_id, "
               "'model-' || a::VARCHAR AS model_a, 'model-' || b::VARCHAR AS model_b")
    elif kind == "wide":
        ids = ("'prompt-' || (hash(i, 5) % {w})::VARCHAR AS prompt_id, "
               "'judge-' || (hash(i, 1) % 100000)::VARCHAR AS judge_id, "
               "'model-' || a::VARCHAR AS model_a, 'model-' || b::VARCHAR AS model_b")
    else:
        ids = ("i // 200 AS prompt_id, (hash(i, 1) % 1000)::INTEGER AS judge_id, "
               "a::SMALLINT AS model_a, b::SMALLINT AS model_b")
        order = ""
    draws = ("SELECT i, (hash(i, 2) % 100)::INTEGER AS a, ((hash(i, 2) % 100 + 1 + hash(i, 3) "
             "% 99) % 100)::INTEGER AS b, (hash(i, 4) % 1000000) / 1e6 AS u "
             "FROM range({n}) t(i)")
    ids = ids.format(p=max(n // 200, 1), w=max(n // 10, 1))
    sql = (f"COPY (SELECT {ids}, CASE WHEN u < 0.1 THEN 0.5 "
           "WHEN u < 0.1 + 0.9 / (1 + exp((b - a) / 25.0)) THEN 1.0 ELSE 0.0 END AS outcome "
           f"FROM ({draws.format(n=n)}) {order}) TO '{path}' "
           "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1000000)")
    # in a child process: a child's peak memory counts its parent's at the fork, so the
    # bench process must stay small
    subprocess.run([sys.executable, "-c", f"import duckdb; duckdb.connect().execute({sql!r})"],
                   check=True)


#: The floor's SQL (:func:`scale_floor`) over a Parquet log at ``{path}``: the pair table,
#: then per term of the two-way sum the (cluster, model) totals of the scores reduced to
#: their K x K cross-products.
_FLOOR_PAIRS = ("SELECT model_a, model_b, outcome, COUNT(*) AS n FROM read_parquet('{path}') "
                "GROUP BY model_a, model_b, outcome")
_FLOOR_TERM = ("WITH s AS (SELECT {c}, model_a AS m, outcome AS x FROM read_parquet('{path}') "
               "UNION ALL SELECT {c}, model_b AS m, 1 - outcome AS x FROM "
               "read_parquet('{path}')), t AS (SELECT {c}, m, SUM(x) AS t FROM s GROUP BY "
               "{c}, m) SELECT a.m, b.m, SUM(a.t * b.t) FROM t AS a JOIN t AS b ON {on} "
               "GROUP BY a.m, b.m")


def scale_floor(path: Path, memory: str) -> tuple[float, float]:
    """Wall time and peak memory of the least grouped SQL an exact two-way analysis runs
    on DuckDB, in a fresh process with the engine's memory limit (as
    :func:`winrate.io.scan.scan` gives it for the budget ``memory``): one pass per pair,
    and for each term (prompt, judge, prompt x judge) one per (cluster, model), reduced
    to K x K in SQL."""
    from winrate.cli import _byte_size  # the command line's reading of --memory
    from winrate.io.scan import engine_memory

    terms = (["prompt_id"], ["judge_id"], ["prompt_id", "judge_id"])
    queries = [_FLOOR_PAIRS.format(path=path)] + [
        _FLOOR_TERM.format(path=path, c=", ".join(cols),
                           on=" AND ".join(f"a.{c} = b.{c}" for c in cols))
        for cols in terms]
    limit = engine_memory(_byte_size(memory)) >> 20
    # spilling where winrate's engine spills (a scratch folder of the temporary directory)
    script = ("import duckdb, shutil, tempfile; con = duckdb.connect(); "
              "scratch = tempfile.mkdtemp(prefix='winrate-floor-'); "
              "con.execute(f\"SET temp_directory = '{scratch}'\"); "
              f"con.execute(\"SET memory_limit = '{limit}MB'\"); "
              "con.execute('SET preserve_insertion_order = false'); "
              f"[con.sql(q).fetchall() for q in {queries!r}]; "
              "con.close(); shutil.rmtree(scratch)")
    return _child_run([sys.executable, "-c", script])


def bench_scale(args, workdir: Path) -> None:
    logs = [(n, "partitioned") for n in args.scale_n]
    logs += [(n, kind) for n, kind in ((args.scale_random, "random"),
                                       (args.scale_wide, "wide")) if n]
    for n, kind in logs:
        path = workdir / f"scale_{kind}_{n}.parquet"
        if not path.exists():
            start = time.perf_counter()
            write_scale_log(path, n, kind)
            print(f"wrote {path.name} ({path.stat().st_size / 2**30:.2f} GiB) in "
                  f"{time.perf_counter() - start:.0f} s (not counted)")
        command = [*_winrate_command(), "leaderboard", str(path), "--engine", "duckdb",
                   "--model", "bt", "--cluster", "prompt+judge", "--method", "sandwich",
                   "--correction", "cr1", "--memory", args.scale_memory]
        load = os.getloadavg()[0]
        title = (f"scale: {n:,} rows, {kind}, two-way CR1 Bradley-Terry on DuckDB, --memory "
                 f"{args.scale_memory}")
        try:
            runs = [_child_run(command) for _ in range(args.repeat)]
        except ChildFailed as failed:  # a stopped run is reported, not lost
            print(f"{title} (load {load:.1f} -> {os.getloadavg()[0]:.1f}): did not finish, "
                  f"{failed}")
            continue
        print(f"{title} (load {load:.1f} -> {os.getloadavg()[0]:.1f})")
        print(f"  wall time: {_median_range([r[0] for r in runs], 's', 1)}")
        print(f"  peak resident memory: {_median_range([r[1] for r in runs], 'GiB', 2)}")
        if args.scale_no_floor:
            continue
        try:
            floors = [scale_floor(path, args.scale_memory) for _ in range(args.repeat)]
        except ChildFailed as failed:
            print(f"  floor (grouped SQL, same engine and limit): did not finish, {failed}")
            continue
        print(f"  floor (grouped SQL, same engine and limit): "
              f"{_median_range([f[0] for f in floors], 's', 1)}, peak "
              f"{_median_range([f[1] for f in floors], 'GiB', 2)}")
        ratio = np.median([r[0] for r in runs]) / np.median([f[0] for f in floors])
        print(f"  winrate / floor: {ratio:.2f}")


def bench_arena(args, workdir: Path) -> None:
    for n in args.arena_n:
        path = workdir / f"arena_{n}.parquet"
        if not path.exists():
            write_parquet_log(path, n, 20, n // 2, 100_000)
        base = [*_winrate_command(), "leaderboard", str(path), "--cluster", "prompt+judge",
                "--method", "sandwich"]
        print(f"arena shape: {n:,} rows, 20 models, {n // 2:,} prompts drawn, 100,000 judges "
              "(string ids, Parquet), two-way CR1 win rate")
        for name in args.arena_engines:
            engine = ["--engine", name] + (["--memory", "1G"] if name == "duckdb" else [])
            if args.repeat > 1:  # warm-up: numba's cache and the page cache
                _child_run([*base, *engine])
            load = os.getloadavg()[0]
            runs = [_child_run([*base, *engine]) for _ in range(args.repeat)]
            print(f"  {' '.join(engine):<28} wall {_median_range([r[0] for r in runs], 's', 1)}"
                  f"; peak {_median_range([r[1] for r in runs], 'GiB', 2)}; load "
                  f"{load:.1f} -> {os.getloadavg()[0]:.1f}")


def bench_startup(args) -> None:
    seconds = _fresh_process([*_winrate_command(), "--help"], args.repeat)
    print(f"start-up: winrate --help {seconds:7.3f} s   (fresh process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=SECTIONS, help="run one section")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--judges", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=ESTIMATORS, help="time one estimator only")
    parser.add_argument("--joint-n", type=int, default=1_000_000)
    parser.add_argument("--cli-n", type=int, default=5_000_000)
    parser.add_argument("--cli-prompts", type=int, default=500_000)
    parser.add_argument("--ranks-n", type=int, default=200_000)
    parser.add_argument("--ranks-models", type=int, default=1_000)
    parser.add_argument("--check-n", type=int, default=10_000)
    parser.add_argument("--check-reps", type=int, default=200)
    parser.add_argument("--eval-models", type=int, default=200)
    parser.add_argument("--eval-questions", type=int, default=12_032)
    parser.add_argument("--scale-n", type=int, nargs="*", default=[50_000_000, 200_000_000])
    parser.add_argument("--scale-random", type=int, default=None, metavar="N")
    parser.add_argument("--scale-wide", type=int, default=None, metavar="N")
    parser.add_argument("--scale-memory", default="4G")
    parser.add_argument("--scale-no-floor", action="store_true",
                        help="time winrate alone, without the floor")
    parser.add_argument("--arena-n", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--arena-engines", nargs="*", choices=("memory", "duckdb"),
                        default=["memory", "duckdb"])
    parser.add_argument("--workdir", type=Path, help="where the Parquet logs are written "
                                                     "(default: a temporary folder)")
    parser.add_argument("--record", type=Path, metavar="PATH",
                        help="also write the report to PATH, dated (a measurement of this "
                             "machine on this day, e.g. paper/benchmarks.txt)")
    args = parser.parse_args()
    if args.record:
        with args.record.open("w") as record, contextlib.redirect_stdout(_Tee(record)):
            print(f"recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by "
                  f"python scripts/bench.py {' '.join(sys.argv[1:])}")
            _run(args)
    else:
        _run(args)


class _Tee:
    """A stdout that writes to the terminal and to ``record``."""

    def __init__(self, record):
        self.streams = (sys.stdout, record)

    def write(self, text: str) -> None:
        for stream in self.streams:
            stream.write(text)
            stream.flush()

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def _cpu_name() -> str:
    """The processor's model name (Linux: /proc/cpuinfo), else the platform's word for it."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def _run(args) -> None:
    sections = (args.only,) if args.only else SECTIONS
    warnings.simplefilter("ignore")  # random data: the two-way estimate may need PSD repair
    print(f"machine: {_cpu_name()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, load average "
          f"{os.getloadavg()[0]:.1f}")
    if {"kernels", "analyze"} & set(sections):
        for model in _estimators(args):  # numba warm-up
            run_stages(synthetic_log(10_000, args.models, 1_000, args.judges), model)
        start = time.perf_counter()
        log = synthetic_log(args.n, args.models, args.prompts, args.judges)
        print(f"log: {args.n:,} comparisons, {args.models} models, {args.prompts:,} prompts, "
              f"{args.judges} judges (built in {time.perf_counter() - start:.2f} s, not "
              "counted)")
        if "kernels" in sections:
            bench_kernels(args, log)
        if "analyze" in sections:
            bench_analyze(args, log)
        del log
    _compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        if "joint" in sections:
            bench_joint(args, workdir)
        if "cli" in sections:
            bench_cli(args, workdir)
        if "ranks" in sections:
            bench_ranks(args, workdir)
        if "evals-scale" in sections:
            bench_evals_scale(args, workdir)
        if "scale" in sections:
            bench_scale(args, workdir)
        if "arena" in sections:
            bench_arena(args, workdir)
    if "startup" in sections:
        bench_startup(args)
    if "check" in sections:
        bench_check(args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"peak resident memory of this process: {peak:.2f} GB")


def _compile_bytecode() -> None:
    """Write winrate's bytecode before timing fresh processes: a user's first import does
    (pip at install, or Python at first run), but a machine with PYTHONDONTWRITEBYTECODE set,
    like the development one, would otherwise compile every module at every start."""
    compileall.compile_dir(Path(winrate.__file__).parent, quiet=1)


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
