"""Input checks shared by the eval-statistics modules.

Every check raises :class:`~winrate.errors.WinrateInputError` naming the offending input
(a DataFrame column or a function argument) and its first offending rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from winrate import notes
from winrate.constants import FEW_CLUSTERS, SCALAR_CORRECTIONS, SCALES
from winrate.errors import WinrateInputError, first_rows, one_of


def as_scores(values, name: str = "scores", index=None, min_size: int = 2) -> np.ndarray:
    """A finite 1-D float array of at least ``min_size`` scores, else a WinrateInputError."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise WinrateInputError(f"{name!r} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise WinrateInputError(f"{name!r} must be 1-D, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise WinrateInputError(
            f"{name!r} has missing or infinite values at rows [{first_rows(bad, index)}]; "
            "drop those rows (an unanswered question usually scores 0) and retry"
        )
    if arr.size < min_size:
        raise WinrateInputError(f"{name!r} needs at least {min_size} scores, got {arr.size}")
    return arr


def as_score_matrix(values, name: str = "scores") -> np.ndarray:
    """A finite (n, K) float array: n questions, K answers each (1-D input means K = 1)."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise WinrateInputError(
            f"{name!r} must be a numeric (n questions, K answers) matrix with the same K on "
            f"every row: {exc}"
        ) from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise WinrateInputError(f"{name!r} must be (n questions, K answers), got {arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise WinrateInputError(
            f"{name!r} has missing or infinite answers in rows [{first_rows(bad)}]; every question "
            "needs the same number K of answers"
        )
    if arr.shape[0] < 2:
        raise WinrateInputError(f"{name!r} needs at least 2 questions, got {arr.shape[0]}")
    return arr


def same_length(n: int, other, name: str, reference: str = "scores") -> None:
    if len(other) != n:
        raise WinrateInputError(
            f"{name!r} has {len(other)} entries but {reference!r} has {n}; they must align"
        )


def as_cluster_list(cluster, n: int) -> tuple[list[np.ndarray], list[str]]:
    """Normalise ``None``, one label array, a list of arrays or a ``{name: array}`` dict."""
    if cluster is None:
        return [], []
    if isinstance(cluster, dict):
        names, arrays = list(cluster), list(cluster.values())
    elif isinstance(cluster, (list, tuple)) and len(cluster) and np.ndim(cluster[0]) == 1:
        arrays = list(cluster)
        names = [f"cluster[{i}]" for i in range(len(arrays))]
    else:
        arrays, names = [cluster], ["cluster"]
    out = []
    for arr, name in zip(arrays, names, strict=True):
        labels = np.asarray(arr)
        if labels.ndim != 1:
            raise WinrateInputError(
                f"{name!r} must be 1-D cluster labels, got shape {labels.shape}; pass several "
                "cluster columns as a list or a {name: labels} dict"
            )
        same_length(n, labels, name)
        missing = pd.isna(labels)
        if missing.any():
            raise WinrateInputError(
                f"{name!r} has missing cluster labels at rows [{first_rows(missing)}]"
            )
        out.append(labels)
    return out, names


def check_cluster_counts(names, counts, context: str = "") -> None:
    """Error for a single cluster, a WinrateWarning for few clusters."""
    where = f" ({context})" if context else ""
    for name, g in zip(names, counts, strict=True):
        if g < 2:
            raise WinrateInputError(
                f"cluster column {name!r} has a single cluster{where}: a clustered SE needs "
                "variation between at least 2 clusters; drop this clustering or add data"
            )
        if g < FEW_CLUSTERS:
            notes.emit(notes.eval_few_clusters(name, g, context, FEW_CLUSTERS))


def check_correction(correction: str) -> str:
    """``correction`` if it is one of :data:`winrate.constants.SCALAR_CORRECTIONS` (per-question
    scores have no strata for CR2), else a WinrateInputError."""
    if correction not in SCALAR_CORRECTIONS:
        raise WinrateInputError(f"correction must be one of {one_of(SCALAR_CORRECTIONS)}, got "
                                f"{correction!r}")
    return correction


#: Score scales: ``binary`` (0/1), ``unit`` (proportions in [0, 1]), ``other`` (any real
#: number, reported on its own scale); ``auto`` infers binary or unit.


def _scale_hint(values: np.ndarray) -> str:
    """The range of an out-of-scale score column, what it probably is, what to do."""
    low, high = float(values.min()), float(values.max())
    if low >= 0 and high <= 1:
        return (f"values range from {low:g} to {high:g}: fix those rows, or declare "
                "scale='unit' for scores in [0, 1]")
    if low >= -1 and high <= 1:
        looks = " (a -1..+1 scale?): map it to [0, 1] with (s + 1) / 2,"
    elif low >= 0 and high <= 100:
        looks = " (a 0-100 scale?): divide it by 100,"
    else:
        looks = ":"
    return (f"values range from {low:g} to {high:g}{looks} fix those rows, or declare "
            "scale='other' to report means on the column's own scale")


def resolve_scale(values: np.ndarray, scale: str, name: str, index=None) -> str:
    """The scale of a score column, checked: ``binary`` or ``unit`` (``auto`` infers which
    from the values) or ``other``. Scores outside the declared scale are a
    WinrateInputError naming the column and the first offending rows."""
    if scale not in SCALES:
        raise WinrateInputError(f"scale must be one of {one_of(SCALES)}, got {scale!r}")
    if scale == "other":
        return scale
    if scale == "binary":
        bad = (values != 0) & (values != 1)
        problem = "values other than 0 and 1, declared binary"
    else:
        bad = (values < 0) | (values > 1)
        problem = "values outside [0, 1]"
    if bad.any():
        raise WinrateInputError(
            f"score column {name!r} has {problem} in {int(bad.sum())} row(s) "
            f"[{first_rows(bad, index)}]; {_scale_hint(values)}"
        )
    if scale == "auto":
        return "binary" if bool(np.all((values == 0) | (values == 1))) else "unit"
    return scale
