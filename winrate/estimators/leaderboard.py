"""The seam every estimator fills: estimates plus their influence (:class:`Leaderboard`).

An estimator (:mod:`winrate.estimators`) returns a :class:`Leaderboard`, and everything
downstream -- variance, resampling, inference, diagnostics, reports -- reads only this
object and asks the estimator that made it (:func:`winrate.estimators.of`) for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from winrate.estimators.scale import PROBABILITY, Scale


@dataclass(frozen=True, eq=False)
class Leaderboard:
    """Estimates and influence of a comparison log: the seam every estimator fills.

    An estimator (:mod:`winrate.estimators`: the half-tie win rate, Bradley-Terry, ...)
    returns its estimates with their linearisation, and everything downstream (variance,
    resampling, inference, diagnostics, reports) reads only this object. The influence of
    all reported parameters is ``influence @ bread.T`` (``bread=None``: ``influence`` is
    the influence itself); :mod:`winrate.variance.sandwich` sandwiches it without building it.

    Attributes
    ----------
    models : names of the reported models (column order of every per-model array).
    scores : (K,) estimates of the reported models on ``scale``; NaN only for a model
        with no comparisons.
    psi : (L, L) pairwise win probabilities over the log's L models, NaN where the pair
        was never compared (data level, for every estimator).
    counts : (L, L) symmetric comparison counts ``n_ab``.
    weights : (L, L) opponent weights of the win rate (None for other estimators).
    influence : (n, q) CSR matrix: the influence (win rate) or the score rows ``g_r``;
        for a fit of a per-question score table, their sums per question
        (:class:`winrate.estimators.cells.CellTotals`), ``pair`` and ``centered`` None.
    pair : (n,) index of each row's unordered pair into ``pairs``.
    pairs : (P, 2) observed unordered pairs (low code, high code) of log model codes.
    centered : (n,) pair-centred scores ``s_r - psi_ab`` of the lower-coded model.
    bread : (K + C, q) map from score rows to the influence of (scores, coef); None for the
        win rate without a baseline.
    estimator : the name of the estimator that made it (:data:`winrate.estimators.REGISTRY`).
    scale : the :class:`winrate.estimators.base.Scale` of ``scores`` (the estimator's).
    log_models : the log's L model names; ``contestants`` (K,) their codes that are
        reported (a baseline is not a contestant).
    canonical_map, reported_map, report_offset : resampling works in a canonical
        parameterisation that does not depend on reporting choices (anchor, baseline): a
        refit's raw per-log-model estimates ``x`` (L,) become ``c = canonical_map @ x``
        (None: ``x`` of the contestants) and reported scores
        ``reported_map @ c + report_offset`` (None: ``c``). Covariances are combined and
        PSD-repaired in ``c`` and then mapped, so contrasts do not depend on the anchor.
    coef_names, coef : further parameters (style covariates, Davidson's tie parameter).
    options : the estimator's options as fitted (:meth:`winrate.estimators.base.Estimator.settle`).
    fitted : further fitted state of the estimator (Bradley-Terry's ``theta`` in natural
        units, the covariates' ``standardisation``).
    """

    models: np.ndarray
    scores: np.ndarray
    psi: np.ndarray
    counts: np.ndarray
    weights: np.ndarray | None
    influence: sp.csr_array
    pair: np.ndarray
    pairs: np.ndarray
    centered: np.ndarray
    bread: np.ndarray | None = None
    estimator: str = "winrate"
    scale: Scale = PROBABILITY
    log_models: np.ndarray | None = None
    contestants: np.ndarray | None = None
    canonical_map: np.ndarray | None = None
    reported_map: np.ndarray | None = None
    report_offset: float = 0.0
    coef_names: tuple[str, ...] = ()
    coef: np.ndarray = field(default_factory=lambda: np.empty(0))
    options: dict = field(default_factory=dict)
    fitted: dict = field(default_factory=dict)

    @property
    def all_models(self) -> np.ndarray:
        """The log's model names (contestants and any baseline)."""
        return self.models if self.log_models is None else self.log_models

    @property
    def codes(self) -> np.ndarray:
        """Log model codes of the reported models."""
        return np.arange(len(self.models)) if self.contestants is None else self.contestants

    @property
    def comparisons_per_model(self) -> np.ndarray:
        """n_a = sum_b n_ab (frequency-weighted), per reported model."""
        return self.counts.sum(axis=1)[self.codes]

    @property
    def unobserved_pairs(self) -> list[tuple[str, str]]:
        """Pairs the design needs that were never compared, by name: every pair of
        contestants, or with a baseline each contestant against the baseline."""
        names = self.all_models
        baseline = self.options.get("baseline")
        if baseline is not None:
            base = int(np.flatnonzero(names == baseline)[0])
            return [(str(names[c]), baseline) for c in self.codes if self.counts[c, base] == 0]
        sub = self.counts[np.ix_(self.codes, self.codes)]
        first, second = np.nonzero(np.triu(sub == 0, k=1))  # row-major, as argwhere
        names = np.array([str(m) for m in self.models], dtype=object)
        return list(zip(names[first].tolist(), names[second].tolist(), strict=True))

    def to_frame(self) -> pd.DataFrame:
        """Scores and comparison counts, indexed by model, best first. Standard errors need
        a clustering: :func:`winrate.analyze` (``board=`` reuses this fit)."""
        frame = pd.DataFrame({"score": self.scores, "comparisons": self.comparisons_per_model},
                             index=pd.Index(self.models.astype(str), name="model"))
        return frame.sort_values("score", ascending=False, kind="stable")

    def __repr__(self) -> str:
        return (f"Leaderboard(estimator={self.estimator!r}, scale={self.scale.name!r}, "
                f"models={len(self.models)}, comparisons={self.counts.sum() / 2:g})")

    def canonical(self, raw: np.ndarray) -> np.ndarray:
        """Canonical parameters of (B, L) raw per-log-model replicate estimates."""
        if self.canonical_map is None:
            return raw if self.contestants is None else raw[:, self.contestants]
        return raw @ self.canonical_map.T

    def reported(self, canonical: np.ndarray) -> np.ndarray:
        """Reported scores of (B, C) canonical parameters."""
        if self.reported_map is None:
            return canonical
        return canonical @ self.reported_map.T + self.report_offset

    def reported_cov(self, cov: np.ndarray) -> np.ndarray:
        """Covariance of the reported scores from that of the canonical parameters."""
        return cov if self.reported_map is None else self.reported_map @ cov @ self.reported_map.T

    @property
    def canonical_scores(self) -> np.ndarray:
        """The full-sample estimate in the canonical parameterisation."""
        if self.canonical_map is None:
            return self.scores
        return self.canonical_map @ self.fitted["theta"]
