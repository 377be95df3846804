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
* **pass 2, the coded rows, bucket by bucket**: every row as (key index, cluster codes,
  weight), joined to the registered key table and dictionaries, one bucket of whole
  clusters of the bucket axis at a time (:meth:`Scan.bucket_rows`). A row's influence is its
  key's influence times ``w / f`` (:mod:`winrate.variance.buckets` sums it per cluster).

The same SQL runs on DuckDB and Spark SQL (:mod:`winrate.io.engine`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate.constants import DEFAULT_COLUMNS
from winrate.errors import WinrateInputError
from winrate.io.engine import DuckDBEngine, Engine, source_files
from winrate.io.logs import ComparisonLog, id_text, read_comparisons

ENGINES = ("auto", "memory", "duckdb", "spark")

#: Bytes per row of an in-memory analysis (the coded log, the CSR influence and the
#: kernels' buffers; measured by ``scripts/bench.py --only scale``: 1.7 GB peak at 10M
#: rows of a two-way Bradley-Terry analysis). ``auto`` compares rows x this with the budget.
BYTES_PER_ROW = 170

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
                    weight_col=self.weight, extra_cols=self.extras,
                    feature_cols=self.features)


@dataclass
class Scan:
    """A source, its columns and where its analysis runs (module doc). ``mode`` is
    ``"memory"`` or the engine's name, ``reason`` why; ``n_rows`` the source's rows (an
    estimate from file metadata where counting would read the data), ``budget`` the memory
    budget in bytes; ``buckets`` a forced number of pass-2 buckets (None: chosen from the
    budget)."""

    source: object
    columns: Columns
    mode: str
    reason: str
    n_rows: int
    budget: int
    engine: Engine | None = None
    table: str | None = None
    buckets: int | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (f"Scan(rows={self.n_rows:,}, engine={self.mode!r}: {self.reason}, "
                f"budget={self.budget / 2**30:.1f} GiB)")

    # ------------------------------------------------------------------ in memory

    def to_log(self) -> ComparisonLog:
        """The whole log in memory (:func:`winrate.io.logs.read_comparisons`)."""
        if self.engine is None:
            return read_comparisons(self.source, **self.columns.reader_keywords())
        return read_comparisons(self._query_frame(f"SELECT {self._select_all()} FROM "
                                                  f"{self.table}"),
                                **self.columns.reader_keywords())

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
        by = [cols.model_a, cols.model_b, cols.outcome, *cols.features,
              *(cols.axes[name] for name in axes)]
        grouped = ", ".join(_quote(c) for c in by)
        sql = (f"SELECT {grouped}, SUM({self._weight()}) AS {FREQUENCY}, "
               f"COUNT(*) AS {ROW_COUNT} FROM {self.table}{self._positive()} "
               f"GROUP BY {grouped}")
        frame = self._query_frame(sql)
        if frame.empty:
            raise WinrateInputError(f"the scanned log {self._name()} has no rows")
        frame[KEY] = np.arange(len(frame))
        self.engine.put("winrate_keys", _arrow(frame.drop(columns=[ROW_COUNT])))
        keywords = {**cols.reader_keywords(), "weight_col": FREQUENCY,
                    "extra_cols": (*(c for c in cols.extras if c in axes), KEY)}
        for name in ("prompt", "judge"):
            if name not in axes:
                keywords[f"{name}_col"] = None
        for col in (cols.model_a, cols.model_b, *(cols.axes[name] for name in axes)):
            frame[col] = id_text(frame[col])  # as a file's ids are read (the join keeps raw)
        log = read_comparisons(frame, **keywords)
        result = (log, int(frame[ROW_COUNT].sum()))
        self._cache[("keys", axes)] = result
        return result

    def dictionary(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        """An axis' labels (in the order of their codes) and the rows of each; registered
        with the engine as ``winrate_axis_<axis>`` (label, code)."""
        cached = self._cache.get(("axis", axis))
        if cached is not None:
            return cached
        col = _quote(self.columns.axes[axis])
        frame = self._query_frame(f"SELECT {col} AS label, COUNT(*) AS n FROM {self.table}"
                                  f"{self._positive()} GROUP BY {col}")
        if frame["label"].isna().any():
            raise WinrateInputError(f"column {self.columns.axes[axis]!r}: missing value in "
                                    f"{self._name()}; every row needs a {axis}")
        self.engine.put(f"winrate_axis_{axis}", _arrow(pd.DataFrame(
            {"label": frame["label"], "code": np.arange(len(frame))})))
        result = (id_text(frame["label"]).to_numpy(), frame["n"].to_numpy(np.int64))
        self._cache[("axis", axis)] = result
        return result

    # ------------------------------------------------------------------ pass 2

    def bucket_rows(self, axes: tuple[str, ...], bucket_axis: str | None,
                    bucket_of: np.ndarray | None, n_buckets: int,
                    key_axes: tuple[str, ...] = ()) -> Iterator[dict[str, np.ndarray]]:
        """Pass 2 (module doc): per bucket, every row's key index (``KEY``), codes on each
        of ``axes`` and weight (``"weight"``), as numpy arrays. ``bucket_of`` gives each
        cluster of ``bucket_axis`` its bucket (None: one bucket)."""
        cols = self.columns
        keys = [cols.model_a, cols.model_b, cols.outcome, *cols.features,
                *(cols.axes[name] for name in key_axes)]
        joins = [" AND ".join(f"s.{_quote(c)} = k.{_quote(c)}" for c in keys)]
        select = [f"k.{KEY} AS {KEY}", f"{self._weight('s.')} AS weight"]
        tables = ["winrate_keys k"]
        for i, name in enumerate(axes):
            self.dictionary(name)
            tables.append(f"winrate_axis_{name} d{i}")
            joins.append(f"s.{_quote(cols.axes[name])} = d{i}.label")
            select.append(f"d{i}.code AS axis{i}")
        if bucket_axis is not None and n_buckets > 1:
            self.engine.put("winrate_buckets", _arrow(pd.DataFrame(
                {"code": np.arange(len(bucket_of)), "bucket": bucket_of})))
            tables.append("winrate_buckets bk")
            joins.append(f"d{axes.index(bucket_axis)}.code = bk.code")
        base = (f"SELECT {', '.join(select)} FROM {self.table} s, {', '.join(tables)} "
                f"WHERE {' AND '.join(joins)}{self._positive(' AND ', 's.')}")
        for bucket in range(n_buckets):
            sql = base if bucket_axis is None or n_buckets == 1 else \
                f"{base} AND bk.bucket = {bucket}"
            yield self._coded(sql, len(axes))

    def _coded(self, sql: str, n_axes: int) -> dict[str, np.ndarray]:
        parts = [batch for batch in self.engine.batches(sql) if batch.num_rows]
        out = {KEY: _column(parts, 0, np.int64), "weight": _column(parts, 1, np.float64)}
        for i in range(n_axes):
            out[f"axis{i}"] = _column(parts, 2 + i, np.int64)
        return out

    # ------------------------------------------------------------------ helpers

    def _weight(self, prefix: str = "") -> str:
        weight = self.columns.weight
        return "1.0" if weight is None else f"CAST({prefix}{_quote(weight)} AS DOUBLE)"

    def _positive(self, joiner: str = " WHERE ", prefix: str = "") -> str:
        """Rows of weight 0 stand for no comparison (as in a file read in memory)."""
        return "" if self.columns.weight is None else f"{joiner}{self._weight(prefix)} > 0"

    def _select_all(self) -> str:
        cols = self.columns
        used = [cols.model_a, cols.model_b, cols.outcome, *cols.axes.values(), *cols.features]
        if cols.weight is not None:
            used.append(cols.weight)
        return ", ".join(_quote(c) for c in dict.fromkeys(used))

    def _query_frame(self, sql: str) -> pd.DataFrame:
        return self.engine.query(sql).to_pandas()

    def _name(self) -> str:
        return repr(os.fspath(self.source)) if isinstance(self.source, (str, os.PathLike)) \
            else f"({type(self.source).__name__})"


def _quote(column: str) -> str:
    """A column name as a quoted SQL identifier (both engines accept backquotes)."""
    return "`" + column.replace("`", "``") + "`"


def _arrow(frame: pd.DataFrame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


def _column(parts, index: int, dtype) -> np.ndarray:
    if not parts:
        return np.empty(0, dtype)
    return np.concatenate([part.column(index).to_numpy(zero_copy_only=False)
                           for part in parts]).astype(dtype, copy=False)


def machine_memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _count_rows(source, engine: Engine | None, table: str | None) -> int:
    """Rows of ``source``: from Parquet metadata, ``len`` of a frame, else a count."""
    if isinstance(source, (str, os.PathLike)):
        files, kind = source_files(source)
        if kind == "parquet":
            import pyarrow.parquet as pq

            return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    elif isinstance(source, pd.DataFrame) or hasattr(source, "num_rows"):
        return len(source)
    return int(engine.query(f"SELECT COUNT(*) AS n FROM {table}").column(0)[0].as_py())


def _make_engine(name: str, source, budget: int) -> Engine:
    if name == "spark":
        from winrate.io.spark_engine import SparkEngine

        return SparkEngine.for_source(source)
    if type(source).__module__.startswith("pyspark"):
        raise WinrateInputError("a Spark DataFrame is scanned with engine='spark'")
    import duckdb

    connection = None
    if isinstance(source, duckdb.DuckDBPyRelation):
        connection = getattr(source, "connection", None)
    # DuckDB gets a third of the budget; the rest holds a bucket's rows and influence
    return DuckDBEngine(memory_limit=budget // 3, connection=connection)


def scan(source, engine: str = "auto", *, columns: dict | None = None,
         weight_col: str | None = None, feature_cols: tuple[str, ...] = (),
         extra_cols: tuple[str, ...] = (), memory: int | None = None,
         buckets: int | None = None) -> Scan:
    """A comparison log to analyse where it lies (module doc).

    ``columns`` maps roles (``model_a``, ``model_b``, ``outcome``, ``prompt``, ``judge``) to
    the source's column names (default: :data:`winrate.constants.DEFAULT_COLUMNS`; a
    default-named prompt or judge column that is absent means no such axis).
    ``weight_col``, ``feature_cols`` and ``extra_cols`` as in
    :func:`winrate.io.logs.read_comparisons`. ``engine``: ``"memory"``, ``"duckdb"``,
    ``"spark"`` or ``"auto"``: in memory when the rows times :data:`BYTES_PER_ROW` fit
    ``memory`` (bytes; default half the machine's memory), DuckDB otherwise. ``buckets``
    forces the number of pass-2 buckets (for tests and benchmarks)."""
    if engine not in ENGINES:
        raise WinrateInputError(f"engine must be one of {ENGINES}, got {engine!r}")
    unknown = set(columns or {}) - {"model_a", "model_b", "outcome", "prompt", "judge"}
    if unknown:
        raise WinrateInputError(f"columns: unknown role(s) {sorted(unknown)}; roles are "
                                "model_a, model_b, outcome, prompt, judge")
    budget = int(memory) if memory is not None else machine_memory() // 2
    if budget <= 0:
        raise WinrateInputError(f"memory must be a positive number of bytes, got {memory!r}")
    cols = Columns(**(columns or {}), weight=weight_col, features=tuple(feature_cols),
                   extras=tuple(extra_cols))
    chosen = "duckdb" if engine in ("auto", "memory") else engine
    if type(source).__module__.startswith("pyspark") and engine == "auto":
        chosen = "spark"
    backend = _make_engine(chosen, source, budget)
    table = backend.table(source)
    cols = _present(cols, backend, table)
    n_rows = _count_rows(source, backend, table)
    need = n_rows * BYTES_PER_ROW
    if engine == "auto":
        fits = need <= budget and chosen != "spark"
        mode = "memory" if fits else chosen
        reason = (f"{n_rows:,} rows x {BYTES_PER_ROW} bytes = {need / 2**30:.2f} GiB "
                  f"{'fits' if fits else 'exceeds'} the {budget / 2**30:.1f} GiB budget"
                  if chosen != "spark" else "a Spark DataFrame is analysed on Spark")
    else:
        mode, reason = engine, "as requested"
    memory_source = mode == "memory" and (isinstance(source, pd.DataFrame) or (
        isinstance(source, (str, os.PathLike)) and os.path.isfile(source)))
    return Scan(source, cols, mode, reason, n_rows, budget,
                None if memory_source else backend, None if memory_source else table,
                buckets)


def _present(cols: Columns, engine: Engine, table: str) -> Columns:
    """``cols`` without a default-named prompt or judge column the source lacks; an error
    naming any other column it lacks."""
    names = engine.query(f"SELECT * FROM {table} LIMIT 0").column_names
    changes = {role: None for role in ("prompt", "judge")
               if getattr(cols, role) == DEFAULT_COLUMNS[role]
               and getattr(cols, role) not in names}
    cols = Columns(**{**cols.__dict__, **changes})
    wanted = [cols.model_a, cols.model_b, cols.outcome, *cols.axes.values(), *cols.features,
              *([cols.weight] if cols.weight else [])]
    missing = [c for c in wanted if c not in names]
    if missing:
        raise WinrateInputError(f"column(s) {missing} not found; the log has columns {names}")
    return cols
