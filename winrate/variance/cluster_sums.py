"""What a clustered covariance needs of a fit: its cluster sums (seam, first cut)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from winrate.variance import diagnostics
from winrate.variance.sandwich import MultiwayCovariance, multiway_cluster_cov, naive_cov


class ClusterSums(ABC):
    """The sums of a fit's influence that the meat and the design diagnostics need."""

    @abstractmethod
    def naive(self, correction: str) -> np.ndarray:
        """(q, q) naive covariance of all parameters, bread applied."""

    @abstractmethod
    def clustered(self, correction: str) -> tuple[MultiwayCovariance | None, list[tuple]]:
        """The multiway covariance and each axis' (m, single-cluster pairs, ICC)."""


@dataclass(frozen=True)
class Clustered:
    """:func:`clustered`'s result (docs/interfaces)."""

    naive: np.ndarray
    covariance: MultiwayCovariance | None
    designs: tuple[tuple, ...]

    @property
    def psd_repaired(self) -> bool:
        return self.covariance is not None and self.covariance.psd_repaired


class _MemorySums(ClusterSums):
    def __init__(self, log, board, clustering, strata):
        self.log, self.board, self.clustering, self.strata = log, board, clustering, strata

    def naive(self, correction):
        return naive_cov(self.board.influence, correction, self.log.frequency,
                         bread=self.board.bread, strata=self.strata)

    def clustered(self, correction):
        if not self.clustering:
            return None, []
        groups = [self.log.axes[name].codes for name in self.clustering]
        cov = multiway_cluster_cov(self.board.influence, groups, correction,
                                   bread=self.board.bread,
                                   strata=self.strata if correction == "cr2" else None,
                                   frequency=self.log.frequency)
        return cov, [diagnostics.axis_design(self.log, self.board, codes) for codes in groups]


def memory_sums(log, board, clustering: tuple[str, ...], strata) -> ClusterSums:
    """The cluster sums of a fit in memory."""
    return _MemorySums(log, board, clustering, strata)


def clustered(sums: ClusterSums, correction: str) -> Clustered:
    """Naive and clustered covariance with the axes' designs."""
    covariance, designs = sums.clustered(correction)
    return Clustered(sums.naive(correction), covariance, tuple(designs))
