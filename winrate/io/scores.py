"""Per-question eval scores read as a comparison log that is never built.

A per-question eval (one score per model and question: correct or not, or a grade in
[0, 1]) is a pairwise comparison log in disguise: on each question every two models that
answered it are compared, the higher score winning and equal scores tying. That log has
``Q x K(K - 1) / 2`` rows (240 million for 200 models on MMLU-Pro's 12,032 questions);
:class:`winrate.io.logs.ScoreTable` keeps the ``Q x K`` table instead, and the win rate's
fit, covariance and diagnostics are computed from it
(:mod:`winrate.estimators.win_rate_scores`), equal to those of the pairwise log.

:func:`scores_log` reads a long table (a DataFrame or a CSV / JSONL / Parquet file, one row
per answer) and :func:`score_table` builds a table from a questions x models matrix.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from winrate import notes
from winrate.constants import SCORE_COLUMNS
from winrate.errors import WinrateInputError, first_rows
from winrate.io.logs import (
    ClusterAxis,
    ScoreTable,
    check_rows,
    code_column,
    columns_not_found,
    file_positions,
    parquet_codes,
    read_table,
    release_arrow_memory,
)


def score_table(scores, models, questions, axes: dict | None = None) -> ScoreTable:
    """A :class:`ScoreTable` from a (Q, K) matrix of scores in [0, 1] (NaN: no answer).

    ``models`` name the columns and ``questions`` the rows (the ``prompt`` axis);
    ``axes`` maps further axis names to ``(codes, labels)`` per question (subject, source,
    a constant judge). Models are put in name order, as :func:`winrate.read_comparisons`
    codes them. A question with fewer than two answers holds no comparison and is left out,
    and so is a model left without one, with a note (``unpaired-questions``); labels no
    question uses are dropped, the others keep their order.
    """
    matrix = np.array(scores, dtype=np.float64)
    models = np.asarray(models, dtype=object)
    questions = np.asarray(questions, dtype=object)
    if matrix.ndim != 2 or matrix.shape != (questions.size, models.size):
        raise WinrateInputError(f"scores have shape {matrix.shape}, expected (questions, "
                                f"models) = ({questions.size}, {models.size})")
    outside = ~np.isnan(matrix) & ~((matrix >= 0) & (matrix <= 1))
    if outside.any():
        q, m = np.argwhere(outside)[0]
        raise WinrateInputError(f"{int(outside.sum())} score(s) outside [0, 1], first: "
                                f"{matrix[q, m]!r} of model {models[m]!r} on question "
                                f"{questions[q]!r}")
    return _paired_table(matrix, models, questions, axes or {})


def _paired_table(matrix: np.ndarray, models: np.ndarray, questions: np.ndarray,
                  axes: dict) -> ScoreTable:
    """:func:`score_table` of a checked float matrix, which it may keep as its scores (no
    copy when no question or model is left out and the models are in name order)."""
    answered = ~np.isnan(matrix)
    keep_q = np.count_nonzero(answered, axis=1) >= 2
    keep_m = answered[keep_q].any(axis=0) if not keep_q.all() else answered.any(axis=0)
    if keep_m.sum() < 2:
        raise WinrateInputError("no question was answered by two models: a per-question "
                                "eval needs models that answered the same questions")
    dropped = models[~keep_m]
    if (~keep_q).any() or dropped.size:
        notes.emit(notes.unpaired_questions(int((~keep_q).sum()), [str(m) for m in dropped]))
    order = np.flatnonzero(keep_m)[np.argsort(models[keep_m].astype(str), kind="stable")]
    coded = {"prompt": ClusterAxis(np.arange(int(keep_q.sum())), questions[keep_q])}
    for name, (codes, labels) in axes.items():
        codes = np.asarray(codes)[keep_q]
        used = np.bincount(codes, minlength=len(labels)) > 0
        coded[name] = ClusterAxis((np.cumsum(used) - 1)[codes], np.asarray(labels)[used])
    whole = keep_q.all() and np.array_equal(order, np.arange(models.size))
    return ScoreTable(matrix if whole else matrix[np.ix_(keep_q, order)], models[order], coded)


def scores_log(source, *, question_col: str = SCORE_COLUMNS["question"],
               model_col: str = SCORE_COLUMNS["model"], score_col: str = SCORE_COLUMNS["score"],
               cluster_cols: Sequence[str] = ()) -> ScoreTable:
    """Read per-question scores, one row per (question, model) answer, as the comparison log
    of every two models on every question (:class:`ScoreTable`; module doc).

    ``source``: a DataFrame or a CSV / JSONL / Parquet file (ids and names read as text,
    :func:`winrate.read_table`; a Parquet file with text ids is coded from Arrow's
    dictionaries, :func:`winrate.io.logs.parquet_codes`, without a pandas frame). Scores
    are numbers in [0, 1] (0/1 correctness or grades); a model that did not answer a
    question has no row for it. ``cluster_cols`` are further
    clustering axes, constant within a question (subject, source). A missing or
    out-of-range score, a missing id, two rows for one (question, model) or a cluster
    label that varies within a question is an error naming the rows.
    ``winrate.analyze(scores_log(...), cluster="prompt")`` then gives the half-tie win rate
    leaderboard clustered by question.
    """
    cluster_cols = tuple(cluster_cols)
    named = (question_col, model_col, score_col, *cluster_cols)
    if len(set(named)) != len(named):
        raise WinrateInputError(f"question, model, score and cluster columns must all differ, "
                                f"got {list(named)}")
    if not isinstance(source, pd.DataFrame):
        read = parquet_codes(source, (question_col, model_col, *cluster_cols), (score_col,))
        if read is not None:
            table = _coded_table(*read, question_col, model_col, score_col, cluster_cols)
            del read  # the file's Arrow buffers, then handed back
            release_arrow_memory()
            if table is not None:
                return table
    if isinstance(source, pd.DataFrame):
        frame = source
    else:
        text = (question_col, model_col, *cluster_cols)
        frame = read_table(source, text_cols=text, coded_cols=text, scalar_cols=(score_col,))
        frame.index = file_positions(source, len(frame))
    missing = [c for c in named if c not in frame.columns]
    if missing:
        raise columns_not_found(missing, list(frame.columns), "the score table")
    if frame.empty:
        raise WinrateInputError("the score table has no rows")
    question, question_labels = _codes(frame, question_col)
    model, model_labels = _codes(frame, model_col)
    score = pd.to_numeric(frame[score_col], errors="coerce").to_numpy(float)
    check_rows(~((score >= 0) & (score <= 1)), score_col,
                "score missing, not a number or outside [0, 1]", frame.index)
    by_name = np.argsort(model_labels.astype(str), kind="stable")
    model_labels = model_labels[by_name]  # columns in name order, as the table keeps them
    rank = np.empty(by_name.size, np.int64)
    rank[by_name] = np.arange(by_name.size)
    key = question * len(model_labels) + rank[model]
    matrix = np.full((len(question_labels), len(model_labels)), np.nan)
    matrix.ravel()[key] = score  # scores are numbers: a repeated key leaves fewer of them
    if np.count_nonzero(~np.isnan(matrix)) < key.size:
        check_rows(np.bincount(key)[key] > 1, model_col, f"several scores for one "
                   f"({question_col}, {model_col}); average a model's answers to a question "
                   "first", frame.index)
    axes = {col: _question_axis(col, *_codes(frame, col), question, question_labels)
            for col in cluster_cols}
    return _paired_table(matrix, model_labels, question_labels, axes)


def _coded_table(labels: dict, batches: list, question_col: str, model_col: str,
                 score_col: str, cluster_cols: tuple) -> ScoreTable | None:
    """:func:`scores_log`'s table from a file's labels and its coded columns and scores by
    record batch (:func:`winrate.io.logs.parquet_codes`), scattered into the matrix in
    one pass over the rows (:func:`_scatter_scores`); labels no row uses are dropped, as
    :func:`_codes` drops them. None when a score is outside [0, 1] or a (question, model)
    has two: the caller reads the rows again to name them."""
    question_labels, model_labels = labels[question_col], labels[model_col]
    by_name = np.argsort(model_labels.astype(str), kind="stable")
    rank = np.empty(by_name.size, np.int64)
    rank[by_name] = np.arange(by_name.size)
    matrix = np.full((len(question_labels), len(model_labels)), np.nan)
    per_question = np.zeros(len(question_labels), np.int64)
    per_model = np.zeros(len(model_labels), np.int64)
    for batch in batches:
        if not _scatter_kernel()(batch[question_col], batch[model_col], rank, batch[score_col],
                               matrix, per_question, per_model):
            return None
    used, used_models = per_question > 0, per_model[by_name] > 0
    if not (used.all() and used_models.all()):
        matrix = matrix[np.ix_(used, used_models)]
    question = np.concatenate([batch[question_col] for batch in batches]) if cluster_cols else None
    axes = {}
    for col in cluster_cols:
        codes = np.concatenate([batch[col] for batch in batches])
        per_code, col_labels = _question_axis(col, codes, labels[col], question, question_labels)
        axes[col] = (per_code[used], col_labels)
    return _paired_table(matrix, model_labels[by_name][used_models], question_labels[used],
                         axes)


@functools.cache
def _scatter_kernel():
    """:func:`_scatter_scores` compiled by numba (or loaded from its cache) at first use:
    importing numba here put 0.1 s before a comparison log's first byte is read, on the
    command line's critical path (its preparing thread imports numba meanwhile)."""
    import numba

    return numba.njit(cache=True, nogil=True)(_scatter_scores)


def _scatter_scores(question, model, rank, score, matrix, per_question,
                    per_model):  # pragma: no cover - numba
    """One record batch's scores into ``matrix`` (filled with NaN): ``score[r]`` at
    ``(question[r], rank[model[r]])``, counting the rows per question and per model code;
    False at the first score outside [0, 1] or second score for one (question, model)."""
    for r in range(score.shape[0]):
        value = float(score[r])
        q, m = question[r], model[r]
        if not (0.0 <= value <= 1.0) or not np.isnan(matrix[q, rank[m]]):
            return False
        matrix[q, rank[m]] = value
        per_question[q] += 1
        per_model[m] += 1
    return True


def _codes(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A column's codes and labels, as the comparison-log reader codes an id column (ids
    of mixed types in their text form; a missing id is an error naming the rows)."""
    axis = code_column(frame, column, frame.index)
    return axis.codes, axis.labels


def _question_axis(column: str, codes: np.ndarray, labels: np.ndarray, question: np.ndarray,
                   question_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes per question of a cluster column (its ``codes`` and ``labels`` per row), which
    must hold one label per question."""
    n_questions = len(question_labels)
    pairs = np.unique(question.astype(np.int64) * len(labels) + codes)
    varying = np.bincount(pairs // len(labels), minlength=n_questions) > 1
    if varying.any():
        raise WinrateInputError(f"cluster column {column!r} must be constant within a "
                                f"question, but {int(varying.sum())} question(s) have several "
                                f"labels, first: {first_rows(varying, question_labels)}")
    per_question = np.empty(n_questions, np.int64)
    per_question[question] = codes
    return per_question, labels
