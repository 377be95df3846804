"""Tables and the JSON document of a leaderboard analysis.

JSON schema ``winrate.leaderboard/1`` (every per-model list is in the order of ``models``;
numbers that are undefined are ``null``, never NaN):

=====================  ==================================================================
key                    meaning
=====================  ==================================================================
schema                 ``"winrate.leaderboard/1"``
settings               ``cluster`` (axes used, ``["none"]`` if unclustered), ``weights``,
                       ``correction`` (``none`` = CR0, ``cr1`` = G/(G-1) per term),
                       ``alpha``, ``reference`` (``normal`` or ``t``), ``df`` (t degrees
                       of freedom or null)
n_comparisons          comparisons in the log (sum of frequency weights)
n_rows                 rows of the log
models                 model names
score                  leaderboard score S_a (half-tie win probability, opponent-weighted)
se, se_naive           clustered and naive (rows independent) standard errors
ci_low, ci_high        marginal Wald interval at level 1 - alpha
inflation              se / se_naive = sqrt(design effect)
deff                   design effect V_aa / V_naive_aa of the clustering used
effective_n            n_a / deff
n                      comparisons of each model (n_a)
cov                    K x K clustered covariance of the scores
axes                   per clustering axis: n_clusters, mean_cluster_size, icc (pair-level
                       ANOVA ICC), single_cluster_pairs, and per model: se, deff, m (mean
                       comparisons per cluster), rho (shared-response correlation)
unobserved_pairs       model pairs never compared, as [name, name]
warnings               plain-language warnings
=====================  ==================================================================
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from winrate.analysis import LeaderboardAnalysis

SCHEMA = "winrate.leaderboard/1"


def _clean(value):
    """JSON-safe: numpy to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_clean(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.str_):
        return str(value)
    return value


def leaderboard_table(analysis: LeaderboardAnalysis) -> pd.DataFrame:
    """One row per model, best score first."""
    iv = analysis.intervals
    table = pd.DataFrame({
        "model": [str(m) for m in analysis.models],
        "score": analysis.scores,
        "se_naive": analysis.se_naive,
        "se": iv.se,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "inflation": np.sqrt(analysis.deff),
        "n": analysis.leaderboard.comparisons_per_model,
    })
    table = table.sort_values("score", ascending=False, kind="stable", na_position="last")
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table.reset_index(drop=True)


def format_table(analysis: LeaderboardAnalysis) -> str:
    """Plain-text leaderboard: scores and SEs in percentage points."""
    table = leaderboard_table(analysis)
    level = round(100 * (1 - analysis.intervals.alpha))
    lines = [
        f"{'#':>3}  {'model':<{max(5, table['model'].str.len().max())}}  {'score':>6}  "
        f"{'SE naive':>8}  {'SE':>6}  {f'{level}% CI':>15}  {'infl.':>5}  {'n':>9}"
    ]
    width = max(5, table["model"].str.len().max())
    for row in table.itertuples():
        lines.append(
            f"{row.rank:>3}  {row.model:<{width}}  {100 * row.score:6.2f}  "
            f"{100 * row.se_naive:8.2f}  {100 * row.se:6.2f}  "
            f"[{100 * row.ci_low:6.2f}, {100 * row.ci_high:6.2f}]  {row.inflation:5.2f}  "
            f"{row.n:9.0f}"
        )
    return "\n".join(lines)


def format_summary(analysis: LeaderboardAnalysis) -> str:
    """Header lines: what was clustered how, and the per-axis diagnostics."""
    s = analysis.settings
    ref = "normal" if s["df"] is None else f"t({s['df']})"
    lines = [
        f"{analysis.n_comparisons:,.0f} comparisons, {len(analysis.models)} models; "
        f"clustered by {' + '.join(s['cluster'])} ({s['correction']}), weights={s['weights']}, "
        f"reference {ref}"
    ]
    for axis in analysis.axes.values():
        lines.append(
            f"  {axis.name}: {axis.n_clusters:,} clusters, mean size "
            f"{axis.mean_cluster_size:.1f}, median SE inflation "
            f"{np.nanmedian(np.sqrt(axis.deff)):.2f}, pair-level ICC {axis.icc:.3f}"
        )
    return "\n".join(lines)


def to_dict(analysis: LeaderboardAnalysis) -> dict:
    """The JSON document (schema in the module docstring)."""
    iv = analysis.intervals
    axes = {
        name: {
            "n_clusters": axis.n_clusters, "mean_cluster_size": axis.mean_cluster_size,
            "icc": axis.icc, "single_cluster_pairs": axis.single_cluster_pairs,
            "se": axis.se, "deff": axis.deff, "m": axis.m, "rho": axis.rho,
        }
        for name, axis in analysis.axes.items()
    }
    doc = {
        "schema": SCHEMA, "settings": analysis.settings,
        "n_comparisons": analysis.n_comparisons, "n_rows": analysis.n_rows,
        "models": [str(m) for m in analysis.models], "score": analysis.scores,
        "se": iv.se, "se_naive": analysis.se_naive, "ci_low": iv.low, "ci_high": iv.high,
        "inflation": np.sqrt(analysis.deff), "deff": analysis.deff,
        "effective_n": analysis.effective_n, "n": analysis.leaderboard.comparisons_per_model,
        "cov": analysis.cov, "axes": axes,
        "unobserved_pairs": [list(p) for p in analysis.leaderboard.unobserved_pairs],
        "warnings": analysis.warnings,
    }
    return _clean(doc)


def write_json(analysis: LeaderboardAnalysis, path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(to_dict(analysis), handle, indent=2)
        handle.write("\n")
