"""Regenerate the command outputs, tables and quoted real-data numbers of the documentation.

The documentation is README.md and every page under ``docs/`` (:func:`documents`).

* Every generated block sits between ``<!-- example:NAME -->`` and ``<!-- /example:NAME -->``
  in exactly one page. A command example (:data:`EXAMPLES`) is a ``winrate`` command line;
  its printed report (stdout) fills the fenced block, long per-model tables trimmed to
  their first and last rows. A table (:data:`TABLES`) is the Markdown a library function
  or a ``make paper`` file gives.
* Every number quoted in the prose sits between ``<!-- n:KEY -->`` and ``<!-- /n -->`` and
  is replaced by ``paper/numbers.json[KEY]``, the numbers ``make paper`` generates.

So every real-data number the documentation shows comes from a command or a generated
file, and a rerun leaves every page unchanged when nothing changed. Every command example
runs in a temporary folder holding the example inputs of ``winrate example`` (simulated,
fixed seeds), so the pages' commands run as written there.

:func:`command_blocks` reads the command blocks back out of a page (every fenced block
whose first line is ``$ COMMAND``) and :func:`mismatch` compares what a command prints with
what the page shows (``...`` stands for lines left out); ``tests/test_doc_examples.py``
runs every block of every page that way.

Usage: ``python scripts/doc_examples.py [--check]`` (needs the data: ``WINRATE_DATA``;
run ``make paper`` first for the numbers). ``--check`` exits 1 if a page is stale.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from winrate.cli import main as winrate_main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAPER = ROOT / "paper"
NUMBERS = PAPER / "numbers.json"


def documents() -> list[Path]:
    """README.md, then every ``docs/*.md`` page in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def run(argv: list[str]) -> list[str]:
    """The lines a ``winrate`` command prints on stdout (warnings go to stderr)."""
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        code = winrate_main(argv)
    if code != 0:
        raise SystemExit(f"winrate {' '.join(argv)} exited with {code}")
    return out.getvalue().splitlines()


def trim_table(lines: list[str], head: int = 6, tail: int = 3) -> list[str]:
    """Keep the first ``head`` and last ``tail`` rows of the EDA's per-model table."""
    start = next(i for i, line in enumerate(lines) if line.startswith("model "))
    stop = next(i for i in range(start, len(lines)) if " SEs in " in lines[i])
    rows = lines[start + 1:stop]
    if len(rows) <= head + tail:
        return lines
    return lines[:start + 1] + rows[:head] + ["..."] + rows[-tail:] + lines[stop:]


def output(line: str) -> list[str]:
    """What one command line prints on stdout: ``winrate ...`` in this process, anything
    else (``head``) through the system's shell."""
    argv = shlex.split(line, comments=True)
    if argv[0] == "winrate":
        return run(argv[1:])
    return subprocess.run(line, shell=True, check=True, capture_output=True,
                          text=True).stdout.splitlines()


def command(line: str, lines: int | None = None, trim: bool = False) -> str:
    """``$ line`` and its output: all of it, its first ``lines``, or the EDA table trimmed."""
    shown = output(line)
    shown = trim_table(shown) if trim else shown
    if lines is not None:
        shown = [*shown[:lines], "..."]
    return "\n".join(["$ " + line, *shown])


def in_example_folder(make: Callable[[], str]) -> str:
    """``make()`` run in a temporary folder that holds the example inputs."""
    from winrate.examples import write_examples

    previous = Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        write_examples(folder)
        os.chdir(folder)
        try:
            return make()
        finally:
            os.chdir(previous)


def session(*lines: str) -> Callable[[], str]:
    """An example of several commands, run one after the other in the example folder."""
    return lambda: in_example_folder(lambda: "\n\n".join(map(command, lines)))


EVAL = ("winrate eval scores.csv --score-col correct --question-col question_id --model-col "
        "model --cluster-col src --cluster-col category --paired model-a model-b --json out.json")
POWER_PILOT = ("winrate power --n 1000 --pilot pilot.csv --score-col s --question-col q "
               "--model-col m --models A B --cluster-col topic")

EXAMPLES = {
    "worked": session("winrate example",
                      "head -5 example.csv          # simulated: 5 models, 120 prompts, 30 judges",
                      "winrate leaderboard example.csv --cluster prompt+judge "
                      "--json example.json"),
    "demo-mmlu": lambda: command("winrate leaderboard --dataset mmlu_pro --cluster prompt",
                                 lines=9),
    "eda-mmlu": lambda: command("winrate eda --dataset mmlu_pro", trim=True),
    "eda-llmfao": lambda: command("winrate eda --dataset llmfao", trim=True),
    "eda-pandalm": lambda: command("winrate eda --dataset pandalm", trim=True),
    "arena-bt": lambda: command("winrate leaderboard --dataset chatbot_arena --model bt "
                                "--cluster none --ranks --seed 0", lines=16),
    "qlora-bt": lambda: command("winrate leaderboard --dataset qlora --model bt --cluster prompt "
                                "--ranks --seed 0"),
    "alpaca-baseline": lambda: command("winrate leaderboard --dataset alpaca_eval --baseline "
                                       "gpt4_1106_preview --cluster prompt", lines=12),
    "check": session("winrate check example.csv --reps 200"),
    "pandalm-jackknife": session("winrate leaderboard --dataset pandalm --method jackknife "
                                 "--simultaneous --ranks --plot pandalm.png"),
    "scores-leaderboard": session("winrate leaderboard scores.csv --format scores --score-col "
                                  "correct --question-col question_id --model-col model "
                                  "--cluster prompt"),
    "eval": session(EVAL, "winrate power --delta 0.03 --omega2 0.1111",
                    "winrate power --n 198 --omega2 0.1111 --sigma2-a 0.1667 --sigma2-b 0.1667 "
                    "--k-a 10 --k-b 10", POWER_PILOT),
    "compare": session("winrate compare scores.csv --score-col correct --cluster src"),
    "judges-example": session("winrate judges example.csv"),
    "diff-example": session("head -700 example.csv > old.csv && wc -l < old.csv",
                            "winrate diff old.csv example.csv"),
    "judges-qlora": lambda: command("winrate judges --dataset qlora"),
    "judges-prd": lambda: command("winrate judges --dataset prd"),
    "plan-example": session("winrate plan example.csv --top 3"),
}


@cache
def mmlu_pro_tables() -> tuple[str, str]:
    """The two Markdown tables of the MMLU-Pro eval (scores, neighbour differences)."""
    from winrate.evals.mmlu import mmlu_pro_clustered

    return tuple(table.strip() for table in mmlu_pro_clustered().tables())


def table_under(path: Path, heading: str) -> str:
    """The first Markdown table after the line ``heading`` of a generated file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    after = lines[lines.index(heading) + 1:]
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    stop = next((i for i in range(start, len(after)) if not after[i].startswith("|")),
                len(after))
    return "\n".join(after[start:stop])


def note_codes() -> str:
    """Every note code and what it flags (:data:`winrate.notes.CODES`)."""
    from winrate.notes import CODES

    return "\n".join(["| code | what it flags |", "|---|---|",
                      *(f"| `{code}` | {meaning} |" for code, meaning in CODES.items())])


TABLES = {
    "note-codes": note_codes,
    "mmlu-pro-scores": lambda: mmlu_pro_tables()[0],
    "mmlu-pro-pairs": lambda: mmlu_pro_tables()[1],
    "exact-coverage-95": lambda: table_under(PAPER / "tables" / "interval_coverage_exact.md",
                                             "## Nominal 95%"),
}


def generated_blocks() -> dict[str, Callable[[], str]]:
    """Every generated block by name: command examples fenced, tables between blank lines
    (so that the closing marker cannot read as a table row)."""
    fenced = {name: (lambda make=make: "```\n" + make() + "\n```")
              for name, make in EXAMPLES.items()}
    spaced = {name: (lambda make=make: "\n" + make() + "\n") for name, make in TABLES.items()}
    return {**fenced, **spaced}


@dataclass(frozen=True)
class Command:
    """One ``$ line`` of a page's command block and the output shown under it."""

    line: str
    shown: tuple[str, ...]


def command_blocks(text: str) -> list[list[Command]]:
    """A page's command blocks: fenced blocks whose first line starts with ``$ ``; a
    line ending in a backslash continues on the next one."""
    blocks = []
    for body in re.findall(r"^```\n(\$ .*?)^```$", text, re.S | re.M):
        commands: list[tuple[str, list[str]]] = []
        lines = body.splitlines()
        while lines:
            line = lines.pop(0)
            if not line.startswith("$ "):
                commands[-1][1].append(line)
                continue
            while line.endswith("\\"):
                line = line[:-1] + " " + lines.pop(0).strip()
            commands.append((line[2:].strip(), []))
        blocks.append([Command(line, tuple("\n".join(shown).rstrip().splitlines()))
                       for line, shown in commands])
    return blocks


def mismatch(shown, actual: list[str]) -> str | None:
    """Why the ``actual`` output does not show as ``shown`` (None if it does). ``...`` in
    ``shown`` stands for any number of left-out lines; the runs between them must appear in
    ``actual`` in order, line for line (trailing white space aside), the first at its start
    and, unless ``shown`` ends in ``...``, the last at its end."""
    actual = [line.rstrip() for line in actual]
    runs: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(line.rstrip())
    at = 0
    for i, part in enumerate(runs):
        if not part:
            continue
        end = len(actual) - len(part)
        starts = [s for s in range(at, end + 1)
                  if (i > 0 or s == 0) and (i < len(runs) - 1 or s == end)]
        found = next((s for s in starts if actual[s:s + len(part)] == part), None)
        if found is None:
            return (f"the page shows {part} but the command prints "
                    f"{actual[at:at + len(part) + 2]}")
        at = found + len(part)
    return None


def block_pattern(name: str) -> re.Pattern:
    """The generated block ``name``: its opening marker line, body and closing marker."""
    return re.compile(rf"(^<!-- example:{name} -->\n).*?(^<!-- /example:{name} -->$)",
                      re.S | re.M)


def render_blocks(texts: dict[Path, str]) -> dict[Path, str]:
    """The pages with every generated block replaced by a fresh run. Each block must sit in
    exactly one page, and every marker in a page must name a known block."""
    blocks = generated_blocks()
    for path, text in texts.items():
        unknown = set(re.findall(r"^<!-- example:([\w-]+) -->$", text, re.M)) - set(blocks)
        if unknown:
            raise SystemExit(f"{path.name} has blocks no generator makes: {sorted(unknown)}")
    texts = dict(texts)
    for name, make in blocks.items():
        pattern = block_pattern(name)
        holders = [path for path, text in texts.items() if pattern.search(text)]
        if len(holders) != 1:
            raise SystemExit(f"block {name!r} must be in exactly one page, not in "
                             f"{[path.name for path in holders]}")
        body = make()
        texts[holders[0]] = pattern.sub(lambda m, body=body: m.group(1) + body + "\n"
                                        + m.group(2), texts[holders[0]])
    return texts


def render_numbers(text: str, numbers: dict[str, str]) -> str:
    """Every ``<!-- n:KEY -->...<!-- /n -->`` filled from ``numbers``."""
    def fill(match):
        key = match.group(1)
        if key not in numbers:
            raise SystemExit(f"a page quotes {key!r}, which paper/numbers.json lacks")
        return f"<!-- n:{key} -->{numbers[key]}<!-- /n -->"

    return re.sub(r"<!-- n:([a-z0-9_]+) -->.*?<!-- /n -->", fill, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a page is stale")
    args = parser.parse_args()
    old = {path: path.read_text(encoding="utf-8") for path in documents()}
    numbers = json.loads(NUMBERS.read_text(encoding="utf-8"))
    new = {path: render_numbers(text, numbers) for path, text in render_blocks(old).items()}
    stale = [path for path in old if new[path] != old[path]]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run scripts/doc_examples.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(new[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
