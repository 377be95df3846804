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
* ``query(sql)``: the (reduced, small) result as an Arrow table;
* ``register(name, frame)``: a small pandas frame of winrate's (pass 1's keys and their
  influence) as a table the SQL joins (on Spark broadcast to the executors);
  ``materialize(name, sql)``: a query's result kept in the engine as a table (DuckDB's temp
  table, spilled beyond the memory limit; Spark's cached view), read by later queries;
  ``drop(name)`` frees either.

DuckDB runs in-process with a memory limit and spills to disk beyond it (DuckDB, "Memory
management", duckdb.org/docs/stable/operations_manual/limits); Spark is used through the
user's own ``SparkSession`` (:mod:`winrate.io.spark_engine`).
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import shutil
import sys
import tempfile
import weakref
from contextlib import contextmanager
from pathlib import Path

from winrate.errors import WinrateInputError
from winrate.io.logs import SEPARATORS, check_delimited, compression_of, table_format

#: File suffixes a scan reads, by reader: Parquet, and CSV or TSV, plain or gzipped (the
#: one compression both DuckDB and Spark read). Every reader names a format by
#: :func:`winrate.io.logs.table_format`.
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")


class Engine:
    """The protocol (module doc)."""

    name = ""

    def table(self, source) -> str:
        raise NotImplementedError

    def query(self, sql: str):
        raise NotImplementedError

    def register(self, name: str, frame) -> None:
        raise NotImplementedError

    def materialize(self, name: str, sql: str) -> None:
        raise NotImplementedError

    def drop(self, name: str) -> None:
        raise NotImplementedError

    def limit_memory(self, limit: int) -> None:
        """Lower the engine's own memory limit to ``limit`` bytes where winrate set it
        (a session or connection of the user's keeps its settings)."""


def source_files(source) -> tuple[list[str], str]:
    """The files a path, glob or folder names and their format (``parquet``, ``csv`` or
    ``tsv``). A folder and a glob select parts by one rule (:func:`_parts`), so a folder
    and the glob of its files read the same parts. An error names the source when it names
    no part, mixes formats, or holds a part the engines cannot read."""
    text = os.fspath(source)
    if not glob.has_magic(text) and not Path(text).exists():
        raise WinrateInputError(f"file not found: {text}")
    if Path(text).is_dir():
        files = _parts(str(p) for p in Path(text).rglob("*") if p.is_file()
                       and not _hidden(p.relative_to(text).parent))
    elif glob.has_magic(text):
        root = _glob_root(text)
        files = _parts(f for f in glob.glob(text, recursive=True) if Path(f).is_file()
                       and not _hidden(Path(f).relative_to(root).parent))
    else:
        files = [text]
    if not files:
        raise WinrateInputError(f"{text!r} is a directory with no Parquet, CSV or TSV file "
                                "in it (a leaderboard's published files are read by format)"
                                if Path(text).is_dir() else f"no file matches {text!r}")
    kinds = {}
    for f in files:  # one call per file, not per row
        if os.path.getsize(f) == 0:  # the in-memory reader's words
            raise WinrateInputError(f"{f!r} is empty (0 bytes)")
        kinds.setdefault(_part_kind(f), f)
    if len(kinds) > 1:
        (first, one), (second, other) = sorted(kinds.items())[:2]
        raise WinrateInputError(f"{text!r} holds both {first} ({Path(one).name}) and "
                                f"{second} ({Path(other).name}) parts: scan one kind")
    kind = kinds.popitem()[0]
    if kind == "parquet" and len(files) > 1:
        _check_column_types(files)
    return files, kind


def _type_family(arrow_type) -> str:
    """``number`` (integers and floats, which engines unite as numbers), ``text`` or the
    type's own name."""
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return "number"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_dictionary(arrow_type):
        return _type_family(arrow_type.value_type)
    return str(arrow_type)


def _check_column_types(files: list[str]) -> None:
    """Parquet parts must agree on each column's kind of type (number, text, ...): an
    engine unites a float column 7.0 of one part and a text column "7" of another as the
    texts "7.0" and "7", two ids where the in-memory reader has one, and DuckDB and Spark
    unite mixed types differently. An error names the column and two parts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    seen: dict[str, tuple[str, str]] = {}
    for path in files:  # one schema read per part (metadata only)
        for field in pq.read_schema(path):
            if pa.types.is_null(field.type):
                continue  # a column all missing in this part unites with any type
            family = _type_family(field.type)
            first = seen.setdefault(field.name, (family, path))
            if first[0] != family:
                raise WinrateInputError(
                    f"column {field.name!r} is {first[0]} in {Path(first[1]).name!r} but "
                    f"{family} in {Path(path).name!r}: write it with one type in every part")


def _parts(paths) -> list[str]:
    """The parts among ``paths`` (a folder's files, a glob's matches), sorted: every file of
    a format winrate reads (:func:`winrate.io.logs.table_format`: CSV, TSV, JSON Lines,
    Parquet, compressed or not), except hidden and bookkeeping files (``.name``,
    ``_SUCCESS``: Spark and Hive skip them too). Files of other formats (README.md, .crc)
    are not parts."""
    return sorted(p for p in paths if not Path(p).name.startswith((".", "_"))
                  and _known_format(p))


def _glob_root(pattern: str) -> Path:
    """The folder a glob searches: its leading path components without wildcards."""
    parts = Path(pattern).parts
    fixed = list(itertools.takewhile(lambda part: not glob.has_magic(part), parts))
    return Path(*fixed) if fixed else Path()


def _hidden(folder: Path) -> bool:
    """Whether a subfolder is hidden or bookkeeping (``.ipynb_checkpoints``,
    ``_temporary``), whose files are no parts (Spark and Hive skip them too)."""
    return any(part.startswith((".", "_")) for part in folder.parts)


def _known_format(path: str) -> bool:
    try:
        table_format(path)
    except WinrateInputError:
        return False
    return True


#: Compressed CSV both engines read (DuckDB reads gzip and zstd, Spark gzip and bzip2).
_ENGINE_COMPRESSION = ("", ".gz")


def _part_kind(path: str) -> str:
    """A part's format as the engines read it (``parquet``, ``csv`` or ``tsv``): the format
    :func:`winrate.io.logs.table_format` gives it, the same as in memory; an error for a
    format or compression the engines do not read."""
    fmt = table_format(path)
    name = Path(path).name
    compression = compression_of(path)
    if fmt in ("json", "jsonl"):
        raise WinrateInputError(f"{name!r} is {fmt.upper()}: DuckDB and Spark read CSV, TSV "
                                "and Parquet here; read a JSON file by itself, in memory")
    if compression not in _ENGINE_COMPRESSION or (fmt == "parquet" and compression):
        raise WinrateInputError(f"{name!r} is {compression[1:]}-compressed: DuckDB and Spark "
                                "read CSV and TSV plain or gzip-compressed (.gz) only; "
                                "decompress it or gzip it")
    return fmt


def csv_separator(kind: str) -> str:
    """The field separator of a delimited part kind (``csv``: comma, ``tsv``: tab)."""
    return SEPARATORS[kind]


def engine_errors() -> tuple[type, ...]:
    """The exception classes an engine raises on a source it cannot read: DuckDB's, and
    PySpark's and Py4J's when they are loaded (they are never imported for this)."""
    import duckdb

    found: list[type] = [duckdb.Error]
    spark = sys.modules.get("pyspark.errors")
    if spark is not None:
        found.append(spark.PySparkException)
    py4j = sys.modules.get("py4j.protocol")
    if py4j is not None:
        found.append(py4j.Py4JError)
    return tuple(found)


@contextmanager
def reading(source, engine: str):
    """Turn an engine's failure to read ``source`` into the one-line error the in-memory
    reader gives for the same file (a CSV or TSV part that is not UTF-8, or has a ragged
    line: :func:`winrate.io.logs.check_delimited`, with the file's line), else one line
    naming the source, the engine and its first line of explanation; never a traceback."""
    try:
        yield
    except engine_errors() as error:
        if not _out_of_resources(error):  # a file problem, not the engine's memory
            diagnose_parts(source)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "the source"
        raise WinrateInputError(f"{engine} could not read {name!r}: {first[:300]}") from None


def _out_of_resources(error: Exception) -> bool:
    """Whether an engine failed for want of memory or was interrupted (then reading every
    part again to find a problem in the files would only take long)."""
    import duckdb

    return (isinstance(error, (duckdb.OutOfMemoryException, duckdb.InterruptException))
            or "OutOfMemory" in str(error))


def diagnose_parts(source) -> None:
    """Raise the in-memory reader's error for the first CSV / TSV part of ``source`` it
    fails on (:func:`winrate.io.logs.check_delimited`); return if every part reads, or
    ``source`` is no local file."""
    if not isinstance(source, (str, os.PathLike)) or is_uri(source):
        return
    files, kind = source_files(source)
    if kind in SEPARATORS:
        for path in files:  # the error path: one file at a time, each in chunks
            check_delimited(path)


#: A URI scheme (``s3a://``, ``dbfs:/``); one letter is a Windows drive, not a scheme.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def is_uri(source) -> bool:
    """Whether ``source`` names a location by URI (read by Spark), not a local path."""
    return isinstance(source, (str, os.PathLike)) and bool(_SCHEME.match(os.fspath(source)))


#: view names unique within the process, so scans can share one connection
_VIEWS = itertools.count(1)


#: Prefix of a DuckDB engine's scratch folder in the temporary directory, followed by the
#: process id and a random part.
SCRATCH_PREFIX = "winrate-duckdb-"


def remove_stale_scratch(folder: str | None = None) -> None:
    """Remove the scratch folders (in ``folder``, default the temporary directory) of
    winrate processes that no longer run: a folder whose process id answers no signal 0.
    A folder of a running process, of another user's (no permission to signal) or
    without a process id is kept."""
    folder = folder or tempfile.gettempdir()
    for name in os.listdir(folder):
        pid = name[len(SCRATCH_PREFIX):].split("-")[0]
        if not (name.startswith(SCRATCH_PREFIX) and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


class DuckDBEngine(Engine):
    """DuckDB in-process, with ``memory_limit`` bytes (None: DuckDB's default, 80% of the
    machine) and ``threads`` (None: every core); ``connection`` to reuse the user's, whose
    settings are left as they are (the memory limit and threads are the user's to set)."""

    name = "duckdb"

    def __init__(self, memory_limit: int | None = None, threads: int | None = None,
                 connection=None):
        import duckdb

        self._strict: dict[str, tuple[object, str]] = {}  # CSV views not yet relaxed
        self._registered: set[str] = set()  # frames registered as tables
        self._own = connection is None
        if connection is not None:
            self.connection = connection
            return
        self.connection = duckdb.connect()
        self._spill_to_scratch()
        if memory_limit is not None:
            self.limit_memory(memory_limit)
        if threads is not None:
            self.connection.execute(f"SET threads = {int(threads)}")
        self.connection.execute("SET preserve_insertion_order = false")

    def _spill_to_scratch(self) -> None:
        """Spill to a folder of the system's temporary directory, removed with the engine,
        not to DuckDB's default ``.tmp`` in the caller's working directory (left behind
        in the user's project). The folder is named after this process, so that the
        folders of processes stopped before they could remove theirs (a killed run may
        leave tens of GB) are removed by the next engine (:func:`remove_stale_scratch`)."""
        remove_stale_scratch()
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)
        self.connection.execute(f"SET temp_directory = '{scratch}'")

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
            self._view_files(name, source)
        else:
            self.connection.register(name, source)  # a pandas DataFrame or Arrow table
        return name

    def _view_files(self, name: str, source) -> None:
        """A view over the files ``source`` names: Parquet by name; CSV / TSV in the
        in-memory reader's dialect (its separator, ``"`` quotes, every field as text),
        read in parallel with DuckDB's strict checks. Where DuckDB refuses a file that the
        in-memory reader may read (mixed line endings, a short line, which pandas pads
        with missing values), :meth:`_relax` decides, at the view or at the first query."""
        import duckdb

        files, kind = source_files(source)
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        if kind == "parquet":
            self.connection.execute(f"CREATE VIEW {name} AS SELECT * FROM "
                                    f"read_parquet([{listed}], union_by_name = true)")
            return
        reader = (f"read_csv([{listed}], union_by_name = true, all_varchar = true, "
                  f"header = true, delim = '{csv_separator(kind)}', quote = '\"', "
                  "escape = '\"'")
        relaxed = (f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {reader}, "
                   "null_padding = true, parallel = false, strict_mode = false)")
        try:
            self.connection.execute(f"CREATE VIEW {name} AS SELECT * FROM {reader})")
        except duckdb.Error:
            self._relax(source, relaxed)
            return
        self._strict[name] = (source, relaxed)

    def _relax(self, source, relaxed: str) -> None:
        """After DuckDB refused a CSV source: the in-memory reader checks each part and its
        error is raised (the same text as in memory, :func:`diagnose_parts`); when every
        part reads, the view is made again as ``relaxed`` (short lines padded with NULLs,
        DuckDB's line checks off: the in-memory reader has just done them)."""
        diagnose_parts(source)
        self.connection.execute(relaxed)

    def _retrying(self, run):
        """``run()``; when DuckDB fails and a CSV view is still strict, every such view is
        relaxed (:meth:`_relax`, which raises the file's error if it has one) and ``run()``
        runs once more."""
        import duckdb

        try:
            return run()
        except duckdb.Error as error:
            if not self._strict or _out_of_resources(error):
                raise
        strict, self._strict = self._strict, {}
        for source, relaxed in strict.values():
            self._relax(source, relaxed)
        return run()

    def query(self, sql: str):
        return self._retrying(lambda: self.connection.sql(sql).to_arrow_table())


    def limit_memory(self, limit: int) -> None:
        if self._own:
            self.connection.execute(f"SET memory_limit = '{int(limit) >> 20}MB'")

    def register(self, name: str, frame) -> None:
        self.connection.register(name, frame)
        self._registered.add(name)

    def materialize(self, name: str, sql: str) -> None:
        self._retrying(lambda: self.connection.execute(f"CREATE TEMP TABLE {name} AS {sql}"))

    def drop(self, name: str) -> None:
        if name in self._registered:
            self._registered.discard(name)
            self.connection.unregister(name)
        else:
            self.connection.execute(f"DROP TABLE IF EXISTS {name}")
