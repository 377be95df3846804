"""Eval statistics for per-question scores.

The toolkit of Miller (2024, "Adding Error Bars to Evals", arXiv 2411.00640) and Bowyer,
Aitchison & Ivanova (2025, "Don't Use the CLT in LLM Evals With Fewer Than a Few Hundred
Datapoints", arXiv 2503.01747): clustered SEs through :mod:`winrate.variance`, small-N
intervals, resampling, paired comparisons, power analysis and paper-style reports.
"""

from winrate.data import read_table
from winrate.evals.frame import (
    Comparison,
    EvalReport,
    ModelResult,
    QuestionScores,
    compare,
    evaluate,
    neighbour_pairs,
    question_scores,
)
from winrate.evals.intervals import (
    BINOMIAL_METHODS,
    BinomialInterval,
    ClusteredBayesInterval,
    Coverage,
    binomial_interval,
    clustered_bayes_interval,
    exact_average_coverage,
)
from winrate.evals.paired import (
    DifferenceTest,
    McNemarResult,
    PairedBayesResult,
    PairedComparison,
    bivariate_normal_cdf,
    mcnemar,
    mcnemar_counts,
    paired_bayes,
    paired_difference,
    prob_a_beats_b,
    unpaired_difference,
)
from winrate.evals.power import (
    PowerInputs,
    estimate_power_inputs,
    minimum_detectable_effect,
    power_at,
    sample_size,
)
from winrate.evals.report import pairwise_table, report_json, score_table
from winrate.evals.summary import (
    ScoreSummary,
    VarianceComponents,
    icc_anova,
    summarize_scores,
    variance_components,
)

__all__ = [
    "BINOMIAL_METHODS",
    "BinomialInterval",
    "ClusteredBayesInterval",
    "Comparison",
    "Coverage",
    "DifferenceTest",
    "EvalReport",
    "McNemarResult",
    "ModelResult",
    "PairedBayesResult",
    "PairedComparison",
    "PowerInputs",
    "QuestionScores",
    "ScoreSummary",
    "VarianceComponents",
    "binomial_interval",
    "bivariate_normal_cdf",
    "clustered_bayes_interval",
    "compare",
    "estimate_power_inputs",
    "evaluate",
    "exact_average_coverage",
    "icc_anova",
    "mcnemar",
    "mcnemar_counts",
    "minimum_detectable_effect",
    "neighbour_pairs",
    "paired_bayes",
    "paired_difference",
    "pairwise_table",
    "power_at",
    "prob_a_beats_b",
    "question_scores",
    "read_table",
    "report_json",
    "sample_size",
    "score_table",
    "summarize_scores",
    "unpaired_difference",
    "variance_components",
]
