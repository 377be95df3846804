"""Runs of one eval compared question by question: what ``winrate compare`` computes.

Two runs (two models, or a model before and after a change) give the paired comparison of
:func:`winrate.evals.frame.compare`, the first run against the second as baseline: the
difference, its standard error clustered by question (or by cluster columns), the Wald
interval, McNemar's exact test for 0/1 scores, and the minimal detectable difference of
the design at the power asked (:func:`winrate.evals.power.detectable_difference`). These
are the numbers of :func:`winrate.evals.frame.evaluate` with ``pairs=[(A, B)]``, the
report ``winrate eval --paired A B`` prints: :func:`compare_runs` calls it.

More runs give a pairwise leaderboard: the runs ranked by mean score, every pair (higher
against lower) with the same numbers, and intervals covering all pairs at once
(:func:`winrate.inference.joint.pairwise_differences`, max-|T| over the pairs) from the
covariance of the runs' means (:meth:`~winrate.evals.frame.QuestionScores.mean_covariance`).
Questions independent (clustered by question), that covariance is ``U^T U`` with ``U`` the
questions' influence ``(x_qm - xbar_m) / n`` and is scaled by ``n / (n - 1)``: then each
pair's ``sqrt(V_ii + V_jj - 2 V_ij)`` is ``sqrt(sum (d_q - dbar)^2 / (n (n - 1)))``, the
paired SE of Miller (2024, sec. 4.2) that the marginal numbers use (and CR1 by question:
``G / (G - 1)`` with ``G = n``). With cluster columns it is the clustered covariance with
the eval's correction, and the reference is t(G - 1), G the fewest clusters of any column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from winrate.constants import DEFAULT_CORRECTION
from winrate.errors import WinrateInputError, listed
from winrate.evals.frame import EvalReport, QuestionScores, evaluate, question_scores
from winrate.evals.power import detectable_difference
from winrate.inference.joint import PairwiseDifferences, pairwise_differences
from winrate.io.runs import Runs, check_questions
from winrate.report.text import Summary, text_block

#: Power of the minimal detectable difference unless asked otherwise.
DEFAULT_POWER = 0.8


@dataclass(frozen=True, eq=False)
class RunComparison:
    """What :func:`compare_runs` computes.

    ``report``: the :class:`~winrate.evals.frame.EvalReport` of the runs with their paired
    comparisons (``report.comparisons``: the first run against the second for two runs;
    every pair of ``ranked``, higher against lower, for more); ``runs`` in the order given,
    ``ranked`` best mean first; ``files``: each run's files; ``detectable``: the minimal
    detectable difference of each comparison at ``power``; ``joint``: for more than two
    runs, the simultaneous inference over all pairs, in the order of the comparisons.
    """

    report: EvalReport
    runs: tuple[str, ...]
    ranked: tuple[str, ...]
    files: dict[str, tuple[str, ...]]
    power: float
    detectable: tuple[float, ...]
    joint: PairwiseDifferences | None = None

    def summary(self) -> Summary:
        """The score and pairwise tables as ``winrate compare`` prints them, under its
        opening sentence."""
        import textwrap

        from winrate.evals.report import compare_header, compare_table, score_table

        return text_block("Run comparison", [textwrap.fill(compare_header(self), 80),
                                             score_table(self.report), compare_table(self)],
                          self.report.notes)

    def __str__(self) -> str:
        return str(self.summary())


def runs_scores(runs: Runs, cluster_cols: Sequence[str] = (), scale: str = "auto",
                ) -> QuestionScores:
    """The question-level scores of ``runs`` (:func:`winrate.io.runs.read_runs`), every
    run answering the same questions (:func:`winrate.io.runs.check_questions`), with the
    cluster columns ``cluster_cols`` (constant within a question)."""
    check_questions(runs)
    return question_scores(runs.frame, runs.score_col, runs.question_col, runs.run_col,
                           cluster_cols, scale=scale)


def compare_runs(qs: QuestionScores, runs: Sequence[str] | None = None, *,
                 correction: str = DEFAULT_CORRECTION, alpha: float = 0.05,
                 power: float = DEFAULT_POWER, seed: int = 0) -> RunComparison:
    """Compare the runs ``runs`` (default: every model of ``qs``, in its order) on their
    questions (module doc): two runs the first against the second, more every pair of
    the ranking with simultaneous intervals; each comparison with its minimal detectable
    difference at ``power``."""
    runs = tuple(qs.models if runs is None else runs)
    unknown = [r for r in runs if r not in qs.models]
    if len(runs) < 2 or unknown or len(set(runs)) < len(runs):
        raise WinrateInputError(f"give two or more different runs of {listed(qs.models)}, "
                                f"got {listed(runs)}")
    means = qs.scores[list(runs)].mean()
    ranked = tuple(sorted(runs, key=lambda r: -means[r]))
    if len(runs) == 2:
        pairs = [runs]
    else:
        i, j = np.triu_indices(len(runs), 1)
        pairs = [(ranked[a], ranked[b]) for a, b in zip(i, j, strict=True)]
    report = evaluate(qs, correction=correction, alpha=alpha, pairs=pairs, seed=seed)
    detectable = tuple(detectable_difference(c.paired.test.se, alpha, power, c.paired.test.df)
                       for c in report.comparisons)
    joint = (_all_pairs(qs, ranked, correction, alpha, seed) if len(runs) > 2 else None)
    files = {run: () for run in runs}
    return RunComparison(report, runs, ranked, files, power, detectable, joint)


def pair_covariance(qs: QuestionScores, runs: Sequence[str],
                    correction: str = DEFAULT_CORRECTION) -> np.ndarray:
    """The covariance of the runs' means whose pair contrasts carry the paired SEs of
    :func:`winrate.evals.paired.paired_difference` (module doc): the clustered covariance
    with ``correction`` by the cluster columns, or ``n / (n - 1) U^T U`` by question."""
    order = [qs.models.index(r) for r in runs]
    cov = qs.mean_covariance(correction)[np.ix_(order, order)]
    if qs.clusters.shape[1]:
        return cov
    n = len(qs.scores)
    return cov * n / (n - 1)


def _all_pairs(qs: QuestionScores, ranked: tuple[str, ...], correction: str, alpha: float,
               seed: int) -> PairwiseDifferences:
    """Every pair of ``ranked`` with intervals covering all pairs at once."""
    clustered = qs.clusters.shape[1] > 0
    df = min(qs.clusters[c].nunique() for c in qs.clusters.columns) - 1 if clustered else None
    means = qs.scores[list(ranked)].mean().to_numpy()
    return pairwise_differences(means, pair_covariance(qs, ranked, correction), alpha, df,
                                seed=seed)


def with_files(result: RunComparison, files: dict[str, tuple[str, ...]]) -> RunComparison:
    """``result`` with each run's files (as :class:`winrate.io.runs.Runs` holds them)."""
    from dataclasses import replace

    return replace(result, files={run: tuple(files.get(run, ())) for run in result.runs})
