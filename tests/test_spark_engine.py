"""SparkEngine (winrate/io/spark_engine.py) answers the engine protocol as DuckDBEngine does.

Every source kind goes through both engines and the same group-by queries; the results must
agree after sorting, integer sums exactly and float sums to 1e-12 relative, and both must
agree with a pandas ``groupby`` on the log itself (the independent oracle). Batches must
cover every row exactly once, at most ``rows`` at a time. One local Spark session per test
worker (the ``spark_engine`` fixture in tests/conftest.py).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from winrate.errors import WinrateInputError
from winrate.io.engine import DuckDBEngine

N_ROWS = 3_000
KEYS = ["model_a", "model_b"]
#: The pass-1 shape: counts, an integer sum, weighted first and second moments.
PAIR_SUMS = ("SELECT model_a, model_b, COUNT(*) AS n, SUM(votes) AS votes, "
             "SUM(weight * score) AS fs, SUM(weight * score * score) AS fs2, "
             "SUM(weight * weight) AS f2 FROM {table} GROUP BY model_a, model_b")
INTEGER_COLUMNS = ("n", "votes")
FLOAT_COLUMNS = ("fs", "fs2", "f2")


def seeded_log(seed: int = 23, n: int = N_ROWS) -> pd.DataFrame:
    """A random log with string ids, ties, integer vote counts and float weights; no NULLs."""
    rng = np.random.default_rng(seed)
    models = np.array([f"model-{i}" for i in range(7)])
    a, b = rng.choice(7, n), rng.choice(6, n)
    b = b + (b >= a)  # never a model against itself
    return pd.DataFrame({
        "row_id": np.arange(n),
        "model_a": models[a], "model_b": models[b],
        "prompt": np.char.add("p", rng.integers(0, 150, n).astype(str)),
        "judge": np.char.add("judge-", rng.integers(0, 4, n).astype(str)),
        "score": rng.choice([0.0, 0.5, 1.0], n),
        "votes": rng.integers(1, 5, n),
        "weight": rng.gamma(2.0, 0.7, n),
    })


def pandas_pair_sums(log: pd.DataFrame) -> pd.DataFrame:
    """PAIR_SUMS computed by pandas on the log itself."""
    frame = log.assign(fs=log.weight * log.score, fs2=log.weight * log.score ** 2,
                       f2=log.weight ** 2)
    grouped = frame.groupby(KEYS).agg(n=("score", "size"), votes=("votes", "sum"),
                                      fs=("fs", "sum"), fs2=("fs2", "sum"), f2=("f2", "sum"))
    return grouped.reset_index()


def sorted_frame(table) -> pd.DataFrame:
    frame = table.to_pandas() if isinstance(table, pa.Table) else table
    return frame.sort_values(KEYS).reset_index(drop=True)


def assert_same_sums(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert got[KEYS].equals(expected[KEYS])
    for column in INTEGER_COLUMNS:  # DuckDB's SUM of BIGINT is a 128-bit integer
        assert [int(v) for v in got[column]] == [int(v) for v in expected[column]], column
    for column in FLOAT_COLUMNS:
        np.testing.assert_allclose(got[column].astype(float), expected[column].astype(float),
                                   rtol=1e-12, atol=0, err_msg=column)


def column_dict(table: pa.Table, key: str, value: str) -> dict:
    return dict(zip(table[key].to_pylist(), table[value].to_pylist(), strict=True))


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return seeded_log()


@pytest.fixture(scope="module")
def files(log, tmp_path_factory):
    """The log as one Parquet file, a folder of Parquet parts, a hive-partitioned folder
    (``judge=...`` subfolders), CSV parts under a glob and one TSV file."""
    root = tmp_path_factory.mktemp("spark_sources")
    table = pa.Table.from_pandas(log, preserve_index=False)
    pq.write_table(table, root / "log.parquet")
    (root / "parts").mkdir()
    (root / "csv").mkdir()
    for part, rows in enumerate(np.array_split(np.arange(len(log)), 3)):
        pq.write_table(table.take(rows), root / "parts" / f"part-{part}.parquet")
        log.iloc[rows].to_csv(root / "csv" / f"part-{part}.csv", index=False)
    pq.write_to_dataset(table, root / "hive", partition_cols=["judge"])
    log.to_csv(root / "log.tsv", sep="\t", index=False)
    return root


SOURCES = {
    "parquet file": lambda log, root, spark: str(root / "log.parquet"),
    "parquet folder": lambda log, root, spark: root / "parts",
    "parquet glob": lambda log, root, spark: str(root / "parts" / "*.parquet"),
    "hive-partitioned folder": lambda log, root, spark: str(root / "hive"),
    "csv glob": lambda log, root, spark: str(root / "csv" / "part-*.csv"),
    "tsv file": lambda log, root, spark: str(root / "log.tsv"),
    "pandas": lambda log, root, spark: log,
    "arrow": lambda log, root, spark: pa.Table.from_pandas(log, preserve_index=False),
}


@pytest.mark.parametrize("kind", SOURCES)
def test_every_source_kind_gives_duckdbs_and_pandas_sums(kind, log, files, spark_engine):
    source = SOURCES[kind](log, files, spark_engine.session)
    spark = spark_engine.query(PAIR_SUMS.format(table=spark_engine.table(source)))
    duck = DuckDBEngine(threads=1)
    duckdb = duck.query(PAIR_SUMS.format(table=duck.table(source)))
    expected = pandas_pair_sums(log)
    assert_same_sums(sorted_frame(spark), expected)
    assert_same_sums(sorted_frame(duckdb), expected)


def test_a_spark_dataframe_and_a_uri_are_sources(log, files, spark_engine):
    """The user's own DataFrame, and a path given as a URI (the branch an ``s3a://`` path
    takes), read here as ``file://``."""
    expected = pandas_pair_sums(log)
    frame = spark_engine.session.read.parquet(str(files / "parts"))
    for source in (frame, (files / "hive").as_uri()):
        got = spark_engine.query(PAIR_SUMS.format(table=spark_engine.table(source)))
        assert_same_sums(sorted_frame(got), expected)


def test_the_partition_column_of_a_hive_folder_is_read(log, files, spark_engine):
    sql = "SELECT judge, COUNT(*) AS n FROM {table} GROUP BY judge"
    got = spark_engine.query(sql.format(table=spark_engine.table(files / "hive")))
    expected = log.groupby("judge").size()
    assert column_dict(got, "judge", "n") == expected.to_dict()


def test_put_registers_a_code_table_for_joins(log, spark_engine):
    codes = pa.table({"model": [f"model-{i}" for i in range(7)], "code": list(range(7))})
    spark_engine.put("winrate_test_codes", codes)
    sql = ("SELECT c.code AS code, COUNT(*) AS n FROM {table} t JOIN winrate_test_codes c "
           "ON t.model_a = c.model GROUP BY c.code")
    got = spark_engine.query(sql.format(table=spark_engine.table(log)))
    counts = log.model_a.str.removeprefix("model-").astype(int).value_counts()
    assert column_dict(got, "code", "n") == counts.to_dict()


@pytest.mark.parametrize("rows", [1, 700, 10_000])
def test_batches_cover_every_row_once(rows, log, spark_engine):
    """Over four partitions, batches of at most ``rows`` rows return each row once with its
    values; a batch is cut within a partition, so there are at least ceil(n / rows)."""
    frame = spark_engine.session.createDataFrame(log).repartition(4)
    sql = "SELECT row_id, model_a, weight FROM {table} WHERE row_id < {n}"
    n = 300 if rows == 1 else len(log)  # one-row batches: keep the Arrow overhead small
    batches = list(spark_engine.batches(sql.format(table=spark_engine.table(frame), n=n),
                                        rows=rows))
    assert all(0 < batch.num_rows <= rows for batch in batches)
    assert len(batches) >= -(-n // rows)
    got = pa.Table.from_batches(batches).to_pandas().sort_values("row_id")
    expected = log.loc[log.row_id < n, ["row_id", "model_a", "weight"]]
    assert got.reset_index(drop=True).equals(expected.reset_index(drop=True))


def test_batches_of_an_empty_result_are_none(log, spark_engine):
    table = spark_engine.table(log)
    assert list(spark_engine.batches(f"SELECT * FROM {table} WHERE votes > 99")) == []


def test_a_dataframe_of_another_session_is_refused(spark_engine):
    other = spark_engine.session.newSession().range(3)
    with pytest.raises(WinrateInputError, match="another SparkSession"):
        spark_engine.table(other)


def test_a_missing_file_is_named(tmp_path, spark_engine):
    with pytest.raises(WinrateInputError, match="no such file"):
        spark_engine.table(tmp_path / "nothing.parquet")


def test_without_pyspark_the_error_names_the_extra(monkeypatch):
    """PySpark made unimportable: the engine's constructors name the extra to install."""
    from winrate.io.spark_engine import SparkEngine

    for module in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    for build in (SparkEngine, SparkEngine.local):
        with pytest.raises(WinrateInputError, match=r"pip install winrate\[spark\]"):
            build()


def test_importing_the_engine_module_loads_no_pyspark():
    import subprocess

    probe = ("import sys, winrate.io.spark_engine\n"
             "print(any(m.split('.')[0] == 'pyspark' for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


def test_a_missing_java_is_named_not_skipped(monkeypatch, tmp_path):
    """The fixture's check: with neither JAVA_HOME nor a java on the path, the reason it
    fails the Spark tests names Debian's Java package (or PySpark, when that is missing)."""
    from tests.conftest import spark_missing

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "openjdk-17-jre-headless" in spark_missing()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").touch(mode=0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert spark_missing() is None
