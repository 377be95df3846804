"""A log split by the values of one of its clustering axes: one log per category.

:func:`split_by` gives, for each label of an axis (a comparison log's ``language`` or
``category_hard_prompt``, a score table's ``task`` or ``subject``), the log of the rows
(comparisons, or questions) with that label, in label order. Models and clusters that a
category does not use are dropped from its log, so that each category's log is what
reading the category's rows alone would give.
"""

from __future__ import annotations

import numpy as np

from winrate.errors import WinrateInputError
from winrate.io.logs import ClusterAxis, ComparisonLog, ScoreTable, factorize_groups
from winrate.io.scores import score_table

__all__ = ["split_by", "take_rows"]


def split_by(log: ComparisonLog | ScoreTable, column: str) -> dict[str, ComparisonLog |
                                                                     ScoreTable | None]:
    """``{label: the log of that category}`` for each label of axis ``column``, sorted by
    label; None for a category whose comparisons involve fewer than two models (or, for a
    score table, no question answered by two models)."""
    if column not in log.axes:
        raise WinrateInputError(f"no column {column!r} to split by: the log's columns of "
                                f"categories are {sorted(log.axes)}")
    axis = log.axes[column]
    order = np.argsort(axis.labels.astype(str), kind="stable")
    out = {}
    for code in order:
        mask = axis.codes == code
        label = str(axis.labels[code])
        if isinstance(log, ScoreTable):
            out[label] = _questions(log, mask)
        else:
            out[label] = take_rows(log, mask)
    return out


def take_rows(log: ComparisonLog, keep: np.ndarray) -> ComparisonLog | None:
    """The comparisons ``keep`` of ``log``, models and cluster labels re-coded to those
    used; None when fewer than two models are left."""
    used = np.zeros(log.n_models, bool)
    used[log.model_a[keep]] = True
    used[log.model_b[keep]] = True
    if used.sum() < 2:
        return None
    recode = (np.cumsum(used) - 1).astype(np.int32)
    axes = {}
    for name, axis in log.axes.items():
        codes, present = factorize_groups(axis.codes[keep])
        axes[name] = ClusterAxis(codes, axis.labels[present])
    return ComparisonLog(
        recode[log.model_a[keep]], recode[log.model_b[keep]], log.score[keep],
        log.models[used], axes, None if log.frequency is None else log.frequency[keep],
        {name: values[keep] for name, values in log.features.items()})


def _questions(table: ScoreTable, keep: np.ndarray) -> ScoreTable | None:
    """The questions ``keep`` of a score table (:func:`winrate.io.scores.score_table`
    drops unanswered models); None when no question was answered by two models."""
    scores = table.scores[keep]
    if not ((~np.isnan(scores)).sum(axis=1) >= 2).any():
        return None
    questions = table.axes["prompt"].labels[table.axes["prompt"].codes[keep]]
    axes = {name: (axis.codes[keep], axis.labels) for name, axis in table.axes.items()
            if name != "prompt"}
    return score_table(scores, table.models, questions, axes)
