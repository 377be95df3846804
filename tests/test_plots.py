"""Plots draw the numbers of the analysis: interval segments and rank bars are read back
from the figure's artists and compared with the analysis (and inference) results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.inference import critical_value
from winrate.plots import forest_plot, leaderboard_figure, plot_leaderboard, rank_plot
from winrate.simulate import SimulationDesign, simulate_comparisons


@pytest.fixture(scope="module")
def analysis():
    sim = simulate_comparisons(SimulationDesign(n_models=6, n_prompts=80, n_judges=12), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(sim.log, "prompt+judge", simultaneous=True, ranks=True, n_draws=20_000)


def _segments(ax) -> dict[str, np.ndarray]:
    """label -> (n, 2) x-extents of each horizontal segment, top to bottom."""
    out = {}
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            segs = np.array([s[:, 0] for s in coll.get_segments()])
            out[coll.get_label()] = segs
    return out


def test_forest_plot_draws_the_three_intervals_best_first(analysis):
    ax = Figure().subplots()
    forest_plot(ax, analysis)
    order = np.argsort(-analysis.scores)
    segs = _segments(ax)
    sim = next(v for k, v in segs.items() if "simultaneous" in k)
    clustered = next(v for k, v in segs.items() if "clustered" in k)
    naive = next(v for k, v in segs.items() if "naive" in k)
    joint, iv = analysis.joint, analysis.intervals
    np.testing.assert_allclose(sim, 100 * np.column_stack([joint.sim_low, joint.sim_high])[order])
    np.testing.assert_allclose(clustered, 100 * np.column_stack([iv.low, iv.high])[order])
    half = critical_value(0.05) * analysis.se_naive
    np.testing.assert_allclose(naive, 100 * np.column_stack(
        [analysis.scores - half, analysis.scores + half])[order])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [str(m) for m in analysis.models[order]]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # best model on top


def test_rank_plot_bars_span_the_rank_sets(analysis):
    ax = Figure().subplots()
    rank_plot(ax, analysis)
    order = np.argsort(-analysis.scores)
    bars = next(iter(_segments(ax).values()))
    ranks = analysis.joint.ranks
    np.testing.assert_allclose(bars[:, 0] + 0.3, ranks.low[order])
    np.testing.assert_allclose(bars[:, 1] - 0.3, ranks.high[order])


def test_figure_computes_missing_joint_inference_and_writes_png(tmp_path):
    sim = simulate_comparisons(SimulationDesign(n_models=4, n_prompts=40, n_judges=5), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        plain = analyze(sim.log, "prompt")
    fig = leaderboard_figure(plain)
    assert len(fig.axes) == 2 and "sandwich" in fig._suptitle.get_text()
    path = plot_leaderboard(plain, tmp_path / "lb.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(WinrateInputError, match="not found"):
        plot_leaderboard(plain, tmp_path / "missing" / "lb.png")
