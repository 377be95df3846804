"""Comparison logs: read, validate and integer-code pairwise judge comparisons.

A comparison log has one row per judged comparison: a prompt, a judge, two models and an
outcome. Columns are coded to integers once, here; everything downstream works on the
integer arrays of :class:`ComparisonLog`.

Outcome encodings accepted (per row, case-insensitive for the labels):

* ``"a"`` / ``"model_a"`` -> model_a won (score 1); ``"b"`` / ``"model_b"`` -> score 0;
  ``"tie"`` and LMArena's ``"tie (bothbad)"`` -> score 1/2;
* the winner's model name (must equal that row's model_a or model_b);
* numbers 1 / 0 / 0.5 (the score of model_a), as numbers or numeric strings; any number in
  [0, 1] is accepted as a graded preference for model_a (AlpacaEval 2's weighted judge gives
  ``P(model better)``; every estimator treats it as a fractional win, like a half tie).

Per-row numeric *features* (``feature_cols``) ride along with the log, e.g. style covariates
of the (a, b) difference for a Bradley-Terry fit with style control.
"""

from __future__ import annotations

import bz2
import difflib
import functools
import gzip
import json
import lzma
import os
import re
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from pandas._libs.parsers import STR_NA_VALUES

from winrate import notes
from winrate.constants import DEFAULT_COLUMNS
from winrate.errors import WinrateInputError, first_rows, listed

#: Outcome labels (lower case) and the score of model_a; LMArena's ``tie (bothbad)`` is a
#: tie, as FastChat's Elo and Bradley-Terry code counts it.
_LABEL_SCORES = {"a": 1.0, "model_a": 1.0, "b": 0.0, "model_b": 0.0, "tie": 0.5,
                 "tie (bothbad)": 0.5}


def factorize_groups(groups) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary group labels to dense codes ``0..G-1`` in O(n); return (codes, labels).

    Non-negative integer labels with a moderate range are compressed with a bincount
    (labels come out sorted); anything else (strings, negative or huge integers) is hashed
    by ``pandas.factorize`` (labels in order of appearance). Missing labels are an error.
    """
    labels = np.asarray(groups)
    if labels.ndim != 1:
        raise ValueError(f"groups must be 1-D, got shape {labels.shape}")
    if labels.dtype.kind in "iu" and labels.size:
        low, high = labels.min(), labels.max()
        if low >= 0 and high < max(4 * labels.size, 1 << 16):
            present = np.zeros(int(high) + 1, bool)
            present[labels] = True  # a third of a bincount's time over a wide range
            if present.all():
                return labels, np.arange(present.size)
            remap = np.cumsum(present) - 1
            return remap[labels], np.flatnonzero(present)
    if pd.isna(labels).any():
        raise ValueError("groups contain missing values; every row needs a cluster label")
    codes, uniques = pd.factorize(labels, sort=False)
    return codes.astype(np.int64), np.asarray(uniques)



@dataclass(frozen=True)
class ClusterAxis:
    """Integer codes ``0..G-1`` of one clustering of the rows, with the label of each code."""

    codes: np.ndarray
    labels: np.ndarray

    @property
    def n_clusters(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class ComparisonLog:
    """An integer-coded pairwise comparison log.

    Attributes
    ----------
    model_a, model_b : int32 arrays of codes into ``models`` (never equal within a row).
    score : float64 array, the half-tie score of model_a: 1 win, 1/2 tie, 0 loss (any
        value in [0, 1] for graded preferences).
    models : model names; code ``k`` is ``models[k]``.
    axes : clustering axes by name: ``"prompt"``, ``"judge"`` and any extra columns kept.
    frequency : optional float64 row weights; row r stands for ``frequency[r]`` identical
        comparisons (aggregated logs). None means every row is one comparison.
    features : numeric per-row covariates by name (float64 arrays of length n), e.g. style
        differences of the (a, b) answers; empty when none were read.
    notes : the notes given while the log was read (e.g. ``case-only-names``), kept so that
        an analysis of the log carries them in its ``notes`` (and so its JSON and summary).
    """

    model_a: np.ndarray
    model_b: np.ndarray
    score: np.ndarray
    models: np.ndarray
    axes: dict[str, ClusterAxis] = field(default_factory=dict)
    frequency: np.ndarray | None = None
    features: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple = ()

    @property
    def n_rows(self) -> int:
        return int(self.model_a.shape[0])

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_comparisons(self) -> float:
        """Number of comparisons the log stands for (the sum of frequencies)."""
        return float(self.frequency.sum()) if self.frequency is not None else float(self.n_rows)

    def __repr__(self) -> str:
        """One line: rows, comparisons, models and the clusters of each axis."""
        axes = ", ".join(f"{name}={axis.n_clusters:,}" for name, axis in self.axes.items())
        weighted = "" if self.frequency is None else f", comparisons={self.n_comparisons:,g}"
        features = f", features={sorted(self.features)}" if self.features else ""
        return (f"ComparisonLog(rows={self.n_rows:,}{weighted}, models={self.n_models}, "
                f"clusters: {axes or 'none'}{features})")

    @property
    def weight(self) -> np.ndarray:
        """Per-row frequency, ones when the log is unweighted."""
        return self.frequency if self.frequency is not None else np.ones(self.n_rows)

    @property
    def tie_share(self) -> float:
        """The share of the comparisons that are ties (score exactly 1/2)."""
        w = self.weight
        return float((w * (self.score == 0.5)).sum() / w.sum())

    @classmethod
    def from_arrays(cls, model_a, model_b, score, *, models=None, frequency=None,
                    features=None, **axes) -> ComparisonLog:
        """Build a log from already integer-coded arrays (the fast path for large logs).

        ``axes`` are named integer cluster codes (e.g. ``prompt=..., judge=...``); codes need
        not be dense. Validation is vectorised and cheap. Rows of frequency 0 stand for no
        comparison and are dropped (as in :func:`read_comparisons`), so a cluster made only
        of such rows is not counted.
        """
        a = np.asarray(model_a, dtype=np.int32)
        b = np.asarray(model_b, dtype=np.int32)
        s = np.asarray(score, dtype=np.float64)
        n = a.shape[0]
        if n == 0:
            raise WinrateInputError("the comparison log is empty")
        for name, arr in (("model_b", b), ("score", s)):
            if arr.shape != (n,):
                raise WinrateInputError(f"{name} has shape {arr.shape}, expected ({n},)")
        check_rows((a < 0) | (b < 0), "model_a/model_b", "negative model code", _positions(n))
        n_models = int(max(a.max(initial=-1), b.max(initial=-1))) + 1
        names = np.arange(n_models).astype(str) if models is None else np.asarray(models)
        if len(names) < n_models:
            raise WinrateInputError(f"model codes go up to {n_models - 1} but only "
                                    f"{len(names)} model names were given")
        check_rows(a == b, "model_a", "model_a equals model_b", _positions(n))
        check_rows(~((s >= 0) & (s <= 1)), "score", "score not in [0, 1]", _positions(n))
        freq, keep = None, slice(None)
        if frequency is not None:
            freq = _check_frequency(np.asarray(frequency, float), n)
            if not (freq > 0).all():
                keep = freq > 0
                freq = freq[keep]
        coded = {}
        for name, codes in axes.items():
            if codes is None:
                continue
            arr = np.asarray(codes)
            if arr.shape != (n,):
                raise WinrateInputError(f"axis {name!r} has shape {arr.shape}, expected ({n},)")
            coded[name] = ClusterAxis(*factorize_groups(arr[keep]))
        covariates = {name: _check_feature(np.asarray(values, dtype=float), name, n)[keep]
                      for name, values in (features or {}).items()}
        return cls(a[keep], b[keep], s[keep], names, coded, freq, covariates)


#: Scores per block of :attr:`ScoreTable.binary`'s check (a few MB of temporaries).
_BINARY_BLOCK = 1 << 18


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """A per-question eval kept as its questions x models score table: the comparison log
    it stands for, never built (:mod:`winrate.io.scores` reads one).

    On every question, every two models that answered it are compared once: the higher
    score wins, equal scores tie (half-tie score 1, 1/2, 0 of the first model). With 0/1
    scores a correct answer beats a wrong one and both right or both wrong is a tie, as
    in the pairwise log of ``read_dataset("mmlu_pro")``. The fits of a table
    (:mod:`winrate.estimators.win_rate_scores`) give what the pairwise log would give, from
    products of the table with (K, K) matrices, so a log of ``Q x K(K - 1) / 2``
    comparisons costs ``Q x K`` memory.

    Attributes
    ----------
    scores : (Q, K) float64 scores in [0, 1], NaN where the model did not answer; every
        question has at least two answers and every model at least one.
    models : (K,) model names; column k is ``models[k]``.
    axes : clustering axes of the questions by name (codes of length Q): ``"prompt"``
        (the question) and per-question columns (subject, source, a constant judge).
    """

    scores: np.ndarray
    models: np.ndarray
    axes: dict[str, ClusterAxis] = field(default_factory=dict)
    notes: tuple = ()  # as ComparisonLog.notes (none are given while reading a table today)

    #: a table stands for unweighted comparisons
    frequency = None

    @property
    def features(self) -> dict:
        """No per-comparison covariates."""
        return {}

    @functools.cached_property
    def answered(self) -> np.ndarray:
        """(Q, K) bool: the model answered the question."""
        return ~np.isnan(self.scores)

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_questions(self) -> int:
        return int(self.scores.shape[0])

    @functools.cached_property
    def n_rows(self) -> int:
        """Comparisons the table stands for: ``sum_q n_q (n_q - 1) / 2`` with ``n_q`` the
        answers to question q."""
        n_q = self.answered.sum(axis=1, dtype=np.int64)
        return int((n_q * (n_q - 1) // 2).sum())

    @property
    def n_comparisons(self) -> float:
        return float(self.n_rows)

    @functools.cached_property
    def binary(self) -> bool:
        """Every score is 0 or 1 (NaN: no answer); checked by blocks of questions, so no
        temporary as large as the table is made."""
        step = max(1, _BINARY_BLOCK // max(self.n_models, 1))
        return all(np.isin(block[~np.isnan(block)], (0.0, 1.0)).all()
                   for block in (self.scores[i:i + step]
                                 for i in range(0, self.n_questions, step)))

    @functools.cached_property
    def tie_share(self) -> float:
        """The share of the comparisons that are ties: per question, the pairs of equal
        scores, ``sum_v m_v (m_v - 1) / 2`` over the distinct values v held by ``m_v``
        models, counted on each row sorted (the run of equal values before each entry)."""
        ordered = np.sort(self.scores, axis=1)  # NaN last, and NaN != NaN starts a run
        column = np.arange(ordered.shape[1])
        new_run = np.ones(ordered.shape, bool)
        new_run[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        start = np.maximum.accumulate(np.where(new_run, column, 0), axis=1)
        return float((column - start).sum() / self.n_rows)

    def __repr__(self) -> str:
        axes = ", ".join(f"{name}={axis.n_clusters:,}" for name, axis in self.axes.items())
        kind = "binary" if self.binary else "graded"
        return (f"ScoreTable(questions={self.n_questions:,}, models={self.n_models}, {kind} "
                f"scores, comparisons={self.n_rows:,}, clusters: {axes or 'none'})")


@dataclass(frozen=True)
class GroupedRows:
    """The rows of a table that groups a source's rows (an engine's key table of pass 1):
    row r stands for ``counts[r]`` rows of ``source``. An engine numbers no source row, so
    an error on such a table counts source rows and shows the offending values instead."""

    counts: np.ndarray
    source: str


#: ``DataFrame.attrs`` key marking a frame of grouped rows: (row-count column, source name).
GROUPED = "winrate_grouped_rows"


def _rows_of(frame: pd.DataFrame):
    """How errors cite the rows of ``frame``: its index, or :class:`GroupedRows` when the
    frame groups a source's rows (:data:`GROUPED`)."""
    grouped = frame.attrs.get(GROUPED)
    if grouped is None:
        return frame.index
    count_col, source = grouped
    return GroupedRows(frame[count_col].to_numpy(np.int64), source)


def check_rows(bad: np.ndarray, column: str, problem: str, index, values=None) -> None:
    """Raise naming the column, the problem, the count, the offending ``values`` with their
    counts (when given) and the first offending rows, by the labels of ``index`` and what
    they are (its name; a DataFrame's: index labels); for :class:`GroupedRows`, the source
    and no row numbers."""
    if not bad.any():
        return
    counts = index.counts if isinstance(index, GroupedRows) else np.ones(bad.size, np.int64)
    shown = "" if values is None else f": {value_counts(values, bad, counts)}"
    if isinstance(index, GroupedRows):
        where = (f" of {index.source} (an engine groups the rows and numbers none of them: "
                 "find them by value)")
    else:
        where = f", first rows ({index.name or 'index labels'}): {first_rows(bad, index)}"
    raise WinrateInputError(f"column {column!r}: {problem} in {int(counts[bad].sum())} "
                            f"row(s){shown}{where}")


def value_counts(values, bad: np.ndarray, counts: np.ndarray | None = None,
                 unit: str = "row", limit: int = 5) -> str:
    """The offending values and the rows (``unit``) holding each, most frequent first:
    ``"'win' in 890 rows, 'lose' in 1 row"``; ``counts``: the rows each entry stands for
    (default one)."""
    counts = np.ones(bad.size, np.int64) if counts is None else counts
    shown = pd.Series(np.asarray(values, dtype=object)[bad]).map(repr)  # lists too
    offending = pd.Series(counts[bad]).groupby(shown.to_numpy()).sum()
    top = offending.sort_values(ascending=False, kind="stable")
    text = ", ".join(f"{value} in {int(n):,} {unit}{'' if n == 1 else 's'}"
                     for value, n in top.iloc[:limit].items())
    return text + (f", ... ({len(top)} values)" if len(top) > limit else "")


def _positions(n: int) -> pd.Index:
    """Row labels of array inputs: positions counted from 0."""
    return pd.RangeIndex(n, name="positions from 0")


def file_positions(path, n: int) -> pd.Index:
    """Row labels that find a row in its file: the line number in a CSV / TSV (after the
    header line) or JSON Lines file, else the row's position counted from 1."""
    fmt = table_format(path)
    first = {"csv": 2, "tsv": 2}.get(fmt, 1)
    unit = "file lines" if fmt in ("csv", "tsv", "jsonl") else "rows counted from 1"
    return pd.RangeIndex(first, first + n, name=unit)


def _check_frequency(freq: np.ndarray, n: int) -> np.ndarray:
    if freq.shape != (n,):
        raise WinrateInputError(f"frequency has shape {freq.shape}, expected ({n},)")
    check_rows(~np.isfinite(freq) | (freq < 0), "frequency",
                "frequency must be a finite number >= 0", _positions(n))
    if not (freq > 0).any():
        raise WinrateInputError("frequency: every row has frequency 0 (no comparisons)")
    return freq


def _check_feature(values: np.ndarray, name: str, n: int, index=None) -> np.ndarray:
    """A feature column must be a finite number in every row."""
    if values.shape != (n,):
        raise WinrateInputError(f"feature {name!r} has shape {values.shape}, expected ({n},)")
    check_rows(~np.isfinite(values), name, "feature is missing or not a finite number",
                _positions(n) if index is None else index)
    return values


_COMPRESSION = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def _read_delimited(path: Path, sep: str, text_cols) -> pd.DataFrame:
    """CSV/TSV with ``text_cols`` as text exactly as written: ``"007"`` stays ``"007"`` and
    ``"NA"`` / ``"None"`` are names; only an empty field is missing there. Other columns
    keep pandas' type inference and missing-value markers. Column names are the header's
    without surrounding whitespace (``prompt_id, judge_id``), as DuckDB reads them."""
    header = delimited_header(path, sep)
    text = [c for c in header if c in set(text_cols)]
    if not text:
        return pd.read_csv(path, sep=sep, header=0, names=header)
    missing = {c: [""] if c in text else sorted(STR_NA_VALUES) for c in header}
    return pd.read_csv(path, sep=sep, header=0, names=header, dtype=dict.fromkeys(text, str),
                       keep_default_na=False, na_values=missing)


class RepeatedHeader(WinrateInputError):
    """A delimited file whose header names a column twice (:func:`delimited_header`)."""


def delimited_header(path, sep: str) -> list[str]:
    """The column names of a delimited file's header line (:func:`header_names`), as
    written: a name that appears twice is an error naming it, where pandas would rename
    the second ``name.1`` and DuckDB ``name_1``, so that no engine picks a column the
    others do not."""
    first = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str,
                        keep_default_na=False).iloc[0]
    names = header_names(first)
    repeated = [name for name in dict.fromkeys(names) if names.count(name) > 1]
    if repeated:
        raise RepeatedHeader(f"{str(path)!r}: the header names {listed(repeated)} more "
                             "than once; give each column its own name")
    return names


def header_names(names) -> list[str]:
    """A delimited file's column names as every reader gives them: the header's text
    without surrounding whitespace."""
    return [str(name).strip() for name in names]


def _read_json(path: Path, lines: bool, text_cols, scalar_cols=()) -> pd.DataFrame:
    """JSON (Lines) without type guessing (``"007"`` is not the number 7); ``text_cols``
    holding JSON numbers become their text (:func:`id_text`: ``7`` and ``7.0`` are both
    ``"7"``); a list, object or true / false there, or a list or object in a
    ``scalar_cols`` column, is an error (its Python repr is no name or number)."""
    frame = pd.read_json(path, lines=lines, dtype=False)
    for col in (c for c in dict.fromkeys((*text_cols, *scalar_cols)) if c in frame.columns):
        values = frame[col]
        nested = values.map(_not_a_name if col in text_cols else _nested).to_numpy(bool)
        if nested.any():
            belongs = "a name or id" if col in text_cols else "a number"
            raise WinrateInputError(f"{str(path)!r}: column {col!r} holds a list, object or "
                                    f"true/false where {belongs} belongs, in row(s) "
                                    f"{first_rows(nested)} (counted from 0)")
        if col in text_cols:
            frame[col] = id_text(values)
    return frame


def _nested(value) -> bool:
    return isinstance(value, (list, dict, np.ndarray))


def _not_a_name(value) -> bool:
    return _nested(value) or isinstance(value, (bool, np.bool_))


def id_text(values: pd.Series) -> pd.Series:
    """Ids and names as text, the same rule in every reader: a string as written, a number
    as its shortest text with an integral float as an integer (JSON ``7`` and ``7.0``, or a
    Parquet float column's ``7.0``, are all ``"7"``); missing values stay missing. Each
    distinct value is converted once."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    text = np.array([_one_id(v) for v in uniques], dtype=object)
    return pd.Series(np.where(codes >= 0, text[codes] if text.size else None, None),
                     index=values.index, dtype=object)


def _one_id(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


#: A Parquet column whose dictionary pages take at most this many bytes (a few thousand
#: names) is read through its dictionaries (:func:`_read_parquet`).
_SMALL_DICTIONARY = 1 << 16


def _read_parquet(path: Path, coded_cols, scalar_cols=(), text_cols=()) -> pd.DataFrame:
    """A Parquet file with its string columns among ``coded_cols`` as pandas Categoricals
    (and float columns among ``text_cols`` as ids, :func:`id_text`).

    The codes come from Arrow's dictionary encoding, not from hashing Python strings: a
    column with few distinct values (every row group's dictionary page at most
    :data:`_SMALL_DICTIONARY` bytes) is read through the file's own dictionaries, unified
    across row groups, so its strings are never materialised row by row; any other string
    column is read as text and hashed once by ``pyarrow.compute.dictionary_encode``. Other
    columns convert as ``pandas.read_parquet`` would.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(path)
    schema, meta = source.schema_arrow, source.metadata
    names = data_columns(schema)
    nested = [name for name in dict.fromkeys((*coded_cols, *scalar_cols))
              if name in schema.names and pa.types.is_nested(schema.field(name).type)]
    if nested:
        raise WinrateInputError(f"{str(path)!r}: column(s) {listed(nested)} hold lists or structs "
                                f"({schema.field(nested[0]).type}) where a name, id or "
                                "number belongs")
    textual = _string_columns(schema, coded_cols)
    small = [name for name in textual if _small_dictionaries(meta, name)]
    table = pq.read_table(path, columns=names, read_dictionary=small)
    frame = table.drop_columns(textual).to_pandas(ignore_metadata=True)
    for name in textual:
        frame[name] = _categorical(table.column(name), name in small)
    for name in (c for c in text_cols if c in frame.columns and c not in textual):
        if pd.api.types.is_float_dtype(frame[name]):
            frame[name] = id_text(frame[name])  # a float id column: 7.0 is the id "7"
    frame = frame[names]
    del table
    release_arrow_memory()
    return frame


def release_arrow_memory() -> None:
    """Hand the memory Arrow's pool keeps after a read back to the system.

    Arrow's default pool (mimalloc) keeps what a read freed for Arrow's next allocation,
    so the arrays numpy makes next, for the analysis, come from pages the process never
    touched. On a virtual machine whose host reclaims the guest's free pages (a balloon
    driver), a fresh page costs a host fault: touching 480 MB took 0.55-0.74 s the first
    time in a fresh process against 0.03 s the second. Released here, the freed pages are
    the ones numpy gets next. Called once a reader has dropped an Arrow table
    (:func:`_read_parquet`) and once it has dropped the frame made from one
    (:func:`read_comparisons`): a frame's text and category codes can be Arrow's buffers.
    The 5M-row CLI bench run (``scripts/bench.py --only cli``) peaked at 1.10 GB instead
    of 1.43-1.46 GB and took 1.66-1.76 s instead of 1.97-2.45 s (three fresh processes
    each); the call takes about 2 ms."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _categorical(column, small: bool) -> pd.Categorical:
    """A string column (Arrow ``ChunkedArray``) as a pandas Categorical of its dictionary
    codes (:func:`_dictionary_coded`); the Arrow arrays made on the way are freed on
    return."""
    import pyarrow.compute as pc

    coded = _dictionary_coded(column, small)
    codes = pc.fill_null(coded.indices, -1).to_numpy(zero_copy_only=False)
    # Arrow's codes index its dictionary, whose values are unique and not null, by
    # construction: no check over the rows, nor over the labels
    dtype = _known_categories(coded.dictionary.to_pandas())
    return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)


def _known_categories(labels: pd.Series) -> pd.CategoricalDtype:
    """The categorical dtype of labels known to be unique and not null (an Arrow
    dictionary's): pandas' constructor hashes them all again to check (0.02 s for 500k
    prompts); its fast path, where this pandas has it, takes them as they are."""
    fast = getattr(pd.CategoricalDtype, "_from_fastpath", None)
    return pd.CategoricalDtype(labels) if fast is None else fast(pd.Index(labels))


def _string_columns(schema, names) -> list[str]:
    """The columns among ``names`` that an Arrow ``schema`` types as (large) strings."""
    import pyarrow as pa

    return [name for name in dict.fromkeys(names) if name in schema.names
            and (pa.types.is_string(schema.field(name).type)
                 or pa.types.is_large_string(schema.field(name).type))]


def _dictionary_coded(column, small: bool):
    """A string column (Arrow ``ChunkedArray``) as one ``DictionaryArray``: read through
    the file's dictionaries (``small``), unified across row groups, or else hashed once
    (:func:`dictionary_encoded`; :func:`_read_parquet`)."""
    return (column.unify_dictionaries() if small
            else dictionary_encoded(column)).combine_chunks()


#: Rows from which :func:`dictionary_encoded` hashes a column's parts in threads.
_THREADED_ENCODE_ROWS = 1 << 20


def dictionary_encoded(column):
    """``pyarrow.compute.dictionary_encode(column)`` (a ``ChunkedArray``), its rows hashed
    in one contiguous part per core when there are many: each part is encoded in a thread
    (Arrow's kernels release the interpreter) and the parts' dictionaries unified, the
    first part's kept and each later part's new values appended in order, so the
    dictionary is the column's values in order of first appearance and the codes are
    those of one call. On the development machine's two cores the CLI's read of a 5M-row
    log with 500k distinct prompts went from 2.9-3.0 s to 2.4-2.6 s."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from winrate.parallel import usable_cores

    parts = min(usable_cores(), len(column) // _THREADED_ENCODE_ROWS)
    if parts <= 1:
        return pc.dictionary_encode(column)
    from concurrent.futures import ThreadPoolExecutor

    bounds = [len(column) * i // parts for i in range(parts + 1)]
    slices = [column.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:], strict=False)]
    with ThreadPoolExecutor(parts) as pool:
        encoded = list(pool.map(lambda part: pc.dictionary_encode(part).combine_chunks(),
                                slices))
    return pa.chunked_array(encoded).unify_dictionaries()


def parquet_codes(path, coded_cols, scalar_cols):
    """The string columns ``coded_cols`` of a Parquet file as Arrow's dictionary codes
    (int32) and their labels (object array), and its number columns ``scalar_cols`` as
    arrays, with no pandas frame and no copy of the codes into one array: ``(labels,
    batches)``, the labels by column and, per record batch, each column's codes or
    numbers. The codes and labels are those :func:`read_table` and :func:`code_column`
    give such columns, in the same order, but labels no row uses are kept (the caller
    drops them). None when the file is not Parquet or a column is absent, of another
    type or holds a missing value: :func:`read_table` then reads it with its checks and
    errors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, coded_cols = Path(path), list(dict.fromkeys(coded_cols))
    if not path.is_file() or table_format(path) != "parquet":
        return None
    try:
        source = pq.ParquetFile(path)
        schema, meta = source.schema_arrow, source.metadata
        numeric = [name for name in scalar_cols if name in schema.names
                   and (pa.types.is_integer(schema.field(name).type)
                        or pa.types.is_floating(schema.field(name).type))]
        if _string_columns(schema, coded_cols) != coded_cols or numeric != list(scalar_cols):
            return None
        small = [name for name in coded_cols if _small_dictionaries(meta, name)]
        table = pq.read_table(path, columns=[*coded_cols, *scalar_cols], read_dictionary=small)
    except _READ_ERRORS:
        return None
    if table.num_rows == 0 or any(column.null_count for column in table.columns):
        return None
    for name in coded_cols:  # one dictionary shared by the column's chunks
        column = table.column(name)
        table = table.set_column(table.schema.get_field_index(name), name, (
            column if name in small else dictionary_encoded(column)).unify_dictionaries())
    labels = {name: np.asarray(pd.CategoricalDtype(
        table.column(name).chunk(0).dictionary.to_pandas()).categories)
        for name in coded_cols if table.column(name).num_chunks}
    batches = [{name: (batch.column(name).indices if name in labels else batch.column(name)
                       ).to_numpy() for name in (*coded_cols, *scalar_cols)}
               for batch in table.to_batches()]
    return labels, batches


#: The column pandas writes for an unnamed index level (``df[mask].to_parquet(path)``).
_UNNAMED_INDEX = re.compile(r"__index_level_\d+__")


def data_columns(schema) -> list[str]:
    """The columns of a Parquet file's Arrow ``schema`` that hold data: all but those pandas
    wrote for an unnamed index, which its metadata (the ``pandas`` key, ``index_columns``)
    lists as row labels. A named index (``df.set_index("prompt_id")``) is data under its
    name, as DuckDB and Spark read it; a RangeIndex is metadata only, no column."""
    index = (schema.pandas_metadata or {}).get("index_columns", [])
    labels = {c for c in index if isinstance(c, str) and _UNNAMED_INDEX.fullmatch(c)}
    return [name for name in schema.names if name not in labels]


def is_row_label(column: str) -> bool:
    """Whether ``column`` is a name pandas gives an unnamed index level (not data)."""
    return bool(_UNNAMED_INDEX.fullmatch(str(column)))


def _small_dictionaries(meta, name: str) -> bool:
    """Every row group of column ``name`` has a dictionary page of at most
    :data:`_SMALL_DICTIONARY` bytes (few distinct values)."""
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        chunk = next(group.column(j) for j in range(group.num_columns)
                     if group.column(j).path_in_schema == name)
        if not chunk.has_dictionary_page or chunk.dictionary_page_offset is None:
            return False
        if chunk.data_page_offset - chunk.dictionary_page_offset > _SMALL_DICTIONARY:
            return False
    return True


def _read(path: Path, fmt: str, text_cols, coded_cols=(), scalar_cols=()) -> pd.DataFrame:
    if fmt in SEPARATORS:
        frame = _read_delimited(path, SEPARATORS[fmt], text_cols)
        check_separator(path, frame.columns)
        return frame
    if fmt in ("json", "jsonl"):
        return _read_json(path, fmt == "jsonl", text_cols, scalar_cols)
    return _read_parquet(path, coded_cols, scalar_cols, text_cols)


def _open_binary(path: Path):
    """The file's lines as bytes, decompressed by extension."""
    opener = _COMPRESSION.get(path.suffix.lower(), open)
    return opener(path, "rb")


def _first_bad_line(path: Path, check) -> tuple[int, bytes] | None:
    """``(line number, line)`` of the first line where ``check(line)`` raises, else None.

    Only run after a reader failed, to name the line in the error message."""
    with _open_binary(path) as handle:
        for number, line in enumerate(handle, start=1):  # error path only
            try:
                check(line)
            except ValueError:
                return number, line
    return None


def _not_utf8(path: Path) -> WinrateInputError:
    bad = _first_bad_line(path, lambda line: line.decode("utf-8"))
    where = "" if bad is None else f" (line {bad[0]}: {bad[1][:40]!r})"
    return WinrateInputError(f"{str(path)!r} is not UTF-8 text{where}; save it as UTF-8 "
                             "(e.g. iconv -f latin1 -t utf-8) and retry")


def _json_object(line: bytes) -> None:
    """A JSON Lines line: blank, or one JSON object (ValueError otherwise)."""
    if line.strip() and not isinstance(json.loads(line), dict):
        raise ValueError("not a JSON object")


def _bad_json(path: Path, fmt: str, error: Exception) -> WinrateInputError:
    if fmt == "jsonl":
        bad = _first_bad_line(path, _json_object)
        if bad is not None:
            text = bad[1].decode("utf-8", "replace").strip()
            return WinrateInputError(f"{str(path)!r}: line {bad[0]} is not a valid JSON "
                                     f"object: {text[:60]!r}")
    return WinrateInputError(f"cannot read {str(path)!r} as {fmt.upper()}: "
                             f"{_first_line(error)}")


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else error.__class__.__name__


def compression_of(path) -> str:
    """The compression suffix of ``path`` that the readers undo (``.gz``, ``.bz2``,
    ``.xz``), or ``""``."""
    suffix = Path(path).suffix.lower()
    return suffix if suffix in _COMPRESSION else ""


def table_format(path) -> str:
    """``csv``, ``tsv``, ``jsonl``, ``json`` or ``parquet`` from the extension (``.gz``,
    ``.bz2``, ``.xz`` ignored)."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in _COMPRESSION]
    fmt = _FORMATS.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        raise WinrateInputError(
            f"cannot tell the format of {str(path)!r}: use one of {sorted(_FORMATS)} "
            "(optionally .gz)"
        )
    return fmt


def read_table(path, text_cols=(), coded_cols=(), scalar_cols=()) -> pd.DataFrame:
    """Read a CSV/TSV, JSON Lines, JSON or Parquet file, chosen by extension (``.gz`` ok).

    ``text_cols`` (id and name columns) are read as text exactly as written: in CSV, prompt
    ids ``"007"`` and ``"7"`` stay distinct and a model named ``"NA"`` or ``"None"`` is not
    missing (only an empty field is). JSON is read without type guessing. Parquet string
    columns among ``coded_cols`` come back as Categoricals coded by Arrow's dictionary
    encoding (:func:`_read_parquet`), so they need no further factorising. A list or
    object in a column of ``text_cols``, ``coded_cols`` or ``scalar_cols`` (a JSON array, a
    Parquet list column) is an error naming the column. Any problem
    with the file (missing, a directory, empty, not UTF-8, malformed) is a
    :class:`WinrateInputError` naming the file, never a pandas or pyarrow exception.
    """
    path = Path(path)
    fmt = table_format(path)
    if not path.exists():
        raise WinrateInputError(f"file not found: {str(path)!r}")
    if path.is_dir():
        raise WinrateInputError(f"{str(path)!r} is a directory, not a {fmt.upper()} file")
    if path.stat().st_size == 0:
        raise WinrateInputError(f"{str(path)!r} is empty (0 bytes)")
    try:
        return _read(path, fmt, text_cols, coded_cols, scalar_cols)
    except _READ_ERRORS as error:
        raise _reading_error(path, fmt, error) from None


#: What pandas and pyarrow raise on a file they cannot read (:func:`_reading_error`).
_READ_ERRORS = (ValueError, TypeError, OSError, EOFError, ImportError)


def _reading_error(path: Path, fmt: str, error: Exception) -> Exception:
    """The one-line error for a file a reader failed on (``error``): the file, and the line
    where one can be found. A TypeError outside JSON (a bug, not the file) is returned as
    it is; a WinrateInputError passes through."""
    if isinstance(error, WinrateInputError):
        return error
    if isinstance(error, UnicodeDecodeError):
        return _not_utf8(path)
    if isinstance(error, pd.errors.EmptyDataError):
        return WinrateInputError(f"{str(path)!r} has no columns (an empty {fmt.upper()} file)")
    if fmt in ("json", "jsonl") and isinstance(error, (ValueError, TypeError)):
        return _bad_json(path, fmt, error)  # pandas raises TypeError on [1, 2]
    if isinstance(error, TypeError):
        return error
    return WinrateInputError(f"cannot read {str(path)!r} as {fmt.upper()}: "
                             f"{_first_line(error)}")


def check_delimited(path) -> None:
    """Read a CSV / TSV file chunk by chunk as :func:`read_table` reads it, keeping nothing:
    raise :func:`read_table`'s error for it (the same text, with the file's line), or return
    when it reads. An engine that failed on a file calls this to say what the in-memory
    reader says of it."""
    path = Path(path)
    fmt = table_format(path)
    try:
        for _ in pd.read_csv(path, sep=SEPARATORS[fmt], dtype=str, keep_default_na=False,
                             chunksize=1 << 16):
            pass
    except _READ_ERRORS as error:
        raise _reading_error(path, fmt, error) from None


def table_columns(path) -> list[str] | None:
    """The data columns of a CSV / TSV (its header line) or Parquet file (its schema, less
    pandas' unnamed index columns) without reading its rows; None for JSON, or a file that
    cannot be read so (:func:`read_table` then says why). A delimited file whose header is
    one column that looks separated by another character is an error saying which."""
    path = Path(path)
    try:
        fmt = table_format(path)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return data_columns(pq.read_schema(path))
        if fmt in SEPARATORS:
            names = readable_header(path, SEPARATORS[fmt])
            if names is not None:
                check_separator(path, names)
            return names
    except _HEADER_ERRORS:
        return None
    return None


#: What reading a file's header may raise when the file cannot be read so.
_HEADER_ERRORS = (OSError, ValueError, UnicodeDecodeError, EOFError, pd.errors.ParserError)


def readable_header(path, sep: str) -> list[str] | None:
    """:func:`delimited_header`, or None when the file cannot be read so (its reader then
    says why); a repeated name is the error on every path and engine."""
    try:
        return delimited_header(path, sep)
    except RepeatedHeader:
        raise
    except _HEADER_ERRORS:
        return None


#: The separator of each delimited format.
SEPARATORS = {"csv": ",", "tsv": "\t"}
#: Separators a file read as one column may have instead, by name.
_OTHER_SEPARATORS = {"\t": "tab", ";": "semicolon", "|": "pipe", ",": "comma"}


def check_separator(source, names) -> None:
    """An error when a delimited file read with its format's separator gives one column
    whose name holds another separator (a semicolon-separated ``.csv``, a tab-separated
    ``.csv``): it names the separator the header looks separated by."""
    if len(names) != 1:
        return
    header = str(names[0])
    found = max(_OTHER_SEPARATORS, key=header.count)
    if not header.count(found):
        return
    raise WinrateInputError(
        f"{str(source)!r} reads as one column ({header[:60]!r}); its header looks "
        f"{_OTHER_SEPARATORS[found]}-separated ({found!r}): save it comma-separated as .csv "
        "or tab-separated as .tsv")


def _factorize(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes (-1 for missing; a signed integer type, as narrow as a categorical's) and
    uniques; categoricals reuse their codes, with unused categories dropped (they are not
    clusters) by a bincount, in category order."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        categories = np.asarray(series.cat.categories)
        present = codes if codes.min(initial=0) >= 0 else codes[codes >= 0]
        used = np.bincount(present, minlength=categories.size) > 0
        if used.all():
            return codes, categories
        remap = np.append(np.cumsum(used) - 1, -1)  # code -1 (missing) stays -1
        return remap[codes], categories[used]
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False), np.asarray(uniques)


def code_column(frame: pd.DataFrame, column: str, rows) -> ClusterAxis:
    """A cluster column's codes and labels. Labels of mixed types (the number 7 and the
    text "7" in one column) are ids in their text form (:func:`id_text`), so that one id
    is one cluster whatever its type."""
    codes, uniques = _factorize(frame[column])
    check_rows(codes < 0, column, "missing value", rows)
    if pd.api.types.infer_dtype(uniques, skipna=True).startswith("mixed"):
        merged, uniques = pd.factorize(_texts(uniques))
        codes = merged[codes]
    return ClusterAxis(codes.astype(np.int64, copy=False), uniques)


def _texts(values: np.ndarray) -> np.ndarray:
    """Distinct ids as text, the rule of :func:`id_text` (one call per distinct value)."""
    return np.array([_one_id(v) for v in values], dtype=object)


def _code_models(frame: pd.DataFrame, col_a: str, col_b: str, rows):
    """Code model_a and model_b into one sorted list of model names, each in its text
    form (:func:`id_text`): the integer 1 in one column and the text "1" in the other are
    one model, on every reader and engine, whatever types the columns were read as."""
    a_codes, a_names = _factorize(frame[col_a])
    b_codes, b_names = _factorize(frame[col_b])
    check_rows(a_codes < 0, col_a, "missing value", rows)
    check_rows(b_codes < 0, col_b, "missing value", rows)
    a_names, b_names = _texts(a_names), _texts(b_names)
    models = np.array(sorted(set(a_names.tolist()) | set(b_names.tolist())), dtype=object)
    index = pd.Index(models)
    a = index.get_indexer(a_names).astype(np.int32)[a_codes]
    b = index.get_indexer(b_names).astype(np.int32)[b_codes]
    same = a == b
    if same.any():  # the names of every row only then
        check_rows(same, col_a, f"the same model in {col_a!r} and {col_b!r}", rows,
                    values=models[a])
    _flag_similar_names(models)
    return a, b, models


def _flag_similar_names(models: np.ndarray) -> None:
    """Notes for model names that print alike but are different models here (names are
    kept as written): ``similar-names`` for names that differ only by surrounding
    whitespace or Unicode normal form (``"gpt4"`` and ``"gpt4 "``; NFC and NFD accents),
    ``case-only-names`` for names that differ only in case (``"GPT-4"`` and ``"gpt-4"``)."""
    names = pd.Series([str(m) for m in models])
    form = names.map(lambda name: unicodedata.normalize("NFC", name.strip()))
    alike = _alike(names, form)
    if alike:
        notes.emit(notes.similar_names(alike))
    cased = _alike(form.drop_duplicates(), form.drop_duplicates().str.casefold())
    if cased:
        notes.emit(notes.case_only_names(cased))


def _alike(names: pd.Series, key: pd.Series) -> list[list[str]]:
    """Groups of two or more ``names`` that share a ``key``, each in name order."""
    groups = names.groupby(key.to_numpy(), sort=True).agg(sorted)
    return [group for group in groups if len(group) > 1]


def _score_from_labels(series: pd.Series, a: np.ndarray, b: np.ndarray,
                       models: np.ndarray, column: str) -> np.ndarray:
    """Scores of an outcome column of labels, numbers or winners' names, each distinct
    value mapped once.

    A value can be both a label (``a``, ``b``, ``model_a``, ``model_b``, ``tie``, or a
    number) and a model's name. Where the two readings agree (or only one applies) the
    row is clear. Where they disagree, the column's content decides: read as winners'
    names if every row names one of its own two models or is a tie, as labels if every
    row is a label; if both hold, the column is ambiguous and refused. A resolved clash is
    said in a note (``outcome-labels``).
    """
    codes, uniques = _factorize(series)
    text = pd.Series([str(value).strip() for value in uniques], dtype=object)
    label_score = np.array(text.str.lower().map(_LABEL_SCORES), dtype=float)
    number = pd.to_numeric(text, errors="coerce").to_numpy(float)
    numeric = np.isnan(label_score) & (number >= 0) & (number <= 1)
    label_score[numeric] = number[numeric]
    label_model = pd.Index(models.astype(str)).get_indexer(text)
    by_label = np.where(codes >= 0, label_score[codes], np.nan)
    if (label_model < 0).all():  # no value is a model's name
        return by_label
    winner = np.where(codes >= 0, label_model[codes], -1)
    by_name = np.where(winner == a, 1.0, np.where(winner == b, 0.0, np.nan))
    clash = ~np.isnan(by_label) & ~np.isnan(by_name) & (by_label != by_name)
    if not clash.any():
        return np.where(np.isnan(by_name), by_label, by_name)
    tie = np.where(codes >= 0, (text.str.lower() == "tie").to_numpy()[codes], False)
    names_fit = bool((~np.isnan(by_name) | (tie & (winner < 0))).all())
    labels_fit = bool((~np.isnan(by_label)).all())
    both = sorted(set(text[(label_model >= 0) & ~np.isnan(label_score)]))
    if names_fit == labels_fit:
        raise WinrateInputError(
            f"column {column!r}: the value(s) {both} are both outcome labels and model names, "
            f"and the column reads either way ({int(clash.sum())} row(s) differ); give "
            "outcomes as 1 / 0 / 0.5 (the score of model_a), or rename those models")
    notes.emit(notes.outcome_labels(column, both, names_fit, int(clash.sum())))
    return by_name if names_fit else by_label


def _parse_outcome(frame: pd.DataFrame, column: str, a, b, models, rows) -> np.ndarray:
    series = frame[column]
    check_rows(series.isna().to_numpy(), column, "missing value", rows)
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if numeric and not _numbers_name_models(series, models):
        score = series.to_numpy(dtype=float)
        check_rows(~((score >= 0) & (score <= 1)), column, _OUT_OF_RANGE, rows, values=score)
        return score
    if _may_hold_objects(series):
        check_rows(series.map(lambda v: isinstance(v, (list, dict))).to_numpy(bool),
                    column, "a list or object, not an outcome", rows)
    if numeric:  # numbers that are also model names: read them as text, by content
        series = id_text(series)
    score = _score_from_labels(series, a, b, models, column)
    unknown = np.isnan(score)
    if unknown.any():  # numbers as text (CSV on an engine) outside [0, 1]: as read as numbers
        values = series.to_numpy()  # only here: every row of a column of text is costly
        number = np.full(score.shape, np.nan)
        number[unknown] = pd.to_numeric(pd.Series(values[unknown]).astype(str),
                                        errors="coerce")
        check_rows(~np.isnan(number), column, _OUT_OF_RANGE, rows, values=number)
        check_rows(unknown, column,
                    "unknown outcome (expected a/b/tie, model_a/model_b, 1/0/0.5 or the name "
                    "of that row's model_a or model_b)", rows, values=values)
    return score


_OUT_OF_RANGE = "numeric outcome not in [0, 1] (1 win of model_a, 0 loss, 0.5 tie)"


def _may_hold_objects(series: pd.Series) -> bool:
    """Whether a column may hold lists or dicts: not when pandas' C-level type inference
    finds only strings (or the column is categorical over strings), which spares the
    per-row check on the common case."""
    values = series.cat.categories if isinstance(series.dtype, pd.CategoricalDtype) else series
    return pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty")


def _numbers_name_models(series: pd.Series, models: np.ndarray) -> bool:
    """Whether a numeric outcome column holds a number that is also a model's name (models
    ``0`` and ``1``)."""
    values = id_text(pd.Series(pd.unique(series.to_numpy())))
    return bool(pd.Index(models.astype(str)).isin(values).any())


def _require_columns(frame: pd.DataFrame, columns: dict[str, str | None]) -> None:
    missing = [col for col in columns.values() if col is not None and col not in frame.columns]
    if missing:
        raise columns_not_found(missing, list(frame.columns))


def columns_not_found(missing: list[str], names: list, what: str = "the log",
                      source=None) -> WinrateInputError:
    """The error for columns a source lacks: each with the closest name it has ("did you
    mean 'prompt_id'?", :func:`difflib.get_close_matches`), and the columns it has (pandas'
    unnamed index columns left out); a ``source`` file read as one column says which
    separator its header looks like instead (:func:`check_separator`)."""
    names = [str(n) for n in names if not is_row_label(n)]
    if source is not None and not isinstance(source, pd.DataFrame):
        check_separator(source, names)
    guesses = {col: difflib.get_close_matches(str(col), names, n=1, cutoff=0.6)
               for col in missing}
    hints = "; ".join(f"{col!r}: did you mean {found[0]!r}?"
                      for col, found in guesses.items() if found)
    label = "column" if len(missing) == 1 else "columns"
    return WinrateInputError(f"{label} {listed(missing)} not found"
                             f"{f' ({hints})' if hints else ''}; {what} has columns "
                             f"{listed(names, limit=30)}")


def read_comparisons(
    source,
    *,
    prompt_col: str | None = DEFAULT_COLUMNS["prompt"],
    judge_col: str | None = DEFAULT_COLUMNS["judge"],
    model_a_col: str = DEFAULT_COLUMNS["model_a"],
    model_b_col: str = DEFAULT_COLUMNS["model_b"],
    outcome_col: str = DEFAULT_COLUMNS["outcome"],
    weight_col: str | None = None,
    cluster_cols: tuple[str, ...] = (),
    feature_cols: tuple[str, ...] = (),
) -> ComparisonLog:
    """Read a comparison log from a DataFrame or a CSV / JSONL / Parquet file.

    The prompt and judge columns are optional when left at their default names: a log
    without ``judge_id`` has one judge, one without ``prompt_id`` cannot be clustered by
    prompt. A column named explicitly must exist. ``weight_col`` holds frequency weights
    (a row stands for that many identical comparisons); rows of weight 0 are dropped.
    Fractional weights are allowed and enter every formula as they are (a row of weight
    0.5 is half a comparison; the report prints the unrounded sum); only the unclustered
    row jackknife and bootstrap, which resample comparisons, need whole numbers.
    ``cluster_cols`` are kept as further clustering axes under their own names;
    ``feature_cols`` are numeric per-row covariates (``ComparisonLog.features``). From a
    file, the id and model columns are read as text exactly as written (:func:`read_table`).
    The notes given while reading are emitted and kept on the log (``notes``).
    """
    columns = {"prompt_col": prompt_col, "judge_col": judge_col, "model_a_col": model_a_col,
               "model_b_col": model_b_col, "outcome_col": outcome_col,
               "weight_col": weight_col, "cluster_cols": cluster_cols,
               "feature_cols": feature_cols}
    with notes.gathered() as reading:
        log = _read_comparisons(source, **columns)
    if not isinstance(source, pd.DataFrame):
        release_arrow_memory()  # the file's frame is gone: its Arrow buffers too
    for note in reading:
        notes.emit(note)
    return replace(log, notes=tuple(reading))


def _read_comparisons(source, *, prompt_col, judge_col, model_a_col, model_b_col,
                      outcome_col, weight_col, cluster_cols, feature_cols) -> ComparisonLog:
    """:func:`read_comparisons` without its note handling."""
    if isinstance(source, pd.DataFrame):
        frame, name = source, "the comparison log"
    else:
        text = (prompt_col, judge_col, model_a_col, model_b_col, *cluster_cols)
        frame = read_table(source, text_cols=text, coded_cols=(*text, outcome_col),
                           scalar_cols=(weight_col, *feature_cols))
        frame.index = file_positions(source, len(frame))
        name = f"{str(source)!r}"
    if frame.empty:
        raise empty_log(name)
    prompt_col = _optional_default(frame, prompt_col, "prompt")
    judge_col = _optional_default(frame, judge_col, "judge")
    _require_columns(frame, {"model_a": model_a_col, "model_b": model_b_col,
                             "outcome": outcome_col, "prompt": prompt_col,
                             "judge": judge_col, "weight": weight_col,
                             **{c: c for c in (*cluster_cols, *feature_cols)}})
    frequency = None
    if weight_col is not None:
        weights = pd.to_numeric(frame[weight_col], errors="coerce").to_numpy(float)
        check_rows(~np.isfinite(weights) | (weights < 0), weight_col,
                    "weight must be a finite number >= 0", _rows_of(frame))
        frame = frame.loc[weights > 0]
        frequency = weights[weights > 0]
        if frame.empty:
            raise all_weights_zero(weight_col)
    rows = _rows_of(frame)
    a, b, models = _code_models(frame, model_a_col, model_b_col, rows)
    score = _parse_outcome(frame, outcome_col, a, b, models, rows)
    roles = {"prompt": prompt_col, "judge": judge_col, **{c: c for c in cluster_cols}}
    axes = {name: code_column(frame, col, rows) for name, col in roles.items()
            if col is not None}
    features = {col: _check_feature(pd.to_numeric(frame[col], errors="coerce").to_numpy(float),
                                    col, len(frame), rows) for col in feature_cols}
    return ComparisonLog(a, b, score, models, axes, frequency, features)


def all_weights_zero(column: str) -> WinrateInputError:
    """The error for a log whose every row has weight 0 (the same on every engine)."""
    return WinrateInputError(f"column {column!r}: every row has weight 0")


def empty_log(name: str) -> WinrateInputError:
    """The error for a log with no rows, ``name`` its source (the same on every engine)."""
    return WinrateInputError(f"{name} is empty: it has no rows")


def as_log(source) -> ComparisonLog | ScoreTable:
    """``source`` as a :class:`ComparisonLog`: a log (or a :class:`ScoreTable`) as it is; a
    DataFrame or a CSV / JSONL / Parquet path through :func:`read_comparisons` with the
    default column names."""
    if isinstance(source, (ComparisonLog, ScoreTable)):
        return source
    if isinstance(source, (pd.DataFrame, str, os.PathLike)):
        return read_comparisons(source)
    raise TypeError(f"expected a ComparisonLog, a DataFrame or a file path, got "
                    f"{type(source).__name__}; read other inputs with "
                    "winrate.read_comparisons(...) or winrate.read_log(PATH, FORMAT)")


def _optional_default(frame: pd.DataFrame, column: str | None, role: str) -> str | None:
    """A default-named prompt/judge column that is absent means 'no such axis'."""
    if column == DEFAULT_COLUMNS[role] and column not in frame.columns:
        return None
    return column


def rows_against(log: ComparisonLog, baseline: str) -> ComparisonLog:
    """The rows of ``log`` in which one side is ``baseline``.

    A score against a baseline (AlpacaEval, arena-hard: ``S_a = psi_a,base``) uses only
    those rows; rows of two contestants would otherwise count in the comparison total, the
    per-model ``n`` and the cluster sizes without entering the score. They are left out
    with a note (``off-baseline-rows``). A baseline that is not a model is left for the
    estimator to report. Clusters left empty are dropped from their axis."""
    found = np.flatnonzero(log.models.astype(str) == str(baseline))
    if found.size == 0:
        return log
    keep = (log.model_a == found[0]) | (log.model_b == found[0])
    if keep.all() or not keep.any():
        return log
    notes.emit(notes.off_baseline_rows(int((~keep).sum()), log.n_rows, baseline))
    axes = {}
    for name, axis in log.axes.items():
        codes, used = factorize_groups(axis.codes[keep])
        axes[name] = ClusterAxis(codes, axis.labels[used])
    return ComparisonLog(
        log.model_a[keep], log.model_b[keep], log.score[keep], log.models, axes,
        None if log.frequency is None else log.frequency[keep],
        {name: values[keep] for name, values in log.features.items()})
