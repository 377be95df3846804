"""The first steps of an analysis: where the log is, the fit, and the plan of the variance.

:func:`winrate.inference.analysis.run_analysis` runs four typed steps; this module holds
the first two and what they need:

* :func:`source_of` wraps the log as a :class:`Source`: :class:`InMemory` (a log in memory)
  or :class:`Scanned` (a scan analysed on its engine: the key log of pass 1 and the full
  log's :class:`winrate.inference.scanned.ScanDesign`). The two answer the same questions
  (the axes and sizes of the full log, the cluster sums of a fit, what the engine cannot
  do), so no later step knows which engine holds the rows.
* :func:`fit` fits the estimator (or checks a reused fit against the call's options):
  a :class:`Fitted`.
* :func:`resolve` turns the call's clustering and :class:`winrate.settings.Variance` into a
  :class:`Plan` for this design (``method="auto"`` chooses by
  :func:`winrate.variance.method_choice.choose`). The level of the intervals is not part of
  it: ``alpha`` reaches only the inference step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate import estimators, notes
from winrate.constants import DEFAULT_COLUMNS
from winrate.errors import WinrateInputError
from winrate.estimators.cells import require_rows
from winrate.estimators.leaderboard import Leaderboard
from winrate.inference.scanned import ScanDesign, refuse_on_engine, scanned_log
from winrate.io.logs import ComparisonLog, as_log
from winrate.io.scan import Scan
from winrate.notes import Notes
from winrate.settings import MonteCarlo, Variance, parse_clustering
from winrate.variance import method_choice
from winrate.variance.cluster_sums import ClusterSums, memory_sums
from winrate.variance.sandwich import DEFAULT_CORRECTION

# ------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class InMemory:
    """A log held in memory: the fit and the variance read its rows."""

    log: ComparisonLog
    #: the last :class:`ClusterSums` made, with its fit and clustering: ``auto``'s effective
    #: cluster counts and the variance step then read one pass over the rows
    _made: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def design(self) -> ComparisonLog:
        """The axes and sizes of the full log (here the log itself)."""
        return self.log

    def kept(self, used: ComparisonLog) -> ComparisonLog:
        """What a result keeps for re-inference under another clustering: the rows the
        estimator ``used`` (a baseline score leaves out the rows without it)."""
        return used

    def refuse(self, estimator, options: dict, method: str) -> None:
        """Nothing a log in memory cannot do."""

    def cluster_sums(self, log: ComparisonLog, board: Leaderboard,
                     clustering: tuple[str, ...], strata, progress) -> ClusterSums:
        made = self._made.get("sums")
        if made is None or made[:3] != (log, board, clustering) or made[3] is not strata:
            made = (log, board, clustering, strata, memory_sums(log, board, clustering, strata))
            self._made["sums"] = made
        return made[4]

    def effective_sizes(self, fitted: Fitted, clustering: tuple[str, ...],
                        expected: str | None = None):
        """Per axis, each model's effective number of clusters G*
        (:func:`winrate.variance.method_choice.effective_sizes`, ``expected`` its hint)
        from the fit's influence (rows or per-question cell totals)."""
        board = fitted.board
        sums = self.cluster_sums(fitted.log, board, clustering,
                                 fitted.estimator.cr2_strata(board), None)
        return method_choice.effective_sizes(sums, board.codes, expected)

    def notes(self) -> list:
        return []


@dataclass(frozen=True)
class Scanned:
    """A scan analysed on its engine (:mod:`winrate.inference.scanned`): the key ``log``
    of pass 1, which the estimator fits, and the ``scan_design`` of the full log, whose
    engine reduces the rows to the cluster sums (pass 2)."""

    scan: Scan
    log: ComparisonLog
    scan_design: ScanDesign

    @property
    def design(self) -> ScanDesign:
        return self.scan_design

    def kept(self, used: ComparisonLog) -> Scan:
        """The scan itself: its key log is read again from the engine."""
        return self.scan

    def refuse(self, estimator, options: dict, method: str) -> None:
        """An error for what an engine's key table cannot give: the rows' order, and the
        refits of resampling methods."""
        if estimator.reads_row_order(options):
            raise WinrateInputError(
                f"model {estimator.name!r} with these options reads the order of the rows, "
                "which an engine's key table does not keep: analyse this log with engine "
                "'memory'")
        refuse_on_engine(estimator, method)

    def cluster_sums(self, log: ComparisonLog, board: Leaderboard,
                     clustering: tuple[str, ...], strata, progress) -> ClusterSums:
        return self.scan_design.cluster_sums(log, board, clustering, strata, progress)

    def effective_sizes(self, fitted: Fitted, clustering: tuple[str, ...],
                        expected: str | None = None) -> None:
        """Not read on an engine, whose rows stay there: ``auto`` reads the raw cluster
        counts."""
        return None

    def notes(self) -> list:
        return [self.scan_design.note()]


Source = InMemory | Scanned


def source_of(log, model: str | None, board: Leaderboard | None,
              variance: Variance | None = None) -> Source:
    """The :class:`Source` of what was passed as the log: a log, DataFrame or path read in
    memory, a scan in memory mode read into memory, or a scan on an engine (what
    ``variance`` asks that the engine cannot run refused before it reads the source)."""
    if not isinstance(log, Scan):
        return InMemory(as_log(log))
    if log.mode == "memory":
        return InMemory(log.to_log())
    return Scanned(log, *scanned_log(log, model, board, variance))


# ------------------------------------------------------------------------- the fit


@dataclass(frozen=True, eq=False)
class Fitted:
    """The fit of a log: the ``board``, the rows of the log the estimator used (``log``),
    the estimator, and the notes the fit gave."""

    board: Leaderboard
    log: ComparisonLog
    notes: Notes = field(default_factory=Notes)

    @property
    def estimator(self):
        return estimators.of(self.board)


def fit(source: Source, model: str | None, board: Leaderboard | None,
        options: dict) -> Fitted:
    """``board`` (checked against the model and options of this call) or a new fit, and
    the rows the estimator uses (:meth:`winrate.estimators.base.Estimator.rows`: a score
    against a baseline leaves out the rows without it)."""
    with notes.gathered() as found:
        if board is None:
            estimator = estimators.get(model or estimators.DEFAULT_ESTIMATOR)
            board, log = estimators.fit_settled(estimator, source.log,
                                                estimators.settle(estimator, options))
        else:
            log = _reused(source.log, model, board, options)
    return Fitted(board, log, found)


def _reused(log: ComparisonLog, model: str | None, board: Leaderboard, options: dict):
    """The rows of ``log`` a reused fit uses, after checking the call's model and options
    against it (an error naming both when they differ)."""
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
    return estimators.used_rows(estimator, log, board.options)


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


# ------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """What the variance step computes: the ``clustering`` axes, the variance ``method``
    that runs (``sandwich``, ``jackknife`` or ``bootstrap``), its ``correction`` and
    ``reference``, the call's ``variance`` and ``monte_carlo`` options as given, what
    ``auto`` chose and why (``auto_reason``, empty when the method was named), and the
    notes of the choice (the default clustering's)."""

    clustering: tuple[str, ...]
    method: str
    correction: str
    reference: str
    variance: Variance
    monte_carlo: MonteCarlo
    auto_reason: str = ""
    notes: Notes = field(default_factory=Notes)
    #: per-model t df that ``auto`` took from the effective clusters (None: the method's own)
    df: np.ndarray | None = None

    @property
    def seed(self):
        return self.monte_carlo.seed


def resolve(source: Source, fitted: Fitted, cluster, variance: Variance,
            monte_carlo: MonteCarlo) -> Plan:
    """The :class:`Plan` of this call on this design: the clustering (``cluster``, or the
    default one the log allows, :func:`default_clustering`), checked against the log;
    the method, correction and reference (``auto``'s choice where not given); an error for
    what the source or the estimator cannot do."""
    design = source.design
    found = Notes()
    if cluster is None:
        clustering, default_note = default_clustering(design)
        found = Notes([default_note] if default_note else [])
    else:
        clustering = parse_clustering(cluster)
    _check_clustering(design, clustering)
    method, correction, reference, reason, df = _chosen(source, fitted, clustering,
                                                        variance)
    require_rows(fitted.board.influence, method)
    source.refuse(fitted.estimator, fitted.board.options, method)
    if correction == "cr2":
        fitted.estimator.require("cr2", "use correction 'cr1'")
    return Plan(clustering, method, correction, reference, variance, monte_carlo, reason,
                found, df)


def _chosen(source: Source, fitted: Fitted, clustering: tuple[str, ...],
            variance: Variance):
    """``(method, correction, reference, reason, df)``: the requested ones, with ``auto``'s
    choice (:func:`winrate.variance.method_choice.choose`) where the call left them open;
    ``reason`` says what auto chose and why, and which of its choices the call overrode;
    ``df`` auto's per-model reference df from the effective clusters (None: the method's
    own), kept only when its method, correction and reference all ran."""
    method, correction, reference = variance.method, variance.correction, variance.reference
    reason, df = "", None
    if method == "auto":
        board = fitted.board
        sizes = [source.design.axes[name].n_clusters for name in clustering]
        estimator = estimators.of(board)
        thin_rule, pair_size = (estimator.thin_design_rule(),
                                method_choice.thinnest_pair_size(board.counts))
        effective = source.effective_sizes(fitted, clustering, method_choice.certain_correction(
            clustering, sizes, thin_rule, pair_size))
        jackknife = effective is not None and clustering and method_choice.jackknife_affordable(
            sizes, estimator.refits_rows(board.options), fitted.log.n_rows)
        auto = method_choice.choose(clustering, sizes, thin_rule, pair_size, effective,
                                    jackknife=bool(jackknife))
        given = {"correction": (correction, auto.correction),
                 "reference": (reference, auto.reference)}
        unread = ("" if effective is not None or not clustering else
                  " (from the raw cluster counts: the effective clusters G* need the "
                  "influence in memory)")
        reason = auto.reason + unread + "".join(
            f"; {name} {mine} as requested (auto's choice: {theirs})"
            for name, (mine, theirs) in given.items() if mine is not None and mine != theirs)
        method = auto.method
        if correction in (None, auto.correction) and reference in (None, auto.reference):
            df = auto.df
        correction, reference = correction or auto.correction, reference or auto.reference
    return method, correction or DEFAULT_CORRECTION, reference or "normal", reason, df


# ------------------------------------------------------------------------- clusterings


DEFAULT_CLUSTERING = ("prompt", "judge")


def default_clustering(log) -> tuple[tuple[str, ...], notes.Note | None]:
    """The axes of the default ``prompt+judge`` clustering that ``log`` can be clustered
    by, and a note saying which were used and why the others were not (None if all)."""
    problems = {name: clustering_problem(log, (name,)) for name in DEFAULT_CLUSTERING}
    used = tuple(name for name, problem in problems.items() if problem is None)
    if used == DEFAULT_CLUSTERING:
        return used, None
    return used, notes.default_clustering(used, [p for p in problems.values() if p])


def clustering_problem(log, clustering: tuple[str, ...]) -> str | None:
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


def _missing_axis(log, name: str) -> str:
    """Why a log without axis ``name`` cannot be clustered by it, and what to pass instead:
    the reader's column of its ids (formats fill prompt and judge from their own fields),
    or an axis the log has."""
    if name in DEFAULT_COLUMNS:
        source = (f"read the log with its column of {name} ids (read_comparisons' "
                  f"{name}_col, {DEFAULT_COLUMNS[name]!r} by default; a format whose files "
                  f"carry {name} ids fills it from them)")
    else:
        source = (f"read the log with a column of {name} ids as an axis (read_comparisons' "
                  "cluster_cols)")
    choices = "".join(f"{axis!r} or " for axis in sorted(log.axes))
    return (f"the log has no '{name}' axis, so nothing is known about which comparisons "
            f"share a {name}: {source}, or cluster by {choices}none")


def _check_clustering(log, clustering: tuple[str, ...]) -> None:
    problem = clustering_problem(log, clustering)
    if problem is not None:
        raise WinrateInputError(f"cannot cluster by {'+'.join(clustering)}: {problem}")
