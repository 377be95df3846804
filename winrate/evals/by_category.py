"""One eval per category of the questions (``evaluate_by(qs, "subject")``), with a family
of intervals over every category at once.

:func:`evaluate_by` splits question-level scores by a per-question column (a subject, a
task) and evaluates each category's questions alone (:func:`winrate.evals.frame.evaluate`,
the same options and clustering for every category), so each report equals a separate run
on that category's questions. A category too thin for a report (no question answered by a
model, a cluster column with one cluster, a table the evaluation refuses) is named in one
``not-estimable`` note.

The family: category c's model m has the mean ``xbar_cm`` over the ``n_cm`` questions it
answered, whose influence is ``u_q = (x_qm - xbar_cm) / n_cm`` for a question q of c
(:meth:`winrate.evals.frame.QuestionScores.mean_covariance`). A question belongs to one
category, so the categories' influences placed side by side over all questions are the
family's stacked influence, clustered by the cluster columns of the whole table (a source
that spans subjects then correlates their means):
:func:`winrate.inference.family.family_covariance`. The simultaneous intervals and rank
sets within each category read its correlation scaled to each model's own SE
(:func:`winrate.inference.family.family_inference`), on the logit scale for means of
scores in [0, 1] (:data:`winrate.evals.frame.MEAN_SCALES`), with ``t(G - 1)`` on the
fewest clusters of any category's model when clustered.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from winrate.errors import WinrateInputError
from winrate.evals.frame import MEAN_SCALES, EvalReport, QuestionScores, evaluate
from winrate.evals.report import by_score, report_json
from winrate.inference.family import (
    Member,
    each_category,
    family_covariance,
    family_inference,
)
from winrate.inference.intervals import bounds_on_scale
from winrate.report.leaderboard import json_safe

__all__ = ["EvalBoards", "EvalFamily", "boards_json", "evaluate_by", "split_scores"]


@dataclass(frozen=True, eq=False)
class EvalFamily:
    """The family over every category's models at ``1 - alpha``: ``parameters`` the
    (category, model) of each stacked mean, ``cov`` their joint covariance, ``scaled`` its
    correlation scaled to the reports' SEs, ``critical_value`` and ``df`` the max-|T|
    reference, and by category the intervals ``low``/``high`` and rank sets
    ``rank_low``/``rank_high`` (within the category, all jointly)."""

    alpha: float
    parameters: tuple[tuple[str, str], ...]
    cov: np.ndarray
    scaled: np.ndarray
    critical_value: float
    df: float | None
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    rank_low: dict[str, np.ndarray]
    rank_high: dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class EvalBoards:
    """The reports of one column: ``reports`` by category value (in value order),
    ``thin``: the categories without a report and why, and the ``family``."""

    column: str
    reports: dict[str, EvalReport]
    thin: dict[str, str] = field(default_factory=dict)
    family: EvalFamily | None = None


def split_scores(qs: QuestionScores, column: str) -> dict[str, QuestionScores]:
    """``{label: the scores of that category's questions}`` by the per-question ``column``
    (one of ``qs.clusters``' columns, dropped from each part's clusters), sorted by label;
    models without an answer in a category are dropped from it."""
    if column not in qs.clusters.columns:
        raise WinrateInputError(f"no per-question column {column!r} to split by: the "
                                f"table's are {sorted(map(str, qs.clusters.columns))}")
    labels = qs.clusters[column].astype(str)
    out = {}
    for label in sorted(labels.unique()):
        questions = labels.index[labels.to_numpy() == label]
        scores = qs.scores.loc[questions].dropna(axis=1, how="all")
        raw = qs.raw[qs.raw[qs.question_col].isin(questions)
                     & qs.raw["__model__"].isin(scores.columns)]
        out[label] = replace(qs, scores=scores, answers=qs.answers.loc[questions, scores.columns],
                             clusters=qs.clusters.loc[questions].drop(columns=[column]),
                             raw=raw.drop(columns=[column]))
    return out


def evaluate_by(qs: QuestionScores, column: str, **options) -> EvalBoards:
    """One :func:`winrate.evals.frame.evaluate` per value of ``column`` (module doc) and
    the family over all of them; ``options`` are ``evaluate``'s."""
    reports, thin = each_category(split_scores(qs, column).items(), _thin,
                                  lambda part: evaluate(part, **options), column,
                                  "questions for a report")
    return EvalBoards(column, reports, thin, eval_family(qs, reports))


def _thin(part: QuestionScores) -> str | None:
    """Why a category's scores give no report, or None."""
    if part.scores.shape[1] == 0:
        return "no answers"
    one = [c for c in part.clusters.columns if part.clusters[c].nunique() < 2]
    if one:
        return (f"every question has the same {one[0]}: one cluster, so variation across "
                f"{one[0]}s cannot be estimated")
    return None


def eval_family(qs: QuestionScores, reports: dict[str, EvalReport]) -> EvalFamily:
    """The family of the categories' ``reports`` (module doc); ``qs`` the whole table, whose
    cluster columns number the clusters."""
    first = next(iter(reports.values()))
    axes = list(first.cluster_cols)
    whole = {c: pd.Index(qs.clusters[c].astype(str).unique()) for c in axes}
    members, parameters, mean, se, df = [], [], [], [], []
    for label, report in reports.items():
        part = report.scores
        members.append(_member(part, whole))
        for name, result in report.models.items():
            summary = result.summary
            parameters.append((label, name))
            mean.append(summary.mean)
            se.append(summary.se)
            df.append(min(summary.n_clusters) - 1 if summary.n_clusters else np.nan)
    cov, _ = family_covariance(members, [len(whole[c]) for c in axes], first.correction)
    df = np.array(df, float)
    found = family_inference(np.array(mean), np.array(se, float), cov,
                             np.array([p[0] for p in parameters]), first.alpha,
                             None if np.isnan(df).all() else df, ranks=True,
                             seed=first.seed)
    return _split(first, parameters, found, reports)


def _member(part: QuestionScores, whole: dict) -> Member:
    """One category's influence of its models' means, one row per question (module doc),
    in the report's model order, with the questions' clusters numbered as in the whole
    table."""
    x = part.scores.to_numpy(dtype=float)
    answered = ~np.isnan(x)
    u = np.where(answered, (x - np.nanmean(x, axis=0)) / answered.sum(axis=0), 0.0)
    clusters = tuple(whole[c].get_indexer(part.clusters[c].astype(str)) for c in whole)
    return Member(u, np.eye(u.shape[1]), clusters)


def _split(first: EvalReport, parameters, found, reports) -> EvalFamily:
    """The :class:`EvalFamily` of the stacked ``found`` inference, split by category, the
    intervals on the means' scale."""
    low, high, rank_low, rank_high, start = {}, {}, {}, {}, 0
    for label, report in reports.items():
        part = slice(start, start + len(report.models))
        start = part.stop
        means = np.array([r.summary.mean for r in report.models.values()])
        low[label], high[label], _ = bounds_on_scale(means, found.low[part], found.high[part],
                                                     MEAN_SCALES[report.scale])
        rank_low[label], rank_high[label] = found.rank_low[part], found.rank_high[part]
    return EvalFamily(first.alpha, tuple(parameters), found.cov, found.scaled,
                      found.critical_value, found.df, low, high, rank_low, rank_high)


def family_lines(boards: EvalBoards, label: str, digits: int = 1) -> str:
    """One category's family intervals and rank sets, in percent for scores in [0, 1],
    best mean first (the score table's order)."""
    family, report = boards.family, boards.reports[label]
    factor, unit = (100.0, "%") if report.scale != "other" else (1.0, "")
    width = max(len(name) for name in report.models)
    shown = zip(report.models, family.low[label], family.high[label],
                family.rank_low[label], family.rank_high[label], strict=True)
    order = {name: k for k, name in enumerate(by_score(report.models))}
    rows = [f"  {name:<{width}}  [{lo * factor:.{digits}f}{unit}, {hi * factor:.{digits}f}"
            f"{unit}]  rank {rl:.0f}-{rh:.0f}"
            for name, lo, hi, rl, rh in sorted(shown, key=lambda row: order[row[0]])]
    head = (f"family {1 - family.alpha:.0%} intervals and rank sets (every model of the "
            f"{len(boards.reports)} categories at once; joint max-|T| over "
            f"{len(family.parameters)} means, critical value {family.critical_value:.3f}):")
    return "\n".join([head, *rows])


def boards_json(boards: EvalBoards) -> dict:
    """The JSON document: ``by``, ``categories`` (each category's eval document,
    :func:`winrate.evals.report.report_json`, with ``family_low``, ``family_high``,
    ``family_rank_low`` and ``family_rank_high`` by model), ``thin`` and ``family``
    (``alpha``, ``critical_value``, ``df``, ``parameters`` and ``cov``, the covariance the
    intervals use)."""
    family = boards.family
    categories = {}
    for label, report in boards.reports.items():
        doc = report_json(report)
        names = list(report.models)
        for key, values in (("family_low", family.low), ("family_high", family.high),
                            ("family_rank_low", family.rank_low),
                            ("family_rank_high", family.rank_high)):
            doc[key] = dict(zip(names, values[label].tolist(), strict=True))
        categories[label] = doc
    return json_safe({"by": boards.column, "categories": categories, "thin": boards.thin,
                      "family": {"alpha": family.alpha, "rule": "joint",
                                 "critical_value": family.critical_value, "df": family.df,
                                 "parameters": [list(p) for p in family.parameters],
                                 "cov": family.scaled}})
