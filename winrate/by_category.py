"""One leaderboard per category: ``analyze_by(log, "language")``.

Leaderboards are published per category (LMArena's language, coding and hard-prompt
views; arena-hard's ``--category``). :func:`analyze_by` splits a log by the values of one
of its columns (:func:`winrate.io.categories.split_by`) and analyses each category's
comparisons alone, with :func:`winrate.analyze` and the same clustering for every
category, so each board's intervals are clustered within its category and each equals a
separate run on that category's rows.

A category too thin for a board (fewer than two models, a clustering axis with one
cluster, or a design the analysis refuses) gets no board; one ``not-estimable`` note
names each such category and why. A board on fewer than 30 clusters carries the
analysis' own ``few-clusters`` note, as any leaderboard does.

The boards are separate analyses: each interval covers at its own level, not jointly
over the categories (a claim about "the #1 of every category" needs a correction for the
number of boards).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from winrate import notes
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.inference.plan import clustering_problem, default_clustering
from winrate.io.categories import split_by
from winrate.progress import bar
from winrate.report.leaderboard import format_report, json_safe, to_dict

__all__ = ["CategoryBoards", "analyze_by", "boards_to_dict", "format_boards"]


@dataclass(frozen=True)
class CategoryBoards:
    """The boards of one column: ``boards`` by category value (in value order), the
    clustering they share, and ``thin``: the categories without a board and why."""

    column: str
    cluster: tuple[str, ...]
    boards: dict[str, LeaderboardAnalysis]
    thin: dict[str, str] = field(default_factory=dict)


def analyze_by(log, column: str, cluster=None, **options) -> CategoryBoards:
    """One :func:`winrate.analyze` per value of ``column`` (module docstring); ``cluster``
    None: the default clustering of the whole log, used for every category; ``options``
    are :func:`winrate.analyze`'s."""
    if cluster is None:
        cluster, chosen = default_clustering(log)
        if chosen is not None:
            notes.emit(chosen)
    cluster = tuple(cluster) if not isinstance(cluster, str) else tuple(cluster.split("+"))
    cluster = tuple(c for c in cluster if c != "none")
    boards, thin = {}, {}
    parts = split_by(log, column)
    for label, part in bar(parts.items(), desc=f"boards by {column}", unit="board",
                           total=len(parts)):
        reason = _thin(part, cluster)
        if reason is None:
            try:
                boards[label] = analyze(part, cluster=cluster or "none", **options)
            except WinrateInputError as error:
                reason = str(error)
        if reason is not None:
            thin[label] = reason
    if thin:
        notes.emit(_thin_note(column, thin))
    if not boards:
        raise WinrateInputError(f"no category of {column!r} has enough comparisons for a "
                                "board")
    return CategoryBoards(column, cluster, boards, thin)


def _thin(part, cluster: tuple[str, ...]) -> str | None:
    """Why a category's log gives no board, or None."""
    if part is None:
        return "fewer than two models"
    return clustering_problem(part, cluster) if cluster else None


def _thin_note(column: str, thin: dict[str, str]) -> notes.Note:
    shown = "; ".join(f"{label!r}: {reason}" for label, reason in list(thin.items())[:5])
    more = f"; ... and {len(thin) - 5} more" if len(thin) > 5 else ""
    return notes.Note("not-estimable", f"by {column}: {len(thin)} categor"
                      f"{'y' if len(thin) == 1 else 'ies'} too thin for a board: "
                      f"{shown}{more}")


def format_boards(result: CategoryBoards, table_format: str = "text") -> str:
    """Each board as ``winrate leaderboard`` prints one, under a heading naming the
    category and its comparisons."""
    parts = []
    for label, board in result.boards.items():
        heading = f"{result.column} = {label}"
        rule = "=" * len(heading) if table_format == "text" else ""
        parts.append("\n".join(filter(None, [heading, rule, format_report(board,
                                                                          table_format)])))
    return "\n\n".join(parts)


def boards_to_dict(result: CategoryBoards) -> dict:
    """The JSON document of the boards: ``by``, ``cluster``, ``categories`` (each board's
    :func:`winrate.report.leaderboard.to_dict` under its value) and ``thin``."""
    return json_safe({"by": result.column, "cluster": list(result.cluster),
                      "categories": {label: to_dict(board)
                                     for label, board in result.boards.items()},
                      "thin": result.thin})
