"""Eval statistics for per-question scores.

The toolkit of Miller (2024, "Adding Error Bars to Evals", arXiv 2411.00640) and Bowyer,
Aitchison & Ivanova (2025, "Don't Use the CLT in LLM Evals With Fewer Than a Few Hundred
Datapoints", arXiv 2503.01747): clustered SEs through :mod:`winrate.variance.sandwich`, small-N
intervals, resampling, paired comparisons, power analysis and paper-style reports.

Every name is imported on first use (PEP 562), so the command line's parser
(:mod:`winrate.evals.cli`) loads none of the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from winrate._lazy import lazy_attributes, public_names

if TYPE_CHECKING:  # the names of _EXPORTS, re-exported for type checkers
    from winrate.evals.frame import EvalReport as EvalReport
    from winrate.evals.frame import QuestionScores as QuestionScores
    from winrate.evals.frame import compare as compare
    from winrate.evals.frame import evaluate as evaluate
    from winrate.evals.frame import neighbour_pairs as neighbour_pairs
    from winrate.evals.frame import question_scores as question_scores
    from winrate.evals.intervals import BINOMIAL_METHODS as BINOMIAL_METHODS
    from winrate.evals.intervals import BinomialInterval as BinomialInterval
    from winrate.evals.intervals import ClusteredBayesInterval as ClusteredBayesInterval
    from winrate.evals.intervals import Coverage as Coverage
    from winrate.evals.intervals import binomial_interval as binomial_interval
    from winrate.evals.intervals import clustered_bayes_interval as clustered_bayes_interval
    from winrate.evals.intervals import exact_average_coverage as exact_average_coverage
    from winrate.evals.paired import DifferenceTest as DifferenceTest
    from winrate.evals.paired import McNemarResult as McNemarResult
    from winrate.evals.paired import PairedBayesResult as PairedBayesResult
    from winrate.evals.paired import PairedComparison as PairedComparison
    from winrate.evals.paired import bivariate_normal_cdf as bivariate_normal_cdf
    from winrate.evals.paired import mcnemar as mcnemar
    from winrate.evals.paired import mcnemar_counts as mcnemar_counts
    from winrate.evals.paired import paired_bayes as paired_bayes
    from winrate.evals.paired import paired_difference as paired_difference
    from winrate.evals.paired import prob_a_beats_b as prob_a_beats_b
    from winrate.evals.paired import unpaired_difference as unpaired_difference
    from winrate.evals.power import PowerInputs as PowerInputs
    from winrate.evals.power import detectable_difference as detectable_difference
    from winrate.evals.power import estimate_power_inputs as estimate_power_inputs
    from winrate.evals.power import minimum_detectable_effect as minimum_detectable_effect
    from winrate.evals.power import power_at as power_at
    from winrate.evals.power import sample_size as sample_size
    from winrate.evals.report import pairwise_table as pairwise_table
    from winrate.evals.report import report_json as report_json
    from winrate.evals.report import score_table as score_table
    from winrate.evals.results import Comparison as Comparison
    from winrate.evals.results import ModelResult as ModelResult
    from winrate.evals.runs import RunComparison as RunComparison
    from winrate.evals.runs import compare_runs as compare_runs
    from winrate.evals.runs import runs_scores as runs_scores
    from winrate.evals.summary import ScoreSummary as ScoreSummary
    from winrate.evals.summary import VarianceComponents as VarianceComponents
    from winrate.evals.summary import icc_anova as icc_anova
    from winrate.evals.summary import summarize_scores as summarize_scores
    from winrate.evals.summary import variance_components as variance_components
    from winrate.io.logs import read_table as read_table
    from winrate.io.runs import read_runs as read_runs

#: Module -> its public names; a module is imported when one of its names is first used.
_EXPORTS = {
    "winrate.io.logs": ("read_table",),
    "winrate.io.runs": ("read_runs",),
    "winrate.evals.runs": ("RunComparison", "compare_runs", "runs_scores"),
    "winrate.evals.frame": ("EvalReport", "QuestionScores", "compare", "evaluate",
                            "neighbour_pairs", "question_scores"),
    "winrate.evals.results": ("Comparison", "ModelResult"),
    "winrate.evals.intervals": ("BINOMIAL_METHODS", "BinomialInterval", "ClusteredBayesInterval",
                                "Coverage", "binomial_interval", "clustered_bayes_interval",
                                "exact_average_coverage"),
    "winrate.evals.paired": ("DifferenceTest", "McNemarResult", "PairedBayesResult",
                             "PairedComparison", "bivariate_normal_cdf", "mcnemar",
                             "mcnemar_counts", "paired_bayes", "paired_difference",
                             "prob_a_beats_b", "unpaired_difference"),
    "winrate.evals.power": ("PowerInputs", "detectable_difference", "estimate_power_inputs",
                            "minimum_detectable_effect", "power_at", "sample_size"),
    "winrate.evals.report": ("pairwise_table", "report_json", "score_table"),
    "winrate.evals.summary": ("ScoreSummary", "VarianceComponents", "icc_anova", "summarize_scores",
                              "variance_components"),
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
