"""The paper's bibliography (paper/references.bib), its citations in the template, the
rendered References section, the main-text word count and CITATION.cff.

Oracles: hand-written expected values (a small .bib parsed by hand, citation texts typed
out, an ISBN-13 check digit by its definition, word counts counted by hand), and
pyproject.toml for the version."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "paper"
sys.path.insert(0, str(ROOT / "scripts" / "paper"))

from bibliography import (  # noqa: E402
    BibliographyError,
    cited_keys,
    parse_bibtex,
    render_citations,
)
from manuscript import main_text_words  # noqa: E402

DOI = re.compile(r"10\.\d{4,9}/\S+")
ARXIV = re.compile(r"\d{4}\.\d{4,5}")


@pytest.fixture(scope="module")
def bib():
    return parse_bibtex((PAPER / "references.bib").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def template():
    return (PAPER / "paper.template.md").read_text(encoding="utf-8")


def isbn13_valid(isbn: str) -> bool:
    """ISBN-13 check digit: digits weighted 1, 3, 1, 3, ... sum to a multiple of 10."""
    digits = [int(c) for c in isbn.replace("-", "")]
    weighted = sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits))
    return len(digits) == 13 and weighted % 10 == 0


# ------------------------------------------------------------------ the bibliography


def test_bibliography_has_at_least_25_identified_works(bib):
    """Every entry has a DOI, an arXiv eprint or a software version; a book without a DOI
    (Kish 1965) has a valid ISBN-13 instead, an article in a journal without DOIs (Survey
    Methodology) the publisher's https address."""
    assert len(bib) >= 25
    unidentified = []
    for key, entry in bib.items():
        f = entry.fields
        if "doi" in f:
            assert DOI.fullmatch(f["doi"]), (key, f["doi"])
        if "eprint" in f:
            assert ARXIV.fullmatch(f["eprint"]) and f.get("archiveprefix") == "arXiv", key
        book = entry.kind == "book" and isbn13_valid(f.get("isbn", ""))
        web = entry.kind == "article" and f.get("url", "").startswith("https://")
        if not ({"doi", "eprint", "version"} & set(f) or book or web):
            unidentified.append(key)
        assert {"author", "title", "year"} <= set(f), key
    assert unidentified == []


def test_isbn_check_digit_rule():
    assert isbn13_valid("978-0-471-10949-5") and not isbn13_valid("9780471109494")


def test_every_entry_is_cited_and_every_citation_resolves(bib, template):
    cited = cited_keys(template)
    assert sorted(set(cited) - set(bib)) == []
    assert sorted(set(bib) - set(cited)) == []


def test_template_has_no_ad_hoc_references(template):
    """Citations are keys: no "(Kish 1965)" or "(Cameron, Gelbach & Miller 2011)" typed
    in, and no hand-written References section."""
    ad_hoc = re.findall(r"\((?:[A-Z][\w'-]+(?:,| &| and| et al\.)?\s)+(?:19|20)\d\d\)", template)
    assert ad_hoc == []
    assert "## References" not in template


def test_manuscript_lists_exactly_the_cited_works(bib, template):
    manuscript = (PAPER / "paper.md").read_text(encoding="utf-8")
    assert "[@" not in manuscript
    references = manuscript.split("\n## References\n", 1)[1].split("\n## ", 1)[0]
    items = [line for line in references.splitlines() if line.startswith("- ")]
    assert len(items) == len(cited_keys(template))
    for entry in bib.values():
        identifier = entry.fields.get("doi") or entry.fields.get("eprint")
        if identifier:
            assert identifier in references, entry.key


# ------------------------------------------------------------------ the reader and renderer

SMALL_BIB = r"""
% a comment line with @fake{entry,
@article{b2001x,
  author = {Brown, Lawrence D. and Cai, T. Tony and DasGupta, Anirban},
  title = {Interval estimation for a {B}inomial proportion},
  journal = "Statistical Science",
  year = 2001,
  doi = {10.1214/ss/1009213286}
}
@misc{d2024a, author = {Dubois, Yann and Li, X.}, title = {One}, year = {2024},
  eprint = {2404.04475}, archiveprefix = {arXiv}}
@misc{d2024b, author = {Dubois, Yann and Li, X.}, title = {Two?}, year = {2024},
  eprint = {2305.14387}, archiveprefix = {arXiv}}
@software{org, author = {{The M{\"u}ller Lab}}, title = {tool}, year = {2020},
  version = {1.2.3}}
"""


def test_reader_against_hand_parsed_fields():
    entries = parse_bibtex(SMALL_BIB)
    assert list(entries) == ["b2001x", "d2024a", "d2024b", "org"]
    b = entries["b2001x"]
    assert b.kind == "article"
    assert b.fields == {"author": "Brown, Lawrence D. and Cai, T. Tony and DasGupta, Anirban",
                        "title": "Interval estimation for a {B}inomial proportion",
                        "journal": "Statistical Science", "year": "2001",
                        "doi": "10.1214/ss/1009213286"}
    assert b.authors == ["Brown", "Cai", "DasGupta"]
    assert entries["org"].authors == ["The Müller Lab"]
    with pytest.raises(BibliographyError, match="duplicate"):
        parse_bibtex(SMALL_BIB + "@misc{org, title = {again}}")
    with pytest.raises(BibliographyError, match="unbalanced"):
        parse_bibtex("@misc{x, title = {open")


def test_citations_render_author_year_with_suffixes_and_references():
    entries = parse_bibtex(SMALL_BIB)
    text = "A [@b2001x]. B [@d2024b; @d2024a] and C [@org].\n"
    out = render_citations(text, entries)
    body, references = out.split("\n\n## References\n\n")
    assert body == ("A (Brown et al. 2001). B (Dubois & Li 2024b; Dubois & Li 2024a) and "
                    "C (The Müller Lab 2020).")
    assert references.splitlines() == [
        "- Brown et al. 2001. Interval estimation for a Binomial proportion. *Statistical "
        "Science*. doi:[10.1214/ss/1009213286](https://doi.org/10.1214/ss/1009213286).",
        "- Dubois & Li 2024a. One. *Preprint*. arXiv:[2404.04475]"
        "(https://arxiv.org/abs/2404.04475).",
        "- Dubois & Li 2024b. Two? *Preprint*. arXiv:[2305.14387]"
        "(https://arxiv.org/abs/2305.14387).",
        "- The Müller Lab 2020. tool. *Software*. version 1.2.3.",
    ]
    placed = render_citations("A [@org].\n\n## Appendix A: more\n\nB.\n", entries)
    assert placed == ("A (The Müller Lab 2020).\n\n## References\n\n- The Müller Lab 2020. "
                      "tool. *Software*. version 1.2.3.\n\n## Appendix A: more\n\nB.\n")
    with pytest.raises(BibliographyError, match="nope"):
        render_citations("x [@nope]\n", entries)
    assert render_citations("no citations, an email a@b.org\n", entries) == (
        "no citations, an email a@b.org\n")
    narrative = render_citations("As @b2001x and @d2024a show [@org].\n", entries)
    assert narrative.startswith("As Brown et al. (2001) and Dubois & Li (2024) show "
                                "(The Müller Lab 2020).\n")
    assert narrative.count("\n- ") == 3  # each cited work listed once


def test_main_text_word_count_by_hand():
    manuscript = """---
title: "Not counted"
---

<!-- not counted either -->
## Intro

Three words here, and $x + y = z$ once.

$$a = b$$

and $c$ here.

| a | table |
|---|---|
| 1 | 2 |

**Table 1.** A caption not counted.

![Figure 1](figures/x.png)

**Figure 1.** Not counted. Files: none.

```
code not counted
```

- a list item

## Appendix: more

Not counted at all.
"""
    # Intro (1); Three words here, and formula once. (6); formula (1); and formula here. (3);
    # - is no word; a list item (3). Paired as $$a = b$$ + "and $c$", not "$a = b$" + "$ and $"
    assert main_text_words(manuscript) == 14


def test_committed_manuscript_word_count_is_positive_and_excludes_appendix():
    """The main text is counted without the appendices and stays within a workshop's
    length (issue 36: about 4,500 words; the PDF's page count is checked on the render)."""
    manuscript = (PAPER / "paper.md").read_text(encoding="utf-8")
    words = main_text_words(manuscript)
    assert 1000 < words <= 4500 < len(manuscript.split())


# ------------------------------------------------------------------ CITATION.cff


def _top_level(text: str) -> dict[str, str]:
    """Top-level ``key: value`` pairs of a YAML mapping (a minimal reader for the test when
    PyYAML is absent); every other non-blank, non-comment line must be indented."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith(" "):
            continue
        key, sep, value = line.partition(":")
        assert sep and re.fullmatch(r"[a-z][a-z-]*", key), f"not a YAML mapping line: {line!r}"
        out[key] = value.strip().strip('"')
    return out


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def test_citation_cff_parses_and_matches_pyproject():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    top = _top_level(text)
    assert top["cff-version"] == "1.2.0"
    assert top["version"] == _pyproject_version()
    assert top["license"] == "Apache-2.0"
    assert top["title"].startswith("winrate")
    assert '- name: "The winrate developers"' in text
    try:
        import yaml
    except ImportError:
        return
    data = yaml.safe_load(text)
    assert str(data["version"]) == _pyproject_version()
    assert data["authors"] == [{"name": "The winrate developers"}]
    assert all({"type", "title", "authors"} <= set(ref) for ref in data["references"])
