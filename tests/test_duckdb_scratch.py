"""Where DuckDB spills: a connection winrate opens writes its temporary files to a folder
of the system's temporary directory, removed with the engine, never to DuckDB's default
``.tmp`` in the caller's working directory (found left in a project after a
larger-than-memory run)."""

import gc
import os
import tempfile

import pytest

pytest.importorskip("duckdb")

from winrate.io.engine import DuckDBEngine  # noqa: E402


def test_a_spilling_connection_writes_nothing_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engine = DuckDBEngine(memory_limit=64 << 20)
    (scratch,) = engine.connection.execute(
        "SELECT current_setting('temp_directory')").fetchone()
    assert os.path.dirname(scratch) == tempfile.gettempdir()
    # a table five times the limit: DuckDB evicts its blocks to the temporary directory
    connection = engine.connection
    connection.execute("SET enable_progress_bar = false")
    connection.execute("CREATE TABLE t AS SELECT i, hash(i) AS h FROM range(20000000) t(i)")
    assert connection.execute("SELECT count(*) FROM t").fetchone()[0] == 20_000_000
    assert os.listdir(scratch)  # it spilled, there
    assert list(tmp_path.iterdir()) == []
    del engine
    gc.collect()
    assert not os.path.exists(scratch)
