"""The reference distribution of interval statistics: normal or t critical values, their
degrees of freedom in words, and Monte-Carlo quantiles with their precision.

Shared by the variance methods (the wild bootstrap's percentile-t) and by inference
(:mod:`winrate.inference.joint`).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from winrate.errors import WinrateInputError

#: Marks a family with no positive-variance contrast in the draws of a maximum.
EMPTY_FAMILY = -1e20


def check_alpha(alpha: float) -> float:
    """``alpha`` in (0, 1) as a float, else a WinrateInputError."""
    if not 0 < alpha < 1:
        raise WinrateInputError(f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)


def check_df(df):
    """``None`` or ``inf`` mean the normal reference; otherwise ``df >= 1``. An array gives
    one df per estimate (NaN for an estimate without a variance; inf: normal)."""
    if df is not None and np.ndim(df):
        df = np.asarray(df, dtype=float)
        if (df[~np.isnan(df)] < 1).any():
            raise WinrateInputError(f"t degrees of freedom must be >= 1, got min {np.nanmin(df)}")
        return df
    if df is None or np.isposinf(df):
        return None
    if not np.isfinite(df) or df < 1:
        raise WinrateInputError(f"t degrees of freedom must be >= 1 (or None), got {df}")
    return float(df)


def reference_label(df) -> str:
    """The reference distribution in words: ``normal``, ``t(29)``, or for per-estimate df
    ``t(df per model, 36.2-77.9)``."""
    df = check_df(df)
    if df is None:
        return "normal"
    if np.ndim(df) == 0:
        return f"t({df:g})"
    finite = df[np.isfinite(df)]
    if not finite.size:
        return "t(df per model, none defined)"
    low, high = f"{finite.min():.1f}", f"{finite.max():.1f}"
    return f"t(df per model, {low})" if low == high else f"t(df per model, {low}-{high})"


def joint_df(df, keep=None) -> float | None:
    """The one df of a joint (simultaneous, rank or pairwise) inference when each estimate
    has its own (``df`` an array, e.g. Pan-Wall's): the smallest over the ``keep``
    estimates, so the family's reference is no lighter-tailed than any member's. A scalar
    or None passes through."""
    df = check_df(df)
    if df is None or np.ndim(df) == 0:
        return df
    kept = df if keep is None else df[np.asarray(keep, bool)]
    kept = kept[~np.isnan(kept)]
    return check_df(float(kept.min())) if kept.size else None


def critical_value(alpha: float, df=None):
    """Two-sided critical value: ``z_{1-alpha/2}``, or ``t_{df, 1-alpha/2}`` when df is given
    (an array of df gives an array of critical values, NaN where the df is NaN)."""
    alpha, df = check_alpha(alpha), check_df(df)
    if df is None:
        return float(special.ndtri(1 - alpha / 2))  # what scipy.stats.norm.ppf evaluates
    crit = special.stdtrit(df, 1 - alpha / 2)  # and scipy.stats.t.ppf (inf df: normal)
    return crit if np.ndim(df) else float(crit)


def quantile_with_se(draws: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise ``1 - alpha`` quantile (order statistic ``ceil(n (1 - alpha))``) and its
    Monte-Carlo SE from the binomial order-statistic band (module docstring)."""
    n = draws.shape[0]
    p = 1.0 - alpha
    k = int(np.ceil(n * p)) - 1
    half = np.sqrt(n * p * alpha)
    lo, hi = max(int(np.floor(n * p - half)) - 1, 0), min(int(np.ceil(n * p + half)) - 1, n - 1)
    kth = [lo, k, hi]
    # column blocks keep the partition's copy small when there are many families
    blocks = [
        np.partition(draws[:, s : s + 8], kth, axis=0)[kth] for s in range(0, draws.shape[1], 8)
    ]
    at_lo, crit, at_hi = np.concatenate(blocks, axis=1).astype(float)
    empty = crit < EMPTY_FAMILY  # a family with no positive-variance contrast
    with np.errstate(invalid="ignore"):  # inf - inf: infinite draws (wild bootstrap)
        half_band = (at_hi - at_lo) / 2
    return np.where(empty, np.nan, crit), np.where(empty, np.nan, half_band)
