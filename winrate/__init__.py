"""winrate: honest, cluster-robust error bars for LLM evaluation results.

The main job takes three calls::

    import winrate

    log = winrate.read_comparisons("example.csv")      # or a DataFrame, or read_dataset(NAME)
    result = winrate.analyze(log, cluster="prompt+judge")
    print(result.summary())                            # also to_frame(), conf_int(alpha)

``winrate.explore(log)`` reports how much each clustering inflates the SEs;
``winrate.evaluate(winrate.question_scores(...))`` gives the eval statistics of per-question
scores, and ``winrate.analyze(winrate.scores_log(...), cluster="prompt")`` their pairwise
leaderboard without building the pairs. Every public name is imported on first use (PEP
562), so ``import winrate`` is instant and loads no numerical library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from winrate._lazy import lazy_attributes, public_names

if TYPE_CHECKING:  # the names of _EXPORTS, re-exported for type checkers (test_api checks)
    from winrate.analysis import LeaderboardAnalysis as LeaderboardAnalysis
    from winrate.analysis import analyze as analyze
    from winrate.constants import CORRECTIONS as CORRECTIONS
    from winrate.constants import DATASET_NAMES as DATASET_NAMES
    from winrate.constants import LOG_FORMATS as LOG_FORMATS
    from winrate.constants import VARIANCE_METHODS as VARIANCE_METHODS
    from winrate.diff import diff_releases as diff_releases
    from winrate.eda import EdaReport as EdaReport
    from winrate.eda import explore as explore
    from winrate.eda import explore_dataset as explore_dataset
    from winrate.errors import WinrateInputError as WinrateInputError
    from winrate.errors import WinrateWarning as WinrateWarning
    from winrate.estimators import ESTIMATORS as ESTIMATORS
    from winrate.estimators import fit as fit
    from winrate.evals.frame import EvalReport as EvalReport
    from winrate.evals.frame import compare as compare
    from winrate.evals.frame import evaluate as evaluate
    from winrate.evals.frame import question_scores as question_scores
    from winrate.evals.intervals import binomial_interval as binomial_interval
    from winrate.evals.paired import mcnemar as mcnemar
    from winrate.evals.paired import paired_difference as paired_difference
    from winrate.evals.power import minimum_detectable_effect as minimum_detectable_effect
    from winrate.evals.power import sample_size as sample_size
    from winrate.evals.summary import summarize_scores as summarize_scores
    from winrate.inference.joint import pairwise_differences as pairwise_differences
    from winrate.inference.joint import rank_sets as rank_sets
    from winrate.inference.joint import simultaneous_intervals as simultaneous_intervals
    from winrate.io.datasets import read_dataset as read_dataset
    from winrate.io.formats import read_log as read_log
    from winrate.io.harness import read_harness as read_harness
    from winrate.io.logs import ComparisonLog as ComparisonLog
    from winrate.io.logs import read_comparisons as read_comparisons
    from winrate.io.logs import read_table as read_table
    from winrate.io.scan import Scan as Scan
    from winrate.io.scan import scan as scan
    from winrate.io.scores import scores_log as scores_log
    from winrate.io.simulate import SimulationDesign as SimulationDesign
    from winrate.io.simulate import simulate_comparisons as simulate_comparisons
    from winrate.judges import audit_judges as audit_judges
    from winrate.notes import Note as Note
    from winrate.notes import Notes as Notes
    from winrate.settings import Joint as Joint
    from winrate.settings import MonteCarlo as MonteCarlo
    from winrate.settings import Variance as Variance

#: Module -> its public names; a module is imported when one of its names is first used.
_EXPORTS = {
    # reading comparison logs and score tables
    "winrate.io.logs": ("ComparisonLog", "read_comparisons", "read_table"),
    "winrate.io.datasets": ("read_dataset",),
    "winrate.io.formats": ("read_log",),
    "winrate.io.scores": ("scores_log",),
    "winrate.io.harness": ("read_harness",),
    "winrate.io.scan": ("scan", "Scan"),
    "winrate.constants": ("VARIANCE_METHODS", "CORRECTIONS", "DATASET_NAMES", "LOG_FORMATS"),
    # leaderboards: estimator, covariance, intervals, diagnostics
    "winrate.estimators": ("ESTIMATORS", "fit"),
    "winrate.settings": ("Variance", "Joint", "MonteCarlo"),
    "winrate.notes": ("Note", "Notes"),
    "winrate.analysis": ("analyze", "LeaderboardAnalysis"),
    "winrate.eda": ("explore", "explore_dataset", "EdaReport"),
    # what leaderboard builders ask: judge biases, changes between releases
    "winrate.judges": ("audit_judges",),
    "winrate.diff": ("diff_releases",),
    # joint inference from any estimate and covariance
    "winrate.inference.joint": ("simultaneous_intervals", "pairwise_differences", "rank_sets"),
    # eval statistics of per-question scores
    "winrate.evals.frame": ("question_scores", "evaluate", "EvalReport", "compare"),
    "winrate.evals.summary": ("summarize_scores",),
    "winrate.evals.paired": ("paired_difference", "mcnemar"),
    "winrate.evals.intervals": ("binomial_interval",),
    "winrate.evals.power": ("sample_size", "minimum_detectable_effect"),
    # simulated crossed logs with known scores
    "winrate.io.simulate": ("SimulationDesign", "simulate_comparisons"),
    "winrate.errors": ("WinrateInputError", "WinrateWarning"),
}

__all__ = ["__version__", *public_names(_EXPORTS)]

_public_getattr, __dir__ = lazy_attributes(__name__, _EXPORTS)


def __getattr__(name: str):
    """A public name on first use; ``__version__`` from the installed package's metadata."""
    if name == "__version__":
        from importlib.metadata import version

        return version(__name__)
    return _public_getattr(name)
