"""The paper build (scripts/paper/build.py, ``make paper``): the manuscript quotes no
number by hand, references every generated table and figure, and a rebuild of the fast
parts rewrites the committed files byte for byte."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from pathlib import Path

import numba
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "paper"
BUILD = ROOT / "scripts" / "paper"
REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL).is_dir(),
                                reason="WINRATE_DATA is not set: real-data parts skipped")


@pytest.fixture(scope="module")
def build():
    sys.path.insert(0, str(BUILD))
    sys.path.insert(1, str(ROOT / "scripts"))
    threads = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))  # as the build does
    module = importlib.import_module("build")
    yield module
    numba.set_num_threads(threads)
    sys.path.remove(str(BUILD))
    sys.path.remove(str(ROOT / "scripts"))


# ------------------------------------------------------------------ hand-typed numbers

_IGNORED = [
    re.compile(r"<!--.*?-->", re.S),  # comments
    re.compile(r"^---\n.*?\n---\n", re.S),  # front matter (title)
    re.compile(r"\{\{[^}]*\}\}"),  # placeholders: generated numbers
    re.compile(r"\$[^$]*\$"),  # formulas
    re.compile(r"`[^`]*`"),  # code and file names
    re.compile(r"(?:[A-Z][\w.&-]*|al\.)\s(?:19|20)\d\d\b"),  # citation years: Kish 1965
]
STANDALONE_NUMBER = re.compile(r"(?<![\w.-])\d+(?:[.,]\d+)*%?(?![\w-])")


def hand_typed_numbers(text: str) -> list[str]:
    """Numbers in prose: outside placeholders, formulas, code, comments and citations;
    digits inside names (GPT-4, CR1, Vicuna-80) are not numbers."""
    for pattern in _IGNORED:
        text = pattern.sub(" ", text)
    return STANDALONE_NUMBER.findall(text)


def test_number_detector_catches_typed_results():
    assert hand_typed_numbers("the SE inflates 3.79 times, about 40% coverage") == [
        "3.79", "40%"]
    assert hand_typed_numbers("on 12,032 questions") == ["12,032"]
    assert hand_typed_numbers("{{mmlu_infl}} times with $z = 1.96$, `tables/x.md`, GPT-4, "
                              "CR1 (Kish 1965) <!-- 42 -->") == []


def test_template_quotes_no_number_by_hand():
    template = (PAPER / "paper.template.md").read_text()
    assert hand_typed_numbers(template) == []


# ------------------------------------------------------------------ references


def test_every_generated_table_and_figure_is_referenced_by_the_manuscript():
    manuscript = (PAPER / "paper.md").read_text()
    generated = [p for folder in ("tables", "figures", "results", "coverage")
                 for p in sorted((PAPER / folder).glob("*")) if p.is_file()]
    assert generated
    missing = [str(p.relative_to(PAPER)) for p in generated
               if str(p.relative_to(PAPER)) not in manuscript]
    assert missing == []


def test_manuscript_is_the_rendered_template(build):
    """Every placeholder of the template is filled in paper.md (or its block is marked
    PENDING), so no stale hand edit can hide there."""
    manuscript = (PAPER / "paper.md").read_text()
    assert "{{" not in manuscript
    numbers = __import__("json").loads((PAPER / "numbers.json").read_text())
    template = (PAPER / "paper.template.md").read_text()
    keys = set(re.findall(r"\{\{\s*([a-z_]+)\s*\}\}", template))
    pending = "PENDING (not reproducible yet)" in manuscript
    assert keys <= set(numbers) or pending


def test_render_refuses_unknown_numbers_and_marks_pending_blocks(build):
    from manuscript import TemplateError, render

    with pytest.raises(TemplateError, match="number nope"):
        render("x {{nope}} y\n", {}, {}, {}, {})
    with pytest.raises(TemplateError, match="malformed placeholder"):
        render("x {{Nope-1}} y\n", {}, {}, {}, {})
    text = "a {{k}}\n<!-- needs: bt -->\n{{missing}}\n<!-- end needs -->\nb\n"
    out = render(text, {"k": "1.50"}, {}, {}, {"bt": "needs the estimator"})
    assert out.startswith("a 1.50\n> **PENDING") and "needs the estimator" in out
    assert render(text, {"k": "1", "missing": "2"}, {}, {}, {}) == "a 1\n2\nb\n"


# ------------------------------------------------------------------ byte-identical rebuild


def _copy_inputs(tmp_path: Path) -> Path:
    out = tmp_path / "paper"
    shutil.copytree(PAPER / "coverage", out / "coverage")
    shutil.copy(PAPER / "paper.template.md", out / "paper.template.md")
    return out


def _assert_same_bytes(paper) -> None:
    assert paper.written
    for path in paper.written:
        committed = PAPER / path.relative_to(paper.root)
        assert committed.exists(), f"{committed} is generated but not committed"
        assert path.read_bytes() == committed.read_bytes(), f"{committed} differs"


def test_fast_steps_rebuild_the_committed_files(build, tmp_path):
    from common import Paper

    paper = Paper(_copy_inputs(tmp_path))
    assert build.run_steps(paper, [s.name for s in build.STEPS if s.fast]) == {}
    _assert_same_bytes(paper)


@needs_real
def test_small_real_datasets_rebuild_the_committed_results(build, tmp_path):
    from common import Paper
    from real_data import DATASETS, dataset_results

    small = [d for d in DATASETS if d.name in ("pandalm", "llmfao", "chatbot_arena")]
    paper = Paper(_copy_inputs(tmp_path))
    assert dataset_results(paper, small) == []
    _assert_same_bytes(paper)


def test_readme_quotes_the_generated_numbers():
    """Every number the README quotes in prose (``<!-- n:KEY -->V<!-- /n -->``) is the
    generated ``paper/numbers.json[KEY]`` (scripts/readme_examples.py fills them)."""
    readme = (PAPER.parent / "README.md").read_text()
    numbers = __import__("json").loads((PAPER / "numbers.json").read_text())
    quoted = re.findall(r"<!-- n:([a-z0-9_]+) -->(.*?)<!-- /n -->", readme)
    assert len(quoted) > 20
    assert [(key, numbers.get(key)) for key, _ in quoted] == quoted
