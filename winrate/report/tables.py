"""Tables as aligned text, GitHub-flavoured Markdown or LaTeX, and the escaping each needs.

Every table winrate prints or writes for a paper goes through :func:`render_table`, and every
cell through one escaping function per format, so a model named ``a_b & c~d`` or
``x|y`` comes out intact in each:

* Markdown (GFM pipe tables): a cell is one line (line breaks become spaces), with ``\\``
  and ``|`` backslash-escaped (a bare ``|`` would split the cell; CommonMark reads ``\\\\``
  as one backslash and GFM's table rows read ``\\|`` as a pipe inside a cell).
* LaTeX (``tabular`` with booktabs rules, ``\\usepackage{booktabs}``): the ten characters
  LaTeX reserves, ``# $ % & _ { } ~ ^ \\`` (Lamport, "LaTeX: A Document Preparation
  System", 2nd ed.), in text mode: ``\\`` as ``\\textbackslash{}`` (``\\\\`` would be a line
  break), ``~`` as ``\\textasciitilde{}`` and ``^`` as ``\\textasciicircum{}`` (``\\~{}`` and
  ``\\^{}`` are accent commands; all three are in Pakin's "Comprehensive LaTeX Symbol
  List"), the other seven with a backslash. The translation is one pass over the
  characters, so nothing is escaped twice.

:func:`comment_block` carries the report around a table (clustering, method, notes) as a
comment of the format, so the output pastes into a document as the table alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from winrate.constants import TABLE_FORMATS
from winrate.errors import one_of

_LATEX_SPECIAL = str.maketrans({
    "\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
})


def latex_escape(text) -> str:
    """``str(text)`` safe in LaTeX text mode (module docstring): ``a_b & 5%`` ->
    ``a\\_b \\& 5\\%``."""
    return str(text).translate(_LATEX_SPECIAL)


def markdown_cell(text) -> str:
    """``str(text)`` as one Markdown table cell: line breaks as spaces, ``\\`` and ``|``
    escaped (module docstring)."""
    one_line = str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return one_line.replace("\\", "\\\\").replace("|", "\\|")


def _check(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None) -> str:
    """The column alignment (``l``/``r`` per column; default ``l`` then ``r``)."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r} must give l or r for each of {len(header)} columns")
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {' | '.join(map(str, row))} has {len(row)} cells, the "
                             f"header {len(header)}")
    return align


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None,
               min_widths: Sequence[int] | None = None) -> str:
    """Columns padded to their widest cell (at least ``min_widths``), two spaces apart."""
    align = _check(header, rows, align)
    floors = min_widths or [0] * len(header)
    widths = [max(len(h), floor, *(len(r[i]) for r in rows))
              for i, (h, floor) in enumerate(zip(header, floors, strict=True))]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(cells, widths, align, strict=True)).rstrip()

    return "\n".join([line(header), *(line(r) for r in rows)])


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]],
                   align: str | None = None) -> str:
    """A GFM pipe table; with ``align`` the rule row aligns the columns (``:---``, ``---:``),
    without it the rule is plain ``---``."""
    checked = _check(header, rows, align)
    rule = ("---" if align is None else {"l": ":---", "r": "---:"}[a] for a in checked)
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |",
             "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def latex_tabular(header: Sequence[str], rows: Sequence[Sequence[str]],
                  align: str | None = None) -> str:
    """A booktabs ``tabular`` with every cell escaped by :func:`latex_escape`."""
    align = _check(header, rows, align)

    def line(cells) -> str:
        return " & ".join(map(latex_escape, cells)) + r" \\"

    return "\n".join([rf"\begin{{tabular}}{{{align}}}", r"\toprule", line(header), r"\midrule",
                      *(line(r) for r in rows), r"\bottomrule", r"\end{tabular}"])


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], fmt: str,
                 align: str | None = None, min_widths: Sequence[int] | None = None) -> str:
    """The table in ``fmt`` (one of :data:`TABLE_FORMATS`); cells are strings as shown."""
    if fmt == "text":
        return text_table(header, rows, align, min_widths)
    if fmt == "markdown":
        return markdown_table(header, rows, align)
    if fmt == "latex":
        return latex_tabular(header, rows, align)
    raise ValueError(f"table format must be one of {one_of(TABLE_FORMATS)}, got {fmt!r}")


def comment_block(text: str, fmt: str) -> str:
    """``text`` as a comment of ``fmt``: ``% `` lines in LaTeX, one ``<!-- -->`` block in
    Markdown (a ``-->`` inside is broken up so it cannot end the comment), as is in text.
    Empty text gives an empty string."""
    if not text.strip():
        return ""
    if fmt == "latex":
        return "\n".join(f"% {line}".rstrip() for line in text.splitlines())
    if fmt == "markdown":
        return "<!--\n" + text.replace("-->", "- ->") + "\n-->"
    return text
