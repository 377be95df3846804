"""Figure 5 (naive coverage against inflation) plots exactly the real-data points that
Table 1 (the inflation table) prints an implied coverage for, at the printed values."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "paper"))
sys.path.insert(1, str(ROOT / "scripts"))

import simulations  # noqa: E402
from real_data import implied_coverage_points  # noqa: E402

TABLE = ROOT / "paper" / "tables" / "inflation.csv"
POINTS = ROOT / "paper" / "figures" / "naive_coverage_points.csv"


def _table() -> pd.DataFrame:
    return pd.read_csv(TABLE, dtype=str, keep_default_na=False)


def test_committed_points_are_the_table_rows_with_an_implied_coverage():
    table, points = _table(), pd.read_csv(POINTS)
    printed = table[table["implied naive coverage %"].str.match(r"^\d")]
    assert list(zip(points.dataset, points.clustering, strict=True)) == list(
        zip(printed.dataset, printed.clustering, strict=True))
    assert [f"{v:.1f}" for v in points.implied] == list(printed["implied naive coverage %"])
    assert [f"{v:.2f}" for v in points.inflation] == [
        c.split()[0] for c in printed["SE inflation median [range]"]]
    # the printed coverage is the normal probability at the printed inflation (rounding)
    implied = 100 * (2 * norm.cdf(1.959964 / points.inflation) - 1)
    np.testing.assert_allclose(points.implied, implied, atol=0.3)
    withheld = table[table["implied naive coverage %"].str.startswith("-")]
    assert len(withheld) > 0  # e.g. LLMFAO by prompt: not plotted


class _Run:
    def __init__(self, inflation):
        self.inflation = inflation

    def summary(self):
        return {"inflation": self.inflation, "naive": 0.5, "naive_mcse": 0.01}


class _Paper:
    def __init__(self, root):
        self.root, self.written, self.fig = root, [], None

    def path(self, *parts):
        path = self.root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def figure(self, name, fig, caption):
        self.fig = fig


def test_the_figure_draws_the_points_it_is_given_and_no_others(tmp_path):
    points = implied_coverage_points(_table())
    paper = _Paper(tmp_path)
    simulations.coverage_figure(paper, {"mmlu": _Run(3.0), "paired": _Run(0.7)}, points)
    (ax,) = paper.fig.axes
    (real,) = [line for line in ax.lines if line.get_label() == "real logs (Table 1)"]
    drawn = sorted(zip(real.get_xdata(), real.get_ydata(), strict=True))
    assert drawn == sorted(zip(points.inflation, points.implied, strict=True))
    labels = {t.get_text() for t in ax.texts}
    assert labels == {f"{d} ({c})" for d, c in zip(points.dataset, points.clustering,
                                                    strict=True)}
