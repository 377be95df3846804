"""A leaderboard or exploratory report as one self-contained web page.

The page is rendered from the JSON document alone (``winrate.report.leaderboard.to_dict`` of an
analysis, schema ``winrate.leaderboard/1``, or ``winrate.eda.to_dict`` of an exploratory
report, ``winrate.eda/1``): its keys are the stable interface, so this module imports no
numerical code and can render a JSON file written by another version of winrate.

What the page holds: its styles and script inline (``winrate/report/html_assets``), every table
and chart rendered here as HTML and inline SVG, and the document itself in a
``<script type="application/json">`` block, from which the script offers the JSON download
and draws the pairwise matrix. Nothing is loaded from anywhere: the Content-Security-Policy
allows no source but the page's own script and style, named by their SHA-256 hashes, and
``data:`` images; so even a string that escaped its escaping could neither load nor run
anything. Every string of the document is escaped (:func:`html.escape`, and
:func:`script_json` for the embedded JSON). The same document and version give the same
bytes: no timestamp, and every list in a fixed order (models best score first, ties in
``models`` order, as :func:`winrate.report.leaderboard.leaderboard_table` orders them).

How a page is presented is not part of the document: its title and description, the model
metadata (:mod:`winrate.report.models_meta`: organisation, licence, link, badges, other
columns) and the interval style are :class:`PageOptions`. A document of one leaderboard per
category (:func:`winrate.by_category.boards_to_dict`) is rendered as one tab per category.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import math
from dataclasses import dataclass
from importlib import resources
from statistics import NormalDist
from urllib.parse import quote

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.estimators.base import Scale as ScoreScale

LEADERBOARD_SCHEMA = "winrate.leaderboard/1"
EDA_SCHEMA = "winrate.eda/1"
#: Keys of a leaderboard document that the leaderboard builder's commands add: the judge
#: audit (``winrate judges``), the plan (``winrate plan``) and the changes since the last
#: release (``winrate diff``), each that application's own JSON document.
BUILDER_PARTS = ("judges", "plan", "changes")
DASH = "\u2014"
MINUS = "\u2212"
#: Width and height (CSS pixels) of each model's interval chart.
CHART_WIDTH, CHART_HEIGHT = 180, 24
_CHART_PAD = 6
#: Colours of the clusterings in the exploratory report's inflation chart, in order.
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


# --------------------------------------------------------------------------- escaping


def text(value) -> str:
    """``value`` as HTML text or attribute value (quotes escaped too)."""
    return html.escape(str(value), quote=True)


_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                   "\u2029": "\\u2029"}


#: Significant digits of every number a page carries (the embedded document, sort keys,
#: the CSV; :func:`render`): a rerun whose results differ in their last bits (another
#: machine's summation order, about 1e-15 relative) writes the same page; the numbers
#: shown have 4 or fewer.
PAGE_DIGITS = 12


def page_number(value: float) -> float:
    """``value`` rounded to :data:`PAGE_DIGITS` significant digits."""
    return float(f"{value:.{PAGE_DIGITS}g}")


def page_numbers(doc):
    """``doc`` (JSON-like: dicts, lists, numbers, text) with every float rounded by
    :func:`page_number`; integers, booleans and text as they are."""
    if isinstance(doc, float):
        return page_number(doc) if math.isfinite(doc) else doc
    if isinstance(doc, dict):
        return {key: page_numbers(value) for key, value in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [page_numbers(value) for value in doc]
    return doc


def script_json(doc) -> str:
    """``doc`` as JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and the line
    separators U+2028/U+2029 as ``\\uXXXX`` escapes, so no string can close the element
    (``</script>``) or open a comment; ``JSON.parse`` of it gives ``doc`` back."""
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return "".join(_SCRIPT_ESCAPES.get(ch, ch) for ch in raw)


def _asset(name: str) -> str:
    asset = resources.files("winrate.report").joinpath("html_assets", name)
    return asset.read_text(encoding="utf-8")


def _sha256(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing from anywhere (``default-src 'none'``) but the page's own inline script and
    style, allowed by hash, and ``data:`` images (the favicon)."""
    return (f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def installed_version() -> str:
    """The installed winrate's version (package metadata; no numerical import)."""
    from importlib.metadata import version

    return version("winrate")


# --------------------------------------------------------------------------- numbers


def score_text(unit: ScoreScale, value) -> str:
    """A score on its scale (``factor`` times it, ``decimals`` places), without thousands
    separators, as the printed report shows scores; a dash if null."""
    return f"{unit.factor * value:.{unit.decimals}f}" if defined(value) else DASH


def defined(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def number(value, decimals: int = 2, factor: float = 1.0) -> str:
    """``factor * value`` with ``decimals`` places and thousands separators; a dash if null."""
    return f"{factor * value:,.{decimals}f}" if defined(value) else DASH


def count(value) -> str:
    """A count as it is: ``1,034``, or ``1,034.5`` for fractional frequency weights."""
    if not defined(value):
        return DASH
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.10g}"


def interval(low, high, unit: ScoreScale) -> str:
    if not (defined(low) and defined(high)):
        return DASH
    return f"[{score_text(unit, low)}, {score_text(unit, high)}]"


def level_label(alpha: float) -> str:
    return f"{100 * (1 - alpha):.10g}%"


def best_first(scores: list) -> list[int]:
    """Model indices by score, best first; ties keep ``models`` order, null scores last."""
    return sorted(range(len(scores)),
                  key=lambda i: (0, -scores[i]) if defined(scores[i]) else (1, 0))


def naive_bounds(doc: dict) -> tuple[list, list]:
    """The naive interval ``S_a -/+ z_{1-alpha/2} SE_naive`` (rows independent, normal
    reference, as :mod:`winrate.report.plots` draws it), cut at [0, 1] for win probabilities
    (:func:`winrate.inference.intervals.clip_to_range`); null where the naive SE is."""
    z = NormalDist().inv_cdf(1 - doc["settings"]["alpha"] / 2)
    low, high = ScoreScale.of(doc["settings"]["scale"]).range

    def bound(score, se, sign):
        if not (defined(score) and defined(se)):
            return None
        return min(high, max(low, score + sign * z * se))

    pairs = list(zip(doc["score"], doc["se_naive"], strict=True))
    return [bound(s, e, -1) for s, e in pairs], [bound(s, e, 1) for s, e in pairs]


def nice_ticks(low: float, high: float, target: int = 5) -> list[float]:
    """Round tick values in [low, high], about ``target`` of them, spaced 1, 2 or 5 times
    a power of ten (Heckbert's "nice numbers", Graphics Gems, 1990)."""
    span = high - low
    if not span > 0:
        return [low]
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10)), key=lambda s: abs(math.log(s / raw)))
    digits = max(0, 1 - math.floor(math.log10(step)))  # one place below the step's
    return [round(k * step, digits)
            for k in range(math.ceil(low / step), math.floor(high / step) + 1)]


# --------------------------------------------------------------------------- HTML pieces


def th(label: str, sort: str | None = None, numeric: bool = True, sub: str = "",
       cls: str = "", key: str = "") -> str:
    """A header cell; sortable (a button) when ``sort`` is the first click's direction;
    ``key`` names the column for scripts and tests (``data-key``)."""
    classes = " ".join(c for c in (cls, "" if numeric else "l") if c)
    attrs = f' class="{classes}"' if classes else ""
    attrs += f' data-key="{text(key)}"' if key else ""
    inner = text(label)
    if sort:
        attrs += f' data-sort="{sort}"' + (' data-type="num"' if numeric else "")
        inner = f'<button type="button">{inner}</button>'
    sub_html = f'<span class="sub">{text(sub)}</span>' if sub else ""
    return f"<th{attrs} scope=\"col\">{inner}{sub_html}</th>"


def td(shown: str, value=None, cls: str = "num") -> str:
    """A body cell showing ``shown`` (escaped) and sorting by ``value`` (``data-v``)."""
    key = "" if value is None or (isinstance(value, float) and not math.isfinite(value)) \
        else (repr(page_number(value)) if isinstance(value, float) else str(value))
    return f'<td class="{cls}" data-v="{text(key)}">{text(shown)}</td>'


def model_cell(name: str, url: str | None = None, flags=(), maker: str = "") -> str:
    """The model's whole name (it wraps, never cut), sorting by it; a link to ``url`` when
    given; each of ``flags`` as a badge after the name; ``maker`` (its organisation) under
    it, shown where the organisation's own column is not (a phone)."""
    shown = text(name)
    if url:
        shown = f'<a href="{text(url)}" rel="noopener noreferrer">{shown}</a>'
    badges = "".join(f'<span class="flag" data-flag="{text(flag)}">{text(flag)}</span>'
                     for flag in flags)
    org = f'<span class="org">{text(maker)}</span>' if maker else ""
    return (f'<td class="l model sticky-2" data-v="{text(name)}"><span class="name">{shown}'
            f"</span>{badges}{org}</td>")


def table(table_id: str, head: list[str], rows: list[str], tall: bool = False) -> str:
    """A sortable table in its own scrolling box; ``tall`` ones (a board) have class ``lb``
    and are at most most of the screen high."""
    cls = "scroll tall" if tall else "scroll"
    kind = "sortable lb" if tall else "sortable"
    return (f'<div class="{cls}"><table id="{table_id}" class="{kind}"><thead><tr>'
            + "".join(head) + "</tr></thead><tbody>\n" + "\n".join(rows)
            + "\n</tbody></table></div>")


def plain_table(head: list[str], rows: list[list[str]], left: int = 1,
                wrap: int | None = None) -> str:
    """A small static table of escaped cells, the first ``left`` columns left-aligned and
    column ``wrap`` (long text) wrapped."""
    def cells(values, tag):
        return "".join(f"<{tag}{_cell_class(i, left, wrap)}>{text(v)}</{tag}>"
                       for i, v in enumerate(values))

    body = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows)
    return (f'<div class="scroll"><table class="plain"><thead><tr>{cells(head, "th")}</tr>'
            f"</thead><tbody>{body}</tbody></table></div>")


def _cell_class(i: int, left: int, wrap: int | None) -> str:
    classes = " ".join(c for c, on in (("l", i < left or i == wrap), ("wrap", i == wrap)) if on)
    return f' class="{classes}"' if classes else ""


def key_values(items: list[tuple[str, str]]) -> str:
    return "<dl class=\"kv\">" + "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>"
                                         for k, v in items) + "</dl>"


def facts(items: list[tuple[str, str, str]]) -> str:
    """Headline numbers as cards: (label, value, small print)."""
    cards = "".join(f'<li><span class="k">{text(k)}</span><span class="v">{text(v)}</span>'
                    + (f'<span class="s">{text(s)}</span>' if s else "") + "</li>"
                    for k, v, s in items)
    return f'<ul class="facts">{cards}</ul>'


def doc_notes(doc: dict) -> list[dict]:
    """The document's notes: its ``notes`` key when it has one, else its ``warnings``
    strings (a document written before notes had codes)."""
    found = doc.get("notes")
    if found is None:
        found = [{"code": None, "severity": "warning", "text": w}
                 for w in doc.get("warnings") or ()]
    parts = [note for key in BUILDER_PARTS if isinstance(doc.get(key), dict)
             for note in doc[key].get("notes") or ()]
    kept: dict = {}  # a note the part shares with the board (same code and text) once
    for note in [*found, *parts]:
        kept.setdefault((note.get("code"), note.get("text")), note)
    return list(kept.values())


def notes_section(found: list[dict], section_id: str = "notes") -> str:
    """Every note with its code, severity, axis and models; nothing when there are none."""
    if not found:
        return ""
    items = [_note_item(note) for note in found]
    return (f'<section id="{section_id}"><h2>Notes ({len(items)})</h2>'
            f'<ul class="notes">{"".join(items)}</ul></section>')


def _note_item(note: dict) -> str:
    severity = note.get("severity") or "warning"
    code = note.get("code")
    about = []
    if note.get("axis"):
        about.append(f"axis: {note['axis']}")
    models = list(note.get("models") or ())
    if models:
        shown = ", ".join(models[:12]) + (f" and {len(models) - 12} more" if len(models) > 12
                                          else "")
        about.append(f"models: {shown}")
    return (f'<li class="{"note" if severity == "note" else "warning"}"'
            + (f' data-code="{text(code)}"' if code else "") + ">"
            + f'<span class="badge">{text(severity)}</span>'
            + (f'<code class="code">{text(code)}</code>' if code else "")
            + text(note.get("text", ""))
            + (f'<span class="about">{text("; ".join(about))}</span>' if about else "")
            + "</li>")


def csv_link(header: list[str], rows: list[list], filename: str) -> str:
    """A download link holding the table as CSV in a ``data:`` URL (nulls empty; floats
    to :data:`PAGE_DIGITS` significant digits)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if v is None else page_numbers(v) for v in row] for row in rows])
    href = "data:text/csv;charset=utf-8," + quote(buffer.getvalue(), safe="")
    return (f'<a class="button" id="download-csv" download="{text(filename)}" '
            f'href="{text(href)}">Table (CSV)</a>')


def downloads(csv_html: str, stem: str) -> str:
    json_link = (f'<a class="button" id="download-json" download="{text(stem)}.json" '
                 'href="#">Full result (JSON)</a>')
    return f'<div class="downloads">{csv_html}{json_link}</div>'


@dataclass(frozen=True)
class Heading:
    """The top of a page: its title, the publisher's description (or None) and the lede
    (what the page holds, in one line)."""

    title: str
    description: str | None
    lede: str

    def html(self, actions: str) -> str:
        description = (f'<p class="description">{text(self.description)}</p>'
                       if self.description else "")
        return (f'<header class="top"><div><h1>{text(self.title)}</h1>{description}'
                f'<p class="lede">{text(self.lede)}</p></div>{actions}</header>')


def page(heading: Heading, actions: str, body: str, doc: dict, version: str) -> str:
    """The whole document: head with the policy, the ``heading`` with ``actions`` (the
    downloads), ``body``, the embedded JSON, the script."""
    style, script = _asset("page.css"), _asset("page.js")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" '
        f'content="{text(content_security_policy(script, style))}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="winrate {text(version)}">',
        '<link rel="icon" href="data:,">',
        f"<title>{text(heading.title)}</title>",
        f"<style>{style}</style>",
        "</head>",
        "<body>",
        "<main>",
        heading.html(actions),
        body,
        f'<footer>Made with winrate {text(version)} from a <code>'
        f'{text(doc.get("schema") or "winrate.leaderboard/1 by " + doc.get("by", "?"))}'
        "</code> document. Self-contained: this file loads nothing from the network.</footer>",
        "</main>",
        f'<script id="winrate-data" type="application/json">{script_json(doc)}</script>',
        f"<script>{script}</script>",
        "</body>",
        "</html>",
        "",
    ])


# --------------------------------------------------------------------------- charts


@dataclass(frozen=True)
class Scale:
    """Linear map of displayed values onto ``[_CHART_PAD, width - _CHART_PAD]``."""

    low: float
    high: float
    width: int = CHART_WIDTH

    @classmethod
    def spanning(cls, values, width: int = CHART_WIDTH, least: float = 1e-9) -> Scale:
        """Over every defined value, padded by 3% each side (as the PNG forest plot), and
        at least ``least`` wide (widened about its centre)."""
        finite = [v for v in values if defined(v)]
        low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
        widen = max(0.0, least - 1.06 * (high - low)) / 2
        pad = 0.03 * (high - low) + widen
        return cls(low - pad, high + pad, width)

    def x(self, value: float) -> float:
        return round(_CHART_PAD + (value - self.low) / (self.high - self.low)
                     * (self.width - 2 * _CHART_PAD), 1)

    def ticks(self) -> list[float]:
        return nice_ticks(self.low, self.high)

    def grid(self, height: int) -> str:
        path = "".join(f"M{self.x(t)} 0V{height}" for t in self.ticks())
        return f'<path class="grid" d="{path}"/>'

    def axis(self, decimals: int, signed: bool = False) -> str:
        """The header of a chart column: tick labels over the shared scale (with their sign,
        ``+20``, when ``signed``)."""
        labels = "".join(f'<text x="{self.x(t)}" y="12">{_tick_label(t, decimals, signed)}'
                         "</text>" for t in self.ticks())
        return (f'<svg class="axis" width="{self.width}" height="16" viewBox="0 0 '
                f'{self.width} 16" aria-hidden="true">{labels}</svg>')


def _tick_label(value: float, decimals: int, signed: bool) -> str:
    """A tick's label; signed ones as ``+20``, ``0``, ``\u221220`` (a true minus sign)."""
    if not signed:
        return f"{value:.{decimals}f}"
    return "0" if value == 0 else f"{value:+.{decimals}f}".replace("-", MINUS)


def _tick_decimals(scale: Scale) -> int:
    ticks = scale.ticks()
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    return max(0, -math.floor(math.log10(step))) if step < 1 else 0


def interval_chart(scale: Scale, bounds: list[tuple[str, object, object]], label: str,
                   reach: float) -> str:
    """One model's intervals as lines about its score (one per ``(css class, low, high)``,
    top to bottom, as offsets from the score) and the score as a dot at 0, on ``scale``;
    an end beyond ``reach`` is cut there and the line drawn dashed (class ``cut``)."""
    lines, step = [], CHART_HEIGHT / (len(bounds) + 1)
    for k, (cls, low, high) in enumerate(bounds, start=1):
        if defined(low) and defined(high):
            y = round(k * step, 1)
            cut = " cut" if low < -reach or high > reach else ""
            lines.append(f'<line class="{cls}{cut}" x1="{scale.x(max(low, -reach))}" '
                         f'x2="{scale.x(min(high, reach))}" y1="{y}" y2="{y}"/>')
    dot = f'<circle class="pt" cx="{scale.x(0.0)}" cy="{CHART_HEIGHT / 2:g}" r="2.6"/>'
    return (f'<svg class="iv" width="{scale.width}" height="{CHART_HEIGHT}" viewBox="0 0 '
            f'{scale.width} {CHART_HEIGHT}" role="img" aria-label="{text(label)}">'
            f"{scale.grid(CHART_HEIGHT)}{''.join(lines)}{dot}</svg>")


# --------------------------------------------------------------------------- leaderboard

CI_STYLES = ("brackets", "plusminus")


@dataclass(frozen=True)
class PageOptions:
    """How a page is presented (not what it says: that is the document's).

    ``title`` and ``description`` head the page; ``meta`` (a
    :class:`~winrate.report.models_meta.ModelsMeta`) adds each model's organisation,
    licence, link, other columns and badges; ``ci_style`` writes an interval as
    ``[low, high]`` (``"brackets"``) or as ``+up/-down`` about the score (``"plusminus"``,
    as LMArena prints its 95% CI)."""

    title: str | None = None
    description: str | None = None
    meta: object = None
    ci_style: str = "brackets"

    def __post_init__(self):
        if self.ci_style not in CI_STYLES:
            raise WinrateInputError(f"ci_style must be one of {', '.join(CI_STYLES)}, got "
                                    f"{self.ci_style!r}")


def plus_minus(score, low, high, unit: ScoreScale) -> str:
    """The interval as distances from the score, ``+up/-down`` on the shown scale (both
    rounded to the scale's decimals), as LMArena prints a 95% CI."""
    if not (defined(score) and defined(low) and defined(high)):
        return DASH
    up, down = unit.factor * (high - score), unit.factor * (score - low)
    return f"+{up:.{unit.decimals}f}/-{down:.{unit.decimals}f}"


def chart_reach(offsets: list[float]) -> float:
    """Half the width of the interval chart's axis (shown units): each model's farthest
    interval end from its score, the largest of them but at most twice their median, so
    that one model with few comparisons does not shrink every other interval to a speck
    (its interval is cut at the edge, dashed)."""
    finite = sorted(o for o in offsets if defined(o) and o > 0)
    if not finite:
        return 1.0
    return min(finite[-1], 2 * finite[len(finite) // 2])


def _farthest_end(doc: dict, bounds: list[tuple[list, list]], i: int, factor: float):
    """How far model i's farthest interval end lies from its score (shown units)."""
    score = doc["score"][i]
    ends = [factor * max(score - low[i], high[i] - score) for low, high in bounds
            if defined(score) and defined(low[i]) and defined(high[i])]
    return max(ends, default=None)


def _leaderboard_view(doc: dict, options: PageOptions) -> dict:
    """What the leaderboard section needs, computed once from ``doc``."""
    unit = ScoreScale.of(doc["settings"]["scale"])
    naive_low, naive_high = naive_bounds(doc)
    sim = doc.get("sim_low") is not None
    bounds = [(doc["ci_low"], doc["ci_high"]), (naive_low, naive_high)]
    bounds += [(doc["sim_low"], doc["sim_high"])] if sim else []
    reach = chart_reach([_farthest_end(doc, bounds, i, unit.factor)
                         for i in range(len(doc["models"]))])
    return {"unit": unit, "naive": (naive_low, naive_high), "sim": sim,
            "ranks": doc.get("rank_low") is not None,
            "gstar": any(defined(g) for g in doc["effective_clusters"]),
            "order": best_first(doc["score"]), "level": level_label(doc["settings"]["alpha"]),
            "reach": reach, "scale": Scale.spanning([-reach, reach], least=1e-9),
            "meta": options.meta, "ci_style": options.ci_style,
            "changes": changes_by_model(doc)}


def _interval_text(doc: dict, view: dict, i: int, low, high) -> str:
    if view["ci_style"] == "plusminus":
        return plus_minus(doc["score"][i], low, high, view["unit"])
    return interval(low, high, view["unit"])


def _chart_cell(doc: dict, view: dict, i: int) -> str:
    unit, score = view["unit"], doc["score"][i]

    def offset(v):
        return unit.factor * (v - score) if defined(v) and defined(score) else None

    bounds = []
    if view["sim"]:
        bounds.append(("sim", offset(doc["sim_low"][i]), offset(doc["sim_high"][i])))
    bounds.append(("clu", offset(doc["ci_low"][i]), offset(doc["ci_high"][i])))
    bounds.append(("nai", offset(view["naive"][0][i]), offset(view["naive"][1][i])))
    label = f"{doc['models'][i]}: score {score_text(unit, score)}"
    return f'<td class="chart">{interval_chart(view["scale"], bounds, label, view["reach"])}</td>'


def _meta_columns(view: dict) -> list[tuple[str, bool]]:
    """The metadata's shown columns, each with whether it is behind "more columns" (all
    but the organisation)."""
    meta = view["meta"]
    return [(c, c != "organisation") for c in (meta.columns if meta else ())]


def _leaderboard_header(doc: dict, view: dict) -> list[str]:
    level, unit = view["level"], view["unit"]
    plusminus = " (\u00b1)" if view["ci_style"] == "plusminus" else ""
    head = [th("#", "ascending", cls="sticky-1", key="rank"),
            th("model", "ascending", numeric=False, cls="sticky-2", key="model")]
    head += [th(c, "ascending", numeric=False, cls="wide", key=f"meta:{c}")
             for c, more in _meta_columns(view) if not more]
    head += [th(unit.plural.removesuffix("s"), "descending", sub=unit.label, key="score"),
             th(f"{level} CI", "descending", sub=f"clustered{plusminus}", key="ci"),
             f'<th class="chart" scope="col" data-key="chart">'
             f'{view["scale"].axis(_tick_decimals(view["scale"]), signed=True)}'
             f'<span class="sub">{text(unit.points)} from the score</span></th>']
    if view["sim"]:
        head.append(th(f"{level} simult.", "descending", sub=f"all models jointly{plusminus}",
                       key="sim"))
    if view["ranks"]:
        head.append(th("rank set", "ascending", sub=doc.get("rank_method") or "",
                       key="rank_set"))
    if view["changes"] is not None:
        head.append(th("change", "descending", sub=f"since the last release, "
                       f"{level} simult.", key="change"))
    head.append(th("comparisons", "descending", sub="n", key="n"))
    head += [th(c, "ascending", numeric=False, cls="more l", key=f"meta:{c}")
             for c, more in _meta_columns(view) if more]
    head += [th(f"{level} naive", "descending", sub=f"rows independent{plusminus}", cls="more",
                key="naive"),
             th("SE", "ascending", sub="clustered", cls="more", key="se"),
             th("infl.", "descending", sub="SE / naive", cls="more", key="inflation")]
    if view["gstar"]:
        head.append(th("G*", "ascending", sub="eff. clusters", cls="more", key="gstar"))
    return head


def _meta_cells(view: dict, model: str, behind: bool) -> list[str]:
    """The model's metadata cells: those behind "more columns", or the others (shown on
    wide screens only: a phone shows the organisation under the name)."""
    values = view["meta"].values.get(model, {}) if view["meta"] else {}
    cls = "l more" if behind else "l wide"
    return [td(values.get(c, ""), values.get(c), cls) for c, more in _meta_columns(view)
            if more == behind]


def _leaderboard_row(doc: dict, view: dict, rank: int, i: int) -> str:
    unit, model, meta = view["unit"], doc["models"][i], view["meta"]
    lows, highs = view["naive"]
    k = len(doc["models"])
    cells = [td(str(rank), rank, "num sticky-1"),
             model_cell(model, meta.urls.get(model) if meta else None,
                        meta.flags.get(model, ()) if meta else (),
                        meta.values.get(model, {}).get("organisation", "") if meta else ""),
             *_meta_cells(view, model, False),
             td(score_text(unit, doc["score"][i]), doc["score"][i]),
             td(_interval_text(doc, view, i, doc["ci_low"][i], doc["ci_high"][i]),
                doc["ci_low"][i], "ci"),
             _chart_cell(doc, view, i)]
    if view["sim"]:
        cells.append(td(_interval_text(doc, view, i, doc["sim_low"][i], doc["sim_high"][i]),
                        doc["sim_low"][i], "ci"))
    if view["ranks"]:
        low, high = doc["rank_low"][i], doc["rank_high"][i]
        shown = f"{low}\u2013{high}" if defined(low) else DASH
        cells.append(td(shown, low * (k + 1) + high if defined(low) else None))
    if view["changes"] is not None:
        cells.append(change_cell(view["changes"].get(model), unit))
    cells += [td(count(doc["n"][i]), doc["n"][i]), *_meta_cells(view, model, True),
              td(_interval_text(doc, view, i, lows[i], highs[i]), lows[i], "ci more"),
              td(score_text(unit, doc["se"][i]), doc["se"][i], "num more"),
              td(number(doc["inflation"][i]), doc["inflation"][i], "num more")]
    if view["gstar"]:
        g = doc["effective_clusters"][i]
        cells.append(td(number(g, 1), g, "num more"))
    search = meta.search_text(model) if meta else model.lower()
    return (f'<tr data-i="{rank - 1}" data-m="{i}" data-search="{text(search)}">'
            + "".join(cells) + "</tr>")


def leaderboard_csv(doc: dict, view: dict) -> tuple[list[str], list[list]]:
    """The table as CSV, on the JSON's own scale (win probabilities in [0, 1] or Elo), then
    the model metadata when the page has it (its columns, ``url``, ``flags`` joined by
    ``;``)."""
    keys = ["score", "se_naive", "se", "ci_low", "ci_high"]
    keys += ["sim_low", "sim_high"] if view["sim"] else []
    keys += ["rank_low", "rank_high"] if view["ranks"] else []
    keys += ["inflation", "effective_clusters", "n"]
    meta = view["meta"]
    header = ["rank", "model", *keys[:5], "naive_low", "naive_high", *keys[5:],
              *((*meta.columns, "url", "flags") if meta else ())]
    changes = view["changes"]
    header += list(CHANGE_CSV) if changes is not None else []
    rows = [[rank, doc["models"][i], *(doc[k][i] for k in keys[:5]), view["naive"][0][i],
             view["naive"][1][i], *(doc[k][i] for k in keys[5:]),
             *(_meta_values(meta, doc["models"][i]) if meta else ()),
             *(_change_values(changes.get(doc["models"][i])) if changes is not None else ())]
            for rank, i in enumerate(view["order"], start=1)]
    return header, rows


def _meta_values(meta, model: str) -> list[str]:
    """``model``'s metadata in the CSV's order (empty where it has none)."""
    values = meta.values.get(model, {})
    return [*(values.get(c, "") for c in meta.columns), meta.urls.get(model, ""),
            ";".join(meta.flags.get(model, ()))]


def _legend(view: dict) -> str:
    level = view["level"]
    sim = (f'<span><i class="swatch sim"></i>{level} simultaneous (all models jointly)</span>'
           if view["sim"] else "")
    return (f'<div class="legend">{sim}<span><i class="swatch clu"></i>{level} clustered</span>'
            f'<span><i class="swatch nai"></i>{level} naive (rows independent)</span>'
            f'<span><svg width="10" height="10" aria-hidden="true"><circle class="pt" cx="5" '
            f'cy="5" r="3"/></svg>score</span>'
            f'<span><i class="swatch cut"></i>cut at the chart\'s edge</span></div>')


def _tools(doc: dict, suffix: str = "") -> str:
    """The search box, the "more columns" switch and the count of shown rows (their ids
    end in ``suffix``, one set per board)."""
    k = len(doc["models"])
    return ('<div class="tools"><label class="search"><span class="visually-hidden">'
            f'Search models</span><input type="search" id="search{suffix}" placeholder="'
            'Search models, organisations, licences\u2026" autocomplete="off"></label>'
            f'<button type="button" id="more-columns{suffix}" class="button more-columns" '
            'aria-pressed="false">More columns</button>'
            f'<span id="shown-count{suffix}" class="muted small shown-count" '
            f'aria-live="polite">{k:,} of {k:,} models</span></div>')


def scale_text(doc: dict) -> str:
    """What the scores are, as a sentence: the estimator's description, which names the
    scale and its anchor (a mean rating of 1000, or a model fixed at a stated rating) and
    a baseline (the reference, not ranked)."""
    words = estimator_text(doc)
    return f"{words[:1].upper()}{words[1:]}." if words else ""


def leaderboard_section(doc: dict, view: dict, suffix: str = "") -> str:
    """The table with its tools, legend and explanation (ids end in ``suffix``)."""
    head = _leaderboard_header(doc, view)
    rows = [_leaderboard_row(doc, view, rank, i)
            for rank, i in enumerate(view["order"], start=1)]
    explain = (f"Intervals at the {view['level']} level: the naive one "
               "treats every comparison as independent, the clustered one does not. The "
               "chart draws each model's intervals about its score, all rows on one scale. "
               "Click a column header to sort; again to reverse.")
    return (f'<section id="board{suffix}" class="board"><h2>Leaderboard</h2>'
            + _tools(doc, suffix) + table(f"leaderboard{suffix}", head, rows, tall=True)
            + f'<p class="muted small">{text(explain)}</p>{_legend(view)}</section>')


def _adjustments(doc: dict) -> list[tuple[str, str]]:
    """The multiplicity adjustments the document has p-values for: max-T first."""
    first = doc["pairwise"][0]
    options = [("p_max_t", "max-T (single step)"), ("p_holm", "Holm")]
    return [(key, label) for key, label in options if first.get(key) is not None]


def indistinguishable(doc: dict, key: str) -> dict[str, list[str]]:
    """Per model, the models it cannot be told apart from: pairs whose ``key`` p-value is
    not below alpha (pairs with no p-value are left out)."""
    alpha = doc["settings"]["alpha"]
    found = {m: [] for m in doc["models"]}
    for pair in doc["pairwise"]:
        p = pair.get(key)
        if defined(p) and p >= alpha and pair["model_i"] in found and pair["model_j"] in found:
            found[pair["model_i"]].append(pair["model_j"])
            found[pair["model_j"]].append(pair["model_i"])
    return found


def tied_list(doc: dict, view: dict) -> str:
    """Per model in rank order, the models it is not distinguishable from (the first
    adjustment's p-values), named: the matrix as a list a reader can search."""
    key, label = _adjustments(doc)[0]
    rank = {doc["models"][i]: r for r, i in enumerate(view["order"], start=1)}
    tied = indistinguishable(doc, key)
    items = []
    for i in view["order"]:
        model = doc["models"][i]
        others = sorted(tied[model], key=rank.__getitem__)
        shown = ", ".join(f"#{rank[m]} {m}" for m in others) or "every other model differs"
        items.append(f"<li><b>#{rank[model]} {text(model)}</b>: {text(shown)}</li>")
    return (f'<details class="tied"{" open" if len(items) <= 12 else ""}><summary>Not '
            f"distinguishable from ({text(label)}), per model</summary>"
            f'<ul class="tied">{"".join(items)}</ul></details>')


def pairwise_section(doc: dict, view: dict) -> str:
    """The "which differences are real" matrix: drawn by the page's script from the
    embedded ``pairwise`` list, rows and columns in rank order; and the same as a list."""
    if not doc.get("pairwise"):
        return ""
    options = _adjustments(doc)
    radios = "".join(f'<label><input type="radio" name="adjust" value="{key}"'
                     f'{" checked" if n == 0 else ""}> {text(label)}</label>'
                     for n, (key, label) in enumerate(options))
    unit = view["unit"]
    alpha = doc["settings"]["alpha"]
    return (
        '<section id="pairwise"><h2>Which differences are real</h2>'
        f'<p class="muted small">Each cell compares the row model with the column model, both '
        f"in rank order: point at (or tap) a cell for both model names and the numbers; "
        f"the list below names, per model, the models it cannot be told apart from. A pair "
        f"is a real difference when its p-value, "
        f"adjusted for testing all {len(doc['pairwise']):,} pairs, is below {alpha:g}.</p>"
        f'<div class="controls"><span>adjustment:</span>{radios}</div>'
        '<div class="legend"><span><i class="box ahead"></i>row model ahead</span>'
        '<span><i class="box behind"></i>row model behind</span>'
        '<span><i class="box same"></i>not distinguishable</span></div>'
        '<p id="pair-summary"></p>'
        '<p id="pair-readout" class="muted" aria-live="polite"></p>'
        f'<div class="matrix-wrap"><canvas id="pair-matrix" width="0" height="0" '
        f'data-unit="{text(unit.points)}" data-factor="{unit.factor:g}" '
        f'data-decimals="{unit.decimals}" aria-label="pairwise significance matrix">'
        "</canvas></div>" + tied_list(doc, view)
        + "<noscript><p>The matrix needs JavaScript; the list above and the JSON download "
        "have every pair.</p></noscript></section>")


def estimator_text(doc: dict) -> str:
    """The estimator in words: the document's own description (written by the estimator,
    :meth:`winrate.estimators.base.Estimator.describe`)."""
    return doc.get("estimator_description") or str(doc["settings"].get("estimator", ""))


def _reference_text(settings: dict) -> str:
    df = settings.get("df")
    if isinstance(df, list):
        finite = sorted(d for d in df if defined(d))
        median = finite[len(finite) // 2] if finite else None
        return f"t with per-model degrees of freedom (Pan-Wall; median {number(median, 1)})"
    return f"t({df:g})" if defined(df) else (settings.get("reference") or "normal")


def method_section(doc: dict) -> str:
    s = doc["settings"]
    items = [("estimator", estimator_text(doc)),
             ("clustering", " + ".join(s.get("cluster") or ["none"])),
             ("variance method", f"{doc.get('method') or DASH} (requested: {s.get('method')})"),
             ("why", doc.get("method_note") or DASH),
             ("small-sample correction", str(s.get("correction"))),
             ("reference distribution", _reference_text(s)),
             ("level", f"{level_label(s['alpha'])} (alpha = {s['alpha']:g})")]
    if doc.get("simultaneous_critical_value") is not None:
        items.append(("simultaneous critical value",
                      f"{doc['simultaneous_critical_value']:.3f}" + _monte_carlo(doc)))
    if doc.get("rank_method"):
        items.append(("rank sets", f"{doc['rank_method']} (Mogstad et al. 2024; 1 = best)"))
    if "bootstrap" in str(doc.get("method")):
        items.append(("bootstrap replicates", count(s.get("bootstrap_reps"))))
    items.append(("seed", str(s.get("seed"))))
    return f'<section id="method"><h2>Method</h2>{key_values(items)}</section>'


def _monte_carlo(doc: dict) -> str:
    part = (doc.get("monte_carlo") or {}).get("simultaneous")
    if not part:
        return ""
    return f" (Monte-Carlo SE {part['mc_se']:.4f} from {part['n_draws']:,} draws)"


def _axis_rows(doc: dict) -> list[list[str]]:
    rows = []
    for name, axis in doc["axes"].items():
        gstar = sorted(g for g in axis.get("effective_clusters") or () if defined(g))
        rows.append([name, count(axis["n_clusters"]), number(axis["mean_cluster_size"], 1),
                     number(axis["icc"], 3), count(axis["single_cluster_pairs"]),
                     number(gstar[len(gstar) // 2], 1) if gstar else DASH])
    return rows


def data_section(doc: dict) -> str:
    k = len(doc["models"])
    parts = [key_values([
        ("comparisons", count(doc["n_comparisons"])), ("rows", count(doc["n_rows"])),
        ("models", f"{k:,}"),
        ("pairs never compared", f"{len(doc.get('unobserved_pairs') or ()):,} of "
                                 f"{k * (k - 1) // 2:,}"),
    ])]
    if doc["axes"]:
        parts.append("<h3>Clusters per axis</h3>" + plain_table(
            ["axis", "clusters", "mean size", "pair ICC", "single-cluster pairs",
             "median G*"], _axis_rows(doc)))
    else:
        parts.append('<p class="muted">Unclustered: every comparison is treated as an '
                     "independent unit, so G* is not defined.</p>")
    if doc.get("not_estimable"):
        parts.append("<h3>Not estimable</h3>" + key_values(list(doc["not_estimable"].items())))
    return '<section id="data"><h2>Data</h2>' + "".join(parts) + "</section>"


def coefficients_section(doc: dict) -> str:
    coef = doc.get("coefficients")
    if not coef:
        return ""
    level = level_label(doc["settings"]["alpha"])
    rows = [[name, number(coef["estimate"][i], 4), number(coef["se_naive"][i], 4),
             number(coef["se"][i], 4),
             f"[{number(coef['ci_low'][i], 4)}, {number(coef['ci_high'][i], 4)}]"]
            for i, name in enumerate(coef["names"])]
    return ('<section id="coefficients"><h2>Coefficients</h2>'
            + plain_table(["coefficient", "estimate", "SE naive", "SE", f"{level} CI"], rows)
            + "</section>")


def _clustering_text(settings: dict) -> str:
    axes = [a for a in settings.get("cluster") or () if a != "none"]
    return f"clustered by {' + '.join(axes)}" if axes else "unclustered (rows independent)"


def _leaderboard_facts(doc: dict) -> str:
    s = doc["settings"]
    axes = doc["axes"]
    clusters = " \u00d7 ".join(f"{a['n_clusters']:,}" for a in axes.values())
    return facts([
        ("models ranked", f"{len(doc['models']):,}", ""),
        ("comparisons", count(doc["n_comparisons"]), f"{count(doc['n_rows'])} rows"),
        ("clusters", clusters or "none", " + ".join(axes) or "rows independent"),
        ("variance", str(doc.get("method") or DASH), f"{s.get('correction')}, "
                                                     f"{_reference_text(s)}"),
    ])


def notes_line(notes: list[dict], target: str = "notes") -> str:
    """One line above the table: how many notes and warnings there are, by code, and a
    link to them (the notes themselves, section ``target``, follow the table)."""
    if not notes:
        return ""
    warned = sum((n.get("severity") or "warning") == "warning" for n in notes)
    codes = ", ".join(dict.fromkeys(n["code"] for n in notes if n.get("code")))
    counted = f"{len(notes)} note{'s' if len(notes) != 1 else ''}" + (
        f" ({warned} warning{'s' if warned != 1 else ''})" if warned else "")
    return (f'<p class="notes-line{" warned" if warned else ""}"><a href="#{target}">'
            f"{text(counted)}</a>" + (f": {text(codes)}" if codes else "") + "</p>")


def page_notes(doc: dict, options: PageOptions) -> list[dict]:
    """The document's notes (or its bare warnings), then the page's own: models in the
    metadata that the leaderboard does not hold (also handed to :func:`winrate.notes.emit`,
    so the command line prints it)."""
    found = doc_notes(doc)
    unknown = options.meta.unknown(doc["models"]) if options.meta else []
    if unknown:
        note = notes.unknown_meta_models(options.meta.source, unknown)
        notes.emit(note)
        found = [*found, note.to_dict()]
    return found


# --------------------------------------------------------------------------- builders' parts
# The parts a leaderboard document carries when ``winrate judges``, ``plan`` or ``diff``
# write the page (:data:`BUILDER_PARTS`): each is that application's own JSON document.

#: The CSV download's columns of the changes since the last release.
CHANGE_CSV = ("change", "change_se", "change_sim_low", "change_sim_high", "change_real")
_LEVERS = ("prompts", "judges", "comparisons", "prompts and judges")


def changes_by_model(doc: dict) -> dict | None:
    """Per model, its entry of the document's ``changes`` (the diff's ``changes`` records:
    ``change``, ``se``, ``sim_low``, ``sim_high``, ``real``, ...), ``{"added": True}`` for a
    model new in this release; None without ``changes``."""
    part = doc.get("changes")
    if not isinstance(part, dict):
        return None
    found = {str(entry["model"]): entry for entry in part.get("changes") or ()}
    found.update({str(model): {"added": True} for model in part.get("added") or ()})
    return found


def signed(unit: ScoreScale, value) -> str:
    """A difference of scores on the shown scale, with its sign: ``+17.8``, ``-3.2``."""
    return f"{unit.factor * value:+.{unit.decimals}f}" if defined(value) else DASH


def signed_interval(low, high, unit: ScoreScale) -> str:
    if not (defined(low) and defined(high)):
        return DASH
    return f"[{signed(unit, low)}, {signed(unit, high)}]"


def change_cell(entry: dict | None, unit: ScoreScale) -> str:
    """A model's change since the last release with its simultaneous interval, and a
    ``real`` badge when that interval excludes 0; ``new`` for a model added in this
    release, a dash for one the diff does not hold. Sorts by the change."""
    if entry is None or entry.get("added"):
        return td("new" if entry else DASH, None, "ci")
    value = entry.get("change")
    bounds = signed_interval(entry.get("sim_low"), entry.get("sim_high"), unit)
    shown = f"{signed(unit, value)} {bounds}"
    badge = '<span class="flag" data-flag="real">real</span>' if entry.get("real") else ""
    key = repr(page_number(float(value))) if defined(value) else ""
    return f'<td class="ci" data-v="{text(key)}">{text(shown)}{badge}</td>'


def _change_values(entry: dict | None) -> list:
    """A model's change in the CSV's columns (:data:`CHANGE_CSV`), empty where it has none."""
    if entry is None or entry.get("added"):
        return [None] * len(CHANGE_CSV)
    return [entry.get("change"), entry.get("se"), entry.get("sim_low"), entry.get("sim_high"),
            bool(entry.get("real"))]


def changes_section(doc: dict, view: dict) -> str:
    """What the releases share, which models' changes are real and which order swaps are
    (the diff's document under ``changes``); nothing without it."""
    part = doc.get("changes")
    if not isinstance(part, dict):
        return ""
    unit, level = view["unit"], level_label(part["alpha"])
    changes = part.get("changes") or []
    real = [str(c["model"]) for c in changes if c.get("real")]
    shared = ", ".join(f"{n:,} {axis}s" for axis, n in (part.get("shared_clusters") or {}).items())
    items = [("rows", f"old release {count(part['rows']['old'])}, new release "
                      f"{count(part['rows']['new'])}, shared {count(part['shared_rows'])}"),
             ("shared clusters", shared or DASH),
             ("added models", ", ".join(part.get("added") or ()) or "none"),
             ("removed models", ", ".join(part.get("removed") or ()) or "none")]
    lede = (f"The change column shows each model's change of score since the last release "
            f"with its {level} simultaneous interval (all changes jointly), from the "
            "covariance of both releases' fits on the rows they share; on the Elo scale both "
            "releases are centred on the models they share. Real changes: "
            + (", ".join(real) if real else "none") + ".")
    return ('<section id="changes"><h2>Changes since the last release</h2>'
            f'<p class="muted small">{text(lede)}</p>{key_values(items)}'
            + _swaps_html(part.get("rank_changes") or [], unit, level) + "</section>")


def _swaps_html(swaps: list[dict], unit: ScoreScale, level: str) -> str:
    if not swaps:
        return "<p>No two shared models changed order.</p>"
    rows = [[s["above_now"], s["below_now"], signed(unit, s["gap_change"]),
             signed_interval(s["sim_low"], s["sim_high"], unit),
             "real" if s["real"] else "not shown"] for s in swaps]
    return ("<h3>Order swaps</h3>" + plain_table(
        ["above now", "below now", f"gap change ({unit.points})",
         f"{level} simult. (over the swaps)", "swap"], rows, left=2))


def judges_section(doc: dict) -> str:
    """The judge audit (the document's ``judges``): position bias, self-preference, order
    consistency, tie propensity, agreement and the boards with and without each
    adjustment; nothing without it."""
    part = doc.get("judges")
    if not isinstance(part, dict):
        return ""
    level = level_label(part["alpha"])
    clustering = " + ".join(part.get("clustering") or ["none"])
    parts = ["<h3>Position bias: the first-shown answer's advantage</h3>"
             + _effects_table(part["position_bias"], "P(first wins)", level)]
    if part.get("self_preference"):
        parts.append("<h3>Self-preference: a judge's advantage to its own family's answers"
                     "</h3>" + _effects_table(part["self_preference"], "P(own wins)", level))
    parts += [_order_html(part.get("order_consistency"), level),
              "<h3>Tie propensity</h3>" + _shares_table(part["tie_propensity"], "ties", level),
              _agreement_html(part.get("agreement"), level), _boards_html(part)]
    lede = (f"Effects are Bradley-Terry covariates clustered by {clustering}, with {level} "
            "intervals; shares are clustered by prompt.")
    return ('<section id="judges"><h2>Judge audit</h2><p class="muted small">'
            f"{text(lede)}</p>" + "".join(parts) + "</section>")


def _effects_table(effects: list[dict], probability: str, level: str) -> str:
    rows = [[e["judge"], f"{e['logit']:+.3f}", f"{e['se']:.3f}",
             f"{e['elo']:+.1f} [{e['elo_low']:+.1f}, {e['elo_high']:+.1f}]",
             f"{e['probability']:.3f} [{e['probability_low']:.3f}, "
             f"{e['probability_high']:.3f}]"] for e in effects]
    return plain_table(["judge", "logit", "SE", f"Elo [{level} CI]",
                        f"{probability} [{level} CI]"], rows)


def _share_cells(share: dict) -> list[str]:
    return [f"{100 * share['estimate']:.1f}%",
            f"[{100 * share['ci_low']:.1f}%, {100 * share['ci_high']:.1f}%]",
            f"{100 * share['se']:.1f}%", count(share["n"]),
            f"{share['clusters']:,} {share.get('cluster_unit') or 'prompts'}"]


def _shares_table(shares: dict, what: str, level: str) -> str:
    return plain_table(["judge", f"share of {what}", f"{level} CI", "SE", "n", "clusters"],
                       [[judge, *_share_cells(share)] for judge, share in shares.items()])


def _order_html(order: dict | None, level: str) -> str:
    if order is None:
        return ("<h3>Order consistency</h3><p>No model pair is judged in both orders on one "
                "prompt by one judge.</p>")
    lede = (f"{order['pairs']:,} verdict pairs judged in both orders "
            f"({order['unmatched_rows']:,} comparisons in one order only); a flip is a "
            "verdict that changes when the answers swap places.")
    shares = {"all": order["flip_rate"], **(order.get("per_judge") or {})}
    return (f"<h3>Order consistency</h3><p>{text(lede)}</p>"
            + _shares_table(shares, "flips", level))


def _agreement_html(agreement: dict | None, level: str) -> str:
    if not agreement:
        return ""
    shown = (f"Krippendorff's alpha ({agreement['metric']} metric) "
             f"{agreement['krippendorff_alpha']:.3f} [{agreement['ci_low']:.3f}, "
             f"{agreement['ci_high']:.3f}] ({level} prompt-cluster bootstrap, "
             f"{agreement['reps']:,} draws; {agreement['units']:,} items judged by 2+ judges, "
             f"{agreement['values']:,} verdicts)")
    return f"<h3>Agreement between judges</h3><p>{text(shown)}</p>"


def _boards_html(part: dict) -> str:
    """The Bradley-Terry ratings of every board side by side (models best first as
    judged) and the models whose rank sets each adjustment changes."""
    boards = part["boards"]
    judged = boards["as_judged"]
    order = sorted(judged, key=lambda m: -judged[m]["rating"] if defined(judged[m]["rating"])
                   else math.inf)
    rows = [[model, *(number(board.get(model, {}).get("rating"), 1)
                      for board in boards.values())] for model in order]
    changed = [f"{name.replace('_', ' ')}: " + (", ".join(
        f"{m['model']} {_rank_text(m['before'])} -> {_rank_text(m['after'])}" for m in moved)
        or "no rank set changes") for name, moved in (part.get("rank_changes") or {}).items()]
    return ("<h3>Bradley-Terry ratings (Elo) as judged and adjusted</h3>"
            + plain_table(["model", *(name.replace("_", " ") for name in boards)], rows)
            + "".join(f"<p>{text(line)}</p>" for line in changed))


def _rank_text(bounds: list[int]) -> str:
    return f"[{bounds[0]}]" if bounds[0] == bounds[1] else f"[{bounds[0]}, {bounds[1]}]"


def plan_section(doc: dict, view: dict) -> str:
    """The plan (the document's ``plan``): per contrast, what each lever alone needs for
    the power asked, and the projected widths and rank-set sizes; nothing without it."""
    part = doc.get("plan")
    if not isinstance(part, dict):
        return ""
    unit, pilot = view["unit"], part["pilot"]
    sizes = ", ".join(f"{count(n)} {k if k == 'comparisons' else k + 's'}"
                      for k, n in pilot.items())
    lede = (f"Pilot: {sizes}. Needed for {100 * part['power']:g}% power at level "
            f"{part['alpha']:g}" + (" (simultaneous over the contrasts)" if part["simultaneous"]
                                    else "") + ", each lever alone (the total count; "
            "unreachable: that lever alone cannot reach the power).")
    rows = [[r["contrast"], signed(unit, r["effect"]), score_text(unit, r["se_now"]),
             f"{100 * r['power_now']:.0f}%", *(_needed_text(r, lever, pilot)
                                              for lever in _LEVERS)]
            for r in part["requirements"]]
    projected = [[f"{p['prompts_multiplier']:g}x" + (" (pilot)" if p["prompts_multiplier"] == 1
                                                      else ""),
                  score_text(unit, p["mean_width"]), number(p["mean_rank_set_size"], 1)]
                 for p in part["projection"]]
    return ('<section id="plan"><h2>Plan: how much more data</h2>'
            f"<p>{text(lede)}</p>"
            + plain_table(["contrast", f"effect ({unit.points})", f"SE now ({unit.points})",
                           "power now", *_LEVERS], rows)
            + "<h3>Projected at more prompts (same judges and design)</h3>"
            + plain_table(["prompts", f"mean interval width ({unit.points})",
                           "mean rank-set size"], projected) + "</section>")


def _needed_text(requirement: dict, lever: str, pilot: dict) -> str:
    """What ``lever`` alone needs: a count, ``unreachable`` (null for a lever the pilot
    has), or a dash for a lever its clustering has not (no prompt or judge axis)."""
    axis = {"prompts": "prompt", "judges": "judge", "prompts and judges": "prompt"}.get(lever)
    value = (requirement.get("needed") or {}).get(lever)
    if axis is not None and axis not in pilot:
        return DASH
    return count(value) if defined(value) else "unreachable"


def leaderboard_page(doc: dict, version: str, options: PageOptions) -> str:
    """The page of a ``winrate.leaderboard/1`` document (module docstring): the header,
    the table first (so a phone's first screen holds its first rows), then the headline
    numbers, the notes, the pairwise differences, the method and the data."""
    view = _leaderboard_view(doc, options)
    title = options.title or "Leaderboard"
    s = doc["settings"]
    lede = " ".join(part for part in (
        f"{len(doc['models']):,} models ranked, {count(doc['n_comparisons'])} comparisons, "
        f"{view['level']} intervals {_clustering_text(s)}.", scale_text(doc)) if part)
    stem = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "winrate"
    header, rows = leaderboard_csv(doc, view)
    actions = downloads(csv_link(header, rows, f"{stem}.csv"), stem)
    found = page_notes(doc, options)
    body = (notes_line(found) + leaderboard_section(doc, view) + _leaderboard_facts(doc)
            + changes_section(doc, view) + judges_section(doc) + plan_section(doc, view)
            + notes_section(found) + pairwise_section(doc, view)
            + method_section(doc) + coefficients_section(doc) + data_section(doc))
    return page(Heading(title, options.description, lede), actions, body, doc, version)


# --------------------------------------------------------------------------- by category


def is_by_category(doc) -> bool:
    """A document of one leaderboard per category: ``by`` (the column), ``categories``
    (each a ``winrate.leaderboard/1`` document under its value) and ``thin``
    (:func:`winrate.by_category.boards_to_dict`)."""
    return (isinstance(doc, dict) and "schema" not in doc and isinstance(doc.get("by"), str)
            and isinstance(doc.get("categories"), dict))


def _category_panel(k: int, label: str, board: dict, options: PageOptions) -> str:
    """Category ``label``'s board: its notes line, table, "not distinguishable" list and
    notes (ids end in ``-k``); hidden but for the first."""
    view = _leaderboard_view(board, options)
    found = page_notes(board, options)
    tied = tied_list(board, view) if board.get("pairwise") else ""
    lede = (f"{len(board['models']):,} models ranked, {count(board['n_comparisons'])} "
            f"comparisons, {view['level']} intervals {_clustering_text(board['settings'])}.")
    return (f'<div class="panel" role="tabpanel" id="panel-{k}" aria-labelledby="tab-{k}"'
            f'{" hidden" if k else ""}><p class="muted">{text(lede)}</p>'
            + notes_line(found, f"notes-{k}") + leaderboard_section(board, view, f"-{k}")
            + tied + notes_section(found, f"notes-{k}") + "</div>")


def _tab(k: int, label: str, board: dict) -> str:
    return (f'<button type="button" role="tab" id="tab-{k}" aria-controls="panel-{k}" '
            f'aria-selected="{"true" if k == 0 else "false"}">{text(label)}'
            f'<span class="n">{len(board["models"]):,}</span></button>')


def _family_text(family: dict | None) -> str:
    """What the family intervals of the JSON (``family_low``, ``family_high``) are, if
    any: joint over every category (max-|T| of the joint covariance) or the boards'
    combined by Sidak or Bonferroni."""
    if not family:
        return ""
    how = ("estimated jointly (max-|T| over the joint covariance of every category)"
           if family.get("rule") == "joint" else f"combined by {family.get('rule')}")
    return (f" The family intervals in the JSON cover every score of every category at "
            f"once at {1 - family['alpha']:.0%}, {how}.")


def categories_page(doc: dict, version: str, options: PageOptions) -> str:
    """The page of one leaderboard per category (:func:`is_by_category`): a tab per
    category, each with its own table, search box and notes; the method as the first
    category's (every category is analysed the same way)."""
    boards = doc["categories"]
    title = options.title or f"Leaderboard by {doc['by']}"
    thin = "; ".join(f"{label}: {why}" for label, why in (doc.get("thin") or {}).items())
    lede = (f"{len(boards):,} categories of {doc['by']}, each analysed on its own "
            "comparisons: an interval covers at its level within its category, not jointly "
            "over the categories." + _family_text(doc.get("family"))
            + (f" No board for {thin}." if thin else ""))
    if not boards:
        body = '<p class="muted">No category has a board.</p>'
    else:
        first = next(iter(boards.values()))
        body = ('<div class="tabs" role="tablist" aria-label="categories">'
                + "".join(_tab(k, label, board) for k, (label, board)
                          in enumerate(boards.items())) + "</div>"
                + "".join(_category_panel(k, label, board, options) for k, (label, board)
                          in enumerate(boards.items()))
                + method_section(first))
    stem = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "winrate"
    return page(Heading(title, options.description, lede), downloads("", stem), body, doc,
                version)


# --------------------------------------------------------------------------- eda


def _eda_view(doc: dict) -> dict:
    shown = {name: c for name, c in doc["clusterings"].items() if c["identified"]}
    inflations = [v for c in shown.values() for v in c["inflation"] if defined(v)]
    scale = Scale.spanning([1.0, *inflations], least=0.5) if inflations else None
    return {"unit": ScoreScale.of(doc["scale"]), "shown": shown, "scale": scale,
            "order": best_first(doc["score"])}


def _eda_columns(doc: dict, view: dict) -> list[tuple[str, str, str, object]]:
    """(header, sub, first sort, value of model i) of the per-model table's numeric columns."""
    unit = view["unit"]
    cols = [("score", unit.label, "descending",
             lambda i: (score_text(unit, doc["score"][i]), doc["score"][i])),
            ("SE naive", "rows independent", "ascending",
             lambda i: (score_text(unit, doc["se_naive"][i]), doc["se_naive"][i]))]
    for name, c in view["shown"].items():
        cols.append((f"SE {name}", "clustered", "ascending",
                     lambda i, c=c: (score_text(unit, c["se"][i]), c["se"][i])))
    for name, c in view["shown"].items():
        cols.append((f"\u00d7 {name}", "inflation", "descending",
                     lambda i, c=c: (number(c["inflation"][i]), c["inflation"][i])))
    for name, a in doc["axes"].items():
        cols.append((f"G* {name}", "eff. clusters", "ascending",
                     lambda i, a=a: (number(a["effective_clusters"][i], 1),
                                     a["effective_clusters"][i])))
    main = doc["summary"]["main"]
    if main:
        eff = doc["clusterings"][main]["effective_n"]
        cols.append(("eff. n", f"n / DEFF ({main})", "descending",
                     lambda i: (count(round(eff[i])) if defined(eff[i]) else DASH, eff[i])))
    cols.append(("n", "comparisons", "descending", lambda i: (count(doc["n"][i]), doc["n"][i])))
    if doc.get("prompts") is not None:
        cols.append(("prompts", "", "descending",
                     lambda i: (count(doc["prompts"][i]), doc["prompts"][i])))
    return cols


def _inflation_chart(doc: dict, view: dict, i: int) -> str:
    """Model i's SE inflation under each identified clustering, one coloured dot each."""
    scale = view["scale"]
    dots = "".join(
        f'<circle cx="{scale.x(c["inflation"][i])}" cy="{CHART_HEIGHT / 2:g}" r="3.5" '
        f'fill="{_PALETTE[k % len(_PALETTE)]}" fill-opacity="0.85"/>'
        for k, c in enumerate(view["shown"].values()) if defined(c["inflation"][i]))
    return (f'<td class="chart"><svg class="iv" width="{scale.width}" height="{CHART_HEIGHT}" '
            f'viewBox="0 0 {scale.width} {CHART_HEIGHT}" role="img" '
            f'aria-label="{text(doc["models"][i])}: SE inflation">'
            f"{scale.grid(CHART_HEIGHT)}{dots}</svg></td>")


def eda_table(doc: dict, view: dict) -> str:
    cols = _eda_columns(doc, view)
    head = [th("#", "ascending", cls="sticky-1"),
            th("model", "ascending", numeric=False, cls="sticky-2"),
            *(th(label, first, sub=sub) for label, sub, first, _ in cols[:1])]
    if view["scale"]:
        axis = view["scale"].axis(_tick_decimals(view["scale"]))
        head.append(f'<th class="chart" scope="col">{axis}</th>')
    head += [th(label, first, sub=sub) for label, sub, first, _ in cols[1:]]
    rows = []
    for rank, i in enumerate(view["order"], start=1):
        cells = [td(str(rank), rank, "num sticky-1"),
                 model_cell(doc["models"][i]),
                 td(*cols[0][3](i))]
        if view["scale"]:
            cells.append(_inflation_chart(doc, view, i))
        cells += [td(*value(i)) for _, _, _, value in cols[1:]]
        rows.append(f'<tr data-i="{rank - 1}" data-m="{i}">' + "".join(cells) + "</tr>")
    legend = "".join(f'<span><svg width="10" height="10" aria-hidden="true"><circle cx="5" '
                     f'cy="5" r="4" fill="{_PALETTE[k % len(_PALETTE)]}"/></svg>'
                     f"SE inflation, {text(name)}</span>"
                     for k, name in enumerate(view["shown"]))
    return ('<section id="board"><h2>Per model</h2><p class="muted small">SE inflation = '
            "clustered SE / naive SE = sqrt(design effect). Click a column header to sort."
            f'</p><div class="legend">{legend}</div>'
            + table("leaderboard", head, rows, tall=True) + "</section>")


def eda_csv(doc: dict, view: dict) -> tuple[list[str], list[list]]:
    """Per model, best first, on the JSON's scale: n, prompts, score, naive SE, then SE,
    inflation and effective n of every identified clustering, G* of every axis."""
    header = ["model", "n", "prompts", "score", "se_naive"]
    columns = [doc["n"], doc.get("prompts") or [None] * len(doc["models"]), doc["score"],
               doc["se_naive"]]
    for name, c in view["shown"].items():
        header += [f"se_{name}", f"inflation_{name}", f"effective_n_{name}"]
        columns += [c["se"], c["inflation"], c["effective_n"]]
    for name, a in doc["axes"].items():
        header.append(f"gstar_{name}")
        columns.append(a["effective_clusters"])
    rows = [[doc["models"][i], *(col[i] for col in columns)] for i in view["order"]]
    return header, rows


def _clustering_rows(doc: dict) -> list[list[str]]:
    rows = []
    for name, c in doc["clusterings"].items():
        if c["identified"]:
            clusters = " \u00d7 ".join(f"{g:,}" for g in c["n_clusters"])
            spread = (f"{number(c['inflation_median'])} [{number(c['inflation_min'])}, "
                      f"{number(c['inflation_max'])}]")
            rows.append([name, clusters, spread, "identified"])
        else:
            rows.append([name, DASH, DASH, c.get("reason") or "not identified"])
    return rows


def _axis_check_rows(doc: dict) -> list[list[str]]:
    return [[name, count(a["n_clusters"]), number(a["pair_icc"], 4),
             number(a["shared_icc_median"], 3), number(a["rho_median"], 3),
             number(a["m_median"], 1), number(a["effective_clusters_median"], 1),
             f"{number(a['predicted_median'])} vs {number(a['measured_median'])}"]
            for name, a in doc["axes"].items()]


def eda_summary_section(doc: dict) -> str:
    parts = ["<h3>Clusterings</h3>" + plain_table(
        ["clustering", "clusters", "SE inflation median [min, max]", "status"],
        _clustering_rows(doc), wrap=3)]
    if doc["axes"]:
        parts.append("<h3>Per axis</h3>" + plain_table(
            ["axis", "clusters", "pair ICC", "own ICC median", "implied rho median",
             "m median", "G* median", "Kish check: predicted vs measured"],
            _axis_check_rows(doc)))
    s = doc["summary"]
    if s["main"]:
        parts.append(key_values([
            (f"effective n ({s['main']}), median", number(s["effective_n_median"], 0)),
            ("prompts per model, median", number(s["prompts_median"], 0)),
            ("effective n per prompt, median", number(s["effective_n_per_prompt_median"]))]))
    return '<section id="summary"><h2>How much clustering inflates the SEs</h2>' + "".join(
        parts) + "</section>"


def _eda_facts(doc: dict) -> str:
    s = doc["structure"]
    return facts([
        ("models", f"{s['n_models']:,}", ""),
        ("comparisons", count(s["n_comparisons"]), f"{count(s['n_rows'])} rows"),
        ("pairs compared", f"{s['n_pairs']:,}", f"of {s['n_pairs_possible']:,}"),
        ("prompts", count(s["n_prompts"]), ""),
        ("judges", count(s["n_judges"]), ""),
        ("ties", number(100 * s["tie_share"], 1) + "%", "of comparisons"),
    ])


def eda_page(doc: dict, version: str, options: PageOptions) -> str:
    """The page of a ``winrate.eda/1`` document (module docstring)."""
    view = _eda_view(doc)
    title = options.title or (f"Exploratory report: {doc['dataset']}" if doc.get("dataset")
                      else "Exploratory report")
    s = doc["settings"]
    lede = (f"How much clustering inflates each model's standard error; clusterings "
            f"{', '.join(s.get('clusterings') or ())}, correction {s.get('correction')}")
    stem = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "winrate"
    header, rows = eda_csv(doc, view)
    settings = [("estimator", estimator_text(doc)),
                *((k, str(v)) for k, v in s.items() if k not in ("model",))]
    actions = downloads(csv_link(header, rows, f"{stem}.csv"), stem)
    body = (_eda_facts(doc) + notes_section(doc_notes(doc)) + eda_summary_section(doc)
            + eda_table(doc, view)
            + f'<section id="method"><h2>Settings</h2>{key_values(settings)}</section>')
    return page(Heading(title, options.description, lede), actions, body, doc, version)


# --------------------------------------------------------------------------- entry points

_PAGES = {LEADERBOARD_SCHEMA: leaderboard_page, EDA_SCHEMA: eda_page}


def render(doc: dict, version: str, title: str | None = None, *,
           description: str | None = None, meta=None, ci_style: str = "brackets") -> str:
    """The page of a JSON document of winrate (by its ``schema``), presented as the
    keywords say (:class:`PageOptions`). The document's floats are rounded first
    (:func:`page_numbers`), so every number the page derives from them is the same when
    it is rendered again from the document it embeds."""
    options = PageOptions(title, description, meta, ci_style)
    doc = page_numbers(doc)
    if is_by_category(doc):
        return categories_page(doc, version, options)
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema not in _PAGES:
        raise WinrateInputError(f"cannot render a page of schema {schema!r}; expected one of "
                                f"{', '.join(_PAGES)}")
    return _PAGES[schema](doc, version, options)


def publish(doc: dict, path=None, title: str | None = None, version: str | None = None,
            **options) -> str:
    """The page of ``doc`` (:func:`render`, with its keyword ``options``; ``version``
    defaults to the installed one), also written to ``path`` (UTF-8, whole or not at all)
    when given."""
    from winrate.report.output import write_text

    content = render(doc, version or installed_version(), title, **options)
    if path is not None:
        write_text(path, content)
    return content


def notebook_frame(content: str, height: int = 640) -> str:
    """``content`` for a notebook cell (``_repr_html_``): inside a sandboxed ``<iframe
    srcdoc>``, so its styles, script and policy stay in the frame and leave the notebook's
    alone; scripts run in an opaque origin, downloads are allowed."""
    return (f'<iframe srcdoc="{text(content)}" sandbox="allow-scripts allow-downloads" '
            f'width="100%" height="{height}" style="border:1px solid #d8dee4;border-radius:6px" '
            'title="winrate page"></iframe>')
