"""Render ``paper/paper.template.md`` into ``paper/paper.md``.

Template syntax (everything else is copied as it is):

* ``{{KEY}}``: the number registered under KEY (``paper/numbers.json``); an unknown key
  is an error, so no number can be typed in by hand and go stale unnoticed.
* ``{{table:NAME}}``: the Markdown table ``tables/NAME.md``, its caption, and the names
  of its LaTeX and CSV versions.
* ``{{figure:NAME}}``: ``figures/NAME.png`` with the figure's caption and its PDF.
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9_]+))?\s*\}\}")


class TemplateError(ValueError):
    """The template names a number, table or figure the build did not produce."""


#: The template's own note to editors (a comment starting "Template of"): not copied into
#: the manuscript, where the generator's note says the opposite.
TEMPLATE_NOTE = re.compile(r"<!-- Template of .*?-->\n\n?", re.S)


def render(template: str, numbers: dict[str, str], tables: dict[str, tuple[str, str]],
           figures: dict[str, str]) -> str:
    """The manuscript: ``tables`` maps a name to (Markdown text, caption), ``figures`` a
    name to its caption."""
    text = TEMPLATE_NOTE.sub("", template, count=1)
    missing = []

    def substitute(match):
        kind, name = (match.group(1), match.group(2)) if match.group(2) else (None,
                                                                              match.group(1))
        if kind == "table":
            if name not in tables:
                missing.append(f"table {name}")
                return match.group(0)
            body, caption = tables[name]
            return (f"{body.rstrip()}\n\nTable: {caption} Files: `tables/{name}.md`, "
                    f"`tables/{name}.tex`, `tables/{name}.csv`.")
        if kind == "figure":
            if name not in figures:
                missing.append(f"figure {name}")
                return match.group(0)
            return (f"![{figures[name]}](figures/{name}.png)\n\n*Figure: {figures[name]}* "
                    f"Files: `figures/{name}.png`, `figures/{name}.pdf`.")
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
_NOT_PROSE = re.compile(r"^(\||Table: |!\[|\*Figure: )")
_END_OF_MAIN = re.compile(r"^## (Appendix|References)\b", re.M)


def main_text_words(manuscript: str) -> int:
    """Words of the main text (the count ``make paper`` prints; see scripts/paper/build.py).

    The main text runs from after the front matter to the first ``## Appendix`` or
    ``## References`` heading. Not counted: HTML comments, fenced code blocks, table rows
    and ``Table:`` captions, figure lines and ``*Figure:`` captions. Headings count; an
    inline formula ``$...$`` counts as one word; a word is a whitespace-separated token
    with a letter or digit in it."""
    text = manuscript
    if text.startswith("---\n"):
        text = text[text.find("\n---\n", 4) + 5:]
    end = _END_OF_MAIN.search(text)
    text = text[:end.start()] if end else text
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"^```.*?^```", " ", text, flags=re.S | re.M)
    text = re.sub(r"\$[^$]+\$", " formula ", text)
    prose = [line for line in text.splitlines() if not _NOT_PROSE.match(line.lstrip())]
    return sum(1 for token in " ".join(prose).split() if re.search(r"\w", token))
