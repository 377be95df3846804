"""--table-format markdown|latex of leaderboard, eda and eval read back to the numbers of the
JSON and the text output; `winrate eda FILE`; progress bars on stderr."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from tests.note_codes import warns_code
from tests.table_parsing import latex_cells, markdown_rows, numbers
from winrate import progress
from winrate.cli import main
from winrate.errors import WinrateWarning
from winrate.examples import write_examples
from winrate.settings import Joint

#: Model names with every character that is special in LaTeX or Markdown tables.
SPECIAL = {"model-00": "a_b & c", "model-01": "x|y", "model-02": r"back\slash {b}",
           "model-03": "50% $ #1", "model-04": "t~i^lde"}
LEADERBOARD_HEADER = ["#", "model", "score", "SE naive", "SE", "95% CI", "infl.", "G*", "n",
                      "95% simult.", "rank set"]


@pytest.fixture(scope="module")
def special_log(simulated_log_file, tmp_path_factory):
    frame = pd.read_csv(simulated_log_file)
    frame[["model_a", "model_b"]] = frame[["model_a", "model_b"]].replace(SPECIAL)
    path = tmp_path_factory.mktemp("special") / "special.csv"
    frame.to_csv(path, index=False)
    return path


def _stdout(capsys, *argv) -> str:
    assert main(list(map(str, argv))) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def leaderboard_outputs(special_log, tmp_path_factory):
    """JSON document and stdout of each table format of one leaderboard run."""
    folder = tmp_path_factory.mktemp("lb")
    argv = ["leaderboard", str(special_log), "--cluster", "prompt", "--simultaneous", "--ranks",
            "--json", str(folder / "lb.json")]
    printed = {}
    for fmt in ("text", "markdown", "latex"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main([*argv, "--table-format", fmt]) == 0
        printed[fmt] = out.getvalue()
    return json.loads((folder / "lb.json").read_text()), printed


def test_leaderboard_markdown_reads_back_to_the_json_numbers(leaderboard_outputs):
    doc, printed = leaderboard_outputs
    rows = markdown_rows(printed["markdown"])
    assert rows[0] == LEADERBOARD_HEADER
    order = np.argsort(-np.array(doc["score"]), kind="stable")
    assert [r[1] for r in rows[1:]] == [doc["models"][i] for i in order]  # names intact
    for rank, (row, i) in enumerate(zip(rows[1:], order, strict=True), start=1):
        ci, sim = numbers(row[5]), numbers(row[9])
        shown = [float(row[0]), float(row[2]), float(row[3]), float(row[4]), *ci,
                 float(row[6]), float(row[8]), *sim]
        expected = [rank, 100 * doc["score"][i], 100 * doc["se_naive"][i], 100 * doc["se"][i],
                    100 * doc["ci_low"][i], 100 * doc["ci_high"][i], doc["inflation"][i],
                    doc["n"][i], 100 * doc["sim_low"][i], 100 * doc["sim_high"][i]]
        np.testing.assert_allclose(shown, expected, atol=0.005 + 1e-9)  # printed to 2 places
        assert float(row[7]) == pytest.approx(doc["effective_clusters"][i], abs=0.05 + 1e-9)
        assert row[10] == f"{doc['rank_low'][i]}-{doc['rank_high'][i]}"


def test_leaderboard_markdown_latex_and_text_show_the_same_cells(leaderboard_outputs):
    doc, printed = leaderboard_outputs
    md = markdown_rows(printed["markdown"])
    assert latex_cells(printed["latex"]) == md  # escaped names decode to the same cells
    text_rows = printed["text"].splitlines()[-len(doc["models"]):]
    for line, row in zip(text_rows, md[1:], strict=True):
        assert row[1] in line
        assert numbers(line.replace(row[1], "", 1)) == numbers(" ".join(row[:1] + row[2:]))
    summary = printed["text"].splitlines()[0]
    assert f"% {summary}" in printed["latex"] and f"\n{summary}\n" in printed["markdown"]


def test_latex_escapes_the_names_exactly(leaderboard_outputs):
    latex = leaderboard_outputs[1]["latex"]
    for escaped in (r"a\_b \& c", r"back\textbackslash{}slash \{b\}", r"50\% \$ \#1",
                    r"t\textasciitilde{}i\textasciicircum{}lde", r"\# & model", r"95\% CI"):
        assert escaped in latex
    assert r"x\|y" in leaderboard_outputs[1]["markdown"]


def test_eda_markdown_reads_back_to_the_json(special_log, tmp_path, capsys):
    out = tmp_path / "eda.json"
    rows = markdown_rows(_stdout(capsys, "eda", special_log, "--table-format", "markdown",
                                 "--json", out))
    doc = json.loads(out.read_text())
    names, axes = list(doc["clusterings"]), list(doc["axes"])
    assert rows[0] == ["model", "n", "prompts", "score", "SE naive",
                       *(f"SE {c}" for c in names), *(f"x {c}" for c in names),
                       *(f"G* {a}" for a in axes), "eff_n"]
    order = np.argsort(-np.array(doc["score"]), kind="stable")
    assert [r[0] for r in rows[1:]] == [doc["models"][i] for i in order]
    main_clustering = doc["clusterings"][doc["summary"]["main"]]
    for row, i in zip(rows[1:], order, strict=True):
        shown = [float(c.replace(",", "")) for c in row[1:]]
        expected = [doc["n"][i], doc["prompts"][i], 100 * doc["score"][i],
                    100 * doc["se_naive"][i],
                    *(100 * doc["clusterings"][c]["se"][i] for c in names),
                    *(doc["clusterings"][c]["inflation"][i] for c in names),
                    *(doc["axes"][a]["effective_clusters"][i] for a in axes),
                    main_clustering["effective_n"][i]]
        np.testing.assert_allclose(shown, expected, atol=0.5)  # counts print as integers
        two_decimals = slice(2, len(shown) - 1 - len(axes))  # G* prints one decimal
        np.testing.assert_allclose(shown[two_decimals], expected[two_decimals],
                                   atol=0.005 + 1e-9)
        np.testing.assert_allclose(shown[-1 - len(axes):-1], expected[-1 - len(axes):-1],
                                   atol=0.05 + 1e-9)


def test_eda_of_a_file_equals_the_leaderboard_of_that_file(simulated_log_file, tmp_path,
                                                           capsys):
    """`winrate eda FILE`: each clustering's SEs are the leaderboard's for that clustering
    with the same method, the CR1 sandwich (two commands, each reading the file on its
    own; the leaderboard's auto may choose another method by the effective clusters)."""
    eda_json = tmp_path / "eda.json"
    text = _stdout(capsys, "eda", simulated_log_file, "--json", eda_json)
    assert text.startswith("Comparison log: ")
    eda = json.loads(eda_json.read_text())
    assert eda["dataset"] is None and list(eda["clusterings"]) == ["prompt", "judge",
                                                                   "prompt+judge"]
    for clustering, found in eda["clusterings"].items():
        board_json = tmp_path / f"{clustering}.json"
        _stdout(capsys, "leaderboard", simulated_log_file, "--cluster", clustering,
                "--method", "sandwich", "--correction", "cr1", "--json", board_json)
        board = json.loads(board_json.read_text())
        assert board["models"] == eda["models"]
        np.testing.assert_allclose(found["se"], board["se"], rtol=1e-12)


@pytest.mark.skipif(not os.environ.get("WINRATE_DATA"), reason="needs WINRATE_DATA")
def test_eda_of_a_dataset_written_to_a_file_equals_eda_of_the_dataset(tmp_path, capsys):
    from winrate.io.datasets import load

    path = tmp_path / "pandalm.csv"
    with warns_code("verdicts-dropped"):
        frame = load("pandalm", download=False, progress=False)
    frame.to_csv(path, index=False)
    docs = []
    for source in (["--dataset", "pandalm"], [path]):
        out = tmp_path / "eda.json"
        _stdout(capsys, "eda", *source, "--cluster", "prompt", "judge", "prompt+judge",
                "--json", out)
        docs.append(json.loads(out.read_text()))
    by_dataset, by_file = docs
    assert by_dataset["models"] == by_file["models"]
    for name, clustering in by_dataset["clusterings"].items():
        np.testing.assert_allclose(by_file["clusterings"][name]["se"], clustering["se"],
                                   rtol=1e-10)


def test_eda_models_is_for_datasets_only(simulated_log_file, capsys):
    assert main(["eda", str(simulated_log_file), "--models", "model-00", "model-01"]) == 2
    assert "--models selects models of a --dataset" in capsys.readouterr().err


def _eval_rows(capsys, folder, fmt):
    write_examples(folder)
    text = _stdout(capsys, "eval", folder / "scores.csv", "--score-col", "correct",
                   "--question-col", "question_id", "--model-col", "model", "--cluster-col",
                   "src", "--json", folder / "eval.json", "--table-format", fmt)
    return text, json.loads((folder / "eval.json").read_text())


def test_eval_tables_are_sorted_by_score_and_read_back_to_the_json(tmp_path, capsys):
    markdown, doc = _eval_rows(capsys, tmp_path, "markdown")
    rows = markdown_rows(markdown)
    assert rows[0][:2] == ["Model", "Score (SE)"]
    means = {name: record["mean"] for name, record in doc["models"].items()}
    assert [r[0] for r in rows[1:]] == sorted(means, key=lambda m: -means[m])
    for row in rows[1:]:
        mean, se = numbers(row[1])
        record = doc["models"][row[0]]
        np.testing.assert_allclose([mean, se], [100 * record["mean"], 100 * record["se"]],
                                   atol=0.05 + 1e-9)
    latex, _ = _eval_rows(capsys, tmp_path, "latex")
    assert latex_cells(latex) == rows
    text, _ = _eval_rows(capsys, tmp_path, "text")
    lines = text.split("\n\n")[1].splitlines()  # after the opening sentence
    assert re.split(r"\s{2,}", lines[0]) == rows[0]
    assert [numbers(line) for line in lines[1:]] == [numbers(" ".join(r)) for r in rows[1:]]


def test_eval_format_flag_still_works_as_the_old_name(tmp_path, capsys):
    write_examples(tmp_path)
    out = _stdout(capsys, "eval", tmp_path / "scores.csv", "--score-col", "correct",
                  "--question-col", "question_id", "--model-col", "model", "--format", "csv")
    assert out.startswith("model,mean,")


# --------------------------------------------------------------------------- progress


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)


def test_progress_flag_shows_bars_on_stderr_and_no_progress_hides_them(
        simulated_log_file, capsys, no_delay):
    argv = ["leaderboard", str(simulated_log_file), "--cluster", "prompt", "--method",
            "bootstrap", "--bootstrap-reps", "99", "--ranks"]
    assert main([*argv, "--progress"]) == 0
    shown = capsys.readouterr()
    for bar in (f"reading {simulated_log_file}: 00:", "cluster bootstrap: ", "rank sets: 00:"):
        assert bar in shown.err
    assert "00:" not in shown.out  # bars never mix into the report
    assert main([*argv, "--no-progress"]) == 0
    hidden = capsys.readouterr()
    assert "00:" not in hidden.err and "bootstrap:" not in hidden.err
    assert hidden.out == shown.out


def test_progress_follows_the_terminal_by_default(monkeypatch, no_delay):
    class Terminal:
        def __init__(self, tty):
            self.tty, self.text = tty, []

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text.append(text)

        def flush(self):
            pass

    for tty in (True, False):
        stream = Terminal(tty)
        monkeypatch.setattr("sys.stderr", stream)
        assert progress.wanted() is tty
        with progress.stage("rank sets"):
            pass
        assert ("rank sets" in "".join(stream.text)) is tty
        with progress.preference(False):
            assert progress.wanted() is False and progress.wanted(True) is True


def test_bars_wait_before_they_appear(monkeypatch):
    """With the default delay a quick step prints nothing even when progress is asked."""
    shown = []
    monkeypatch.setattr("sys.stderr", type("S", (), {"write": lambda self, t: shown.append(t),
                                                      "flush": lambda self: None,
                                                      "isatty": lambda self: True})())
    with progress.stage("quick step", progress=True):
        pass
    for _ in progress.bar(range(3), desc="quick loop", progress=True):
        pass
    assert "quick" not in "".join(shown)


# --------------------------------------------------------------------------- winrate example


def test_example_files_are_deterministic_and_shaped_as_the_readme_says(tmp_path, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    out = _stdout(capsys, "example", first)
    _stdout(capsys, "example", second)
    for name in ("example.csv", "scores.csv", "pilot.csv"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
        assert f"wrote {first / name}: " in out
    comparisons = pd.read_csv(first / "example.csv")
    assert list(comparisons.columns) == ["prompt_id", "judge_id", "model_a", "model_b",
                                         "outcome"]
    assert (comparisons.nunique()[["prompt_id", "judge_id"]] == [120, 30]).all()
    scores = pd.read_csv(first / "scores.csv")
    assert scores.groupby("model").size().to_dict() == {f"model-{m}": 400 for m in "abc"}
    assert set(scores["correct"]) == {0, 1}
    assert scores.groupby("src")["category"].nunique().max() == 1  # subjects nest in categories
    assert scores.groupby("question_id")[["src", "category"]].nunique().max().max() == 1
    pilot = pd.read_csv(first / "pilot.csv")
    assert (pilot.groupby(["m", "q"]).size() == 4).all() and set(pilot["m"]) == {"A", "B"}
    assert pilot.groupby("q")["topic"].nunique().max() == 1


def test_example_does_not_overwrite_other_files_without_force(tmp_path, capsys):
    (tmp_path / "scores.csv").write_text("mine\n")
    assert main(["example", str(tmp_path)]) == 2
    assert "scores.csv already exist(s) with other content" in capsys.readouterr().err
    assert (tmp_path / "scores.csv").read_text() == "mine\n"
    assert not (tmp_path / "example.csv").exists()  # nothing written
    assert main(["example", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "scores.csv").read_text().startswith("question_id,")


def test_pairwise_table_is_the_json_pairs_oriented_higher_first(simulated_log_file, tmp_path,
                                                                capsys):
    out = tmp_path / "lb.json"
    text = _stdout(capsys, "leaderboard", simulated_log_file, "--pairwise", "--table-format",
                   "markdown", "--json", out)
    doc = json.loads(out.read_text())
    rows = markdown_rows(text.split("Pairwise differences")[1])
    assert rows[0] == ["higher", "lower", "difference", "SE", "95% simult.", "p", "p Holm",
                       "p max-T"]
    score = dict(zip(doc["models"], doc["score"], strict=True))
    pairs = {(p["model_i"], p["model_j"]): p for p in doc["pairwise"]}
    assert len(rows) - 1 == len(pairs) == 10
    for higher, lower, diff, se, simult, p, *_ in rows[1:]:
        assert score[higher] >= score[lower]
        sign = 1 if (higher, lower) in pairs else -1
        pair = pairs[(higher, lower)] if sign == 1 else pairs[(lower, higher)]
        assert float(diff) == pytest.approx(100 * sign * pair["estimate"], abs=0.005)
        assert float(se) == pytest.approx(100 * pair["se"], abs=0.005)
        low, high = (float(v) for v in simult.strip("[]").split(","))
        bounds = sorted(100 * sign * pair[k] for k in ("sim_low", "sim_high"))
        np.testing.assert_allclose([low, high], bounds, atol=0.005)
        assert p == "<0.0001" or float(p) == pytest.approx(pair["p"], abs=5e-5)


def test_pairwise_table_of_many_models_shows_neighbours_in_rank(monkeypatch):
    from winrate.io.simulate import SimulationDesign, simulate_comparisons
    from winrate.report import leaderboard as report

    monkeypatch.setattr(report, "PAIRWISE_SHOWN", 5)
    result = quiet_analyze(simulate_comparisons(SimulationDesign(n_models=5, n_prompts=60),
                                                seed=2).log, joint=Joint(pairwise=True))
    text = report.format_pairwise(result)
    assert "4 of 10 pairs shown (neighbours in rank); all pairs with --json" in text
    order = list(result.to_frame().index)
    shown = [line.split()[:2] for line in text.splitlines()[3:]]
    assert shown == [[order[r], order[r + 1]] for r in range(4)]


def quiet_analyze(log, **kwargs):
    from winrate.analysis import analyze

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)
