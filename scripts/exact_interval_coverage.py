"""Exact average coverage of binomial intervals when theta ~ U(0, 1).

Reproduces the experiment of Bowyer, Aitchison & Ivanova (2025, arXiv 2503.01747) without
simulation noise: for N questions and an interval method, the coverage averaged over
theta ~ U(0, 1) is ``sum_k int_{CI(k)} Binom(k; N, theta) dtheta``, a sum of incomplete
beta functions (:func:`winrate.evals.exact_average_coverage`). Writes
``paper/tables/interval_coverage_exact.csv`` and ``.md``.

Usage: ``python scripts/exact_interval_coverage.py [--out-dir paper/tables]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from winrate.evals import BINOMIAL_METHODS, exact_average_coverage

ROOT = Path(__file__).resolve().parents[1]
TABLE_CSV = ROOT / "paper" / "tables" / "interval_coverage_exact.csv"
NS = (3, 10, 30, 100)
ALPHAS = (0.05, 0.1, 0.2)


def coverage_table(ns=NS, alphas=ALPHAS, methods=BINOMIAL_METHODS) -> pd.DataFrame:
    """One row per (n, alpha, method): exact average coverage and mean clipped width."""
    rows = [exact_average_coverage(n, m, a) for a in alphas for n in ns for m in methods]
    return pd.DataFrame(
        [{"n": r.n, "alpha": r.alpha, "nominal": 1 - r.alpha, "method": r.method,
          "coverage": r.coverage, "mean_width": r.mean_width} for r in rows]
    )


def markdown(table: pd.DataFrame) -> str:
    """Coverage (and mean width) by method and N, one block per nominal level."""
    lines = ["# Exact average coverage of binomial intervals, theta ~ U(0, 1)", "",
             "Computed exactly as a sum of incomplete beta functions (no simulation); "
             "width is the mean width of the interval clipped to [0, 1].", ""]
    for alpha, block in table.groupby("alpha", sort=True):
        cov = block.pivot(index="method", columns="n", values="coverage")
        width = block.pivot(index="method", columns="n", values="mean_width")
        ns = list(cov.columns)
        lines += [f"## Nominal {100 * (1 - alpha):g}%", "",
                  "| method | " + " | ".join(f"N = {n}" for n in ns) + " |",
                  "|---|" + "---|" * len(ns)]
        for method in [m for m in BINOMIAL_METHODS if m in cov.index]:
            cells = [f"{cov.loc[method, n]:.6f} (w {width.loc[method, n]:.3f})" for n in ns]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=TABLE_CSV.parent)
    args = parser.parse_args(argv)
    table = coverage_table()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out_dir / TABLE_CSV.name, index=False, float_format="%.12g")
    (args.out_dir / "interval_coverage_exact.md").write_text(markdown(table))
    print(markdown(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
