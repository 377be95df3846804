"""The variance step of an analysis: a fit and a plan in, a :class:`VarianceResult` out.

:func:`estimate_variance` computes the covariance the plan asks for -- the naive and the
multiway clustered sandwich from the fit's cluster sums
(:func:`winrate.variance.cluster_sums.clustered`, whichever engine holds the rows), or a
resampling method (:func:`winrate.variance.resampling.resampled_variance`) -- adds the
estimator's small-sample floor, and reads off what the intervals need: the t degrees of
freedom, each axis' diagnostics (:class:`AxisSummary`), the models whose uncertainty is
not estimable, and the notes of the design. Nothing here depends on the level of the
intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from winrate import notes
from winrate.constants import FEW_CLUSTERS
from winrate.estimators.leaderboard import Leaderboard
from winrate.io.logs import ComparisonLog, factorize_groups
from winrate.notes import Notes
from winrate.variance import diagnostics, method_choice
from winrate.variance.cluster_sums import clustered
from winrate.variance.reference import critical_value, reference_label
from winrate.variance.resampling import WildDraws, resampled_variance, sandwich_note
from winrate.variance.sandwich import GroupMeat, pan_wall_df


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
    ``largest_cluster`` that cluster's label
    (:func:`winrate.variance.diagnostics.largest_cluster_share`); ``effective_clusters`` each
    model's effective number of clusters G* on this axis
    (:func:`winrate.variance.diagnostics.effective_clusters`); ``unidentified`` the (K, K)
    bound the pairs seen in a single cluster of this axis add to an analysis by this axis
    alone (:func:`_unidentified_bound`).
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
    unidentified: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class VarianceResult:
    """The covariance of an analysis and what follows from it, at no level yet.

    ``cov`` and ``cov_naive`` (K, K) are the ratings' clustered and naive covariances with
    the small-sample ``floor`` included, ``cov`` also with the ``unidentified`` bound of the
    pairs seen in a single cluster of some axis (:func:`_unidentified_bound`); ``full`` and
    ``naive_full`` those of every parameter (ratings, then coefficients) without them;
    ``se`` the SEs the intervals use (NaN for the ``not_estimable`` models); ``df`` the t
    degrees of freedom (None: normal; per model with CR2); ``method`` what ran and
    ``method_note`` why; ``axes`` each clustering axis' :class:`AxisSummary`; ``wild`` the
    wild bootstrap's draws when that method ran; ``notes`` what the covariance means for
    the numbers and ``design_notes`` what the design and the engine mean for them."""

    cov: np.ndarray
    cov_naive: np.ndarray
    full: np.ndarray
    naive_full: np.ndarray
    floor: np.ndarray
    unidentified: np.ndarray
    se: np.ndarray
    df: object
    method: str
    method_note: str
    correction: str
    axes: dict[str, AxisSummary]
    psd_repaired: bool
    not_estimable: dict[str, str]
    wild: WildDraws | None = None
    notes: Notes = field(default_factory=Notes)
    design_notes: Notes = field(default_factory=Notes)


def estimate_variance(plan, fitted, source, progress=None) -> VarianceResult:
    """The variance step (module doc) for ``plan`` (:class:`winrate.inference.plan.Plan`)
    of the ``fitted`` estimator, whose rows ``source`` holds."""
    board, log, estimator = fitted.board, fitted.log, fitted.estimator
    k = len(board.models)
    strata = estimator.cr2_strata(board)  # the naive covariance's per-pair ddof too
    with notes.gathered() as found:
        sums = source.cluster_sums(log, board, plan.clustering, strata, progress)
        sandwich = clustered(sums, plan.correction)
        iccs = {name: sums.same_pair_icc(i) for i, name in enumerate(plan.clustering)}
        axes = _axis_summaries(source.design, fitted, plan.clustering, sandwich, iccs)
        full = sandwich.naive if sandwich.covariance is None else sandwich.covariance.cov
        resampled = _resampled(plan, fitted, progress)
    psd_repaired = sandwich.psd_repaired or (resampled is not None
                                             and resampled.psd_repaired)
    cov = full[:k, :k] if resampled is None else resampled.cov
    floor, floor_notes = _small_sample_floor(board, log)
    bound = (_unidentified_bound(fitted, dict(zip(plan.clustering, sandwich.designs,
                                                  strict=True)), iccs)
             if resampled is None else np.zeros((k, k)))
    cov, cov_naive = cov + floor + bound, sandwich.naive[:k, :k] + floor
    if resampled is None:
        df = _reference_df(board, axes, plan, sandwich, cov)
        method_note = sandwich_note(plan.clustering, [a.n_clusters for a in axes.values()],
                                    plan.correction, df)
    else:
        df, method_note = _resampled_reference(plan, resampled)
    if plan.auto_reason:
        method_note = f"auto: {plan.auto_reason}. {method_note[0].upper()}{method_note[1:]}"
    wild = None if resampled is None else resampled.wild
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None)) if wild is None else wild.se
    not_estimable = not_estimable_models(board, se, axes, estimator.fixed_models(board))
    se = np.where(np.isin(board.models.astype(str), list(not_estimable)), np.nan, se)
    method = "sandwich" if resampled is None else resampled.method
    design_notes = _design_notes(plan, source, board, axes, not_estimable,
                                 _repair_note(sandwich, resampled, board, not_estimable)
                                 if psd_repaired else None, method, df, bound.any())
    return VarianceResult(
        cov, cov_naive, full, sandwich.naive, floor, bound, se, df, method, method_note,
        plan.correction, axes, psd_repaired, not_estimable, wild,
        Notes([*design_notes[0], *floor_notes, *found.without("psd-repaired")]),
        Notes(design_notes[1]))


def _resampled(plan, fitted, progress):
    """The resampling method's :class:`winrate.variance.resampling.VarianceChoice`, or
    None for the sandwich."""
    if plan.method == "sandwich":
        return None
    return resampled_variance(fitted.log, fitted.board, plan.clustering, plan.method,
                              plan.variance.bootstrap_reps, plan.seed, progress,
                              correction=plan.correction)


def _resampled_reference(plan, resampled) -> tuple:
    """The resampling method's df and note, with ``auto``'s per-model df from the effective
    clusters in place of its own t(G_min - 1) when the plan carries them."""
    if plan.df is None or resampled.df is None:
        return resampled.df, resampled.note
    return plan.df, resampled.note.replace(f"t({resampled.df}) reference",
                                           f"{reference_label(plan.df)} reference", 1)


def _axis_summaries(design, fitted, clustering: tuple[str, ...], sandwich,
                    iccs: dict) -> dict[str, AxisSummary]:
    """Each axis' :class:`AxisSummary` from its one-way term of the multiway sum, with the
    bound its single-cluster pairs would add to a one-way analysis by it (``iccs``: as
    :func:`_unidentified_bound`)."""
    if sandwich.covariance is None:
        return {}
    board = fitted.board
    k = len(board.models)
    result = sandwich.covariance
    return {name: replace(_axis_summary(design, board, name, result.term_covs[i][:k, :k],
                                        sandwich.naive[:k, :k], result.term_meats[i],
                                        sandwich.designs[i]),
                          unidentified=_unidentified_bound(fitted,
                                                           {name: sandwich.designs[i]}, iccs))
            for i, name in enumerate(clustering)}


def _axis_summary(design, board: Leaderboard, name: str, cov: np.ndarray,
                  cov_naive: np.ndarray, group: GroupMeat, shape: tuple) -> AxisSummary:
    """One axis' diagnostics from its one-way term of the multiway call (``cov`` and the
    ``group`` meat with its largest cluster totals) and its ``shape`` (m, single-cluster
    pairs, ICC: :class:`winrate.variance.cluster_sums.AxisDesign`), so nothing is
    recomputed.

    A model's variance on the axis is not identified when its own column of the meat is
    zero while its rows are not (``group.row_squares``: each column's sum of squared rows):
    every comparison of the model lies in one cluster, where its influence (or, for
    Bradley-Terry, its score) sums to zero. Its SE and DEFF are then NaN, not 0 -- for
    Bradley-Terry the sandwich would otherwise lend it a small SE through the centring."""
    axis = design.axes[name]
    row_ss = group.row_squares[board.codes]
    own = np.diag(group.meat)[board.codes]
    unidentified = (own <= 1e-12 * row_ss) & (row_ss > 0)
    se = np.where(unidentified, np.nan, np.sqrt(np.clip(np.diag(cov), 0, None)))
    deff = np.where(unidentified, np.nan, diagnostics.design_effect(cov, cov_naive))
    m, lonely, icc = shape
    m = m[board.codes]
    share, largest = (x[board.codes] for x in diagnostics.dominant_share(group))
    effective = diagnostics.effective_clusters(group)[board.codes]
    return AxisSummary(
        name=name, n_clusters=axis.n_clusters,
        mean_cluster_size=design.n_comparisons / axis.n_clusters,
        cov=cov, se=se, deff=deff, m=m,
        rho=diagnostics.shared_response_correlation(deff, m),
        icc=icc,
        single_cluster_pairs=int(lonely.sum()), largest_share=share,
        largest_cluster=np.where(largest >= 0, axis.labels[np.maximum(largest, 0)], None),
        effective_clusters=np.where(unidentified, np.nan, effective),
    )


def _reference_df(board: Leaderboard, axes: dict, plan, sandwich, cov: np.ndarray):
    """Degrees of freedom of the t reference (None: normal). CR2: Pan and Wall's per model
    (:func:`winrate.variance.sandwich.pan_wall_df`, with ``cov``'s variances, the
    small-sample floor included), the smallest over the axes, at most ``auto``'s per-model
    df from the effective clusters where the plan carries them; otherwise ``G_min - 1``, or
    those df."""
    if plan.reference != "t" or not axes:
        return None
    if plan.correction != "cr2":
        return (min(axis.n_clusters for axis in axes.values()) - 1 if plan.df is None
                else plan.df)
    variance = np.full(board.influence.shape[1], np.nan)
    variance[board.codes] = np.diag(cov)
    meats = sandwich.covariance.term_meats[:len(axes)]
    pan_wall = np.fmin.reduce([pan_wall_df(group, variance)[board.codes] for group in meats])
    return pan_wall if plan.df is None else np.fmin(pan_wall, plan.df)


def _unidentified_bound(fitted, designs: dict, iccs: dict) -> np.ndarray:
    """The estimator's variance for the pairs observed within a single cluster of one of
    the axes whose ``designs`` are given (by axis name), which the clustered sandwich
    cannot see, with the within-cluster correlation of one pair's comparisons taken from
    the axis' other pairs: ``iccs[axis]`` where the cluster sums reduced it
    (:meth:`winrate.variance.cluster_sums.ClusterSums.same_pair_icc`: an engine), else
    :func:`_same_pair_icc` from the rows or cells in memory
    (:meth:`winrate.estimators.base.Estimator.unidentified_pair_floor`; for the win rate
    :func:`winrate.estimators.small_sample.unidentified_pair_cov`); zero without
    clustering or when the estimator has none."""
    board, log = fitted.board, fitted.log
    k = len(board.models)
    if not designs:
        return np.zeros((k, k))
    single = np.zeros(len(board.pairs), bool)
    rho = np.zeros(len(board.pairs))
    for axis, design in designs.items():  # per pair, the largest ICC of an axis it is single on
        if not design.single.any():
            continue
        icc = iccs.get(axis)
        if icc is None:
            icc = _same_pair_icc(fitted, axis, design.icc)
        icc = float(np.clip(icc, 0.0, 1.0)) if np.isfinite(icc) else 1.0
        rho = np.where(design.single, np.maximum(rho, icc), rho)
        single |= design.single
    bound = fitted.estimator.unidentified_pair_floor(board, log.frequency, single, rho)
    return np.zeros((k, k)) if bound is None else bound


def _same_pair_icc(fitted, axis: str, pooled: float) -> float:
    """The one-way ANOVA ICC of the pair-centred scores grouped by (cluster, pair) cells:
    the correlation of two comparisons of one pair in one cluster, Kish's ``rho`` for a
    pair's mean (Kish 1965, sec. 5.4). A cell holds one pair, whose scores share one
    orientation, so it does not depend on which model of a pair is coded first (the
    axis-level ICC of the diagnostics, grouping by cluster alone, adds deviations of
    differently oriented pairs and does). A per-question score table gives its cells' sums
    (:meth:`winrate.estimators.base.Estimator.same_pair_cells`); where the estimator gives
    neither, the ``pooled`` axis-level ICC stands in. (An engine reduces the cells' sums
    itself: :meth:`winrate.variance.buckets.EngineSums.same_pair_icc`.)"""
    board, log = fitted.board, fitted.log
    codes = log.axes[axis].codes
    if board.pair is None:
        found = fitted.estimator.same_pair_cells(board, log, codes)
        return pooled if found is None else _icc_of_cells(*found)
    cells = codes.astype(np.int64) * len(board.pairs) + board.pair
    return diagnostics.anova_icc(board.centered, factorize_groups(cells)[0], log.frequency)


def _icc_of_cells(size: np.ndarray, total: np.ndarray, squares: float) -> float:
    """:func:`winrate.variance.diagnostics.icc_of_sums` of cells given by their sizes,
    sums and total sum of squares of the values, centred here at their grand mean ``m``
    (``S_g - n_g m``; ``sum y^2 - N m^2``), as :func:`~winrate.variance.diagnostics.anova_icc`
    centres rows."""
    grand_mean = total.sum() / size.sum() if size.sum() > 0 else 0.0
    return diagnostics.icc_of_sums(size, total - size * grand_mean,
                                   squares - size.sum() * grand_mean**2)


def _small_sample_floor(board: Leaderboard, log: ComparisonLog):
    """The estimator's small-sample floor of single-outcome pairs (zero when it has none),
    with a note naming the pairs and the floor. It is part of the covariance, so it does
    not depend on the interval's level."""
    from winrate import estimators

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


# ------------------------------------------------------------------------- not estimable

#: An SE this many times below the median of the others is a zero in round-off.
NEGLIGIBLE_SHARE = 1e-6


def not_estimable_models(board: Leaderboard, se: np.ndarray, axes: dict[str, AxisSummary],
                         fixed: np.ndarray) -> dict[str, str]:
    """Models whose uncertainty cannot be estimated, with the reason in words.

    A model with no comparisons has no score. A zero (or undefined) SE after the
    small-sample floor (:mod:`winrate.estimators.small_sample`;
    :func:`negligible_se`), or an axis on which its variance is not identified
    (:func:`_axis_summary`), means all of its comparisons fall in a single cluster of an
    axis, so their influence sums to zero there. Such a model gets no interval and a rank
    set spanning every rank. A model whose score is ``fixed`` by definition (an anchor,
    :meth:`winrate.estimators.base.Estimator.fixed_models`) is not listed.
    """
    n = board.comparisons_per_model
    zero = negligible_se(se, board.scores)
    reasons = {}
    for i, model in enumerate(map(str, board.models)):
        if n[i] == 0:
            reasons[model] = notes.not_estimable_reason(0, [])
        elif not fixed[i] and (zero[i] or any(np.isnan(a.se[i]) for a in axes.values())):
            single = [a.name for a in axes.values() if np.isclose(a.m[i], n[i])]
            reasons[model] = notes.not_estimable_reason(n[i], single)
    return reasons


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


# ------------------------------------------------------------------------- notes


def _repair_note(sandwich, resampled, board: Leaderboard, not_estimable: dict):
    """The ``psd-repaired`` note, with what the PSD alternative gives when the sandwich's
    multiway sum was clipped: the sum of its positive inclusion-exclusion terms (for two
    axes the one-way covariances, without the intersection term), PSD by construction and
    never below the clipped sum since the terms left out are PSD (Davezies,
    D'Haultfoeuille & Guyonvarch 2021; MacKinnon, Nielsen & Webb 2021); the largest
    ratio of its SE to the clipped sum's, and that model (models whose SE is
    ``not_estimable`` left out)."""
    if resampled is not None or sandwich.covariance is None:
        return notes.psd_repaired()
    k = len(board.models)
    result = sandwich.covariance
    positive = sum(cov for (_, _, sign), cov in zip(result.terms, result.term_covs, strict=True)
                   if sign > 0)
    se_positive = np.sqrt(np.clip(np.diag(positive)[:k], 0, None))
    se = np.sqrt(np.clip(np.diag(result.cov)[:k], 0, None))
    shown = (se > 0) & ~np.isin(board.models.astype(str), list(not_estimable))
    ratio = np.divide(se_positive, se, out=np.full(k, np.nan), where=shown)
    if not np.isfinite(ratio).any():
        return notes.psd_repaired()
    largest = np.nanmax(ratio)
    # the first model within round-off of the largest: a tie names the same model whatever
    # the last bits (a weighted log and its expanded rows give the same note)
    worst = int(np.flatnonzero(ratio >= largest * (1 - 1e-9))[0])
    return notes.psd_repaired(float(largest), str(board.models[worst]))


def _design_notes(plan, source, board: Leaderboard, axes: dict[str, AxisSummary],
                  not_estimable: dict, repair_note, method: str,
                  df, bounded: bool) -> tuple[list, list]:
    """What the numbers can and cannot support, as coded notes (:mod:`winrate.notes`), in
    two groups: those of the covariance (before the floor's note) and those of the design
    (after every other); ``repair_note`` the PSD repair's (None: none); ``df`` the
    reference's (None: normal); ``bounded``: the single-cluster pairs' variance was bounded
    (:func:`_unidentified_bound`)."""
    t_reference = df is not None
    found = []
    for axis in axes.values():
        if axis.n_clusters < FEW_CLUSTERS:
            found.append(notes.few_clusters(axis.name, axis.n_clusters, method, t_reference))
        if axis.single_cluster_pairs:
            found.append(notes.single_cluster_pairs(axis.name, axis.single_cluster_pairs,
                                                    len(board.pairs), bounded))
        found.append(_dominant_cluster_note(board, axis))
        found.append(_few_effective_note(board, axis, df, _auto_small_sample(plan, df)))
    if not_estimable:
        found.append(notes.not_estimable(not_estimable))
    from winrate import estimators

    found.extend(estimators.of(board).design_notes(board))
    found.append(repair_note)
    design = [*source.notes(), judges_sample_note(source.design, plan.clustering),
              method_choice.no_reliable_method(plan.clustering,
                                               [a.n_clusters for a in axes.values()])]
    return ([note for note in found if note is not None],
            [note for note in design if note is not None])


def _dominant_cluster_note(board: Leaderboard, axis: AxisSummary):
    """The Lindeberg warning (:func:`winrate.notes.dominant_cluster`): a cluster carrying
    more of a model's variance on an axis with enough clusters than
    :data:`winrate.variance.diagnostics.DOMINANT_SHARE`."""
    if axis.largest_share is None or axis.n_clusters < FEW_CLUSTERS:
        return None  # few clusters have their own warning
    limit = diagnostics.DOMINANT_SHARE
    flagged = np.flatnonzero(np.nan_to_num(axis.largest_share) > limit)
    if not flagged.size:
        return None
    worst = flagged[np.argmax(axis.largest_share[flagged])]
    return notes.dominant_cluster(axis.name, limit, flagged.size, axis.largest_share[worst],
                                  str(board.models[worst]), axis.largest_cluster[worst])


def _auto_small_sample(plan, df) -> bool:
    """Whether ``auto`` chose a small-sample method for the design (df from the effective
    clusters, or CR2 with its Pan-Wall t)."""
    return plan.df is not None or (bool(plan.auto_reason) and plan.correction == "cr2"
                                   and df is not None)


def _few_effective_note(board: Leaderboard, axis: AxisSummary, df, capped: bool):
    """The models whose SE rests on fewer than :data:`winrate.notes.FEW_EFFECTIVE` effective
    clusters on an axis with enough clusters overall (an axis with few clusters has its own
    warning), with the 95% critical value the reference in use (``df``: None for normal,
    one or per model) gives the fewest and the one of t(G* - 1), and whether the method in
    use already allows for it (``capped``: ``auto``'s small-sample choice,
    :func:`_auto_small_sample`; or a df no larger than G* - 1) or what ``auto`` would run
    instead
    (:mod:`winrate.variance.method_choice`)."""
    if axis.effective_clusters is None or axis.n_clusters < FEW_CLUSTERS:
        return None
    g_star = axis.effective_clusters
    flagged = np.flatnonzero(np.nan_to_num(g_star, nan=np.inf) < notes.FEW_EFFECTIVE)
    if not flagged.size:
        return None
    flagged = flagged[np.argsort(g_star[flagged], kind="stable")]
    worst = flagged[0]
    own = None if df is None else float(np.broadcast_to(df, g_star.shape)[worst])
    wanted = max(g_star[worst] - 1, 1.0)
    from winrate import estimators

    auto_method = ("CR2 with t on at most G* - 1 df"
                   if estimators.of(board).thin_design_rule() else
                   "the delete-one-cluster jackknife with t on G* - 1 df")
    return notes.few_effective_clusters(
        axis.name, axis.n_clusters, [(str(board.models[i]), g_star[i]) for i in flagged],
        (critical_value(0.05, own), critical_value(0.05, wanted)),
        own is not None and (capped or own <= wanted + 1e-9), auto_method)


def judges_sample_note(log, clustering: tuple[str, ...]):
    """The note that intervals clustered without a judge axis the log has, with fewer than
    :data:`winrate.constants.FEW_CLUSTERS` judges, are conditional on these judges."""
    judges = log.axes.get("judge")
    if (judges is None or "judge" in clustering
            or not 2 <= judges.n_clusters < FEW_CLUSTERS):
        return None
    return notes.judges_fixed(judges.n_clusters)
