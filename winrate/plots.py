"""Leaderboard figures: a forest plot of scores with naive, clustered and simultaneous
intervals, and a rank-interval plot of rank confidence sets.

Figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas, so nothing
here touches pyplot's global backend or state (safe in scripts, servers and notebooks).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from winrate.analysis import LeaderboardAnalysis, joint_inference
from winrate.errors import WinrateInputError
from winrate.inference import critical_value
from winrate.report import display_unit

_COLORS = {"naive": "#9e9e9e", "clustered": "#1f77b4", "simultaneous": "#ff7f0e",
           "point": "#111111"}


def _with_joint(analysis: LeaderboardAnalysis):
    """The analysis' joint inference, computed from its covariance if it lacks a part."""
    joint = analysis.joint
    if joint is not None and joint.sim_low is not None and joint.ranks is not None:
        return joint
    s = analysis.settings
    return joint_inference(analysis.scores, analysis.cov, s["alpha"], s["df"],
                           simultaneous=True, ranks=True, seed=s.get("seed", 0),
                           estimable=~np.isnan(analysis.se))


def _order(analysis: LeaderboardAnalysis) -> np.ndarray:
    """Scored models, best first (stable on ties)."""
    scores = analysis.scores
    keep = np.flatnonzero(~np.isnan(scores))
    return keep[np.argsort(-scores[keep], kind="stable")]


def _labels(ax, analysis, order) -> None:
    y = np.arange(len(order))
    ax.set_yticks(y)
    ax.set_yticklabels([str(analysis.models[i]) for i in order], fontsize=8)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)


def forest_plot(ax, analysis: LeaderboardAnalysis, joint=None) -> None:
    """Scores (percent, or Elo points) with three intervals per model, best on top: naive (rows
    independent, normal), clustered (the analysis' marginal interval) and simultaneous
    (covering all models jointly), drawn as nested bars of decreasing thickness."""
    joint = joint or _with_joint(analysis)
    order = _order(analysis)
    y = np.arange(len(order))
    iv = analysis.intervals
    alpha = iv.alpha
    z = critical_value(alpha)
    naive_half = z * analysis.se_naive
    level = round(100 * (1 - alpha))
    bars = [
        ("simultaneous", joint.sim_low, joint.sim_high, 9, f"{level}% simultaneous"),
        ("clustered", iv.low, iv.high, 5, f"{level}% clustered ({analysis.method})"),
        ("naive", analysis.scores - naive_half, analysis.scores + naive_half, 2,
         f"{level}% naive (rows independent)"),
    ]
    scale = display_unit(analysis)[0]
    for key, low, high, width, label in bars:
        ax.hlines(y, scale * low[order], scale * high[order], color=_COLORS[key], lw=width,
                  alpha=0.55 if key == "simultaneous" else 0.9, label=label)
    ax.plot(scale * analysis.scores[order], y, "o", color=_COLORS["point"], ms=3.5,
            label="score", zorder=3)
    _labels(ax, analysis, order)
    ax.set_xlabel("rating (Elo scale)" if analysis.settings.get("scale") == "elo"
                  else "score: win probability (%)")
    ax.set_title("Scores and intervals", fontsize=10)


def rank_plot(ax, analysis: LeaderboardAnalysis, joint=None) -> None:
    """Rank confidence set of each model (1 = best) as a bar from its lowest to its highest
    possible rank, with the rank of the point estimate as a dot; same model order as the
    forest plot."""
    joint = joint or _with_joint(analysis)
    order = _order(analysis)
    ranks = joint.ranks
    y = np.arange(len(order))
    ax.hlines(y, joint.rank_low[order] - 0.3, joint.rank_high[order] + 0.3,
              color=_COLORS["clustered"],
              lw=6, alpha=0.8, label=f"{round(100 * (1 - ranks.alpha))}% rank set "
                                     f"({ranks.method})")
    ax.plot(np.arange(1, len(order) + 1), y, "o", color=_COLORS["point"], ms=3.5,
            label="rank of the score", zorder=3)
    _labels(ax, analysis, order)
    ax.set_xlim(0.4, len(order) + 0.6)
    ticks = np.unique(np.linspace(1, len(order), min(len(order), 10)).round().astype(int))
    ax.set_xticks(ticks)
    ax.set_xlabel("rank (1 = best)")
    ax.set_title("Rank confidence sets", fontsize=10)


def leaderboard_figure(analysis: LeaderboardAnalysis) -> Figure:
    """Forest plot and rank-interval plot side by side, with the variance method noted."""
    if not np.isfinite(analysis.scores).any():
        raise WinrateInputError("no model has comparisons: nothing to plot")
    joint = _with_joint(analysis)
    n = int(np.isfinite(analysis.scores).sum())
    fig = Figure(figsize=(11, 2.2 + 0.3 * n), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    forest_plot(left, analysis, joint)
    rank_plot(right, analysis, joint)
    right.set_yticklabels([])
    handles, labels = [], []
    for ax in (left, right):  # one legend under both panels: it never hides an interval
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=7,
               frameon=False)
    note = analysis.method_note or analysis.method
    fig.suptitle(_wrap(f"{analysis.n_comparisons:,.0f} comparisons; variance: {note}"),
                 fontsize=8)
    return fig


def _wrap(text: str, width: int = 150) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])


def plot_leaderboard(analysis: LeaderboardAnalysis, path) -> Path:
    """Write :func:`leaderboard_figure` to ``path`` (format from the extension, e.g. PNG)."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise WinrateInputError(f"cannot write the plot: directory {path.parent} not found")
    leaderboard_figure(analysis).savefig(path, dpi=130)
    return path
