"""Every command block of the README and of ``docs/`` runs as written and prints what the
page shows, and every generated table is what its source gives today.

A block is a fenced block whose first line is ``$ COMMAND`` (scripts/doc_examples.py,
:func:`command_blocks`). Each runs in a fresh folder holding the example inputs of
``winrate example``; its output must match the page line for line, numbers included,
where ``...`` stands for lines the page leaves out. Blocks that read a bundled dataset
(``--dataset``) need the real data and are skipped without ``WINRATE_DATA``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from doc_examples import (  # noqa: E402
    EXAMPLES,
    TABLES,
    block_pattern,
    command_blocks,
    documents,
    generated_blocks,
    mismatch,
    output,
)

from winrate.examples import write_examples  # noqa: E402

PAGES = {path: path.read_text(encoding="utf-8") for path in documents()}
BLOCKS = [(path.relative_to(ROOT).as_posix(), block) for path, text in PAGES.items()
          for block in command_blocks(text)]
HAS_DATA = bool(os.environ.get("WINRATE_DATA")) and Path(os.environ["WINRATE_DATA"]).is_dir()


def test_the_pages_have_their_command_blocks():
    lines = [c.line for _, block in BLOCKS for c in block]
    assert len(BLOCKS) >= 10 and lines[0] == "winrate example"  # the README's worked example
    assert any(line.startswith("winrate eval scores.csv") for line in lines)
    assert any("--pilot pilot.csv" in line for line in lines)
    assert all(c.shown for _, block in BLOCKS for c in block), "a command without its output"


def test_every_generated_block_sits_in_exactly_one_page():
    for name in generated_blocks():
        holders = [path.name for path, text in PAGES.items() if block_pattern(name).search(text)]
        assert len(holders) == 1, (name, holders)
    assert set(EXAMPLES).isdisjoint(TABLES)


@pytest.mark.parametrize("page, block", BLOCKS, ids=[f"{page}: {b[0].line[:50]}"
                                                     for page, b in BLOCKS])
def test_page_block_prints_what_the_page_shows(page, block, tmp_path, monkeypatch):
    if any("--dataset" in c.line for c in block) and not HAS_DATA:
        pytest.skip("needs the real data (WINRATE_DATA)")
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    for command in block:
        problem = mismatch(command.shown, output(command.line))
        assert problem is None, f"{page}: $ {command.line}: {problem}"


def shown_table(name: str) -> str:
    """The table a page shows between the markers of block ``name``."""
    page = next(text for text in PAGES.values() if block_pattern(name).search(text))
    body = re.search(rf"<!-- example:{name} -->\n(.*?)<!-- /example:{name} -->", page, re.S)
    return body.group(1).strip()


def test_the_exact_coverage_table_is_the_paper_file():
    """The page's table equals the 95% section of the committed paper table, whose numbers
    tests/test_evals_intervals.py checks against quadrature."""
    shown = shown_table("exact-coverage-95")
    assert shown == TABLES["exact-coverage-95"]()
    assert shown.splitlines()[2].startswith("| wald | 0.495743")


@pytest.mark.skipif(not HAS_DATA, reason="needs the real data (WINRATE_DATA)")
@pytest.mark.parametrize("name", ["mmlu-pro-scores", "mmlu-pro-pairs"])
def test_the_mmlu_pro_eval_tables_are_what_the_library_prints(name):
    assert shown_table(name) == TABLES[name]()


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
