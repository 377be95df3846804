"""docs/formats.md, "From your harness": every command prints what the page shows, and the
Python example prints its commented result, on the inputs of
tests/reader_fixtures.write_doc_inputs (files in each upstream's layout). The page's
blocks are ``console`` fences, so the general page test (whose inputs are those of
``winrate example``) leaves them to this one."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.reader_fixtures import write_doc_inputs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from doc_examples import mismatch, output  # noqa: E402

PAGE = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
SECTION = re.search(r"^## From your harness\n(.*?)(?=^## )", PAGE, re.S | re.M).group(1)


def console_commands() -> list[tuple[str, list[str]]]:
    """Each ``$ command`` of the section's console blocks with the lines shown under it."""
    commands = []
    for body in re.findall(r"^```console\n(.*?)^```$", SECTION, re.S | re.M):
        for line in body.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            else:
                commands[-1][1].append(line)
    return commands


COMMANDS = console_commands()
#: Inspect's own retry setup warns of a deprecated tenacity parameter at every run
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("harness_docs")
    write_doc_inputs(folder)
    return folder


def test_the_section_has_one_command_per_harness():
    lines = [line for line, _ in COMMANDS]
    for fmt in ("lm_eval", "inspect", "eee", "helm", "lighteval", "arena", "mt_bench"):
        assert any(f"--format {fmt}" in line for line in lines), fmt
    assert any("--by " in line for line in lines) and any("--eee " in line for line in lines)


@pytest.mark.parametrize("line, shown", COMMANDS, ids=[c[0][:60] for c in COMMANDS])
def test_command_prints_what_the_page_shows(line, shown, inputs, monkeypatch):
    if ("--format inspect" in line or ".eval" in line) and find_spec("inspect_ai") is None:
        pytest.skip("the Inspect logs are written by inspect_ai: pip install 'winrate[inspect]'")
    monkeypatch.chdir(inputs)
    problem = mismatch(shown, output(line))
    assert problem is None, f"$ {line}: {problem}"


def test_python_example_prints_its_comment(inputs, monkeypatch):
    code = re.search(r"^```python\n(.*?)^```$", SECTION, re.S | re.M).group(1)
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    monkeypatch.chdir(inputs)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/formats.md", "exec"), {})
    assert printed.getvalue().splitlines() == expected
