"""SparkEngine (winrate/io/spark_engine.py) answers the engine protocol as DuckDBEngine does,
and a scan on Spark gives what a scan on DuckDB gives.

* The protocol: every source kind goes through both engines and the same group-by queries;
  the results must agree after sorting, integer sums exactly and float sums to 1e-12
  relative, and both must agree with a pandas ``groupby`` on the log itself (the independent
  oracle). Batches must cover every row exactly once, at most ``rows`` at a time.
* ``winrate.scan(..., engine="spark")`` on a few seeded logs: pass 1's key table equals a
  pandas ``groupby`` of the source, pass 2's join of the rows to the keys, grouped by
  (prompt, judge, key), equals the pandas ``groupby`` of the source, on both engines; the
  analyses (scores, covariances, standard errors, design effects) agree with DuckDB's and
  with the in-memory analysis to 1e-12 of the largest value; pass 2's jobs have 2+ tasks
  and bring back bytes that do not grow with the rows. The full property matrix runs on
  DuckDB, not here.
* Memory and the watchdog: a session winrate starts gets half the memory budget as its
  driver's heap and exits on an OutOfMemoryError; a user's session is left as it is, with a
  note when it has less; Java that dies (out of memory) or stops answering (stopped by a
  signal) during a query is a one-line error within seconds (fresh interpreters, so that
  winrate starts the session, both at once).
* The opt-out: with ``WINRATE_SKIP_SPARK=1`` and PySpark not importable, every test of
  tests/ that touches Spark passes or skips (a pytest run in a subprocess).

All in one module, so that one pytest worker starts Spark (the ``spark_engine`` fixture in
tests/conftest.py: one local session per worker, a few seconds to start).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import winrate
from tests import test_scan_slices as slices
from tests.note_codes import codes_of, warns_code
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.engine import DuckDBEngine
from winrate.io.scan import KEY
from winrate.settings import Variance
from winrate.variance import buckets

N_ROWS = 3_000
KEYS = ["model_a", "model_b"]
#: The pass-1 shape: counts, an integer sum, weighted first and second moments.
#: CSV fields are text on both engines (winrate/io/engine.py): numbers are cast where used.
PAIR_SUMS = ("SELECT model_a, model_b, COUNT(*) AS n, SUM(CAST(votes AS BIGINT)) AS votes, "
             "SUM(f * s) AS fs, SUM(f * s * s) AS fs2, SUM(f * f) AS f2 FROM "
             "(SELECT model_a, model_b, votes, CAST(weight AS DOUBLE) AS f, "
             "CAST(score AS DOUBLE) AS s FROM {table}) AS rows GROUP BY model_a, model_b")
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


def test_a_registered_frame_joins_and_a_materialized_result_is_read_and_dropped(
        log, spark_engine):
    """The requests pass 2 makes of an engine: a small frame registered as a table, a
    join of the source with it materialized in the engine, the materialized table read by
    a later query, and both dropped; Spark and DuckDB give the pandas result."""
    weights = pd.DataFrame({"m": sorted(log.model_a.unique())})
    weights["factor"] = np.arange(len(weights)) + 0.5
    expected = (log.merge(weights, left_on="model_a", right_on="m")
                .assign(fw=lambda f: f.factor * f.weight).groupby("judge").fw.sum())
    for engine in (spark_engine, DuckDBEngine()):
        table = engine.table(log)
        engine.register("winrate_test_factors", weights)
        engine.materialize("winrate_test_sums", (
            f"SELECT /*+ BROADCAST(k) */ s.judge AS judge, SUM(k.factor * s.weight) AS fw "
            f"FROM {table} AS s JOIN winrate_test_factors AS k ON s.model_a = k.m "
            "GROUP BY s.judge"))
        got = column_dict(engine.query("SELECT judge, fw FROM winrate_test_sums"), "judge",
                          "fw")
        assert got.keys() == expected.to_dict().keys(), engine.name
        np.testing.assert_allclose([got[j] for j in expected.index], expected.to_numpy(),
                                   rtol=1e-12, err_msg=engine.name)
        for name in ("winrate_test_sums", "winrate_test_factors"):
            engine.drop(name)
        with pytest.raises(Exception):  # noqa: B017 - each engine's own error: gone
            engine.query("SELECT * FROM winrate_test_sums")


def test_a_dataframe_of_another_session_is_refused(spark_engine):
    other = spark_engine.session.newSession().range(3)
    with pytest.raises(WinrateInputError, match="another SparkSession"):
        spark_engine.table(other)


def test_a_missing_file_is_named(tmp_path, spark_engine):
    with pytest.raises(WinrateInputError, match="not found"):
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
    """The fixture's check of Java (made whether PySpark is installed or not): with neither
    JAVA_HOME nor a java on the path, the reason it fails the Spark tests names Debian's
    Java package."""
    from tests.conftest import java_missing

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "openjdk-17-jre-headless" in java_missing()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").touch(mode=0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java_missing() is None



# ------------------------------------------------------------------ the opt-out

TESTS = Path(__file__).resolve().parent
#: Set in the interpreter that :func:`test_every_spark_test_honours_the_opt_out` starts.
OPT_OUT_PROBE = "WINRATE_OPT_OUT_PROBE"
#: A pytest plugin for that interpreter: PySpark unimportable (``import pyspark`` fails and
#: ``find_spec`` finds nothing, as when it is not installed), and only the tests that touch
#: Spark collected: a ``spark`` in their id, in their fixtures or in their function's source,
#: except the cases of a test parametrized to run on another engine.
NO_PYSPARK_PLUGIN = '''
import inspect
import sys

sys.modules["pyspark"] = None


def touches_spark(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    if {str(value) for value in params.values()} & {"memory", "duckdb"}:
        return False
    try:
        source = inspect.getsource(item.function)
    except (AttributeError, OSError, TypeError):
        source = ""
    return any("spark" in text.lower()
               for text in (item.nodeid, source, *getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if touches_spark(item)]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept
'''


def test_every_spark_test_honours_the_opt_out(tmp_path):
    """With ``WINRATE_SKIP_SPARK=1`` and PySpark not importable, every test of tests/ that
    touches Spark (each module mentioning it; each test of those whose id, fixtures or
    source does) passes or skips: none fails and none errors at collection."""
    if os.environ.get(OPT_OUT_PROBE) == "1":
        pytest.skip("this test's own probe")
    modules = sorted(str(path) for path in TESTS.glob("test_*.py")
                     if "spark" in path.read_text().lower())
    (tmp_path / "no_pyspark.py").write_text(NO_PYSPARK_PLUGIN)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "WINRATE_SKIP_SPARK": "1", OPT_OUT_PROBE: "1", "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no_pyspark", "-rfE", *modules], cwd=TESTS.parent, env=env,
                          capture_output=True, text=True, timeout=600)
    summary = done.stdout.strip().splitlines()[-1:]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "skipped" in summary[0] and "failed" not in summary[0], summary

# ------------------------------------------------------------------ winrate.scan on Spark

def scan_log(seed: int, n: int = 2_400) -> pd.DataFrame:
    """A log in the default columns: string ids, outcome labels with ties, a row weight and a
    length-difference covariate; 7 models, skewed prompt sizes, 5 judges."""
    rng = np.random.default_rng(seed)
    models = np.array([f"model-{i}" for i in range(7)])
    a, b = rng.choice(7, n), rng.choice(6, n)
    b = b + (b >= a)
    return pd.DataFrame({
        "model_a": models[a], "model_b": models[b],
        "outcome": rng.choice(["a", "b", "tie"], n, p=[0.45, 0.4, 0.15]),
        "prompt_id": np.char.add("p", np.minimum(rng.geometric(1 / 30, n), 150).astype(str)),
        "judge_id": np.char.add("judge-", rng.integers(0, 5, n).astype(str)),
        "w": rng.gamma(2.0, 0.5, n),
        "length_diff": rng.normal(0, 1, n),
    })


#: Seeded cases: the log, how it is scanned, and how it is analysed; the source Spark reads
#: is the log as Parquet, as CSV, or as a DataFrame of the session (scanned with
#: ``engine="auto"``, which must choose Spark and its own session). CR2's SQL is that of
#: any clustering (the DuckDB property tests run it two-way); one axis keeps it short.
SCAN_CASES = {
    "win rate, CR2": (1, {}, dict(cluster="prompt", correction="cr2")),
    "weighted Davidson BT, from a Spark DataFrame": (
        2, dict(weight_col="w"),
        dict(cluster="prompt+judge", model="bt", ties="davidson")),
    "weighted BT with a covariate, from CSV": (
        3, dict(weight_col="w", feature_cols=("length_diff",)),
        dict(cluster="prompt", model="bt", covariates=("length_diff",))),
}


def analysed(source, scan_options: dict, analysis: dict):
    """The sandwich analysis of ``source`` (``analysis``: analyze's keywords, and the
    ``correction``)."""
    options = dict(analysis)
    variance = Variance("sandwich", correction=options.pop("correction", None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)  # few judges: asserted elsewhere
        return winrate.analyze(source, variance=variance, progress=False, **options)


def assert_close(got, expected, name: str) -> None:
    """max |got - expected| <= 1e-12 max |expected| (NaN where both are NaN)."""
    got, expected = np.asarray(got, float), np.asarray(expected, float)
    assert got.shape == expected.shape, name
    assert np.array_equal(np.isnan(got), np.isnan(expected)), name
    scale = np.nanmax(np.abs(expected))
    assert np.nanmax(np.abs(got - expected)) <= 1e-12 * scale, name


def assert_same_analysis(got, expected) -> None:
    assert list(got.models) == list(expected.models)
    for name in ("scores", "cov", "cov_naive", "se"):
        assert_close(getattr(got, name), getattr(expected, name), name)
    assert got.axes.keys() == expected.axes.keys()
    for name, axis in expected.axes.items():  # each axis' diagnostics
        mine = got.axes[name]
        assert (mine.n_clusters, mine.single_cluster_pairs) == (
            axis.n_clusters, axis.single_cluster_pairs), name
        assert list(mine.largest_cluster) == list(axis.largest_cluster), name
        for field in ("cov", "se", "deff", "m", "rho", "icc", "largest_share",
                      "effective_clusters"):
            assert_close(getattr(mine, field), getattr(axis, field), f"{name} {field}")


def spark_scan(case: str, log: pd.DataFrame, path: Path, spark_engine, scan_options):
    """The scan on Spark of a case's source (:data:`SCAN_CASES`)."""
    if "Spark DataFrame" in case:
        scanned = winrate.scan(spark_engine.session.createDataFrame(log), **scan_options)
        assert scanned.mode == "spark" and scanned.engine.session is spark_engine.session
        return scanned
    return winrate.scan(str(path), engine="spark", **scan_options)


@pytest.mark.parametrize("case", SCAN_CASES)
def test_a_scan_on_spark_gives_duckdbs_and_the_in_memory_analysis(case, spark_engine,
                                                                   tmp_path):
    seed, scan_options, analysis = SCAN_CASES[case]
    log = scan_log(seed)
    if "CSV" in case:  # every field read as text: the scan's SQL casts
        path = tmp_path / "log.csv"
        log.to_csv(path, index=False)
    else:
        path = tmp_path / "log.parquet"
        log.to_parquet(path)
    on_spark = analysed(spark_scan(case, log, path, spark_engine, scan_options),
                        scan_options, analysis)
    on_duckdb = analysed(winrate.scan(str(path), engine="duckdb", **scan_options),
                         scan_options, analysis)
    in_memory = analysed(winrate.read_comparisons(
        log, weight_col=scan_options.get("weight_col"),
        feature_cols=scan_options.get("feature_cols", ())), scan_options, analysis)
    assert_same_analysis(on_spark, on_duckdb)
    assert_same_analysis(on_spark, in_memory)


def pass_two_on_spark(engine, root: Path, n: int, monkeypatch) -> tuple[list[int], int]:
    """The tasks of each Spark job pass 2 runs, and the bytes its results bring to the
    driver, for a one-way Bradley-Terry analysis of an ``n``-row log in 4 Parquet parts
    (``n / 10`` prompts). Pass 1 runs first (its results are kept on the scan), so the
    job group holds pass 2's jobs only."""
    from winrate.io.spark_engine import SparkEngine

    log = scan_log(n, n)
    log["prompt_id"] = np.char.add("p", (np.arange(n) % (n // 10)).astype(str))
    folder = root / f"rows{n}"
    folder.mkdir()
    for part, rows in enumerate(np.array_split(np.arange(n), 4)):
        log.iloc[rows].to_parquet(folder / f"part-{part}.parquet")
    scanned = winrate.scan(str(folder), engine="spark")
    scanned.key_log(())
    for axis in scanned.columns.axes:
        scanned.axis_size(axis)
    collected = []
    query = SparkEngine.query

    def counted(self, sql):
        result = query(self, sql)
        collected.append(result.nbytes)
        return result

    monkeypatch.setattr(SparkEngine, "query", counted)
    context = engine.session.sparkContext
    group = f"winrate-pass-two-{n}"
    context.setJobGroup(group, "pass 2")
    try:
        analysed(scanned, {}, dict(cluster="prompt", model="bt"))
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        monkeypatch.setattr(SparkEngine, "query", query)
    tracker = context.statusTracker()
    tasks = [sum(tracker.getStageInfo(stage).numTasks
                 for stage in tracker.getJobInfo(job).stageIds)
             for job in sorted(tracker.getJobIdsForGroup(group))]
    return tasks, sum(collected)


def test_pass_two_on_spark_runs_distributed_and_returns_sums_not_rows(spark_engine, tmp_path,
                                                                       monkeypatch):
    """Pass 2 is the executors' work: every job of it has 2 tasks or more (the source's
    parts, the shuffles' partitions), none is one task after another over the rows; and
    what comes back to the driver is the covariance's sums, not rows: ten times the rows
    and prompts bring back the same bytes (within 10%)."""
    small_tasks, small_bytes = pass_two_on_spark(spark_engine, tmp_path, 2_000, monkeypatch)
    large_tasks, large_bytes = pass_two_on_spark(spark_engine, tmp_path, 20_000, monkeypatch)
    for tasks in (small_tasks, large_tasks):
        assert tasks and min(tasks) >= 2, tasks
    assert abs(large_bytes - small_bytes) <= 0.1 * small_bytes, (small_bytes, large_bytes)


def test_spark_reduces_sliced_and_grouped_terms_as_memory(spark_engine, tmp_path,
                                                           monkeypatch):
    """The slices' and the grouped rows' SQL run on Spark SQL too: a two-way weighted
    Bradley-Terry analysis on Spark, its prompt term in two slices, the prompt x judge
    term in three and every term over grouped rows, equals memory's."""
    frame = slices.labelled_log(np.array([f"p{i:03d}" for i in range(60)]), n_judges=2)
    frame["w"] = np.random.default_rng(3).choice([0.0, 1.0, 2.5], len(frame))
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    slices.forced(monkeypatch, "grouped")
    monkeypatch.setattr(buckets, "engine_memory",
                        lambda budget: 2 * 60 * 7 * buckets.GROUP_BYTES / 1.5)
    analysis = dict(cluster="prompt+judge", model="bt", correction="cr1")
    on_spark = analysed(winrate.scan(str(path), engine="spark", weight_col="w"), {}, analysis)
    in_memory = analysed(winrate.read_comparisons(frame, weight_col="w"), {}, analysis)
    assert_same_analysis(on_spark, in_memory)


OUTCOME_SCORES = {"a": 1.0, "b": 0.0, "tie": 0.5}


def in_name_order(first, second, score) -> pd.DataFrame:
    """Comparisons with each pair's names in sorted order and the score of the first, so
    that an orientation chosen by the reader does not matter."""
    first, second, score = (np.asarray(x) for x in (first, second, score))
    swap = first > second
    return pd.DataFrame({"model_1": np.where(swap, second, first),
                         "model_2": np.where(swap, first, second),
                         "score": np.where(swap, 1 - score, score)})


def grouped_passes(scanned) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pass 1's key log (each key in name order with its frequency), and pass 2's join on
    the engine (:meth:`winrate.io.scan.Scan.rows_joined`: the rows joined to the uploaded
    keys), grouped by prompt, judge and key there, with each key in name order."""
    keys, _ = scanned.key_log(())
    key_axis = keys.axes[KEY]
    row_of_key = np.empty(key_axis.labels.max() + 1, np.int64)
    row_of_key[key_axis.labels[key_axis.codes]] = np.arange(keys.n_rows)
    table = in_name_order(keys.models[keys.model_a], keys.models[keys.model_b], keys.score)
    columns = scanned.key_columns()
    raw = scanned.key_table()[columns]
    uploaded = pd.DataFrame({f"winrate_k{i}": raw[c].to_numpy() for i, c in enumerate(columns)})
    uploaded[KEY] = np.arange(len(raw))
    name = scanned.upload(uploaded)
    try:
        rows = scanned.query_frame(
            f"SELECT winrate_c0, winrate_c1, {KEY}, SUM(winrate_w) AS w, "
            f"SUM(winrate_w * winrate_w) AS w2 FROM ("
            f"{scanned.rows_joined({0: 'prompt', 1: 'judge'}, name, columns)}) AS r "
            f"GROUP BY winrate_c0, winrate_c1, {KEY}")
    finally:
        scanned.drop(name)
    rows = table.iloc[row_of_key[rows[KEY].to_numpy()]].reset_index(drop=True).assign(
        prompt_id=rows["winrate_c0"], judge_id=rows["winrate_c1"], w=rows["w"],
        w2=rows["w2"])
    return table.assign(frequency=keys.frequency), rows


def test_the_passes_on_spark_reproduce_the_source(spark_engine, tmp_path):
    """Pass 1's frequencies are a pandas ``groupby`` of the source (1e-12); pass 2's rows
    joined to the keys and grouped by (prompt, judge, key) in the engine are the pandas
    ``groupby`` of the source by the same, with the sums of the weights and of their
    squares: on Spark and on DuckDB."""
    log = scan_log(5)
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    source = in_name_order(log.model_a, log.model_b, log.outcome.map(OUTCOME_SCORES)).assign(
        prompt_id=log.prompt_id, judge_id=log.judge_id, w=log.w, w2=log.w ** 2)
    pair = ["model_1", "model_2", "score"]
    cells = ["prompt_id", "judge_id", *pair]
    expected_keys = source.groupby(pair).w.sum().reset_index()
    expected_rows = source.groupby(cells)[["w", "w2"]].sum().reset_index()
    for engine in ("spark", "duckdb"):
        keys, rows = grouped_passes(winrate.scan(str(path), engine=engine, weight_col="w"))
        keys = keys.groupby(pair).frequency.sum().reset_index()  # both orientations
        assert keys[pair].equals(expected_keys[pair]), engine
        assert_close(keys.frequency, expected_keys.w, f"{engine} frequency")
        rows = rows.groupby(cells)[["w", "w2"]].sum().reset_index()  # both orientations
        assert rows[cells].equals(expected_rows[cells]), engine
        for column in ("w", "w2"):
            assert_close(rows[column], expected_rows[column], f"{engine} {column}")


def test_scan_reads_a_uri_on_spark_and_refuses_it_on_duckdb(spark_engine, tmp_path):
    """``scan`` takes a URI (here ``file://``, the branch ``s3a://`` takes) to Spark, which
    counts and reads it, giving the in-memory analysis (a one-way one: what is read, not
    the analysis, is tested here); DuckDB says to use Spark."""
    log = scan_log(1)
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    analysis = dict(cluster="prompt")
    on_spark = analysed(winrate.scan(path.as_uri(), engine="spark"), {}, analysis)
    in_memory = analysed(winrate.read_comparisons(log), {}, analysis)
    assert_same_analysis(on_spark, in_memory)
    with pytest.raises(winrate.WinrateInputError, match="engine='spark'"):
        winrate.scan(path.as_uri(), engine="duckdb")


# ------------------------------------------------------------------ memory and the watchdog

#: A query that runs for hours (a sum over 10^12 generated rows).
ENDLESS = "SELECT SUM(id % 7) AS s FROM RANGE(0, 1000000000000)"
#: A query of one 900 MB value, beyond a driver of 512 MiB.
TOO_LARGE = "SELECT LENGTH(REPEAT('x', 900000000)) AS n FROM RANGE(0, 2)"
#: The probes' budgets: 3 GiB (a 1536 MiB driver) and 1 GiB (512 MiB, Spark's least).
PROBE_BUDGETS = {"stop": 3 << 30, "oom": 1 << 30}
#: Seconds the probes' watchdog waits for Java to answer (winrate's default: 30).
PROBE_PATIENCE = 5.0


def fresh_session_probe(path: str, fault: str) -> None:
    """Run in a fresh interpreter, so that winrate starts the session: scan ``path`` on
    Spark with the budget of ``fault`` and print the new session's driver settings and
    Java's heap limit as one JSON line; then break Java during a query and print the
    error and its delay as another. ``fault``: ``"stop"`` stops Java (SIGSTOP: alive, but
    answering nothing) 2 s into an endless query; ``"oom"`` runs a query larger than the
    driver."""
    import threading
    import time

    import winrate.io.spark_engine as spark_module

    spark_module.PATIENCE = PROBE_PATIENCE
    engine = winrate.scan(path, engine="spark", memory=PROBE_BUDGETS[fault]).engine
    context = engine.session.sparkContext
    conf = context.getConf()
    print(json.dumps({"driver": conf.get("spark.driver.memory"),
                      "options": conf.get("spark.driver.extraJavaOptions", ""),
                      "heap": context._jvm.java.lang.Runtime.getRuntime().maxMemory()}),
          flush=True)
    start = [time.monotonic()]
    if fault == "stop":
        def stop():
            os.kill(context._gateway.proc.pid, signal.SIGSTOP)
            start[0] = time.monotonic()

        timer = threading.Timer(2.0, stop)
        timer.daemon = True
        timer.start()
    try:
        engine.query(ENDLESS if fault == "stop" else TOO_LARGE)
        outcome = "no error"
    except WinrateInputError as error:
        outcome = str(error)
    except Exception as error:  # what the watchdog should have turned into one line
        outcome = f"{type(error).__name__}: {error}"
    finally:
        context._gateway.proc.kill()
    print(json.dumps({"error": outcome, "seconds": time.monotonic() - start[0]}), flush=True)


def finished(probe: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The output of ``probe`` once it ends, or after ``timeout`` seconds, when it and its
    Java (its process group) are killed."""
    try:
        return probe.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(probe.pid, signal.SIGKILL)
        out, err = probe.communicate()
        return out, err + f"\n(killed after {timeout:.0f} s)"


@pytest.fixture(scope="module")
def fresh_sessions(spark_runtime, tmp_path_factory) -> dict[str, list]:
    """Each fault of :func:`fresh_session_probe` -> its JSON lines (the driver's settings,
    then the error; a hang leaves the second out), both probes run at once."""
    path = tmp_path_factory.mktemp("fresh_sessions") / "log.parquet"
    scan_log(1, n=200).to_parquet(path)
    probes = {fault: subprocess.Popen(
        [sys.executable, "-c", "from tests.test_spark_engine import fresh_session_probe; "
         f"fresh_session_probe({str(path)!r}, {fault!r})"], cwd=TESTS.parent,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        for fault in PROBE_BUDGETS}
    reports = {}
    for fault, probe in probes.items():
        out, err = finished(probe, timeout=240)
        reports[fault] = [json.loads(line) for line in out.splitlines()
                          if line.startswith("{")] + [err[-1500:]]
    return reports


@pytest.mark.parametrize(("fault", "driver"), [("stop", "1536m"), ("oom", "512m")])
def test_a_session_winrate_starts_follows_the_budget(fresh_sessions, fault, driver):
    """Half the budget is the driver's heap (Java's own limit, not only the setting), and
    Java exits on an OutOfMemoryError instead of living on without the thread that died."""
    settings, *_, err = fresh_sessions[fault]
    assert settings["driver"] == driver, err
    heap = int(driver[:-1]) << 20
    assert 0.9 * heap <= settings["heap"] <= heap
    assert "-XX:+ExitOnOutOfMemoryError" in settings["options"]


def test_java_that_stops_answering_is_a_one_line_error(fresh_sessions):
    """Stopped mid-query, Java answers nothing: the watchdog stops it after its patience
    and the query ends in one line saying so, not in a hang."""
    from winrate.io.spark_engine import PATIENCE, WATCH_INTERVAL

    *_, outcome, err = fresh_sessions["stop"]
    assert isinstance(outcome, dict) and "error" in outcome, err
    assert "did not answer" in outcome["error"] and "\n" not in outcome["error"], outcome
    assert "Traceback" not in err, err  # nor Py4J's log of the broken call
    assert outcome["seconds"] < PROBE_PATIENCE + 10, outcome
    assert PATIENCE + 2 * WATCH_INTERVAL < 60  # the default: within a minute


def test_java_out_of_memory_is_a_one_line_error_naming_the_budget(fresh_sessions):
    *_, outcome, err = fresh_sessions["oom"]
    assert isinstance(outcome, dict) and "error" in outcome, err
    assert "out of memory" in outcome["error"] and "budget" in outcome["error"], outcome
    assert "\n" not in outcome["error"] and outcome["seconds"] < 60, outcome
    assert "Traceback" not in err, err


def test_a_users_session_is_left_as_it_is_with_a_note_when_smaller(spark_engine, tmp_path):
    """The running session (the fixture's: a 1 GiB driver) is used as it is; a budget whose
    half exceeds its driver is noted; one whose half fits it, or none given, is not."""
    path = tmp_path / "log.parquet"
    scan_log(1, n=200).to_parquet(path)
    with warns_code("spark-driver-memory") as found:
        scanned = winrate.scan(str(path), engine="spark", memory=8 << 30)
    assert scanned.engine.session is spark_engine.session
    assert "spark.driver.memory=4096m" in found[0]
    assert spark_engine.session.sparkContext.getConf().get("spark.driver.memory") == "1024m"
    for memory in (2 << 30, None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            winrate.scan(str(path), engine="spark", memory=memory)
        assert "spark-driver-memory" not in codes_of(caught), memory


def test_the_drivers_share_of_a_budget_and_spark_memory_sizes():
    """Half the budget in whole MiB, never below Spark's least; Spark's sizes read as Spark
    reads ``spark.driver.memory`` (no unit: MiB). Pure functions: no PySpark needed."""
    from winrate.io.spark_engine import MIN_DRIVER_MEMORY, driver_memory, java_bytes

    assert driver_memory(3 << 30) == 1536 << 20
    assert driver_memory((8 << 30) + 12345) == 4 << 30
    assert driver_memory(100 << 20) == MIN_DRIVER_MEMORY == 512 << 20
    sizes = {"1g": 1 << 30, "512m": 512 << 20, "4096": 4 << 30, "2G": 2 << 30,
             "1536mb": 1536 << 20, "1t": 1 << 40}
    assert {size: java_bytes(size) for size in sizes} == sizes
    with pytest.raises(WinrateInputError, match="not a memory size"):
        java_bytes("lots")
