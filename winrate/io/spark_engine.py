"""Spark as a scan's engine: the :class:`~winrate.io.engine.Engine` protocol on a user's
``SparkSession``.

A scan's SQL runs unchanged on Spark SQL (:mod:`winrate.io.engine`); this module only makes
sources queryable as temporary views and brings results back to the driver as Arrow. PySpark
is an extra (``pip install winrate[spark]``) and is imported only inside the methods below,
so importing winrate never loads it.

Sources (:meth:`SparkEngine.table`):

* a Spark DataFrame of the engine's session: registered as a temporary view as it is;
* a local path, glob or folder of Parquet or CSV files (listed by
  :func:`winrate.io.engine.source_files`): Parquet with ``mergeSchema`` (a column missing
  from some files reads as NULL there, as DuckDB's ``union_by_name``), a folder's
  ``key=value`` subfolders as partition columns; CSV with a header row, ``,`` or (``.tsv``)
  a tab between fields, every field as text (as DuckDB's engine reads CSV, so that ids
  stay as written; the scan's SQL casts numbers where it uses them), and a malformed row
  stops the read instead of turning into NULLs;
* a URI with a scheme Spark reads (``s3a://``, ``hdfs://``, ``abfss://``, ``gs://``,
  ``dbfs:/``, ...): handed to Spark's reader unlisted (a glob or partitioned folder
  included), as CSV when it ends in a CSV suffix and as Parquet otherwise;
* a pandas DataFrame or Arrow table: copied into Spark through Arrow
  (``createDataFrame``), so it must fit the driver.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from winrate.errors import WinrateInputError
from winrate.io.engine import CSV_SUFFIXES, Engine, is_uri, source_files

#: What to install for this engine.
SPARK_EXTRA = "pip install winrate[spark]"
#: Debian's Java runtime for Spark 4 (Java 17 or later).
JAVA_PACKAGE = "openjdk-17-jre-headless"
_VIEWS = itertools.count(1)


def _pyspark_sql():
    """``pyspark.sql``, or an error naming the extra when PySpark is not installed."""
    try:
        import pyspark.sql
    except ImportError:
        raise WinrateInputError(f"engine 'spark' needs PySpark, which is not installed: "
                                f"{SPARK_EXTRA}") from None
    return pyspark.sql


class SparkEngine(Engine):
    """Spark SQL through ``session``, a user's ``SparkSession`` (None: the active one).
    The session's Arrow transfer (``spark.sql.execution.arrow.pyspark.enabled``) is
    switched on; nothing else about it changes. :meth:`local` builds a small local one."""

    name = "spark"

    def __init__(self, session=None):
        sql = _pyspark_sql()
        session = session if session is not None else sql.SparkSession.getActiveSession()
        if session is None:
            raise WinrateInputError("engine 'spark': no active SparkSession; pass yours as "
                                    "SparkEngine(spark), or use SparkEngine.local()")
        self.session = session
        session.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")

    @classmethod
    def local(cls, cores: int = 2, memory: str = "1g", partitions: int = 4,
              log_level: str = "ERROR") -> SparkEngine:
        """An engine on a local session: ``local[cores]``, no web UI, ``partitions``
        shuffle partitions (Spark's default of 200 suits clusters, not one machine),
        ``memory`` for the driver, only log lines at ``log_level`` or above. If a session
        is already running in this process, Spark returns it and ignores the settings
        that only apply at start. Its Python workers run this interpreter (unless
        ``PYSPARK_PYTHON`` says otherwise), so they see the same packages. An error names
        Java's package when the session cannot start."""
        sql = _pyspark_sql()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (sql.SparkSession.builder.master(f"local[{int(cores)}]")
                   .appName("winrate")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", str(int(partitions)))
                   .config("spark.driver.memory", memory))
        try:
            session = builder.getOrCreate()
        except Exception as error:  # PySpark raises its own runtime error class
            raise WinrateInputError(
                f"engine 'spark': a local Spark session did not start ({error}); Spark 4 "
                f"needs Java 17 or later (Debian: apt-get install {JAVA_PACKAGE})") from None
        session.sparkContext.setLogLevel(log_level)
        return cls(session)

    @classmethod
    def for_source(cls, source) -> SparkEngine:
        """The engine for scanning ``source``: on a Spark DataFrame's own session; else on
        the active session (a notebook's ``spark``); else on a new :meth:`local` one."""
        sql = _pyspark_sql()
        if isinstance(source, sql.DataFrame):
            return cls(source.sparkSession)
        active = sql.SparkSession.getActiveSession()
        return cls(active) if active is not None else cls.local()

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
            return self._view(source)
        if isinstance(source, (str, os.PathLike)):
            return self._view(self._read(os.fspath(source)))
        return self._view(self.session.createDataFrame(source))

    def _read(self, text: str):
        """A DataFrame over the files ``text`` names (module doc)."""
        reader = self.session.read
        if is_uri(text):
            files, kind = [text], ("csv" if text.lower().endswith(CSV_SUFFIXES) else "parquet")
        else:
            files, kind = source_files(text)
            if Path(text).is_dir():
                reader = reader.option("basePath", text)
        if kind == "parquet":
            return reader.option("mergeSchema", "true").parquet(*files)
        tabs = {f.lower().endswith(".tsv") for f in files}
        if len(tabs) > 1:
            raise WinrateInputError(f"{text!r} holds both .tsv and comma-separated files: "
                                    f"scan one kind")
        return reader.csv(files, header=True, inferSchema=False, mode="FAILFAST",
                          sep="\t" if tabs.pop() else ",")

    def query(self, sql: str):
        """The result as one Arrow table, collected on the driver."""
        return self.session.sql(sql).toArrow()

    def batches(self, sql: str, rows: int = 1 << 20) -> Iterator:
        """The result as Arrow record batches of at most ``rows`` rows.

        The executors cut each partition of the result into batches and serialize each as
        an Arrow IPC stream (``mapInArrow``); the driver fetches one partition at a time
        (``toLocalIterator`` without prefetch). The driver's memory is thus bounded by the
        largest partition of the result (for a ``GROUP BY``, one of
        ``spark.sql.shuffle.partitions``; for a plain scan, about
        ``spark.sql.files.maxPartitionBytes`` of input), never the whole result. The cutter
        is defined here, not at module level, so that it is pickled by value and the
        executors need PyArrow but not winrate."""
        rows = int(rows)

        def serialize(parts):
            import pyarrow as pa

            def stream(batch):
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, batch.schema) as writer:
                    writer.write_batch(batch)
                payload = pa.array([sink.getvalue().to_pybytes()], pa.binary())
                return pa.RecordBatch.from_arrays([payload], names=["batch"])

            held, count = [], 0
            for part in parts:
                held.append(part)
                count += part.num_rows
                while count >= rows:
                    whole = pa.Table.from_batches(held).combine_chunks()
                    yield stream(whole.slice(0, rows).to_batches()[0])
                    rest = whole.slice(rows)
                    held, count = rest.to_batches(), rest.num_rows
            if count:
                yield stream(pa.Table.from_batches(held).combine_chunks().to_batches()[0])

        import pyarrow as pa

        frame = self.session.sql(sql).mapInArrow(serialize, "batch binary")
        for row in frame.toLocalIterator(prefetchPartitions=False):
            yield from pa.ipc.open_stream(pa.py_buffer(row[0]))
