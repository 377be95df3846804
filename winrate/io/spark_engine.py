"""Spark as a scan's engine: the :class:`~winrate.io.engine.Engine` protocol on a user's
``SparkSession``.

A scan's SQL runs unchanged on Spark SQL (:mod:`winrate.io.engine`); this module only makes
sources queryable as temporary views, registers winrate's small tables, caches results the
executors compute for later queries, and brings the (reduced) results back as Arrow. PySpark
is an extra (``pip install winrate[spark]``) and is imported only inside the methods below,
so importing winrate never loads it.

Sources (:meth:`SparkEngine.table`):

* a Spark DataFrame of the engine's session: registered as a temporary view as it is;
* a local path, glob or folder of Parquet or CSV files (listed by
  :func:`winrate.io.engine.source_files`): Parquet with ``mergeSchema`` (a column missing
  from some files reads as NULL there, as DuckDB's ``union_by_name``), a folder's
  ``key=value`` subfolders as partition columns; CSV with a header row, ``,`` or (TSV)
  a tab between fields, quoted fields as RFC 4180 and pandas write them (a newline inside
  quotes, a doubled quote; Spark then reads each CSV file in one task: a large log is
  faster as many files or as Parquet), every field as text (as DuckDB's engine reads CSV,
  so that ids stay as written; the scan's SQL casts numbers where it uses them), and a
  malformed row
  stops the read instead of turning into NULLs;
* a URI with a scheme Spark reads (``s3a://``, ``hdfs://``, ``abfss://``, ``gs://``,
  ``dbfs:/``, ...): handed to Spark's reader unlisted (a glob or partitioned folder
  included), as CSV when it ends in a CSV suffix and as Parquet otherwise;
* a pandas DataFrame or Arrow table: copied into Spark through Arrow
  (``createDataFrame``), so it must fit the driver.

Memory and the watchdog. A local session winrate starts (:meth:`SparkEngine.local`, or
:meth:`SparkEngine.for_source` for a scan when no session runs) gives the driver half the
memory budget as its Java heap (:func:`driver_memory`; the rest covers Java's own overhead
and the Python side), and Java exits on its first OutOfMemoryError instead of living on
without the thread that died. A session that was running is used as it is (its memory is
fixed when it starts), with a note when its driver has less than that share. While Spark
works for winrate (:meth:`~SparkEngine.table`, :meth:`~SparkEngine.query`,
:meth:`~SparkEngine.register`, :meth:`~SparkEngine.materialize`), a watchdog looks at
the Java process behind the session every :data:`WATCH_INTERVAL` seconds: Java that
exited (out of memory, killed) or, for a session winrate started, that has not answered
a trivial call for :data:`PATIENCE` seconds (then stopped, so that the waiting call
returns) ends the work in a one-line :class:`~winrate.errors.WinrateInputError` saying
what happened and what to do.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.io.engine import CSV_SUFFIXES, Engine, csv_separator, is_uri, source_files
from winrate.io.logs import table_format

#: What to install for this engine.
SPARK_EXTRA = "pip install winrate[spark]"
#: Debian's Java runtime for Spark 4 (Java 17 or later).
JAVA_PACKAGE = "openjdk-17-jre-headless"
_VIEWS = itertools.count(1)

#: A local session's driver gets 1 / DRIVER_SHARE of the memory budget as its heap.
DRIVER_SHARE = 2
#: The least heap a driver is given (Spark refuses to start below about 450 MiB).
MIN_DRIVER_MEMORY = 512 << 20
#: Spark's driver heap when nothing sets it.
SPARK_DEFAULT_DRIVER = "1g"
#: A local session's Java exits on its first OutOfMemoryError (then reported as such),
#: and writes its own messages to stderr (stdout may carry a command's output).
DRIVER_JAVA_OPTIONS = "-XX:+ExitOnOutOfMemoryError -XX:+DisplayVMOutputToStderr"
#: Java's exit status after ``-XX:+ExitOnOutOfMemoryError``.
OUT_OF_MEMORY_EXIT = 3
#: The Spark setting that marks a session winrate started (the watchdog may stop its Java).
STARTED_BY_WINRATE = "spark.winrate.started"
#: Seconds between the watchdog's looks at Java.
WATCH_INTERVAL = 1.0
#: Seconds Java of a session winrate started may go without answering a trivial call
#: before the watchdog stops it.
PATIENCE = 30.0
#: Seconds a call that lost its connection to Java waits for Java's exit status.
GRACE = 2.0
#: The loggers Py4J reports a call cut off by Java's end to (with its traceback).
PY4J_LOGGERS = ("", "py4j.java_gateway", "py4j.clientserver")


def _pyspark_sql():
    """``pyspark.sql``, or an error naming the extra when PySpark is not installed."""
    try:
        import pyspark.sql
    except ImportError:
        raise WinrateInputError(f"engine 'spark' needs PySpark, which is not installed: "
                                f"{SPARK_EXTRA}") from None
    return pyspark.sql


def driver_memory(budget: int) -> int:
    """The driver heap (bytes, whole MiB) of a local session for a memory budget of
    ``budget`` bytes: :data:`DRIVER_SHARE`'s share, at least :data:`MIN_DRIVER_MEMORY`."""
    return max(int(budget) // DRIVER_SHARE, MIN_DRIVER_MEMORY) >> 20 << 20


def java_bytes(size: str) -> int:
    """Bytes of a Spark memory setting (``"1g"``, ``"512m"``, ``"4096"``: MiB when no unit,
    as ``spark.driver.memory`` reads it)."""
    found = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", size.lower())
    if found is None:
        raise WinrateInputError(f"engine 'spark': {size!r} is not a memory size")
    return int(found.group(1)) << (10 * " kmgtp".index(found.group(2) or "m"))


def _java_process(session) -> subprocess.Popen | None:
    """The Java process this interpreter started for ``session`` (None: not started here,
    as with Spark Connect or under ``spark-submit``)."""
    try:
        gateway = session.sparkContext._gateway
    except Exception:  # Spark Connect has no gateway to a local Java
        return None
    return getattr(gateway, "proc", None)


def _java_exit(status: int) -> str:
    """What Java's exit ``status`` (negative: the signal) says, and what to do."""
    if status == OUT_OF_MEMORY_EXIT:
        return ("Java (the Spark driver) ran out of memory and exited: raise the memory "
                "budget (a session winrate starts gives the driver half of it)")
    how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
    return (f"Java (the Spark driver) {how} during the work; if the system ran out of "
            "memory, lower the memory budget, else run again")


def _uri_kind(uri: str) -> str:
    """The format of the files a URI names: CSV or TSV by its suffix (gzipped or not, as
    :func:`winrate.io.logs.table_format` tells), else Parquet (a file, folder or glob)."""
    return table_format(uri) if uri.lower().endswith(CSV_SUFFIXES) else "parquet"


def _lost_java(error) -> bool:
    """Whether ``error`` is what a call gets when its connection to Java breaks (not an
    error Java answered with)."""
    from py4j.protocol import Py4JError, Py4JJavaError

    return (isinstance(error, (OSError, EOFError, Py4JError))
            and not isinstance(error, Py4JJavaError))


class _Watchdog:
    """Watches ``process``, the Java behind a session, while Spark works (module doc): one
    thread calls ``ping`` (a trivial call into Java) every :data:`WATCH_INTERVAL` seconds
    and notes when it answered; another checks that Java runs and, when ``stop_hung``,
    stops Java that has not answered for :data:`PATIENCE` seconds. On leaving, what it
    found (or Java's exit, when a call lost its connection to it) is one line of
    :class:`~winrate.errors.WinrateInputError`; Py4J's logs of calls to the Java gone (a
    traceback each, also for later calls such as freeing Java objects) are left out."""

    def __init__(self, process: subprocess.Popen, ping, stop_hung: bool):
        self.process, self.ping, self.stop_hung = process, ping, stop_hung
        self.answered = time.monotonic()
        self.verdict: str | None = None
        self.done = threading.Event()

    def __enter__(self) -> _Watchdog:
        for name in PY4J_LOGGERS:
            logging.getLogger(name).addFilter(self)
        for watch in (self._pinger, self._monitor):
            threading.Thread(target=watch, name="winrate-spark-watchdog", daemon=True).start()
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        self.done.set()
        self.verdict = self.verdict or self._exited(GRACE if _lost_java(error) else 0)
        if self.verdict is None:
            for name in PY4J_LOGGERS:
                logging.getLogger(name).removeFilter(self)
        else:
            raise WinrateInputError(f"engine 'spark': {self.verdict}") from None
        return False

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep a log record unless it is Py4J's and Java is gone (the error says so)."""
        from_py4j = record.name.startswith("py4j") or f"{os.sep}py4j{os.sep}" in record.pathname
        return not from_py4j or (self.verdict or self._exited(GRACE)) is None

    def _pinger(self) -> None:
        while not self.done.is_set():
            try:
                self.ping()
            except Exception:  # no answer will come: the monitor judges why
                return
            self.answered = time.monotonic()
            self.done.wait(WATCH_INTERVAL)

    def _monitor(self) -> None:
        while not self.done.wait(WATCH_INTERVAL) and self.verdict is None:
            self.verdict = self._exited(0)
            silent = time.monotonic() - self.answered
            if self.verdict is None and self.stop_hung and silent > PATIENCE:
                self.verdict = (f"Java (the Spark driver) did not answer for {silent:.0f} s "
                                "and was stopped; if it was short of memory, raise the "
                                "memory budget")
                self.process.kill()  # the call waiting on Java returns

    def _exited(self, wait: float) -> str | None:
        """:func:`_java_exit` once Java has exited (waiting up to ``wait`` s), else None."""
        try:
            status = self.process.wait(wait) if wait else self.process.poll()
        except subprocess.TimeoutExpired:
            return None
        return None if status is None else _java_exit(status)


class SparkEngine(Engine):
    """Spark SQL through ``session``, a user's ``SparkSession`` (None: the active one).
    The session's Arrow transfer (``spark.sql.execution.arrow.pyspark.enabled``) is
    switched on; nothing else about it changes. :meth:`local` builds a small local one.
    Spark's work for winrate runs under a watchdog (module doc)."""

    name = "spark"

    def __init__(self, session=None):
        sql = _pyspark_sql()
        session = session if session is not None else sql.SparkSession.getActiveSession()
        if session is None:
            raise WinrateInputError("engine 'spark': no active SparkSession; pass yours as "
                                    "SparkEngine(spark), or use SparkEngine.local()")
        self.session = session
        session.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        self._java = _java_process(session)
        self._started = self._java is not None and self._setting(STARTED_BY_WINRATE) == "true"
        self._cached: dict[str, object] = {}  # materialized views: name -> DataFrame

    @classmethod
    def local(cls, cores: int = 2, memory: int | None = None, partitions: int = 4,
              log_level: str = "ERROR") -> SparkEngine:
        """An engine on a local session: ``local[cores]``, no web UI, ``partitions``
        shuffle partitions (Spark's default of 200 suits clusters, not one machine), only
        log lines at ``log_level`` or above. ``memory`` is the memory budget in bytes: the
        driver's heap is :func:`driver_memory` of it (None: Spark's default, 1 GiB); Java
        exits on an OutOfMemoryError (module doc).
        If a session is already running in this process, Spark returns it and ignores the
        settings that only apply at start. Its Python workers run this interpreter (unless
        ``PYSPARK_PYTHON`` says otherwise), so they see the same packages. An error names
        Java's package when the session cannot start."""
        sql = _pyspark_sql()
        heap = SPARK_DEFAULT_DRIVER if memory is None else f"{driver_memory(memory) >> 20}m"
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (sql.SparkSession.builder.master(f"local[{int(cores)}]")
                   .appName("winrate")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", str(int(partitions)))
                   .config("spark.driver.memory", heap)
                   .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
                   .config(STARTED_BY_WINRATE, "true"))
        try:
            session = builder.getOrCreate()
        except Exception as error:  # PySpark raises its own runtime error class
            raise WinrateInputError(
                f"engine 'spark': a local Spark session did not start ({error}); Spark 4 "
                f"needs Java 17 or later (Debian: apt-get install {JAVA_PACKAGE})") from None
        session.sparkContext.setLogLevel(log_level)
        return cls(session)

    @classmethod
    def for_source(cls, source, memory: int | None = None, check: bool = False
                   ) -> SparkEngine:
        """The engine for scanning ``source``: on a Spark DataFrame's own session; else on
        the active session (a notebook's ``spark``); else on a new :meth:`local` one for
        the memory budget ``memory`` (bytes). A running session is used as it is; with
        ``check`` (a budget the user gave), a note (code ``spark-driver-memory``) says when
        its driver has less heap than a local one's would."""
        sql = _pyspark_sql()
        session = (source.sparkSession if isinstance(source, sql.DataFrame)
                   else sql.SparkSession.getActiveSession())
        if session is None:
            return cls.local(memory=memory)
        engine = cls(session)
        if check and memory is not None:
            engine.note_a_smaller_driver(memory)
        return engine

    def _setting(self, key: str, default: str | None = None) -> str | None:
        """A setting the session's Spark context started with (None under Spark Connect,
        which has no context to ask)."""
        try:
            conf = self.session.sparkContext.getConf()
        except Exception:  # PySpark's error for an API Spark Connect lacks
            return None
        return conf.get(key, default)

    def note_a_smaller_driver(self, memory: int) -> None:
        """Note when this session's driver has less heap than a local session for the
        memory budget ``memory`` would (a session's memory is fixed when it starts)."""
        size = self._setting("spark.driver.memory", SPARK_DEFAULT_DRIVER)
        if size is None:
            return
        have = java_bytes(size)
        if have < driver_memory(memory):
            notes.emit(notes.spark_driver_memory(have, driver_memory(memory), memory))

    def _watched(self):
        """The watchdog over this session's Java (module doc); none when this interpreter
        did not start it."""
        if self._java is None:
            return nullcontext()
        jvm = self.session.sparkContext._jvm
        return _Watchdog(self._java, lambda: jvm.java.lang.System.nanoTime(), self._started)

    def _view(self, frame) -> str:
        name = f"winrate_spark_{next(_VIEWS)}"
        frame.createOrReplaceTempView(name)
        return name

    def table(self, source) -> str:
        """A temporary view over ``source`` (module doc: the kinds and how each is read)."""
        sql = _pyspark_sql()
        if isinstance(source, sql.DataFrame):
            if source.sparkSession is not self.session:
                raise WinrateInputError("engine 'spark': the DataFrame belongs to another "
                                        "SparkSession than the engine's")
            with self._watched():
                return self._view(source)
        with self._watched():
            if isinstance(source, (str, os.PathLike)):
                return self._view(self._read(os.fspath(source)))
            return self._view(self.session.createDataFrame(source))

    def _read(self, text: str):
        """A DataFrame over the files ``text`` names (module doc)."""
        reader = self.session.read
        if is_uri(text):
            files, kind = [text], _uri_kind(text)
        else:
            files, kind = source_files(text)
            if Path(text).is_dir():
                reader = reader.option("basePath", text)
        if kind == "parquet":
            return reader.option("mergeSchema", "true").parquet(*files)
        return reader.csv(files, header=True, inferSchema=False, mode="FAILFAST",
                          sep=csv_separator(kind), multiLine=True, escape='"')

    def register(self, name: str, frame) -> None:
        """A pandas ``frame`` as the temporary view ``name`` (the scan's SQL hints Spark to
        broadcast it to the executors)."""
        with self._watched():
            self.session.createDataFrame(frame).createOrReplaceTempView(name)

    def materialize(self, name: str, sql: str) -> None:
        """The result of ``sql`` cached by the executors (memory, then disk) as the
        temporary view ``name``; computed now (a count), so later queries read it."""
        with self._watched():
            frame = self.session.sql(sql).persist()
            frame.count()
            frame.createOrReplaceTempView(name)
            self._cached[name] = frame

    def drop(self, name: str) -> None:
        with self._watched():
            self.session.catalog.dropTempView(name)
            cached = self._cached.pop(name, None)
            if cached is not None:
                cached.unpersist()

    def query(self, sql: str):
        """The result as one Arrow table, collected on the driver."""
        with self._watched():
            return self.session.sql(sql).toArrow()
