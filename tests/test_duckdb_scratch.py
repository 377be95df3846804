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


def test_a_stopped_runs_scratch_is_removed_by_the_next_engine(tmp_path, monkeypatch):
    """A run stopped by a signal cannot remove its scratch folder (a 1,000M-row run left
    47 GB); the next engine removes the folders of processes that no longer run and keeps
    those of running ones and folders it cannot attribute."""
    import subprocess
    import sys

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    stale = tmp_path / f"winrate-duckdb-{int(finished.stdout)}-abc"
    (stale / "spill").mkdir(parents=True)
    (stale / "spill" / "block.tmp").write_bytes(b"x" * 1024)
    running = tmp_path / f"winrate-duckdb-{os.getpid()}-def"
    running.mkdir()
    unknown = tmp_path / "winrate-duckdb-ghi"
    unknown.mkdir()
    engine = DuckDBEngine()
    (scratch,) = engine.connection.execute(
        "SELECT current_setting('temp_directory')").fetchone()
    assert os.path.dirname(scratch) == str(tmp_path)
    assert os.path.basename(scratch).startswith(f"winrate-duckdb-{os.getpid()}-")
    assert not stale.exists()
    assert running.exists() and unknown.exists()
