"""End-to-end leaderboard analysis: log -> fit -> plan -> covariance -> intervals.

:func:`run_analysis` runs four typed steps, each a function with a typed result, and
collects everything a report needs in an :class:`Analysis`:

1. :func:`winrate.inference.plan.fit` -> :class:`winrate.inference.plan.Fitted` (the
   estimator's scores and influence);
2. :func:`winrate.inference.plan.resolve` -> :class:`winrate.inference.plan.Plan` (the
   clustering, variance method, correction and reference for this design);
3. :func:`winrate.inference.covariance.estimate_variance` ->
   :class:`winrate.inference.covariance.VarianceResult` (covariance, degrees of freedom,
   axis diagnostics, notes);
4. :func:`infer` -> :class:`Inference` (marginal intervals, joint inference, ranks): the
   only step that reads ``alpha``.

Neither the orchestration nor a step knows which engine holds the rows (the
:class:`winrate.inference.plan.Source` answers) or which estimator made the fit (its
protocol answers, :mod:`winrate.estimators.base`). Each step returns its notes; they are
given once, at the end (:func:`winrate.notes.give`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.estimators.leaderboard import Leaderboard
from winrate.inference.covariance import AxisSummary, VarianceResult, estimate_variance
from winrate.inference.intervals import bounds_on_scale, clip_to_range
from winrate.inference.joint import (
    DEFAULT_DRAWS,
    PairwiseDifferences,
    RankSets,
    SimultaneousIntervals,
    WaldIntervals,
    pairwise_differences,
    rank_sets,
    simultaneous_intervals,
    wald_intervals,
)
from winrate.inference.plan import Fitted, fit, resolve, source_of
from winrate.inference.results import IntervalBasis, IntervalResults
from winrate.io.logs import ComparisonLog
from winrate.notes import Notes
from winrate.progress import stage
from winrate.settings import Joint, MonteCarlo, Settings, Variance
from winrate.variance import diagnostics
from winrate.variance.reference import joint_df
from winrate.variance.resampling import WildBootstrapResult


@dataclass(frozen=True, eq=False)
class Coefficients:
    """Further parameters of an estimator (style covariates, Davidson's tie parameter) with
    their clustered and naive SEs and marginal intervals (``cov`` is their joint covariance,
    ``cov_full`` that of ratings and coefficients together)."""

    names: tuple[str, ...]
    estimate: np.ndarray
    se: np.ndarray
    se_naive: np.ndarray
    low: np.ndarray
    high: np.ndarray
    cov: np.ndarray
    cov_full: np.ndarray


@dataclass(frozen=True, eq=False)
class Analysis(IntervalResults):
    """Scores, joint covariance, intervals and diagnostics of one leaderboard: the numbers
    of :func:`run_analysis`, which :class:`winrate.analysis.LeaderboardAnalysis` presents
    (``summary()``, ``to_frame()``, plots, pages). ``conf_int(alpha, joint)`` gives the
    intervals at any level (:class:`winrate.inference.results.IntervalResults`: Wald
    intervals on the scale's link, the logit for win probabilities). ``==`` is identity.
    """

    leaderboard: Leaderboard
    clustering: tuple[str, ...]
    cov: np.ndarray
    cov_naive: np.ndarray
    intervals: WaldIntervals
    deff: np.ndarray
    axes: dict[str, AxisSummary]
    psd_repaired: bool
    n_comparisons: float
    n_rows: int
    settings: Settings
    notes: Notes = field(default_factory=Notes)
    method: str = "sandwich"
    method_note: str = ""
    joint: JointInference | None = None
    coefficients: Coefficients | None = None
    not_estimable: dict[str, str] = field(default_factory=dict)
    #: (K, K) small-sample floor already in ``cov`` and ``cov_naive``
    #: (:mod:`winrate.estimators.small_sample`); zeros without single-outcome pairs or for
    #: estimators without a floor
    small_sample_floor: np.ndarray | None = None
    #: (K, K) variance bound of the pairs seen in a single cluster of a clustering axis,
    #: already in ``cov`` (:func:`winrate.inference.covariance.estimate_variance`); zeros
    #: without such pairs, for estimators without a bound, or for a resampling method
    unidentified_bound: np.ndarray | None = None
    #: the log analysed, for re-inference (:meth:`with_clustering`)
    log: ComparisonLog | None = field(default=None, repr=False)
    #: the option objects of the call (variance, joint, monte_carlo)
    requested: tuple = field(default=(), repr=False)

    @property
    def params(self) -> pd.Series:
        """The scores, indexed by model name (statsmodels' ``params``)."""
        return pd.Series(self.scores, index=self._index, name="score")

    @property
    def std_errors(self) -> pd.Series:
        """The clustered SEs, indexed by model name (NaN: not estimable)."""
        return pd.Series(self.se, index=self._index, name="se")

    def cov_params(self) -> pd.DataFrame:
        """The clustered covariance of the scores, labelled by model on both axes."""
        return pd.DataFrame(self.cov, index=self._index, columns=self._index)

    @property
    def ranked_models(self) -> pd.Index:
        """Model names, best score first (ties in model order; a model without a score
        last), the order of every ranked table."""
        order = pd.Series(self.scores).sort_values(ascending=False, kind="stable",
                                                   na_position="last").index
        return pd.Index(self.models.astype(str)[order], name="model")

    @property
    def _index(self) -> pd.Index:
        return pd.Index(self.models.astype(str), name="model")

    @property
    def models(self) -> np.ndarray:
        return self.leaderboard.models

    @property
    def scores(self) -> np.ndarray:
        return self.leaderboard.scores

    @property
    def se(self) -> np.ndarray:
        return self.intervals.se

    @property
    def se_naive(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov_naive), 0.0, None))

    @property
    def effective_clusters(self) -> np.ndarray:
        """Each model's effective number of clusters G*, the smallest over the clustering
        axes (:func:`winrate.variance.diagnostics.effective_clusters`); NaN when unclustered or not
        identified."""
        per_axis = [a.effective_clusters for a in self.axes.values()
                    if a.effective_clusters is not None]
        if not per_axis:
            return np.full(len(self.models), np.nan)
        stacked = np.vstack(per_axis)
        return np.where(np.isnan(stacked).any(axis=0), np.nan,
                        np.min(np.where(np.isnan(stacked), np.inf, stacked), axis=0))

    @property
    def effective_n(self) -> np.ndarray:
        """``n_a / DEFF_a``: the number of independent comparisons the data is worth."""
        return diagnostics.effective_n(self.leaderboard.comparisons_per_model, self.deff)

    @property
    def alpha(self) -> float:
        """1 - the confidence level of the intervals computed by :func:`analyze`."""
        return self.intervals.alpha

    def interval_basis(self, joint: bool) -> IntervalBasis:
        """What :meth:`conf_int` builds on (:class:`winrate.inference.results.IntervalResults`): the
        scores, their SEs and covariance with the degrees of freedom the analysis used, on the
        estimator's scale, rows best score first (:attr:`ranked_models`), joint intervals seeded
        with the analysis' seed."""
        return IntervalBasis(self.models, self.scores, self.se, self.leaderboard.scale,
                             self.cov, self.intervals.df, self.ranked_models,
                             self.settings["seed"])

    def reported_bounds(self, alpha: float, joint: bool, basis: IntervalBasis):
        """The simultaneous intervals the analysis reported, at its own alpha; the wild
        bootstrap's percentile-t intervals, at its alpha only (an error naming the call
        that gives them at another level)."""
        if joint and self.joint is not None and self.joint.sim_low is not None \
                and alpha == self.alpha:
            return self.joint.sim_low, self.joint.sim_high
        if self.method != "wild bootstrap":
            return None
        if alpha != self.alpha or joint:
            raise WinrateInputError(
                f"the wild bootstrap's intervals are percentile-t from its draws: rerun "
                f"analyze(..., alpha={alpha}"
                f"{', joint=Joint(simultaneous=True)' if joint else ''})")
        return self.intervals.low, self.intervals.high

    def __repr__(self) -> str:
        s = self.settings
        return (f"{type(self).__name__}(estimator={s['estimator']!r}, models={len(self.models)}, "
                f"comparisons={self.n_comparisons:g}, cluster={'+'.join(s['cluster'])!r}, "
                f"method={self.method!r}, alpha={self.alpha:g})")

@dataclass(frozen=True, eq=False)
class JointInference:
    """Joint inference from the analysis covariance (each part None unless requested).

    ``simultaneous_critical_value``, ``sim_low``, ``sim_high``: intervals covering all
    scores jointly (max-|T| from :func:`winrate.inference.joint.simultaneous_intervals`, or the
    wild bootstrap's max-|t*| quantile when that method was used); ``ranks``: rank
    confidence sets (Mogstad et al. 2024) of the ``kept`` models; ``pairwise``: all
    differences ``S_i - S_j`` among the ``kept`` models. Models without comparisons are
    left out (NaN bounds); ``rank_low``/``rank_high`` give every model's rank set, the
    whole range for a model that is not estimable. ``simultaneous`` is the
    :class:`winrate.inference.joint.SimultaneousIntervals` behind the simultaneous intervals (its
    Monte-Carlo SE and draws; None for the wild bootstrap's).
    """

    simultaneous_critical_value: float | None
    sim_low: np.ndarray | None
    sim_high: np.ndarray | None
    ranks: RankSets | None
    pairwise: PairwiseDifferences | None
    kept: np.ndarray | None = None
    rank_low: np.ndarray | None = None
    rank_high: np.ndarray | None = None
    simultaneous: SimultaneousIntervals | None = None


def joint_inference(scores: np.ndarray, cov: np.ndarray, alpha: float, df, *,
                    simultaneous: bool = False, ranks: bool = False, pairwise: bool = False,
                    rank_method: str = "marginal", n_draws: int = DEFAULT_DRAWS, seed=0,
                    wild: WildBootstrapResult | None = None,
                    estimable: np.ndarray | None = None,
                    progress: bool | None = None) -> JointInference:
    """Simultaneous intervals, rank sets and pairwise differences over the scored models.

    Models outside ``estimable`` (no SE) are left out of the joint computations; each of
    them could rank anywhere, so its rank set is every rank and every other model's upper
    rank bound grows by their number. Each step that runs for seconds shows a progress bar
    (:func:`winrate.progress.stage`; ``progress`` as there).
    """
    keep = ~np.isnan(scores) & (True if estimable is None else estimable)
    est, V, df = scores[keep], cov[np.ix_(keep, keep)], joint_df(df, keep)
    mc = {"n_draws": n_draws, "seed": seed}
    crit = low = high = rank = pairs = sim = None
    if simultaneous and wild is not None:
        crit, low, high = wild.simultaneous_critical_value, wild.sim_low, wild.sim_high
    elif simultaneous and est.size:
        with stage("simultaneous intervals", progress):
            sim = simultaneous_intervals(est, V, alpha, df, **mc)
        crit = sim.critical_value
        low, high = expand_kept(sim.low, keep), expand_kept(sim.high, keep)
    elif simultaneous:  # no estimable model: no joint interval
        low, high = np.full(keep.shape, np.nan), np.full(keep.shape, np.nan)
    rank_low = rank_high = None
    if ranks:
        unknown = ~np.isnan(scores) & ~keep
        rank_low, rank_high = np.full(keep.shape, np.nan), np.full(keep.shape, np.nan)
        if est.size:  # none is estimable (e.g. all ties): every model could rank anywhere
            with stage("rank sets", progress):
                rank = rank_sets(est, V, alpha, df, method=rank_method, **mc)
            rank_low = expand_kept(rank.low, keep)
            rank_high = expand_kept(rank.high + unknown.sum(), keep)
        rank_low[unknown], rank_high[unknown] = 1, (~np.isnan(scores)).sum()
    if pairwise:
        with stage("pairwise differences", progress):
            pairs = (pairwise_differences(est, V, alpha, df, **mc) if est.size
                     else PairwiseDifferences.none(alpha, df))
    return JointInference(crit, low, high, rank, pairs, keep, rank_low, rank_high, sim)


def expand_kept(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``values`` of the ``keep`` models spread over every model (NaN elsewhere)."""
    out = np.full(keep.shape, np.nan)
    out[keep] = values
    return out


# ------------------------------------------------------------------------- the steps


@dataclass(frozen=True, eq=False)
class Inference:
    """The inference step's result: marginal ``intervals`` (on the score scale, NaN for a
    model that is not estimable), the ``joint`` inference asked for, the sandwich
    intervals of the further parameters (``coefficients``), the step's notes and the
    note of intervals cut at the range of the scale (``range_notes``)."""

    intervals: WaldIntervals
    joint: JointInference | None
    coefficients: Coefficients | None
    notes: Notes = field(default_factory=Notes)
    range_notes: Notes = field(default_factory=Notes)


def infer(fitted: Fitted, variance: VarianceResult, alpha: float, joint: Joint,
          monte_carlo: MonteCarlo, progress: bool | None = None) -> Inference:
    """Intervals at level 1 - ``alpha`` from the variance step's result: Wald intervals
    (logit-scale for win probabilities) or the wild bootstrap's percentile-t ones, the
    joint inference ``joint`` asks for (Monte-Carlo draws and seed of ``monte_carlo``),
    and the coefficients' intervals. The only step that reads ``alpha``."""
    board = fitted.board
    with notes.gathered() as found:  # e.g. coarse wild support, bonferroni-fallback
        wild = None if variance.wild is None else variance.wild.at(alpha)
        intervals = _marginal(board, variance, alpha, wild)
        joint_result = None
        if joint.any:
            joint_result = joint_inference(
                board.scores, variance.cov, alpha, variance.df,
                simultaneous=joint.simultaneous, ranks=joint.ranks, pairwise=joint.pairwise,
                rank_method=joint.rank_method, n_draws=monte_carlo.n_draws,
                seed=monte_carlo.seed, wild=wild, estimable=~np.isnan(variance.se),
                progress=progress)
    intervals, joint_result, range_note = _cut_to_range(board, intervals, joint_result,
                                                        wald=wild is None)
    return Inference(intervals, joint_result,
                     _coefficients(board, variance.full, variance.naive_full, alpha,
                                   variance.df),
                     found, Notes([range_note] if range_note else []))


def _marginal(board: Leaderboard, variance: VarianceResult, alpha: float,
              wild: WildBootstrapResult | None) -> WaldIntervals:
    """Marginal intervals before the cut to the scale: Wald from the covariance, or the
    wild bootstrap's; NaN for the models that are not estimable."""
    if wild is None:
        found = wald_intervals(board.scores, variance.cov, alpha, variance.df)
    else:
        found = WaldIntervals(board.scores, wild.se, wild.low, wild.high, float("nan"),
                              alpha, variance.df)
    out = np.isnan(variance.se)
    return WaldIntervals(found.estimate, variance.se, np.where(out, np.nan, found.low),
                         np.where(out, np.nan, found.high), found.critical_value,
                         found.alpha, found.df)


def run_analysis(log, cluster=None, model: str | None = None, *,
                 variance: Variance | None = None, joint: Joint | None = None,
                 monte_carlo: MonteCarlo | None = None, alpha: float = 0.05,
                 board: Leaderboard | None = None, progress: bool | None = None,
                 into: type[Analysis] | None = None, **options) -> Analysis:
    """The numbers of :func:`winrate.analyze` (its arguments and what they do are described
    there) as an :class:`Analysis` (or its subclass ``into``), in four typed steps:
    :func:`winrate.inference.plan.fit`, :func:`winrate.inference.plan.resolve`,
    :func:`winrate.inference.covariance.estimate_variance` and :func:`infer`. The notes
    of every step are kept on the result and given once, here, at the API boundary
    (:func:`winrate.notes.give`)."""
    source = source_of(log, model, board, variance)
    fitted = fit(source, model, board, options)
    monte_carlo = monte_carlo or MonteCarlo()
    plan = resolve(source, fitted, cluster, variance or Variance(), monte_carlo)
    found = estimate_variance(plan, fitted, source, progress)
    inference = infer(fitted, found, alpha, joint or Joint(), monte_carlo, progress)
    result = _assembled(into or Analysis, source, fitted, plan, found, inference,
                        joint or Joint())
    notes.give(result.notes[len(source.log.notes):])  # the reading notes were given
    return result


def _assembled(into: type[Analysis], source, fitted: Fitted, plan, variance: VarianceResult,
               inference: Inference, joint: Joint) -> Analysis:
    """The ``into`` :class:`Analysis` of the steps' results, with every note in the order of the
    steps (the reading notes, given when the log was read, first)."""
    board = fitted.board
    found = Notes([*source.log.notes, *fitted.notes, *variance.notes, *inference.notes,
                   *plan.notes, *inference.range_notes, *variance.design_notes])
    return into(
        leaderboard=board, clustering=plan.clustering, cov=variance.cov,
        cov_naive=variance.cov_naive, intervals=inference.intervals,
        deff=np.where(np.isnan(variance.se), np.nan,
                      diagnostics.design_effect(variance.cov, variance.cov_naive)),
        axes=variance.axes, psd_repaired=variance.psd_repaired,
        n_comparisons=fitted.log.n_comparisons, n_rows=source.design.n_rows,
        settings=_settings(fitted, plan, variance, inference.intervals.alpha), notes=found,
        method=variance.method, method_note=variance.method_note, joint=inference.joint,
        coefficients=inference.coefficients, not_estimable=variance.not_estimable,
        small_sample_floor=variance.floor, unidentified_bound=variance.unidentified,
        log=source.kept(fitted.log),
        requested=(plan.variance, joint, plan.monte_carlo))


def _settings(fitted: Fitted, plan, variance: VarianceResult, alpha: float) -> Settings:
    board = fitted.board
    return Settings(
        estimator=board.estimator, scale=board.scale, cluster=list(plan.clustering) or ["none"],
        correction=plan.correction, alpha=alpha, reference=plan.reference, df=variance.df,
        method=plan.variance.method, bootstrap_reps=plan.variance.bootstrap_reps,
        seed=plan.seed, n_draws=plan.monte_carlo.n_draws,
        options={**fitted.estimator.settings(board.options), **_fitted_settings(board)})


def _fitted_settings(board: Leaderboard) -> dict:
    """Fitted state that reports show with the options (the covariates' standardisation)."""
    moments = board.fitted.get("standardisation")
    return {} if moments is None else {"standardisation": moments}


def _cut_to_range(board: Leaderboard, intervals: WaldIntervals, joint, wald: bool = True):
    """Marginal and simultaneous intervals on the score scale: Wald intervals (``wald``)
    of win probabilities built on the logit scale, others cut at the range of the scale
    (:func:`winrate.inference.intervals.bounds_on_scale`), and a note naming the models
    whose interval still reached past it (None if none did)."""
    def bounds(low, high):
        if wald:
            return bounds_on_scale(board.scores, low, high, board.scale)
        return clip_to_range(low, high, board.scale)

    low, high, cut = bounds(intervals.low, intervals.high)
    intervals = replace(intervals, low=low, high=high)
    if joint is not None and joint.sim_low is not None:
        sim_low, sim_high, sim_cut = bounds(joint.sim_low, joint.sim_high)
        joint, cut = replace(joint, sim_low=sim_low, sim_high=sim_high), cut | sim_cut
    if not cut.any():
        return intervals, joint, None
    return intervals, joint, notes.interval_cut([str(m) for m in board.models[cut]])


def _coefficients(board: Leaderboard, full: np.ndarray, naive_full: np.ndarray, alpha: float,
                  df) -> Coefficients | None:
    """Sandwich inference for the non-rating parameters (always the sandwich: resampling
    methods refit ratings only); where each model has its own t df, the coefficients take
    the smallest (:func:`winrate.variance.reference.joint_df`)."""
    if not board.coef_names:
        return None
    k = len(board.models)
    cov = full[k:, k:]
    iv = wald_intervals(board.coef, cov, alpha, joint_df(df))
    se_naive = np.sqrt(np.clip(np.diag(naive_full[k:, k:]), 0, None))
    return Coefficients(tuple(board.coef_names), board.coef, iv.se, se_naive, iv.low, iv.high,
                        cov, full)
