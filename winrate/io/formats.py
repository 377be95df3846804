"""Readers for the files LLM leaderboards publish, as comparison logs.

:func:`read_format` reads a file, or every ``.json``, ``.json.gz``, ``.jsonl`` and
``.jsonl.gz`` file under a folder (recursively, in sorted path order), and returns a
DataFrame with the columns

========== ================================================================================
column     meaning
========== ================================================================================
prompt_id  the prompt compared on (categorical, upstream ids as strings)
judge_id   who decided (categorical)
model_a    first model; ``model_a`` and ``model_b`` share one sorted category list
model_b    second model
outcome    float score of model_a in [0, 1]: 1 win, 0 loss, 0.5 tie, or a graded preference
count      optional frequency weight (arena-hard's weighted strong verdicts)
style_*    optional style features of the (a, b) answers: the normalised difference
           ``(x_a - x_b) / (x_a + x_b + 1)`` (LMArena's style control,
           https://lmsys.org/blog/2024-08-28-style-control/, as FastChat's
           ``elo_analysis.construct_style_matrices`` computes it). The estimator
           standardises them.
========== ================================================================================

Strings (model names, prompt texts, judge names) are kept exactly as written, except the
model names of the ``qlora`` and ``prd`` file names, cleaned by a fixed rule (below). Rows
that compare a model with itself carry no information and are dropped with a
:class:`~winrate.errors.WinrateWarning` (AlpacaEval's baseline-vs-baseline file).
:func:`read_log` turns the frame into a :class:`~winrate.io.logs.ComparisonLog`.

Formats (:data:`LOG_FORMATS`)
-------------------------
``alpaca_eval``
    AlpacaEval ``results/<model>/<annotator>/annotations.json`` (github.com/tatsu-lab/
    alpaca_eval): a JSON list of records ``instruction, output_1, generator_1 (the
    baseline), output_2, generator_2 (the model), annotator, preference``. ``preference``
    runs from 1 (baseline better) to 2 (model better), continuous for the weighted judges;
    1.5 and 0 are draws, null a failed judge. Mapping: model_a = generator_2, model_b =
    generator_1, outcome = preference - 1 (a draw is 0.5), prompt_id = instruction, judge_id
    = annotator. The model is the one the path names, as AlpacaEval's results folder
    does (``results/<model>/...``, or a ``<model>.json[.gz]`` file); a file whose rows name
    another single model is read as the path's model, with a note, and files sharing most
    annotations are named in a note. As upstream (``metrics/helpers.py``,
    ``BaseScoringRule.describe_head2head``
    and ``metrics/winrate.py``, ``get_winrate``), null preferences and values outside
    {0} and [1, 2] are dropped (with a warning counting them), so the mean outcome of a
    model is AlpacaEval's ``win_rate`` / 100 and its SEM is ``standard_error`` / 100.
    ``discrete=True`` gives ``discrete_win_rate`` instead: 1 when preference > 1.5, 0
    when < 1.5, 0.5 for a draw (upstream's ``ZeroOneScoringRule`` rounds the preference).
    ``style_length``: normalised difference of the character lengths of output_2 and
    output_1; ``style_length_delta``: their raw difference in characters, the length term
    of AlpacaEval's length-controlled win rate (model ``lc``).
``qlora``
    QLoRA's GPT-4 judgments (github.com/artidoro/qlora, ``eval/ratings-gpt4/vicuna/``):
    one JSONL per ordered pair, named ``<A>-vs-<B>-<reviewer>-reviewer[-threeclass].jsonl``,
    records ``question_id, score, ...``. ``score`` 1 / 2 / 3 = A better / B better / tie
    (outcome 1 / 0 / 0.5); a two-number list ``[s_A, s_B]`` (``relative-gpt-3.5/``, the
    Vicuna-style 1-10 grades of each answer) gives 1 / 0 / 0.5 for s_A > / < / = s_B.
    Any other value (upstream writes -1 or [-1, -1] when the verdict could not be parsed)
    is dropped, with a warning counting them per file. prompt_id = question_id, judge_id =
    the reviewer of the file name; files of 1-10 grades get ``<reviewer>-scores``, a
    different judging protocol. Model names: a leading ``answer-`` / ``answer_`` is
    removed and ``<size>-<name>-vicuna-generations-<settings>`` becomes ``<name>-<size>``
    (``13b-guanaco-vicuna-generations-topp0.9-temp0.7`` -> ``guanaco-13b``).
``prd``
    PRD (Peer Rank and Discussion, github.com/bcdnlp/PRD, ``data/vicuna80/``):
    ``ratings-<reviewer>/answer_<A>-vs-answer_<B>-<reviewer>-reviewer*.jsonl``, records
    ``question_id, score`` (1 / 2 / 3 as in qlora). The reviewer is the folder's
    ``ratings-<reviewer>`` (names such as ``vicuna-13b`` make the file name ambiguous), or
    the ``reviewer=`` option. The human files hold three anonymous raters per item (no
    rater id): every rating is a row with judge_id ``human``. Guanaco models appear only
    in the human files; they are kept (select models with ``models=`` downstream).
    Two files that name the same ordered pair and reviewer (upstream's ``ratings-gpt35``
    holds ``answer-gpt35-vs-answer-gpt4`` and ``answer_gpt35-vs-answer_gpt4``, two
    separate runs with different verdicts) are both kept by default, with a warning
    naming them; ``duplicates="first"`` keeps only the first file in sorted order.
``clean_battle``
    FastChat / LMArena battles (github.com/lm-sys/FastChat,
    ``fastchat/serve/monitor/clean_battle_data.py``): a JSON list or JSONL of records
    ``model_a, model_b, winner`` (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``),
    ``judge`` and ``question_id`` (or ``conv_id`` / ``conversation_id``); outcome 1 / 0 /
    0.5; ``both_bad="drop"`` drops the both-bad ties. A judge or prompt field missing
    in every record of a file leaves that column out (no clustering on it); missing in
    only some records is an error. With ``conv_metadata`` (FastChat's
    ``add_markdown_info.py``: ``sum_assistant_a_tokens``, ``header_count_a``,
    ``list_count_a``, ``bold_count_a`` and the ``_b`` twins; a count may be a dict of
    counts, summed as in ``rating_systems.preprocess_for_style``) the features
    ``style_tokens``, ``style_header_count``, ``style_list_count``, ``style_bold_count``
    are added (``style=None``: when every record has them; True: required; False: never).
    As LMArena's leaderboard, only anonymous battles (``anony`` true) are kept, and of
    those with a ``dedup_tag`` only the ``sampled`` ones; a note counts what was left out
    (``include_named=True`` keeps named battles, ``dedup=False`` ignores ``dedup_tag``).
``arena_hard``
    arena-hard-auto ``data/<bench>/model_judgment/<judge>/<model>.jsonl``
    (github.com/lmarena/arena-hard-auto, ``show_result.py``): records ``question_id``
    (v2: ``uid``), ``model``, ``judge``, ``games``: two games per question, game 1 with
    the baseline's answer as A and the model's as B, game 2 swapped; each game's
    ``score`` is a verdict such as ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A`` (v2 also
    ``A<B``, ``A<<B``, ``B<A``, ``B<<A``, ``B=A``) or null. Every game is a row oriented
    model vs baseline: model_a = model, model_b = baseline, outcome = the model's score.
    A null game is dropped (warning), as v0.1's ``get_battles_from_row`` does. The
    baseline is the record's ``baseline`` field (v2), else ``baseline=``, required then
    (v0.1 records name none; arena-hard-v0.1's was ``gpt-4-0314``) and checked: it must
    be one of the judged models (arena-hard-auto judges the baseline against itself, so
    its file is there; a misspelt name would make the real baseline a contestant). A
    strong verdict (``>>`` / ``<<``) counts ``strong_weight`` times, 3 by default as
    upstream (v0.1 ``show_result.py --weight 3``, v2 ``load_judgments(weight=3)``), as
    a ``count`` column; ``strong_weight=1`` counts every verdict once (no column).
    judge_id = the record's ``judge``, else the folder name. ``answers=FOLDER``
    (``data/<bench>/model_answer/``) adds LMArena's four style features of each
    (model, baseline) answer pair from the answers' ``conv_metadata`` (v2: ``metadata``):
    ``token_len``, ``header_count``, ``list_count``, ``bold_count``, as in clean_battle.
    A record whose ``games`` is not two games, or a game with an unknown verdict, is an
    error; ``skip_malformed=True`` skips them and counts them in a note.
``arena``, ``mt_bench``
    LMArena's three public battle tables (55k, 100k, 140k; CSV, Parquet or JSON Lines,
    the layout told by the columns) and MT-Bench's pairwise judgments:
    :mod:`winrate.io.arena_layouts`. Their categories (``language``, ``is_code``,
    ``category_*``), ``turn`` and ``judge_prompt`` are further columns, read by
    :func:`read_log` as clustering axes.
``lm_eval``, ``inspect``, ``eee``, ``helm``, ``lighteval``
    Evaluation harness logs (lm-evaluation-harness ``--log_samples``, Inspect AI ``.eval``
    / ``.json``, Every Eval Ever instance-level JSON Lines, HELM
    ``per_instance_stats.json``, lighteval details Parquet): per-question scores, not
    comparisons (:mod:`winrate.io.harness`); :func:`read_format` gives their long table
    and :func:`read_log` a :class:`~winrate.io.logs.ScoreTable` of the runs.

:func:`detect_format` names the format of a file in one of these layouts when that is
unambiguous (the command line then reads it without a format).
"""

from __future__ import annotations

import difflib
import gzip
import inspect
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from winrate import notes
from winrate.constants import LOG_FORMATS
from winrate.errors import WinrateInputError, first_rows
from winrate.io.arena_layouts import ARENA_MARKS, arena_parts, mt_bench_parts
from winrate.io.harness import HARNESS_FORMATS, harness_scores, read_harness
from winrate.io.logs import (
    ComparisonLog,
    ScoreTable,
    read_comparisons,
    table_columns,
    value_counts,
)
from winrate.progress import bar

__all__ = ["ARENA_HARD_BASELINE", "ARENA_HARD_STRONG_WEIGHT", "LOG_FORMATS", "STYLE_PREFIX",
           "clean_model_name", "detect_format", "find_files", "read_format", "read_log",
           "style_difference"]

#: Prefix of the style feature columns.
STYLE_PREFIX = "style_"
_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz")
#: Formats whose folders hold other files than JSON.
_FORMAT_SUFFIXES = {"arena": (".csv", ".csv.gz", ".parquet", *_SUFFIXES)}
_OUT = ("prompt_id", "judge_id", "model_a", "model_b", "outcome")
_SHOW_FILES = 5


# --------------------------------------------------------------------------- public


def natural_key(text: str):
    """Sort key: whole numbers (decimal digits only) numerically, then anything else as
    text. ``str.isdecimal``, not ``isdigit``: ``"²"`` is a digit that ``int`` rejects."""
    return (0, int(text), "") if text.isdecimal() else (1, 0, text)


def read_format(path, name: str, **options) -> pd.DataFrame:
    """Read ``path`` (a file or a folder searched recursively, or a list of them) in
    format ``name``.

    ``name`` is one of :data:`LOG_FORMATS`; ``options`` are the format's keywords (see the
    module docstring). Files are read in sorted path order. Returns the comparison frame
    described in the module docstring.
    """
    if name not in LOG_FORMATS:
        raise WinrateInputError(f"unknown format {name!r}; available: {', '.join(LOG_FORMATS)}")
    if name in HARNESS_FORMATS:
        return read_harness(path, name, **options)
    reader = _READERS[name]
    allowed = [p for p in inspect.signature(reader).parameters if p != "files"]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise WinrateInputError(f"format {name!r}: unknown option(s) {unknown}; it takes "
                                f"{allowed or 'none'}")
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    suffixes = _FORMAT_SUFFIXES.get(name, _SUFFIXES)
    files = sorted({file for p in paths for file in find_files(p, suffixes)})
    return reader(files, **options)


def read_log(path, name: str, **options) -> ComparisonLog | ScoreTable:
    """:func:`read_format`, coded as a log: ``count`` is the frequency weight, the
    ``style_*`` columns are the features and any further columns (an arena's
    ``language``) further clustering axes. A harness format (:mod:`winrate.io.harness`)
    gives its per-question scores as a :class:`~winrate.io.logs.ScoreTable`."""
    if name in HARNESS_FORMATS:
        return harness_scores(path, name, **options)
    frame = read_format(path, name, **options)
    features = tuple(c for c in frame.columns if c.startswith(STYLE_PREFIX))
    extra = tuple(c for c in frame.columns if c not in (*_OUT, "count", *features))
    return read_comparisons(
        frame, weight_col="count" if "count" in frame.columns else None,
        feature_cols=features, cluster_cols=extra)


def detect_format(path) -> str | None:
    """The reader format a file's own layout names, where that is unambiguous: an
    Inspect ``.eval`` log, an lm-eval ``samples_<task>_<date>.jsonl``, MT-Bench pairwise
    judgments (``model_1, model_2, g1_winner, g2_winner``), Every Eval Ever instances
    (``model_id, sample_id, evaluation``), a HELM ``per_instance_stats.json``, a lighteval
    ``details_<task>_<date>.parquet`` or one LMArena battle layout
    (:func:`winrate.io.arena_layouts.detect_layout`); None for anything else, a folder,
    and any file with the columns of a comparison log (``model_a, model_b, outcome``)."""
    path = Path(path)
    if not path.is_file():
        return None
    name = path.name.lower()
    if name.endswith(".eval"):
        return "inspect"
    if re.fullmatch(r"samples_.+_[^_]+\.jsonl", name):
        return "lm_eval"
    if name == "per_instance_stats.json":
        return "helm"
    if name.startswith("details_") and name.endswith(".parquet"):
        return "lighteval"
    columns = set(table_columns(path) or _first_keys(path))
    if {"model_a", "model_b", "outcome"} <= columns:
        return None
    if {"model_1", "model_2", "g1_winner", "g2_winner"} <= columns:
        return "mt_bench"
    if {"model_id", "sample_id", "evaluation"} <= columns:
        return "eee"
    marks = [mark for mark in ARENA_MARKS.values() if mark in columns]
    return "arena" if len(marks) == 1 and {"model_a", "model_b"} <= columns else None


def _first_keys(path: Path) -> list[str]:
    """The keys of the first record of a JSON Lines file (none for other files, or a
    first line that is not a JSON object)."""
    if not path.name.lower().endswith(".jsonl"):
        return []
    try:
        with path.open(encoding="utf-8") as handle:
            record = json.loads(handle.readline())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    return list(record) if isinstance(record, dict) else []


def find_files(path, suffixes: Sequence[str] = _SUFFIXES) -> list[Path]:
    """``path`` itself, or every file under the folder ``path`` whose name ends with one
    of ``suffixes`` (JSON / JSONL, optionally gzipped, by default), sorted by path."""
    path = Path(path).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise WinrateInputError(f"no such file or folder: {str(path)!r}")
    found = sorted(p for p in path.rglob("*")
                   if p.is_file() and p.name.lower().endswith(tuple(suffixes)))
    if not found:
        raise WinrateInputError(f"{path}: no {', '.join(suffixes)} file in this folder or "
                                "below")
    return found


def style_difference(x_a, x_b) -> np.ndarray:
    """LMArena's normalised style difference ``(x_a - x_b) / (x_a + x_b + 1)`` of two
    counts >= 0 (Li, Angelopoulos and Chiang 2024, "Does style matter?", lmsys.org blog;
    FastChat ``fastchat/serve/monitor/elo_analysis.py``, ``construct_style_matrices`` with
    its default ``add_one=True``, and arena-hard-auto v0.1 ``utils_math.py`` alike)."""
    x_a = np.asarray(x_a, dtype=float)
    x_b = np.asarray(x_b, dtype=float)
    return (x_a - x_b) / (x_a + x_b + 1.0)


_SIZED = re.compile(r"^(?P<size>\d+(?:\.\d+)?[bBmM])-(?P<name>.+?)-vicuna-generations(?:-.*)?$")
_ANSWER_PREFIX = re.compile(r"^answer[-_]")


def clean_model_name(raw: str) -> str:
    """A readable model name from a qlora / prd file-name part.

    Drops a leading ``answer-`` / ``answer_`` and turns ``<size>-<name>-vicuna-generations
    [-<settings>]`` into ``<name>-<size>``; anything else is kept as written.
    """
    name = _ANSWER_PREFIX.sub("", raw)
    sized = _SIZED.match(name)
    return f"{sized['name']}-{sized['size']}" if sized else name


# --------------------------------------------------------------------------- reading


def _progress(files: Sequence[Path], name: str):
    """The files with a progress bar (reading many files takes seconds;
    :func:`winrate.progress.bar`)."""
    return bar(files, desc=f"reading {name}", unit="file")


def _read_records(path: Path) -> tuple[list[dict], np.ndarray, str]:
    """The records of one file, their positions for messages, and what a position is.

    ``.jsonl`` files are read line by line (blank lines skipped): a broken line is an
    error naming the file and line. ``.json`` files hold a list of records.
    """
    name = path.name.lower()  # suffixes in any case, as find_files selects them
    opener = gzip.open if name.endswith(".gz") else open
    lines = name.endswith((".jsonl", ".jsonl.gz"))
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            if not lines:
                data = json.load(handle)
                if not isinstance(data, list):
                    raise WinrateInputError(f"{path}: expected a JSON list of records, got "
                                            f"{type(data).__name__}")
                positions = np.arange(len(data))
            else:
                data, where = [], []
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        data.append(_json_line(line, path, number))
                        where.append(number)
                positions = np.asarray(where, dtype=np.int64)
    except (OSError, UnicodeDecodeError, EOFError, json.JSONDecodeError) as error:
        raise WinrateInputError(f"{path}: cannot read it as JSON: {error}") from error
    what = "line" if lines else "record"
    bad = np.array([not isinstance(r, dict) for r in data], dtype=bool)
    if bad.any():
        raise WinrateInputError(f"{path}: {what}(s) {first_rows(bad, positions)} are not "
                                "JSON objects")
    return data, positions, what


def _json_line(line: str, path: Path, number: int):
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise WinrateInputError(f"{path}: line {number} is not valid JSON: {error.msg} "
                                f"(column {error.colno})") from error


def _fields(records: list[dict], keys: Sequence[str], path: Path, positions: np.ndarray,
            what: str, required: Sequence[str] = ()) -> pd.DataFrame:
    """The ``keys`` of every record as columns (None where absent); ``required`` keys
    must be present in every record."""
    frame = pd.DataFrame({key: [r.get(key) for r in records] for key in keys}, dtype=object)
    for key in required:
        missing = np.array([key not in r for r in records], dtype=bool)
        if missing.any():
            raise WinrateInputError(f"{path}: field {key!r} missing in {what}(s) "
                                    f"{first_rows(missing, positions)}")
    return frame


def _first_present(records: list[dict], keys: Sequence[str]) -> str | None:
    """The first of ``keys`` that every record has, or None."""
    for key in keys:
        if records and all(key in r for r in records):
            return key
    return None


def _in_every_record(records: list[dict], key: str, path: Path, positions: np.ndarray,
                     what: str) -> bool:
    """Whether every record has the optional field ``key`` (False for no records); some
    but not all is an error naming the records without it (their rows would otherwise
    lose the field's column, e.g. the prompt clustering, silently)."""
    has = np.array([key in r for r in records], dtype=bool)
    if has.any() and not has.all():
        raise WinrateInputError(f"{path}: field {key!r} missing in {what}(s) "
                                f"{first_rows(~has, positions)} but present in the others; "
                                "give it in every record or in none")
    return bool(has.any())


class _Dropped:
    """Rows dropped per file for one kind of verdict (:data:`winrate.notes.DROPPED_VERDICTS`),
    reported in one warning at the end."""

    def __init__(self, name: str, kind: str):
        self.name, self.kind, self.per_file = name, kind, {}

    def add(self, path: Path, dropped: int, total: int) -> None:
        if dropped:
            self.per_file[path] = (dropped, total)

    def warn(self) -> None:
        if self.per_file:
            per_file = [(path.name, n, total) for path, (n, total) in self.per_file.items()]
            notes.emit(notes.verdicts_dropped(self.name, self.kind, per_file))


class _Skipped:
    """Malformed records: an error naming them, or with ``skip`` (``--skip-malformed``)
    left out and counted per file in one note (``skipped-records``)."""

    def __init__(self, name: str, skip: bool):
        self.name, self.skip, self.per_file = name, bool(skip), {}

    def check(self, bad: np.ndarray, path: Path, positions, what: str,
              problem: str) -> np.ndarray:
        """The rows to keep: all when none is ``bad``; else an error, or the good ones."""
        if bad.any() and not self.skip:
            raise WinrateInputError(f"{path}: {problem} in {what}(s) "
                                    f"{first_rows(bad, positions)} (skip_malformed=True skips such "
                                    "records)")
        self.count(path, int(bad.sum()))
        return ~bad

    def count(self, path: Path, n: int) -> None:
        if n:
            self.per_file[path] = self.per_file.get(path, 0) + n

    def note(self) -> None:
        if self.per_file:
            per_file = [(path.name, n) for path, n in self.per_file.items()]
            notes.emit(notes.skipped_records(self.name, per_file))


def _assemble(parts: list[pd.DataFrame], name: str) -> pd.DataFrame:
    """Concatenate per-file frames; drop self-comparisons; code the string columns."""
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if frame.empty:
        raise WinrateInputError(f"format {name!r}: no comparison rows were read")
    same = (frame["model_a"].astype(str) == frame["model_b"].astype(str)).to_numpy()
    if same.any():
        models = sorted(frame.loc[same, "model_a"].astype(str).unique())
        notes.emit(notes.self_comparisons(name, int(same.sum()), models))
        frame = frame.loc[~same].reset_index(drop=True)
        if frame.empty:
            raise WinrateInputError(f"format {name!r}: every row compares a model with itself")
    names = {col: frame[col].astype(str) for col in ("model_a", "model_b")}
    models = sorted(set(names["model_a"].unique()) | set(names["model_b"].unique()))
    coded = {col: pd.Categorical(values, categories=models) for col, values in names.items()}
    for col in ("prompt_id", "judge_id"):
        if col in frame.columns:
            values = frame[col].astype(str)
            coded[col] = pd.Categorical(values, categories=sorted(values.unique(), key=natural_key))
    out = frame.assign(**coded, outcome=frame["outcome"].astype(float))
    first = [c for c in _OUT if c in out.columns]
    rest = [c for c in out.columns if c not in first]
    return out[first + rest]


def _text_ids(values: pd.Series, path: Path, field: str, positions, what: str) -> pd.Series:
    """Ids and names as strings (``70`` and ``"70"`` alike); a null, or a value that is
    not a string or a number (a list, an object, true / false), is an error."""
    missing = values.isna().to_numpy()
    if missing.any():
        raise WinrateInputError(f"{path}: field {field!r} is null in {what}(s) "
                                f"{first_rows(missing, positions)}")
    other = values.map(lambda v: isinstance(v, bool) or not isinstance(v, (str, int, float)))
    if other.any():
        raise WinrateInputError(f"{path}: field {field!r} is not a string or a number in "
                                f"{what}(s) {first_rows(other.to_numpy(), positions)}")
    return values.map(lambda v: str(v) if not isinstance(v, float) or not v.is_integer()
                      else str(int(v)))


# --------------------------------------------------------------------------- alpaca_eval


def _read_alpaca_eval(files: Sequence[Path], *, discrete: bool = False) -> pd.DataFrame:
    """AlpacaEval ``annotations.json`` files (see the module docstring)."""
    parts = []
    dropped = _Dropped("alpaca_eval", "alpaca_eval")
    folder = _FolderNamesModel()
    for path in _progress(files, "alpaca_eval"):
        records, positions, what = _read_records(path)
        keys = ("instruction", "generator_1", "generator_2", "annotator", "preference",
                "output_1", "output_2")
        rows = _fields(records, keys, path, positions, what, required=keys)
        preference = pd.to_numeric(rows["preference"], errors="coerce").to_numpy(float)
        flags = rows["preference"].map(lambda v: isinstance(v, bool)).to_numpy(bool)
        garbled = (np.isnan(preference) & rows["preference"].notna().to_numpy()) | flags
        if garbled.any():
            raise WinrateInputError(
                f"{path}: non-numeric preference in {what}(s) "
                f"{first_rows(garbled, positions)} (expected 1..2, 0 or 1.5 = draw, null)")
        valid = (preference == 0) | ((preference >= 1) & (preference <= 2))
        dropped.add(path, int((~valid).sum()), len(valid))
        rows, preference = rows.loc[valid], preference[valid]
        draw = (preference == 0) | (preference == 1.5)
        if discrete:
            outcome = np.where(draw, 0.5, (preference > 1.5).astype(float))
        else:
            outcome = np.where(draw, 0.5, preference - 1.0)
        for col in ("output_1", "output_2"):
            text = rows[col].map(lambda v: isinstance(v, str))
            if not text.all():
                raise WinrateInputError(f"{path}: {col!r} is not a string in {what}(s) "
                                        f"{first_rows(~text.to_numpy(), positions[valid])}")
        text = {key: _text_ids(rows[key], path, key, positions[valid], what).to_numpy()
                for key in ("instruction", "annotator", "generator_1", "generator_2")}
        text["generator_2"] = folder.model(path, text["generator_2"], text["annotator"])
        folder.add_annotations(path, rows)
        parts.append(pd.DataFrame({
            "prompt_id": text["instruction"],
            "judge_id": text["annotator"],
            "model_a": text["generator_2"],
            "model_b": text["generator_1"],
            "outcome": outcome,
            "style_length": style_difference(rows["output_2"].str.len().to_numpy(float),
                                             rows["output_1"].str.len().to_numpy(float)),
            "style_length_delta": (rows["output_2"].str.len().to_numpy(float)
                                   - rows["output_1"].str.len().to_numpy(float)),
        }))
    dropped.warn()
    folder.note()
    return _assemble(parts, "alpaca_eval")


class _FolderNamesModel:
    """AlpacaEval's convention: the results folder names the model
    (``results/<model>/<annotator>/annotations.json``; a ``<model>.json[.gz]`` file, as in
    the bundled copy, names it by its file name). A file whose rows all name one other
    model as ``generator_2`` is read as the model its path names, with a note naming the
    file (a copy left under another model's folder would otherwise merge into that model
    and the folder's model vanish); a file whose rows name several models is not laid out
    that way and keeps its rows' names. A note also names pairs of files that share more
    than half of the smaller one's annotations (same instruction, both outputs, annotator
    and preference): a duplicated file counted twice."""

    def __init__(self):
        self.renamed: dict[Path, tuple[str, str]] = {}
        self.keys: dict[Path, set] = {}

    @staticmethod
    def path_model(path: Path, annotators: set) -> str | None:
        """The model the path names in AlpacaEval's layouts, else None: upstream's
        ``results/<model>/<annotator>/annotations.json``, or ``<annotator>/<model>.json``
        (the bundled copy), the folder being the rows' annotator."""
        if path.name.startswith("annotations.json"):
            parents = path.resolve().parents
            return parents[1].name if len(parents) > 2 and parents[2].name == "results" else None
        if annotators == {path.parent.name}:
            return path.name.split(".json")[0]
        return None

    def model(self, path: Path, generator: np.ndarray, annotator: np.ndarray) -> np.ndarray:
        named = set(generator.tolist())
        folder = self.path_model(path, set(annotator.tolist()))
        if len(named) != 1 or not folder or folder in named:
            return generator
        self.renamed[path] = (named.pop(), folder)
        return np.full(generator.shape, folder, dtype=object)

    def add_annotations(self, path: Path, rows: pd.DataFrame) -> None:
        keys = ("instruction", "output_1", "output_2", "annotator", "preference")
        self.keys[path] = set(zip(*(rows[k].astype(str) for k in keys), strict=True))

    def _copies(self) -> list[tuple[Path, Path, int]]:
        paths = list(self.keys)
        found = []
        for i, first in enumerate(paths):  # one loop over file pairs, not rows
            for second in paths[i + 1:]:
                shared = len(self.keys[first] & self.keys[second])
                smaller = min(len(self.keys[first]), len(self.keys[second]))
                if smaller and shared > smaller / 2:
                    found.append((first, second, shared))
        return found

    def note(self) -> None:
        if self.renamed:
            renamed = [(path.name, named, folder)
                       for path, (named, folder) in self.renamed.items()]
            notes.emit(notes.renamed_by_folder(renamed))
        copies = self._copies()
        if copies:
            pairs = [(a.name, b.name, n) for a, b, n in copies]
            notes.emit(notes.copied_files(pairs))


# --------------------------------------------------------------------------- qlora / prd

_QLORA_NAME = re.compile(r"^(?P<a>.+?)-vs-(?P<b>.+?)-(?P<reviewer>[A-Za-z0-9.]+(?:-[0-9.]+)?)"
                         r"-reviewer(?:[-_]threeclass)?\.jsonl(?:\.gz)?$")
_THREECLASS = {1: 1.0, 2: 0.0, 3: 0.5}


def _pair_verdicts(scores: pd.Series) -> tuple[np.ndarray, bool]:
    """Outcomes of ``score`` values: 1 / 2 / 3 -> 1 / 0 / 0.5; ``[s_a, s_b]`` of two
    non-negative numbers -> 1 / 0 / 0.5 by comparing them; NaN for anything else.

    Returns the outcomes and whether the file's scores are grade pairs.
    """
    def one(value) -> float:
        if isinstance(value, bool):
            return np.nan
        if isinstance(value, (int, float)):
            return _THREECLASS.get(value, np.nan)
        if isinstance(value, list) and len(value) == 2 \
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                        for v in value):
            return 0.5 + 0.5 * float(np.sign(value[0] - value[1]))
        return np.nan

    grades = scores.map(lambda v: isinstance(v, list))
    return scores.map(one).to_numpy(float), bool(grades.any())


def _read_pair_file(path: Path, model_a: str, model_b: str, judge: str,
                    dropped: _Dropped) -> pd.DataFrame:
    """One qlora / prd file: the question ids and verdicts of one ordered pair."""
    records, positions, what = _read_records(path)
    rows = _fields(records, ("question_id", "score"), path, positions, what,
                   required=("question_id", "score"))
    outcome, grades = _pair_verdicts(rows["score"])
    kept = ~np.isnan(outcome)
    dropped.add(path, int((~kept).sum()), len(kept))
    return pd.DataFrame({
        "prompt_id": _text_ids(rows["question_id"], path, "question_id", positions,
                               what).to_numpy()[kept],
        "judge_id": f"{judge}-scores" if grades else judge,
        "model_a": clean_model_name(model_a),
        "model_b": clean_model_name(model_b),
        "outcome": outcome[kept],
    })


def _unparsed(name: str) -> _Dropped:
    return _Dropped(name, "unparsed")


def _read_qlora(files: Sequence[Path]) -> pd.DataFrame:
    """QLoRA pairwise judgment files (see the module docstring)."""
    parts = []
    dropped = _unparsed("qlora")
    for path in _progress(files, "qlora"):
        match = _QLORA_NAME.match(path.name)
        if match is None:
            raise WinrateInputError(
                f"{path}: file name is not '<A>-vs-<B>-<reviewer>-reviewer[-threeclass]"
                ".jsonl' (QLoRA's naming; the models are read from the file name)")
        parts.append(_read_pair_file(path, match["a"], match["b"], match["reviewer"], dropped))
    dropped.warn()
    return _assemble(parts, "qlora")


def _prd_reviewer(path: Path, reviewer: str | None) -> str:
    if reviewer is not None:
        return reviewer
    folder = path.parent.name
    if not folder.startswith("ratings-") or folder == "ratings-":
        raise WinrateInputError(
            f"{path}: cannot tell the reviewer: PRD files live in a 'ratings-<reviewer>' "
            "folder (or pass reviewer=...)")
    return folder[len("ratings-"):]


def _read_prd(files: Sequence[Path], *, reviewer: str | None = None,
              duplicates: str = "keep") -> pd.DataFrame:
    """PRD rating folders (see the module docstring)."""
    if duplicates not in ("keep", "first"):
        raise WinrateInputError(f"prd: duplicates must be 'keep' or 'first', got "
                                f"{duplicates!r}")
    seen: dict[tuple[str, str, str], Path] = {}
    parts = []
    dropped = _unparsed("prd")
    for path in _progress(files, "prd"):
        judge = _prd_reviewer(path, reviewer)
        pattern = (r"^answer[-_](?P<a>.+?)-vs-answer[-_](?P<b>.+)-" + re.escape(judge)
                   + r"-reviewer(?:[-_]threeclass)?\.jsonl(?:\.gz)?$")
        match = re.match(pattern, path.name)
        if match is None:
            raise WinrateInputError(
                f"{path}: file name is not 'answer_<A>-vs-answer_<B>-{judge}-reviewer"
                "[_threeclass].jsonl' (PRD's naming; the models are read from the file name)")
        key = (judge, clean_model_name(match["a"]), clean_model_name(match["b"]))
        if key in seen:
            notes.emit(notes.duplicate_files(seen[key].name, path.name, judge, key[1], key[2],
                                             keep=duplicates == "keep"))
            if duplicates == "first":
                continue
        seen.setdefault(key, path)
        parts.append(_read_pair_file(path, match["a"], match["b"], judge, dropped))
    dropped.warn()
    return _assemble(parts, "prd")


# --------------------------------------------------------------------------- clean_battle

_BATTLE_WINNER = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}
_BATTLE_PROMPT_KEYS = ("question_id", "conv_id", "conversation_id")
#: FastChat's style elements: (feature name, key for model_a, key for model_b).
_BATTLE_STYLE = (("tokens", "sum_assistant_a_tokens", "sum_assistant_b_tokens"),
                 ("header_count", "header_count_a", "header_count_b"),
                 ("list_count", "list_count_a", "list_count_b"),
                 ("bold_count", "bold_count_a", "bold_count_b"))


def _read_clean_battle(files: Sequence[Path], *, both_bad: str = "tie",
                       style: bool | None = None, include_named: bool = False,
                       dedup: bool = True) -> pd.DataFrame:
    """FastChat / LMArena ``clean_battle`` records (see the module docstring)."""
    if both_bad not in ("tie", "drop"):
        raise WinrateInputError(f"clean_battle: both_bad must be 'tie' or 'drop', got "
                                f"{both_bad!r}")
    parts, used = [], []
    left_out = _BattleFilter(include_named, dedup)
    for path in _progress(files, "clean_battle"):
        records, positions, what = _read_records(path)
        kept = left_out.keep(records, path, positions, what)
        if not kept.any():
            continue
        records = [r for r, k in zip(records, kept, strict=True) if k]
        positions = positions[kept]
        used.append(path)
        prompt_key = next((key for key in _BATTLE_PROMPT_KEYS
                           if _in_every_record(records, key, path, positions, what)), None)
        has_judge = _in_every_record(records, "judge", path, positions, what)
        keys = ("model_a", "model_b", "winner", "judge", *filter(None, [prompt_key]))
        rows = _fields(records, keys, path, positions, what,
                       required=("model_a", "model_b", "winner"))
        label = rows["winner"].map(lambda v: v.strip().lower() if isinstance(v, str) else "")
        outcome = label.map(_BATTLE_WINNER).to_numpy(float)
        unknown = np.isnan(outcome)
        if unknown.any():
            raise WinrateInputError(
                f"{path}: unknown winner in {int(unknown.sum())} {what}(s): "
                f"{value_counts(rows['winner'].to_numpy(), unknown, unit=what)}, first "
                f"{what}(s) {first_rows(unknown, positions)} (expected model_a, model_b, tie "
                "or 'tie (bothbad)')")
        text = {key: _text_ids(rows[key], path, key, positions, what)
                for key in ("model_a", "model_b", prompt_key, "judge" if has_judge else None)
                if key is not None}
        part = pd.DataFrame({"model_a": text["model_a"], "model_b": text["model_b"],
                             "outcome": outcome})
        if prompt_key is not None:
            part["prompt_id"] = text[prompt_key]
        if "judge" in text:
            part["judge_id"] = text["judge"]
        part = part.assign(**_battle_style(records, path, positions, what, style))
        keep = (label != "tie (bothbad)").to_numpy() if both_bad == "drop" else None
        parts.append(part if keep is None else part.loc[keep])
    _check_same_columns(parts, used)
    left_out.note()
    return _assemble(parts, "clean_battle")


class _BattleFilter:
    """LMArena's selection of battles for its leaderboard: anonymous battles only
    (``anony`` true; FastChat ``fastchat/serve/monitor/elo_analysis.py``,
    ``report_elo_analysis_results``: "Only use anonymous votes"), then, where records carry
    a ``dedup_tag``, those with ``dedup_tag["sampled"]`` true (FastChat
    ``fastchat/serve/monitor/deduplication.py`` tags each battle ``{"high_freq",
    "sampled"}``, keeping a sample of each over-frequent prompt; LMArena's leaderboard
    notebook keeps ``dedup_tag.get("sampled", False)``, lmsys.org/blog/2024-05-17-
    category-hard, "de-duplication"). A file without ``anony`` (or without ``dedup_tag``)
    in every record is taken as it is; some records with it and some without is an error.
    ``include_named`` keeps named battles, ``dedup=False`` ignores the tags. The numbers
    left out are said in one note (``battles-dropped``)."""

    def __init__(self, include_named: bool, dedup: bool):
        self.include_named, self.dedup = bool(include_named), bool(dedup)
        self.named = self.duplicates = self.total = 0

    def keep(self, records: list[dict], path: Path, positions, what: str) -> np.ndarray:
        keep = np.ones(len(records), dtype=bool)
        self.total += len(records)
        if _in_every_record(records, "anony", path, positions, what):
            anony = np.array([r["anony"] for r in records], dtype=object)
            flags = np.array([isinstance(v, bool) for v in anony])
            if not flags.all():
                raise WinrateInputError(f"{path}: field 'anony' is not true/false in {what}(s) "
                                        f"{first_rows(~flags, positions)}")
            named = ~anony.astype(bool)
            self.named += int(named.sum()) if not self.include_named else 0
            keep &= self.include_named | ~named
        if self.dedup and _in_every_record(records, "dedup_tag", path, positions, what):
            tags = [r["dedup_tag"] for r in records]
            bad = np.array([not isinstance(t, dict) for t in tags])
            if bad.any():
                raise WinrateInputError(f"{path}: field 'dedup_tag' is not an object in "
                                        f"{what}(s) {first_rows(bad, positions)}")
            sampled = np.array([t.get("sampled", False) is True for t in tags])
            self.duplicates += int((keep & ~sampled).sum())
            keep &= sampled
        return keep

    def note(self) -> None:
        if self.named or self.duplicates:
            notes.emit(notes.battles_dropped(self.total, self.named, self.duplicates))


def _battle_style(records: list[dict], path: Path, positions: np.ndarray, what: str,
                  style: bool | None) -> dict[str, np.ndarray]:
    """The ``style_*`` columns from ``conv_metadata`` (empty when absent and not required)."""
    if style is False:
        return {}
    meta = [r.get("conv_metadata") for r in records]
    needed = [k for _, a, b in _BATTLE_STYLE for k in (a, b)]
    lacking = np.array([not isinstance(m, dict) or any(k not in m for k in needed)
                        for m in meta], dtype=bool)
    if lacking.any():
        if style is None:
            return {}
        raise WinrateInputError(f"{path}: conv_metadata with {needed} missing in {what}(s) "
                                f"{first_rows(lacking, positions)} (needed for style=True)")

    columns = {}
    for feature, key_a, key_b in _BATTLE_STYLE:
        x_a = np.array([_style_count(m[key_a]) for m in meta])
        x_b = np.array([_style_count(m[key_b]) for m in meta])
        bad = ~np.isfinite(x_a) | ~np.isfinite(x_b) | (x_a < 0) | (x_b < 0)
        if bad.any():
            raise WinrateInputError(f"{path}: conv_metadata {key_a}/{key_b} is not a "
                                    f"count >= 0 in {what}(s) {first_rows(bad, positions)}")
        columns[STYLE_PREFIX + feature] = style_difference(x_a, x_b)
    return columns


def _style_count(value) -> float:
    """A style count as FastChat reads it: an int, or a dict of sub-counts added up
    (``{"h1": 2, "h2": 1}``); NaN for anything else."""
    parts = list(value.values()) if isinstance(value, dict) else [value]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parts)
    return float(sum(parts)) if numbers else np.nan


def _check_same_columns(parts: list[pd.DataFrame], files: Sequence[Path]) -> None:
    """Every file must give the same columns (prompt, judge, style), or rows would mix."""
    first = set(parts[0].columns) if parts else set()
    for part, path in zip(parts, files, strict=True):
        if set(part.columns) != first:
            raise WinrateInputError(
                f"{path}: gives columns {sorted(part.columns)} but {files[0]} gives "
                f"{sorted(first)} (a prompt id, judge or conv_metadata field is missing in "
                "one of them)")


# --------------------------------------------------------------------------- arena_hard

#: arena-hard-auto's baseline for arena-hard-v0.1 (``show_result.py --baseline``), named in
#: the message that asks for one.
ARENA_HARD_BASELINE = "gpt-4-0314"
#: arena-hard-auto counts a strong verdict (``A>>B``) as this many battles: v0.1's
#: ``show_result.py --weight`` (default 3) and v2's ``load_judgments(weight=3)``.
ARENA_HARD_STRONG_WEIGHT = 3
_SHOW_MODELS = 10
#: Score of the answer shown as A, and whether the verdict is strong.
_ARENA_VERDICT = {
    "A>>B": (1.0, True), "A>B": (1.0, False), "A=B": (0.5, False), "B>A": (0.0, False),
    "B>>A": (0.0, True), "A<<B": (0.0, True), "A<B": (0.0, False), "B=A": (0.5, False),
    "B<A": (1.0, False), "B<<A": (1.0, True),
}


def _read_arena_hard(files: Sequence[Path], *, baseline: str | None = None,
                     strong_weight: int = ARENA_HARD_STRONG_WEIGHT, answers=None,
                     skip_malformed: bool = False) -> pd.DataFrame:
    """arena-hard-auto ``model_judgment`` JSONL files (see the module docstring)."""
    if isinstance(strong_weight, bool) or not isinstance(strong_weight, (int, np.integer)) \
            or strong_weight < 1:
        raise WinrateInputError(f"arena_hard: strong_weight must be an integer >= 1, got "
                                f"{strong_weight!r}")
    parts = []
    dropped = _Dropped("arena_hard", "arena_hard")
    skipped = _Skipped("arena_hard", skip_malformed)
    unnamed = []  # files whose records name no baseline
    for path in _progress(files, "arena_hard"):
        records, positions, what = _read_records(path)
        prompt_key = _first_present(records, ("question_id", "uid"))
        if prompt_key is None:
            raise WinrateInputError(f"{path}: every record needs 'question_id' (or 'uid' "
                                    "in arena-hard v2)")
        rows = _fields(records, (prompt_key, "model", "judge", "games", "baseline"), path,
                       positions, what, required=("model", "games"))
        games = rows["games"]
        malformed = ~games.map(_two_games).to_numpy()
        keep = skipped.check(malformed, path, positions, what,
                             "'games' is not a list of two games (verdicts or null)")
        rows, games, positions = rows.loc[keep], games[keep], positions[keep]
        named = rows["baseline"].notna().to_numpy()
        clash = named & (rows["baseline"] != baseline).to_numpy() & (baseline is not None)
        if clash.any():
            raise WinrateInputError(f"{path}: {what}(s) {first_rows(clash, positions)} name "
                                    f"the baseline {rows['baseline'][clash].iloc[0]!r}, not "
                                    f"baseline={baseline!r}")
        if not named.all():
            unnamed.append(path)
        base = _text_ids(rows["baseline"].where(named, baseline), path, "baseline",
                         positions, what) if named.all() or baseline is not None else None
        if base is None:
            continue  # the missing baseline is reported below, once, naming the models
        judge = _text_ids(rows["judge"].where(rows["judge"].notna(), path.parent.name),
                          path, "judge", positions, what)
        prompt = _text_ids(rows[prompt_key], path, prompt_key, positions, what)
        model = _text_ids(rows["model"], path, "model", positions, what)
        for game, model_is_a in ((0, False), (1, True)):
            verdict = games.map(lambda g, k=game: g[k].get("score")
                                if isinstance(g[k], dict) else g[k])
            parts.append(_arena_game(verdict, model_is_a, prompt, judge, model, base,
                                     strong_weight, path, positions, what, game, dropped,
                                     skipped))
    _check_arena_baseline(files, unnamed, baseline, parts)
    dropped.warn()
    skipped.note()
    frame = _assemble(parts, "arena_hard")
    return frame if answers is None else _with_answer_style(frame, answers)


def _two_games(value) -> bool:
    return isinstance(value, list) and len(value) == 2 \
        and all(g is None or isinstance(g, (dict, str)) for g in value)


def _check_arena_baseline(files: Sequence[Path], unnamed: list[Path], baseline: str | None,
                          parts: list[pd.DataFrame]) -> None:
    """Records that name no baseline (arena-hard v0.1) need ``baseline=``, and it must be
    one of the judged models: arena-hard-auto judges the baseline against itself too, so
    its own file is among the judgments (a misspelt name would otherwise make the real
    baseline a contestant)."""
    if not unnamed:
        return
    if baseline is None:
        shown = ", ".join(p.name for p in unnamed[:_SHOW_FILES])
        raise WinrateInputError(
            f"arena_hard: the records of {len(unnamed)} file(s) ({shown}) name no baseline "
            f"(arena-hard v0.1): name the baseline model (option 'baseline'; arena-hard-v0.1's "
            f"is {ARENA_HARD_BASELINE}; v2 records name theirs)")
    models = sorted({m for part in parts for m in part["model_a"].astype(str).unique()})
    if baseline not in models:
        close = difflib.get_close_matches(baseline, models, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise WinrateInputError(
            f"arena_hard: baseline {baseline!r} is not among the judged models "
            f"({', '.join(models[:_SHOW_MODELS])}{', ...' if len(models) > _SHOW_MODELS else ''})"
            f"; arena-hard-auto judges the baseline against itself, so its file is among "
            f"the judgments{hint}")


def _arena_game(verdict: pd.Series, model_is_a: bool, prompt, judge, model, base,
                strong_weight: int, path: Path, positions, what: str, game: int,
                dropped: _Dropped, skipped: _Skipped) -> pd.DataFrame:
    """Rows of one game position: the model's score from the verdict on (A, B)."""
    known = verdict.map(lambda v: v in _ARENA_VERDICT if isinstance(v, str) else False)
    null = verdict.isna().to_numpy()
    unknown = ~known.to_numpy() & ~null
    if unknown.any() and not skipped.skip:
        shown = sorted({repr(v) for v in verdict[unknown]})[:5]
        raise WinrateInputError(f"{path}: game {game + 1}: unknown verdict "
                                f"{', '.join(shown)} in {what}(s) "
                                f"{first_rows(unknown, positions)} (expected one of "
                                f"{', '.join(_ARENA_VERDICT)} or null; skip_malformed=True "
                                "skips such games)")
    skipped.count(path, int(unknown.sum()))
    dropped.add(path, int(null.sum()), len(null))
    kept = ~null & ~unknown
    a_score = verdict[kept].map(lambda v: _ARENA_VERDICT[v][0]).to_numpy(float)
    strong = verdict[kept].map(lambda v: _ARENA_VERDICT[v][1]).to_numpy(bool)
    part = pd.DataFrame({
        "prompt_id": prompt[kept].to_numpy(),
        "judge_id": judge[kept].to_numpy(),
        "model_a": model[kept].to_numpy(),
        "model_b": base[kept].to_numpy(),
        "outcome": a_score if model_is_a else 1.0 - a_score,
    })
    if strong_weight != 1:
        part["count"] = np.where(strong, strong_weight, 1)
    return part


#: arena-hard-auto answer metadata (``conv_metadata`` in v0.1, ``metadata`` in v2): the
#: style feature and its key.
_ANSWER_STYLE = (("tokens", "token_len"), ("header_count", "header_count"),
                 ("list_count", "list_count"), ("bold_count", "bold_count"))


def _answer_counts(answers) -> pd.DataFrame:
    """The style counts of every answer under ``answers`` (arena-hard-auto's
    ``data/<bench>/model_answer/``): one row per (model, prompt_id)."""
    frames = []
    for path in _progress(find_files(answers), "arena_hard answers"):
        records, positions, what = _read_records(path)
        prompt_key = _first_present(records, ("question_id", "uid"))
        model_key = _first_present(records, ("model_id", "model"))
        meta_key = _first_present(records, ("conv_metadata", "metadata"))
        if None in (prompt_key, model_key, meta_key):
            raise WinrateInputError(f"{path}: an arena-hard answer record needs question_id "
                                    "(or uid), model_id (or model) and conv_metadata (or "
                                    "metadata) in every record")
        rows = _fields(records, (prompt_key, model_key, meta_key), path, positions, what)
        meta = rows[meta_key]
        counts = {feature: meta.map(lambda m, k=key: _style_count(m.get(k))
                                    if isinstance(m, dict) else np.nan).to_numpy(float)
                  for feature, key in _ANSWER_STYLE}
        bad = np.logical_or.reduce([~np.isfinite(c) | (c < 0) for c in counts.values()])
        if bad.any():
            raise WinrateInputError(f"{path}: {meta_key} lacks a count >= 0 of "
                                    f"{[k for _, k in _ANSWER_STYLE]} in {what}(s) "
                                    f"{first_rows(bad, positions)}")
        frames.append(pd.DataFrame({
            "model": _text_ids(rows[model_key], path, model_key, positions, what).to_numpy(),
            "prompt_id": _text_ids(rows[prompt_key], path, prompt_key, positions,
                                   what).to_numpy(), **counts}))
    return pd.concat(frames, ignore_index=True).drop_duplicates(["model", "prompt_id"],
                                                                keep="last")


def _with_answer_style(frame: pd.DataFrame, answers) -> pd.DataFrame:
    """``frame`` with LMArena's four style features of each (model, baseline) answer pair,
    ``style_difference`` of the counts (arena-hard-auto v0.1 ``show_result.py
    --style-control``: ``construct_style_matrices`` on the answers' ``conv_metadata``)."""
    counts = _answer_counts(answers).set_index(["model", "prompt_id"])
    prompt = frame["prompt_id"].astype(str)
    found = {}
    for side in ("model_a", "model_b"):
        key = pd.MultiIndex.from_arrays([frame[side].astype(str), prompt])
        where = counts.index.get_indexer(key)
        missing = where < 0
        if missing.any():
            pairs = sorted(set(zip(key.get_level_values(0)[missing],
                                   key.get_level_values(1)[missing], strict=True)))
            raise WinrateInputError(
                f"arena_hard answers: no answer metadata for {len(pairs)} (model, question) "
                f"pair(s), e.g. {', '.join(f'{m} on {q}' for m, q in pairs[:3])}")
        found[side] = counts.to_numpy(float)[where]
    style = {STYLE_PREFIX + feature: style_difference(found["model_a"][:, j],
                                                      found["model_b"][:, j])
             for j, (feature, _) in enumerate(_ANSWER_STYLE)}
    return frame.assign(**style)


# --------------------------------------------------------------------------- arena, mt_bench


def _read_arena(files: Sequence[Path], *, layout: str | None = None, both_bad: str = "tie",
                include_named: bool = False, dedup: bool = True) -> pd.DataFrame:
    """LMArena's public battle tables (:mod:`winrate.io.arena_layouts`)."""
    parts = arena_parts(files, layout=layout, both_bad=both_bad,
                        include_named=include_named, dedup=dedup)
    _check_same_columns(parts, files)
    return _assemble(parts, "arena")


def _read_mt_bench(files: Sequence[Path], *, games: str = "combined") -> pd.DataFrame:
    """MT-Bench pairwise judgment files (:mod:`winrate.io.arena_layouts`)."""
    parts = mt_bench_parts(files, games=games)
    _check_same_columns(parts, files)
    return _assemble(parts, "mt_bench")


_READERS: dict[str, Callable[..., pd.DataFrame]] = {
    "alpaca_eval": _read_alpaca_eval,
    "qlora": _read_qlora,
    "prd": _read_prd,
    "clean_battle": _read_clean_battle,
    "arena_hard": _read_arena_hard,
    "arena": _read_arena,
    "mt_bench": _read_mt_bench,
}
