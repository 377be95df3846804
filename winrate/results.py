"""What the result objects share: interval frames, statsmodels-style text blocks.

:class:`~winrate.analysis.LeaderboardAnalysis`, :class:`~winrate.eda.EdaReport` and
:class:`~winrate.evals.frame.EvalReport` each offer ``to_frame()``, ``conf_int(alpha,
joint)`` and ``summary()``; the pieces they have in common live here. Every interval is
computed by :mod:`winrate.inference`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from winrate.inference import critical_value, joint_df, simultaneous_intervals


class Summary(str):
    """A text report that shows as itself at the prompt (``result.summary()``), like
    statsmodels' ``Summary``, and is a plain ``str`` everywhere else."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


#: The longest rule of a text block: wide tables run past it rather than stretch it.
RULE_WIDTH = 100


def text_block(title: str, parts, notes=()) -> Summary:
    """``parts`` (blocks of text) under a centred ``title`` between rules, as statsmodels'
    ``summary()`` lays them out; ``notes`` (warnings) numbered below."""
    parts = [part for part in parts if part]
    width = min(RULE_WIDTH, max(len(line) for part in [title, *parts]
                                for line in part.splitlines()))
    lines = ["=" * width, title.center(width).rstrip(), "=" * width]
    for i, part in enumerate(parts):
        if i:
            lines.append("-" * width)
        lines.extend(part.splitlines())
    lines.append("=" * width)
    if notes:
        lines.append("Warnings:")
        lines.extend(f"[{i}] {_coded(note)}" for i, note in enumerate(notes, 1))
    return Summary("\n".join(lines))


def _coded(note) -> str:
    """A note with its code in front (:class:`winrate.notes.Note`); other text as it is."""
    code = getattr(note, "code", None)
    return f"({code}) {note}" if code else str(note)


def bounds_frame(names, low, high, order=None) -> pd.DataFrame:
    """Columns ``lower`` and ``upper`` indexed by model name (statsmodels' ``conf_int``
    layout), rows in ``order`` (model names) when given."""
    index = pd.Index([str(name) for name in names], name="model")
    frame = pd.DataFrame({"lower": np.asarray(low, float), "upper": np.asarray(high, float)},
                         index=index)
    return frame if order is None else frame.reindex(order)


def plural(count, noun: str, nouns: str | None = None) -> str:
    """``'1 model'``, ``'3 models'``, ``'2.5 comparisons'`` (``nouns``: an irregular plural)."""
    return f"{count:,g} {noun if count == 1 else nouns or noun + 's'}"


#: The range of the scores on each scale (none on the Elo scale); intervals are cut at it.
SCORE_RANGE = {"probability": (0.0, 1.0)}


def clip_to_range(low, high, scale: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval bounds cut at the range of ``scale`` (:data:`SCORE_RANGE`: [0, 1] for win
    probabilities), as statsmodels' ``proportion_confint`` cuts its normal interval, and
    the mask of intervals that reached past it (NaN bounds stay NaN and are not cut)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    if scale not in SCORE_RANGE:
        return low, high, np.zeros(low.shape, bool)
    lo, hi = SCORE_RANGE[scale]
    return np.clip(low, lo, hi), np.clip(high, lo, hi), (low < lo) | (high > hi)


def wald_bounds(estimate, se, alpha: float, df=None) -> tuple[np.ndarray, np.ndarray]:
    """Marginal ``estimate -/+ q se`` with ``q`` the normal or t(df) critical value
    (:func:`winrate.inference.critical_value`); NaN where the SE is undefined."""
    q = critical_value(alpha, df)
    estimate, se = np.asarray(estimate, float), np.asarray(se, float)
    return estimate - q * se, estimate + q * se


def simultaneous_bounds(estimate, cov, alpha: float, df=None, *, keep=None,
                        seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Intervals covering the ``keep`` estimates jointly (default: every finite one):
    ``estimate -/+ c se``, ``c`` the max-|T| critical value of their covariance
    (:func:`winrate.inference.simultaneous_intervals`; per-estimate df reduced by
    :func:`winrate.inference.joint_df`); NaN for the others."""
    estimate, cov = np.asarray(estimate, float), np.asarray(cov, float)
    keep = np.isfinite(estimate) & (True if keep is None else np.asarray(keep, bool))
    low, high = np.full(estimate.shape, np.nan), np.full(estimate.shape, np.nan)
    if keep.any():
        sim = simultaneous_intervals(estimate[keep], cov[np.ix_(keep, keep)], alpha,
                                     joint_df(df, keep), seed=seed)
        low[keep], high[keep] = sim.low, sim.high
    return low, high
