"""An adversarial audit of every input path (issue 32): the same log gives the same answer
or the same one-line error in memory, on DuckDB and on Spark.

Each case writes a tiny log in some shape (CSV, TSV, compressed, Parquet written by pandas
with its index, JSON Lines; a folder or a glob of parts; id columns of different types)
and compares the analysis on each engine with the in-memory analysis of the plain CSV
(:func:`reference`), or checks that every engine gives the same one-line
:class:`WinrateInputError`. The classes:

* **same answer on every path**: pandas-written Parquet (index columns), TSV and compressed
  logs, folders and (recursive) globs that select the same parts, ids of mixed types,
  LMArena's ``tie (bothbad)``, quoted newlines, BOM / CRLF / mixed line endings / blank
  lines, a header with spaces;
* **same one-line error on every engine**: a file that is not UTF-8, a ragged or short line
  past DuckDB's sniffing sample, a wrong separator, an unknown or out-of-range outcome (its
  values and counts), a mistyped column (a suggestion), a part the engines cannot read
  (JSON Lines, bzip2, mixed kinds), Parquet parts that disagree on a column's type, a
  0-byte or header-only file, every weight 0, an engine out of memory;
* **errors cite the file, never an engine's internal row**: file lines in memory, a count
  and the offending values on an engine;
* **a note, not a silent split**: model names that differ only in case;
* **no hang**: a memory budget below the floor (the bucketed second pass whose time the
  scan once estimated is gone: pass 2 is the engine's grouped SQL).

Spark cases are few (each costs seconds) and use the ``spark_engine`` fixture of
tests/conftest.py, which honours ``WINRATE_SKIP_SPARK=1``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import winrate
from tests.note_codes import notes_of
from winrate.errors import WinrateInputError, WinrateWarning

N_ROWS = 240
MODELS = np.array(["m1", "m2", "m3", "m4"])
ENGINES = ("memory", "duckdb", "spark")


def log_frame(seed: int = 0, n: int = N_ROWS) -> pd.DataFrame:
    """A small crossed log with integer prompt and judge ids and a/b/tie outcomes."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(MODELS), n)
    b = (a + rng.integers(1, len(MODELS), n)) % len(MODELS)
    return pd.DataFrame({"prompt_id": rng.integers(0, 40, n), "judge_id": rng.integers(0, 5, n),
                         "model_a": MODELS[a], "model_b": MODELS[b],
                         "outcome": rng.choice(["a", "b", "tie"], n)})


@pytest.fixture
def engine(request):
    """An engine name; ``spark`` starts (or skips, on request) the shared local session."""
    if request.param == "spark":
        request.getfixturevalue("spark_engine")
    return request.param


def all_engines(spark: bool = True):
    """``engine`` parameters: memory and DuckDB, and Spark when ``spark``."""
    return pytest.mark.parametrize("engine", ENGINES if spark else ENGINES[:2], indirect=True)


def case_grid(name: str, cases, on_spark=(), engines=ENGINES[:2]):
    """``(name, engine)`` parameters: every case on ``engines``, and the few cases
    ``on_spark`` on Spark too (each Spark case costs seconds)."""
    grid = [(case, engine) for case in cases for engine in engines]
    grid += [(case, "spark") for case in on_spark]
    return pytest.mark.parametrize(f"{name}, engine", grid, indirect=["engine"])


def analysed(source, engine: str, **scan_options):
    """The prompt+judge analysis of ``source`` scanned on ``engine``; notes silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return winrate.analyze(winrate.scan(source, engine, **scan_options),
                               cluster="prompt+judge")


def reference(frame: pd.DataFrame, tmp_path):
    """The in-memory analysis of ``frame`` written as a plain CSV."""
    path = tmp_path / "reference.csv"
    frame.to_csv(path, index=False)
    return analysed(path, "memory")


def assert_same(result, expected) -> None:
    assert list(map(str, result.models)) == list(map(str, expected.models))
    np.testing.assert_allclose(result.scores, expected.scores, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.cov, expected.cov, rtol=1e-9, atol=1e-14)


def error_of(source, engine: str, **scan_options) -> str:
    """The one-line WinrateInputError an analysis of ``source`` on ``engine`` ends in."""
    with pytest.raises(WinrateInputError) as caught:
        analysed(source, engine, **scan_options)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


# ------------------------------------------------------------- same answer on every path

def filtered(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as ``df[mask]`` leaves it: rows dropped here and there (a mask that keeps
    every row, or a reversal, leaves pandas 3 a RangeIndex, stored as metadata only)."""
    return frame[frame.index % 7 != 3].iloc[::-1]


def index_columns(path) -> list[str]:
    """The columns of the Parquet file ``path`` that hold a pandas index."""
    import pyarrow.parquet as pq

    return [name for name in pq.read_schema(path).names if name.startswith("__index_level_")]


def _filtered_index(frame, path):
    filtered(frame).to_parquet(path)
    assert index_columns(path) == ["__index_level_0__"]  # as df[mask].to_parquet writes


def _named_index(frame, path):
    frame.set_index("prompt_id").to_parquet(path)  # the index is the prompt column


def _range_index(frame, path):
    frame.to_parquet(path)  # a RangeIndex, kept as metadata only


def _two_level_index(frame, path):
    frame.set_index([frame.index * 2, frame.index % 3]).to_parquet(path)


PARQUET_WRITERS = {"filtered": _filtered_index, "named": _named_index,
                   "range": _range_index, "two-level": _two_level_index}


@case_grid("index", PARQUET_WRITERS, on_spark=("filtered", "named"))
def test_pandas_parquet_with_its_index_gives_the_csv_answer(index, engine, tmp_path):
    frame = log_frame()
    path = tmp_path / "log.parquet"
    PARQUET_WRITERS[index](frame, path)
    expected = reference(filtered(frame) if index == "filtered" else frame, tmp_path)
    assert_same(analysed(path, engine), expected)


@all_engines(spark=False)
def test_pandas_index_columns_are_no_columns_on_any_engine(engine, tmp_path):
    frame = log_frame()
    _filtered_index(frame, tmp_path / "log.parquet")
    message = error_of(tmp_path / "log.parquet", engine, columns={"prompt": "__index_level_0__"})
    assert "'__index_level_0__' not found" in message and "__index_level_0__'," not in message


def _write_delimited(frame, path, sep):
    frame.to_csv(path, index=False, sep=sep)  # compressed as the name says


DELIMITED = {"log.tsv": "\t", "log.tsv.gz": "\t", "log.csv.gz": ",", "log.csv.bz2": ","}


@case_grid("name", DELIMITED, on_spark=("log.tsv.gz",))
def test_tsv_and_compressed_logs_give_the_csv_answer(name, engine, tmp_path):
    frame = log_frame(1)
    _write_delimited(frame, tmp_path / name, DELIMITED[name])
    expected = reference(frame, tmp_path)
    if engine != "memory" and name.endswith(".bz2"):
        message = error_of(tmp_path / name, engine)
        assert "gzip" in message and "log.csv.bz2" in message
        return
    assert_same(analysed(tmp_path / name, engine), expected)


def test_read_comparisons_reads_tsv_gz_and_the_cli_reads_tsv(tmp_path, capsys):
    from winrate.cli import main

    frame = log_frame(2)
    _write_delimited(frame, tmp_path / "log.tsv", "\t")
    _write_delimited(frame, tmp_path / "log.tsv.gz", "\t")
    one, two = (winrate.read_comparisons(tmp_path / n) for n in ("log.tsv", "log.tsv.gz"))
    assert one.n_rows == two.n_rows == N_ROWS and list(one.models) == list(MODELS)
    assert main(["leaderboard", str(tmp_path / "log.tsv"), "--cluster", "prompt"]) == 0
    assert "m1" in capsys.readouterr().out


def _split(frame, n: int) -> list[pd.DataFrame]:
    """``frame`` in ``n`` consecutive parts."""
    bounds = np.linspace(0, len(frame), n + 1).astype(int)
    return [frame.iloc[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _parts(frame, folder, suffixes):
    """``frame`` cut into one part per suffix, written into ``folder``."""
    folder.mkdir()
    for i, (suffix, part) in enumerate(zip(suffixes, _split(frame, len(suffixes)),
                                           strict=True)):
        sep = "\t" if ".tsv" in suffix else ","
        if suffix.startswith(".parquet"):
            part.to_parquet(folder / f"part-{i}{suffix}")
        else:
            part.to_csv(folder / f"part-{i}{suffix}", index=False, sep=sep)


@all_engines(spark=False)
@pytest.mark.parametrize("suffixes", [(".csv", ".csv.gz"), (".tsv", ".tsv.gz"),
                                      (".parquet", ".parquet")])
@pytest.mark.parametrize("how", ["folder", "glob", "recursive glob"])
def test_a_folder_and_its_glob_read_the_same_parts(suffixes, how, engine, tmp_path):
    frame = log_frame(3)
    _parts(frame, tmp_path / "parts", suffixes)
    (tmp_path / "parts" / "README.md").write_text("not a part\n")
    (tmp_path / "parts" / "_SUCCESS").write_text("")
    (tmp_path / "parts" / "_temporary").mkdir()  # a writer's leftovers: no parts
    frame.iloc[:7].to_csv(tmp_path / "parts" / "_temporary" / "part-9.csv", index=False)
    source = {"folder": tmp_path / "parts", "glob": tmp_path / "parts" / "*",
              "recursive glob": tmp_path / "parts" / "**" / "*"}[how]
    assert_same(analysed(source, engine), reference(frame, tmp_path))


def test_a_folder_of_compressed_csv_parts_on_spark(spark_engine, tmp_path):
    frame = log_frame(3)
    _parts(frame, tmp_path / "parts", (".csv", ".csv.gz"))
    assert_same(analysed(tmp_path / "parts", "spark"), reference(frame, tmp_path))


@all_engines(spark=False)
@pytest.mark.parametrize("mixed", [(".csv", ".tsv"), (".csv", ".jsonl"),
                                   (".csv", ".parquet")])
@pytest.mark.parametrize("how", ["folder", "glob"])
def test_a_folder_or_glob_of_mixed_parts_is_one_line_error(mixed, how, engine, tmp_path):
    frame = log_frame(4)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, (suffix, part) in enumerate(zip(mixed, _split(frame, 2), strict=True)):
        name = folder / f"part-{i}{suffix}"
        if suffix == ".jsonl":
            part.to_json(name, orient="records", lines=True)
        elif suffix == ".parquet":
            part.to_parquet(name)
        else:
            part.to_csv(name, index=False, sep="\t" if suffix == ".tsv" else ",")
    source = folder if how == "folder" else folder / "*"
    expected = "is JSONL: DuckDB and Spark read" if ".jsonl" in mixed else "holds both"
    assert expected in error_of(source, engine)


@pytest.mark.parametrize("engine", ENGINES[1:], indirect=True)  # a folder: on an engine
def test_parquet_parts_that_disagree_on_a_columns_type_are_one_line_error(engine, tmp_path):
    frame = log_frame(5).assign(model_a=lambda f: f.model_a.str[1:],
                                model_b=lambda f: f.model_b.str[1:])
    (tmp_path / "parts").mkdir()
    first, second = _split(frame, 2)
    # a part whose judge column is all missing (Arrow's null type) unites with any type
    second.iloc[:0].assign(judge_id=None).to_parquet(tmp_path / "parts" / "0.parquet")
    first.astype({"model_a": float}).to_parquet(tmp_path / "parts" / "a.parquet")
    second.to_parquet(tmp_path / "parts" / "b.parquet")  # "1" as text: DuckDB read "1.0", "1"
    assert "column 'model_a' is text in '0.parquet' but number in 'a.parquet'" in error_of(
        tmp_path / "parts", engine)


def _int_and_text_models(frame):
    """model_a as integers, model_b as the same ids in text."""
    out = frame.copy()
    out["model_a"] = out.model_a.str[1:].astype(int)
    out["model_b"] = out.model_b.str[1:]
    return out


@all_engines()
def test_ids_of_different_types_are_one_model(engine, tmp_path):
    frame = log_frame(5)
    path = tmp_path / "mixed.parquet"
    _int_and_text_models(frame).to_parquet(path)
    as_text = frame.assign(model_a=frame.model_a.str[1:], model_b=frame.model_b.str[1:])
    result = analysed(path, engine)
    assert list(result.models) == ["1", "2", "3", "4"]
    assert_same(result, reference(as_text, tmp_path))


@pytest.mark.parametrize("writer", ["frame", "jsonl", "float-parquet"])
def test_ids_of_different_types_are_one_model_in_every_reader(writer, tmp_path):
    frame = _int_and_text_models(log_frame(5))
    if writer == "jsonl":
        frame.to_json(tmp_path / "log.jsonl", orient="records", lines=True)
        source = tmp_path / "log.jsonl"
    elif writer == "float-parquet":
        frame.assign(model_a=frame.model_a.astype(float)).to_parquet(tmp_path / "f.parquet")
        source = tmp_path / "f.parquet"
    else:
        source = frame
    log = winrate.read_comparisons(source)
    assert list(log.models) == ["1", "2", "3", "4"]


@all_engines()
def test_lmarena_tie_bothbad_is_a_tie(engine, tmp_path):
    frame = log_frame(6)
    both_bad = frame.assign(outcome=frame.outcome.replace("tie", "tie (bothbad)"))
    both_bad.to_csv(tmp_path / "bothbad.csv", index=False)
    assert_same(analysed(tmp_path / "bothbad.csv", engine), reference(frame, tmp_path))


def _quoted_newlines(frame, path):
    frame = frame.copy()
    frame.loc[::5, "model_a"] = 'm,"x"\nz'  # a name with a comma, quotes and a newline
    frame.to_csv(path, index=False)


def _blank_lines_bom_crlf(frame, path):
    lines = frame.to_csv(index=False).encode().split(b"\n")
    lines[50:50] = [b"", b""]
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines))


def _numeric_outcomes(frame, path):
    frame.assign(outcome=frame.outcome.map({"a": 1, "b": 0, "tie": 0.5})).to_csv(path,
                                                                               index=False)


def _winner_names_upper_labels(frame, path):
    winner = np.where(frame.outcome == "a", frame.model_a,
                      np.where(frame.outcome == "b", frame.model_b, "TIE"))
    frame.assign(outcome=winner).to_csv(path, index=False)


def _text_na_ids(frame, path):
    frame = frame.astype({"prompt_id": str})
    frame.loc[::7, "prompt_id"] = "NA"  # a prompt named NA, not a missing value
    frame.to_csv(path, index=False)


SHAPES = {"quoted newlines": _quoted_newlines, "blank lines, BOM, CRLF": _blank_lines_bom_crlf,
          "numeric outcomes": _numeric_outcomes, "winner names": _winner_names_upper_labels,
          "ids named NA": _text_na_ids}


@all_engines(spark=False)
@pytest.mark.parametrize("shape", SHAPES)
def test_csv_shapes_give_the_in_memory_answer(shape, engine, tmp_path):
    path = tmp_path / "shape.csv"
    SHAPES[shape](log_frame(16), path)
    assert_same(analysed(path, engine), analysed(path, "memory"))


def test_quoted_newlines_and_doubled_quotes_on_spark(spark_engine, tmp_path):
    path = tmp_path / "shape.csv"
    _quoted_newlines(log_frame(16), path)
    assert_same(analysed(path, "spark"), analysed(path, "memory"))


@all_engines(spark=False)
def test_a_frame_with_ids_of_mixed_types_in_one_column(engine, tmp_path):
    frame = log_frame(17)
    mixed = frame.assign(model_a=[int(v[1:]) if i % 2 else v[1:]
                                  for i, v in enumerate(frame.model_a)],
                         model_b=frame.model_b.str[1:])
    as_text = frame.assign(model_a=frame.model_a.str[1:], model_b=frame.model_b.str[1:])
    assert_same(analysed(mixed, engine), reference(as_text, tmp_path))


# ------------------------------------------------------------- same one-line error

def _bytes_with(frame, path, line: int, old: bytes, new: bytes) -> None:
    """``frame`` as CSV with ``old`` replaced by ``new`` on file line ``line``."""
    lines = frame.to_csv(index=False).encode().split(b"\n")
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    path.write_bytes(b"\n".join(lines))


def _latin1(path):
    _bytes_with(log_frame(7), path, 151, b"m", b"\xe9m")


def _ragged_late(path):
    _bytes_with(pd.concat([log_frame(7)] * 25), path, 5501, b"\n", b"")
    lines = path.read_bytes().split(b"\n")
    lines[5500] += b",extra"
    path.write_bytes(b"\n".join(lines))


def _semicolons(path):
    log_frame(7).to_csv(path, index=False, sep=";")


def _unknown_outcomes(path):
    frame = log_frame(7)
    frame.loc[::3, "outcome"] = "win"
    frame.loc[1, "outcome"] = "lose"
    frame.to_csv(path, index=False)


def _out_of_range(path):
    frame = log_frame(7).assign(outcome=1.0)
    frame.loc[3, "outcome"] = 2.0
    frame.to_csv(path, index=False)


def _header_only(path):
    path.write_text("prompt_id,judge_id,model_a,model_b,outcome\n")


BROKEN = {
    "numeric outcome out of range": (_out_of_range, ["numeric outcome not in [0, 1]",
                                                     "2.0 in 1 row"]),
    "header only": (_header_only, ["is empty: it has no rows"]),
    "latin-1": (_latin1, ["is not UTF-8", "line 151"]),
    "ragged line past the sniffing sample": (_ragged_late,
                                             ["Expected 5 fields in line 5501, saw 6"]),
    "semicolons": (_semicolons, ["one column", "';'"]),
    "unknown outcomes": (_unknown_outcomes, ["'win' in 80 rows", "'lose' in 1 row"]),
}


@case_grid("case", BROKEN, on_spark=("latin-1", "ragged line past the sniffing sample",
                                     "unknown outcomes"))
def test_a_broken_csv_is_the_same_one_line_error_on_every_engine(case, engine, tmp_path):
    write, expected = BROKEN[case]
    path = tmp_path / "broken.csv"
    write(path)
    message = error_of(path, engine)
    for part in expected:
        assert part in message, message
    assert "index labels" not in message


@all_engines(spark=False)
def test_a_broken_csv_error_is_identical_on_memory_and_duckdb(engine, tmp_path):
    path = tmp_path / "broken.csv"
    _ragged_late(path)
    assert error_of(path, engine) == error_of(path, "memory")


@all_engines()
def test_mixed_line_endings_read_alike_on_every_engine(engine, tmp_path):
    frame = log_frame(8)
    lines = frame.to_csv(index=False).encode().split(b"\n")
    path = tmp_path / "endings.csv"
    path.write_bytes(b"\n".join(lines[:100]) + b"\r\n" + b"\r\n".join(lines[100:]))
    assert_same(analysed(path, engine), reference(frame, tmp_path))


@all_engines(spark=False)
def test_a_short_line_past_the_sniffing_sample_is_a_missing_value_everywhere(engine,
                                                                              tmp_path):
    lines = pd.concat([log_frame(8)] * 25).to_csv(index=False).encode().split(b"\n")
    lines[5500] = b",".join(lines[5500].split(b",")[:4])  # line 5501 lacks its outcome
    path = tmp_path / "short.csv"
    path.write_bytes(b"\n".join(lines))
    assert "column 'outcome': missing value in 1 row(s)" in error_of(path, engine)


def test_the_cli_suggests_a_column_and_refuses_a_tiny_budget(tmp_path, capsys):
    from winrate.cli import main

    log_frame(9).to_csv(tmp_path / "log.csv", index=False)
    assert main(["leaderboard", str(tmp_path / "log.csv"), "--prompt-col", "promt_id"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean 'prompt_id'?" in err[0]
    assert main(["leaderboard", str(tmp_path / "log.csv"), "--engine", "duckdb",
                 "--memory", "1M"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "below the floor" in err[0]


@all_engines(spark=False)
@pytest.mark.parametrize("role, typo, column", [("prompt", "promt_id", "prompt_id"),
                                                ("model_a", "modela", "model_a")])
def test_a_mistyped_column_gets_a_suggestion(role, typo, column, engine, tmp_path):
    path = tmp_path / "log.csv"
    log_frame(9).to_csv(path, index=False)
    message = error_of(path, engine, columns={role: typo})
    assert f"did you mean {column!r}?" in message


def test_a_mistyped_column_gets_a_suggestion_in_the_readers(tmp_path):
    frame = log_frame(9)
    with pytest.raises(WinrateInputError, match=r"did you mean 'outcome'\?"):
        winrate.read_comparisons(frame, outcome_col="outcom")
    scores = pd.DataFrame({"question_id": [1, 1, 2, 2], "model": ["x", "y"] * 2,
                           "correct": [1, 0, 1, 1]})
    from winrate.io.scores import scores_log

    with pytest.raises(WinrateInputError, match=r"did you mean 'correct'\?"):
        scores_log(scores, score_col="corect")


@pytest.mark.parametrize("name", ["log.txt", "log.jsonl"])
def test_a_file_the_engines_do_not_read_is_one_line_error_on_both(name, tmp_path):
    frame = log_frame(10)
    path = tmp_path / name
    if name.endswith(".jsonl"):
        frame.to_json(path, orient="records", lines=True)
        assert_same(analysed(path, "memory"), reference(frame, tmp_path))
    else:
        frame.to_csv(path, index=False)
        assert "cannot tell the format" in error_of(path, "memory")
    assert name in error_of(path, "duckdb")


# ------------------------------------------------------------- errors cite the file

def _with(column: str, rows: list[int], value, **options):
    """A writer of log_frame(11) with ``value`` in ``column`` on ``rows`` (a callable:
    of the frame), and the scan options that read it."""
    def write(path):
        frame = log_frame(11).assign(w=1.0, len=2.0).astype({"prompt_id": object, "w": object,
                                                              "len": object})
        frame.loc[rows, column] = value(frame.loc[rows]) if callable(value) else value
        frame.to_csv(path, index=False)
    return write, options


ROW_ERRORS = {
    "missing model": (_with("model_b", [4, 9], ""), "'model_b': missing value in 2 row(s)"),
    "self comparison": (_with("model_b", [2, 3, 7], lambda rows: rows.model_a),
                        "the same model in 'model_a' and 'model_b' in 3 row(s): "),
    "missing prompt": (_with("prompt_id", [1, 8], ""), "'prompt_id': missing value in 2 row(s)"),
    "bad weight": (_with("w", [5], "x", weight_col="w"),
                   "'w': weight must be a finite number >= 0 in 1 row(s)"),
    "bad feature": (_with("len", [5], "", feature_cols=("len",)),
                    "'len': feature is missing or not a finite number in 1 row(s)"),
    "all weights zero": (_with("w", list(range(N_ROWS)), 0.0, weight_col="w"),
                         "column 'w': every row has weight 0"),
}

#: How an error cites rows: file lines in memory, no row numbers on an engine.
_ROW_CITATION = re.compile(r"(, first rows \(file lines\): .*| of '[^']*' \(an engine groups "
                           r"the rows and numbers none of them: find them by value\))$")


@all_engines(spark=False)
@pytest.mark.parametrize("case", ROW_ERRORS)
def test_row_errors_say_the_same_and_cite_file_lines_or_no_rows(case, engine, tmp_path):
    (write, options), expected = ROW_ERRORS[case]
    path = tmp_path / "log.csv"
    write(path)
    message = error_of(path, engine, **options)
    assert expected in message and "index labels" not in message, message
    in_memory = error_of(path, "memory", **options)
    assert _ROW_CITATION.sub("", message) == _ROW_CITATION.sub("", in_memory)
    if engine != "memory" and case != "all weights zero":
        assert "(an engine groups the rows" in message and "log.csv" in message


def test_a_folder_read_into_memory_by_an_engine_cites_no_engine_rows(tmp_path):
    frame = log_frame(11)
    frame.loc[[3, 200], "outcome"] = "win"
    _parts(frame, tmp_path / "parts", (".csv", ".csv.gz"))
    message = error_of(tmp_path / "parts", "memory")  # a folder: DuckDB reads it whole
    assert "unknown outcome" in message and "'win' in 2 rows of" in message
    assert "index labels" not in message


def _spaced_header(path):
    text = log_frame(12).to_csv(index=False).replace(",", ", ", 4).replace("model_a", "model_a ",
                                                                             1)
    path.write_text(text)


@all_engines()
def test_a_header_with_spaces_reads_alike_on_every_engine(engine, tmp_path):
    path = tmp_path / "spaced.csv"
    _spaced_header(path)
    assert path.read_text().startswith("prompt_id, judge_id, model_a , model_b, outcome")
    assert_same(analysed(path, engine), reference(log_frame(12), tmp_path))


@all_engines(spark=False)
def test_a_zero_byte_file_is_the_same_error_on_every_engine(engine, tmp_path):
    (tmp_path / "empty.csv").write_bytes(b"")
    assert error_of(tmp_path / "empty.csv", engine).endswith("empty.csv' is empty (0 bytes)")


@all_engines()
@pytest.mark.parametrize("suffix", [".csv", ".tsv.gz"])
def test_a_header_naming_a_column_twice_is_the_same_error_on_every_engine(engine, suffix,
                                                                         tmp_path):
    """pandas would read the second 'model_a' as 'model_a.1' and DuckDB as 'model_a_1';
    a header that names a column twice is refused alike, as a file and as a folder part."""
    frame = log_frame(8)
    frame["model_a_again"] = frame["model_b"]
    path = tmp_path / "parts" / f"twice{suffix}"
    path.parent.mkdir()
    sep = "\t" if suffix.startswith(".tsv") else ","
    frame.rename(columns={"model_a_again": "model_a"}).to_csv(path, index=False, sep=sep)
    for source in (path, path.parent):
        message = error_of(source, engine)
        assert message.endswith("the header names 'model_a' more than once; give each "
                                "column its own name"), message


# ------------------------------------------------------------- names that differ in case

@all_engines()
def test_model_names_differing_only_in_case_get_a_note(engine, tmp_path):
    frame = log_frame(12)
    frame.loc[::2, "model_a"] = frame.loc[::2, "model_a"].str.upper()
    path = tmp_path / "case.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = winrate.analyze(winrate.scan(path, engine), cluster="prompt")
    note = notes_of(caught).only("case-only-names")[0]
    assert set(note.models) >= {"M1", "m1"} and len(result.models) > len(MODELS)


def test_the_case_note_reaches_stderr_and_json(tmp_path):
    frame = log_frame(12)
    frame.loc[::2, "model_a"] = frame.loc[::2, "model_a"].str.upper()
    frame.to_csv(tmp_path / "case.csv", index=False)
    out = subprocess.run([sys.executable, "-c", "import sys, winrate.cli; "
                          "sys.exit(winrate.cli.main(sys.argv[1:]))", "leaderboard",
                          str(tmp_path / "case.csv"), "--json", str(tmp_path / "r.json"),
                          "--cluster", "prompt"], capture_output=True, text=True, check=True)
    assert "[case-only-names]" in out.stderr
    assert "case-only-names" in (tmp_path / "r.json").read_text()


# ------------------------------------------------------------- no hang

@pytest.mark.parametrize("memory", [1000, 1 << 20])
def test_a_budget_below_the_floor_is_one_line_error(memory, tmp_path):
    path = tmp_path / "log.csv"
    log_frame(13).to_csv(path, index=False)
    with pytest.raises(WinrateInputError, match="below the floor"):
        winrate.scan(path, "duckdb", memory=memory)


# ------------------------------------------------------------- the command line

@pytest.mark.parametrize("index", ["filtered", "named"])
def test_the_cli_reads_pandas_parquet_as_a_log_and_as_scores(index, tmp_path, capsys):
    from winrate.cli import main

    frame = log_frame(14)
    PARQUET_WRITERS[index](frame, tmp_path / "log.parquet")
    assert main(["leaderboard", str(tmp_path / "log.parquet"), "--cluster", "prompt"]) == 0
    scores = pd.DataFrame({"question_id": np.repeat(np.arange(30), 3),
                           "model": np.tile(["x", "y", "z"], 30),
                           "correct": np.random.default_rng(0).integers(0, 2, 90)})
    write = filtered(scores) if index == "filtered" else scores.set_index("question_id")
    write.to_parquet(tmp_path / "scores.parquet")
    assert index_columns(tmp_path / "scores.parquet") == (
        ["__index_level_0__"] if index == "filtered" else [])
    assert main(["leaderboard", str(tmp_path / "scores.parquet"), "--format", "scores",
                 "--score-col", "correct", "--question-col", "question_id",
                 "--model-col", "model", "--cluster", "prompt"]) == 0
    assert "x" in capsys.readouterr().out



# ------------------------------------------------------------- the other readers

def test_scores_with_ids_of_mixed_types_are_one_model():
    from winrate.io.scores import scores_log

    model = [[1 if q % 2 else "1", "2", "3"] for q in range(20)]  # 1 as a number and text
    scores = pd.DataFrame({"question_id": np.repeat(np.arange(20), 3),
                           "model": pd.Series(sum(model, []), dtype=object),
                           "correct": np.random.default_rng(1).integers(0, 2, 60)})
    table = scores_log(scores, score_col="correct")
    assert list(table.models) == ["1", "2", "3"]


def _battles(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")


def test_a_format_folder_reads_upper_case_suffixes_and_counts_unknown_winners(tmp_path):
    from winrate.io.formats import read_format

    battle = {"model_a": "x", "model_b": "y", "winner": "model_a", "question_id": "q"}
    (tmp_path / "battles").mkdir()
    _battles(tmp_path / "battles" / "one.jsonl", [battle] * 3)
    _battles(tmp_path / "battles" / "TWO.JSONL", [{**battle, "winner": "tie (bothbad)"}] * 2)
    frame = read_format(tmp_path / "battles", "clean_battle")
    assert len(frame) == 5 and sorted(frame.outcome) == [0.5, 0.5, 1, 1, 1]
    _battles(tmp_path / "bad.jsonl", [{**battle, "winner": "left"}] * 4 + [battle])
    with pytest.raises(WinrateInputError, match=r"unknown winner in 4 line\(s\): 'left' in "
                                                r"4 lines"):
        read_format(tmp_path / "bad.jsonl", "clean_battle")


def test_an_engine_out_of_memory_is_one_line_without_rereading_the_files(tmp_path,
                                                                          monkeypatch):
    import duckdb

    from winrate.io import engine as engine_module

    log_frame(18).to_csv(tmp_path / "log.csv", index=False)
    monkeypatch.setattr(engine_module, "check_delimited",
                        lambda path: pytest.fail("the files were read again"))
    with pytest.raises(WinrateInputError, match=r"^duckdb could not read .*log\.csv': Out of "
                                                r"Memory Error: could not allocate$"):
        with engine_module.reading(tmp_path / "log.csv", "duckdb"):
            raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate\nmore")
