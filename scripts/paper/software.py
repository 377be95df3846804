"""Appendix A's scale table, read from the committed benchmark record
``paper/benchmarks_scale.txt`` (written by ``python scripts/bench.py --only scale
--record``; the build never reruns the benchmark, so the table is byte-identical)."""

from __future__ import annotations

import re

import pandas as pd
from common import PAPER, Paper

RECORD = "benchmarks_scale.txt"
_RUN = re.compile(
    r"^scale: (?P<rows>[\d,]+) rows, (?P<layout>[\w-]+), (?P<analysis>.+?) on (?P<engine>\w+), "
    r"--memory (?P<memory>\w+)\n"
    r"\s+wall time: (?P<wall>[\d.]+) s \(range (?P<wall_range>[\d.-]+), (?P<runs>\d+) runs?\)\n"
    r"\s+peak resident memory: (?P<rss>[\d.]+) GiB", re.M)
LAYOUTS = {"prompt-partitioned-ints": "sorted by prompt, integer ids",
           "random-order-strings": "random order, string ids",
           "partitioned": "sorted by prompt, integer ids",
           "random": "random order, string ids",
           "wide": "random order, string ids, n / 10 prompts x 100,000 judges"}


def scale_runs(text: str) -> pd.DataFrame:
    """One row per recorded run (``scale:`` block) of the benchmark record, in file order."""
    runs = pd.DataFrame([m.groupdict() for m in _RUN.finditer(text)])
    if runs.empty:
        raise ValueError(f"{RECORD} holds no 'scale:' run")
    return runs


def scale_table(paper: Paper) -> None:
    """Table ``scale``: wall time and peak memory of the engine path by log size."""
    runs = scale_runs((PAPER / RECORD).read_text(encoding="utf-8"))
    rows = pd.DataFrame({
        "rows": runs["rows"],
        "layout of the Parquet log": runs["layout"].map(LAYOUTS),
        "analysis": runs["analysis"] + " on " + runs["engine"],
        "memory budget": runs["memory"],
        "wall time, s (range)": runs["wall"] + " (" + runs["wall_range"] + ")",
        "runs": runs["runs"],
        "peak resident memory, GiB": runs["rss"],
    })
    paper.table("scale", rows,
                "Logs larger than memory: wall time and peak resident memory of a two-way "
                "CR1 Bradley-Terry analysis clustered by prompt and judge, run from a Parquet "
                "file on DuckDB through `winrate leaderboard --engine duckdb --memory SIZE` "
                "(the scale benchmark; machine and load in Appendix K).")
