"""Issue 37's regression check of ``auto`` on the tuning grid (``scripts/coverage.py``):
the grid cells where the effective-cluster rule can change the method, rerun for ``auto``
alone with the grid's own seeds, logs and truths (:func:`coverage.one_rep`'s), and set
beside the committed ``paper/coverage/coverage.csv`` rows of ``auto``.

Usage: ``python scripts/heldout/grid_check.py [--reps 200] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from winrate.estimators.win_rate_kernels import fit
from winrate.io.simulate import simulate_comparisons


def _grid_study():
    """``scripts/coverage.py`` as a module (not as ``coverage``, a name it declines)."""
    path = Path(__file__).resolve().parents[1] / "coverage.py"
    spec = importlib.util.spec_from_file_location("coverage_study", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grid = _grid_study()

#: prompts x judges: the crossed cells from 10 clusters on the smaller axis
CELLS = ((30, 10), (30, 30), (100, 10), (100, 30), (300, 10), (300, 30))


def auto_rep(n_prompts: int, n_judges: int, rep: int) -> dict:
    """``auto``'s coverage on replication ``rep`` of a grid cell (the grid's seed and truth)."""
    seed = int(np.random.SeedSequence([grid.BASE_SEED, n_prompts, n_judges, rep])
               .generate_state(1)[0])
    sim = simulate_comparisons(replace(grid.DESIGN, n_prompts=n_prompts, n_judges=n_judges),
                               seed)
    board = fit(sim.log)
    truth = sim.population_scores(board.weights)
    (low, high), (sim_low, sim_high) = grid._auto_bounds(sim.log, board, seed)
    return {"prompts": n_prompts, "judges": n_judges, "rep": rep,
            "marginal": float(np.mean((low <= truth) & (truth <= high))),
            "simultaneous": bool(np.all((sim_low <= truth) & (truth <= sim_high))),
            "width": float(np.mean(high - low))}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--out", default="paper/coverage/heldout-heavy/grid_check.csv")
    args = parser.parse_args(argv)
    rows = pd.DataFrame([auto_rep(p, j, r) for p, j in CELLS for r in range(args.reps)])
    table = rows.groupby(["prompts", "judges"]).agg(
        reps=("rep", "size"), marginal=("marginal", "mean"),
        simultaneous=("simultaneous", "mean"), width=("width", "mean")).reset_index()
    table[["marginal", "simultaneous"]] *= 100
    committed = pd.read_csv("paper/coverage/coverage.csv")
    committed = committed[committed["method"] == "auto"][
        ["prompts", "judges", "reps", "marginal", "simultaneous", "width"]]
    table = table.merge(committed, on=["prompts", "judges"], suffixes=("", "_committed"))
    table.round(4).to_csv(args.out, index=False)
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
