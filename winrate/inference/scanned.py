"""The analysis of a scan on its engine: the fit from pass 1, the variance from pass 2.

:func:`winrate.io.scan.scan` leaves a log where it lies; an analysis of it on an engine fits
the estimator to the key log of pass 1 (every key with its frequency; the same fit as the
full log's) and reduces the rows to the clustered covariance's sums and each axis' design
diagnostics inside the engine, in SQL (pass 2, :class:`winrate.variance.buckets.EngineSums`):
Python sends the keys' influence and receives sums of the size of the covariance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from winrate import estimators, notes
from winrate.errors import WinrateInputError
from winrate.io.logs import ComparisonLog
from winrate.io.scan import KEY, Scan
from winrate.progress import bar
from winrate.variance.buckets import EngineSums, KeyFit
from winrate.variance.cluster_sums import ClusterSums, memory_sums


class ScanAxis:
    """A cluster axis of a scan as the driver knows it: its number of clusters, counted by
    the engine, and the few labels it has seen -- the least (code 0) and each term's
    largest clusters, coded as they come (:meth:`code`) -- never the whole list."""

    def __init__(self, n_clusters: int, least):
        self.n_clusters = n_clusters
        self._labels = [least]
        self._codes = {least: 0}

    @property
    def labels(self) -> np.ndarray:
        return np.array(self._labels, dtype=object)

    def code(self, labels) -> np.ndarray:
        """Codes of ``labels`` among those seen, new ones added."""
        for label in labels:
            if label not in self._codes:
                self._codes[label] = len(self._labels)
                self._labels.append(label)
        return np.array([self._codes[label] for label in labels], np.int64)


@dataclass
class ScanDesign:
    """What an analysis on an engine knows of the full log: each cluster axis' labels (the
    codes stay with the engine), the number of rows, and the scan pass 2 reads."""

    scan: Scan
    axes: dict[str, ScanAxis]
    n_rows: int
    n_comparisons: float
    key_axes: tuple[str, ...]
    n_keys: int
    #: terms of the multiway sum pass 2 reduced (None: no clustering, no second pass)
    n_terms: int | None = None

    def note(self):
        """Which engine ran and why (:func:`winrate.notes.engine_run`)."""
        return notes.engine_run(self.scan.mode, self.scan.reason, self.n_terms)

    def cluster_sums(self, log: ComparisonLog, board, clustering: tuple[str, ...], strata,
                     progress) -> ClusterSums:
        """The :class:`~winrate.variance.cluster_sums.ClusterSums` of ``board`` fitted to
        the key ``log``: the naive meat from the key log in memory (each key row stands for
        its comparisons), the clustered terms and designs reduced in the engine
        (:class:`~winrate.variance.buckets.EngineSums`, when first asked)."""
        naive = memory_sums(log, board, (), strata)
        if not clustering:
            return naive
        self.n_terms = 2 ** len(clustering) - 1

        def shown(terms):
            return bar(terms, total=len(terms), desc="pass 2", unit="part",
                       progress=progress)

        return EngineSums(_key_fit(log, board, strata, self.n_keys), self.scan, clustering,
                          [self.axes[name] for name in clustering], self.key_axes,
                          board.bread, naive, shown)


def _key_fit(log: ComparisonLog, board, strata, n_keys: int) -> KeyFit:
    """The engine's view of the fit: each scan key's row of the fit (-1 when the
    estimator left it out), read from the ``KEY`` axis, which the fit's rows carry."""
    if board.pair is None:
        raise WinrateInputError(f"model {board.estimator!r} holds no per-row influence; a "
                                "scan on an engine needs it")
    key = log.axes[KEY]
    key_rows = np.full(n_keys, -1, np.int64)
    key_rows[key.labels[key.codes]] = np.arange(log.n_rows)
    stratum_total = None
    if strata is not None:
        stratum_total = np.bincount(strata, weights=log.weight)
    return KeyFit(board.influence, board.pair, board.centered, log.weight, log.model_a,
                  log.model_b, board.counts.sum(axis=1), len(board.pairs), key_rows,
                  strata, stratum_total)


def refuse_on_engine(estimator, method: str, correction: str | None = None) -> None:
    """An error for what an engine cannot run: a resampling method (it refits the estimator
    on resampled clusters; the engine returns sums, not rows) and CR2 for an estimator
    without CR2 strata. Asked before pass 1 reads the source, and again once ``auto`` has
    chosen."""
    if method not in ("auto", "sandwich"):
        raise WinrateInputError(
            f"the {method} refits the estimator on resampled clusters, which a scan analysed "
            "on its engine does not hold in memory: engines run method 'sandwich' (CR0, "
            "CR1, and CR2 where the model defines it); use method 'sandwich' (with "
            "correction 'cr2' and reference 't' for few clusters), or engine 'memory'")
    if correction == "cr2":
        estimator.require("cr2", "use correction 'cr1'")


def scanned_log(scan: Scan, model: str | None, board=None,
                variance=None) -> tuple[ComparisonLog, ScanDesign]:
    """The key log of pass 1 for the estimator (``model``, or that of a reused ``board``)
    and the :class:`ScanDesign` of the full log; what ``variance`` (a
    :class:`winrate.settings.Variance`) asks that an engine cannot run is refused first
    (:func:`refuse_on_engine`)."""
    estimator = estimators.of(board) if board is not None else estimators.get(
        model or estimators.DEFAULT_ESTIMATOR)
    if variance is not None:
        refuse_on_engine(estimator, variance.method, variance.correction)
    key_axes = tuple(estimator.fit_axes)
    missing = [name for name in key_axes if name not in scan.columns.axes]
    if missing:
        raise WinrateInputError(f"model {estimator.name!r} reads the {missing[0]} axis, "
                                "which the scanned log does not have")
    log, n_rows = scan.key_log(key_axes)
    axes = {name: ScanAxis(*scan.axis_size(name)) for name in scan.columns.axes}
    return log, ScanDesign(scan, axes, n_rows, log.n_comparisons, key_axes,
                           int(log.axes[KEY].labels.max()) + 1)
