"""Leaderboard figures: a forest plot of scores with naive, clustered and simultaneous
intervals, and a rank-interval plot of rank confidence sets. Many models (up to 150 and
beyond) are laid out in columns of at most :data:`ROWS_PER_COLUMN`, so the figure's height
stays bounded and every label keeps :data:`FONT_SIZE` pt at the saved size.

Figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas, so nothing
here touches pyplot's global backend or state (safe in scripts, servers and notebooks).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from winrate import estimators
from winrate.errors import WinrateInputError
from winrate.inference.analysis import Analysis, joint_inference
from winrate.inference.intervals import clip_to_range
from winrate.report.leaderboard import format_count
from winrate.variance.reference import critical_value

_COLORS = {"naive": "#9e9e9e", "clustered": "#1f77b4", "simultaneous": "#ff7f0e",
           "point": "#111111"}
#: Most models in one column of the figure; more are split into columns side by side.
ROWS_PER_COLUMN = 50
#: Height of one model's row (inches): 13.7 pt, room for an 8 pt label.
ROW_HEIGHT = 0.19
#: Smallest font of the figure (pt at the saved size; the PNG is saved at :data:`DPI`).
FONT_SIZE = 8
DPI = 130
_LABEL_INCH_PER_CHAR = 0.065  # an 8 pt sans-serif character is about 4.5 pt wide
_PANELS_INCH = 5.6  # forest and rank panels of one column
_CHARS_PER_INCH = 15  # caption characters per inch of figure width at FONT_SIZE


def _with_joint(analysis: Analysis):
    """The analysis' joint inference, computed from its covariance if it lacks a part."""
    joint = analysis.joint
    if joint is not None and joint.sim_low is not None and joint.ranks is not None:
        return joint
    s = analysis.settings
    return joint_inference(analysis.scores, analysis.cov, s["alpha"], s["df"],
                           simultaneous=True, ranks=True, seed=s.get("seed", 0),
                           estimable=~np.isnan(analysis.se))


def _order(analysis: Analysis) -> np.ndarray:
    """Scored models, best first (stable on ties)."""
    scores = analysis.scores
    keep = np.flatnonzero(~np.isnan(scores))
    return keep[np.argsort(-scores[keep], kind="stable")]


def column_blocks(n: int, rows: int = ROWS_PER_COLUMN) -> list[slice]:
    """Consecutive ranks split into the fewest columns of at most ``rows`` models, of equal
    length but for the last: 150 models -> three columns of 50."""
    per = -(-n // max(1, -(-n // rows)))  # ceil(n / ceil(n / rows))
    return [slice(start, min(start + per, n)) for start in range(0, n, per)]


def _labels(ax, analysis, shown: np.ndarray, n_rows: int) -> None:
    """Model names down the y axis, best on top, ``n_rows`` row slots (so that every column
    of a multi-column figure has the same row height)."""
    ax.set_yticks(np.arange(len(shown)))
    # names are text as written: a '$' in a model name is not mathtext
    ax.set_yticklabels([str(analysis.models[i]) for i in shown], fontsize=FONT_SIZE,
                       parse_math=False)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=FONT_SIZE)
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)


def _score_range(analysis: Analysis, joint, scale: float) -> tuple[float, float]:
    """x range of the forest plot: every interval of every model, padded by 3%."""
    z = critical_value(analysis.intervals.alpha)
    naive = clip_to_range(analysis.scores - z * analysis.se_naive,
                          analysis.scores + z * analysis.se_naive, analysis.leaderboard.scale)
    ends = np.concatenate([analysis.intervals.low, analysis.intervals.high, joint.sim_low,
                           joint.sim_high, *naive[:2]])
    ends = scale * ends[np.isfinite(ends)]
    low, high = (ends.min(), ends.max()) if ends.size else (0.0, 1.0)
    pad = 0.03 * (high - low) or 1.0
    return low - pad, high + pad


def forest_plot(ax, analysis: Analysis, joint=None, rows: slice = slice(None),
                n_rows: int | None = None) -> None:
    """Scores (percent, or Elo points) with three intervals per model, best on top: naive (rows
    independent, normal), clustered (the analysis' marginal interval) and simultaneous
    (covering all models jointly), drawn as nested bars of decreasing thickness. ``rows``:
    the ranks shown (a column of a multi-column figure), in ``n_rows`` row slots."""
    joint = joint or _with_joint(analysis)
    order = _order(analysis)[rows]
    y = np.arange(len(order))
    iv = analysis.intervals
    alpha = iv.alpha
    z = critical_value(alpha)
    naive_half = z * analysis.se_naive
    level = round(100 * (1 - alpha))
    bars = [
        ("simultaneous", joint.sim_low, joint.sim_high, 9, f"{level}% simultaneous"),
        ("clustered", iv.low, iv.high, 5, f"{level}% clustered ({analysis.method})"),
        ("naive", *clip_to_range(analysis.scores - naive_half, analysis.scores + naive_half,
                                 analysis.leaderboard.scale)[:2], 2,
         f"{level}% naive (rows independent)"),
    ]
    unit = analysis.leaderboard.scale
    scale = unit.factor
    for key, low, high, width, label in bars:
        ax.hlines(y, scale * low[order], scale * high[order], color=_COLORS[key], lw=width,
                  alpha=0.55 if key == "simultaneous" else 0.9, label=label)
    ax.plot(scale * analysis.scores[order], y, "o", color=_COLORS["point"], ms=3.5,
            label="score", zorder=3)
    _labels(ax, analysis, order, n_rows or len(order))
    ax.set_xlim(*_score_range(analysis, joint, scale))
    ax.set_xlabel(unit.axis_label, fontsize=FONT_SIZE + 1)
    ax.set_title("Scores and intervals", fontsize=FONT_SIZE + 2)


def rank_plot(ax, analysis: Analysis, joint=None, rows: slice = slice(None),
              n_rows: int | None = None) -> None:
    """Rank confidence set of each model (1 = best) as a bar from its lowest to its highest
    possible rank, with the rank of the point estimate as a dot; same model order (and
    ``rows``, ``n_rows``) as the forest plot."""
    joint = joint or _with_joint(analysis)
    full = _order(analysis)
    order = full[rows]
    level = round(100 * (1 - analysis.intervals.alpha))
    method = _rank_method(joint)
    y = np.arange(len(order))
    ax.hlines(y, joint.rank_low[order] - 0.3, joint.rank_high[order] + 0.3,
              color=_COLORS["clustered"],
              lw=6, alpha=0.8, label=f"{level}% rank set ({method})")
    ax.plot(np.arange(1, len(full) + 1)[rows], y, "o", color=_COLORS["point"], ms=3.5,
            label="rank of the score", zorder=3)
    _labels(ax, analysis, order, n_rows or len(order))
    ax.set_xlim(0.4, len(full) + 0.6)
    ticks = np.unique(np.linspace(1, len(full), min(len(full), 6)).round().astype(int))
    ax.set_xticks(ticks)
    ax.set_xlabel("rank (1 = best)", fontsize=FONT_SIZE + 1)
    ax.set_title("Rank confidence sets", fontsize=FONT_SIZE + 2)


def leaderboard_figure(analysis: Analysis) -> Figure:
    """Forest plot and rank-interval plot side by side, in as many columns of at most
    :data:`ROWS_PER_COLUMN` models as needed (so the height stays bounded and every label
    readable at :data:`FONT_SIZE` pt); a short title, and the method in the caption."""
    if not np.isfinite(analysis.scores).any():
        raise WinrateInputError("no model has comparisons: nothing to plot")
    joint = _with_joint(analysis)
    n = int(np.isfinite(analysis.scores).sum())
    blocks = column_blocks(n)
    n_rows = blocks[0].stop - blocks[0].start
    label_width = _LABEL_INCH_PER_CHAR * max(len(str(m)) for m in analysis.models)
    width = len(blocks) * (label_width + _PANELS_INCH)
    fig = Figure(figsize=(max(width, 7.0), 2.4 + ROW_HEIGHT * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2 * len(blocks), gridspec_kw={"width_ratios": [3, 2] * len(blocks)})
    for k, rows in enumerate(blocks):
        forest_plot(axes[2 * k], analysis, joint, rows, n_rows)
        rank_plot(axes[2 * k + 1], analysis, joint, rows, n_rows)
        axes[2 * k + 1].set_yticks([])  # the forest plot beside it names the rows
    handles, labels = [], []
    for ax in axes[:2]:
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    fig.suptitle(_title(analysis), fontsize=FONT_SIZE + 3)
    _add_footer(fig, handles, labels, caption(analysis, joint))
    return fig


def _add_footer(fig: Figure, handles, labels, text: str) -> None:
    """One legend for all panels (it never hides an interval) and under it the caption,
    wrapped to the figure's width, in a bottom strip kept out of the constrained layout."""
    ncol = 6 if fig.get_figwidth() > 12 else 3
    text = textwrap.fill(text, int(fig.get_figwidth() * _CHARS_PER_INCH))
    line = 1.35 * FONT_SIZE / 72 / fig.get_figheight()  # one line of text, figure fraction
    caption = line * (text.count("\n") + 1) + 0.06 / fig.get_figheight()
    legend = line * 1.5 * -(-len(labels) // ncol)
    fig.get_layout_engine().set(rect=(0, caption + legend, 1, 1 - caption - legend))
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, caption), ncol=ncol,
               fontsize=FONT_SIZE, frameon=False, borderaxespad=0)
    fig.text(0.01, caption, text, fontsize=FONT_SIZE, va="top", ha="left", parse_math=False)


def _title(analysis: Analysis) -> str:
    """A short title: what is ranked and how many."""
    title = estimators.of(analysis.leaderboard).title
    what = analysis.leaderboard.scale.noun(title)
    what = what[0].upper() + what[1:]
    return f"{what} of {int(np.isfinite(analysis.scores).sum())} models"


def caption(analysis: Analysis, joint) -> str:
    """The figure's caption: the data, the variance method and what the intervals are."""
    level = round(100 * (1 - analysis.intervals.alpha))
    note = analysis.method_note or analysis.method
    crit = joint.simultaneous_critical_value
    sim = "" if crit is None else f" (critical value {crit:.3f})"
    clusters = " + ".join(analysis.clustering)
    return (f"{format_count(analysis.n_comparisons)} comparisons; "
            f"{f'clustered by {clusters}' if clusters else 'not clustered'}. Variance: "
            f"{note}. Bars: {level}% "
            f"naive (rows independent), clustered and simultaneous{sim} intervals; rank sets "
            f"{_rank_method(joint)}, 1 = best.")


def _rank_method(joint) -> str:
    """The rank sets' method, or why there are none to compute (no estimable model)."""
    return joint.ranks.method if joint.ranks is not None else "all ranks: no model estimable"


def plot_leaderboard(analysis: Analysis, path) -> Path:
    """Write :func:`leaderboard_figure` to ``path`` (format from the extension, e.g. PNG),
    whole or not at all (:func:`winrate.report.output.replacing`)."""
    from winrate.report.output import replacing

    path = Path(path)
    if path.parent and not path.parent.exists():
        raise WinrateInputError(f"cannot write the plot: directory {path.parent} not found")
    figure = leaderboard_figure(analysis)
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=DPI)
    return path
