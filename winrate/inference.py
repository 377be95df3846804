"""Inference from a vector of estimates and its covariance.

Everything here works from ``(estimate, cov[, df])``: the estimator and its clustering
were chosen upstream, so the same functions serve leaderboards and per-question evals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


def critical_value(alpha: float, df: float | None = None) -> float:
    """Two-sided critical value: ``z_{1-alpha/2}``, or ``t_{df, 1-alpha/2}`` when df is given."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if df is None:
        return float(stats.norm.ppf(1 - alpha / 2))
    if df < 1:
        raise ValueError(f"t degrees of freedom must be >= 1, got {df}")
    return float(stats.t.ppf(1 - alpha / 2, df))


@dataclass(frozen=True)
class WaldIntervals:
    """Marginal Wald intervals ``estimate +/- crit * se``.

    Attributes: ``estimate``, ``se``, ``low``, ``high``, ``critical_value``, ``alpha``,
    ``df`` (None for the normal reference distribution).
    """

    estimate: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float
    alpha: float
    df: float | None


def wald_intervals(estimate, cov, alpha: float = 0.05, df: float | None = None) -> WaldIntervals:
    """Marginal Wald intervals ``theta_a +/- q * sqrt(V_aa)``.

    ``q`` is the normal quantile ``z_{1-alpha/2}``, or ``t_{G-1, 1-alpha/2}`` when
    ``df = G - 1`` is given (the few-cluster reference of Cameron & Miller 2015, sec. VI.C).
    """
    est = np.asarray(estimate, dtype=float)
    var = np.diag(np.asarray(cov, dtype=float))
    if var.shape != est.shape:
        raise ValueError(f"cov diagonal has shape {var.shape}, estimate has {est.shape}")
    se = np.sqrt(np.clip(var, 0.0, None))
    crit = critical_value(alpha, df)
    return WaldIntervals(est, se, est - crit * se, est + crit * se, crit, alpha, df)
