"""End-to-end leaderboard analysis: log -> scores and influence -> covariance -> intervals.

:func:`run_analysis` runs the data flow once and collects everything a report needs: the
clustered and naive covariances, marginal intervals, per-axis diagnostics and warnings
in plain words.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from winrate import estimators, notes
from winrate.constants import DEFAULT_COLUMNS, FEW_CLUSTERS
from winrate.errors import WinrateInputError, WinrateWarning, outside_stacklevel
from winrate.estimators.cells import require_rows
from winrate.estimators.leaderboard import Leaderboard
from winrate.inference.intervals import (
    bounds_frame,
    bounds_on_scale,
    clip_to_range,
    simultaneous_bounds,
    wald_bounds,
)
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
from winrate.inference.scanned import scanned_log
from winrate.io.logs import ComparisonLog, as_log
from winrate.io.scan import Scan
from winrate.notes import Notes
from winrate.progress import stage
from winrate.settings import LEGACY_KEYWORDS, Joint, MonteCarlo, Settings, Variance
from winrate.variance import diagnostics, method_choice
from winrate.variance.reference import joint_df
from winrate.variance.resampling import VarianceChoice, resampled_variance, sandwich_note
from winrate.variance.sandwich import (
    DEFAULT_CORRECTION,
    GroupMeat,
    multiway_cluster_cov,
    naive_cov,
    pan_wall_df,
)


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
class AxisSummary:
    """One clustering axis: cluster counts and its one-way covariance diagnostics.

    ``se`` and ``deff`` are NaN for a model whose variance on this axis is not identified
    (zero clustered variance with a positive naive one: all its comparisons in one cluster).
    ``m`` is the mean number of comparisons of each model per cluster; ``rho`` the implied
    shared-response correlation ``(deff - 1) / (m - 1)``; ``icc`` the pair-level ANOVA ICC;
    ``single_cluster_pairs`` the number of model pairs observed within a single cluster;
    ``largest_share`` each model's largest cluster share of its variance on this axis (of
    its score component for Bradley-Terry) and
    ``largest_cluster`` that cluster's label (:func:`winrate.diagnostics.largest_cluster_share`);
    ``effective_clusters`` each model's effective number of clusters G* on this axis
    (:func:`winrate.diagnostics.effective_clusters`).
    """

    name: str
    n_clusters: int
    mean_cluster_size: float
    cov: np.ndarray
    se: np.ndarray
    deff: np.ndarray
    m: np.ndarray
    rho: np.ndarray
    icc: float
    single_cluster_pairs: int
    largest_share: np.ndarray | None = None
    largest_cluster: np.ndarray | None = None
    effective_clusters: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Analysis:
    """Scores, joint covariance, intervals and diagnostics of one leaderboard: the numbers
    of :func:`run_analysis`, which :class:`winrate.analysis.LeaderboardAnalysis` presents
    (``summary()``, ``to_frame()``, plots, pages). ``conf_int(alpha, joint)`` gives the
    intervals at any level. ``==`` is identity.
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
    #: the log analysed, for re-inference (:meth:`with_clustering`)
    log: ComparisonLog | None = field(default=None, repr=False)
    #: the option objects of the call (variance, joint, monte_carlo)
    requested: tuple = field(default=(), repr=False)

    @property
    def warnings(self) -> Notes:
        """The notes (each a ``str`` with a ``code``; :mod:`winrate.notes`)."""
        return self.notes

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
        axes (:func:`winrate.diagnostics.effective_clusters`); NaN when unclustered or not
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

    def conf_int(self, alpha: float = 0.05, joint: bool = False) -> pd.DataFrame:
        """Confidence intervals ``lower``, ``upper`` at level 1 - ``alpha``, indexed by model
        best score first (:attr:`ranked_models`) (NaN for a model that is not estimable).

        Marginal: ``score -/+ q se``, ``q`` the normal or t critical value with the
        degrees of freedom the analysis used. ``joint=True``: intervals covering all scores
        together, ``score -/+ c se`` with ``c`` the max-|T| critical value of the
        covariance (:func:`winrate.inference.simultaneous_intervals`, seeded with the
        analysis' seed); at the analysis' own alpha these are the intervals it reported.
        The wild bootstrap's intervals are percentile-t, available at its alpha only.
        Win-probability intervals are built on the logit scale
        (:func:`winrate.inference.intervals.logit_bounds`; the wild bootstrap's are cut at
        [0, 1]).
        """
        stored = self.joint.sim_low is not None if self.joint is not None else False
        if joint and stored and alpha == self.alpha:
            low, high = self.joint.sim_low, self.joint.sim_high
        elif self.method == "wild bootstrap":
            if alpha != self.alpha or joint:
                raise WinrateInputError(
                    f"the wild bootstrap's intervals are percentile-t from its draws: rerun "
                    f"analyze(..., alpha={alpha}"
                    f"{', joint=Joint(simultaneous=True)' if joint else ''})")
            low, high = self.intervals.low, self.intervals.high
        else:  # Wald bounds, on the logit scale for win probabilities (as analyze's)
            low, high = (simultaneous_bounds(self.scores, self.cov, alpha, self.intervals.df,
                                             keep=~np.isnan(self.se),
                                             seed=self.settings["seed"]) if joint
                         else wald_bounds(self.scores, self.se, alpha, self.intervals.df))
            low, high, _ = bounds_on_scale(self.scores, low, high, self.leaderboard.scale)
        low, high, _ = clip_to_range(low, high, self.leaderboard.scale)
        return bounds_frame(self.models, low, high, self.ranked_models)

    def __repr__(self) -> str:
        s = self.settings
        return (f"{type(self).__name__}(estimator={s['estimator']!r}, models={len(self.models)}, "
                f"comparisons={self.n_comparisons:g}, cluster={'+'.join(s['cluster'])!r}, "
                f"method={self.method!r}, alpha={self.alpha:g})")

@dataclass(frozen=True, eq=False)
class JointInference:
    """Joint inference from the analysis covariance (each part None unless requested).

    ``simultaneous_critical_value``, ``sim_low``, ``sim_high``: intervals covering all
    scores jointly (max-|T| from :func:`winrate.inference.simultaneous_intervals`, or the
    wild bootstrap's max-|t*| quantile when that method was used); ``ranks``: rank
    confidence sets (Mogstad et al. 2024) of the ``kept`` models; ``pairwise``: all
    differences ``S_i - S_j`` among the ``kept`` models. Models without comparisons are
    left out (NaN bounds); ``rank_low``/``rank_high`` give every model's rank set, the
    whole range for a model that is not estimable. ``simultaneous`` is the
    :class:`winrate.inference.SimultaneousIntervals` behind the simultaneous intervals (its
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
                    choice: VarianceChoice | None = None,
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
    if simultaneous and choice is not None and choice.wild is not None:
        crit, low, high = (choice.wild.simultaneous_critical_value, choice.wild.sim_low,
                           choice.wild.sim_high)
    elif simultaneous and est.size:
        with stage("simultaneous intervals", progress):
            sim = simultaneous_intervals(est, V, alpha, df, **mc)
        crit, low, high = sim.critical_value, _expand(sim.low, keep), _expand(sim.high, keep)
    elif simultaneous:  # no estimable model: no joint interval
        low, high = np.full(keep.shape, np.nan), np.full(keep.shape, np.nan)
    rank_low = rank_high = None
    if ranks:
        unknown = ~np.isnan(scores) & ~keep
        rank_low, rank_high = np.full(keep.shape, np.nan), np.full(keep.shape, np.nan)
        if est.size:  # none is estimable (e.g. all ties): every model could rank anywhere
            with stage("rank sets", progress):
                rank = rank_sets(est, V, alpha, df, method=rank_method, **mc)
            rank_low = _expand(rank.low, keep)
            rank_high = _expand(rank.high + unknown.sum(), keep)
        rank_low[unknown], rank_high[unknown] = 1, (~np.isnan(scores)).sum()
    if pairwise:
        with stage("pairwise differences", progress):
            pairs = (pairwise_differences(est, V, alpha, df, **mc) if est.size
                     else PairwiseDifferences.none(alpha, df))
    return JointInference(crit, low, high, rank, pairs, keep, rank_low, rank_high, sim)


def _expand(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    out = np.full(keep.shape, np.nan)
    out[keep] = values
    return out


def parse_clustering(spec: str | tuple | list | None) -> tuple[str, ...]:
    """``"none"`` -> (); ``"prompt+judge"`` -> ("prompt", "judge"); tuples pass through."""
    if spec is None:
        return ()
    names = spec.split("+") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names in (["none"], ["naive"]):
        return ()
    if len(set(names)) != len(names):
        raise WinrateInputError(f"clustering {spec!r} names an axis twice")
    return tuple(names)


def _axis_summary(log: ComparisonLog, board: Leaderboard, name: str, cov: np.ndarray,
                  cov_naive: np.ndarray, group: GroupMeat, row_ss: np.ndarray,
                  shape: tuple) -> AxisSummary:
    """One axis' diagnostics from its one-way term of the multiway call (``cov`` and the
    ``group`` meat with its largest cluster totals) and its ``shape`` (m, single-cluster
    pairs, ICC: :func:`winrate.variance.diagnostics.axis_design`), so nothing is
    recomputed.

    A model's variance on the axis is not identified when its own column of the meat is
    zero while its rows are not (``row_ss``: each column's sum of squared rows): every
    comparison of the model lies in one cluster, where its influence (or, for
    Bradley-Terry, its score) sums to zero. Its SE and DEFF are then NaN, not 0 -- for
    Bradley-Terry the sandwich would otherwise lend it a small SE through the centring."""
    axis = log.axes[name]
    own = np.diag(group.meat)[board.codes]
    unidentified = (own <= 1e-12 * row_ss[board.codes]) & (row_ss[board.codes] > 0)
    var = np.diag(cov)
    se = np.where(unidentified, np.nan, np.sqrt(np.clip(var, 0, None)))
    deff = np.where(unidentified, np.nan, diagnostics.design_effect(cov, cov_naive))
    m, lonely, icc = shape
    m = m[board.codes]
    share, largest = (x[board.codes] for x in diagnostics.dominant_share(group))
    effective = diagnostics.effective_clusters(group)[board.codes]
    return AxisSummary(
        name=name, n_clusters=axis.n_clusters,
        mean_cluster_size=log.n_comparisons / axis.n_clusters,
        cov=cov, se=se, deff=deff, m=m,
        rho=diagnostics.shared_response_correlation(deff, m),
        icc=icc,
        single_cluster_pairs=int(lonely.sum()), largest_share=share,
        largest_cluster=np.where(largest >= 0, axis.labels[np.maximum(largest, 0)], None),
        effective_clusters=np.where(unidentified, np.nan, effective),
    )


def _dominant_cluster_note(board: Leaderboard, axis: AxisSummary):
    """The Lindeberg warning (:func:`winrate.notes.dominant_cluster`): a cluster carrying
    more of a model's variance on an axis with enough clusters than
    :data:`winrate.diagnostics.DOMINANT_SHARE`."""
    if axis.largest_share is None or axis.n_clusters < FEW_CLUSTERS:
        return None  # few clusters have their own warning
    limit = diagnostics.DOMINANT_SHARE
    flagged = np.flatnonzero(np.nan_to_num(axis.largest_share) > limit)
    if not flagged.size:
        return None
    worst = flagged[np.argmax(axis.largest_share[flagged])]
    return notes.dominant_cluster(axis.name, limit, flagged.size, axis.largest_share[worst],
                                  str(board.models[worst]), axis.largest_cluster[worst])


def _few_effective_note(board: Leaderboard, axis: AxisSummary, method: str,
                        correction: str, t_reference: bool):
    """The models whose SE rests on fewer than :data:`winrate.notes.FEW_EFFECTIVE` effective
    clusters on an axis with enough clusters overall (an axis with few clusters has its own
    warning), with the remedy for the variance method in use."""
    if axis.effective_clusters is None or axis.n_clusters < FEW_CLUSTERS:
        return None
    g_star = axis.effective_clusters
    flagged = np.flatnonzero(np.nan_to_num(g_star, nan=np.inf) < notes.FEW_EFFECTIVE)
    if not flagged.size:
        return None
    flagged = flagged[np.argsort(g_star[flagged], kind="stable")]
    return notes.few_effective_clusters(
        axis.name, axis.n_clusters, [(str(board.models[i]), g_star[i]) for i in flagged],
        method, correction, t_reference)


def judges_sample_note(log: ComparisonLog, clustering: tuple[str, ...]):
    """The note that intervals clustered without a judge axis the log has, with fewer than
    :data:`winrate.constants.FEW_CLUSTERS` judges, are conditional on these judges."""
    judges = log.axes.get("judge")
    if (judges is None or "judge" in clustering
            or not 2 <= judges.n_clusters < FEW_CLUSTERS):
        return None
    return notes.judges_fixed(judges.n_clusters)


def _warnings(board: Leaderboard, axes: dict[str, AxisSummary],
              not_estimable: dict[str, str], psd_repaired: bool,
              method: str = "sandwich", t_reference: bool = False,
              correction: str = DEFAULT_CORRECTION) -> list:
    """What the numbers can and cannot support, as coded notes (:mod:`winrate.notes`)."""
    found = []
    for axis in axes.values():
        if axis.n_clusters < FEW_CLUSTERS:
            found.append(notes.few_clusters(axis.name, axis.n_clusters, method, t_reference))
        if axis.single_cluster_pairs:
            found.append(notes.single_cluster_pairs(axis.name, axis.single_cluster_pairs,
                                                    len(board.pairs)))
        found.append(_dominant_cluster_note(board, axis))
        found.append(_few_effective_note(board, axis, method, correction, t_reference))
    if not_estimable:
        found.append(notes.not_estimable(not_estimable))
    found.extend(estimators.of(board).design_notes(board))
    if psd_repaired:
        found.append(notes.psd_repaired())
    return [note for note in found if note is not None]


def not_estimable_models(board: Leaderboard, se: np.ndarray,
                         axes: dict[str, AxisSummary]) -> dict[str, str]:
    """Models whose uncertainty cannot be estimated, with the reason in words.

    A model with no comparisons has no score. A zero (or undefined) SE after the
    small-sample floor (:mod:`winrate.estimators.small_sample`;
    :func:`negligible_se`), or an axis on which its variance is not identified
    (:func:`_axis_summary`), means all of its comparisons fall in a single cluster of an
    axis, so their influence sums to zero there. Such a model gets no interval and a rank
    set spanning every rank. An anchor's rating is fixed by definition and is not listed.
    """
    n = board.comparisons_per_model
    zero = negligible_se(se, board.scores)
    anchor = (board.options.get("anchor") or {}).get("model")
    reasons = {}
    for i, model in enumerate(map(str, board.models)):
        if n[i] == 0:
            reasons[model] = notes.not_estimable_reason(0, [])
        elif model != anchor and (zero[i]
                                  or any(np.isnan(a.se[i]) for a in axes.values())):
            single = [a.name for a in axes.values() if np.isclose(a.m[i], n[i])]
            reasons[model] = notes.not_estimable_reason(n[i], single)
    return reasons


#: An SE this many times below the median of the others is a zero in round-off.
NEGLIGIBLE_SHARE = 1e-6


def negligible_se(se: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Which SEs are zero or undefined: NaN, at most ``1e-8 * max(1, max |score|)``, or at
    most :data:`NEGLIGIBLE_SHARE` times the median of the positive SEs.

    Round-off in a variance that is zero in exact arithmetic (say, a covariance whose
    negative eigenvalues were clipped, or a Bradley-Terry model whose comparisons are all
    ties at a fitted probability of 1/2, so its score rows are zero up to the Newton
    tolerance) leaves SEs near round-off of the scores' or the other SEs' size; they must
    not pass for an estimate. A real SE a million times below the median would need a
    trillion times the comparisons, so the cut sits far below any real SE. The second rule
    matters on the Elo scale, whose offset (1000) says nothing about the SEs' size.
    """
    scale = max(1.0, np.nanmax(np.abs(scores), initial=0.0))
    positive = se[np.isfinite(se) & (se > 1e-8 * scale)]
    typical = np.median(positive) if positive.size else 0.0
    return ~(se > max(1e-8 * scale, NEGLIGIBLE_SHARE * typical))


def clustering_problem(log: ComparisonLog, clustering: tuple[str, ...]) -> str | None:
    """Why clustering by these axes gives no variance estimate, in plain words; else None."""
    for name in clustering:
        if name not in log.axes:
            return _missing_axis(log, name)
        axis = log.axes[name]
        if axis.n_clusters < 2:
            return (f"every comparison has the same {name} ({axis.labels[0]!s}): one cluster "
                    f"is one independent unit, so variation across {name}s cannot be "
                    f"estimated (the SEs are conditional on this {name})")
    return None


def _missing_axis(log: ComparisonLog, name: str) -> str:
    """Why a log without axis ``name`` cannot be clustered by it, and what to pass instead:
    the reader's column of its ids (formats fill prompt and judge from their own fields),
    or an axis the log has."""
    if name in DEFAULT_COLUMNS:
        source = (f"read the log with its column of {name} ids (read_comparisons' "
                  f"{name}_col, {DEFAULT_COLUMNS[name]!r} by default; a format whose files "
                  f"carry {name} ids fills it from them)")
    else:
        source = (f"read the log with a column of {name} ids as an axis (read_comparisons' "
                  "extra_cols)")
    choices = "".join(f"{axis!r} or " for axis in sorted(log.axes))
    return (f"the log has no '{name}' axis, so nothing is known about which comparisons "
            f"share a {name}: {source}, or cluster by {choices}none")


def _clustered_cov(log: ComparisonLog, board: Leaderboard, clustering: tuple[str, ...],
                   correction: str, strata):
    """Multiway covariance of all parameters (ratings, then coefficients); CR2 takes the
    estimator's strata (:mod:`winrate.variance.sandwich`)."""
    groups = [log.axes[name].codes for name in clustering]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return multiway_cluster_cov(board.influence, groups, correction, bread=board.bread,
                                    strata=strata, frequency=log.frequency)


def _check_clustering(log: ComparisonLog, clustering: tuple[str, ...]) -> None:
    problem = clustering_problem(log, clustering)
    if problem is not None:
        raise WinrateInputError(f"cannot cluster by {'+'.join(clustering)}: {problem}")


def _reference_df(board: Leaderboard, axes: dict, correction: str, reference: str,
                  meats: list, cov: np.ndarray):
    """Degrees of freedom of the t reference (None: normal). CR2: Pan and Wall's per model
    (:func:`winrate.variance.sandwich.pan_wall_df`, with ``cov``'s variances, the small-sample floor
    included), the smallest over the axes; otherwise ``G_min - 1``."""
    if reference != "t" or not axes:
        return None
    if correction != "cr2":
        return min(axis.n_clusters for axis in axes.values()) - 1
    variance = np.full(board.influence.shape[1], np.nan)
    variance[board.codes] = np.diag(cov)
    per_axis = [pan_wall_df(group, variance)[board.codes] for group in meats]
    return np.fmin.reduce(per_axis)


DEFAULT_CLUSTERING = ("prompt", "judge")


def default_clustering(log) -> tuple[tuple[str, ...], str | None]:
    """The axes of the default ``prompt+judge`` clustering that ``log`` can be clustered
    by, and a note saying which were used and why the others were not (None if all)."""
    problems = {name: clustering_problem(log, (name,)) for name in DEFAULT_CLUSTERING}
    used = tuple(name for name, problem in problems.items() if problem is None)
    if used == DEFAULT_CLUSTERING:
        return used, None
    return used, notes.default_clustering(used, [p for p in problems.values() if p])


def _auto_choice(log: ComparisonLog, board: Leaderboard, clustering: tuple[str, ...]):
    """:func:`winrate.variance.method_choice.choose` for this log, fit and clustering."""
    sizes = [log.axes[name].n_clusters for name in clustering]
    return method_choice.choose(clustering, sizes, estimators.of(board).thin_design_rule(),
                                method_choice.thinnest_pair_size(board.counts))


def run_analysis(log, cluster=None, model: str | None = None, *,
                 variance: Variance | None = None, joint: Joint | None = None,
                 monte_carlo: MonteCarlo | None = None, alpha: float = 0.05,
                 board: Leaderboard | None = None, progress: bool | None = None,
                 **options) -> Analysis:
    """The numbers of :func:`winrate.analyze` (its arguments and what they do are described
    there): fit, clustered covariance, intervals, diagnostics and notes."""
    variance, joint, monte_carlo, options, legacy = _option_objects(variance, joint,
                                                                     monte_carlo, options)
    source, log, design = log, *_read(log, model, board)
    reading_notes = log.notes  # given when the log was read
    view = design or log  # the axes and sizes of the full log
    default_note = None
    if cluster is None:
        clustering, default_note = default_clustering(view)
    else:
        clustering = parse_clustering(cluster)
    with notes.gathered() as fit_notes:
        board, log = _fitted(log, model, board, options)
    _check_clustering(view, clustering)
    estimator = estimators.of(board)
    if design is not None and estimator.reads_row_order(board.options):
        raise WinrateInputError(f"model {estimator.name!r} with these options reads the "
                                "order of the rows, which an engine's key table does not "
                                "keep: analyse this log with engine 'memory'")
    method, correction, reference = variance.method, variance.correction, variance.reference
    auto, overridden = None, ""
    if method == "auto":
        auto = _auto_choice(view, board, clustering)
        method = auto.method
        given = {"correction": (correction, auto.correction),
                 "reference": (reference, auto.reference)}
        overridden = "".join(f"; {name} {mine} as requested (auto's choice: {theirs})"
                             for name, (mine, theirs) in given.items()
                             if mine is not None and mine != theirs)
        correction, reference = correction or auto.correction, reference or auto.reference
    correction, reference = correction or DEFAULT_CORRECTION, reference or "normal"
    require_rows(board.influence, method)
    if design is not None and method != "sandwich":
        raise WinrateInputError(_SCAN_METHOD.format(method=method))
    if correction == "cr2":
        estimator.require("cr2", "use correction 'cr1'")
    seed = monte_carlo.seed
    k = len(board.models)
    strata = estimator.cr2_strata(board)  # the naive covariance's per-pair ddof too
    naive_full = naive_cov(board.influence, correction, log.frequency, bread=board.bread,
                           strata=strata)
    cov_naive = naive_full[:k, :k]
    axes, psd_repaired, full = {}, False, naive_full
    if clustering:
        cr2_strata = strata if correction == "cr2" else None
        if design is None:
            result = _clustered_cov(log, board, clustering, correction, cr2_strata)
            shapes = [diagnostics.axis_design(log, board, log.axes[name].codes)
                      for name in clustering]
        else:
            result, shapes = design.covariance(log, board, clustering, correction,
                                               cr2_strata, progress)
        full, psd_repaired = result.cov, result.psd_repaired
        for i, name in enumerate(clustering):
            group = result.term_meats[i]  # row_squares: each column's sum of squared rows
            axes[name] = _axis_summary(view, board, name, result.term_covs[i][:k, :k],
                                       cov_naive, group, group.row_squares, shapes[i])
    cov = full[:k, :k]
    choice, resampling_notes = None, []
    if method != "sandwich":
        with notes.gathered() as resampling_notes:
            choice = resampled_variance(log, board, clustering, method, alpha,
                                        variance.bootstrap_reps, seed, progress,
                                        correction=correction)
        # PSD repair is reported by the common note below
        resampling_notes = resampling_notes.without("psd-repaired")
        cov, df, method_note = choice.cov, choice.df, choice.note
        psd_repaired = psd_repaired or choice.psd_repaired
    floor, floor_notes = _small_sample_floor(board, log)
    cov, cov_naive = cov + floor, cov_naive + floor
    if method == "sandwich":
        df = _reference_df(board, axes, correction, reference,
                           result.term_meats[:len(clustering)] if clustering else [], cov)
        method_note = sandwich_note(clustering, [a.n_clusters for a in axes.values()],
                                    correction, df)
    intervals = wald_intervals(board.scores, cov, alpha, df)
    if choice is not None and choice.wild is not None:
        intervals = WaldIntervals(board.scores, choice.wild.se, choice.wild.low,
                                  choice.wild.high, float("nan"), alpha, df)
    not_estimable = not_estimable_models(board, intervals.se, axes)
    intervals = _blank(intervals, board.models, not_estimable)
    joint_result, joint_notes = None, []
    if joint.any:
        with notes.gathered() as joint_notes:  # e.g. bonferroni-fallback, zero variance
            joint_result = joint_inference(
                board.scores, cov, alpha, df, simultaneous=joint.simultaneous,
                ranks=joint.ranks, pairwise=joint.pairwise, rank_method=joint.rank_method,
                n_draws=monte_carlo.n_draws, seed=seed, choice=choice,
                estimable=~np.isnan(intervals.se), progress=progress)
    intervals, joint_result, range_note = _cut_to_range(
        board, intervals, joint_result, wald=choice is None or choice.wild is None)
    if auto is not None:
        method_note = (f"auto: {auto.reason}{overridden}. "
                       f"{method_note[0].upper()}{method_note[1:]}")
    design_notes = [note for note in (
        default_note, range_note, judges_sample_note(view, clustering),
        design.note() if design is not None else None,
        method_choice.no_reliable_method(clustering, [a.n_clusters for a in axes.values()]),
    ) if note]
    found = Notes([*legacy, *fit_notes,
                   *_warnings(board, axes, not_estimable, psd_repaired, method,
                              df is not None, correction),
                   *floor_notes, *resampling_notes, *joint_notes, *design_notes])
    for note in found:
        notes.emit(note, stacklevel=outside_stacklevel())
    found = Notes([*reading_notes, *found])  # emitted when the log was read, not again
    settings = Settings(
        estimator=board.estimator, scale=board.scale, cluster=list(clustering) or ["none"],
        correction=correction, alpha=alpha, reference=reference, df=df,
        method=variance.method, bootstrap_reps=variance.bootstrap_reps, seed=seed,
        n_draws=monte_carlo.n_draws,
        options={**estimator.settings(board.options), **_fitted_settings(board)})
    return Analysis(
        leaderboard=board, clustering=clustering, cov=cov, cov_naive=cov_naive,
        intervals=intervals, deff=np.where(np.isnan(intervals.se), np.nan,
                                           diagnostics.design_effect(cov, cov_naive)),
        axes=axes,
        psd_repaired=psd_repaired, n_comparisons=log.n_comparisons, n_rows=view.n_rows,
        settings=settings, notes=found, method=choice.method if choice else "sandwich",
        method_note=method_note, joint=joint_result,
        coefficients=_coefficients(board, full, naive_full, alpha, df),
        not_estimable=not_estimable, small_sample_floor=floor,
        log=source if design is not None else log,
        requested=(variance, joint, monte_carlo),
    )


def _fitted_settings(board: Leaderboard) -> dict:
    """Fitted state that reports show with the options (the covariates' standardisation)."""
    moments = board.fitted.get("standardisation")
    return {} if moments is None else {"standardisation": moments}


def _option_objects(variance, joint, monte_carlo, options: dict):
    """The option objects, with today's flat keywords (``method=``, ``seed=``, ...) moved
    into them and a ``deprecated`` note naming each; a flat keyword beside its object is an
    error. Returns ``(variance, joint, monte_carlo, estimator options, notes)``."""
    given = {"Variance": variance, "Joint": joint, "MonteCarlo": monte_carlo}
    moved: dict[type, dict] = {}
    for key in [key for key in options if key in LEGACY_KEYWORDS]:
        moved.setdefault(LEGACY_KEYWORDS[key], {})[key] = options.pop(key)
    found = []
    for kind, values in moved.items():
        if given[kind.__name__] is not None:
            raise WinrateInputError(f"give {', '.join(values)} inside "
                                    f"{_keyword(kind)}={kind.__name__}(...), not beside it")
        shown = ", ".join(f"{key}={value!r}" for key, value in values.items())
        found.append(notes.deprecated(shown, f"{_keyword(kind)}={kind.__name__}({shown})"))
    return (variance or Variance(**moved.get(Variance, {})),
            joint or Joint(**moved.get(Joint, {})),
            monte_carlo or MonteCarlo(**moved.get(MonteCarlo, {})), options, found)


def _keyword(kind: type) -> str:
    return {Variance: "variance", Joint: "joint", MonteCarlo: "monte_carlo"}[kind]


_SCAN_METHOD = ("the {method} refits the estimator on resampled clusters, which a scan "
                "analysed on its engine does not hold in memory: use method 'sandwich' (with "
                "correction 'cr2' and reference 't' for few clusters), or engine 'memory'")


def _read(log, model: str | None, board: Leaderboard | None):
    """``(log, design)``: a log in memory and None, or, for a scan analysed on its engine,
    the key log of its pass 1 and the full log's :class:`winrate.inference.scanned.
    ScanDesign` (:mod:`winrate.inference.scanned`)."""
    if not isinstance(log, Scan):
        return as_log(log), None
    if log.mode == "memory":
        return log.to_log(), None
    return scanned_log(log, model, board)


def _fitted(log: ComparisonLog, model: str | None, board: Leaderboard | None,
            options: dict) -> tuple[Leaderboard, ComparisonLog]:
    """``board`` (checked against the model and options of this call) or a new fit, and
    the rows of ``log`` the estimator uses (:meth:`winrate.estimators.base.Estimator.rows`:
    a score against a baseline leaves out the rows without it)."""
    if board is None:
        estimator = estimators.get(model or estimators.DEFAULT_ESTIMATOR)
        return estimators.fit_settled(estimator, log, estimators.settle(estimator, options))
    estimator = estimators.of(board)
    if model is not None and model != board.estimator:
        raise WinrateInputError(f"model {model!r} was asked for, but the reused fit (board=) "
                                f"is of model {board.estimator!r}")
    settled = estimators.settle(estimator, options)
    for name in options:
        if not _same(settled[name], board.options.get(name)):
            raise WinrateInputError(
                f"option {name!r} is {_shown(settled[name])} in this call but "
                f"{_shown(board.options.get(name))} in the reused fit (board=): refit with "
                "these options, or leave the option out")
    return board, estimators.used_rows(estimator, log, board.options)


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and a.equals(b)
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except (TypeError, ValueError):
        return a == b


def _shown(value) -> str:
    return "a matrix" if isinstance(value, (np.ndarray, pd.DataFrame)) else repr(value)


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


def _small_sample_floor(board: Leaderboard, log: ComparisonLog):
    """The estimator's small-sample floor of single-outcome pairs (zero when it has none),
    with a note naming the pairs and the floor. It is part of the covariance, so it does
    not depend on the interval's level."""
    found = estimators.of(board).small_sample_floor(board, log.frequency)
    k = len(board.models)
    if found is None:
        return np.zeros((k, k)), []
    floor, degenerate, kind = found
    if kind is None:
        return floor, []
    names = board.all_models
    shown = [(str(names[lo]), str(names[hi]), board.counts[lo, hi])
             for lo, hi in board.pairs[degenerate][:5]]
    return floor, [notes.small_sample_floor(shown, int(degenerate.sum()), kind)]


def _blank(intervals: WaldIntervals, models, not_estimable: dict) -> WaldIntervals:
    """NaN SE and interval for the models that are not estimable."""
    if not not_estimable:
        return intervals
    out = np.isin(models.astype(str), list(not_estimable))
    se, low, high = (np.where(out, np.nan, x) for x in
                     (intervals.se, intervals.low, intervals.high))
    return WaldIntervals(intervals.estimate, se, low, high, intervals.critical_value,
                         intervals.alpha, intervals.df)


def _coefficients(board: Leaderboard, full: np.ndarray, naive_full: np.ndarray, alpha: float,
                  df) -> Coefficients | None:
    """Sandwich inference for the non-rating parameters (always the sandwich: resampling
    methods refit ratings only)."""
    if not board.coef_names:
        return None
    k = len(board.models)
    cov = full[k:, k:]
    iv = wald_intervals(board.coef, cov, alpha, df)
    se_naive = np.sqrt(np.clip(np.diag(naive_full[k:, k:]), 0, None))
    return Coefficients(tuple(board.coef_names), board.coef, iv.se, se_naive, iv.low, iv.high,
                        cov, full)


