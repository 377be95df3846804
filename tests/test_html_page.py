"""The web page (winrate.report.html_page) read back without a browser: escaping, the policy,
determinism, the downloads, the entry points. tests/test_html_browser.py opens it in
Chromium.

Oracles: Python's own HTML parser (what is an element and what is text), hashlib for the
policy's hashes, scipy's normal quantile for the naive interval, pandas' CSV reader and
winrate.report.leaderboard.leaderboard_table (the printed table's code) for the CSV download."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from tests.html_docs import HOSTILE, document, hostile_analysis
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.report import html_page

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "html"


class Elements(HTMLParser):
    """Every start tag with its attributes, the text of every script and style element,
    and the text of every table cell of class ``model``."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self.styles, self.model_cells = [], [], [], []
        self._open = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in ("script", "style"):
            self._open = (tag, [])
        elif tag == "td" and "model" in (attrs.get("class") or "").split():
            self._open = ("model", [])

    def handle_data(self, data):
        if self._open:
            self._open[1].append(data)

    def handle_endtag(self, tag):
        if self._open and tag in ("script", "style", "td"):
            kind, parts = self._open
            {"script": self.scripts, "style": self.styles, "model": self.model_cells}[
                kind].append("".join(parts))
            self._open = None


@pytest.fixture(scope="module")
def hostile():
    analysis = hostile_analysis()
    return analysis, document(analysis)


@pytest.fixture(scope="module")
def hostile_page(hostile):
    return html_page.render(hostile[1], "9.9.9")


def test_script_json_cannot_close_its_element_and_parses_back(hostile):
    doc = hostile[1]
    embedded = html_page.script_json(doc)
    assert json.loads(embedded) == doc
    for forbidden in ("<", ">", "&", "\u2028", "\u2029"):
        assert forbidden not in embedded


def test_hostile_names_are_text_not_elements(hostile_page):
    parsed = Elements(hostile_page)
    tags = {tag for tag, _ in parsed.tags}
    assert "img" not in tags and "svg" in tags  # svg: the charts; no onload anywhere
    assert not [attrs for _, attrs in parsed.tags if any(a.startswith("on") for a in attrs)]
    assert len(parsed.scripts) == 2  # the data and the page's own script
    assert sorted(parsed.model_cells) == sorted([*HOSTILE, "model-05", "model-06", "model-07"])


def test_the_policy_allows_only_the_pages_own_script_and_style(hostile_page):
    parsed = Elements(hostile_page)
    policy = next(attrs["content"] for tag, attrs in parsed.tags
                  if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'" and directives["img-src"] == "data:"

    def sha(source: str) -> str:
        return f"'sha256-{base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()}'"

    assert directives["script-src"] == sha(parsed.scripts[1])
    assert directives["style-src"] == sha(parsed.styles[0])
    links = [v for _, attrs in parsed.tags for k, v in attrs.items() if k in ("src", "href")]
    assert links and all(v.startswith(("#", "data:")) for v in links)  # no load, no link out


def test_same_document_gives_the_same_bytes(hostile):
    doc = hostile[1]
    shuffled = json.loads(json.dumps(doc))  # a copy, as read back from a JSON file
    assert html_page.render(doc, "1.0") == html_page.render(shuffled, "1.0")
    assert html_page.render(doc, "1.0") != html_page.render(doc, "1.1")


def test_naive_interval_against_scipy(hostile):
    analysis, doc = hostile
    z = stats.norm.ppf(1 - analysis.alpha / 2)
    low, high = html_page.naive_bounds(doc)
    expected_low = np.clip(analysis.scores - z * analysis.se_naive, 0, 1)
    expected_high = np.clip(analysis.scores + z * analysis.se_naive, 0, 1)
    np.testing.assert_allclose(low, expected_low, rtol=1e-12)
    np.testing.assert_allclose(high, expected_high, rtol=1e-12)


def test_csv_download_is_the_printed_tables_content(hostile, hostile_page):
    analysis = hostile[0]
    href = html.unescape(re.search(r'id="download-csv" download="[^"]*" href="([^"]*)"',
                                   hostile_page).group(1))
    assert href.startswith("data:text/csv;charset=utf-8,")
    from io import StringIO

    shown = pd.read_csv(StringIO(unquote(href.split(",", 1)[1])), keep_default_na=False,
                        na_values=[""])
    from winrate.report.leaderboard import leaderboard_table

    table = leaderboard_table(analysis)
    assert shown["model"].tolist() == table["model"].tolist()
    for column in ("rank", "score", "se_naive", "se", "ci_low", "ci_high", "sim_low",
                   "sim_high", "rank_low", "rank_high", "inflation", "effective_clusters",
                   "n"):
        # the page's 12 significant digits (html_page.PAGE_DIGITS)
        np.testing.assert_allclose(shown[column], table[column], rtol=5e-12, err_msg=column)


@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e6))
def test_nice_ticks_are_round_even_and_inside(low, span):
    high = low + span
    ticks = html_page.nice_ticks(low, high)
    assert 2 <= len(ticks) <= 11
    assert all(low - 1e-9 * abs(low) - 1e-9 <= t <= high + 1e-9 * abs(high) + 1e-9
               for t in ticks)
    steps = np.diff(ticks)
    rounding = 1e-6 + 1e-12 * max(abs(low), abs(high)) / steps[0]  # of the differences
    assert np.allclose(steps, steps[0], rtol=rounding)
    mantissa = steps[0] / 10 ** math.floor(math.log10(steps[0]))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 10 * rounding


def test_notes_show_their_codes_and_warnings_without(hostile):
    doc = dict(hostile[1], warnings=["plain <b>warning</b>"])
    doc.pop("notes", None)  # a document written before notes had codes
    page = html_page.render(doc, "1")
    assert "plain &lt;b&gt;warning&lt;/b&gt;" in page and "data-code=" not in page
    coded = dict(doc, notes=[{"code": "few-clusters", "severity": "warning", "axis": "judge",
                              "models": ["<x>"], "text": "only 4 judges"},
                             {"code": "default-clustering", "severity": "note", "axis": None,
                              "models": [], "text": "clustered by prompt"}])
    page = html_page.render(coded, "1")
    assert 'data-code="few-clusters"' in page and 'data-code="default-clustering"' in page
    assert "models: &lt;x&gt;" in page and "plain &lt;b&gt;" not in page  # notes replace warnings


def test_unknown_schema_is_an_input_error():
    with pytest.raises(WinrateInputError, match="schema"):
        html_page.render({"schema": "winrate.other/9"}, "1")


def test_to_html_writes_the_page_and_the_notebook_frames_it(hostile, tmp_path):
    analysis = hostile[0]
    page = analysis.to_html(tmp_path / "board.html", title="A <board>")
    assert (tmp_path / "board.html").read_text(encoding="utf-8") == page
    assert "<title>A &lt;board&gt;</title>" in page
    frame = analysis._repr_html_()
    srcdoc = re.fullmatch(r'<iframe srcdoc="([^"]*)" sandbox="allow-scripts allow-downloads".*',
                          frame, re.S)
    assert srcdoc and html.unescape(srcdoc.group(1)) == analysis.to_html()


def test_eda_page_shows_every_model_and_why_a_clustering_is_not_identified(tmp_path):
    from winrate.eda import explore, to_dict
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    log = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=40, n_judges=1),
                               seed=2).log
    report = explore(log, ("prompt", "judge"))
    page = report.to_html(tmp_path / "eda.html")
    cells = Elements(page).model_cells
    assert sorted(cells) == sorted(str(m) for m in report.models)
    reason = to_dict(report)["clusterings"]["judge"]["reason"]
    assert reason and html.escape(reason) in page
    assert report._repr_html_().startswith("<iframe srcdoc=")


def test_cli_writes_the_page_and_checks_the_path_first(simulated_log_file, tmp_path, capsys):
    out = tmp_path / "board.html"
    assert main(["leaderboard", str(simulated_log_file), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<title>log.csv leaderboard</title>" in page
    assert len(Elements(page).model_cells) == 5
    assert main(["eda", str(simulated_log_file), "--html", str(tmp_path / "eda.html")]) == 0
    assert "<title>log.csv exploratory report</title>" in (tmp_path / "eda.html").read_text()
    capsys.readouterr()
    for command in ("leaderboard", "eda"):
        missing = tmp_path / "no" / "such.html"
        assert main([command, str(simulated_log_file), "--html", str(missing)]) == 2
        error = capsys.readouterr().err
        assert "--html" in error and "does not exist" in error and "\n" == error[-1]


# --------------------------------------------------------------------------- committed pages

sys.path.insert(0, str(ROOT / "scripts"))
from html_examples import EXAMPLES  # noqa: E402
from html_examples import document as example_document  # noqa: E402
from html_examples import render as render_example  # noqa: E402

#: A Python literal that leaked into a note's text: an empty or quoted-string list, dict or
#: tuple, or None.
PYTHON_LITERAL = re.compile(r"\[\]|\{\}|\(\)|\['|\bNone\b")


def embedded(page: str) -> dict:
    return json.loads(Elements(page).scripts[0])


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_committed_page_is_what_the_renderer_makes_of_its_document(name):
    page = (DOCS / f"{name}.html").read_text(encoding="utf-8")
    version = re.search(r'<meta name="generator" content="winrate ([^"]+)">', page).group(1)
    doc = embedded(page)
    assert render_example(EXAMPLES[name], doc, version, name) == page


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_committed_page_has_no_deprecated_note_and_no_python_literal(name):
    page = (DOCS / f"{name}.html").read_text(encoding="utf-8")
    found = embedded(page)["notes"]
    assert not [n for n in found if n["code"] == "deprecated" or "deprecat" in n["text"]]
    assert not [n["text"] for n in found if PYTHON_LITERAL.search(n["text"])]
    assert 'data-code="deprecated"' not in page


def test_the_literal_check_catches_what_it_is_for():
    for leaked in ("the log has no axis (it has [])", "names ['a', 'b']", "value None",
                   "options {}", "call ()"):
        assert PYTHON_LITERAL.search(leaked)
    assert not PYTHON_LITERAL.search("the log has no 'prompt' axis (read_comparisons' "
                                     "prompt_col, 'prompt_id' by default)")


def _assert_close(ours, fresh, where="doc"):
    """Equal strings and structure; numbers to 1e-9 relative (another machine's BLAS)."""
    if isinstance(fresh, dict):
        assert list(ours) == list(fresh), where
        for key in fresh:
            _assert_close(ours[key], fresh[key], f"{where}.{key}")
    elif isinstance(fresh, list):
        assert len(ours) == len(fresh), where
        for k, (a, b) in enumerate(zip(ours, fresh, strict=True)):
            _assert_close(a, b, f"{where}[{k}]")
    elif isinstance(fresh, float) and isinstance(ours, (int, float)):
        assert math.isclose(ours, fresh, rel_tol=1e-9, abs_tol=1e-12), where
    else:
        assert ours == fresh, where


@pytest.mark.skipif(not os.environ.get("WINRATE_DATA"), reason="needs the real data "
                    "(WINRATE_DATA)")
@pytest.mark.parametrize("name", ["chatbot_arena", "alpaca_eval"])
def test_committed_page_holds_a_fresh_analysis(name):
    page = (DOCS / f"{name}.html").read_text(encoding="utf-8")
    _assert_close(embedded(page), json.loads(json.dumps(example_document(EXAMPLES[name]))))


def _perturbed(doc, relative: float):
    """``doc`` with every float of its results moved by ``relative`` (the last bits
    another machine's summation order moves); its settings as they are, and so are
    exact binary fractions (counts and half-ties: sums of them are exact everywhere)."""
    if isinstance(doc, float):
        return doc if (doc * 64).is_integer() else doc * (1 + relative)
    if isinstance(doc, dict):
        return {key: value if key == "settings" else _perturbed(value, relative)
                for key, value in doc.items()}
    if isinstance(doc, list):
        return [_perturbed(value, relative) for value in doc]
    return doc


def test_last_bits_do_not_move_the_page(hostile):
    """A result whose floats differ by 1e-15 relative (issue 32: round-off) writes the
    same page, sort keys, embedded JSON and CSV included, while a difference at the
    twelfth significant digit still shows: the page's numbers carry 12 (PAGE_DIGITS)."""
    doc = json.loads(json.dumps(hostile[1]))
    page = html_page.render(doc, "1")
    assert len(re.findall(r'data-v="-?\d+\.\d{6,}', page)) > 20  # full-precision keys
    for relative in (1e-15, -1e-15, 3e-16):
        assert html_page.render(_perturbed(doc, relative), "1") == page
    assert html_page.render(_perturbed(doc, 1e-9), "1") != page
