"""A comparison log read where it lies: in memory, or by an engine in two passes.

:func:`scan` names a source (a file, a glob, a folder of Parquet or CSV files, a DataFrame,
an Arrow table, a DuckDB relation or a Spark DataFrame) and its columns, and decides where
the analysis runs (:attr:`Scan.mode`): in memory when the estimated working set fits the
memory budget, else on the engine (DuckDB, embedded, by default; Spark through the user's
session). On an engine winrate reads only what two passes of SQL return:

* **pass 1, the key table**: the rows grouped by everything the estimator's fit reads --
  ``model_a, model_b, outcome`` and any covariates (and, for an estimator whose fit reads an
  axis, that axis) -- with the frequency ``f = sum w`` and the row count of each group.
  Grouped on the raw columns: pairs are oriented and outcomes parsed after aggregating, by
  the same reader as a file (:func:`winrate.io.logs.read_comparisons`), so a frequency-
  weighted log of the keys has the fit of the full log (every estimator's estimating
  equations are sums over rows of a function of the key: :mod:`winrate.estimators.base`).
  Each cluster axis' labels come with their frequencies (the dictionaries).
* **pass 2, reduced in the engine**: the rows joined to pass 1's keys (uploaded with
  their influence, :meth:`Scan.rows_joined`) and grouped by cluster; the engine reduces
  the cluster totals further to the sums of the clustered covariance
  (:mod:`winrate.variance.buckets`), so no row and no label list leaves it.

The same SQL runs on DuckDB and Spark SQL (:mod:`winrate.io.engine`).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate.constants import DEFAULT_COLUMNS
from winrate.errors import WinrateInputError
from winrate.io.engine import (
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    DuckDBEngine,
    Engine,
    csv_separator,
    diagnose_parts,
    is_uri,
    reading,
    source_files,
)
from winrate.io.logs import (
    GROUPED,
    ComparisonLog,
    GroupedRows,
    all_weights_zero,
    check_rows,
    columns_not_found,
    empty_log,
    id_text,
    is_row_label,
    read_comparisons,
    readable_header,
    table_columns,
)

ENGINES = ("auto", "memory", "duckdb", "spark")

#: Bytes per row of an in-memory analysis (the coded log, the CSR influence and the
#: kernels' buffers), measured by ``scripts/bench.py --only scale``'s logs read with
#: ``--engine memory``: peak 1.25 GiB at 5M rows and 4.28 GiB at 20M rows of a two-way
#: Bradley-Terry analysis, 217 bytes a row. ``auto`` compares rows x this with the budget.
BYTES_PER_ROW = 220

#: The least memory (bytes) an engine is given, whatever the budget.
MIN_ENGINE_MEMORY = 256 << 20

#: DuckDB's memory limit as a share of the budget: the driver holds only pass 1's key
#: table and its fit (counted against the budget at :data:`BYTES_PER_ROW` a key, and
#: refused beyond it) and pass 2's small results; the engine's grouped SQL spills to disk
#: beyond its limit.
ENGINE_SHARE = 0.75

#: The smallest memory budget (bytes) a scan accepts.
MIN_BUDGET = 64 << 20

#: Clusters sampled per slice for :meth:`Scan.cluster_slices`'s bounds.
SLICE_SAMPLE = 64

#: Table names unique within the process (scans may share one connection).
_TABLES = itertools.count(1)

#: Names the pass-1 key table gives its aggregates.
FREQUENCY, ROW_COUNT, KEY = "winrate_frequency", "winrate_rows", "winrate_key"


@dataclass(frozen=True)
class Columns:
    """Which source column plays which role (None: absent)."""

    model_a: str = DEFAULT_COLUMNS["model_a"]
    model_b: str = DEFAULT_COLUMNS["model_b"]
    outcome: str = DEFAULT_COLUMNS["outcome"]
    prompt: str | None = DEFAULT_COLUMNS["prompt"]
    judge: str | None = DEFAULT_COLUMNS["judge"]
    weight: str | None = None
    features: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()

    @property
    def axes(self) -> dict[str, str]:
        """Cluster axes by name: ``prompt``, ``judge`` and the extra columns."""
        named = {"prompt": self.prompt, "judge": self.judge, **{c: c for c in self.extras}}
        return {name: col for name, col in named.items() if col is not None}

    def reader_keywords(self) -> dict:
        """The keywords of :func:`winrate.io.logs.read_comparisons` for these columns."""
        return dict(prompt_col=self.prompt, judge_col=self.judge, model_a_col=self.model_a,
                    model_b_col=self.model_b, outcome_col=self.outcome,
                    weight_col=self.weight, cluster_cols=self.extras,
                    feature_cols=self.features)


@dataclass
class Scan:
    """A source, its columns and where its analysis runs (module doc). ``mode`` is
    ``"memory"`` or the engine's name, ``reason`` why; ``n_rows`` the source's rows (an
    estimate from file metadata where counting would read the data), ``budget`` the memory
    budget in bytes."""

    source: object
    columns: Columns
    mode: str
    reason: str
    n_rows: int
    budget: int
    engine: Engine | None = None
    table: str | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (f"Scan(rows={self.n_rows:,}, engine={self.mode!r}: {self.reason}, "
                f"budget={self.budget / 2**30:.1f} GiB)")

    # ------------------------------------------------------------------ in memory

    def to_log(self) -> ComparisonLog:
        """The whole log in memory (:func:`winrate.io.logs.read_comparisons`)."""
        if self.engine is None:
            return read_comparisons(self.source, **self.columns.reader_keywords())
        frame = self._query_frame(f"SELECT {self._select_all()}, 1 AS {ROW_COUNT} FROM "
                                  f"{self.table}")
        frame.attrs[GROUPED] = (ROW_COUNT, self._name())  # the engine's rows are no lines
        return read_comparisons(frame, **self.columns.reader_keywords())

    # ------------------------------------------------------------------ pass 1

    def key_log(self, axes: tuple[str, ...] = ()) -> tuple[ComparisonLog, int]:
        """Pass 1 (module doc): the frequency-weighted log of the keys, grouped also by the
        named ``axes`` (those the fit reads), with one further axis ``KEY`` coding each key
        row by its position in the key table; and the source's row count (rows of positive
        weight)."""
        cached = self._cache.get(("keys", axes))
        if cached is not None:
            return cached
        cols = self.columns
        self._check_weights()
        by = [cols.model_a, cols.model_b, cols.outcome, *cols.features,
              *(cols.axes[name] for name in axes)]
        grouped = ", ".join(_quote(c) for c in by)
        sql = (f"SELECT {grouped}, SUM({self._weight()}) AS {FREQUENCY}, "
               f"COUNT(*) AS {ROW_COUNT} FROM {self.table}{self._positive()} "
               f"GROUP BY {grouped}")
        frame = self._within_budget(sql, by)
        if frame.empty:
            any_row = f"SELECT COUNT(*) AS n FROM {self.table}"
            if cols.weight is not None and self._query_frame(any_row).iloc[0, 0]:
                raise all_weights_zero(cols.weight)
            raise empty_log(self._name())
        frame[KEY] = np.arange(len(frame))
        frame.attrs[GROUPED] = (ROW_COUNT, self._name())  # errors count source rows
        self._check_decoded(frame, [c for c in by if c not in cols.features])
        self._cache[("raw keys", axes)] = frame.copy()
        keywords = {**cols.reader_keywords(), "weight_col": FREQUENCY,
                    "cluster_cols": (*(c for c in cols.extras if c in axes), KEY)}
        for name in ("prompt", "judge"):
            if name not in axes:
                keywords[f"{name}_col"] = None
        for col in (cols.model_a, cols.model_b, *(cols.axes[name] for name in axes)):
            frame[col] = _as_read(frame[col])
        log = read_comparisons(frame, **keywords)
        result = (log, int(frame[ROW_COUNT].sum()))
        self._cache[("keys", axes)] = result
        return result

    def _within_budget(self, sql: str, by: list[str]) -> pd.DataFrame:
        """Pass 1's key table, kept in the engine until its rows are counted: the fit holds
        it in memory, so more keys than the budget holds at :data:`BYTES_PER_ROW` each (a
        continuous covariate gives about a key per row) are a one-line error, before any
        of them leaves the engine."""
        name = self.materialize(sql)
        try:
            n_keys = int(self._query_frame(f"SELECT COUNT(*) AS n FROM {name}").iloc[0, 0])
            need = n_keys * BYTES_PER_ROW
            if need > self.budget:
                raise WinrateInputError(
                    f"pass 1 of {self._name()} has {n_keys:,} distinct keys ({', '.join(by)}"
                    f"), whose fit needs about {need / 2**30:.2f} GiB, more than the "
                    f"{self.budget / 2**30:.2f} GiB memory budget: give a larger budget, or "
                    "round a continuous covariate to fewer values")
            # the engine keeps what the fit of the keys leaves of the budget
            self.engine.limit_memory(min(engine_memory(self.budget),
                                         max(self.budget - need, MIN_ENGINE_MEMORY)))
            return self._query_frame(f"SELECT * FROM {name}")
        finally:
            self.drop(name)

    def _key_frame(self, axes: tuple[str, ...]) -> pd.DataFrame:
        """Pass 1's key table with the raw values, as the engine holds them."""
        self.key_log(axes)
        return self._cache[("raw keys", axes)]

    def axis_size(self, axis: str) -> tuple[int, object]:
        """An axis' number of clusters (labels among the rows of positive weight) and its
        least label as a file read in memory gives it, counted by the engine (the labels
        stay there), every axis in one query; an error for a missing label."""
        if ("axis", axis) not in self._cache:
            self._count_axes()
        return self._cache[("axis", axis)]

    def _count_axes(self) -> None:
        """:meth:`axis_size` of every axis, from one read of the source."""
        named = list(self.columns.axes.items())
        parts = []
        for i, (_, column) in enumerate(named):
            col = _quote(column)
            parts += [f"COUNT(DISTINCT {col}) AS n{i}", f"MIN({col}) AS least{i}",
                      f"SUM(CASE WHEN {col} IS NULL THEN 1 ELSE 0 END) AS missing{i}"]
            if self._reads_decoded_text():
                parts.append(f"SUM(CASE WHEN {col} LIKE '%\ufffd%' THEN 1 ELSE 0 END) "
                             f"AS replaced{i}")
        frame = self._query_frame(f"SELECT {', '.join(parts)} FROM {self.table}"
                                  f"{self._positive()}")
        for i, (axis, column) in enumerate(named):
            missing = int(frame[f"missing{i}"].fillna(0).iloc[0])
            check_rows(np.array([missing > 0]), column, "missing value",
                       GroupedRows(np.array([missing], np.int64), self._name()))
            if f"replaced{i}" in frame and frame[f"replaced{i}"].fillna(0).iloc[0]:
                diagnose_parts(self.source)
            self._cache[("axis", axis)] = (int(frame[f"n{i}"].iloc[0]),
                                           self.read_labels(frame[f"least{i}"])[0])

    @staticmethod
    def read_labels(values: pd.Series) -> np.ndarray:
        """Labels the engine returned, as a file read in memory gives them."""
        return _as_read(values).to_numpy()

    # ------------------------------------------------------------------ pass 2

    def key_columns(self, key_axes: tuple[str, ...] = ()) -> list[str]:
        """The source columns pass 1 groups by (:meth:`key_log`) for these ``key_axes``."""
        cols = self.columns
        return [cols.model_a, cols.model_b, cols.outcome, *cols.features,
                *(cols.axes[name] for name in key_axes)]

    def key_table(self, key_axes: tuple[str, ...] = ()) -> pd.DataFrame:
        """Pass 1's key table with the raw values as the engine holds them, each key at
        its position (``KEY``)."""
        return self._key_frame(key_axes)

    def upload(self, frame: pd.DataFrame) -> str:
        """A small frame of winrate's as a table of the engine, by a name unique in the
        process (:meth:`winrate.io.engine.Engine.register`)."""
        name = f"winrate_table_{next(_TABLES)}"
        with reading(self.source, self.mode):
            self.engine.register(name, frame)
        return name

    def materialize(self, sql: str) -> str:
        """The result of ``sql`` kept in the engine as a table (a unique name)."""
        name = f"winrate_table_{next(_TABLES)}"
        with reading(self.source, self.mode):
            self.engine.materialize(name, sql)
        return name

    def drop(self, name: str) -> None:
        """Free a table of :meth:`upload` or :meth:`materialize`."""
        self.engine.drop(name)

    def query_frame(self, sql: str) -> pd.DataFrame:
        """The result of ``sql`` (a small, reduced one) as a pandas frame."""
        return self._query_frame(sql)

    def query_table(self, sql: str):
        """The result of ``sql`` (a small, reduced one) as an Arrow table."""
        with reading(self.source, self.mode):
            return self.engine.query(sql)

    def rows_joined(self, axes: dict[int, str], table: str, key_columns: list[str],
                    within: str | None = None, grouped: bool = False) -> str:
        """SQL: the rows of positive weight joined to ``table`` (an uploaded table with
        the raw key values as ``winrate_k0, winrate_k1, ...`` in the order of
        ``key_columns``; a key may have several rows there), each with every column of
        ``table``, its cluster on each of ``axes`` (column ``winrate_c{i}`` for axis
        number i), its weight ``winrate_w`` and squared weight ``winrate_w2``. Rows whose
        key the table lacks (left out by the estimator) drop out in the join. ``within``:
        only the rows meeting that condition on the source's columns (a slice of
        :meth:`cluster_slices`). ``grouped``: the rows of one cluster and key summed
        first (``winrate_w = sum w``, ``winrate_w2 = sum w^2``): the same sums of every
        linear or weight-squared function of a row, through a join of the groups
        instead of the rows (fewer where the clusters are few)."""
        weight = ("CAST(1 AS DOUBLE)" if self.columns.weight is None
                  else f"CAST(s.{_quote(self.columns.weight)} AS DOUBLE)")
        conditions = ([] if self.columns.weight is None else [f"{weight} > 0"]) + (
            [within] if within else [])
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        clusters = {f"winrate_c{i}": self.columns.axes[name] for i, name in axes.items()}
        keys = {f"winrate_g{i}": c for i, c in enumerate(key_columns)}
        if not grouped:
            labels = ", ".join(f"s.{_quote(c)} AS {alias}" for alias, c in clusters.items())
            joined = " AND ".join(f"s.{_quote(c)} = e.winrate_k{i}"
                                  for i, c in enumerate(key_columns))
            return (f"SELECT /*+ BROADCAST(e) */ {labels}, e.*, {weight} AS winrate_w, "
                    f"{weight} * {weight} AS winrate_w2 FROM {self.table} AS s JOIN "
                    f"{table} AS e ON {joined}{where}")
        by = {**clusters, **keys}
        chosen = ", ".join(f"s.{_quote(c)} AS {alias}" for alias, c in by.items())
        summed = (f"SELECT {chosen}, SUM({weight}) AS winrate_w, SUM({weight} * {weight}) "
                  f"AS winrate_w2 FROM {self.table} AS s{where} GROUP BY "
                  + ", ".join(f"s.{_quote(c)}" for c in by.values()))
        labels = ", ".join(f"g.{alias}" for alias in clusters)
        joined = " AND ".join(f"g.{alias} = e.winrate_k{i}"
                              for i, alias in enumerate(keys))
        return (f"SELECT /*+ BROADCAST(e) */ {labels}, e.*, g.winrate_w, g.winrate_w2 "
                f"FROM ({summed}) AS g JOIN {table} AS e ON {joined}")

    def cluster_slices(self, axis: str, n_slices: int) -> list[str]:
        """Conditions on the source column of ``axis`` that split its clusters into about
        ``n_slices`` parts of about equal rows, each cluster in exactly one: ranges of its
        labels (``c < b1``, ``b1 <= c < b2``, ..., ``c >= b_{n-1}``), so a source stored
        in cluster order (a Parquet file's row groups carry each column's least and
        largest value) reads only a part's row groups. The bounds are labels of a sample
        of clusters (those whose hash is a multiple of ``m``, about
        :data:`SLICE_SAMPLE` per part, with their rows), in the engine's order. A label
        no literal can spell the same on every engine (text with a quote or a
        backslash, a type other than integers, finite floats and text) bounds no range;
        where no label can, the parts are the clusters' hashes modulo ``n_slices``."""
        col = _quote(self.columns.axes[axis])
        n_clusters = self.axis_size(axis)[0]
        step = max(1, n_clusters // (SLICE_SAMPLE * n_slices))
        filters = [f"hash({col}) % {step} = 0"] + (
            [] if self.columns.weight is None else [f"{self._weight()} > 0"])
        sample = self._query_frame(
            f"SELECT {col} AS label, COUNT(*) AS n FROM {self.table} WHERE "
            f"{' AND '.join(filters)} GROUP BY {col} ORDER BY {col}")
        literals = [_literal(label) for label in sample["label"]]
        share = np.cumsum(sample["n"].to_numpy(float))
        at = np.searchsorted(share / share[-1], np.arange(1, n_slices) / n_slices) + 1 \
            if len(share) else np.zeros(0, np.int64)
        bounds = list(dict.fromkeys(literals[i] for i in at
                                    if i < len(literals) and literals[i] is not None))
        col = f"s.{col}"
        if not bounds:
            return [f"(hash({col}) % {n_slices} + {n_slices}) % {n_slices} = {i}"
                    for i in range(n_slices)]
        return ([f"{col} < {bounds[0]}"]
                + [f"{col} >= {low} AND {col} < {high}"
                   for low, high in zip(bounds[:-1], bounds[1:], strict=True)]
                + [f"{col} >= {bounds[-1]}"])

    def _reads_decoded_text(self) -> bool:
        """Whether text may hold replacement characters (Spark reading CSV / TSV files)."""
        return (self.mode == "spark" and isinstance(self.source, (str, os.PathLike))
                and not is_uri(self.source) and source_files(self.source)[1] != "parquet")

    def _check_decoded(self, frame: pd.DataFrame, columns: list[str]) -> None:
        """Text an engine decoded with replacement characters (Spark reads bytes that are
        not UTF-8 so, where DuckDB and the in-memory reader refuse them): the in-memory
        reader's error for the part that is not UTF-8 (its line), as on every engine. Only
        Spark reading CSV / TSV files needs the look (DuckDB and Parquet refuse such bytes)."""
        if not self._reads_decoded_text():
            return
        for col in columns:
            values = frame[col]
            if not pd.api.types.is_numeric_dtype(values) and values.astype(str).str.contains(
                    "\ufffd", regex=False).any():
                diagnose_parts(self.source)

    # ------------------------------------------------------------------ helpers

    def _weight(self) -> str:
        weight = self.columns.weight
        return "1.0" if weight is None else f"CAST({_quote(weight)} AS DOUBLE)"

    def _positive(self) -> str:
        """Rows of weight 0 stand for no comparison (as in a file read in memory)."""
        return "" if self.columns.weight is None else f" WHERE {self._weight()} > 0"

    def _check_weights(self) -> None:
        """The reader's rule on an engine: every weight a finite number >= 0 (missing or
        non-numeric text casts to NULL; NaN compares above every number in DuckDB and Spark
        SQL, so ``w < Infinity`` excludes it)."""
        if self.columns.weight is None or ("weights checked",) in self._cache:
            return
        w = f"TRY_CAST({_quote(self.columns.weight)} AS DOUBLE)"  # NULL for text
        bad = self._query_frame(
            f"SELECT COUNT(*) AS n FROM {self.table} WHERE {w} IS NULL "
            f"OR NOT ({w} >= 0 AND {w} < CAST('Infinity' AS DOUBLE))").iloc[0, 0]
        check_rows(np.array([bad > 0]), self.columns.weight,  # the reader's words
                    "weight must be a finite number >= 0",
                    GroupedRows(np.array([bad], np.int64), self._name()))
        self._cache[("weights checked",)] = True

    def _select_all(self) -> str:
        cols = self.columns
        used = [cols.model_a, cols.model_b, cols.outcome, *cols.axes.values(), *cols.features]
        if cols.weight is not None:
            used.append(cols.weight)
        return ", ".join(_quote(c) for c in dict.fromkeys(used))

    def _query_frame(self, sql: str) -> pd.DataFrame:
        with reading(self.source, self.mode):
            return self.engine.query(sql).to_pandas()

    def _name(self) -> str:
        return repr(os.fspath(self.source)) if isinstance(self.source, (str, os.PathLike)) \
            else f"({type(self.source).__name__})"


def _as_read(values: pd.Series) -> pd.Series:
    """Ids as a file read in memory gives them (:func:`winrate.io.logs.read_table`): a
    float id column as text (7.0 is the id "7"), any other as it is; the engine's join
    keeps the raw values."""
    return id_text(values) if pd.api.types.is_float_dtype(values) else values


def _literal(label) -> str | None:
    """A label as an SQL literal both engines read as the same value, or None: integers,
    finite floats and text without quotes or backslashes (whose escapes differ)."""
    if isinstance(label, (bool, np.bool_)):
        return None
    if isinstance(label, (int, np.integer)):
        return str(int(label))
    if isinstance(label, (float, np.floating)):
        return repr(float(label)) if np.isfinite(label) else None
    if isinstance(label, str) and "'" not in label and "\\" not in label:
        return f"'{label}'"
    return None


def _quote(column: str) -> str:
    """A column name as a quoted SQL identifier (both engines accept backquotes)."""
    return "`" + column.replace("`", "``") + "`"


def machine_memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


#: Bytes per line of a CSV log, for the row estimate of ``auto`` (counting would read it).
CSV_LINE_BYTES = 40


def _rows_without_engine(source) -> int | None:
    """Rows of ``source`` where no engine is needed to count them: Parquet metadata, a
    CSV file's size over :data:`CSV_LINE_BYTES` (an estimate), ``len`` of a frame."""
    if is_uri(source):
        return None  # counted by the engine that reads it
    if isinstance(source, (str, os.PathLike)):
        if os.path.isfile(source) and not str(source).lower().endswith(
                PARQUET_SUFFIXES + CSV_SUFFIXES):
            return 0  # JSONL and compressed logs are read in memory
        files, kind = source_files(source)
        if kind != "parquet":
            return sum(os.path.getsize(f) for f in files) // CSV_LINE_BYTES
        import pyarrow.parquet as pq

        try:
            return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        except (OSError, ValueError):  # not a Parquet file: read_comparisons says why
            return 0
    if isinstance(source, pd.DataFrame) or hasattr(source, "num_rows"):
        return len(source)
    return None


def _make_engine(name: str, source, budget: int, connection=None,
                 stated: bool = False) -> Engine:
    """The engine ``name`` for ``source``; Spark's session follows a ``stated`` budget."""
    if name == "spark":
        from winrate.io.spark_engine import SparkEngine

        return SparkEngine.for_source(source, budget, check=stated)
    if type(source).__module__.startswith("pyspark"):
        raise WinrateInputError("a Spark DataFrame is scanned with engine='spark'")
    return DuckDBEngine(memory_limit=engine_memory(budget), connection=connection)


def engine_memory(budget: int) -> int:
    """DuckDB's memory limit (bytes) for a budget: :data:`ENGINE_SHARE` of it, at least
    :data:`MIN_ENGINE_MEMORY` (what it needs to run at all); after pass 1, at most what
    the key table's fit leaves of the budget (:meth:`Scan.key_log`)."""
    return max(int(budget * ENGINE_SHARE), MIN_ENGINE_MEMORY)


def _check_scan_options(engine: str, columns: dict | None) -> None:
    """An error for an unknown engine or column role."""
    if engine not in ENGINES:
        raise WinrateInputError(f"engine must be one of {ENGINES}, got {engine!r}")
    unknown = set(columns or {}) - {"model_a", "model_b", "outcome", "prompt", "judge"}
    if unknown:
        raise WinrateInputError(f"columns: unknown role(s) {sorted(unknown)}; roles are "
                                "model_a, model_b, outcome, prompt, judge")


def _budget(memory) -> int:
    """The memory budget in bytes: ``memory``, or half the machine's; an error naming the
    value unless it is a positive number of bytes of at least :data:`MIN_BUDGET`."""
    try:
        budget = int(memory) if memory is not None else machine_memory() // 2
    except (TypeError, ValueError):
        budget = 0
    if budget <= 0:
        raise WinrateInputError(f"memory must be a positive number of bytes (4 GiB: "
                                f"4 << 30), got {memory!r}")
    if budget < MIN_BUDGET:
        raise WinrateInputError(f"memory budget of {budget:,} bytes is below the floor of "
                                f"{MIN_BUDGET:,} bytes ({MIN_BUDGET >> 20} MiB) an engine "
                                "needs to run")
    return budget


def scan(source, engine: str = "auto", *, columns: dict | None = None,
         weight_col: str | None = None, feature_cols: tuple[str, ...] = (),
         cluster_cols: tuple[str, ...] = (), memory: int | None = None,
         connection=None) -> Scan:
    """A comparison log to analyse where it lies (module doc).

    ``columns`` maps roles (``model_a``, ``model_b``, ``outcome``, ``prompt``, ``judge``) to
    the source's column names (default: :data:`winrate.constants.DEFAULT_COLUMNS`; a
    default-named prompt or judge column that is absent means no such axis).
    ``weight_col``, ``feature_cols`` and ``cluster_cols`` as in
    :func:`winrate.io.logs.read_comparisons`. ``engine``: ``"memory"``, ``"duckdb"``,
    ``"spark"`` or ``"auto"``: in memory when the rows times :data:`BYTES_PER_ROW` fit
    ``memory`` (bytes; default half the machine's memory), DuckDB otherwise. ``connection``: a
    DuckDB connection to run on (the one holding the tables a DuckDB relation reads)."""
    _check_scan_options(engine, columns)
    budget = _budget(memory)
    cols = Columns(**(columns or {}), weight=weight_col, features=tuple(feature_cols),
                   extras=tuple(cluster_cols))
    chosen = "duckdb" if engine in ("auto", "memory") else engine
    if type(source).__module__.startswith("pyspark") and engine == "auto":
        chosen = "spark"
    n_rows = _rows_without_engine(source)
    backend = table = None
    if n_rows is None or chosen == "spark" or engine not in ("auto", "memory"):
        backend, table = _open(chosen, source, budget, connection, memory is not None)
        if n_rows is None:
            with reading(source, chosen):
                n_rows = int(backend.query(f"SELECT COUNT(*) AS n FROM {table}").column(0)[0]
                             .as_py())
    mode, reason = _where(engine, chosen, n_rows, budget)
    in_memory = mode == "memory" and (isinstance(source, pd.DataFrame) or (
        isinstance(source, (str, os.PathLike)) and os.path.isfile(source)))
    if not in_memory and backend is None:
        backend, table = _open(chosen, source, budget, connection, memory is not None)
    if backend is not None:
        _check_headers(source)
        with reading(source, chosen):
            names = backend.query(f"SELECT * FROM {table} LIMIT 0").column_names
        cols = _present(cols, names, source)
    elif (names := _file_columns(source)) is not None:
        cols = _present(cols, names, source)
    return Scan(source, cols, mode, reason, n_rows, budget,
                None if in_memory else backend, None if in_memory else table)


def _open(name: str, source, budget: int, connection=None,
          stated: bool = False) -> tuple[Engine, str]:
    """The engine ``name`` and the view it reads ``source`` by; an engine's failure to read
    the source is a one-line error (:func:`winrate.io.engine.reading`). ``stated``: the
    budget was given, not the default (a running Spark session is checked against it)."""
    backend = _make_engine(name, source, budget, connection, stated)
    with reading(source, name):
        return backend, backend.table(source)


def _where(engine: str, chosen: str, n_rows: int, budget: int) -> tuple[str, str]:
    """The mode of a scan and why (:func:`scan`)."""
    if engine != "auto":
        return engine, "as requested"
    if chosen == "spark":
        return "spark", "a Spark DataFrame is analysed on Spark"
    need = n_rows * BYTES_PER_ROW
    fits = need <= budget
    return ("memory" if fits else chosen,
            f"{n_rows:,} rows x {BYTES_PER_ROW} bytes = {need / 2**30:.2f} GiB "
            f"{'fits' if fits else 'exceeds'} the {budget / 2**30:.1f} GiB budget")


def _check_headers(source) -> None:
    """The in-memory reader's error for a delimited part whose header names a column twice
    (:func:`winrate.io.logs.delimited_header`), which an engine would rename and read."""
    if not isinstance(source, (str, os.PathLike)) or is_uri(os.fspath(source)):
        return
    files, kind = source_files(source)
    if kind != "parquet":
        for part in files:
            readable_header(part, csv_separator(kind))


def _file_columns(source) -> list[str] | None:
    """The column names of a DataFrame, or of a Parquet, CSV or TSV file (its schema or
    header: :func:`winrate.io.logs.table_columns`); None when the file cannot be read so
    (the in-memory reader then says why)."""
    if isinstance(source, pd.DataFrame):
        return [str(c) for c in source.columns]
    if not isinstance(source, (str, os.PathLike)) or not os.path.isfile(source):
        return None
    return table_columns(source)


def _as_named(cols: Columns, names: list[str]) -> Columns:
    """``cols`` with each column the source lacks replaced by the source's name that is
    the same without surrounding whitespace (a CSV header ``prompt_id, judge_id``: DuckDB
    and the in-memory reader strip it, Spark keeps it), so every engine finds it."""
    stripped = {}
    for name in names:  # one entry per column
        stripped.setdefault(name.strip(), name)

    def named(column):
        return column if column is None or column in names else stripped.get(column, column)

    return Columns(model_a=named(cols.model_a), model_b=named(cols.model_b),
                   outcome=named(cols.outcome), prompt=named(cols.prompt),
                   judge=named(cols.judge), weight=named(cols.weight),
                   features=tuple(map(named, cols.features)),
                   extras=tuple(map(named, cols.extras)))


def _present(cols: Columns, names: list[str], source=None) -> Columns:
    """``cols`` without a default-named prompt or judge column the source lacks; an error
    naming any other column it lacks (:func:`winrate.io.logs.columns_not_found`). pandas'
    unnamed index columns, which the in-memory reader drops, are not among an engine's."""
    names = [name for name in names if not is_row_label(name)]
    cols = _as_named(cols, names)
    changes = {role: None for role in ("prompt", "judge")
               if getattr(cols, role) == DEFAULT_COLUMNS[role]
               and getattr(cols, role) not in names}
    cols = Columns(**{**cols.__dict__, **changes})
    wanted = [cols.model_a, cols.model_b, cols.outcome, *cols.axes.values(), *cols.features,
              *([cols.weight] if cols.weight else [])]
    missing = [c for c in wanted if c not in names]
    if missing:
        path = source if isinstance(source, (str, os.PathLike)) and os.path.isfile(source) \
            else None
        raise columns_not_found(missing, names, source=path)
    return cols
