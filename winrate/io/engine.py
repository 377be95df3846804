"""The query engines a scan runs on: DuckDB (embedded, the default) and Spark.

winrate never aggregates rows out of core itself: a log too large for memory is read and
grouped by an existing engine, and winrate's numerical code reads only what the engine
returns (:mod:`winrate.io.scan`). An engine answers these requests, all in SQL text that
runs unchanged on DuckDB and Spark SQL (plain ``SELECT``/``JOIN``/``GROUP BY`` with
``COUNT``, ``SUM``, ``CASE``; no dialect functions):

* ``table(source)``: make a source queryable under a name (a file, a glob, a folder of
  Parquet or CSV files, a pandas DataFrame or Arrow table, or the engine's own relation or
  DataFrame); CSV fields are read as text, as :func:`winrate.io.logs.read_table` reads
  ids exactly as written (numbers are cast where used);
* ``query(sql)``: the result as an Arrow table; ``batches(sql)``: the same as a stream of
  Arrow record batches, so a large result is never held whole.

DuckDB runs in-process with a memory limit and spills to disk beyond it (DuckDB, "Memory
management", duckdb.org/docs/stable/operations_manual/limits); Spark is used through the
user's own ``SparkSession`` (:mod:`winrate.io.spark_engine`).
"""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from winrate.errors import WinrateInputError

#: File suffixes a scan reads, by reader.
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv", ".txt")


class Engine:
    """The protocol (module doc)."""

    name = ""

    def table(self, source) -> str:
        raise NotImplementedError

    def query(self, sql: str):
        raise NotImplementedError

    def batches(self, sql: str, rows: int = 1 << 20) -> Iterator:
        raise NotImplementedError


def source_files(source) -> tuple[list[str], str]:
    """The files a path, glob or folder names and their format (``parquet`` or ``csv``);
    an error naming the source when it names none, or mixes formats."""
    text = os.fspath(source)
    if not glob.has_magic(text) and not Path(text).exists():
        raise WinrateInputError(f"file not found: {text}")
    if Path(text).is_dir():
        files = sorted(str(p) for p in Path(text).rglob("*") if p.is_file()
                       and p.suffix.lower() in PARQUET_SUFFIXES + CSV_SUFFIXES)
    else:
        files = sorted(glob.glob(text, recursive=True)) if glob.has_magic(text) else [text]
    if not files or not all(Path(f).is_file() for f in files):
        raise WinrateInputError(f"{text!r} is a directory with no Parquet or CSV file in "
                                "it (a leaderboard's published files are read by format)"
                                if Path(text).is_dir() else f"no file matches {text!r}")
    kinds = {"parquet" if Path(f).suffix.lower() in PARQUET_SUFFIXES else "csv"
             for f in files}
    if len(kinds) > 1:
        raise WinrateInputError(f"{text!r} holds both Parquet and CSV files: scan one kind")
    return files, kinds.pop()


#: A URI scheme (``s3a://``, ``dbfs:/``); one letter is a Windows drive, not a scheme.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def is_uri(source) -> bool:
    """Whether ``source`` names a location by URI (read by Spark), not a local path."""
    return isinstance(source, (str, os.PathLike)) and bool(_SCHEME.match(os.fspath(source)))


#: view names unique within the process, so scans can share one connection
_VIEWS = itertools.count(1)


class DuckDBEngine(Engine):
    """DuckDB in-process, with ``memory_limit`` bytes (None: DuckDB's default, 80% of the
    machine) and ``threads`` (None: every core); ``connection`` to reuse the user's, whose
    settings are left as they are (the memory limit and threads are the user's to set)."""

    name = "duckdb"

    def __init__(self, memory_limit: int | None = None, threads: int | None = None,
                 connection=None):
        import duckdb

        if connection is not None:
            self.connection = connection
            return
        self.connection = duckdb.connect()
        if memory_limit is not None:
            self.connection.execute(f"SET memory_limit = '{int(memory_limit) >> 20}MB'")
        if threads is not None:
            self.connection.execute(f"SET threads = {int(threads)}")
        self.connection.execute("SET preserve_insertion_order = false")

    def table(self, source) -> str:
        import duckdb

        name = f"winrate_source_{next(_VIEWS)}"  # unique in the process: connections are shared
        if isinstance(source, duckdb.DuckDBPyRelation):
            try:  # the relation's query, run on this connection
                self.connection.execute(f"CREATE VIEW {name} AS {source.sql_query()}")
            except duckdb.CatalogException:
                raise WinrateInputError(
                    "the DuckDB relation reads tables of its own connection: pass that "
                    "connection too (scan(..., connection=...))") from None
        elif is_uri(source):
            raise WinrateInputError(f"{os.fspath(source)!r} is a URI: DuckDB here reads local "
                                    "files; scan it with engine='spark'")
        elif isinstance(source, (str, os.PathLike)):
            files, kind = source_files(source)
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            reader = (f"read_parquet([{listed}], union_by_name = true)" if kind == "parquet"
                      else f"read_csv([{listed}], union_by_name = true, all_varchar = true)")
            self.connection.execute(f"CREATE VIEW {name} AS SELECT * FROM {reader}")
        else:
            self.connection.register(name, source)  # a pandas DataFrame or Arrow table
        return name

    def query(self, sql: str):
        return self.connection.sql(sql).to_arrow_table()

    def batches(self, sql: str, rows: int = 1 << 20) -> Iterator:
        reader = self.connection.sql(sql).to_arrow_reader(rows)
        yield from reader
