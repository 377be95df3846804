"""Citations of ``paper/paper.template.md`` rendered from ``paper/references.bib``.

The template cites with pandoc's bracket syntax, ``[@key]`` or ``[@key1; @key2]``, or in
the running text with a bare ``@key`` (pandoc's narrative citation). The build replaces
each bracket with author-year text, ``(Owen 2007; Cameron et al. 2011)``, and each bare key
with ``Owen (2007)``,
and appends a "References" section listing the cited entries, sorted by the first
author's surname and the year, so ``paper/paper.md`` is a complete Markdown document
without a citation processor.

The BibTeX reader covers what ``references.bib`` uses: ``@type{key, field = {value}}``
entries with braced (nested) or quoted values or bare numbers, ``%`` comment lines, and
the LaTeX in values that the file needs (``\\&``, ``{\\"u}``, ``{\\'a}``, ``{\\O}``,
protective braces). Authors are ``Last, First and Last, First``; a doubly braced
author (``{{LMArena}}``) is an organisation, printed as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A bracketed citation: one or more ``@key`` separated by semicolons.
CITATION = re.compile(r"\[(@[\w:.-]+(?:\s*;\s*@[\w:.-]+)*)\]")
KEY = re.compile(r"@([\w:.-]+)")
#: A narrative citation: ``@key`` outside brackets, not inside a word (an e-mail address).
NARRATIVE = re.compile(r"(?<![\w\[;@])@([A-Za-z][\w:.-]*\w)")
APPENDIX = re.compile(r"^## Appendix\b", re.M)
ENTRY_START = re.compile(r"@(\w+)\s*\{\s*([^,\s]+)\s*,")
_LATEX = (("\\&", "&"), ('{\\"u}', "ü"), ('\\"u', "ü"), ("{\\'a}", "á"), ("\\'a", "á"),
          ("{\\O}", "Ø"), ("\\O", "Ø"), ("{\\oe}", "œ"), ("--", "–"))


class BibliographyError(ValueError):
    """A malformed .bib file, or a citation of a key the .bib does not hold."""


@dataclass(frozen=True)
class Entry:
    kind: str
    key: str
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def authors(self) -> list[str]:
        """Surnames (or organisation names) in order."""
        raw = self.fields.get("author", "")
        if raw.startswith("{") and raw.endswith("}"):
            return [latex_to_text(raw)]
        return [latex_to_text(name.split(",")[0] if "," in name else name.split()[-1])
                for name in re.split(r"\s+and\s+", raw)]

    @property
    def label(self) -> str:
        """Author-year label: ``Owen 2007``, ``Bradley & Terry 1952``, ``Cameron et al.
        2011``."""
        names = self.authors
        who = (names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2
               else f"{names[0]} et al.")
        return f"{who} {self.fields.get('year', 'n.d.')}"


def latex_to_text(value: str) -> str:
    """The LaTeX of a field value as plain text (the few commands the .bib uses; braces
    dropped, whitespace collapsed)."""
    for latex, text in _LATEX:
        value = value.replace(latex, text)
    return " ".join(value.replace("{", "").replace("}", "").split())


def _read_value(text: str, pos: int) -> tuple[str, int]:
    """The value starting at ``text[pos]`` (braced, quoted or bare) and the position after
    it."""
    if text[pos] == "{":
        depth, start = 0, pos
        for i in range(pos, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return text[start + 1:i], i + 1
        raise BibliographyError(f"unbalanced braces in a value at character {pos}")
    if text[pos] == '"':
        end = text.find('"', pos + 1)
        if end < 0:
            raise BibliographyError(f"unterminated quoted value at character {pos}")
        return text[pos + 1:end], end + 1
    match = re.compile(r"[\w.-]+").match(text, pos)
    if match is None:
        raise BibliographyError(f"expected a value at character {pos}")
    return match.group(0), match.end()


def parse_bibtex(text: str) -> dict[str, Entry]:
    """Entries of a BibTeX file by key, in file order; a duplicate key is an error."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("%"))
    entries: dict[str, Entry] = {}
    field_start = re.compile(r"\s*,?\s*([A-Za-z][\w-]*)\s*=\s*")
    for match in ENTRY_START.finditer(text):
        kind, key, pos = match.group(1).lower(), match.group(2), match.end()
        fields: dict[str, str] = {}
        while True:
            head = field_start.match(text, pos)
            if head is None:
                break
            value, pos = _read_value(text, head.end())
            fields[head.group(1).lower()] = " ".join(value.split())
        if not re.compile(r"\s*,?\s*\}").match(text, pos):
            raise BibliographyError(f"entry {key}: cannot read the field at character {pos}")
        if key in entries:
            raise BibliographyError(f"duplicate bibliography key {key}")
        entries[key] = Entry(kind, key, fields)
    return entries


def cited_keys(text: str) -> list[str]:
    """Keys cited in ``text``, in order of first citation."""
    keys = [key for group in CITATION.findall(text) for key in KEY.findall(group)]
    keys += NARRATIVE.findall(CITATION.sub(" ", text))
    return list(dict.fromkeys(keys))


def labels(entries: dict[str, Entry], keys: list[str]) -> dict[str, str]:
    """Author-year label of each key; labels shared by several entries get a, b, ... in
    key order (``Dubois 2024a``)."""
    by_label: dict[str, list[str]] = {}
    for key in keys:
        by_label.setdefault(entries[key].label, []).append(key)
    out = {}
    for label, same in by_label.items():
        for i, key in enumerate(sorted(same)):
            out[key] = label if len(same) == 1 else f"{label}{chr(ord('a') + i)}"
    return out


def _identifier(entry: Entry) -> str:
    parts = []
    if "doi" in entry.fields:
        parts.append(f"doi:[{entry.fields['doi']}](https://doi.org/{entry.fields['doi']})")
    if "eprint" in entry.fields:
        parts.append(f"arXiv:[{entry.fields['eprint']}]"
                     f"(https://arxiv.org/abs/{entry.fields['eprint']})")
    if "version" in entry.fields:
        parts.append(f"version {entry.fields['version']}")
    if "isbn" in entry.fields:
        parts.append(f"ISBN {entry.fields['isbn']}")
    if "url" in entry.fields and "doi" not in entry.fields:
        parts.append(f"<{entry.fields['url']}>")
    return ", ".join(parts)


def reference(entry: Entry, label: str) -> str:
    """One reference line: label, title, venue, identifiers."""
    f = {name: latex_to_text(value) for name, value in entry.fields.items()}
    venue = f.get("journal") or f.get("booktitle") or f.get("publisher") or ""
    if f.get("volume"):
        venue += f" {f['volume']}" + (f"({f['number']})" if f.get("number") else "")
    if f.get("pages"):
        venue += f", {f['pages']}"
    if not venue and entry.kind == "software":
        venue = "Software"
    if not venue and "eprint" in f:
        venue = "Preprint"
    note = f". {f['note']}" if f.get("note") else ""
    title = f.get("title", "")
    title += "" if title.endswith(("?", "!", ".")) else "."
    return f"{label}. {title} *{venue}*{note}. {_identifier(entry)}."


def render_citations(text: str, bib: dict[str, Entry]) -> str:
    """``text`` with every ``[@key; ...]`` replaced by author-year text and a "References"
    section placed before the first ``## Appendix`` heading (appended when there is none);
    a cited key missing from ``bib`` is an error."""
    keys = cited_keys(text)
    missing = [key for key in keys if key not in bib]
    if missing:
        raise BibliographyError("cited but not in references.bib: " + ", ".join(missing))
    if not keys:
        return text
    names = labels(bib, keys)

    def replace(match):
        return "(" + "; ".join(names[key] for key in KEY.findall(match.group(1))) + ")"

    def narrative(match):
        who, year = names[match.group(1)].rsplit(" ", 1)
        return f"{who} ({year})"

    body = NARRATIVE.sub(narrative, CITATION.sub(replace, text)).rstrip("\n") + "\n"
    order = sorted(keys, key=lambda k: (bib[k].authors[0].lower(), names[k]))
    lines = [f"- {reference(bib[key], names[key])}" for key in order]
    section = "## References\n\n" + "\n".join(lines) + "\n"
    appendix = APPENDIX.search(body)
    if appendix is None:
        return body + "\n" + section
    return body[:appendix.start()] + section + "\n" + body[appendix.start():]
