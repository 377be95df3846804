"""One drawn log of a held-out generator with its truths."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from heldout.truth import bt_pseudo_truth, elo_ratings, observed_pairs, winrate_truth

#: Outcome labels by code: 0 the second model won, 1 tie, 2 the first model won.
LABELS = np.array(["b", "tie", "a"], dtype=object)
#: The truths a sample carries, by estimator key of the study.
ESTIMATORS = ("winrate", "bt", "bt_style")


@dataclass(frozen=True)
class Sample:
    """``frame``: the log (prompt_id, judge_id, model_a, model_b, outcome and any feature
    column); ``truth``: estimator key -> true value per model name (NaN where the estimator
    reports nothing, e.g. the baseline); ``rare``: the rare models; ``baseline``: the
    baseline's name or None; ``covariates``: feature columns for ``bt_style``."""

    frame: pd.DataFrame
    truth: dict[str, pd.Series]
    rare: tuple[str, ...] = ()
    baseline: str | None = None
    covariates: tuple[str, ...] = field(default_factory=tuple)


def model_names(n_total: int) -> np.ndarray:
    return np.array([f"m{i:02d}" for i in range(n_total)], dtype=object)


def log_frame(rows: dict[str, np.ndarray], outcome: np.ndarray, names: np.ndarray,
              features: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The comparison log of drawn ``rows`` (codes) and outcome codes (:data:`LABELS`)."""
    frame = pd.DataFrame({
        "prompt_id": _labels("p", rows["prompt"]), "judge_id": _labels("j", rows["judge"]),
        "model_a": names[rows["first"]], "model_b": names[rows["second"]],
        "outcome": LABELS[outcome],
    })
    for name, values in (features or {}).items():
        frame[name] = values
    return frame


def _labels(prefix: str, codes: np.ndarray) -> np.ndarray:
    names = np.array([f"{prefix}{i}" for i in range(int(codes.max()) + 1)], dtype=object)
    return names[codes]


def truths(psi: np.ndarray, rows: dict[str, np.ndarray], names: np.ndarray,
           baseline: int | None = None, style=None) -> dict[str, pd.Series]:
    """Win-rate and Bradley-Terry truths (:mod:`heldout.truth`) on the drawn design;
    ``style(low, high) -> (target, x, weights)`` (:func:`heldout.truth.bt_pseudo_truth`'s
    arguments for those pairs) adds the covariate-adjusted ratings."""
    n_total = psi.shape[0]
    low, high, n = observed_pairs(rows["first"], rows["second"], n_total)
    out = {"winrate": winrate_truth(psi, low, high, baseline)}
    theta, _ = bt_pseudo_truth(low, high, n, psi[low, high], n_total=n_total)
    out["bt"] = elo_ratings(theta, baseline)
    if style is not None:
        theta, _ = bt_pseudo_truth(low, high, n, *style(low, high), n_total=n_total)
        out["bt_style"] = elo_ratings(theta, baseline)
    return {key: pd.Series(value, index=names) for key, value in out.items()}

