"""Per-question score tables: reading, validating, aggregating resamples, evaluating.

Input is a long table with one row per answer: a score column, a question column, an
optional model column (absent: one model) and optional cluster columns whose labels are
constant within a question. Several rows for one (model, question) are K resampled answers:
they are averaged into a question-level score (Miller 2024, sec. 3.1), never pooled.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate import notes
from winrate.errors import WinrateInputError, first_rows, listed
from winrate.estimators.base import PROBABILITY, Scale
from winrate.evals._checks import resolve_scale
from winrate.evals.paired import (
    mcnemar,
    paired_bayes,
    paired_difference,
)
from winrate.evals.results import Comparison, ModelResult
from winrate.evals.summary import (
    ScoreSummary,
    is_binary,
    summarize_scores,
    variance_components,
)
from winrate.inference.results import IntervalBasis, IntervalResults
from winrate.io.logs import columns_not_found
from winrate.report.text import Summary, text_block
from winrate.variance.sandwich import DEFAULT_CORRECTION, multiway_cluster_cov

SINGLE_MODEL = "model"
#: Scores on their own scale (``other``): any real mean, intervals on it as they are.
OWN_SCALE = Scale("other", None, None, "identity", 1.0, 9, 4, "", "units", "units",
                  "mean score", "mean scores")
#: The :class:`winrate.estimators.base.Scale` of a model's mean score by the score scale
#: (:data:`winrate.constants.SCALES`): a mean of scores in [0, 1] is a probability, so its
#: Wald-type intervals are built on the logit scale.
MEAN_SCALES = {"binary": PROBABILITY, "unit": PROBABILITY, "other": OWN_SCALE}
#: words in a column name that say it names models
_MODEL_WORDS = ("model", "system", "llm", "agent", "submission", "engine")


@dataclass(frozen=True, eq=False)
class QuestionScores:
    """Question-level scores of one or more models.

    ``scores``: questions x models, the mean of each model's answers (NaN: no answer);
    ``answers``: the same shape, the number K of answers averaged; ``clusters``: questions x
    cluster columns; ``raw``: the validated long table (for resampling analyses);
    ``scale``: ``binary``, ``unit`` ([0, 1]) or ``other`` (see :func:`question_scores`).
    """

    scores: pd.DataFrame
    answers: pd.DataFrame
    clusters: pd.DataFrame
    raw: pd.DataFrame = field(repr=False)
    score_col: str
    question_col: str
    model_col: str | None
    scale: str = "unit"

    @property
    def models(self) -> list[str]:
        return [str(m) for m in self.scores.columns]

    def cluster_arrays(self, questions) -> dict[str, np.ndarray]:
        return {c: self.clusters.loc[questions, c].to_numpy() for c in self.clusters.columns}

    def mean_covariance(self, correction: str = DEFAULT_CORRECTION) -> np.ndarray:
        """(K, K) covariance of the models' mean scores across questions.

        Question q moves model m's mean by ``u_qm = (x_qm - xbar_m) / n_m`` when m answered
        it (0 otherwise, ``n_m`` the questions m answered); the covariance is
        ``sum_g t_g t_g^T`` of the cluster totals ``t_g = sum_{q in g} u_q`` by the cluster
        columns (multiway, :func:`winrate.variance.sandwich.multiway_cluster_cov` with
        ``correction``) or, without clusters, by question (``U^T U``, questions
        independent; Miller 2024, sec. 4.2, for two models).
        """
        x = self.scores.to_numpy(dtype=float)
        answered = ~np.isnan(x)
        u = np.where(answered, (x - np.nanmean(x, axis=0)) / answered.sum(axis=0), 0.0)
        groups = [self.clusters[c].to_numpy() for c in self.clusters.columns]
        if not groups:
            return u.T @ u
        with notes.gathered():  # a PSD repair is reported per model already
            return multiway_cluster_cov(u, groups, correction).cov


def _require_columns(df: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise columns_not_found(missing, list(df.columns), what="the table")


def _check_no_missing(df: pd.DataFrame, columns: Sequence[str]) -> None:
    for col in columns:
        bad = df[col].isna().to_numpy()
        if bad.any():
            raise WinrateInputError(
                f"column {col!r} has missing values at rows [{first_rows(bad, df.index)}]"
            )


def _numeric_scores(df: pd.DataFrame, score_col: str) -> pd.Series:
    values = pd.to_numeric(df[score_col], errors="coerce")
    bad = (values.isna() & df[score_col].notna()).to_numpy()
    if bad.any():
        raise WinrateInputError(
            f"score column {score_col!r} has non-numeric values at "
            f"rows [{first_rows(bad, df.index)}]"
        )
    bad = ~np.isfinite(values.to_numpy(dtype=float))
    if bad.any():
        raise WinrateInputError(
            f"score column {score_col!r} has missing or infinite scores at "
            f"rows [{first_rows(bad, df.index)}]; drop unanswered rows (or score them 0) and retry"
        )
    return values.astype(float)


def _question_clusters(df: pd.DataFrame, question_col: str, cluster_cols) -> pd.DataFrame:
    grouped = df.groupby(question_col, sort=False)
    for col in cluster_cols:
        varying = grouped[col].nunique() > 1
        if varying.any():
            raise WinrateInputError(
                f"cluster column {col!r} must be constant within a question, but questions "
                f"{listed(varying.index[varying], limit=5)} have several labels"
            )
    return grouped[list(cluster_cols)].first()


def model_like_columns(df: pd.DataFrame, question_col: str, used: Sequence[str]) -> list[str]:
    """Columns of a table read as one model's answers that look like a model column.

    With several rows per question and no model column, the rows are read as K resampled
    answers of one model; a column that names models would instead be pooled silently. A
    column other than ``used`` looks like one when it takes several values within a
    question, those values recur (each label on at least two rows on average, unlike a
    free-text answer) and it holds text or its name says so (``model``, ``system``, ...).
    """
    questions = df[question_col]
    if not questions.duplicated().any():
        return []
    found = []
    for col in (c for c in df.columns if c not in used):  # a loop over columns, not rows
        named = any(word in str(col).lower() for word in _MODEL_WORDS)
        if not (named or pd.api.types.is_string_dtype(df[col])
                or isinstance(df[col].dtype, pd.CategoricalDtype)):
            continue
        labels = df[col].nunique()
        varies = df.groupby(questions, sort=False)[col].nunique().max() > 1
        if varies and 2 * labels <= len(df):
            found.append((not named, col))
    return [col for _, col in sorted(found, key=lambda item: (item[0], str(item[1])))]


def _refuse_pooled_models(df: pd.DataFrame, question_col: str, used: Sequence[str]) -> None:
    suspects = model_like_columns(df, question_col, used)
    if suspects:
        col = suspects[0]
        raise WinrateInputError(
            f"no model column given, but column {col!r} looks like one ({df[col].nunique()} "
            f"values, several per question): pass it as the model column (model_col="
            f"{col!r}); if the rows really are resampled answers of one model, drop that column"
        )


def question_scores(
    df: pd.DataFrame, score_col: str, question_col: str, model_col: str | None = None,
    cluster_cols: Sequence[str] = (), scale: str = "auto",
) -> QuestionScores:
    """Validate a long answer table and aggregate it to question-level scores per model.

    ``scale`` (:data:`~winrate.evals._checks.SCALES`): ``binary`` (0/1), ``unit`` (in
    [0, 1]), ``other`` (any real, reported on its own scale), or ``auto`` (default): binary
    or unit from the values. A score outside the declared or inferred scale is an error
    naming its rows. Without ``model_col`` every row is one model's answer; a column that
    looks like a model column (:func:`model_like_columns`) is then an error.
    """
    cluster_cols = list(cluster_cols)
    keys = [question_col] + ([model_col] if model_col else [])
    _require_columns(df, [score_col, *keys, *cluster_cols])
    named = [score_col, *keys, *cluster_cols]
    if len(set(named)) != len(named):
        raise WinrateInputError("score, question, model and cluster columns must all differ")
    if df.empty:
        raise WinrateInputError("the score table has no rows")
    _check_no_missing(df, keys + cluster_cols)
    if not model_col:
        _refuse_pooled_models(df, question_col, named)
    raw = df[keys + cluster_cols].copy()
    raw[score_col] = _numeric_scores(df, score_col)
    scale = resolve_scale(raw[score_col].to_numpy(), scale, score_col, df.index)
    if not model_col:
        model_col_used = "__model__"
        raw[model_col_used] = SINGLE_MODEL
    else:
        model_col_used = model_col
    raw[model_col_used] = raw[model_col_used].astype(str)
    grouped = raw.groupby([question_col, model_col_used], sort=True)[score_col]
    scores = grouped.mean().unstack(model_col_used)
    answers = grouped.count().unstack(model_col_used).fillna(0).astype(int)
    clusters = _question_clusters(raw, question_col, cluster_cols).loc[scores.index]
    raw = raw.rename(columns={model_col_used: "__model__"})
    return QuestionScores(scores, answers, clusters, raw, score_col, question_col, model_col,
                          scale)


def question_scores_from_wide(
    scores: pd.DataFrame, clusters: pd.DataFrame | None = None, cluster_cols: Sequence[str] = ()
) -> QuestionScores:
    """Question-level scores from a questions x models matrix (NaN: no answer), e.g.
    :func:`winrate.io.datasets.mmlu_pro_correctness`, with per-question cluster labels taken
    from ``clusters[cluster_cols]`` (indexed by question)."""
    long = scores.rename_axis(index="question", columns="model").stack().dropna().rename("score")
    long = long.reset_index()
    if cluster_cols:
        if clusters is None:
            raise WinrateInputError("cluster_cols given without a clusters table")
        _require_columns(clusters, cluster_cols)
        missing = ~scores.index.isin(clusters.index)
        if missing.any():
            raise WinrateInputError(
                "the clusters table has no row for questions "
                f"{listed(scores.index[missing], limit=5)}"
            )
        labels = clusters.loc[long["question"], list(cluster_cols)].astype(str)
        long[list(cluster_cols)] = labels.to_numpy()
    return question_scores(long, "score", "question", "model", cluster_cols)


def answer_matrix(
    qs: QuestionScores, model: str, questions=None, min_k: int = 2
) -> np.ndarray | None:
    """(n, K) answers of one model on ``questions`` (default: every question it answered),
    rows in that order, when each of those questions has the same K >= ``min_k``; else None.
    Answers to other questions do not affect the balance check."""
    counts = qs.answers[model]
    counts = counts[counts > 0] if questions is None else counts.loc[questions]
    if counts.min() < min_k or counts.nunique() != 1:
        return None
    rows = qs.raw[qs.raw["__model__"] == model]
    order = rows.groupby(qs.question_col, sort=False).cumcount()
    wide = rows.assign(__k__=order.to_numpy()).pivot(
        index=qs.question_col, columns="__k__", values=qs.score_col
    )
    return wide.loc[counts.index].iloc[:, : int(counts.iloc[0])].to_numpy()


@dataclass(frozen=True, eq=False)
class EvalReport(IntervalResults):
    """Everything ``winrate eval`` computes: settings, per-model results and comparisons.

    ``to_frame()`` is the score table, ``summary()`` the printed report, ``conf_int(alpha,
    joint)`` (:meth:`winrate.inference.results.IntervalResults.conf_int`) the intervals of
    every model's mean at any level, indexed by model in the order of :meth:`to_frame`
    (recomputed from ``scores``, the question-level scores of :func:`evaluate`). Marginal:
    the report's interval method (``interval``) at this alpha; at the report's own alpha,
    the reported intervals. ``joint=True``: Wald-type intervals ``mean -/+ c se`` covering
    every model together, whatever the marginal method: ``c`` is the max-|T| critical
    value (t(G - 1) with the fewest clusters G when clustered) of the correlation of the
    means (:meth:`QuestionScores.mean_covariance`), scaled to each model's ``se``, built on
    the logit scale for means of scores in [0, 1] (:data:`MEAN_SCALES`). ``==`` is
    identity.
    """

    score_col: str
    question_col: str
    model_col: str | None
    cluster_cols: tuple[str, ...]
    correction: str
    alpha: float
    interval: str
    models: dict[str, ModelResult]
    comparisons: tuple[Comparison, ...]
    scale: str = "unit"
    notes: notes.Notes = field(default_factory=notes.Notes)
    scores: QuestionScores | None = field(default=None, repr=False)
    seed: int = 0

    def to_frame(self) -> pd.DataFrame:
        """One row per model, indexed by model, in the order of the score table: the raw
        numbers of :func:`winrate.evals.report.score_records` (mean, SEs, interval, n,
        clusters, design effect, ...)."""
        from winrate.evals.report import score_records

        return pd.DataFrame(score_records(self.models)).set_index("model")

    def interval_basis(self, joint: bool) -> IntervalBasis:
        """The means and SEs of the report; with ``joint``, their covariance: the
        correlation of the means scaled to each model's ``se`` (class doc)."""
        summaries = [r.summary for r in self.models.values()]
        mean = np.array([s.mean for s in summaries])
        se = np.array([s.se for s in summaries])
        cov = None
        if joint:
            cov = self._question_scores().mean_covariance(self.correction)
            sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
            ratio = np.divide(se, sd, out=np.zeros_like(se), where=sd > 0)
            cov = cov * np.outer(ratio, ratio)
        df = min((min(s.n_clusters) - 1 for s in summaries if s.n_clusters), default=None)
        return IntervalBasis(list(self.models), mean, se, MEAN_SCALES[self.scale], cov, df,
                             seed=self.seed)

    def reported_bounds(self, alpha: float, joint: bool, basis: IntervalBasis):
        """The marginal intervals of the report's method (``interval``): as reported at
        its own alpha, recomputed at another; None (Wald-type) for joint ones."""
        if joint:
            return None
        if alpha == self.alpha:
            return ([r.summary.ci_low for r in self.models.values()],
                    [r.summary.ci_high for r in self.models.values()])
        qs = self._question_scores()
        with notes.gathered():  # the report carries these notes already
            summaries = [model_summary(qs, m, self.correction, alpha, self.interval,
                                       self.seed) for m in basis.names]
        return [s.ci_low for s in summaries], [s.ci_high for s in summaries]

    def _question_scores(self) -> QuestionScores:
        if self.scores is None:
            raise WinrateInputError("this report has no question scores to recompute "
                                    "intervals from; build it with evaluate()")
        return self.scores

    def summary(self) -> Summary:
        """The score and pairwise tables as ``winrate eval`` prints them, under its opening
        sentence (:func:`winrate.evals.report.header`), statsmodels style, warnings
        numbered."""
        import textwrap

        from winrate.evals.report import header, pairwise_table, score_table

        return text_block("Eval statistics", [textwrap.fill(header(self), 80),
                                              score_table(self), pairwise_table(self)],
                          self.notes)

    def __str__(self) -> str:
        """``print(report)`` shows :meth:`summary`; ``repr`` stays one line."""
        return str(self.summary())

    def __repr__(self) -> str:
        return (f"EvalReport(models={len(self.models)}, comparisons={len(self.comparisons)}, "
                f"clusters={list(self.cluster_cols)}, interval={self.interval!r}, "
                f"alpha={self.alpha:g})")


def _model_name(qs: QuestionScores, model: str) -> str:
    return f"model {model!r}" if qs.model_col else "the scores"


def model_summary(qs: QuestionScores, model: str, correction: str, alpha: float,
                  interval: str, seed: int) -> ScoreSummary:
    """:func:`summarize_scores` of one model's question-level scores (the questions it
    answered) with their cluster labels."""
    column = qs.scores[model].dropna()
    return summarize_scores(
        column.to_numpy(), qs.cluster_arrays(column.index) or None, correction=correction,
        alpha=alpha, interval=interval, seed=seed, name=_model_name(qs, model),
    )


def _model_result(qs, model, correction, alpha, interval, seed) -> ModelResult:
    summary = model_summary(qs, model, correction, alpha, interval, seed)
    matrix = answer_matrix(qs, model)
    clusters = qs.cluster_arrays(qs.scores[model].dropna().index) or None
    components = None if matrix is None else variance_components(
        matrix, clusters, correction=correction, name=f"answers of {_model_name(qs, model)}"
    )
    k = qs.answers[model]
    return ModelResult(summary, float(k[k > 0].mean()), components)


def compare(qs: QuestionScores, model_a: str, model_b: str, *,
            correction: str = DEFAULT_CORRECTION, alpha: float = 0.05, bayes: bool = False,
            seed: int = 0) -> Comparison:
    """Paired comparison on the questions both models answered; for 0/1 scores also
    McNemar's test and, with ``bayes=True``, :func:`~winrate.evals.paired.paired_bayes`."""
    for m in (model_a, model_b):
        if m not in qs.scores.columns:
            raise WinrateInputError(f"model {m!r} not found; models: {listed(qs.models)}")
    both = qs.scores[[model_a, model_b]].dropna()
    if len(both) < len(qs.scores[[model_a, model_b]].dropna(how="all")):
        notes.emit(notes.common_questions(model_a, model_b, len(both)))
    a, b = both[model_a].to_numpy(), both[model_b].to_numpy()
    paired = paired_difference(
        a, b, qs.cluster_arrays(both.index) or None, correction=correction, alpha=alpha,
        names=(model_a, model_b),
    )
    binary = is_binary(a) and is_binary(b)
    test = mcnemar(a, b) if binary and np.any(a != b) else None
    posterior = paired_bayes(a, b, alpha=alpha, seed=seed) if bayes and binary else None
    return Comparison(model_a, model_b, paired, test, posterior)


def neighbour_pairs(results: dict[str, ModelResult]) -> list[tuple[str, str]]:
    """Adjacent pairs of models ordered by mean score, best first."""
    ranked = sorted(results, key=lambda m: -results[m].summary.mean)
    return list(zip(ranked[:-1], ranked[1:], strict=True))


def evaluate(
    qs: QuestionScores, *, correction: str = DEFAULT_CORRECTION, alpha: float = 0.05,
    interval: str = "auto", pairs: Sequence[tuple[str, str]] = (), neighbours: bool = False,
    bayes: bool = False, seed: int = 0,
) -> EvalReport:
    """Summaries of every model and the requested paired comparisons (``bayes``: add the
    Bayesian paired model to comparisons of 0/1 scores)."""
    results, caught = {}, {}
    for m in qs.models:  # one call per model
        results[m], caught[m] = _recording(_model_result, qs, m, correction, alpha, interval,
                                           seed)
    wanted = list(pairs) + (neighbour_pairs(results) if neighbours else [])
    comparisons, found = _recording(
        lambda: tuple(compare(qs, a, b, correction=correction, alpha=alpha, bayes=bayes,
                              seed=seed) for a, b in wanted))
    merged = notes.Notes([*notes.per_model(caught), *map(notes.as_note, found)])
    for note in merged:
        notes.emit(note)
    return EvalReport(
        score_col=qs.score_col, question_col=qs.question_col, model_col=qs.model_col,
        cluster_cols=tuple(qs.clusters.columns), correction=correction, alpha=alpha,
        interval=interval, models=results, comparisons=comparisons, scale=qs.scale,
        notes=notes.Notes(merged), scores=qs, seed=seed,
    )


def _recording(call, *args):
    """``call(*args)`` and what it noted (not shown): winrate's notes, and the text of
    another library's warnings."""
    with notes.gathered() as found, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(*args)
    return result, [*found, *(str(w.message) for w in caught)]
