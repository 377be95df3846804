"""Every command block of the README runs as written and prints what the README shows.

A block is a fenced block whose first line is ``$ COMMAND`` (scripts/readme_examples.py,
:func:`command_blocks`). Each runs in a fresh folder holding the example inputs of
``winrate example``; its output must match the README line for line, numbers included,
where ``...`` stands for lines the README leaves out. Blocks that read a bundled dataset
(``--dataset``) need the real data and are skipped without ``WINRATE_DATA``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from readme_examples import command_blocks, mismatch, output  # noqa: E402

from winrate.examples import write_examples  # noqa: E402

BLOCKS = command_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_its_command_blocks():
    lines = [c.line for block in BLOCKS for c in block]
    assert len(BLOCKS) >= 10 and lines[0] == "winrate example"
    assert any(line.startswith("winrate eval scores.csv") for line in lines)
    assert any("--pilot pilot.csv" in line for line in lines)
    assert all(c.shown for block in BLOCKS for c in block), "a command without its output"


@pytest.mark.parametrize("block", BLOCKS, ids=[b[0].line[:60] for b in BLOCKS])
def test_readme_block_prints_what_the_readme_shows(block, tmp_path, monkeypatch):
    if any("--dataset" in c.line for c in block) and not os.environ.get("WINRATE_DATA"):
        pytest.skip("needs the real data (WINRATE_DATA)")
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    for command in block:
        problem = mismatch(command.shown, output(command.line))
        assert problem is None, f"$ {command.line}: {problem}"


def test_mismatch_reads_left_out_lines():
    printed = ["head", "1", "2", "3", "tail"]
    assert mismatch(["head", "...", "tail"], printed) is None
    assert mismatch(["head", "1", "..."], printed) is None
    assert mismatch(["head", "...", "2", "...", "tail"], printed) is None
    assert mismatch(printed, printed) is None
    assert mismatch(["head", "1"], printed) is not None  # the rest is not shown as left out
    assert mismatch(["1", "..."], printed) is not None  # must start at the start
    assert mismatch(["head", "...", "3", "2", "...", "tail"], printed) is not None
    assert mismatch(["head", "1", "2", "3", "tail 2"], printed) is not None  # a number differs
