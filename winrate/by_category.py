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
category" is a claim with joint coverage. The family is estimated jointly: the boards'
scores stacked as one vector (categories x models), their influences side by side as one
influence matrix over all rows, clustered by the same clustering
(:mod:`winrate.inference.family`), so a prompt or judge that spans categories correlates
their estimates exactly as it does; the intervals are max-|T| over the whole family and,
with ranks asked for, each model's rank set within its category holds jointly over the
family. Where the family cannot be estimated jointly (a fit kept as per-question cell
totals, the wild bootstrap's percentile intervals, a design the variance module refuses)
a ``family-not-joint`` note says why and each board's simultaneous intervals are combined
instead: at level ``(1 - alpha)^(1/B)`` over ``B`` boards when no cluster of the
clustering spans two categories (the boards' estimates are then independent and the
levels multiply; Sidak 1967), else at ``1 - alpha / B`` (Bonferroni, valid under any
dependence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate import notes
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.estimators.cells import keeps_rows
from winrate.inference.family import (
    Member,
    each_category,
    family_covariance,
    family_inference,
    reported_bread,
)
from winrate.inference.intervals import bounds_on_scale
from winrate.inference.plan import clustering_problem, default_clustering
from winrate.io.categories import split_by
from winrate.progress import bar
from winrate.report.leaderboard import format_report, json_safe, to_dict
from winrate.settings import Joint

__all__ = ["CategoryBoards", "FamilyIntervals", "analyze_by", "boards_to_dict",
           "disjoint_clusters", "format_boards"]


@dataclass(frozen=True, eq=False)
class FamilyIntervals:
    """Intervals covering all scores of all boards at once at ``1 - alpha``: ``low`` and
    ``high`` by category. ``rule`` ``"joint"``: max-|T| over the family's joint covariance
    (module doc; ``board_alpha = alpha``), with ``parameters`` the (category, model) of
    each stacked score, ``cov`` the joint covariance of the stacked scores, ``scaled`` its
    correlation scaled to the boards' SEs (what the intervals use), ``critical_value`` and
    ``df`` its reference, and with ranks ``rank_low``/``rank_high`` by category;
    ``"sidak"`` (``board_alpha = 1 - (1 - alpha)^(1/B)``, boards on disjoint clusters) or
    ``"bonferroni"`` (``board_alpha = alpha / B``): each board's simultaneous intervals at
    ``1 - board_alpha``."""

    alpha: float
    board_alpha: float
    rule: str
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    parameters: tuple[tuple[str, str], ...] = ()
    cov: np.ndarray | None = None
    scaled: np.ndarray | None = None
    critical_value: float | None = None
    df: float | None = None
    rank_low: dict[str, np.ndarray] | None = None
    rank_high: dict[str, np.ndarray] | None = None


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
    parts = split_by(log, column)
    boards, thin = each_category(
        bar(parts.items(), desc=f"boards by {column}", unit="board", total=len(parts)),
        lambda part: _thin(part, cluster),
        lambda part: analyze(part, cluster=cluster or "none", **options),
        column, "comparisons for a board")
    joint = _family(log, column, cluster, parts, boards, options) if family else None
    return CategoryBoards(column, cluster, boards, thin, joint)


def _family(log, column: str, cluster: tuple[str, ...], parts: dict, boards: dict,
            options: dict) -> FamilyIntervals:
    """:class:`FamilyIntervals`: joint over the family (module doc), or, with a
    ``family-not-joint`` note saying why not, the boards' own at the Sidak or Bonferroni
    level."""
    try:
        return joint_family(log, cluster, boards, options)
    except NotJoint as reason:
        rule = "sidak" if disjoint_clusters(log, column, cluster) else "bonferroni"
        notes.emit(notes.family_not_joint(column, str(reason), rule))
    return _bounded_family(parts, cluster, boards, options, rule)


class NotJoint(Exception):
    """Why a family of boards cannot be estimated jointly."""


def joint_family(log, cluster: tuple[str, ...], boards: dict, options: dict
                 ) -> FamilyIntervals:
    """The family's joint covariance of the stacked scores of ``boards`` (clustered by
    ``cluster``, the axes of the whole ``log``) and its simultaneous intervals and rank sets
    (:func:`winrate.inference.family.family_inference`), on each board's scale
    (:func:`winrate.inference.intervals.bounds_on_scale`); :class:`NotJoint` when the
    family cannot be estimated jointly."""
    whole = {name: pd.Index(log.axes[name].labels) for name in cluster}
    members = [_member(board, whole) for board in boards.values()]
    correction = ("none" if all(b.settings["correction"] == "none" for b in boards.values())
                  else "cr1")
    try:
        cov, _ = family_covariance(members, [log.axes[n].n_clusters for n in cluster],
                                   correction)
    except WinrateInputError as error:
        raise NotJoint(str(error)) from error
    parameters = tuple((label, str(m)) for label, b in boards.items() for m in b.models)
    first = next(iter(boards.values()))
    joint = options.get("joint") or Joint()
    found = family_inference(
        np.concatenate([b.scores for b in boards.values()]),
        np.concatenate([b.se for b in boards.values()]), cov,
        np.array([label for label, _ in parameters]), first.alpha,
        _stacked_df(boards), ranks=joint.ranks, n_draws=first.settings["n_draws"],
        seed=first.settings["seed"])
    low, high, rank_low, rank_high = _by_board(boards, found)
    return FamilyIntervals(first.alpha, first.alpha, "joint", low, high, parameters, cov,
                           found.scaled, found.critical_value, found.df, rank_low, rank_high)


def _member(board, whole: dict) -> Member:
    """A board as the family reads it (:class:`winrate.inference.family.Member`): its
    influence rows, the bread of its reported scores and its rows' clusters numbered as in
    the whole log (``whole``: each axis' labels, matched by label); :class:`NotJoint` for
    a fit without rows or a wild bootstrap's percentile intervals."""
    fit = board.leaderboard
    if not keeps_rows(fit.influence):
        raise NotJoint("a fit of per-question scores keeps its influence summed per "
                       "question, not per row")
    if board.method == "wild bootstrap":
        raise NotJoint("the wild bootstrap's intervals are percentile-t, not Wald")
    clusters = []
    for name, labels in whole.items():
        own = board.log.axes[name]
        clusters.append(labels.get_indexer(own.labels)[own.codes])
    return Member(fit.influence, reported_bread(fit), tuple(clusters), board.log.frequency)


def _stacked_df(boards: dict):
    """Each stacked score's reference df (NaN: normal), or None when every board's is
    normal."""
    found = [np.broadcast_to(np.nan if b.intervals.df is None else b.intervals.df,
                             len(b.models)).astype(float) for b in boards.values()]
    stacked = np.concatenate(found)
    return None if np.isnan(stacked).all() else stacked


def _by_board(boards: dict, found) -> tuple:
    """The family's stacked bounds and rank sets split by board, the bounds on each
    board's scale (logit-scale intervals for win probabilities, as the boards' own)."""
    low, high, rank_low, rank_high, start = {}, {}, {}, {}, 0
    for label, board in boards.items():
        part = slice(start, start + len(board.models))
        start = part.stop
        low[label], high[label], _ = bounds_on_scale(board.scores, found.low[part],
                                                     found.high[part], board.leaderboard.scale)
        if found.rank_low is not None:
            rank_low[label], rank_high[label] = found.rank_low[part], found.rank_high[part]
    return low, high, (rank_low or None), (rank_high or None)


def _bounded_family(parts: dict, cluster: tuple[str, ...], boards: dict, options: dict,
                    rule: str) -> FamilyIntervals:
    """Each board's simultaneous intervals at the Sidak or Bonferroni level (module doc),
    by a second analysis of its rows."""
    alpha = options.get("alpha", 0.05)
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
    if family.rank_low is not None:
        rows = [f"{row}  rank {low:.0f}-{high:.0f}" for row, low, high
                in zip(rows, family.rank_low[label], family.rank_high[label], strict=True)]
    return "\n".join([_family_head(result), *rows])


def _family_head(result: CategoryBoards) -> str:
    """The line above a board's family intervals: their level and how they were made."""
    family = result.family
    head = (f"family {1 - family.alpha:.0%} intervals (every score of the "
            f"{len(result.boards)} boards at once; ")
    if family.rule != "joint":
        return head + f"{family.rule}, each board at {1 - family.board_alpha:.4%}):"
    ranks = "; rank sets within each category, jointly" if family.rank_low else ""
    return head + (f"joint max-|T| over {len(family.parameters)} scores, critical value "
                   f"{family.critical_value:.3f}{ranks}):")


def boards_to_dict(result: CategoryBoards) -> dict:
    """The JSON document of the boards: ``by``, ``cluster``, ``categories`` (each board's
    :func:`winrate.report.leaderboard.to_dict` under its value) and ``thin``."""
    categories = {label: to_dict(board) for label, board in result.boards.items()}
    family = result.family
    if family is not None:
        for label, doc in categories.items():
            doc["family_low"], doc["family_high"] = family.low[label], family.high[label]
            if family.rank_low is not None:
                doc["family_rank_low"] = family.rank_low[label]
                doc["family_rank_high"] = family.rank_high[label]
        family = _family_dict(family)
    return json_safe({"by": result.column, "cluster": list(result.cluster),
                      "categories": categories, "thin": result.thin, "family": family})


def _family_dict(family: FamilyIntervals) -> dict:
    """The JSON ``family``: level and rule, and for a joint family its reference, the
    stacked scores' (category, model) and their covariance as the intervals use it (the
    joint correlation scaled to the boards' SEs)."""
    found = {"alpha": family.alpha, "board_alpha": family.board_alpha, "rule": family.rule}
    if family.rule == "joint":
        found.update(critical_value=family.critical_value, df=family.df,
                     parameters=[list(p) for p in family.parameters], cov=family.scaled)
    return found
