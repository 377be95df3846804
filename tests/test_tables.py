"""winrate.report.tables: escaping oracles for LaTeX and Markdown, and tables that read back
intact."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.table_parsing import latex_cells, markdown_rows
from winrate.report.tables import (
    comment_block,
    latex_escape,
    markdown_cell,
    render_table,
    text_table,
)

SPECIAL_NAME = r"a_b & c% $d #e ~f ^g \h {i}"


def test_latex_escape_oracle_on_every_special_character():
    # written out by hand, one special character at a time
    expected = (r"a\_b \& c\% \$d \#e \textasciitilde{}f \textasciicircum{}g "
                r"\textbackslash{}h \{i\}")
    assert latex_escape(SPECIAL_NAME) == expected
    assert latex_escape("\\") == r"\textbackslash{}"  # not "\\": that is a line break
    assert latex_escape("~") == r"\textasciitilde{}" and latex_escape("^") == r"\textasciicircum{}"
    assert latex_escape("{}") == r"\{\}"
    assert latex_escape("plain-name 1.5") == "plain-name 1.5"


def test_markdown_cell_escapes_pipes_backslashes_and_line_breaks():
    assert markdown_cell("a|b") == r"a\|b"
    assert markdown_cell("a\\|b") == r"a\\\|b"
    assert markdown_cell("x\n\ny") == "x  y"


@given(st.lists(st.text(alphabet=st.sampled_from(list("ab_&%$#~^\\{}| 1.-")), max_size=12),
                min_size=2, max_size=4))
def test_cells_read_back_from_latex_and_markdown(names):
    header = [f"col {i}%" for i in range(len(names))]
    rows = [names, list(reversed(names))]
    latex = render_table(header, rows, "latex", align="l" * len(names))
    assert latex_cells(latex) == [[h.strip() for h in header]] + [
        [c.strip() for c in r] for r in rows]
    markdown = render_table(header, rows, "markdown")
    assert markdown_rows(markdown) == [[h.strip() for h in header]] + [
        [c.strip() for c in r] for r in rows]


def test_latex_checker_rejects_what_would_not_compile():
    """The structural checker used on the printed tables does catch broken LaTeX."""
    good = render_table(["model", "x"], [[SPECIAL_NAME, "1"]], "latex")
    assert latex_cells(good) == [["model", "x"], [SPECIAL_NAME, "1"]]
    for bad in (good.replace(r"\_", "_"), good.replace(r"\{", "{"),
                good.replace(r"\textbackslash{}", "\\\\"), good.replace(" & 1", " & 1 & 2")):
        with pytest.raises(AssertionError):
            latex_cells(bad)


def test_text_table_aligns_columns_and_respects_minimum_widths():
    text = text_table(["model", "score"], [["a", "1.5"], ["long-name", "10.25"]],
                      min_widths=[0, 7])
    assert text.splitlines() == ["model        score", "a              1.5",
                                 "long-name    10.25"]
    with pytest.raises(ValueError, match="cells"):
        text_table(["a", "b"], [["1"]])


def test_comment_block_hides_the_report_in_each_format():
    text = "clustered by prompt\nnotes --> here"
    assert comment_block(text, "latex") == "% clustered by prompt\n% notes --> here"
    markdown = comment_block(text, "markdown")
    assert markdown.startswith("<!--\n") and markdown.endswith("\n-->")
    assert markdown.count("-->") == 1  # the one that ends it
    assert comment_block(text, "text") == text and comment_block(" ", "latex") == ""
