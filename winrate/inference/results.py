"""The one ``conf_int`` of every result object: leaderboards, the exploratory report and
the evals' report.

A result inherits :class:`IntervalResults` and says what its intervals are computed from
(:meth:`IntervalResults.interval_basis`: estimates, SEs, covariance, degrees of freedom,
the :class:`winrate.estimators.base.Scale`, the row order) and which bounds it reported
that are not Wald bounds (:meth:`IntervalResults.reported_bounds`: stored simultaneous
intervals, percentile-t, the evals' own interval methods). Everything else is the same for
all: marginal ``estimate -/+ q se`` or simultaneous ``estimate -/+ c se`` (max-|T|), built
on the scale's link (the logit for a probability:
:func:`winrate.inference.intervals.bounds_on_scale`), cut at its range, as a
``lower``/``upper`` frame indexed by model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from winrate.estimators.base import Scale
from winrate.inference.intervals import (
    bounds_frame,
    bounds_on_scale,
    clip_to_range,
    simultaneous_bounds,
    wald_bounds,
)


@dataclass(frozen=True)
class IntervalBasis:
    """What intervals are computed from: per model ``names``, ``estimate`` and ``se``
    (NaN: no interval); ``cov`` their covariance (None: no joint intervals); ``df`` the t
    degrees of freedom (None: normal; per model allowed); the ``scale`` of the estimates;
    ``order`` the row order of the frame (model names; None: ``names``); ``seed`` of the
    Monte-Carlo critical value of joint intervals."""

    names: object
    estimate: np.ndarray
    se: np.ndarray
    scale: Scale
    cov: np.ndarray | None = None
    df: object = None
    order: object = None
    seed: int | None = 0


class IntervalResults:
    """A result offering ``conf_int(alpha, joint, **choice)`` (module doc). Subclasses
    implement :meth:`interval_basis` and, when they report intervals that are not Wald
    intervals, :meth:`reported_bounds`."""

    def interval_basis(self, joint: bool, **choice) -> IntervalBasis:
        """The :class:`IntervalBasis` of these intervals (``choice``: a subclass' own
        keywords of ``conf_int``, such as a clustering); ``cov`` is needed only when
        ``joint``."""
        raise NotImplementedError

    def reported_bounds(self, alpha: float, joint: bool, basis: IntervalBasis):
        """``(low, high)`` this result gives at ``alpha`` that are not Wald bounds (on
        the scale already), or None for the Wald bounds of ``basis``; an error when
        neither is available at ``alpha``."""
        return None

    def conf_int(self, alpha: float = 0.05, joint: bool = False, **choice) -> pd.DataFrame:
        """Confidence intervals ``lower``, ``upper`` at level 1 - ``alpha``, indexed by
        model (NaN for a model without an SE).

        Marginal: ``estimate -/+ q se``, ``q`` the normal or t(df) critical value
        (:func:`winrate.inference.intervals.wald_bounds`). ``joint=True``: intervals
        covering all estimates together, ``estimate -/+ c se`` with ``c`` the max-|T|
        critical value of the covariance
        (:func:`winrate.inference.intervals.simultaneous_bounds`). Both are built on the
        scale's link, the logit scale for
        probabilities (:func:`winrate.inference.intervals.logit_bounds`), and cut at its
        range. Bounds the result reported in another way (percentile-t, an evals
        interval method, stored simultaneous intervals) are given as reported
        (:meth:`reported_bounds`), cut at the range.
        """
        basis = self.interval_basis(joint, **choice)
        reported = self.reported_bounds(alpha, joint, basis)
        if reported is not None:
            low, high = reported
        else:
            low, high = (simultaneous_bounds(basis.estimate, basis.cov, alpha, basis.df,
                                             keep=np.isfinite(basis.se), seed=basis.seed)
                         if joint else wald_bounds(basis.estimate, basis.se, alpha, basis.df))
            low, high, _ = bounds_on_scale(basis.estimate, low, high, basis.scale)
        low, high, _ = clip_to_range(low, high, basis.scale)
        return bounds_frame(basis.names, low, high, basis.order)
