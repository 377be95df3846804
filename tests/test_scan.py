"""A scan analysed on DuckDB equals the same log analysed in memory (issue 23).

``analyze(read_comparisons(parquet))`` and ``analyze(scan(parquet, engine="duckdb",
"duckdb"))`` share no code between reading and the kernels: the scan fits a key table
that DuckDB aggregated, and DuckDB reduces the rows to the clustered meats and the design
diagnostics in SQL (pass 2, :mod:`winrate.variance.buckets`), where the in-memory path
runs its numba kernels over all rows. Every number must agree to 1e-12 of its size:
scores, both covariances, and each axis' diagnostics, for both estimators (with
covariates, Davidson ties, a baseline), naive, one-way and two-way clustering, CR0, CR1
and CR2, weighted logs. The in-memory side is itself checked against
brute-force computations elsewhere (tests/test_frequency.py, tests/test_variance.py).
"""

from __future__ import annotations

import re
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import winrate
from winrate.errors import WinrateInputError, WinrateWarning

TOL = 1e-12

FITS = [("winrate", {}), ("winrate", {"weights": "count"}), ("winrate", {"baseline": "m0"}),
        ("bt", {}), ("bt", {"covariates": ("style",)}), ("bt", {"ties": "davidson"}),
        ("bt", {"baseline": "m0"})]


@st.composite
def logs(draw):
    """A random log with string models, integer prompts, string judges, ties, a style
    covariate taking a few values, and optionally a weight column."""
    k = draw(st.integers(3, 6))
    n = draw(st.integers(40, 160))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a[:k], b[:k] = np.arange(k), (np.arange(k) + 1) % k
    a[k:2 * k], b[k:2 * k] = 1 + np.arange(k) % (k - 1), 0  # every model meets m0
    frame = pd.DataFrame({
        "prompt_id": rng.integers(0, max(4, n // draw(st.integers(2, 8))), n),
        "judge_id": np.array(["j0", "j1", "j2", "j3"])[rng.integers(0, 4, n)],
        "model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
        "outcome": rng.choice(["a", "b", "tie"], n, p=[0.45, 0.4, 0.15]),
        "style": rng.choice([-1.0, 0.0, 0.5, 2.0], n),
    })
    weighted = draw(st.booleans())
    if weighted:
        frame["w"] = rng.choice([0.0, 1.0, 2.0, 3.5], n, p=[0.1, 0.5, 0.3, 0.1])
    return frame, ("w" if weighted else None)


def _relative(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    assert np.array_equal(np.isnan(x), np.isnan(y))
    scale = max(np.nanmax(np.abs(x), initial=0.0), 1e-300)
    return float(np.nanmax(np.abs(x - y), initial=0.0) / scale)


def assert_same(mem, eng, tol: float = TOL) -> None:
    """Scores, covariances and every axis diagnostic agree to ``tol`` of their size."""
    order = np.argsort(mem.models.astype(str))
    other = np.argsort(eng.models.astype(str))
    assert list(mem.models.astype(str)[order]) == list(eng.models.astype(str)[other])
    assert _relative(mem.scores[order], eng.scores[other]) <= tol
    for name in ("cov", "cov_naive"):
        x, y = getattr(mem, name), getattr(eng, name)
        assert _relative(x[np.ix_(order, order)], y[np.ix_(other, other)]) <= tol, name
    assert _relative(mem.intervals.se[order], eng.intervals.se[other]) <= tol
    for name in ("low", "high"):  # the reference's df (t: G - 1 or Pan-Wall) moves them
        x, y = getattr(mem.intervals, name), getattr(eng.intervals, name)
        assert _relative(x[order], y[other]) <= tol, name
    df_mem, df_eng = (np.atleast_1d(np.asarray(r.intervals.df, float)) for r in (mem, eng))
    if df_mem.size > 1:
        df_mem, df_eng = df_mem[order], df_eng[other]
    assert _relative(df_mem, df_eng) <= tol, "df"
    assert mem.n_rows == eng.n_rows and mem.n_comparisons == eng.n_comparisons
    assert mem.not_estimable == eng.not_estimable
    assert mem.notes.codes == eng.notes.without("engine").codes
    assert mem.axes.keys() == eng.axes.keys()
    for axis, x in mem.axes.items():
        y = eng.axes[axis]
        assert (x.n_clusters, x.single_cluster_pairs) == (y.n_clusters, y.single_cluster_pairs)
        assert _relative(x.icc, y.icc) <= tol
        for field in ("se", "deff", "m", "rho", "largest_share", "effective_clusters"):
            assert _relative(getattr(x, field)[order], getattr(y, field)[other]) <= tol, field


def _analyses(frame, weight, path, fit, cluster, correction, reference="normal"):
    model, options = fit
    features = ("style",) if options.get("covariates") else ()
    variance = winrate.Variance(method="sandwich", correction=correction, reference=reference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        log = winrate.read_comparisons(frame, weight_col=weight, feature_cols=features)
        mem = winrate.analyze(log, cluster, model, variance=variance, **options)
        scan = winrate.scan(path, engine="duckdb", weight_col=weight,
                            feature_cols=features)
        eng = winrate.analyze(scan, cluster, model, variance=variance, **options)
    return mem, eng


def _engine_only(frame, weight, path, fit, cluster, correction, reference):
    """The engine side of :func:`_analyses` alone (its error, where memory fails)."""
    model, options = fit
    features = ("style",) if options.get("covariates") else ()
    variance = winrate.Variance(method="sandwich", correction=correction, reference=reference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        scan = winrate.scan(path, engine="duckdb", weight_col=weight,
                            feature_cols=features)
        return winrate.analyze(scan, cluster, model, variance=variance, **options)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(), st.sampled_from(FITS), st.sampled_from(["none", "prompt", "judge",
                                                       "prompt+judge"]),
       st.sampled_from(["none", "cr1", "cr2"]), st.sampled_from(["normal", "t"]))
def test_scan_equals_memory(tmp_path, data, fit, cluster, correction, reference):
    frame, weight = data
    if correction == "cr2" and fit[0] != "winrate":
        correction = "cr1"  # CR2 is the win rate's (its strata are the pairs)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    arguments = (frame, weight, path, fit, cluster, correction, reference)
    try:
        mem, eng = _analyses(*arguments)
    except WinrateInputError as error:  # an unidentified design: the engine fails alike
        with pytest.raises(WinrateInputError, match=re.escape(str(error)[:40])):
            _engine_only(*arguments)
        return
    assert_same(mem, eng)
    assert "engine" in eng.notes.codes


def _random_log(seed: int, n: int, k: int, prompts: int, judges: int,
                outcomes=("a", "b", "tie")) -> pd.DataFrame:
    """``n`` comparisons of two distinct models among ``k`` (ids ``0..k-1``), uniform
    prompts and judges (integer ids) and outcomes."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    return pd.DataFrame({"prompt_id": rng.integers(0, prompts, n),
                         "judge_id": rng.integers(0, judges, n),
                         "model_a": a, "model_b": (a + rng.integers(1, k, n)) % k,
                         "outcome": rng.choice(list(outcomes), n)})


def test_two_way_cr2_weighted(tmp_path):
    """One fixed log: two-way, CR2, weighted, win rate; and the same log with
    Bradley-Terry and CR1."""
    frame = _random_log(7, 3000, 8, 400, 35, outcomes=(1.0, 0.0, 0.5))
    frame["w"] = np.random.default_rng(8).integers(1, 4, len(frame))
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    for fit, correction in ((("winrate", {}), "cr2"), (("bt", {}), "cr1")):
        mem, eng = _analyses(frame, "w", path, fit, "prompt+judge", correction)
        assert_same(mem, eng)


def test_csv_folder_and_glob_scan_equal_the_file(tmp_path):
    """A folder or glob of CSV parts is one log; ids are read as text, as from a file."""
    frame = _random_log(3, 600, 5, 90, 3)
    whole = tmp_path / "whole.csv"
    frame.to_csv(whole, index=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        frame.iloc[200 * i:200 * (i + 1)].to_csv(parts / f"part{i}.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        mem = winrate.analyze(winrate.read_comparisons(whole), "prompt")
        for source in (parts, str(parts / "*.csv")):
            eng = winrate.analyze(winrate.scan(source, engine="duckdb"), "prompt")
            assert_same(mem, eng)
            assert list(eng.axes["prompt"].largest_cluster) == list(
                mem.axes["prompt"].largest_cluster)


def test_auto_engine_says_which_and_why(tmp_path, monkeypatch):
    from winrate.io import scan as scan_module

    frame = pd.DataFrame({"model_a": ["x", "y"] * 10, "model_b": ["y", "z"] * 10,
                          "outcome": ["a", "b"] * 10, "prompt_id": range(20)})
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    small = winrate.scan(path)
    assert small.mode == "memory" and "fits" in small.reason and small.n_rows == 20
    # rows as large as the budget's floor: 20 of them exceed twice the floor
    monkeypatch.setattr(scan_module, "BYTES_PER_ROW", scan_module.MIN_BUDGET)
    big = winrate.scan(path, memory=2 * scan_module.MIN_BUDGET)
    assert big.mode == "duckdb" and "exceeds" in big.reason
    assert repr(big).startswith("Scan(rows=20, engine='duckdb'")


def test_resampling_on_an_engine_is_refused_with_the_method_to_use(tmp_path):
    frame = pd.DataFrame({"model_a": ["x", "y", "z"] * 20, "model_b": ["y", "z", "x"] * 20,
                          "outcome": ["a", "b", "tie"] * 20, "prompt_id": np.arange(60) % 12})
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    scan = winrate.scan(path, engine="duckdb")
    with pytest.raises(WinrateInputError, match="use method 'sandwich'"):
        winrate.analyze(scan, "prompt", variance=winrate.Variance(method="jackknife"))


@pytest.mark.parametrize(("model", "variance", "match"), [
    ("bt", winrate.Variance(method="sandwich", correction="cr2"), "cr2 is not defined"),
    ("winrate", winrate.Variance(method="bootstrap"), "engines run method 'sandwich'")])
def test_what_an_engine_cannot_run_is_refused_before_pass_one(tmp_path, monkeypatch, model,
                                                              variance, match):
    """Bradley-Terry with CR2, and a resampling method, are refused before the engine
    reads the source (pass 1 never runs)."""
    path = tmp_path / "log.parquet"
    _random_log(2, 200, 4, 20, 2).to_parquet(path)
    scan = winrate.scan(path, engine="duckdb")

    def no_pass(*args, **kwargs):
        raise AssertionError("pass 1 ran")

    monkeypatch.setattr(scan, "key_log", no_pass)
    with pytest.raises(WinrateInputError, match=match):
        winrate.analyze(scan, "prompt", model, variance=variance)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"engine": "polars"}, "engine must be one of"),
    ({"columns": {"winner": "x"}}, "unknown role"),
    ({"columns": {"outcome": "verdict"}}, r"column 'verdict' not found"),
    ({"memory": 0}, "memory must be a positive"),
    ({"memory": "2G"}, "memory must be a positive"),
])
def test_bad_scan_arguments_are_one_line_errors(tmp_path, kwargs, match):
    frame = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "outcome": ["a"]})
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(WinrateInputError, match=match):
        winrate.scan(path, **kwargs)


def test_missing_source_is_named(tmp_path):
    with pytest.raises(WinrateInputError, match="not found"):
        winrate.scan(tmp_path / "nothing.parquet")


def test_cli_engine_flag_gives_the_memory_numbers_and_says_which_engine(tmp_path, capsys):
    import json

    from winrate.cli import main

    frame = _random_log(11, 900, 5, 120, 4)
    for col in ("judge_id", "model_a", "model_b"):  # string ids
        frame[col] = "x" + frame[col].astype(str)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    runs = {}
    for engine in ("memory", "duckdb"):
        out = tmp_path / f"{engine}.json"
        assert main(["leaderboard", str(path), "--engine", engine, "--method", "sandwich",
                     "--memory", "2G", "--json", str(out)]) == 0
        runs[engine] = json.loads(out.read_text())
    err = capsys.readouterr().err
    assert "[engine]" in err and "analysed on duckdb (as requested)" in err
    codes = [note["code"] for note in runs["duckdb"]["notes"]]
    assert "engine" in codes
    rows = {engine: dict(zip(run["models"], zip(run["score"], run["se"], strict=True),
                             strict=True))
            for engine, run in runs.items()}
    for model, (score, se) in rows["memory"].items():
        assert abs(rows["duckdb"][model][0] - score) <= 1e-12
        assert abs(rows["duckdb"][model][1] - se) <= 1e-12 * se


@pytest.mark.parametrize("flags", [["--engine", "duckdb"], ["--memory", "1G"]])
def test_engine_flags_on_a_score_table_are_a_one_line_error(tmp_path, capsys, flags):
    """A per-question score table is read in memory: --engine duckdb or --memory would be
    ignored, so they are refused in one line that says why."""
    from winrate.cli import main

    scores = pd.DataFrame({"question_id": np.repeat(np.arange(20), 3),
                           "model": np.tile(["x", "y", "z"], 20),
                           "correct": np.random.default_rng(0).integers(0, 2, 60)})
    path = tmp_path / "scores.csv"
    scores.to_csv(path, index=False)
    assert main(["leaderboard", str(path), "--format", "scores", *flags]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "read in memory" in err[0] and flags[0] in err[0]


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("flags", [["--engine", "duckdb"], ["--memory", "1G"]])
def test_engine_flags_on_a_named_format_are_a_one_line_error(tmp_path, capsys, flags,
                                                             named):
    """A file of a named layout (here LMArena's 100k table, named by --format or detected
    from its columns) is parsed by its reader in memory: --engine duckdb or --memory would
    be ignored, so they are refused in one line naming the format and the flag; without
    them the same file reads."""
    from tests.reader_fixtures import arena_100k
    from winrate.cli import main

    path = tmp_path / "battles.parquet"
    arena_100k(path)
    named_flags = ["--format", "arena"] if named else []
    assert main(["leaderboard", str(path), *named_flags, *flags]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--format arena" in err[0] and flags[0] in err[0], err
    assert main(["leaderboard", str(path), *named_flags]) == 0


def test_memory_sizes_parse():
    from winrate.cli import _byte_size

    assert _byte_size("4G") == 4 << 30 and _byte_size("512MiB") == 512 << 20
    assert _byte_size("1000") == 1000


def test_eda_reads_a_scan_in_memory_and_refuses_one_on_an_engine(tmp_path):
    from winrate.eda import explore

    frame = _random_log(5, 400, 4, 60, 3)
    parts = tmp_path / "parts"
    parts.mkdir()
    frame.iloc[:200].to_parquet(parts / "a.parquet")
    frame.iloc[200:].to_parquet(parts / "b.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        whole = explore(frame, ["prompt"])
        scanned = explore(winrate.scan(parts, engine="memory"), ["prompt"])
        assert np.allclose(whole.score, scanned.score, rtol=0, atol=1e-14)
        assert whole.structure["n_prompts"] == scanned.structure["n_prompts"] == 60
        with pytest.raises(WinrateInputError, match="analysed on duckdb"):
            explore(winrate.scan(parts, engine="duckdb"), ["prompt"])


def _baseline_log(seed: int = 2) -> pd.DataFrame:
    """Four contestants against a baseline on 60 prompts, judge preferences and length
    differences, for the length-controlled win rate."""
    rng = np.random.default_rng(seed)
    prompts = np.repeat(np.arange(60), 4)
    model = np.tile([f"m{i}" for i in range(1, 5)], 60)
    delta = rng.normal(0, 300, prompts.size)
    pref = 1 / (1 + np.exp(-(rng.normal(0, 1, prompts.size) + delta / 400)))
    return pd.DataFrame({"prompt_id": prompts, "model_a": model, "model_b": "base",
                         "outcome": pref, "style_length_delta": delta})


def test_length_controlled_on_an_engine(tmp_path):
    """lc joined by instruction runs on an engine (its key table keeps the prompts) and
    equals the in-memory fit; joined by position (upstream's default) it reads the rows'
    order, which a key table has not, and is refused."""
    frame = _baseline_log()
    path = tmp_path / "lc.parquet"
    frame.to_parquet(path)
    features = ("style_length_delta",)
    options = {"baseline": "base", "difficulty_join": "instruction"}
    variance = winrate.Variance(method="sandwich")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        mem = winrate.analyze(winrate.read_comparisons(frame, feature_cols=features),
                              "prompt", "lc", variance=variance, **options)
        scan = winrate.scan(path, engine="duckdb", feature_cols=features)
        eng = winrate.analyze(scan, "prompt", "lc", variance=variance, **options)
        assert_same(mem, eng, tol=1e-8)  # lc's Newton stops at steps of 1e-10: rows in
        # another order (the key table's) end within that of the in-memory fit
        with pytest.raises(WinrateInputError, match="engine 'memory'"):
            winrate.analyze(scan, "prompt", "lc", variance=variance, baseline="base")


def test_arrow_tables_frames_and_duckdb_relations_are_sources(tmp_path):
    """Every in-process source kind gives the file's analysis, on the engine and in
    memory."""
    import duckdb
    import pyarrow as pa

    frame = _baseline_log(4).drop(columns="style_length_delta")
    frame["outcome"] = (frame["outcome"] > 0.5).astype(float)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    variance = winrate.Variance(method="sandwich")
    connection = duckdb.connect()
    sources = [frame, pa.Table.from_pandas(frame),
               connection.read_parquet(str(path))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        mem = winrate.analyze(winrate.read_comparisons(path), "prompt", variance=variance)
        for source in sources:
            for engine in ("duckdb", "memory"):
                scan = winrate.scan(source, engine=engine)
                found = winrate.analyze(scan, "prompt", variance=variance)
                assert_same(mem, found)
                assert ("engine" in found.notes.codes) == (engine == "duckdb")


def test_coverage_check_of_an_engine_analysis_is_refused(tmp_path):
    frame = _baseline_log(6)
    frame["outcome"] = (frame["outcome"] > 0.5).astype(float)
    path = tmp_path / "log.parquet"
    frame.drop(columns="style_length_delta").to_parquet(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = winrate.analyze(winrate.scan(path, engine="duckdb"), "prompt")
        with pytest.raises(WinrateInputError, match="engine 'memory'"):
            result.check_coverage(reps=20)


def test_a_judge_only_in_dropped_rows_is_not_a_cluster(tmp_path):
    """A baseline score leaves out the rows of two contestants; a judge seen only in those
    rows is no cluster of the fit's rows, so CR1's G / (G - 1) of the judge term counts
    the judges that remain (as in memory), though the scan's dictionary lists all of
    them. Found by the property test once, before it was derandomized."""
    rng = np.random.default_rng(9)
    n = 300
    model = np.array(["m1", "m2", "m3"])[rng.integers(0, 3, n)]
    frame = pd.DataFrame({"prompt_id": rng.integers(0, 60, n),
                          "judge_id": np.array(["j0", "j1", "j2"])[rng.integers(0, 3, n)],
                          "model_a": model, "model_b": "m0",
                          "outcome": rng.choice(["a", "b", "tie"], n)})
    extra = pd.DataFrame({"prompt_id": [1, 2], "judge_id": ["j9", "j9"],
                          "model_a": ["m1", "m2"], "model_b": ["m2", "m3"],
                          "outcome": ["a", "b"]})
    frame = pd.concat([frame, extra], ignore_index=True)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    mem, eng = _analyses(frame, None, path, ("winrate", {"baseline": "m0"}),
                         "prompt+judge", "cr1")
    assert_same(mem, eng)


def test_a_key_table_beyond_the_budget_is_refused_before_it_leaves_the_engine(
        tmp_path, monkeypatch):
    """Pass 1's key table is the fit's log in memory: with a continuous covariate it has a
    key per row, so its rows are counted in the engine first and more than the budget
    holds is a one-line error naming the keys (here 300 keys at a third of the floor
    each, against a budget of the floor)."""
    from winrate.io import scan as scan_module

    frame = _random_log(4, 300, 4, 30, 2)
    frame["length"] = np.random.default_rng(4).normal(size=len(frame))
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    monkeypatch.setattr(scan_module, "BYTES_PER_ROW", scan_module.MIN_BUDGET // 3)
    scanned = winrate.scan(path, engine="duckdb", feature_cols=("length",),
                           memory=scan_module.MIN_BUDGET)
    with pytest.raises(WinrateInputError, match="300 distinct keys"):
        winrate.analyze(scanned, "prompt", "bt", covariates=("length",),
                        variance=winrate.Variance(method="sandwich"))


def test_a_source_that_changes_between_the_passes_is_an_error(tmp_path):
    """Pass 2 joins the rows to pass 1's keys; rows the keys lack would drop out of the
    join unseen, so the fit rows' total weight is checked: a source rewritten between the
    passes (a row's model changed) is a one-line error, never a quiet result."""
    frame = _random_log(5, 400, 4, 40, 3)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    scanned = winrate.scan(path, engine="duckdb")
    scanned.key_log(())  # pass 1
    frame.loc[0, "model_a"] = 99  # a model pass 1 did not see
    frame.to_parquet(path)
    with pytest.raises(WinrateInputError, match="changed between the passes"):
        winrate.analyze(scanned, "prompt", variance=winrate.Variance(method="sandwich"))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), None, "heavy"])
def test_engine_refuses_the_weights_the_reader_refuses(tmp_path, bad):
    """A weight that is negative, NaN, infinite, missing or not a number is an error on an
    engine, as in memory (``read_comparisons``), never a silently dropped row."""

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"prompt_id": rng.integers(0, 20, 60).astype(str),
                          "judge_id": "j", "model_a": rng.choice(["a", "b"], 60),
                          "model_b": "c", "outcome": rng.choice(["a", "b"], 60),
                          "w": np.ones(60).astype(object)})
    frame.loc[7, "w"] = bad
    frame["w"] = frame["w"].astype(str) if isinstance(bad, str) else frame["w"].astype(float)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(WinrateInputError, match="weight must be a finite number >= 0"):
        winrate.read_comparisons(path, weight_col="w")
    with pytest.raises(WinrateInputError, match="weight must be a finite number >= 0 in 1 row"):
        winrate.analyze(winrate.scan(path, engine="duckdb", weight_col="w"), cluster="prompt")


def test_a_single_cluster_of_the_fit_is_the_same_error_on_an_engine(tmp_path):
    """The judge axis of the scan's dictionary has two judges, but every row the baseline
    score keeps has one: no judge variance, the same error as in memory (not a numerical
    failure of an infinite G / (G - 1))."""
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame({"prompt_id": rng.integers(0, 40, n), "judge_id": "j0",
                          "model_a": np.array(["m1", "m2"])[rng.integers(0, 2, n)],
                          "model_b": "m0", "outcome": rng.choice(["a", "b", "tie"], n)})
    off_baseline = pd.DataFrame({"prompt_id": [1, 2], "judge_id": ["j1", "j1"],
                                 "model_a": ["m1", "m2"], "model_b": ["m2", "m1"],
                                 "outcome": ["a", "b"]})
    frame = pd.concat([frame, off_baseline], ignore_index=True)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    options = dict(cluster="prompt+judge", baseline="m0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        with pytest.raises(WinrateInputError, match="single cluster"):
            winrate.analyze(winrate.read_comparisons(path), **options)
        with pytest.raises(WinrateInputError, match="single cluster"):
            winrate.analyze(winrate.scan(path, engine="duckdb"), **options)


def test_scans_share_a_users_connection_and_leave_its_settings(tmp_path):
    """Two scans on the user's own DuckDB connection both run (view names are unique in
    the process), equal the in-memory analysis, and leave the connection's memory limit
    and insertion-order setting as the user set them."""
    import duckdb

    frame = _baseline_log(5).drop(columns="style_length_delta")
    frame["outcome"] = (frame["outcome"] > 0.5).astype(float)
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    connection = duckdb.connect()
    settings = ("SELECT current_setting('memory_limit'), "
                "current_setting('preserve_insertion_order')")
    before = connection.execute(settings).fetchall()
    variance = winrate.Variance(method="sandwich")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        mem = winrate.analyze(winrate.read_comparisons(path), "prompt", variance=variance)
        for _ in range(2):
            scan = winrate.scan(str(path), engine="duckdb", connection=connection,
                                memory=2 << 30)
            assert_same(mem, winrate.analyze(scan, "prompt", variance=variance))
    assert connection.execute(settings).fetchall() == before


def _cell_icc(centered, cells, weight) -> float:
    """One-way ANOVA ICC of ``centered`` grouped by ``cells`` with frequency ``weight``,
    from its textbook terms (Searle, Casella & McCulloch 1992, sec. 3.6): MSB, MSW and
    ``n0 = (N - sum n_c^2 / N) / (C - 1)``, computed by pandas."""
    frame = pd.DataFrame({"x": centered, "cell": cells,
                          "w": np.ones(len(cells)) if weight is None else weight})
    frame["wx"] = frame.w * frame.x
    size = frame.groupby("cell").w.sum()
    mean = frame.groupby("cell").wx.sum() / size
    grand = frame.wx.sum() / frame.w.sum()
    total, groups = size.sum(), len(size)
    between = float((size * (mean - grand) ** 2).sum()) / (groups - 1)
    within = float((frame.w * (frame.x - frame.cell.map(mean)) ** 2).sum()) / (total - groups)
    n0 = (total - (size ** 2).sum() / total) / (groups - 1)
    return (between - within) / (between + (n0 - 1) * within)


def test_the_engine_reduces_the_cell_icc_of_single_cluster_pairs(tmp_path):
    """Where a pair is seen in one prompt only, the engine reduces the ICC of the centred
    scores by (prompt, pair) cell (the correlation the single-cluster pairs' bound reads),
    equal to pandas' one-way ANOVA of the in-memory fit's rows and to the in-memory
    function; the judge axis has no such pair and reduces none."""
    from winrate.inference.covariance import _same_pair_icc
    from winrate.inference.scanned import scanned_log

    frame = _random_log(11, 400, 4, 40, 6)
    frame.loc[:5, ["prompt_id", "model_a", "model_b"]] = [0, 0, 4]  # pair (0, 4): prompt 0
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    scanned = winrate.scan(path, engine="duckdb")
    key_log, design = scanned_log(scanned, "bt")
    board = winrate.fit(key_log, "bt")
    sums = design.cluster_sums(key_log, board, ("prompt", "judge"), None, None)
    log = winrate.read_comparisons(frame)
    memory = winrate.fit(log, "bt")
    cells = log.axes["prompt"].codes.astype(np.int64) * len(memory.pairs) + memory.pair
    expected = _cell_icc(memory.centered, cells, log.frequency)

    fitted = SimpleNamespace(board=memory, log=log)  # what _same_pair_icc reads
    assert sums.design(0).single.sum() == 1
    assert abs(sums.same_pair_icc(0) - expected) <= 1e-12 * abs(expected)
    assert abs(_same_pair_icc(fitted, "prompt", np.nan) - expected) <= 1e-12 * abs(expected)
    assert not sums.design(1).single.any() and sums.same_pair_icc(1) is None


@st.composite
def single_cluster_pair_logs(draw):
    """A log whose prompts and judges shift the outcome (so the (cluster, pair) cells
    correlate), with one or two pairs compared within a single prompt -- the second also
    within a single judge -- and their models compared elsewhere; optionally weighted."""
    k = draw(st.integers(4, 6))
    n = draw(st.integers(60, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    lonely = [(k - 1, 0), (1, 2)][:draw(st.integers(1, 2))]
    for x, y in lonely:  # compared only in the rows added below
        b[((a == x) & (b == y)) | ((a == y) & (b == x))] = min({0, 1, 2, 3} - {x, y})
    prompts = rng.integers(0, max(6, n // draw(st.integers(3, 8))), n)
    judges = rng.integers(0, 4, n)
    parts = [(a, b, prompts, judges)]
    for i, (x, y) in enumerate(lonely):
        m = draw(st.integers(2, 10))
        parts.append((np.full(m, x), np.full(m, y), np.full(m, 10_000 + i),
                      rng.integers(0, 4, m) if i == 0 else np.full(m, 7)))
    a, b, prompts, judges = (np.concatenate(p) for p in zip(*parts, strict=True))
    spread = draw(st.sampled_from([1.5, 3.0]))
    shift = (rng.normal(0, spread, prompts.max() + 1)[prompts]
             + rng.normal(0, spread, judges.max() + 1)[judges])
    p_a = 1 / (1 + np.exp(-(0.3 * (b - a) + shift)))
    frame = pd.DataFrame({"prompt_id": prompts, "judge_id": judges,
                          "model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                          "outcome": np.where(rng.random(len(a)) < p_a, "a", "b")})
    weighted = draw(st.booleans())
    if weighted:
        frame["w"] = rng.choice([1.0, 2.0, 3.5], len(frame))
    return frame, ("w" if weighted else None)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(single_cluster_pair_logs(), st.sampled_from(["prompt", "judge", "prompt+judge"]),
       st.sampled_from(["cr1", "cr2"]))
def test_single_cluster_pairs_bound_equals_memory(tmp_path, data, cluster, correction):
    """Pairs compared within one cluster of an axis get the win rate's bound with the ICC
    of the axis' (cluster, pair) cells: the engine reduces that ICC in SQL
    (:meth:`EngineSums.same_pair_icc`), memory computes it from the rows, and the bound,
    the covariance and every diagnostic agree to 1e-12 (the pooled axis ICC, which the
    engine took before, differs)."""
    frame, weight = data
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    mem, eng = _analyses(frame, weight, path, ("winrate", {}), cluster, correction)
    assert_same(mem, eng)
    assert _relative(mem.unidentified_bound, eng.unidentified_bound) <= TOL
    assume(np.abs(mem.unidentified_bound).max() > 0)  # a cell ICC <= 0 bounds nothing


def test_intersection_term_of_one_key_and_mixed_cells(tmp_path):
    """The prompt x judge term on an engine, its one-key cells reduced per key and only
    the cells of several keys grouped by entry (:meth:`EngineSums._split_meat`), equals
    the term computed by brute force from the in-memory fit's influence rows: numpy sums
    by (prompt, judge) cell give the meat, the number of cells, and per column the
    largest squared total, the row squares, the spread and the fourth powers. The log has
    cells of one row, cells of several rows of one key and cells of several keys, and
    weights (zero weights drop rows)."""
    from winrate.inference.scanned import scanned_log

    rng = np.random.default_rng(5)
    frame = _random_log(5, 1500, 5, 60, 30, outcomes=(1.0, 0.0, 0.5))
    frame.loc[:40, ["prompt_id", "judge_id", "model_a", "model_b", "outcome"]] = [
        0, 0, 1, 2, 1.0]  # one cell of 41 rows of one key
    frame[["model_a", "model_b"]] = "m" + frame[["model_a", "model_b"]].astype(str)
    frame["w"] = rng.choice([0.0, 1.0, 2.5], len(frame), p=[0.1, 0.6, 0.3])
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    scanned = winrate.scan(path, engine="duckdb", weight_col="w")
    key_log, design = scanned_log(scanned, "bt")
    board = winrate.fit(key_log, "bt")
    engine = design.cluster_sums(key_log, board, ("prompt", "judge"), None,
                                 None).term_meats("cr1")[2]

    log = winrate.read_comparisons(frame, weight_col="w")
    memory = winrate.fit(log, "bt")
    assert list(memory.models) == list(board.models)
    influence = memory.influence.toarray() if hasattr(memory.influence, "toarray") \
        else np.asarray(memory.influence)
    cell = pd.MultiIndex.from_arrays([log.axes["prompt"].codes,
                                      log.axes["judge"].codes]).factorize()[0]
    totals = pd.DataFrame(influence).groupby(cell).sum().to_numpy()
    squares = pd.DataFrame(influence ** 2).groupby(cell).sum().to_numpy()
    sizes = np.bincount(cell)
    assert sizes.max() > 1 and (sizes == 1).any()
    expected = {"meat": totals.T @ totals, "largest": (totals ** 2).max(axis=0),
                "row_squares": squares.sum(axis=0), "spread": (squares ** 2).sum(axis=0),
                "fourth": (totals ** 4).sum(axis=0)}
    assert engine.n_groups == len(sizes)
    for name, value in expected.items():
        assert _relative(getattr(engine, name), value) <= TOL, name
