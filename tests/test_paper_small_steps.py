"""Small parts of the paper build that read committed files: the scale table's parser
(scripts/paper/software.py) on a hand-written record, Paper.extremes, and the numbers the
coverage steps read from the committed study CSVs, each recomputed here with pandas."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "paper"))
sys.path.insert(1, str(ROOT / "scripts"))

from common import Paper  # noqa: E402
from software import scale_runs  # noqa: E402

NUMBERS = json.loads((ROOT / "paper" / "numbers.json").read_text())
HELDOUT = ROOT / "paper" / "coverage" / "heldout"

RECORD = """recorded 2026-01-01 by python scripts/bench.py --only scale
machine: test, load average 1.0
scale: 1,000 rows, prompt-partitioned-ints, two-way CR1 Bradley-Terry on DuckDB, --memory 4G
  wall time: 1.5 s (range 1.2-1.8, 2 runs)
  peak resident memory: 0.50 GiB (range 0.49-0.51, 2 runs)
some other line
scale: 2,000 rows, random-order-strings, two-way CR1 Bradley-Terry on DuckDB, --memory 3G
  wall time: 700.0 s (range 700.0-700.0, 1 runs)
  peak resident memory: 3.40 GiB (range 3.40-3.40, 1 runs)
"""


def test_scale_record_parses_every_run_in_order():
    runs = scale_runs(RECORD)
    assert list(runs["rows"]) == ["1,000", "2,000"]
    assert list(runs["wall"]) == ["1.5", "700.0"]
    assert list(runs["wall_range"]) == ["1.2-1.8", "700.0-700.0"]
    assert list(runs["runs"]) == ["2", "1"]
    assert list(runs["rss"]) == ["0.50", "3.40"]
    assert list(runs["memory"]) == ["4G", "3G"]
    with pytest.raises(ValueError, match="no 'scale:' run"):
        scale_runs("machine: nothing recorded\n")


def test_extremes_registers_min_and_max_without_nan(tmp_path):
    paper = Paper(tmp_path)
    paper.extremes("x", [3.0, np.nan, -1.25, 2.0], ".1f")
    assert paper.numbers == {"x_min": "-1.2", "x_max": "3.0"}
    with pytest.raises(ValueError, match="twice"):
        paper.extremes("x", [1.0])


def test_heldout_numbers_are_those_of_the_committed_csvs():
    after = pd.read_csv(HELDOUT / "summary.csv")
    before = pd.read_csv(HELDOUT / "before-fix" / "summary.csv")
    wr = after[after.estimator == "winrate"].set_index("cell")
    assert NUMBERS["heldout_rprd_wr_mar"] == f"{wr.loc['R-prd', 'marginal']:.1f}"
    assert NUMBERS["heldout_rprd_wr_sim"] == f"{wr.loc['R-prd', 'simultaneous']:.1f}"
    wald = before[(before.cell == "R-alpaca") & (before.estimator == "winrate")]
    assert NUMBERS["heldout_alpaca_wald_sim"] == f"{wald.simultaneous.iloc[0]:.1f}"
    assert NUMBERS["heldout_all_cells"] == str(after.cell.nunique())
    ruled = after[~after.cell.isin(["R-prd", "R-pandalm", "R-llmfao"])]
    assert NUMBERS["heldout_rule_met"] == str(int(ruled.rule_met.sum()))
    assert NUMBERS["heldout_mar_min"] == f"{ruled.marginal.min():.1f}"
    assert NUMBERS["heldout_sim_max"] == f"{ruled.simultaneous.max():.1f}"


def test_auto_grid_numbers_are_those_of_the_committed_grid():
    grid = pd.read_csv(ROOT / "paper" / "coverage" / "coverage.csv")
    auto = grid[grid.method == "auto"]
    few, many = auto[auto.judges < 5], auto[auto.judges >= 5]
    assert NUMBERS["cov_autogrid_few_mar_min"] == f"{few.marginal.min():.1f}"
    assert NUMBERS["cov_autogrid_few_mar_max"] == f"{few.marginal.max():.1f}"
    assert NUMBERS["cov_autogrid_many_sim_min"] == f"{many.simultaneous.min():.1f}"


# ------------------------------------------------------------- round-off never shows


def test_a_round_off_size_is_registered_as_a_bound(tmp_path):
    paper = Paper(tmp_path)
    assert paper.bound("tiny_dev", 3e-15, 1e-12) == "< 1e-12"
    assert paper.numbers["tiny_dev"] == "< 1e-12"
    with pytest.raises(ValueError, match="not below"):
        paper.bound("big_dev", 2e-12, 1e-12)


def _figure_bytes(nudge: float, coarse: bool) -> bytes:
    """A scatter and a line of 5,000 points, moved by ``nudge`` relative, as PDF bytes
    (matplotlib prints marker positions to 1e-10 pt: a move of about 3e-13 pt flips the
    last digit of about 0.3% of them, so 15 on average)."""
    import io
    from contextlib import nullcontext

    from common import PDF_METADATA, coarse_pdf_numbers
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    x = np.linspace(0, 1, 5000) * (1 + nudge)
    ax.plot(x, np.sin(7 * x), "o", ms=2)
    ax.plot(x, np.cos(x))
    ax.set_xlim(0, 1)
    ax.set_ylim(-1.1, 1.1)
    buffer = io.BytesIO()
    with coarse_pdf_numbers() if coarse else nullcontext():
        fig.savefig(buffer, format="pdf", metadata=PDF_METADATA)
    return buffer.getvalue()


def test_figures_do_not_carry_the_last_bits():
    """matplotlib's own PDF changes when the plotted values move by 1e-15 (as another CPU
    may compute them); the paper's figures, written with coarse_pdf_numbers, do not."""
    assert _figure_bytes(0, coarse=False) != _figure_bytes(1e-15, coarse=False)
    assert _figure_bytes(0, coarse=True) == _figure_bytes(1e-15, coarse=True)
