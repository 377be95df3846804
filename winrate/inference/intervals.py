"""Interval bounds the result objects share: Wald and simultaneous bounds, cut at the range
of the score scale, as labelled frames.

:class:`~winrate.analysis.LeaderboardAnalysis`, :class:`~winrate.eda.EdaReport` and
:class:`~winrate.evals.frame.EvalReport` each offer ``conf_int(alpha, joint)``; the bounds
they have in common are computed here, from :mod:`winrate.inference.joint`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from winrate.estimators.base import PROBABILITY, Scale
from winrate.inference.joint import simultaneous_intervals
from winrate.variance.reference import critical_value, joint_df


def bounds_frame(names, low, high, order=None) -> pd.DataFrame:
    """Columns ``lower`` and ``upper`` indexed by model name (statsmodels' ``conf_int``
    layout), rows in ``order`` (model names) when given."""
    index = pd.Index([str(name) for name in names], name="model")
    frame = pd.DataFrame({"lower": np.asarray(low, float), "upper": np.asarray(high, float)},
                         index=index)
    return frame if order is None else frame.reindex(order)


def clip_to_range(low, high, scale: Scale) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval bounds cut at the range of ``scale`` ([0, 1] for win probabilities, none
    on the Elo scale), as statsmodels' ``proportion_confint`` cuts its normal interval,
    and the mask of intervals that reached past it (NaN bounds stay NaN and are not cut)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    if not scale.bounded:
        return low, high, np.zeros(low.shape, bool)
    lo, hi = scale.range
    return np.clip(low, lo, hi), np.clip(high, lo, hi), (low < lo) | (high > hi)


def logit_bounds(estimate, low, high) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A win probability's interval built on the logit scale from its Wald interval
    ``p -/+ h`` (``h = q se``, or ``c se`` for simultaneous intervals), and the mask of
    intervals left on the probability scale.

    By the delta method ``SE(logit p) = se / (p (1 - p))``, so the interval is
    ``expit(logit p -/+ h / (p (1 - p)))``: asymmetric, inside (0, 1), and first-order the
    Wald interval where ``h`` is small against ``p (1 - p)``. Near 0 or 1 a proportion's
    sampling distribution is skewed and its SE shrinks with the estimate, so Wald intervals
    miss on the side away from the bound, and more so at the far quantiles of simultaneous
    intervals; the logit interval corrects this (Brown, Cai & DasGupta 2001, "Interval
    estimation for a binomial proportion", Stat. Sci. 16(2), the logit interval and the
    Wald interval's failure near the bounds). The max-|T| critical value ``c`` carries over
    unchanged: the transformation is diagonal, so the correlation of the estimates is the
    same on both scales. Where ``p`` is 0 or 1 (logit undefined) the Wald bounds, cut at [0, 1], are
    kept (the mask); NaN bounds stay NaN.
    """
    p = np.asarray(estimate, float)
    low, high = np.asarray(low, float), np.asarray(high, float)
    inside = (p > 0) & (p < 1)
    spread = p * (1 - p)
    centre = logit(np.where(inside, p, 0.5))
    half = np.divide(high - low, 2 * spread, out=np.zeros_like(p), where=inside)
    wald_low, wald_high, _ = clip_to_range(low, high, PROBABILITY)
    return (np.where(inside, expit(centre - half), wald_low),
            np.where(inside, expit(centre + half), wald_high), ~inside)


def bounds_on_scale(estimate, low, high, scale: Scale
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reported bounds of Wald intervals ``low``, ``high`` around ``estimate`` on
    ``scale``: built on the logit scale where its link is ``"logit"`` (win probabilities,
    :func:`logit_bounds`), cut at the range of the others (:func:`clip_to_range`); with the
    mask of intervals cut at the range (under the logit link: Wald intervals of estimates
    at 0 or 1 that reached past it)."""
    if scale.link != "logit":
        return clip_to_range(low, high, scale)
    new_low, new_high, kept = logit_bounds(estimate, low, high)
    _, _, cut = clip_to_range(low, high, scale)
    return new_low, new_high, kept & cut


def wald_bounds(estimate, se, alpha: float, df=None) -> tuple[np.ndarray, np.ndarray]:
    """Marginal ``estimate -/+ q se`` with ``q`` the normal or t(df) critical value
    (:func:`winrate.variance.reference.critical_value`); NaN where the SE is undefined."""
    q = critical_value(alpha, df)
    estimate, se = np.asarray(estimate, float), np.asarray(se, float)
    return estimate - q * se, estimate + q * se


def simultaneous_bounds(estimate, cov, alpha: float, df=None, *, keep=None,
                        seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Intervals covering the ``keep`` estimates jointly (default: every finite one):
    ``estimate -/+ c se``, ``c`` the max-|T| critical value of their covariance
    (:func:`winrate.inference.joint.simultaneous_intervals`; per-estimate df reduced by
    :func:`winrate.variance.reference.joint_df`); NaN for the others."""
    estimate, cov = np.asarray(estimate, float), np.asarray(cov, float)
    keep = np.isfinite(estimate) & (True if keep is None else np.asarray(keep, bool))
    low, high = np.full(estimate.shape, np.nan), np.full(estimate.shape, np.nan)
    if keep.any():
        sim = simultaneous_intervals(estimate[keep], cov[np.ix_(keep, keep)], alpha,
                                     joint_df(df, keep), seed=seed)
        low[keep], high[keep] = sim.low, sim.high
    return low, high
