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
over the categories. ``family=True`` adds intervals that cover every score of every
board at once at ``1 - alpha`` (:class:`FamilyIntervals`), so that "the #1 of every
category" is a claim with joint coverage: each board's simultaneous (max-|T|) intervals
at level ``(1 - alpha)^(1/B)`` over ``B`` boards when no cluster of the clustering spans
two categories (the boards' estimates are then independent and the levels multiply;
Sidak 1967), else at ``1 - alpha / B`` (Bonferroni, valid under any dependence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from winrate import notes
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.inference.plan import clustering_problem, default_clustering
from winrate.io.categories import split_by
from winrate.progress import bar
from winrate.report.leaderboard import format_report, json_safe, to_dict
from winrate.settings import Joint

__all__ = ["CategoryBoards", "FamilyIntervals", "analyze_by", "boards_to_dict",
           "disjoint_clusters", "format_boards"]


@dataclass(frozen=True)
class FamilyIntervals:
    """Intervals covering all scores of all boards at once at ``1 - alpha``: ``low`` and
    ``high`` by category, each board's simultaneous intervals at ``1 - board_alpha``;
    ``rule`` ``"sidak"`` (``board_alpha = 1 - (1 - alpha)^(1/B)``, boards on disjoint
    clusters) or ``"bonferroni"`` (``board_alpha = alpha / B``)."""

    alpha: float
    board_alpha: float
    rule: str
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]


@dataclass(frozen=True)
class CategoryBoards:
    """The boards of one column: ``boards`` by category value (in value order), the
    clustering they share, ``thin``: the categories without a board and why, and the
    ``family`` intervals when asked for."""

    column: str
    cluster: tuple[str, ...]
    boards: dict[str, LeaderboardAnalysis]
    thin: dict[str, str] = field(default_factory=dict)
    family: FamilyIntervals | None = None


def analyze_by(log, column: str, cluster=None, *, family: bool = False,
               **options) -> CategoryBoards:
    """One :func:`winrate.analyze` per value of ``column`` (module docstring); ``cluster``
    None: the default clustering of the whole log, used for every category; ``family``:
    add the :class:`FamilyIntervals`; ``options`` are :func:`winrate.analyze`'s."""
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
        notes.emit(notes.thin_categories(column, thin))
    if not boards:
        raise WinrateInputError(f"no category of {column!r} has enough comparisons for a "
                                "board")
    joint = _family(log, column, cluster, parts, boards, options) if family else None
    return CategoryBoards(column, cluster, boards, thin, joint)


def _family(log, column: str, cluster: tuple[str, ...], parts: dict, boards: dict,
            options: dict) -> FamilyIntervals:
    """:class:`FamilyIntervals`: each board's simultaneous intervals at the Sidak or
    Bonferroni level (module docstring), by a second analysis of its rows."""
    alpha = options.get("alpha", 0.05)
    rule = "sidak" if disjoint_clusters(log, column, cluster) else "bonferroni"
    count = len(boards)
    board_alpha = 1 - (1 - alpha) ** (1 / count) if rule == "sidak" else alpha / count
    low, high = {}, {}
    for label in boards:
        joint = {**options, "alpha": board_alpha, "joint": Joint(simultaneous=True)}
        result = analyze(parts[label], cluster=cluster or "none", **joint)
        low[label], high[label] = result.joint.sim_low, result.joint.sim_high
    return FamilyIntervals(alpha, board_alpha, rule, low, high)


def disjoint_clusters(log, column: str, cluster: tuple[str, ...]) -> bool:
    """Whether every cluster of every axis of ``cluster`` lies within one category of
    ``column`` (then the categories' estimates share no cluster and are independent
    under the clustered model); True without clustering (rows are independent)."""
    category = log.axes[column].codes
    for name in cluster:
        codes = log.axes[name].codes
        pairs = np.unique(codes.astype(np.int64) * (category.max() + 1) + category)
        if np.unique(pairs // (category.max() + 1)).size != pairs.size:
            return False
    return True


def _thin(part, cluster: tuple[str, ...]) -> str | None:
    """Why a category's log gives no board, or None."""
    if part is None:
        return "fewer than two models"
    return clustering_problem(part, cluster) if cluster else None


def format_boards(result: CategoryBoards, table_format: str = "text") -> str:
    """Each board as ``winrate leaderboard`` prints one, under a heading naming the
    category, and with ``family`` its family intervals after it."""
    parts = []
    for label, board in result.boards.items():
        heading = f"{result.column} = {label}"
        rule = "=" * len(heading) if table_format == "text" else ""
        lines = [heading, rule, format_report(board, table_format)]
        if result.family is not None:
            lines.append(_family_lines(result, label, board))
        parts.append("\n".join(filter(None, lines)))
    return "\n\n".join(parts)


def _family_lines(result: CategoryBoards, label: str, board) -> str:
    """The family intervals of one board, on the board's printed scale."""
    family = result.family
    scale = to_dict(board)["settings"]["scale"]
    factor, decimals = scale["factor"], scale["decimals"]
    width = max(len(str(model)) for model in board.models)
    rows = [f"  {model!s:<{width}}  [{low * factor:.{decimals}f}, {high * factor:.{decimals}f}]"
            for model, low, high in zip(board.models, family.low[label], family.high[label],
                                        strict=True)]
    head = (f"family {1 - family.alpha:.0%} intervals (every score of the "
            f"{len(result.boards)} boards at once; {family.rule}, each board at "
            f"{1 - family.board_alpha:.4%}):")
    return "\n".join([head, *rows])


def boards_to_dict(result: CategoryBoards) -> dict:
    """The JSON document of the boards: ``by``, ``cluster``, ``categories`` (each board's
    :func:`winrate.report.leaderboard.to_dict` under its value) and ``thin``."""
    categories = {label: to_dict(board) for label, board in result.boards.items()}
    family = result.family
    if family is not None:
        for label, doc in categories.items():
            doc["family_low"], doc["family_high"] = family.low[label], family.high[label]
        family = {"alpha": family.alpha, "board_alpha": family.board_alpha,
                  "rule": family.rule}
    return json_safe({"by": result.column, "cluster": list(result.cluster),
                      "categories": categories, "thin": result.thin, "family": family})
