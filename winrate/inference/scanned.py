"""The analysis of a scan on its engine: the fit from pass 1, the variance from pass 2.

:func:`winrate.io.scan.scan` leaves a log where it lies; an analysis of it on an engine fits
the estimator to the key log of pass 1 (every key with its frequency; the same fit as the
full log's) and reads the clustered covariance and each axis' design diagnostics from the
buckets of pass 2 (:mod:`winrate.variance.buckets`), bounded in memory by a bucket. The
buckets hold whole clusters of the clustering axis with the most clusters (so every term
of the multiway sum containing it is summed bucket by bucket, and only the others keep
per-cluster totals), and their number is chosen from pass 1's cluster sizes so that a
bucket's rows fit the scan's memory budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from winrate import estimators
from winrate.errors import WinrateInputError
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.io.scan import KEY, Scan
from winrate.progress import bar
from winrate.variance.buckets import KeyFit, bucket_covariance

#: Bytes a bucket's row takes in pass 2 (its codes, its influence row and the kernels'
#: buffers), so that ``budget / BUCKET_ROW_BYTES`` rows make one bucket.
BUCKET_ROW_BYTES = 400


@dataclass
class ScanDesign:
    """What an analysis on an engine knows of the full log: each cluster axis' labels (the
    codes stay with the engine), the number of rows, and the scan to read buckets from."""

    scan: Scan
    axes: dict[str, ClusterAxis]
    n_rows: int
    n_comparisons: float
    key_axes: tuple[str, ...]

    def covariance(self, log: ComparisonLog, board, clustering: tuple[str, ...],
                   correction: str, strata, progress):
        """(:class:`winrate.variance.sandwich.MultiwayCovariance`, each axis' (m,
        single-cluster pairs, ICC)) of ``board`` fitted to the key ``log``."""
        sizes = [self.axes[name].n_clusters for name in clustering]
        bucket_dim = int(np.argmax(sizes))
        bucket_axis = clustering[bucket_dim]
        assigned, n_buckets = self._buckets(bucket_axis)
        fit = _key_fit(log, board, strata)

        def sweep():
            return self.scan.bucket_rows(clustering, bucket_axis, assigned, n_buckets,
                                         self.key_axes)

        def shown(parts):
            return bar(parts, total=n_buckets, desc="buckets", unit="bucket",
                       progress=progress)

        return bucket_covariance(fit, sweep, sizes, bucket_dim, correction, board.bread,
                                 shown)

    def _buckets(self, axis: str) -> tuple[np.ndarray, int]:
        """Each cluster's bucket and the number of buckets: the scan's forced number, or
        the fewest whose rows (pass 1's cluster sizes, in order) fit the budget."""
        _, rows = self.scan.dictionary(axis)
        per_bucket = max(self.scan.budget // BUCKET_ROW_BYTES, 1)
        n_buckets = self.scan.buckets or max(1, -(-int(rows.sum()) // per_bucket))
        n_buckets = min(n_buckets, len(rows))
        edges = np.cumsum(rows) - rows  # rows before each cluster
        return np.minimum(edges * n_buckets // max(int(rows.sum()), 1),
                          n_buckets - 1).astype(np.int64), n_buckets


def _key_fit(log: ComparisonLog, board, strata) -> KeyFit:
    """The buckets' view of the fit: each scan key's row of the fit (-1 when the
    estimator left it out), read from the ``KEY`` axis, which the fit's rows carry."""
    if board.pair is None:
        raise WinrateInputError(f"model {board.estimator!r} holds no per-row influence; a "
                                "scan on an engine needs it")
    key = log.axes[KEY]
    key_rows = np.full(int(key.labels.max()) + 1, -1, np.int64)
    key_rows[key.labels[key.codes]] = np.arange(log.n_rows)
    stratum_total = None
    if strata is not None:
        stratum_total = np.bincount(strata, weights=log.weight)
    return KeyFit(board.influence, board.pair, board.centered, log.weight, log.model_a,
                  log.model_b, board.counts.sum(axis=1), len(board.pairs), key_rows,
                  strata, stratum_total)


def scanned_log(scan: Scan, model: str | None, board=None) -> tuple[ComparisonLog, ScanDesign]:
    """The key log of pass 1 for the estimator (``model``, or that of a reused ``board``)
    and the :class:`ScanDesign` of the full log."""
    estimator = estimators.of(board) if board is not None else estimators.get(
        model or estimators.DEFAULT_ESTIMATOR)
    key_axes = tuple(estimator.fit_axes)
    missing = [name for name in key_axes if name not in scan.columns.axes]
    if missing:
        raise WinrateInputError(f"model {estimator.name!r} reads the {missing[0]} axis, "
                                "which the scanned log does not have")
    log, n_rows = scan.key_log(key_axes)
    axes = {name: ClusterAxis(None, scan.dictionary(name)[0]) for name in scan.columns.axes}
    return log, ScanDesign(scan, axes, n_rows, log.n_comparisons, key_axes)
