"""Shared fixtures: small random comparison logs with missing pairs, ties and unequal clusters;
and the closing line of a run without the data directory (how many tests it skipped)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from winrate.io.logs import ComparisonLog


def random_log(seed: int, n: int = 400, k: int = 6, n_prompts: int = 37, n_judges: int = 5,
               drop_pair: tuple[int, int] | None = (0, 5)) -> ComparisonLog:
    """Unbalanced random log: skewed cluster sizes, ties, one pair never compared."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, 3 * n)
    b = rng.integers(0, k, 3 * n)
    keep = a != b
    if drop_pair is not None:
        keep &= ~((np.minimum(a, b) == drop_pair[0]) & (np.maximum(a, b) == drop_pair[1]))
    a, b = a[keep][:n], b[keep][:n]
    score = rng.choice([0.0, 0.5, 1.0], size=n, p=[0.4, 0.2, 0.4])
    prompt = np.minimum(rng.geometric(1 / 8, n), n_prompts) - 1 + rng.integers(0, 3, n)
    judge = rng.choice(n_judges, size=n, p=np.linspace(1, 3, n_judges) / np.linspace(
        1, 3, n_judges).sum())
    return ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)


def pytest_configure(config):
    """Under pytest-xdist, the workers take the Spark modules as one scope and the slowest
    modules first (tests/scheduling.py)."""
    if config.pluginmanager.hasplugin("xdist"):
        from tests.scheduling import SlowestFirst

        config.pluginmanager.register(SlowestFirst(), "winrate-slowest-first")


@pytest.fixture(params=[0, 1, 2])
def unbalanced_log(request) -> ComparisonLog:
    return random_log(request.param)


@pytest.fixture(scope="session")
def simulated_log_file(tmp_path_factory):
    """A small simulated crossed log (5 models, 60 prompts, 4 judges) written as CSV."""
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    sim = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=60, n_judges=4), seed=9)
    path = tmp_path_factory.mktemp("simulated") / "log.csv"
    sim.frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def alpaca_eval_log():
    """``read_dataset("alpaca_eval", discrete=...)``, read at most once per test worker
    (each read parses 58 annotation files, about 2 s)."""
    import warnings

    from winrate.errors import WinrateWarning
    from winrate.io.datasets import read_dataset

    logs = {}

    def load(discrete: bool = False):
        if discrete not in logs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", WinrateWarning)
                logs[discrete] = read_dataset("alpaca_eval", discrete=discrete, progress=False)
        return logs[discrete]

    return load



# ------------------------------------------------------------- Spark

#: The one way to skip the Spark tests: ``WINRATE_SKIP_SPARK=1``.
SKIP_SPARK = "WINRATE_SKIP_SPARK"


def spark_missing() -> str | None:
    """What the Spark tests lack on this machine (PySpark or a Java runtime), None if
    nothing."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed (pip install -e '.[dev,spark]'; make test does)"
    return java_missing()


def java_missing() -> str | None:
    """What is wrong with the Java runtime PySpark would start (none, or older than Spark 4
    needs), None if nothing. PySpark starts ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is
    set, else the ``java`` on the path."""
    import shutil

    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        return ("no Java runtime (java) for PySpark: install Debian's openjdk-17-jre-headless "
                "(make test does when it runs as root)")
    major = java_major_version(str(java))
    if major is not None and major < MIN_JAVA:
        return (f"Java {major} found ({java}); Spark 4 needs Java {MIN_JAVA} or later: "
                "install Debian's openjdk-17-jre-headless and point JAVA_HOME at it")
    return None


#: Spark 4's minimum Java release.
MIN_JAVA = 17


def java_major_version(java: str) -> int | None:
    """The major release of the Java runtime ``java`` from ``java -version`` (printed on
    stderr as ``... version "17.0.9"`` or, before Java 9, ``"1.8.0_392"``); None if it
    cannot be read."""
    import re
    import subprocess

    try:
        text = subprocess.run([java, "-version"], capture_output=True, text=True,
                              timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


#: Java options of the Spark drivers the tests start (here and in their subprocesses, through
#: ``SPARK_SUBMIT_OPTS``, which spark-submit adds to the driver's command): the client
#: compiler (C1) only. The tests' Spark jobs are many and short, and C2's optimising compiles
#: cost more processor time than they save there: under a load of 7 on 2 cores a session
#: started in 14 s instead of 34 s and its first analysis of a 240-row log took 48 s instead
#: of 91 s (a warm one 28 s either way). Java's arithmetic is the same under either compiler.
SPARK_TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="session")
def spark_runtime() -> Iterator[None]:
    """The gate of every Spark test (a test that imports PySpark or starts Java): with
    ``WINRATE_SKIP_SPARK=1`` the test skips with that reason; without it, a missing PySpark
    or Java fails it. Java started after it gets :data:`SPARK_TEST_JAVA_OPTIONS`."""
    if os.environ.get(SKIP_SPARK) == "1":
        pytest.skip(f"{SKIP_SPARK}=1: the Spark tests are skipped on request")
    missing = spark_missing()
    if missing:
        pytest.fail(f"Spark tests cannot run: {missing}; set {SKIP_SPARK}=1 to skip them",
                    pytrace=False)
    options = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {SPARK_TEST_JAVA_OPTIONS}".strip()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARK_SUBMIT_OPTS", options)
        yield


@pytest.fixture(scope="session")
def spark_engine(spark_runtime):
    """A :class:`~winrate.io.spark_engine.SparkEngine` on one small local session per test
    worker (a session takes seconds to start), behind :func:`spark_runtime`'s gate. Its
    memory budget of 2 GiB gives the driver 1 GiB."""
    from winrate.io.spark_engine import SparkEngine

    engine = SparkEngine.local(cores=2, memory=2 << 30, partitions=2)
    yield engine
    engine.session.stop()


# ------------------------------------------------------------- runs without the real data

DATA_VARIABLE = "WINRATE_DATA"


def skip_reason(report) -> str:
    """The reason of a skipped test's report (a ``(path, line, reason)`` triple, also after
    pytest-xdist has sent the report from a worker)."""
    longrepr = report.longrepr
    return str(longrepr[-1]) if isinstance(longrepr, tuple | list) else str(longrepr)


def missing_data_note(skipped, data: str | None) -> str | None:
    """The closing note of a run whose data directory is ``data`` (the variable's value):
    None when it is a directory, or when no skipped test needed it. A real-data test names
    the variable in its skip reason."""
    if data and Path(data).is_dir():
        return None
    count = sum(DATA_VARIABLE in skip_reason(report) for report in skipped)
    if not count:
        return None
    state = f"is {data!r}, not a directory" if data else "is not set"
    return (f"{count} real-data test{'s' if count != 1 else ''} skipped: {DATA_VARIABLE} {state}. "
            f"Run `{DATA_VARIABLE}=/path/to/data make test` for the full suite (the Makefile "
            f"sets it to ../shared/data when that folder exists).")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Say how many tests a run without the data skipped. An outermost wrapper (tryfirst)
    writes after pytest's short summary, so the note sits just above the final count."""
    yield
    note = missing_data_note(terminalreporter.stats.get("skipped", []),
                             os.environ.get(DATA_VARIABLE))
    if note:
        terminalreporter.write_sep("-", "real data")
        terminalreporter.write_line(note)
