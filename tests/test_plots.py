"""Plots draw the numbers of the analysis: interval segments and rank bars are read back
from the figure's artists and compared with the analysis (and inference) results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.text import Text

from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.report.plots import (
    DPI,
    FONT_SIZE,
    column_blocks,
    forest_plot,
    leaderboard_figure,
    plot_leaderboard,
    rank_plot,
)
from winrate.settings import Joint, MonteCarlo, Variance
from winrate.variance.reference import critical_value


@pytest.fixture(scope="module")
def analysis():
    sim = simulate_comparisons(SimulationDesign(n_models=6, n_prompts=80, n_judges=12), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(sim.log, "prompt+judge", joint=Joint(simultaneous=True, ranks=True),
                       monte_carlo=MonteCarlo(n_draws=20_000))


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
        plain = analyze(sim.log, "prompt", variance=Variance("sandwich"))
    fig = leaderboard_figure(plain)
    assert len(fig.axes) == 2 and fig._suptitle.get_text() == "Win rates of 4 models"
    captions = [t.get_text() for t in fig.texts if t is not fig._suptitle]
    assert len(captions) == 1 and "Variance: sandwich" in captions[0]
    path = plot_leaderboard(plain, tmp_path / "lb.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(WinrateInputError, match="not found"):
        plot_leaderboard(plain, tmp_path / "missing" / "lb.png")


def _visible_texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def test_150_models_fit_a_bounded_figure_in_columns_with_readable_labels():
    """150 models: three columns of 50, the saved PNG (figure inches x DPI, no tight bbox)
    bounded in size, every text at least 8 pt, each model labelled once in rank order, and
    no two labels of a column overlapping (rows at least as tall as the labels)."""
    sim = simulate_comparisons(SimulationDesign(n_models=150, n_prompts=60, n_judges=5), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        big = analyze(sim.log, "prompt", joint=Joint(simultaneous=True, ranks=True),
                      monte_carlo=MonteCarlo(n_draws=1000))
    fig = leaderboard_figure(big)
    assert column_blocks(150) == [slice(0, 50), slice(50, 100), slice(100, 150)]
    width, height = fig.get_size_inches() * DPI
    assert height <= 1600 and width <= 2600  # pixels (the old layout: 1430 x 5317 at 129)
    fig.canvas.draw()
    texts = _visible_texts(fig)
    assert min(t.get_fontsize() for t in texts) >= FONT_SIZE == 8
    forests = fig.axes[::2]
    labels = [[t.get_text() for t in ax.get_yticklabels()] for ax in forests]
    order = np.argsort(-big.scores, kind="stable")
    assert sum(labels, []) == [str(m) for m in big.models[order]]
    renderer = fig.canvas.get_renderer()
    for ax in forests:
        boxes = sorted((t.get_window_extent(renderer) for t in ax.get_yticklabels()),
                       key=lambda box: box.y0)
        assert all(low.y1 <= high.y0 + 0.5 for low, high in zip(boxes, boxes[1:], strict=False))
    assert len({ax.get_xlim() for ax in forests}) == 1  # one score scale for all columns


def test_column_blocks_are_balanced_and_cover_every_rank():
    for n in (1, 5, 50, 51, 129, 150, 301):
        blocks = column_blocks(n)
        sizes = [b.stop - b.start for b in blocks]
        assert sum(sizes) == n and max(sizes) <= 50 and blocks[0].start == 0
        assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:], strict=False))
        assert max(sizes) - min(sizes) <= len(blocks)  # equal but for the last
