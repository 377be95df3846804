"""Regenerate the command-output examples in README.md from real runs.

Each example is a ``winrate`` command line; its printed report (stdout, first lines) is
written into README.md between the markers ``<!-- example:NAME -->`` and
``<!-- /example:NAME -->``, so every real-data number the README shows comes from a
command, and a rerun leaves the file unchanged when nothing changed.

Usage: ``python scripts/readme_examples.py [--check]`` (needs the data: ``WINRATE_DATA``).
``--check`` exits 1 if README.md is out of date instead of rewriting it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import warnings
from pathlib import Path

from winrate.cli import main as winrate_main

README = Path(__file__).resolve().parents[1] / "README.md"

#: name -> (command line after ``winrate``, number of report lines shown)
EXAMPLES = {
    "arena-bt": (["leaderboard", "--dataset", "chatbot_arena", "--model", "bt",
                  "--cluster", "none", "--ranks", "--seed", "0"], 16),
    "qlora-bt": (["leaderboard", "--dataset", "qlora", "--model", "bt", "--cluster", "prompt",
                  "--ranks", "--seed", "0"], 16),
    "alpaca-baseline": (["leaderboard", "--dataset", "alpaca_eval",
                         "--baseline", "gpt4_1106_preview", "--cluster", "prompt"], 12),
}


def run(argv: list[str], lines: int) -> str:
    """The first ``lines`` lines a ``winrate`` command prints on stdout."""
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        code = winrate_main(argv)
    if code != 0:
        raise SystemExit(f"winrate {' '.join(argv)} exited with {code}")
    shown = out.getvalue().splitlines()[:lines]
    return "\n".join(["$ winrate " + " ".join(argv), *shown, "..."])


def render(text: str) -> str:
    """README text with every example block replaced by a fresh run."""
    for name, (argv, lines) in EXAMPLES.items():
        pattern = re.compile(rf"(<!-- example:{name} -->\n```\n).*?(```\n<!-- /example:"
                             rf"{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no block for example {name!r}")
        body = run(argv, lines)
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md is stale")
    args = parser.parse_args()
    old = README.read_text(encoding="utf-8")
    new = render(old)
    if args.check:
        if new != old:
            print("README.md examples are out of date: run scripts/readme_examples.py",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
