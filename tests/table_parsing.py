"""Readers of the tables winrate prints, written independently of winrate.report.tables: a GFM pipe
table parser and a structural LaTeX checker that decodes a tabular back to its cell texts.
Tests use them to read printed tables back and compare them with the numbers."""

from __future__ import annotations

import re

# LaTeX text-mode spellings of the ten special characters (the LaTeX Companion, table 7.31)
LATEX_DECODE = {r"\textbackslash{}": "\\", r"\textasciitilde{}": "~",
                r"\textasciicircum{}": "^", r"\&": "&", r"\%": "%", r"\$": "$", r"\#": "#",
                r"\_": "_", r"\{": "{", r"\}": "}"}
_LATEX_TOKEN = re.compile(r"\\textbackslash\{\}|\\textasciitilde\{\}|\\textasciicircum\{\}"
                          r"|\\[&%$#_{}]|\\[A-Za-z]+|\\.|.", re.S)


def markdown_rows(text: str) -> list[list[str]]:
    """Cells of every row of the pipe tables in ``text`` (a table's second line, its
    delimiter row, left out), unescaped as GFM reads them: ``\\|`` is a pipe inside a cell,
    ``\\\\`` one backslash."""
    rows, line_in_table = [], 0
    for line in text.splitlines():
        line_in_table = line_in_table + 1 if line.startswith("|") else 0
        if line_in_table == 2:
            assert re.fullmatch(r"\|(:?-{3,}:?\|)+", line), f"not a delimiter row: {line!r}"
        if line_in_table in (0, 2):
            continue
        cells, cell, i = [], "", 1
        while i < len(line):
            if line[i] == "\\" and i + 1 < len(line) and line[i + 1] in "\\|":
                cell, i = cell + line[i + 1], i + 2
            elif line[i] == "|":
                cells.append(cell.strip())
                cell, i = "", i + 1
            else:
                cell, i = cell + line[i], i + 1
        rows.append(cells)
    return rows


def latex_cells(text: str) -> list[list[str]]:
    """Check a printed tabular structurally and return the decoded text of its cells.

    Outside ``%`` comment lines: braces balance and never close an unopened group; there is
    one ``\\begin{tabular}{SPEC}`` ... ``\\end{tabular}``; every row between the rules has
    exactly len(SPEC) cells (split at unescaped ``&``) and ends in ``\\\\``; no cell holds a
    character that is special in text mode (``# $ % & _ ^ ~ { } \\``) other than as an escape
    or a control word; the escapes are decoded by :data:`LATEX_DECODE`.
    """
    body = [line for line in text.splitlines() if not line.startswith("%")]
    depth = 0
    for token in _LATEX_TOKEN.findall("\n".join(body)):
        depth += {"{": 1, "}": -1}.get(token, 0)
        assert depth >= 0, "a } closes a group that was never opened"
    assert depth == 0, "unbalanced braces"
    begins = [i for i, line in enumerate(body) if line.startswith(r"\begin{tabular}")]
    assert len(begins) == 1, "expected one tabular"
    spec = re.fullmatch(r"\\begin\{tabular\}\{([lrc]+)\}", body[begins[0]]).group(1)
    end = body.index(r"\end{tabular}")
    rows = []
    for line in body[begins[0] + 1:end]:
        if line in (r"\toprule", r"\midrule", r"\bottomrule"):
            continue
        assert line.endswith(r" \\"), f"row does not end in \\\\: {line!r}"
        tokens = _LATEX_TOKEN.findall(line[:-3])
        cells, cell = [], ""
        for token in tokens:
            if token == "&":
                cells.append(cell.strip())
                cell = ""
            elif token in LATEX_DECODE:
                cell += LATEX_DECODE[token]
            else:
                assert token not in set("#$%&_^~{}\\") and not token.startswith("\\"), (
                    f"raw {token!r} in row {line!r}")
                cell += token
        cells.append(cell.strip())
        assert len(cells) == len(spec), f"{len(cells)} cells for {len(spec)} columns: {line!r}"
        rows.append(cells)
    return rows


NUMBER = re.compile(r"-?\d[\d,]*\.?\d*")


def numbers(text: str) -> list[float]:
    """Every number in ``text`` (thousands separators dropped)."""
    return [float(x.replace(",", "")) for x in NUMBER.findall(text)]
