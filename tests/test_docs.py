"""The README is a front page and the documentation holds together.

* The README stays within 15,000 characters.
* Every relative link of the README and of ``docs/`` names an existing file, and a link to
  a heading (``page.md#anchor``) names one of that page's headings, spelled as GitHub
  spells anchors.
* Every page under ``docs/`` is reachable from ``docs/index.md``.
* Every command of the README's "your input -> the command" table runs as written on
  inputs of that kind, and its Python row is the analysis the worked example prints.
* A test run without the data directory ends by saying how many tests it skipped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import winrate
from tests.conftest import missing_data_note
from winrate.examples import write_examples

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_LIMIT = 15_000


def prose(text: str) -> str:
    """Markdown without its fenced blocks and inline code (their brackets are no links)."""
    text = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+).+?\1", "", text)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without code marks or link targets,
    lower-cased, every character but letters, digits, ``_``, ``-`` and spaces dropped,
    and each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.replace("`", ""))
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets ``-1``, ``-2``, ...."""
    text = re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M):
        anchor = github_anchor(heading)
        found.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def relative_links(page: Path) -> list[str]:
    """The targets of a page's Markdown links that are neither web addresses nor mail."""
    targets = re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_github_anchor_spells_anchors_as_github_does():
    """Expected anchors as GitHub renders these headings (punctuation dropped, each space a
    hyphen, so ``how --method`` keeps three hyphens)."""
    assert github_anchor("Quick start") == "quick-start"
    assert github_anchor("Valid by default: how `--method auto` chooses") == (
        "valid-by-default-how---method-auto-chooses")
    assert github_anchor("Reproduced numbers (all in `tests/test_evals_*.py`)") == (
        "reproduced-numbers-all-in-teststest_evals_py")
    assert github_anchor("MMLU-Pro: 29 models, naive vs clustered SEs") == (
        "mmlu-pro-29-models-naive-vs-clustered-ses")
    assert github_anchor("Your input -> the command") == "your-input---the-command"


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text) <= README_LIMIT, f"README.md has {len(text):,} characters"
    for section in ("Quick start", "Your input -> the command", "Reading the output"):
        assert github_anchor(section) in anchors(README)
    assert "make demo" in text and "make test" in text and "WINRATE_DATA" in text
    assert "docs/index.md" in relative_links(README)


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Why each broken relative link of ``page`` is broken: it names no file, leaves
    ``root``, or names a heading its page lacks."""
    problems = []
    for link in relative_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            problems.append(f"{link}: no such file")
        elif root not in target.parents and target != root:
            problems.append(f"{link}: outside the repository")
        elif anchor and (target.suffix != ".md" or anchor not in anchors(target)):
            problems.append(f"{link}: no such heading")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    assert relative_links(page), f"{page.name} links nowhere"
    assert broken_links(page) == []


def test_broken_links_are_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Two words: `code`\n\n```\n# not a heading\n```\n")
    (tmp_path / "b.md").write_text(
        "[ok](a.md) [ok](a.md#two-words-code) [ok](#see) `[code](nowhere.md)`\n\n"
        "## See\n\n[gone](c.md) [bad anchor](a.md#not-a-heading) [fenced](a.md#not-a-heading-1)"
        " [web](https://example.org/x.md)\n")
    assert anchors(tmp_path / "a.md") == {"title", "two-words-code"}
    assert broken_links(tmp_path / "b.md", tmp_path) == [
        "c.md: no such file", "a.md#not-a-heading: no such heading",
        "a.md#not-a-heading-1: no such heading"]
    assert broken_links(tmp_path / "b.md", tmp_path / "sub") != []  # outside that root


def test_every_docs_page_is_reachable_from_the_index():
    reached, todo = set(), [DOCS / "index.md"]
    while todo:
        page = todo.pop()
        if page in reached or page.parent != DOCS or page.suffix != ".md":
            continue
        reached.add(page)
        todo += [(page.parent / link.partition("#")[0]).resolve()
                 for link in relative_links(page) if link.partition("#")[0]]
    assert set(DOCS.glob("*.md")) - reached == set()
    assert len(reached) >= 8


# --------------------------------------------------------- the input -> command table


def input_table() -> dict[str, str]:
    """The README's table: input (first cell) -> the command (the code of the second)."""
    section = README.read_text(encoding="utf-8").split("## Your input -> the command")[1]
    section = section.split("\n## ")[0]
    rows = re.findall(r"^\| (.+?) \| `([^`]+)` \|$", section, re.M)
    return dict(rows)


def write_inputs(folder: Path) -> None:
    """The inputs the table's commands name: the example files, the example log as
    FastChat battle records, and AlpacaEval annotations of three models vs a baseline."""
    write_examples(folder)
    log = pd.read_csv(folder / "example.csv", dtype=str)
    winner = log["outcome"].map({"a": "model_a", "b": "model_b", "tie": "tie"})
    battles = pd.DataFrame({"model_a": log["model_a"], "model_b": log["model_b"],
                            "winner": winner, "judge": "judge-" + log["judge_id"],
                            "question_id": "q" + log["prompt_id"]})
    (folder / "battles.json").write_text(battles.to_json(orient="records"))
    rng = np.random.default_rng(0)
    annotations = [{"instruction": f"instruction {i}", "output_1": "baseline answer",
                    "generator_1": "gpt4_1106_preview", "output_2": f"answer of {model}",
                    "generator_2": model, "annotator": "weighted_alpaca_eval_gpt4_turbo",
                    "preference": float(rng.uniform(1, 2))}
                   for i in range(40) for model in ("model-a", "model-b", "model-c")]
    (folder / "annotations.json").write_text(json.dumps(annotations))


def test_the_input_table_covers_the_inputs_users_bring():
    commands = input_table()
    assert len(commands) >= 5
    kinds = " ".join(commands).lower()
    for kind in ("comparison log", "arena battles", "alpacaeval", "per-question scores",
                 "python"):
        assert kind in kinds, kind


def test_every_command_of_the_input_table_runs(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    from doc_examples import output

    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    expected_models = {"example.csv": [f"model-0{i}" for i in range(5)],
                       "battles.json": [f"model-0{i}" for i in range(5)],
                       "annotations.json": ["model-a", "model-b", "model-c"],
                       "scores.csv": ["model-a", "model-b", "model-c"]}
    ran = 0
    for command in input_table().values():
        if not command.startswith("winrate "):
            continue
        printed = "\n".join(output(command))  # raises if the command exits non-zero
        source = command.split()[2]
        assert all(model in printed for model in expected_models[source]), command
        ran += 1
    assert ran >= 4


def test_the_python_row_is_the_worked_example(tmp_path, monkeypatch):
    """The table's Python expression gives the scores and SEs the README's worked example
    prints for the same log (that block is checked against the CLI by
    tests/test_doc_examples.py)."""
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    expression = input_table()["Python"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = eval(expression, {"winrate": winrate})  # noqa: S307 - the README's own text
    table = result.to_frame()
    worked = README.read_text().split("<!-- example:worked -->")[1].split("<!-- /example")[0]
    shown = re.findall(r"^\s+\d+\s+(model-\d+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)", worked, re.M)
    assert len(shown) == len(table) == 5
    for model, score, se in shown:
        assert [f"{100 * table.loc[model, c]:.2f}" for c in ("score", "se")] == [score, se]


# ------------------------------------------------------------ runs without the data


def skipped(reason: str) -> SimpleNamespace:
    return SimpleNamespace(longrepr=("tests/test_x.py", 1, f"Skipped: {reason}"))


def test_the_missing_data_note_counts_only_data_skips(tmp_path):
    reports = [skipped("WINRATE_DATA is not set"), skipped("needs the real data (WINRATE_DATA)"),
               skipped("needs 2 numba threads")]
    note = missing_data_note(reports, None)
    assert note.startswith("2 real-data tests skipped: WINRATE_DATA is not set")
    assert "not a directory" in missing_data_note(reports, str(tmp_path / "absent"))
    assert missing_data_note(reports, str(tmp_path)) is None  # the data is there
    assert missing_data_note(reports[2:], None) is None  # nothing skipped for the data


def test_a_run_without_the_data_says_how_many_tests_it_skipped():
    """pytest's own count of skipped tests, in two modules that only skip for the data,
    run as ``make test`` runs them (two xdist workers), is the count the note gives."""
    env = {k: v for k, v in os.environ.items() if k != "WINRATE_DATA"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "tests/test_evals_real.py", "tests/test_eda_real_numbers.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    pytest_count = int(re.search(r"(\d+) skipped in ", run.stdout).group(1))
    note = re.search(r"^(\d+) real-data tests? skipped: WINRATE_DATA is not set", run.stdout,
                     re.M)
    assert note and int(note.group(1)) == pytest_count > 0, run.stdout[-2000:]
