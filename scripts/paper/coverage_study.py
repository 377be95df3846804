"""The coverage study in the paper: ``scripts/coverage.py``'s committed results
(``paper/coverage/``), turned into a summary table and numbers.

``make paper`` reads the committed per-cell CSVs (the study takes minutes on 2 cores);
``make paper FULL=1`` first reruns the study with its fixed seeds (``--reps 600
--workers 2``), which must reproduce the committed files byte for byte.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from common import PAPER, ROOT, Paper

from winrate.notes import INCOMPLETE_SHARE
from winrate.variance.method_choice import MIN_CROSSED_AXIS, SMALL_AXIS, THIN_PAIR

REPS = 600
WORKERS = 2
SHOWN = ("naive", "twoway", "twoway_t", "jackknife", "wild", "pigeonhole", "auto")
#: Column headers of the paper's coverage tables for the study's method names: the grid
#: (``coverage_summary``) and the design cells (``design_coverage``).
GRID_HEADERS = {"twoway": "two-way CR1", "twoway_t": "two-way CR1, t",
                "jackknife": "jackknife, t", "wild": "wild bootstrap",
                "pigeonhole": "pigeonhole bootstrap"}
DESIGN_HEADERS = {"sandwich": "CR1", "cr2": "CR2", "pigeonhole": "pigeonhole bootstrap"}
#: What each method of the study's grid is, in words (``scripts/coverage.py``).
METHOD_WORDS = {
    "naive": "the independent-rows SE",
    "prompt": "the CR1 sandwich clustered by prompt",
    "judge": "the CR1 sandwich clustered by judge",
    "twoway": "the CR1 sandwich clustered by prompt and judge (inclusion-exclusion), normal "
              "reference",
    "twoway_t": "the same with a t(G - 1) reference, G the smaller of the two cluster counts",
    "jackknife": "the two-way delete-one-cluster jackknife with t(G - 1)",
    "wild": "the wild cluster bootstrap (percentile-t) on the axis with fewer clusters",
    "pigeonhole": "Owen's pigeonhole bootstrap, resampling prompts and judges",
    "auto": "the method analyze runs by default in each cell",
}


def method_key(methods, names=None) -> str:
    """``name: words; ...`` for a caption, ``names`` mapping a method to its label there."""
    return "; ".join(f"{(names or {}).get(m, m)}: {METHOD_WORDS[m]}" for m in methods)
#: Short keys of the design cells, in the order of ``scripts/coverage.py``'s design_cells.
DESIGN_KEYS = ("thin_a", "thin_b", "thin_c", "thin_d", "lop_a", "lop_b", "strong_a", "strong_b",
               "both")


def load_study():
    """``scripts/coverage.py`` as the module ``coverage_script`` (it declines to be imported
    as ``coverage``; ``coverage_study`` is this module's own name)."""
    path = ROOT / "scripts" / "coverage.py"
    spec = importlib.util.spec_from_file_location("coverage_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["coverage_script"] = module
    spec.loader.exec_module(module)
    return module


def rerun(out: Path = PAPER / "coverage") -> None:
    """Rerun the full study into ``out`` (what ``FULL=1`` does), in a fresh process: the
    study forks its workers, which is unsafe once this process has started numba's OpenMP
    threads (earlier build steps do)."""
    script = ROOT / "scripts" / "coverage.py"
    subprocess.run([sys.executable, str(script), "--reps", str(REPS), "--workers",
                    str(WORKERS), "--out", str(out)], check=True)


def _read(source: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(source / "coverage.csv"), pd.read_csv(source / "coverage_control.csv"))


def _cell(table, prompts, judges, method, column="marginal") -> float:
    row = table[(table.prompts == prompts) & (table.judges == judges) & (table.method == method)]
    return float(row[column].iloc[0])


def coverage_results(paper: Paper, source: Path = PAPER / "coverage") -> None:
    """Table ``coverage_summary`` and the numbers the text quotes (the paper's figure of
    the grid, with methods named in words, is ``coverage_methods``; the study's own figure
    stays in ``paper/coverage/coverage.png``)."""
    study = load_study()
    table, control = _read(source)
    shown = table[table.method.isin(SHOWN)]
    cells = shown.assign(cell=[f"{m:.1f} / {s:.1f}" for m, s in
                               zip(shown.marginal, shown.simultaneous, strict=True)])
    grid = cells.pivot_table(index=["prompts", "judges"], columns="method", values="cell",
                             aggfunc="first")[list(SHOWN)].reset_index().fillna("-")
    grid[["prompts", "judges"]] = grid[["prompts", "judges"]].astype(str)
    paper.table("coverage_summary", grid.rename(columns=GRID_HEADERS),
                "Coverage (%) of nominal 95% intervals, marginal / simultaneous, "
                f"{REPS} replications per cell. "
                f"{method_key(SHOWN, GRID_HEADERS)} (at 10 "
                "prompts with fewer than 10 judges CR2 with Pan-Wall t, valid but very wide "
                "there, and its output says the intervals are rough).")
    naive = table[table.method == "naive"]
    paper.number("cov_reps", REPS, "d")
    paper.number("cov_seed", str(study.BASE_SEED))
    paper.extremes("cov_naive", naive.marginal, ".0f")
    paper.extremes("cov_naive_sim", naive.simultaneous, ".1f")
    paper.number("cov_control_naive", _cell(control, 100, 10, "naive"), ".1f")
    for prompts, word in ((100, "hundred"), (300, "threehundred")):
        for method in ("twoway_t", "jackknife"):
            key = f"cov_{method}_{word}"
            paper.number(key, _cell(table, prompts, 30, method), ".1f")
            paper.number(key + "_sim", _cell(table, prompts, 30, method, "simultaneous"), ".1f")
    wild_two = table[(table.method == "wild") & (table.judges == 2)]
    wild_inf = table[(table.method == "wild") & np.isinf(table.width)]
    paper.number("cov_wild_inf_cells", " and ".join(
        f"{p} prompts x {j} judges" for p, j in zip(wild_inf.prompts, wild_inf.judges,
                                                    strict=True)) or "no cell")
    paper.number("cov_wild_two_median_width_max", wild_two.width_median.max(), ".2f")
    paper.extremes("cov_wild_two", wild_two.marginal, ".1f")
    three = table[(table.judges == 3) & (table.method == "twoway_t")]
    paper.extremes("cov_three_t", three.marginal, ".1f")
    five = table[(table.judges == 5) & (table.method == "jackknife")]
    paper.extremes("cov_five_jack", five.marginal, ".1f")
    for prompts, word in ((30, "thirty"), (100, "hundred"), (300, "threehundred")):
        for column in ("marginal", "simultaneous"):
            paper.number(f"cov_auto_{word}_{column[:3]}",
                         _cell(table, prompts, 30, "auto", column), ".1f")
            paper.number(f"cov_auto_{word}_twoway_{column[:3]}",
                         _cell(table, prompts, 30, "twoway", column), ".1f")
    paper.number("cov_grid", f"{table.prompts.nunique()} x {table.judges.nunique()}")
    paper.number("cov_many_judges", 30, "d")
    paper.number("cov_hundred", 100, "d")
    paper.number("cov_threehundred", 300, "d")


def design_results(paper: Paper, source: Path = PAPER / "coverage") -> None:
    """Table ``design_coverage`` and the numbers of the thin, strong-judge and both-orders
    cells (``coverage_designs.csv``): each cell's coverage by method under short keys
    (:data:`DESIGN_KEYS`), and the ranges the text quotes for ``auto``."""
    table = read_design_cells(source)
    cells = list(dict.fromkeys(table.cell))
    for key, cell in zip(DESIGN_KEYS, cells, strict=True):
        paper.number(f"cov_{key}_label", cell)
        for row in table[table.cell == cell].itertuples():
            for column in ("marginal", "simultaneous"):
                method = row.method.replace("2", "two")  # keys are LaTeX macro names
                paper.number(f"cov_{key}_{method}_{column[:3]}", getattr(row, column),
                             ".1f")
    for key, cell in zip(DESIGN_KEYS, cells, strict=True):
        rows = table[(table.cell == cell) & (table.kind == "thin, lopsided")]
        for row in rows.itertuples():
            for column in ("marginal_field", "simultaneous_field"):
                paper.number(f"cov_{key}_{row.method.replace('2', 'two')}_field_"
                             f"{column[:3]}", getattr(row, column), ".1f")
        if not rows.empty:  # the share of models that missed an opponent: one per log
            paper.number(f"cov_{key}_missing", rows.missing_opponents.iloc[0], ".0f")
    # reference values, not ours: the independent coverage study behind issue 11 (the
    # old default in its thin design, against the field's win rate)
    paper.number("issue_study_sandwich_mar", 75, "d")
    paper.number("issue_study_sandwich_sim", 14, "d")
    paper.number("incomplete_share", 100 * INCOMPLETE_SHARE, ".0f")
    auto = table[table.method == "auto"]
    thin = auto[auto.kind.str.startswith("thin")]  # the lopsided thin cells included
    for column in ("marginal", "simultaneous"):
        paper.extremes(f"cov_auto_thin_{column[:3]}", thin[column], ".1f")
    paper.number("cov_auto_thin_worst_wrong", thin.worst_model_wrong_share.max(), ".1f")
    paper.number("cov_design_reps", int(table.reps.min()), "d")
    paper.number("auto_small_axis", SMALL_AXIS, "d")
    paper.number("auto_thin_pair", THIN_PAIR, "d")
    paper.number("auto_min_crossed_axis", MIN_CROSSED_AXIS, "d")
    shown = table.assign(coverage=[f"{m:.1f} / {s:.1f}" for m, s in
                                   zip(table.marginal, table.simultaneous, strict=True)])
    grid = shown.pivot_table(index=["kind", "cell"], columns="method", values="coverage",
                             aggfunc="first", sort=False)
    methods = [m for m in load_study().DESIGN_METHODS if m in grid]
    paper.table("design_coverage", grid[methods].fillna("").reset_index()
                .rename(columns=DESIGN_HEADERS),
                "Coverage (%) of nominal 95% intervals, marginal / simultaneous, in thin, "
                "lopsided thin, strong-judge and both-orders designs "
                f"({int(table.reps.min())} replications per cell). "
                "naive: the independent-rows SE; CR1: the CR1 sandwich clustered by the "
                "cell's axes, normal reference; CR2: the CR2 sandwich, normal reference; "
                "jackknife: the delete-one-cluster jackknife; pigeonhole bootstrap: Owen's "
                "bootstrap resampling prompts and judges (both only where two axes are "
                "clustered); auto: the method analyze runs by default.")


def read_design_cells(source: Path) -> pd.DataFrame:
    """``coverage_designs.csv`` with its cell labels in English ("1 pairs/prompt", written
    by scripts/coverage.py, reads "1 pair/prompt"; the committed file is left as it is)."""
    table = pd.read_csv(source / "coverage_designs.csv")
    return table.assign(cell=table.cell.str.replace(r"\b1 pairs/", "1 pair/", regex=True))


def heldout_results(paper: Paper, source: Path = PAPER / "coverage" / "heldout") -> None:
    """The held-out S-small cell's win-rate coverage (``docs/coverage.md``) before issue
    24's fix (the pigeonhole bootstrap, ``before-fix/summary.csv``) and after it (CR2 with
    Pan-Wall df, ``summary.csv``), as ``heldout_small_{before,after}_{mar,sim}``; the
    diagnostic pass's replications and R-alpaca's joint coverage with Wald intervals
    (``before-fix``), the number of held-out cells and R-prd's win-rate coverage."""
    def win_rate_row(table: pd.DataFrame, cell: str):
        return table[(table.cell == cell) & (table.estimator == "winrate")].iloc[0]

    tables = {when: pd.read_csv(folder / "summary.csv")
              for when, folder in (("before", source / "before-fix"), ("after", source))}
    for when, table in tables.items():
        row = win_rate_row(table, "S-small")
        paper.number(f"heldout_small_{when}_mar", row.marginal, ".1f")
        paper.number(f"heldout_small_{when}_sim", row.simultaneous, ".1f")
    before, after = tables["before"], tables["after"]
    paper.number("heldout_diag_reps", int(before.reps.max()), ",d")
    paper.number("heldout_alpaca_wald_sim", win_rate_row(before, "R-alpaca").simultaneous,
                 ".1f")
    paper.number("heldout_all_cells", after.cell.nunique(), "d")
    prd = win_rate_row(after, "R-prd")
    paper.number("heldout_rprd_wr_mar", prd.marginal, ".1f")
    paper.number("heldout_rprd_wr_sim", prd.simultaneous, ".1f")
