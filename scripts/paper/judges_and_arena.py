"""Few judges and arena-style results on PRD, QLoRA and AlpacaEval.

* **Few judges** (:func:`few_judges`): PRD's judge axis (5 LLM reviewers, who are also the
  contestants, plus the human raters), clustered by judge with every few-cluster method:
  the CR1 sandwich with a normal and a t(G - 1) reference, the delete-one-judge jackknife
  (CV3J) with t(G - 1), and the wild cluster bootstrap (Webb weights), next to the
  prompt-only clustering that conditions on the judges.
* **Arena-style** (:func:`arena`): Bradley-Terry ratings with prompt-clustered intervals
  against the row bootstrap that treats comparisons as independent (what arena
  leaderboards publish), on QLoRA, PRD and AlpacaEval (``baseline=`` for AlpacaEval's
  one-baseline design).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from common import Paper, fmt
from real_data import read_log

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.settings import MonteCarlo, Variance
from winrate.variance.reference import reference_label

FEW_JUDGE_METHODS = (  # (label, clustering, variance method)
    ("prompt only (conditional on the judges)", "prompt", Variance("sandwich")),
    ("sandwich CR1, normal", "judge", Variance("sandwich")),
    ("sandwich CR1, t(G - 1)", "judge", Variance("sandwich", reference="t")),
    ("jackknife CV3J, t(G - 1)", "judge", Variance("jackknife")),
    ("wild cluster bootstrap (Webb)", "judge", Variance("bootstrap")),
)
ARENA_DATASETS = {"qlora": None, "prd": None, "alpaca_eval": "gpt4_1106_preview"}
ARENA_SEED = 0


def _quiet(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


def few_judges(paper: Paper) -> None:
    """Table ``few_judges``: PRD's judge axis under every few-cluster method."""
    log, _ = read_log("prd")
    n_judges = log.axes["judge"].n_clusters
    rows, widths = [], []
    for label, cluster, variance in FEW_JUDGE_METHODS:
        result = _quiet(log, cluster=cluster, monte_carlo=MonteCarlo(seed=0), variance=variance)
        width = result.intervals.high - result.intervals.low
        widths.append(float(np.nanmedian(width)))
        rows.append({"method": label, "clusters": f"{log.axes[cluster].n_clusters}",
                     "median SE (points)": fmt(100 * np.nanmedian(result.se)),
                     "median 95% CI width (points)": fmt(100 * np.nanmedian(width)),
                     "reference": reference_label(result.intervals.df)})
    paper.table("few_judges", pd.DataFrame(rows),
                f"PRD clustered by its {n_judges} judges: what each few-cluster method gives.")
    paper.number("prd_few_judges", n_judges, "d")
    paper.number("prd_judge_df", n_judges - 1, "d")
    for key, width in zip(("prompt", "normal", "t", "jackknife", "wild"), widths, strict=True):
        paper.number(f"prd_width_{key}", 100 * width)
    paper.number("prd_width_spread", max(widths[1:]) / min(widths[1:]), ".1f")


def rating_dependence(cov: np.ndarray) -> tuple[float, float]:
    """Medians over model pairs of the correlation of two ratings, ``V_ab / sqrt(V_aa V_bb)``,
    and of ``SE(r_a - r_b) / sqrt(V_aa + V_bb)`` (1 if the errors were independent, below 1
    when they are positively correlated), over the models with a positive variance (a
    fixed baseline or anchor has none)."""
    var = np.diag(cov)
    keep = var > 0
    sub, var = cov[np.ix_(keep, keep)], var[keep]
    low, high = np.triu_indices(var.size, 1)
    covariance, independent = sub[low, high], var[low] + var[high]
    correlation = covariance / np.sqrt(var[low] * var[high])
    return (float(np.median(correlation)),
            float(np.median(np.sqrt((independent - 2 * covariance) / independent))))


def arena(paper: Paper) -> None:
    """Table ``arena_bt``: Bradley-Terry SEs clustered by prompt vs the row bootstrap."""
    rows = []
    for name, baseline in ARENA_DATASETS.items():
        log, _ = read_log(name)
        extra = {} if baseline is None else {"baseline": baseline}
        clustered = _quiet(log, model="bt", cluster="prompt", **extra)
        rows_boot = _quiet(log, model="bt", cluster="none", variance=Variance("bootstrap"),
                           monte_carlo=MonteCarlo(seed=ARENA_SEED), **extra)
        ratio = clustered.se / rows_boot.se
        rows.append({"dataset": name, "models": str(log.n_models),
                     "median SE, row bootstrap": fmt(np.nanmedian(rows_boot.se)),
                     "median SE, clustered by prompt": fmt(np.nanmedian(clustered.se)),
                     "ratio median [range]": f"{fmt(np.nanmedian(ratio))} "
                     f"[{fmt(np.nanmin(ratio))}, {fmt(np.nanmax(ratio))}]"})
        key = f"arena_{name.replace('alpaca_eval', 'alpaca')}"
        paper.number(f"{key}_ratio", np.nanmedian(ratio))
        if baseline is not None:  # the shared baseline answer correlates the ratings
            correlation, difference = rating_dependence(clustered.cov)
            paper.number(f"{key}_corr", correlation)
            paper.number(f"{key}_corr_rows", rating_dependence(rows_boot.cov)[0])
            paper.number(f"{key}_diff_ratio", difference)
    paper.table("arena_bt", pd.DataFrame(rows),
                "Bradley-Terry ratings: prompt-clustered SE against the row bootstrap.")
