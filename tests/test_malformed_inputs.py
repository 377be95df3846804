"""Malformed and degenerate inputs (issue 9): one-line errors, honest numbers, no traceback.

Every malformed case runs through the command line (``winrate.cli.main`` with capsys)
and, where there is one, through the API (``read_comparisons``, ``question_scores``,
``analyze``). A CLI case must exit with code 2 and print exactly one line,
``winrate <command>: error: ...``, naming the file, column or rows; no "Traceback". An API
case must raise :class:`WinrateInputError` (never a pandas or pyarrow exception). Accepted
inputs that used to give silently wrong numbers are checked against independent
computations from the raw text (the ``csv`` module and plain loops), not the package.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.note_codes import coded_lines, notes_of
from winrate.analysis import analyze
from winrate.cli import main
from winrate.eda import explore, to_dict
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.evals.frame import evaluate, question_scores
from winrate.io.logs import ComparisonLog, read_comparisons, read_table

DATA = os.environ.get("WINRATE_DATA")
needs_data = pytest.mark.skipif(
    not DATA or not Path(DATA).is_dir(),
    reason="real-data test: set WINRATE_DATA to the data directory (see the data README)",
)
HEADER = ["prompt_id", "judge_id", "model_a", "model_b", "outcome"]

#: the row labels of input errors
LINES = r"rows \(file lines\): "


# --------------------------------------------------------------------------- inputs


def comparison_rows(n_prompts: int = 40, seed: int = 0) -> list[list[str]]:
    """Three models, every pair on every prompt, four judges, outcomes a / b / tie."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        for a, b in (("m0", "m1"), ("m1", "m2"), ("m0", "m2")):
            rows.append([f"p{p}", f"j{p % 4}", a, b, str(rng.choice(["a", "b", "tie"]))])
    return rows


def write_csv(path: Path, rows, header=HEADER) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def edited(column: str, row: int, value: str) -> Callable[[Path], Path]:
    """A writer of the good log with one cell replaced."""
    def write(tmp: Path) -> Path:
        rows = comparison_rows()
        rows[row][HEADER.index(column)] = value
        return write_csv(tmp / "log.csv", rows)
    return write


def raw(name: str, content: bytes) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        (tmp / name).write_bytes(content)
        return tmp / name
    return write


def good(tmp: Path) -> Path:
    return write_csv(tmp / "log.csv", comparison_rows())


def with_weights(values) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        rows = comparison_rows()
        return write_csv(tmp / "log.csv", [r + [str(values[i % len(values)])]
                                           for i, r in enumerate(rows)], HEADER + ["w"])
    return write


def latin1(tmp: Path) -> Path:
    rows = comparison_rows()
    rows[1][2] = "modèle"
    text = "\n".join(",".join(r) for r in [HEADER, *rows]) + "\n"
    (tmp / "log.csv").write_bytes(text.encode("latin-1"))
    return tmp / "log.csv"


def jsonl_with_broken_line(tmp: Path) -> Path:
    lines = [json.dumps(dict(zip(HEADER, r, strict=True))) for r in comparison_rows()]
    lines[3] = '{"prompt_id": "p1", "model_a": '
    (tmp / "log.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "log.jsonl"


def jsonl_with_array_line(tmp: Path) -> Path:
    lines = [json.dumps(dict(zip(HEADER, r, strict=True))) for r in comparison_rows()]
    lines[6] = "[1, 2]"
    (tmp / "log.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "log.jsonl"


def directory(tmp: Path) -> Path:
    (tmp / "log.csv").mkdir()
    return tmp / "log.csv"


def ragged(tmp: Path) -> Path:
    text = ",".join(HEADER) + "\np1,j,x,y,a\np2,j,x,y,b,extra\n"
    (tmp / "log.csv").write_text(text)
    return tmp / "log.csv"


def plain_text_gz(tmp: Path) -> Path:
    good(tmp).rename(tmp / "log.csv.gz")
    return tmp / "log.csv.gz"


def without_column(column: str) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        i = HEADER.index(column)
        rows = [r[:i] + r[i + 1:] for r in comparison_rows()]
        return write_csv(tmp / "log.csv", rows, HEADER[:i] + HEADER[i + 1:])
    return write


def one_judge(tmp: Path) -> Path:
    return write_csv(tmp / "log.csv", [r[:1] + ["only"] + r[2:] for r in comparison_rows()])


# --------------------------------------------------------------------------- leaderboard


@dataclass(frozen=True)
class Case:
    """A malformed leaderboard input: ``write(tmp) -> path``, extra CLI ``args``, the regex
    the one-line error must match, and the API call (None: a command-line option only)."""

    id: str
    write: Callable[[Path], Path]
    message: str
    args: tuple[str, ...] = ()
    api: Callable[[Path], object] | None = read_comparisons


def _analyze(cluster: str, **read) -> Callable[[Path], object]:
    return lambda path: analyze(read_comparisons(path, **read), cluster=cluster)


LEADERBOARD_CASES = [
    Case("empty-csv", raw("log.csv", b""), r"'.*log\.csv' is empty \(0 bytes\)"),
    Case("blank-lines-csv", raw("log.csv", b"\n\n\n"), r"log\.csv' has no columns"),
    Case("header-only-csv", raw("log.csv", (",".join(HEADER) + "\n").encode()),
         r"log\.csv' is empty: it has no rows"),
    Case("latin-1-csv", latin1, r"log\.csv' is not UTF-8 text \(line 3: .*save it as UTF-8"),
    Case("binary-garbage-csv", raw("log.csv", bytes(range(128, 256)) * 3), r"not UTF-8"),
    Case("broken-jsonl-line", jsonl_with_broken_line,
         r"log\.jsonl': line 4 is not a valid JSON object"),
    Case("array-jsonl-line", jsonl_with_array_line,
         r"log\.jsonl': line 7 is not a valid JSON object: '\[1, 2\]'"),
    Case("empty-jsonl", raw("log.jsonl", b""), r"log\.jsonl' is empty \(0 bytes\)"),
    Case("malformed-json", raw("log.json", b'{"a": [1, 2'), r"cannot read .*log\.json' as JSON"),
    Case("directory", directory,
         r"log\.csv' is a directory(, not a CSV file| with no Parquet, CSV or TSV file)"),
    Case("empty-parquet", raw("log.parquet", b""), r"log\.parquet' is empty \(0 bytes\)"),
    Case("corrupt-parquet", raw("log.parquet", b"PAR1 this is not parquet"),
         r"cannot read .*log\.parquet' as PARQUET"),
    Case("missing-file", lambda tmp: tmp / "nope.csv", r"file not found: .*nope\.csv"),
    Case("unknown-extension", raw("log.xlsx", b"x"), r"cannot tell the format of .*log\.xlsx"),
    Case("ragged-csv", ragged, r"cannot read .*log\.csv' as CSV: .*line 3"),
    Case("not-gzip", plain_text_gz, r"cannot read .*log\.csv\.gz' as CSV"),
    Case("no-outcome-column", without_column("outcome"), r"'outcome' not found"),
    Case("missing-outcome", edited("outcome", 2, ""),
         r"column 'outcome': missing value .*" + LINES + "4"),
    Case("unknown-outcome", edited("outcome", 5, "draw?"),
         r"column 'outcome': unknown outcome .*" + LINES + "7"),
    Case("numeric-outcome-2", lambda tmp: write_csv(
        tmp / "log.csv", [r[:4] + (["2"] if i == 7 else ["1"]) for i, r in
                          enumerate(comparison_rows())]),
         r"column 'outcome': numeric outcome not in \[0, 1\] .*" + LINES + "9"),
    Case("same-model", edited("model_b", 4, "m1"),
         r"same model in 'model_a' and 'model_b'.*" + LINES + "6"),
    Case("empty-model", edited("model_b", 9, ""),
         r"column 'model_b': missing value .*" + LINES + "11"),
    Case("empty-prompt", edited("prompt_id", 11, ""),
         r"column 'prompt_id': missing value.*" + LINES + "13"),
    Case("negative-weight", with_weights([1, 1, -2]),
         r"column 'w': weight must be .*" + LINES + "4",
         ("--weight-col", "w"), lambda path: read_comparisons(path, weight_col="w")),
    Case("text-weight", with_weights([1, "lots"]), r"column 'w': weight must be .*" + LINES + "3",
         ("--weight-col", "w"), lambda path: read_comparisons(path, weight_col="w")),
    Case("zero-weights", with_weights([0]), r"column 'w': every row has weight 0",
         ("--weight-col", "w"), lambda path: read_comparisons(path, weight_col="w")),
    Case("missing-prompt-col", good, r"'question' not found", ("--prompt-col", "question"),
         lambda path: read_comparisons(path, prompt_col="question")),
    Case("missing-cluster-axis", good, r"'topic' not found", ("--cluster", "topic"),
         lambda path: read_comparisons(path, cluster_cols=("topic",))),
    Case("axis-twice", good, r"names an axis twice", ("--cluster", "prompt+prompt"),
         _analyze("prompt+prompt")),
    Case("explicit-single-judge", one_judge, r"cannot cluster by judge: every comparison has "
         r"the same judge \(only\)", ("--cluster", "judge"), _analyze("judge")),
    Case("explicit-missing-judge", without_column("judge_id"),
         r"cannot cluster by prompt\+judge: the log has no 'judge' axis",
         ("--cluster", "prompt+judge"), _analyze("prompt+judge")),
    Case("input-and-dataset", good, r"give either an INPUT file \('.*log\.csv'\) or --dataset "
         r"mmlu_pro, not both", ("--dataset", "mmlu_pro"), None),
    Case("json-missing-dir", good, r"--json '.*nodir/out\.json': the directory '.*nodir' does "
         r"not exist", ("--json", "{tmp}/nodir/out.json"), None),
    Case("csv-missing-dir", good, r"--csv '.*nodir/out\.csv': the directory",
         ("--csv", "{tmp}/nodir/out.csv"), None),
    Case("plot-missing-dir", good, r"--plot '.*nodir/p\.png': the directory",
         ("--plot", "{tmp}/nodir/p.png"), None),
    Case("json-is-directory", good, r"--json '.*' is a directory; give a file name",
         ("--json", "{tmp}"), None),
    Case("negative-seed", good, r"--seed must be a whole number >= 0, got -1",
         ("--seed", "-1", "--method", "bootstrap"), None),
    Case("alpha-out-of-range", good, r"--alpha must be in \(0, 1\), got 1\.5",
         ("--alpha", "1.5"), None),
    Case("too-few-bootstrap-reps", good, r"--bootstrap-reps must be at least 99, got 5",
         ("--method", "bootstrap", "--bootstrap-reps", "5"), None),
]


def assert_one_line_error(capsys, command: str, message: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"winrate {command}: error: "), err
    assert re.search(message, lines[0]), (message, lines[0])
    return lines[0]


@pytest.mark.parametrize("case", LEADERBOARD_CASES, ids=lambda c: c.id)
def test_leaderboard_cli_exits_2_with_one_line(case, tmp_path, capsys):
    path = case.write(tmp_path)
    args = [a.format(tmp=tmp_path) for a in case.args]
    assert main(["leaderboard", str(path), *args]) == 2
    assert_one_line_error(capsys, "leaderboard", case.message)


@pytest.mark.parametrize("case", [c for c in LEADERBOARD_CASES if c.api is not None],
                         ids=lambda c: c.id)
def test_leaderboard_api_raises_input_error(case, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        with pytest.raises(WinrateInputError, match=case.message):
            case.api(case.write(tmp_path))


def test_no_input_at_all(capsys):
    assert main(["leaderboard"]) == 2
    assert_one_line_error(capsys, "leaderboard", r"give an INPUT file or --dataset NAME")


def test_the_real_process_prints_no_traceback(tmp_path):
    """One case end to end in a new process (a latin-1 file gave exit 1 and a traceback);
    the in-process tests above cover the rest."""
    done = subprocess.run([sys.executable, "-m", "winrate.cli", "leaderboard",
                           str(latin1(tmp_path))], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- eval


def answer_rows(n_questions: int = 60, seed: int = 1) -> list[list]:
    """Three models answer every question once; 0/1 scores; 20 topics."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_questions):
        for model, p in (("A", 0.5), ("B", 0.6), ("C", 0.7)):
            rows.append([f"q{q}", model, int(rng.random() < p), f"t{q % 20}"])
    return rows


EVAL_HEADER = ["question", "model", "score", "topic"]


def answers(edit: Callable[[list[list]], list[list]] | None = None, name: str = "answers.csv",
            header=EVAL_HEADER) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        rows = answer_rows()
        return write_csv(tmp / name, edit(rows) if edit else rows, header)
    return write


def scores_times(factor: float, shift: float = 0.0):
    return lambda rows: [[q, m, s * factor + shift, t] for q, m, s, t in rows]


def cells(changes: dict[tuple[int, int], object]):
    def edit(rows):
        for (i, j), value in changes.items():
            rows[i][j] = value
        return rows
    return edit


@dataclass(frozen=True)
class EvalCase:
    """A malformed ``winrate eval`` input; ``model`` / ``clusters`` / ``scale`` as passed to
    both the CLI and ``question_scores``; ``api=False`` for command-line-only options."""

    id: str
    write: Callable[[Path], Path]
    message: str
    model: str | None = "model"
    clusters: tuple[str, ...] = ()
    scale: str = "auto"
    args: tuple[str, ...] = ()
    score: str = "score"
    api: bool = True


EVAL_CASES = [
    EvalCase("empty-file", raw("answers.csv", b""), r"answers\.csv' is empty \(0 bytes\)"),
    EvalCase("header-only", raw("answers.csv", b"question,model,score\n"),
             r"the score table has no rows"),
    EvalCase("scale-0-100", answers(scores_times(100)),
             r"score column 'score' has values outside \[0, 1\] in \d+ row\(s\) \[.*\]; values "
             r"range from 0 to 100 \(a 0-100 scale\?\): divide it by 100"),
    EvalCase("scale-plus-minus-1", answers(scores_times(2, -1)),
             r"outside \[0, 1\] .*range from -1 to 1 \(a -1\.\.\+1 scale\?\)"),
    EvalCase("stray-2-and-minus-1", answers(cells({(5, 2): 2, (77, 2): -1})),
             r"outside \[0, 1\] in 2 row\(s\) \[5, 77\]; values range from -1 to 2"),
    EvalCase("declared-binary-with-halves", answers(cells({(8, 2): 0.5})),
             r"values other than 0 and 1, declared binary in 1 row\(s\) \[8\]",
             scale="binary", args=("--scale", "binary")),
    EvalCase("multi-model-without-model-col", answers(), r"no model column given, but column "
             r"'model' looks like one \(3 values, several per question\): pass it as the model "
             r"column \(model_col='model'\)", model=None),
    EvalCase("unnamed-model-column", answers(header=["question", "who", "score", "topic"]),
             r"column 'who' looks like one", model=None),
    EvalCase("missing-score-column", answers(), r"'points' not found",
             score="points"),
    EvalCase("text-score", answers(cells({(4, 2): "right"})),
             r"score column 'score' has non-numeric values at rows \[4\]"),
    EvalCase("missing-score", answers(cells({(6, 2): ""})),
             r"score column 'score' has missing or infinite scores at rows \[6\]"),
    EvalCase("cluster-varies-within-question", answers(cells({(0, 3): "t7"})),
             r"cluster column 'topic' must be constant within a question.*'q0'",
             clusters=("topic",), args=("--cluster-col", "topic")),
    EvalCase("latin-1", answers(cells({(0, 1): "modèle"})), r"answers\.csv' is not UTF-8"),
    EvalCase("directory", directory, r"log\.csv' is a directory"),
    EvalCase("broken-jsonl", jsonl_with_broken_line, r"line 4 is not a valid JSON object"),
    EvalCase("json-missing-dir", answers(), r"--json '.*nodir/e\.json': the directory",
             args=("--json", "{tmp}/nodir/e.json"), api=False),
    EvalCase("negative-seed", answers(), r"--seed must be a whole number >= 0, got -1",
             args=("--seed", "-1"), api=False),
]


def _latin1_answers(case: EvalCase, tmp: Path) -> Path:
    path = case.write(tmp)
    if case.id == "latin-1":  # re-encode the written UTF-8 file as latin-1
        path.write_bytes(path.read_text(encoding="utf-8").encode("latin-1"))
    return path


def _eval_argv(case: EvalCase, path: Path, tmp: Path) -> list[str]:
    argv = ["eval", str(path), "--score-col", case.score, "--question-col", "question"]
    argv += ["--model-col", case.model] if case.model else []
    return argv + [a.format(tmp=tmp) for a in case.args]


@pytest.mark.parametrize("case", EVAL_CASES, ids=lambda c: c.id)
def test_eval_cli_exits_2_with_one_line(case, tmp_path, capsys):
    path = _latin1_answers(case, tmp_path)
    assert main(_eval_argv(case, path, tmp_path)) == 2
    assert_one_line_error(capsys, "eval", case.message)


@pytest.mark.parametrize("case", [c for c in EVAL_CASES if c.api], ids=lambda c: c.id)
def test_eval_api_raises_input_error(case, tmp_path):
    path = _latin1_answers(case, tmp_path)
    with pytest.raises(WinrateInputError, match=case.message):
        frame = read_table(path, text_cols=["question", "model"])
        question_scores(frame, case.score, "question", case.model, case.clusters,
                        scale=case.scale)


# --------------------------------------------------------------------------- accepted inputs


def _raw_records(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def brute_force_scores(records, weight_col: str | None = None) -> dict[str, float]:
    """S_a = mean over a's observed opponents of a's half-tie win rate against them, from the
    raw strings with plain loops (the leaderboard's definition, uniform weights)."""
    won, games = defaultdict(float), defaultdict(float)
    for r in records:
        s = {"a": 1.0, "b": 0.0, "tie": 0.5}[r["outcome"]]
        f = float(r[weight_col]) if weight_col else 1.0
        for me, other, mine in ((r["model_a"], r["model_b"], s), (r["model_b"], r["model_a"],
                                                                  1 - s)):
            won[me, other] += f * mine
            games[me, other] += f
    models = sorted({a for a, _ in games})
    return {m: float(np.mean([won[m, o] / games[m, o] for o in models if (m, o) in games]))
            for m in models}


def leading_zero_log(tmp: Path) -> Path:
    """Prompt ids '007'-style and '7'-style are different prompts; models 'NA' and 'None'."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        for prompt in (f"{i:03d}", f"{i}") if i else ("000", "0"):
            rows.append([prompt, "j", "NA", "None", str(rng.choice(["a", "b", "tie"]))])
            rows.append([prompt, "j", "None", "x", str(rng.choice(["a", "b"]))])
            rows.append([prompt, "j", "x", "NA", str(rng.choice(["a", "tie"]))])
    return write_csv(tmp / "ids.csv", rows)


def test_ids_as_written_and_na_models_through_cli_and_api(tmp_path, capsys):
    path = leading_zero_log(tmp_path)
    records = _raw_records(path)
    prompts = {r["prompt_id"] for r in records}
    assert len(prompts) == 120  # the oracle: 60 '007'-style ids and 60 '7'-style ids
    expected = brute_force_scores(records)
    log = read_comparisons(path)
    assert log.axes["prompt"].n_clusters == 120
    assert sorted(log.models) == ["NA", "None", "x"]
    out = tmp_path / "out.json"
    assert main(["leaderboard", str(path), "--cluster", "prompt", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["axes"]["prompt"]["n_clusters"] == 120
    got = dict(zip(doc["models"], doc["score"], strict=True))
    assert got == pytest.approx(expected, abs=1e-12)
    # JSON Lines: "007" is text, not the number 7
    jsonl = tmp_path / "ids.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert read_comparisons(jsonl).axes["prompt"].n_clusters == 120


def test_eval_question_ids_and_model_names_as_written(tmp_path, capsys):
    rows = []
    for i in range(40):
        for q in (f"{i:03d}", f"{i}") if i else ("000", "0"):
            rows += [[q, "NA", (i * 7 + len(q)) % 3 == 0, "t"], [q, "None", i % 2, "t"]]
    rows = [[q, m, int(s), t] for q, m, s, t in rows]
    path = write_csv(tmp_path / "answers.csv", rows, EVAL_HEADER)
    records = _raw_records(path)
    out = tmp_path / "e.json"
    assert main(["eval", str(path), "--score-col", "score", "--question-col", "question",
                 "--model-col", "model", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for model in ("NA", "None"):
        mine = [float(r["score"]) for r in records if r["model"] == model]
        assert doc["models"][model]["n"] == 80 == len({r["question"] for r in records})
        assert doc["models"][model]["mean"] == pytest.approx(sum(mine) / len(mine), abs=1e-15)
    assert doc["scale"] == "binary"


def test_fractional_weights_are_printed_as_they_are(tmp_path, capsys):
    """Fractional frequency weights are allowed (a row of weight 0.5 is half a comparison)
    and the header and table show their sums unrounded."""
    rows = comparison_rows()  # 120 rows
    weights = ["8.5"] + ["8.6"] * 119
    path = write_csv(tmp_path / "w.csv", [r + [w] for r, w in zip(rows, weights, strict=True)],
                     HEADER + ["w"])
    records = _raw_records(path)
    total = sum(float(r["w"]) for r in records)
    per_model = defaultdict(float)
    for r in records:
        per_model[r["model_a"]] += float(r["w"])
        per_model[r["model_b"]] += float(r["w"])
    out = tmp_path / "w.json"
    assert main(["leaderboard", str(path), "--weight-col", "w", "--cluster", "prompt",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert round(total, 6) == 1031.9
    assert printed.startswith("1,031.9 comparisons (a sum of fractional frequency weights), ")
    doc = json.loads(out.read_text())
    assert doc["n_comparisons"] == pytest.approx(total)
    for model, n in per_model.items():
        assert f" {n:,.10g}" in printed.split(model, 1)[1].splitlines()[0]
    assert dict(zip(doc["models"], doc["score"], strict=True)) == pytest.approx(
        brute_force_scores(records, "w"), abs=1e-12)


@pytest.mark.parametrize("drop, used, reason", [
    ("judge_id", ["prompt"], "the log has no 'judge' axis"),
    ("single-judge", ["prompt"], "every comparison has the same judge (only)"),
    ("both", ["none"], "the log has no 'prompt' axis"),
])
def test_default_clustering_uses_the_axes_that_exist(drop, used, reason, tmp_path, capsys):
    rows = comparison_rows()
    if drop == "single-judge":
        path = one_judge(tmp_path)
    elif drop == "judge_id":
        path = without_column("judge_id")(tmp_path)
    else:
        path = write_csv(tmp_path / "log.csv", [r[2:] for r in rows], HEADER[2:])
    out = tmp_path / "d.json"
    assert main(["leaderboard", str(path), "--json", str(out)]) == 0
    (line,) = coded_lines(capsys.readouterr().err, "default-clustering")
    assert line.startswith("note [default-clustering]: ") and reason in line
    doc = json.loads(out.read_text())
    assert doc["settings"]["cluster"] == used
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        expected = analyze(read_comparisons(path), cluster="+".join(used))
    np.testing.assert_allclose(doc["se"], expected.se, rtol=1e-12)


@needs_data
def test_default_clustering_on_real_datasets(capsys):
    assert main(["leaderboard", "--dataset", "chatbot_arena"]) == 0
    (line,) = coded_lines(capsys.readouterr().err, "default-clustering")
    assert "the log has no 'prompt' axis" in line
    # the README runs all of mmlu_pro with --cluster prompt; three models show the default
    from winrate.io.datasets import read_dataset

    log = read_dataset("mmlu_pro", models=["Llama-2-7b-hf", "Meta-Llama-3-8B", "Yi-6B"],
                       progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(log)
    assert result.clustering == ("prompt",)
    (note,) = result.notes.only("default-clustering")
    assert "every comparison has the same judge (exact_match)" in note


def test_warnings_go_to_stderr_and_jackknife_is_not_told_to_use_itself(tmp_path, capsys):
    path = good(tmp_path)  # 4 judges
    assert main(["leaderboard", str(path), "--cluster", "prompt+judge", "--method",
                 "sandwich"]) == 0
    sandwich = capsys.readouterr()
    assert "warning" not in sandwich.out
    (line,) = coded_lines(sandwich.err, "few-clusters")
    assert "axis 'judge' has only 4 clusters (< 30)" in line
    assert "method 'jackknife' does" in line  # the remedy for the sandwich
    assert main(["leaderboard", str(path), "--cluster", "prompt+judge", "--method",
                 "jackknife"]) == 0
    jackknife = capsys.readouterr()
    (line,) = coded_lines(jackknife.err, "few-clusters")
    assert "method 'jackknife'" not in jackknife.err and "use t(G - 1)" not in line
    assert "the jackknife with t(G - 1) critical values is the few-cluster method" in line


def test_degenerate_log_prints_dashes_and_explains_them(tmp_path, capsys):
    """60 of 60 wins: the sample variance is 0, so the Wilson floor gives the pair the SE
    whose interval reaches the Wilson lower bound; the axis diagnostics stay undefined."""
    rows = [[f"p{i}", "j", "x", "y", "a"] for i in range(60)]
    path = write_csv(tmp_path / "degenerate.csv", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy RuntimeWarning leaks
        assert main(["leaderboard", str(path), "--cluster", "prompt",
                     "--method", "jackknife"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "nan" not in out.lower()
    assert "median SE inflation -, pair-level ICC -" in out
    table = out.split("infl.", 1)[1].splitlines()[1:3]
    z = 1.959963984540054  # the Wilson bound of 60/60 at 95%: 60 / (60 + z^2)
    se = 100 * (1 - 60 / (60 + z**2)) / stats.norm.ppf(0.975)
    assert [line.split()[4] for line in table] == [f"{se:.2f}"] * 2, table
    assert "far Wilson bound" in coded_lines(captured.err, "small-sample-floor")[0]


def test_eval_warnings_once_on_stderr_with_their_codes(tmp_path, capsys):
    path = answers()(tmp_path)  # 3 models, 20 topics: the few-cluster warning for each
    out = tmp_path / "e.json"
    assert main(["eval", str(path), "--score-col", "score", "--question-col", "question",
                 "--model-col", "model", "--cluster-col", "topic", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.out.lower()
    lines = captured.err.strip().splitlines()
    assert coded_lines(captured.err, "few-clusters") == lines and len(lines) == 1
    assert "only 20 clusters in 'topic' (all 3 models)" in lines[0]
    doc = json.loads(out.read_text())
    (note,) = doc["notes"]
    assert (note["code"], note["axis"], note["models"]) == ("few-clusters", "topic",
                                                            ["A", "B", "C"])
    assert doc["warnings"] == [note["text"]] == [lines[0].removeprefix("warning [few-clusters]: ")]


def test_eval_scale_other_reports_on_the_stated_scale(tmp_path, capsys):
    path = answers(scores_times(100))(tmp_path)
    records = _raw_records(path)
    out = tmp_path / "e.json"
    assert main(["eval", str(path), "--score-col", "score", "--question-col", "question",
                 "--model-col", "model", "--scale", "other", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["scale"] == "other"
    for model in ("A", "B", "C"):
        values = [float(r["score"]) for r in records if r["model"] == model]
        mean = sum(values) / len(values)
        assert doc["models"][model]["mean"] == pytest.approx(mean, abs=1e-12)
        assert f"| {model} | {mean:.3f} (" in printed
    body = printed[printed.index("|---"):]  # the table's rows, below its "95% CI" header
    assert "%" not in body


def test_eval_single_model_with_resampled_answers_is_still_accepted(tmp_path):
    """Several rows per question without a model-like column: K answers of one model."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"question": np.repeat([f"q{i}" for i in range(50)], 3),
                          "attempt": np.tile([0, 1, 2], 50),
                          "score": rng.integers(0, 2, 150)})
    qs = question_scores(frame, "score", "question")
    assert qs.models == ["model"] and (qs.answers["model"] == 3).all()
    np.testing.assert_allclose(qs.scores["model"].to_numpy(),
                               frame.groupby("question", sort=True)["score"].mean().to_numpy())


def test_kish_check_compares_like_with_like():
    """Baseline design: model 0 meets models 1-5 once per prompt. The Kish prediction and
    the measured inflation are summarised over the same models."""
    rng = np.random.default_rng(0)
    prompts, k = 300, 6
    p = np.repeat(np.arange(prompts), k - 1)
    b = np.tile(np.arange(1, k), prompts)
    shared = rng.normal(0, 1.5, prompts)[p]
    s = (rng.random(p.size) < 1 / (1 + np.exp(-shared))).astype(float)
    log = ComparisonLog.from_arrays(np.zeros(p.size, int), b, s, prompt=p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        doc = to_dict(explore(log, ("prompt",)))["axes"]["prompt"]
    predicted = np.array([np.nan if v is None else v for v in doc["predicted"]])
    measured = np.array([np.nan if v is None else v for v in doc["measured"]])
    both = np.isfinite(predicted) & np.isfinite(measured)
    assert doc["check_models"] == both.sum() == k
    assert doc["predicted_median"] == pytest.approx(np.median(predicted[both]))
    assert doc["measured_median"] == pytest.approx(np.median(measured[both]))
    # models 1-5 have one comparison per prompt (m = 1): Kish predicts exactly no inflation
    np.testing.assert_array_equal(predicted[1:], 1.0)
    assert abs(doc["predicted_median"] - doc["measured_median"]) < 0.01


def test_eval_api_merges_per_model_warnings():
    frame = pd.read_csv(io.StringIO(
        "\n".join(",".join(map(str, r)) for r in [EVAL_HEADER, *answer_rows()])))
    qs = question_scores(frame, "score", "question", "model", ["topic"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate(qs)
    assert notes_of(caught) == report.notes and report.notes.codes == ["few-clusters"]
    assert report.notes[0].models == ("A", "B", "C") and report.notes[0].axis == "topic"
    assert "(all 3 models)" in report.notes[0]


def test_gzipped_latin1_names_the_line(tmp_path):
    path = tmp_path / "log.csv.gz"
    text = ",".join(HEADER) + "\np1,j,x,y,a\np2,j,caf\xe9,y,b\n"
    path.write_bytes(gzip.compress(text.encode("latin-1")))
    with pytest.raises(WinrateInputError, match=r"log\.csv\.gz' is not UTF-8 text \(line 3"):
        read_comparisons(path)
