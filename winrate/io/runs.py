"""Runs of one eval given as files, matched by question id: what ``winrate compare`` reads.

:func:`read_runs` reads each path (a file, or a folder a harness format searches) in one
per-question format: a harness log (:data:`~winrate.io.harness.HARNESS_FORMATS`, read by
:func:`~winrate.io.harness.read_harness`, every path in one call so that two runs of one
model keep the labels ``model@run`` they get there), or a plain per-question score table
(``scores``: CSV, TSV, JSON Lines or Parquet, one row per answer). A plain table's run is
its ``model`` column where it has one (or the column named), else the file's name. The
runs keep the order of the paths, and within a path the order they are read in.

:func:`check_questions` requires every run to answer the same questions: a run with
questions missing or extra is an error naming its file and the first such ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from winrate.constants import RUN_FORMATS, SCORE_COLUMNS, SCORES_FORMAT
from winrate.errors import WinrateInputError, listed
from winrate.io.formats import natural_key
from winrate.io.harness import read_harness
from winrate.io.logs import file_positions, read_table

__all__ = ["RUN_FORMATS", "Runs", "check_questions", "read_runs"]


@dataclass(frozen=True)
class Runs:
    """Runs as one long table: ``frame`` has one row per answer with the columns
    ``question_col``, ``run_col`` (the run's label), ``score_col`` and ``file``, and any
    further columns the files carry (a subject, a task: cluster columns); ``labels`` are
    the runs in the order read, ``files`` each run's files."""

    frame: pd.DataFrame
    labels: tuple[str, ...]
    files: dict[str, tuple[str, ...]]
    question_col: str
    run_col: str
    score_col: str


def read_runs(paths: Sequence, fmt: str, *, question_col: str | None = None,
              score_col: str | None = None, model_col: str | None = None,
              **options) -> Runs:
    """The runs in ``paths`` (module doc). ``fmt`` is one of :data:`RUN_FORMATS` (the
    harness logs and ``scores``);
    ``options`` are the harness reader's (``metric``, ``filter``, ``scorer``, ...). A plain
    table's columns default to ``question_id`` and ``score``; a harness log's long table
    has fixed columns (``question``, ``model``, ``score``), so naming them is an error."""
    paths = [str(p) for p in paths]
    if fmt not in RUN_FORMATS:
        raise WinrateInputError(f"unknown format {fmt!r}; available: {listed(RUN_FORMATS)}")
    if fmt == SCORES_FORMAT:
        return _read_tables(paths, question_col or SCORE_COLUMNS["question"],
                            score_col or SCORE_COLUMNS["score"], model_col, options)
    given = [name for name, col in (("question", question_col), ("score", score_col),
                                    ("model", model_col)) if col]
    if given:
        raise WinrateInputError(f"{fmt} logs have fixed columns (question, model, score): "
                                f"a {listed(given, quote=False)} column is named only for a "
                                f"plain {SCORES_FORMAT} table")
    frame = read_harness(paths, fmt, **options)
    return _ordered(frame, paths, "question", "model", "score")


def _read_tables(paths: list[str], question_col: str, score_col: str,
                 model_col: str | None, options: dict) -> Runs:
    """Plain per-question tables, each file's run its model column or its name."""
    if options:
        raise WinrateInputError(f"a plain {SCORES_FORMAT} table takes no reader options, "
                                f"got {listed(sorted(options))}")
    names = _file_labels(paths)
    frames = []
    for path, name in zip(paths, names, strict=True):
        frame = read_table(path, text_cols=[c for c in (question_col, model_col) if c])
        missing = [c for c in (question_col, score_col, model_col) if c and c not in frame]
        if missing:
            raise WinrateInputError(f"{path}: no column {listed(missing, last='or')}; its "
                                    f"columns: {listed(frame.columns, limit=12)}")
        run = model_col or (SCORE_COLUMNS["model"] if SCORE_COLUMNS["model"] in frame
                            else None)
        labels = frame[run].astype(str).to_numpy() if run else name
        lines = file_positions(path, len(frame))
        unit = "line" if lines.name == "file lines" else "row"
        frame.index = pd.Index([f"{path} {unit} {k}" for k in lines])  # rows in messages
        frames.append(frame.assign(__run__=labels, file=path))
    frame = pd.concat(frames)
    frame = frame.drop(columns=[c for c in (model_col, SCORE_COLUMNS["model"])
                                if c and c in frame and c != question_col])
    frame = frame.rename(columns={"__run__": "model"})
    return _ordered(frame, paths, question_col, "model", score_col)


def _file_labels(paths: list[str]) -> list[str]:
    """Each file's name without its suffixes; the path as given where names repeat."""
    stems = [Path(p).name.split(".")[0] or Path(p).name for p in paths]
    return [p if stems.count(s) > 1 else s for p, s in zip(paths, stems, strict=True)]


def _ordered(frame: pd.DataFrame, paths: list[str], question_col: str, run_col: str,
             score_col: str) -> Runs:
    """:class:`Runs` of a long table with its ``file`` column: runs in the order of the
    paths that hold them, then in the order read."""
    place = frame["file"].map(lambda f: _path_index(f, paths))
    first = pd.DataFrame({"run": frame[run_col].astype(str), "place": place,
                          "row": np.arange(len(frame))}).groupby("run", sort=False).min()
    labels = tuple(first.sort_values(["place", "row"]).index)
    files = {run: tuple(dict.fromkeys(group)) for run, group in
             frame["file"].astype(str).groupby(frame[run_col].astype(str), sort=False)}
    frame = frame.assign(**{run_col: frame[run_col].astype(str),
                            question_col: frame[question_col].astype(str)})
    return Runs(frame, labels, files, question_col, run_col, score_col)


def _path_index(file: str, paths: list[str]) -> int:
    """The place in ``paths`` of the path (the file itself, or a folder above it) that
    holds ``file``."""
    target = Path(file)
    for index, path in enumerate(map(Path, paths)):
        if target == path or path in target.parents:
            return index
    return len(paths)


def check_questions(runs: Runs) -> None:
    """Every run answers the questions of the first: the first run with a question missing
    or one the first lacks is an error naming its file, the first run's file and the first
    five ids of each kind."""
    frame, first = runs.frame, runs.labels[0]
    by_run = frame.groupby(runs.run_col, sort=False)[runs.question_col]
    questions = {run: set(ids) for run, ids in by_run}
    for run in runs.labels[1:]:
        missing = sorted(questions[first] - questions[run], key=natural_key)
        extra = sorted(questions[run] - questions[first], key=natural_key)
        if missing or extra:
            raise WinrateInputError(
                f"{_files_text(runs, run)}: the question ids of run {run!r} do not match "
                f"those of run {first!r} ({_files_text(runs, first)}): "
                f"{len(missing)} missing ({listed(missing, limit=5)}), {len(extra)} not in "
                f"{first!r} ({listed(extra, limit=5)})")


def _files_text(runs: Runs, run: str) -> str:
    files = runs.files[run]
    return files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more files"
