"""Regenerate the command outputs and the quoted real-data numbers in README.md.

* Every example is a ``winrate`` command line; its printed report (stdout) replaces the
  block between ``<!-- example:NAME -->`` and ``<!-- /example:NAME -->``. Long per-model
  tables are trimmed to their first and last rows.
* Every number quoted in the prose sits between ``<!-- n:KEY -->`` and ``<!-- /n -->`` and
  is replaced by ``paper/numbers.json[KEY]``, the numbers ``make paper`` generates.

So every real-data number the README shows comes from a command or a generated file, and a
rerun leaves README.md unchanged when nothing changed. The worked example writes a
simulated log (fixed seed) to a temporary folder and runs there.

Usage: ``python scripts/readme_examples.py [--check]`` (needs the data: ``WINRATE_DATA``;
run ``make paper`` first for the numbers). ``--check`` exits 1 if README.md is stale.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

from winrate.cli import main as winrate_main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NUMBERS = ROOT / "paper" / "numbers.json"
WORKED_SEED = 7


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


def command(argv: list[str], lines: int | None = None, trim: bool = False) -> str:
    shown = run(argv)
    shown = trim_table(shown) if trim else shown
    if lines is not None:
        shown = [*shown[:lines], "..."]
    return "\n".join(["$ winrate " + " ".join(argv), *shown])


def worked_example() -> str:
    """``head -5 example.csv`` and the leaderboard of a simulated crossed log."""
    from winrate.simulate import SimulationDesign, simulate_comparisons

    design = SimulationDesign(n_models=5, n_prompts=120, n_judges=30)
    frame = simulate_comparisons(design, seed=WORKED_SEED).frame()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "example.csv"
        frame.to_csv(path, index=False)
        head = path.read_text().splitlines()[:5]
        previous = Path.cwd()
        os.chdir(folder)
        try:
            board = command(["leaderboard", "example.csv", "--cluster", "prompt+judge",
                             "--json", "example.json"])
        finally:
            os.chdir(previous)
    return "\n".join([f"$ head -5 example.csv          # simulated: {design.n_models} models, "
                      f"{design.n_prompts} prompts, {design.n_judges} judges", *head, "",
                      board])


EXAMPLES = {
    "worked": worked_example,
    "demo-mmlu": lambda: command(["leaderboard", "--dataset", "mmlu_pro", "--cluster",
                                  "prompt"], lines=9),
    "eda-mmlu": lambda: command(["eda", "--dataset", "mmlu_pro"], trim=True),
    "eda-llmfao": lambda: command(["eda", "--dataset", "llmfao"], trim=True),
    "eda-pandalm": lambda: command(["eda", "--dataset", "pandalm"], trim=True),
    "arena-bt": lambda: command(["leaderboard", "--dataset", "chatbot_arena", "--model", "bt",
                                 "--cluster", "none", "--ranks", "--seed", "0"], lines=16),
    "qlora-bt": lambda: command(["leaderboard", "--dataset", "qlora", "--model", "bt",
                                 "--cluster", "prompt", "--ranks", "--seed", "0"]),
    "alpaca-baseline": lambda: command(["leaderboard", "--dataset", "alpaca_eval",
                                        "--baseline", "gpt4_1106_preview", "--cluster",
                                        "prompt"], lines=12),
}


def render_examples(text: str) -> str:
    """README text with every example block replaced by a fresh run."""
    for name, make in EXAMPLES.items():
        pattern = re.compile(rf"(<!-- example:{name} -->\n```\n).*?(```\n<!-- /example:"
                             rf"{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no block for example {name!r}")
        body = make()
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def render_numbers(text: str, numbers: dict[str, str]) -> str:
    """Every ``<!-- n:KEY -->...<!-- /n -->`` filled from ``numbers``."""
    def fill(match):
        key = match.group(1)
        if key not in numbers:
            raise SystemExit(f"README.md quotes {key!r}, which paper/numbers.json lacks")
        return f"<!-- n:{key} -->{numbers[key]}<!-- /n -->"

    return re.sub(r"<!-- n:([a-z0-9_]+) -->.*?<!-- /n -->", fill, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md is stale")
    args = parser.parse_args()
    old = README.read_text(encoding="utf-8")
    numbers = json.loads(NUMBERS.read_text(encoding="utf-8"))
    new = render_numbers(render_examples(old), numbers)
    if args.check:
        if new != old:
            print("README.md is out of date: run scripts/readme_examples.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
