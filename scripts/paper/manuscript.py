"""Render ``paper/paper.template.md`` into ``paper/paper.md``.

Template syntax (everything else is copied as it is):

* ``{{KEY}}``: the number registered under KEY (``paper/numbers.json``); an unknown key
  is an error, so no number can be typed in by hand and go stale unnoticed.
* ``{{table:NAME}}``: the Markdown table ``tables/NAME.md``, then its caption once, as
  ``**Table N.** caption`` (the caption says what a reader needs; the LaTeX and CSV
  versions sit beside the Markdown one, ``tables/NAME.tex`` and ``.csv``).
* ``{{figure:NAME}}``: ``figures/NAME.png`` (alt text ``Figure N``), then its caption
  once, as ``**Figure N.** caption``.
* ``{{files:floats}}``: a list, one line per placed table and figure in order, of the
  files that hold it (``Table N: tables/NAME.md, .tex, .csv``; ``Figure N:
  figures/NAME.png, .pdf``), for the reproducibility appendix (captions name no files).
* ``{{tab:NAME}}`` and ``{{fig:NAME}}``: a reference in the text, rendered ``Table N`` or
  ``Figure N``. Tables and figures are numbered separately, 1, 2, ..., in the order their
  ``{{table:...}}`` and ``{{figure:...}}`` placeholders appear, so a reference may come
  before the table; a reference to a table or figure the template does not place, or a
  table or figure placed twice, is an error.
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9_]+))?\s*\}\}")


class TemplateError(ValueError):
    """The template names a number, table or figure the build did not produce."""


#: The template's own note to editors (a comment starting "Template of"): not copied into
#: the manuscript, where the generator's note says the opposite.
TEMPLATE_NOTE = re.compile(r"<!-- Template of .*?-->\n\n?", re.S)


#: Float placeholder kind -> (the reference kind that cites it, the word of its number).
FLOATS = {"table": ("tab", "Table"), "figure": ("fig", "Figure")}


def float_numbers(text: str) -> tuple[dict[tuple[str, str], int], list[str]]:
    """``{(kind, name): number}`` of the tables and figures ``text`` places, each kind
    numbered 1, 2, ... in order of appearance, and the names placed more than once."""
    numbers: dict[tuple[str, str], int] = {}
    twice = []
    for match in PLACEHOLDER.finditer(text):
        kind, name = match.group(1), match.group(2)
        if kind not in FLOATS or name is None:
            continue
        if (kind, name) in numbers:
            twice.append(f"{kind} {name} placed twice")
        else:
            numbers[kind, name] = 1 + sum(k == kind for k, _ in numbers)
    return numbers, twice


def float_files(placed: dict[tuple[str, str], int]) -> str:
    """The Markdown list of ``{{files:floats}}``: each placed float's files, tables first."""
    lines = []
    for (kind, name), number in sorted(placed.items(), key=lambda kv: (kv[0][0] != "table", kv[1])):
        if kind == "table":
            files = [f"tables/{name}.{ext}" for ext in ("md", "tex", "csv")]
        else:
            files = [f"figures/{name}.{ext}" for ext in ("png", "pdf")]
        word = FLOATS[kind][1]
        lines.append(f"- {word} {number}: " + ", ".join(f"`{f}`" for f in files))
    return "\n".join(lines)


def render(template: str, numbers: dict[str, str], tables: dict[str, tuple[str, str]],
           figures: dict[str, str]) -> str:
    """The manuscript: ``tables`` maps a name to (Markdown text, caption), ``figures`` a
    name to its caption."""
    text = TEMPLATE_NOTE.sub("", template, count=1)
    placed, missing = float_numbers(text)
    cited = {ref: (kind, word) for kind, (ref, word) in FLOATS.items()}

    def substitute(match):
        kind, name = (match.group(1), match.group(2)) if match.group(2) else (None,
                                                                              match.group(1))
        if kind == "table":
            if name not in tables:
                missing.append(f"table {name}")
                return match.group(0)
            body, caption = tables[name]
            return f"{body.rstrip()}\n\n**Table {placed[kind, name]}.** {caption}"
        if kind == "figure":
            if name not in figures:
                missing.append(f"figure {name}")
                return match.group(0)
            label = f"Figure {placed[kind, name]}"
            return f"![{label}](figures/{name}.png)\n\n**{label}.** {figures[name]}"
        if kind == "files" and name == "floats":
            return float_files(placed)
        if kind in cited:
            placed_kind, word = cited[kind]
            if (placed_kind, name) not in placed:
                missing.append(f"reference to {placed_kind} {name}, which is not placed")
                return match.group(0)
            return f"{word} {placed[placed_kind, name]}"
        if kind is not None:
            missing.append(f"unknown placeholder kind {kind}")
            return match.group(0)
        if name not in numbers:
            missing.append(f"number {name}")
            return match.group(0)
        return numbers[name]

    out = PLACEHOLDER.sub(substitute, text)
    missing += [f"malformed placeholder {m}" for m in re.findall(r"\{\{.*?\}\}", out)]
    if missing:
        raise TemplateError("the template refers to what the build did not produce: "
                            + ", ".join(dict.fromkeys(missing)))
    return out


#: Lines outside the main text's prose: table rows and captions, figures and their captions.
_NOT_PROSE = re.compile(r"^(\||!\[|\*\*(Table|Figure) \d+\.\*\* )")
_END_OF_MAIN = re.compile(r"^## (Appendix|References)\b", re.M)


def main_text_words(manuscript: str) -> int:
    """Words of the main text (the count ``make paper`` prints; see scripts/paper/build.py).

    The main text runs from after the front matter to the first ``## Appendix`` or
    ``## References`` heading. Not counted: HTML comments, fenced code blocks, table rows
    and ``**Table N.**`` captions, figure lines and ``**Figure N.**`` captions. Headings
    count; a formula, inline ``$...$`` or displayed ``$$...$$``, counts as one word; a
    word is a whitespace-separated token with a letter or digit in it."""
    text = manuscript
    if text.startswith("---\n"):
        text = text[text.find("\n---\n", 4) + 5:]
    end = _END_OF_MAIN.search(text)
    text = text[:end.start()] if end else text
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"^```.*?^```", " ", text, flags=re.S | re.M)
    text = re.sub(r"\$\$.+?\$\$", " formula ", text, flags=re.S)  # display formulas first
    text = re.sub(r"\$[^$]+\$", " formula ", text)
    prose = [line for line in text.splitlines() if not _NOT_PROSE.match(line.lstrip())]
    return sum(1 for token in " ".join(prose).split() if re.search(r"\w", token))
