"""Shared machinery of the paper build: where files go, how tables, figures and numbers
are written so that a rerun gives byte-identical files.

* Tables: one ``pandas.DataFrame`` of already formatted strings, written as Markdown
  (``tables/NAME.md``), LaTeX (``tables/NAME.tex``, booktabs) and CSV (``tables/NAME.csv``).
* Figures: a :class:`matplotlib.figure.Figure` on the Agg canvas, written as
  ``figures/NAME.pdf`` and ``figures/NAME.png`` with no timestamps or version strings in
  the metadata (PDF ``CreationDate``/``ModDate``/``Creator``/``Producer``, PNG
  ``Software`` removed), so the bytes depend on the drawing only.
* Numbers: every number the manuscript quotes is registered by name with its formatted
  text (:meth:`Paper.number`; a size of round-off as a bound, :meth:`Paper.bound`),
  written to ``numbers.json`` and, as LaTeX macros ``\\wrName``, to ``numbers.tex``; the
  manuscript template refers to them by name.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import _path
from matplotlib.backends import backend_pdf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from winrate.report import tables
from winrate.report.tables import latex_escape

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "paper"
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None}
PNG_METADATA = {"Software": None}
PNG_DPI = 150
#: Decimals of the coordinates written into a figure's PDF, in points (matplotlib writes 10
#: for markers and text, 6 for paths): 1e-4 pt is far below what shows and far above
#: round-off, so a plotted value whose last bits differ between machines (another CPU's
#: vector path) leaves the file's bytes alone.
PDF_DECIMALS = 4
_KEY = re.compile(r"^[a-z][a-z_]*$")


@dataclass
class Paper:
    """Output directory plus the registry of numbers and written files of one build."""

    root: Path = PAPER
    numbers: dict[str, str] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    tables: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (md, caption)
    figures: dict[str, str] = field(default_factory=dict)  # name -> caption

    def path(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write_text(self, text: str, *parts: str) -> Path:
        path = self.path(*parts)
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        self.written.append(path)
        return path

    def number(self, key: str, value, spec: str = ".2f") -> str:
        """Register ``value`` under ``key`` (:func:`add_number`); returns the text."""
        return add_number(self.numbers, key, value, spec)

    def extremes(self, key: str, values, spec: str = ".2f") -> None:
        """Register the smallest and the largest of ``values`` (NaN left out) as
        ``KEY_min`` and ``KEY_max``."""
        values = np.asarray(values, float)
        self.number(f"{key}_min", np.nanmin(values), spec)
        self.number(f"{key}_max", np.nanmax(values), spec)

    def bound(self, key: str, value: float, limit: float) -> str:
        """Register a round-off size as the bound ``< limit``, never as its digits (which
        differ between machines: summation order, vector paths); a value at or above the
        bound is an error, not a number."""
        if not float(value) < limit:
            raise ValueError(f"{key} = {value:.3g} is not below its round-off bound {limit:g}")
        return self.number(key, f"< {limit:.0e}")

    def merge(self, numbers: dict[str, str]) -> None:
        """Register numbers computed elsewhere (e.g. read back from a results file)."""
        for key, text in numbers.items():
            add_number(self.numbers, key, text)

    def write_json(self, document, *parts: str) -> Path:
        return self.write_text(json.dumps(document, indent=1, ensure_ascii=False), *parts)

    def table(self, name: str, frame: pd.DataFrame, caption: str) -> None:
        """Write ``tables/NAME.{md,tex,csv}`` from a frame of formatted strings."""
        cells = frame.astype(str)
        self.tables[name] = (markdown_table(cells), caption)
        self.write_text(self.tables[name][0], "tables", f"{name}.md")
        self.write_text(latex_table(cells, caption, f"tab:{name}"), "tables", f"{name}.tex")
        path = self.path("tables", f"{name}.csv")
        cells.to_csv(path, index=False, lineterminator="\n")
        self.written.append(path)

    def figure(self, name: str, fig: Figure, caption: str) -> None:
        """Write ``figures/NAME.pdf`` and ``.png`` with fixed metadata."""
        self.figures[name] = caption
        FigureCanvasAgg(fig)
        pdf, png = self.path("figures", f"{name}.pdf"), self.path("figures", f"{name}.png")
        with coarse_pdf_numbers():
            fig.savefig(pdf, metadata=PDF_METADATA)
        fig.savefig(png, dpi=PNG_DPI, metadata=PNG_METADATA)
        self.written += [pdf, png]

    def write_numbers(self) -> None:
        ordered = dict(sorted(self.numbers.items()))
        self.write_json(ordered, "numbers.json")
        macros = [f"\\newcommand{{\\{macro_name(k)}}}{{{latex_escape(v)}}}"
                  for k, v in ordered.items()]
        self.write_text("% generated by scripts/paper/build.py; do not edit\n"
                        + "\n".join(macros), "numbers.tex")


@contextmanager
def coarse_pdf_numbers(decimals: int = PDF_DECIMALS):
    """Within the block, matplotlib's PDF writer prints coordinates with ``decimals``
    decimals (module doc of PDF_DECIMALS); -0 is written as 0."""
    write_number, write_path = backend_pdf.pdfRepr, _path.convert_to_string

    def number(obj):
        if isinstance(obj, (float, np.floating)) and np.isfinite(obj):
            return write_number(round(float(obj), decimals) + 0.0)
        return write_number(obj)

    def path(path, transform, clip, simplify, sketch, precision, *rest):
        return write_path(path, transform, clip, simplify, sketch, min(precision, decimals),
                          *rest)

    backend_pdf.pdfRepr, _path.convert_to_string = number, path
    try:
        yield
    finally:
        backend_pdf.pdfRepr, _path.convert_to_string = write_number, write_path


def add_number(numbers: dict[str, str], key: str, value, spec: str = ".2f") -> str:
    """Put ``value`` formatted by ``spec`` (strings kept as they are) under ``key``
    (lower-case letters and ``_``, so it can be a LaTeX macro name); a key is set once."""
    if not _KEY.match(key):
        raise ValueError(f"number key {key!r} must be lower-case letters and '_'")
    if key in numbers:
        raise ValueError(f"number {key!r} registered twice")
    numbers[key] = value if isinstance(value, str) else fmt(value, spec)
    return numbers[key]


def macro_name(key: str) -> str:
    """``mmlu_infl_prompt`` -> ``wrMmluInflPrompt`` (LaTeX macro names are letters only)."""
    return "wr" + "".join(part.capitalize() for part in key.split("_"))


def fmt(value, spec: str = ".2f") -> str:
    """Format a number; undefined numbers print as ``n/a``, infinite ones as ``inf``."""
    if value is None:
        return "n/a"
    if spec.endswith("d"):  # integer formats
        return format(int(value), spec)
    value = float(value)
    if np.isnan(value):
        return "n/a"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(value, spec)
    return "0" + text[2:] if text.startswith("-0") and float(text) == 0 else text


def pct(value, digits: int = 1) -> str:
    """A proportion as percent text without the sign: 0.3945 -> ``39.5``."""
    return fmt(None if value is None else 100 * float(value), f".{digits}f")


def _header_and_rows(cells: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    return (list(map(str, cells.columns)),
            [list(map(str, row)) for row in cells.itertuples(index=False)])


def markdown_table(cells: pd.DataFrame) -> str:
    """The frame as a GFM pipe table, each cell one line with ``|`` escaped
    (:func:`winrate.report.tables.markdown_table`)."""
    return tables.markdown_table(*_header_and_rows(cells))


def latex_table(cells: pd.DataFrame, caption: str, label: str) -> str:
    """A ``table`` float with caption and label around the booktabs tabular of
    :func:`winrate.report.tables.latex_tabular` (every cell escaped there)."""
    tabular = tables.latex_tabular(*_header_and_rows(cells))
    return "\n".join(["% generated by scripts/paper/build.py; do not edit",
                      "\\begin{table}[ht]", "\\centering", "\\small",
                      f"\\caption{{{latex_escape(caption)}}}", f"\\label{{{label}}}",
                      tabular, "\\end{table}"])


def new_figure(width: float, height: float) -> Figure:
    """A figure on the Agg canvas (no pyplot state)."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig

