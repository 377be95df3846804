"""What the eval statistics compute per model and per pair, as plain records: the
reports (:mod:`winrate.evals.report`) lay them out and :class:`winrate.evals.frame.EvalReport`
holds them."""

from __future__ import annotations

from dataclasses import dataclass

from winrate.evals.paired import McNemarResult, PairedBayesResult, PairedComparison
from winrate.evals.summary import ScoreSummary, VarianceComponents


@dataclass(frozen=True)
class ModelResult:
    """Per-model result: the :class:`ScoreSummary` of its question-level scores, the mean
    number of answers per question, and Miller's variance split when K >= 2 is balanced."""

    summary: ScoreSummary
    answers_per_question: float
    components: VarianceComponents | None


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of ``model_a`` and ``model_b`` on their common questions, with
    McNemar's test and (on request) the Bayesian paired model for 0/1 scores."""

    model_a: str
    model_b: str
    paired: PairedComparison
    mcnemar: McNemarResult | None
    bayes: PairedBayesResult | None = None
