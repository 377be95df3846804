"""The leaderboard analysis as users call it: :func:`analyze` and the result it returns.

:func:`winrate.inference.analysis.run_analysis` computes the numbers (an
:class:`~winrate.inference.analysis.Analysis`); :class:`LeaderboardAnalysis` adds what
presents them: the ranked table, the text report, pairwise differences, the plot, the web
page, and re-inference under another clustering without refitting.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from winrate.errors import WinrateInputError
from winrate.estimators.leaderboard import Leaderboard
from winrate.inference.analysis import Analysis, run_analysis
from winrate.report.text import Summary, text_block
from winrate.settings import Joint, MonteCarlo, Variance


@dataclass(frozen=True, eq=False, repr=False)
class LeaderboardAnalysis(Analysis):
    """Scores, joint covariance, intervals and diagnostics of one leaderboard.

    ``to_frame()`` is the ranked table, ``conf_int(alpha, joint)`` the intervals at any
    level, ``summary()`` the report the command line prints, ``params``, ``std_errors`` and
    ``cov_params()`` the labelled numbers, ``notes`` every warning with its code.
    ``==`` is identity.
    """

    def to_frame(self) -> pd.DataFrame:
        """One row per model, indexed by model, best score first: rank, score, se_naive,
        se, ci_low, ci_high, inflation, n, and the simultaneous intervals and rank sets
        when computed (:func:`winrate.report.leaderboard.leaderboard_table`; on the scale of
        ``scores``, e.g. win probabilities in [0, 1])."""
        from winrate.report.leaderboard import leaderboard_table

        return leaderboard_table(self).set_index("model")

    def pairwise_frame(self) -> pd.DataFrame:
        """All pairwise differences ``S_i - S_j`` with SE, p-values (marginal, Holm, max-T)
        and simultaneous bounds, one row per pair (``analyze(..., joint=Joint(pairwise=True))``)."""
        from winrate.report.leaderboard import pairwise_frame

        frame = pairwise_frame(self)
        if frame is None:
            raise WinrateInputError("pairwise differences were not computed: rerun "
                                    "analyze(..., joint=Joint(pairwise=True))")
        return frame

    def summary(self) -> Summary:
        """The report as ``winrate leaderboard`` prints it (settings, per-axis diagnostics,
        ranked table), statsmodels style, with the notes numbered below."""
        from winrate.report.leaderboard import format_summary, format_table

        return text_block("Leaderboard analysis", [format_summary(self), format_table(self)],
                          self.notes)

    def __str__(self) -> str:
        """``print(result)`` shows :meth:`summary` (as statsmodels' results do); ``repr``
        stays one line."""
        return str(self.summary())

    def with_clustering(self, cluster, variance: Variance | None = None,
                        **changes) -> LeaderboardAnalysis:
        """The same fit re-inferred under another clustering (and optionally another
        :class:`winrate.settings.Variance`, ``joint=``, ``monte_carlo=`` or ``alpha=``), as
        pyfixest's ``vcov()``: the estimator is not refitted."""
        old_variance, joint, monte_carlo = self.requested
        kwargs = {"variance": variance or old_variance, "joint": joint,
                  "monte_carlo": monte_carlo, "alpha": self.alpha, **changes}
        return analyze(self.log, cluster, board=self.leaderboard, **kwargs)

    def plot(self, path=None):
        """The forest and rank plot (:func:`winrate.report.plots.leaderboard_figure`).

        Returns the ``matplotlib.figure.Figure`` when ``path`` is None (show it, or save it
        with ``savefig``); with ``path``, writes the plot there (its suffix names the
        format, e.g. ``.png``, ``.pdf``, ``.svg``) and returns that ``pathlib.Path``."""
        from winrate.report.plots import leaderboard_figure, plot_leaderboard

        return leaderboard_figure(self) if path is None else plot_leaderboard(self, path)

    def to_html(self, path=None, title: str | None = None) -> str:
        """The analysis as one self-contained web page (:mod:`winrate.report.html_page`), also
        written to ``path`` when given."""
        from winrate.report import html_page
        from winrate.report import leaderboard as report

        return html_page.publish(report.to_dict(self), path, title)

    def _repr_html_(self) -> str:
        from winrate.report.html_page import notebook_frame

        return notebook_frame(self.to_html())

    def plan(self, **options):
        """How much more data this leaderboard needs: prompts, judges or comparisons to
        detect a difference (``models=``, ``delta=``) or every adjacent gap of the top
        ``top`` with ``power`` (:func:`winrate.planning.plan`)."""
        from winrate.planning import plan

        return plan(self, **options)

    def check_coverage(self, reps: int = 200, seed: int = 0, **options):
        """The coverage of these intervals on this log's own design, by simulation
        (:func:`winrate.check.check_coverage`; ``workers=``, ``progress=``)."""
        from winrate.check import check_coverage

        return check_coverage(self, reps=reps, seed=seed, **options)


def analyze(log, cluster=None, model: str | None = None, *, variance: Variance | None = None,
            joint: Joint | None = None, monte_carlo: MonteCarlo | None = None,
            alpha: float = 0.05, board: Leaderboard | None = None,
            progress: bool | None = None, **options) -> LeaderboardAnalysis:
    """Fit scores and their clustered covariance, intervals and diagnostics.

    ``log``: a :class:`ComparisonLog`, or a DataFrame or file path read by
    :func:`winrate.read_comparisons` with the default column names, or the per-question
    score table of :func:`winrate.scores_log` (every two models compared on every
    question, the pairs never built; the sandwich only).
    ``cluster`` names the axes (``"none"``, ``"prompt"``, ``"judge"``, ``"prompt+judge"`` or
    any extra axis of the log); None (default): ``prompt+judge``, or those of the two the
    log can be clustered by, with a note saying which and why
    (:func:`winrate.inference.plan.default_clustering`). ``model`` names the estimator
    (:data:`winrate.estimators.REGISTRY`; default the win rate) and ``options`` are its options
    (``weights``, ``baseline``, ``anchor``, ``covariates``, ``prior``, ``ties``, as it declares
    them). Everything below reads only the estimator's influence and asks the estimator what it
    supports.

    ``variance`` (:class:`winrate.settings.Variance`): the method, ``"auto"`` by default
    (method, correction and reference chosen from the design by
    :func:`winrate.variance.method_choice.choose`), ``"sandwich"`` (the multiway CR sandwich),
    ``"jackknife"`` (CV3J with t(G - 1)) or ``"bootstrap"``
    (:func:`winrate.variance.resampling.resampled_variance`); a correction or reference given there
    is kept; ``method_note`` says which and why. ``joint``
    (:class:`winrate.settings.Joint`) adds simultaneous intervals, rank sets and pairwise
    differences (:class:`winrate.inference.analysis.JointInference`) with the draws and seed of
    ``monte_carlo`` (:class:`winrate.settings.MonteCarlo`, which also seeds the bootstraps).
    ``board``: a fit of this log (:func:`winrate.estimators.fit`) to analyse under several
    clusterings without refitting; an option given here that differs from the fit's is an error
    naming both. ``progress``: progress bars (:mod:`winrate.progress`; None: on a terminal). Every
    note is kept on the result (``notes``, each with a code) and given once as a
    :class:`WinrateWarning` (:func:`winrate.notes.give`).
    """
    return run_analysis(log, cluster, model, variance=variance, joint=joint,
                        monte_carlo=monte_carlo, alpha=alpha, board=board, progress=progress,
                        into=LeaderboardAnalysis, **options)
