"""Side runs behind issue 24's fix (``docs/coverage.md``, "The fix"); not the pre-registered
study. Each log is analysed once per variance variant, and both interval shapes are scored
on the same analysis: ``wald`` (``score -/+ q se`` and ``-/+ c se``, cut at [0, 1]) and
``logit`` (the reported intervals, :func:`winrate.inference.intervals.logit_bounds`).

* ``S-small`` (held out) and the tuning grid's small crossed cells (``grid:P:J``: the
  coverage study's ``DESIGN``; ``strong:P:J``: its strong-judge design), win rate, with
  the two-way CR1 sandwich and t(G - 1) (``cr1-t``) and CR2 with Pan-Wall df (``cr2-t``,
  the new default there); Bradley-Terry on S-small with ``cr1-t``.
* The held-out win-rate cells under the default (``auto``): R-alpaca (the simultaneous
  failure) and the thin cells, where the logit scale raises coverage.

Seeds: held-out cells as the study's (:func:`heldout.study.rep_seed`); grid cells
``SeedSequence([FIX_SEED, P, J, rep])``. Run: ``python scripts/heldout/fix_checks.py [--reps
1000]`` (R-alpaca: at most :data:`CAPPED` replications; writes
``paper/coverage/heldout/side/fix_checks.csv``, per cell, estimator and variant: coverage
and Monte-Carlo SEs in percent).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path

import numba
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heldout.cells import cell_by_key  # noqa: E402
from heldout.study import analyse, rep_seed  # noqa: E402
from winrate.analysis import analyze  # noqa: E402
from winrate.errors import WinrateWarning  # noqa: E402
from winrate.io.logs import read_comparisons  # noqa: E402
from winrate.io.simulate import simulate_comparisons  # noqa: E402
from winrate.settings import Joint, MonteCarlo, Variance  # noqa: E402

FIX_SEED = 7
SIM_DRAWS = 10_000
VARIANTS = {"cr1-t": {"method": "sandwich", "correction": "cr1", "reference": "t"},
            "cr2-t": {"method": "sandwich", "correction": "cr2", "reference": "t"},
            "auto": {}}
CROSSED = ("S-small", "grid:30:30", "grid:30:10", "strong:30:30", "strong:60:30")
DEFAULT_CELLS = ("R-alpaca", "T-thin-1", "T-thin-3", "T-crossed-thin", "S-thin-3",
                 "S-crossed-thin", "S-baseline-thin")
OUT = Path("paper/coverage/heldout/side/fix_checks.csv")
#: Cells run with fewer replications than ``--reps`` (seconds per replication: R-alpaca's
#: 45,875 rows take about 2.5 s), as in the diagnostic pass.
CAPPED = {"R-alpaca": 200}


def _tuning_designs():
    path = Path(__file__).resolve().parents[1] / "coverage.py"
    spec = importlib.util.spec_from_file_location("coverage_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"grid": module.DESIGN, "strong": module.STRONG_JUDGES}


def _scores(run, truth: np.ndarray) -> dict:
    """Marginal share covered and joint coverage of both interval shapes (a model that is
    not estimable counts as covered)."""
    p, se = run.scores, run.intervals.se
    blank = np.isnan(se)
    q = np.broadcast_to(run.intervals.critical_value, p.shape)
    c = run.joint.simultaneous_critical_value
    shapes = {"wald": ((p - q * se, p + q * se), (p - c * se, p + c * se)),
              "logit": ((run.intervals.low, run.intervals.high),
                        (run.joint.sim_low, run.joint.sim_high))}
    out = {}
    for shape, ((low, high), (sim_low, sim_high)) in shapes.items():
        out[f"{shape}_marginal"] = np.where(blank, True, (low <= truth) & (truth <= high)).mean()
        out[f"{shape}_simultaneous"] = np.where(
            blank, True, (sim_low <= truth) & (truth <= sim_high)).all()
    return out


def _held_out(key: str, rep: int, jobs) -> list[dict]:
    cell, seed = cell_by_key(key), rep_seed(key, rep)
    sample = cell.generator.draw(seed)
    log = read_comparisons(sample.frame, feature_cols=sample.covariates)
    rows = []
    for estimator, variant in jobs:
        run = analyse(log, sample, estimator, seed, **VARIANTS[variant])
        truth = sample.truth[estimator].reindex(run.models.astype(str)).to_numpy(float)
        rows.append({"cell": key, "estimator": estimator, "variant": variant, "rep": rep,
                     **_scores(run, truth)})
    return rows


def _grid(key: str, rep: int, jobs) -> list[dict]:
    kind, prompts, judges = key.split(":")
    design = replace(_tuning_designs()[kind], n_prompts=int(prompts), n_judges=int(judges))
    seed = int(np.random.SeedSequence([FIX_SEED, int(prompts), int(judges), rep])
               .generate_state(1)[0])
    sim = simulate_comparisons(design, seed)
    rows = []
    for estimator, variant in jobs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WinrateWarning)
            run = analyze(sim.log, cluster="prompt+judge", joint=Joint(simultaneous=True),
                          monte_carlo=MonteCarlo(SIM_DRAWS, seed),
                          variance=Variance(**VARIANTS[variant]))
        truth = sim.population_scores(run.leaderboard.weights)
        rows.append({"cell": key, "estimator": estimator, "variant": variant, "rep": rep,
                     **_scores(run, truth)})
    return rows


def _jobs(key: str) -> tuple[tuple[str, str], ...]:
    if key in CROSSED:
        return (("winrate", "cr1-t"), ("winrate", "cr2-t"),
                *((("bt", "cr1-t"),) if key == "S-small" else ()))
    return (("winrate", "auto"),)


def _task(args) -> list[dict]:
    key, rep = args
    numba.set_num_threads(1)
    run = _grid if ":" in key else _held_out
    return run(key, rep, _jobs(key))


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Coverage in percent with Monte-Carlo SEs (as the study's), per cell, estimator,
    variant and interval shape."""
    out = []
    for (cell, estimator, variant), part in rows.groupby(["cell", "estimator", "variant"],
                                                         sort=False):
        n = len(part)
        for shape in ("wald", "logit"):
            marginal = part[f"{shape}_marginal"]
            joint = part[f"{shape}_simultaneous"].astype(float).mean()
            out.append({"cell": cell, "estimator": estimator, "variant": variant,
                        "shape": shape, "reps": n, "marginal": 100 * marginal.mean(),
                        "marginal_mcse": 100 * marginal.std(ddof=1) / np.sqrt(n),
                        "simultaneous": 100 * joint,
                        "simultaneous_mcse": 100 * np.sqrt(joint * (1 - joint) / n)})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cells", nargs="+", default=(*CROSSED, *DEFAULT_CELLS))
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    tasks = [(key, rep) for key in args.cells
             for rep in range(min(args.reps, CAPPED.get(key, args.reps)))]
    with Pool(args.workers) as pool:
        parts = pool.map(_task, tasks, chunksize=10)
    table = summarise(pd.DataFrame([row for part in parts for row in part]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.4f")
    print(table.round(2).to_string())


if __name__ == "__main__":
    main()
