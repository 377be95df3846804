"""End-to-end leaderboard analysis: log -> scores and influence -> covariance -> intervals.

:func:`analyze` runs the data flow once and collects everything a report needs: the
clustered and naive covariances, marginal intervals, per-axis diagnostics and warnings
in plain words.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from winrate import diagnostics
from winrate.data import ComparisonLog
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.inference import (
    DEFAULT_DRAWS,
    PairwiseDifferences,
    RankSets,
    WaldIntervals,
    pairwise_differences,
    rank_sets,
    simultaneous_intervals,
    wald_intervals,
)
from winrate.leaderboard import Leaderboard, fit
from winrate.resampling import VARIANCE_METHODS, VarianceChoice, resampled_variance, sandwich_note
from winrate.variance import DEFAULT_CORRECTION, multiway_cluster_cov, naive_cov

FEW_CLUSTERS = 30


@dataclass(frozen=True)
class AxisSummary:
    """One clustering axis: cluster counts and its one-way covariance diagnostics.

    ``m`` is the mean number of comparisons of each model per cluster; ``rho`` the implied
    shared-response correlation ``(deff - 1) / (m - 1)``; ``icc`` the pair-level ANOVA ICC;
    ``single_cluster_pairs`` the number of model pairs observed within a single cluster;
    ``largest_share`` each model's largest cluster share of its variance on this axis and
    ``largest_cluster`` that cluster's label (:func:`winrate.diagnostics.largest_cluster_share`).
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


@dataclass(frozen=True)
class LeaderboardAnalysis:
    """Scores, joint covariance, intervals and diagnostics of one leaderboard."""

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
    settings: dict
    warnings: list[str] = field(default_factory=list)
    method: str = "sandwich"
    method_note: str = ""
    joint: JointInference | None = None

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
    def effective_n(self) -> np.ndarray:
        """``n_a / DEFF_a``: the number of independent comparisons the data is worth."""
        return diagnostics.effective_n(self.leaderboard.comparisons_per_model, self.deff)


@dataclass(frozen=True)
class JointInference:
    """Joint inference from the analysis covariance (each part None unless requested).

    ``simultaneous_critical_value``, ``sim_low``, ``sim_high``: intervals covering all
    scores jointly (max-|T| from :func:`winrate.inference.simultaneous_intervals`, or the
    wild bootstrap's max-|t*| quantile when that method was used); ``ranks``: rank
    confidence sets (Mogstad et al. 2024); ``pairwise``: all differences ``S_i - S_j``.
    Models without comparisons are left out (NaN bounds).
    """

    simultaneous_critical_value: float | None
    sim_low: np.ndarray | None
    sim_high: np.ndarray | None
    ranks: RankSets | None
    pairwise: PairwiseDifferences | None


def joint_inference(scores: np.ndarray, cov: np.ndarray, alpha: float, df, *,
                    simultaneous: bool = False, ranks: bool = False, pairwise: bool = False,
                    rank_method: str = "marginal", n_draws: int = DEFAULT_DRAWS, seed=0,
                    choice: VarianceChoice | None = None) -> JointInference:
    """Simultaneous intervals, rank sets and pairwise differences over the scored models."""
    keep = ~np.isnan(scores)
    est, V = scores[keep], cov[np.ix_(keep, keep)]
    mc = {"n_draws": n_draws, "seed": seed}
    crit = low = high = rank = pairs = None
    if simultaneous and choice is not None and choice.wild is not None:
        crit, low, high = (choice.wild.simultaneous_critical_value, choice.wild.sim_low,
                           choice.wild.sim_high)
    elif simultaneous:
        sim = simultaneous_intervals(est, V, alpha, df, **mc)
        crit, low, high = sim.critical_value, _expand(sim.low, keep), _expand(sim.high, keep)
    if ranks:
        rank = rank_sets(est, V, alpha, df, method=rank_method, **mc)
    if pairwise:
        pairs = pairwise_differences(est, V, alpha, df, **mc)
    return JointInference(crit, low, high, rank, pairs)


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
                  cov_naive: np.ndarray) -> AxisSummary:
    axis = log.axes[name]
    deff = diagnostics.design_effect(cov, cov_naive)
    m = diagnostics.comparisons_per_cluster(log.model_a, log.model_b, axis.codes,
                                            log.n_models, log.weight)
    lonely = diagnostics.single_cluster_pairs(board.pair, axis.codes, len(board.pairs))
    share, largest = diagnostics.largest_cluster_share(board.influence, axis.codes)
    return AxisSummary(
        name=name, n_clusters=axis.n_clusters,
        mean_cluster_size=log.n_comparisons / axis.n_clusters,
        cov=cov, se=np.sqrt(np.clip(np.diag(cov), 0, None)), deff=deff, m=m,
        rho=diagnostics.shared_response_correlation(deff, m),
        icc=diagnostics.anova_icc(board.centered, axis.codes, log.frequency),
        single_cluster_pairs=int(lonely.sum()), largest_share=share,
        largest_cluster=np.where(largest >= 0, axis.labels[np.maximum(largest, 0)], None),
    )


def _dominant_cluster_note(board: Leaderboard, axis: AxisSummary) -> str | None:
    """The Lindeberg warning: a cluster carrying more of a model's variance on an axis with
    enough clusters than :data:`winrate.diagnostics.DOMINANT_SHARE`."""
    if axis.largest_share is None or axis.n_clusters < FEW_CLUSTERS:
        return None  # few clusters have their own warning
    limit = diagnostics.DOMINANT_SHARE
    flagged = np.flatnonzero(np.nan_to_num(axis.largest_share) > limit)
    if not flagged.size:
        return None
    worst = flagged[np.argmax(axis.largest_share[flagged])]
    return (
        f"axis '{axis.name}': a single cluster carries more than {limit:.0%} of the clustered "
        f"variance for {flagged.size} model(s), up to {axis.largest_share[worst]:.0%} for "
        f"{board.models[worst]} ({axis.name} {axis.largest_cluster[worst]}); its SE then "
        "rests on fewer than 4 effective clusters and the normal approximation on that one "
        "cluster (Lindeberg condition), so treat the SE as rough: use --method jackknife or "
        "t critical values, and check the result without that cluster."
    )


def _warnings(board: Leaderboard, axes: dict[str, AxisSummary], se: np.ndarray,
              psd_repaired: bool) -> list[str]:
    """Plain-language warnings about what the numbers can and cannot support."""
    notes = []
    for axis in axes.values():
        if axis.n_clusters < FEW_CLUSTERS:
            notes.append(
                f"axis '{axis.name}' has only {axis.n_clusters} clusters (< {FEW_CLUSTERS}): "
                f"its clustered SE rests on {axis.n_clusters} independent units and is "
                "unreliable; use t(G - 1) critical values (--reference t; --method jackknife does) "
                "or a bootstrap, and treat the SE as rough."
            )
        if axis.single_cluster_pairs:
            notes.append(
                f"axis '{axis.name}': {axis.single_cluster_pairs} of {len(board.pairs)} model "
                f"pairs are observed within a single {axis.name} cluster; the {axis.name} "
                "variance is not identified for them, so SEs of the models involved are "
                "understated on that axis."
            )
        dominant = _dominant_cluster_note(board, axis)
        if dominant:
            notes.append(dominant)
    no_games = board.comparisons_per_model == 0
    if no_games.any():
        names = [str(m) for m in board.models[no_games]]
        notes.append(f"models with no comparisons (score undefined): {names}")
    zero = (se < 1e-12) & ~no_games  # exact zero up to round-off
    if zero.any():
        notes.append(
            f"models with zero estimated variance: {[str(m) for m in board.models[zero]]}; "
            "every pair they played has a single outcome, so their intervals have zero width "
            "and mean nothing (a Wald interval cannot express the uncertainty of a 0% or 100% "
            "rate)."
        )
    n_missing = len(board.unobserved_pairs)
    if n_missing:
        notes.append(
            f"{n_missing} model pairs were never compared; they are left out of the scores "
            "(never imputed), so models are scored against different opponent sets."
        )
    if psd_repaired:
        notes.append(
            "the multiway covariance was not positive semi-definite and was repaired by "
            "clipping negative eigenvalues (Cameron, Gelbach & Miller 2011); some contrasts "
            "may have understated SEs."
        )
    return notes


def clustering_problem(log: ComparisonLog, clustering: tuple[str, ...]) -> str | None:
    """Why clustering by these axes gives no variance estimate, in plain words; else None."""
    for name in clustering:
        if name not in log.axes:
            return (f"the log has no '{name}' axis (it has {sorted(log.axes)}), so nothing "
                    f"is known about which comparisons share a {name}")
        axis = log.axes[name]
        if axis.n_clusters < 2:
            return (f"every comparison has the same {name} ({axis.labels[0]!s}): one cluster "
                    f"is one independent unit, so variation across {name}s cannot be "
                    f"estimated (the SEs are conditional on this {name})")
    return None


def _clustered_cov(log: ComparisonLog, board: Leaderboard, clustering: tuple[str, ...],
                   correction: str):
    problem = clustering_problem(log, clustering)
    if problem is not None:
        raise WinrateInputError(f"cannot cluster by {'+'.join(clustering)}: {problem}")
    groups = [log.axes[name].codes for name in clustering]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return multiway_cluster_cov(board.influence, groups, correction)


def analyze(log: ComparisonLog, cluster="prompt+judge", weights="uniform",
            correction: str = DEFAULT_CORRECTION, alpha: float = 0.05,
            reference: str = "normal", *, method: str = "sandwich",
            bootstrap_reps: int = 999, seed: int | None = 0, simultaneous: bool = False,
            ranks: bool = False, pairwise: bool = False, rank_method: str = "marginal",
            n_draws: int = DEFAULT_DRAWS, progress: bool | None = None,
            board: Leaderboard | None = None) -> LeaderboardAnalysis:
    """Fit scores and their clustered covariance, intervals and diagnostics.

    ``cluster`` names the axes (``"none"``, ``"prompt"``, ``"judge"``, ``"prompt+judge"`` or
    any extra axis of the log); ``reference="t"`` uses t(G - 1) critical values with G the
    smallest cluster count among the axes (normal when unclustered). Warnings are both
    returned in the result and emitted as :class:`WinrateWarning`.

    ``method``: ``"sandwich"`` (default, the multiway CR sandwich), ``"jackknife"`` (CV3J
    with t(G - 1)) or ``"bootstrap"`` (wild, cluster or pigeonhole bootstrap by the
    clustering; :func:`winrate.resampling.resampled_variance`); ``method_note`` says which
    and why. ``simultaneous``, ``ranks`` and ``pairwise`` add :class:`JointInference`
    (Monte-Carlo critical values with ``n_draws`` draws and ``seed``). ``board``: a
    :func:`winrate.leaderboard.fit` of this log with these ``weights``, to analyse one fit
    under several clusterings without refitting.
    """
    if method not in VARIANCE_METHODS:
        raise WinrateInputError(f"method must be one of {VARIANCE_METHODS}, got {method!r}")
    if reference not in ("normal", "t"):
        raise WinrateInputError(f"reference must be 'normal' or 't', got {reference!r}")
    clustering = parse_clustering(cluster)
    board = fit(log, weights) if board is None else board
    cov_naive = naive_cov(board.influence, correction, log.frequency)
    axes, psd_repaired, cov = {}, False, cov_naive
    if clustering:
        result = _clustered_cov(log, board, clustering, correction)
        cov, psd_repaired = result.cov, result.psd_repaired
        for i, name in enumerate(clustering):
            axes[name] = _axis_summary(log, board, name, result.term_covs[i], cov_naive)
    df = None
    if reference == "t" and clustering:
        df = min(axis.n_clusters for axis in axes.values()) - 1
    choice, resampling_notes = None, []
    if method == "sandwich":
        method_note = sandwich_note(clustering, [a.n_clusters for a in axes.values()],
                                    correction, df)
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", WinrateWarning)
            choice = resampled_variance(log, board, clustering, method, weights, alpha,
                                        bootstrap_reps, seed, progress,
                                        correction=correction)
        # keep the resampling warnings (few clusters, coarse bootstrap support, undefined
        # replicates) as notes; PSD repair is reported by the common note below
        resampling_notes = list(dict.fromkeys(
            str(w.message) for w in caught if issubclass(w.category, WinrateWarning)
            and "not PSD" not in str(w.message)))
        cov, df, method_note = choice.cov, choice.df, choice.note
        psd_repaired = psd_repaired or choice.psd_repaired
    intervals = wald_intervals(board.scores, cov, alpha, df)
    if choice is not None and choice.wild is not None:
        intervals = WaldIntervals(board.scores, choice.wild.se, choice.wild.low,
                                  choice.wild.high, float("nan"), alpha, df)
    notes = _warnings(board, axes, intervals.se, psd_repaired) + resampling_notes
    for note in notes:
        warnings.warn(note, WinrateWarning, stacklevel=2)
    settings = {"cluster": list(clustering) or ["none"], "weights": _weights_label(weights),
                "correction": correction, "alpha": alpha, "reference": reference, "df": df,
                "method": method, "bootstrap_reps": bootstrap_reps, "seed": seed}
    joint = None
    if simultaneous or ranks or pairwise:
        joint = joint_inference(board.scores, cov, alpha, df, simultaneous=simultaneous,
                                ranks=ranks, pairwise=pairwise, rank_method=rank_method,
                                n_draws=n_draws, seed=seed, choice=choice)
    return LeaderboardAnalysis(
        leaderboard=board, clustering=clustering, cov=cov, cov_naive=cov_naive,
        intervals=intervals, deff=diagnostics.design_effect(cov, cov_naive), axes=axes,
        psd_repaired=psd_repaired, n_comparisons=log.n_comparisons, n_rows=log.n_rows,
        settings=settings, warnings=notes, method=choice.method if choice else "sandwich",
        method_note=method_note, joint=joint,
    )


def _weights_label(weights) -> str:
    return weights if isinstance(weights, str) else "matrix"
