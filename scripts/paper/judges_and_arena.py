"""Few judges and Bradley-Terry results on PRD, QLoRA and AlpacaEval.

* **Few judges** (:func:`few_judges`): PRD's judge axis (5 LLM reviewers, who are also the
  contestants, plus the human raters), clustered by judge with every few-cluster method:
  the CR1 sandwich with a normal and a t(G - 1) reference, the delete-one-judge jackknife
  (CV3J) with t(G - 1), and the wild cluster bootstrap (Webb weights), next to the
  prompt-only clustering that conditions on the judges. All on one log with one estimand:
  PRD restricted to the model pairs compared by at least two judges
  (:func:`multi_judge_rows`). On the full log 22 pairs (the Guanaco models' and their
  opponents') are compared by the human raters alone; deleting that judge deletes those
  pairs, so the jackknife's delete-one estimates would be win rates of another leaderboard
  (other opponents, other weights), and the judge axis would see no variance for them.
  On the restricted log every pair is compared by every judge, so deleting any judge
  leaves every pair, and every method targets the same win rates.
* **Bradley-Terry** (:func:`arena`): ratings with prompt-clustered intervals against the
  row bootstrap that treats comparisons as independent (what arena leaderboards publish),
  on QLoRA, PRD and AlpacaEval (``baseline=`` for AlpacaEval's one-baseline design).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from common import Paper, fmt
from real_data import read_log

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators import fit
from winrate.io.logs import ClusterAxis, ComparisonLog, factorize_groups
from winrate.settings import MonteCarlo, Variance
from winrate.variance.diagnostics import largest_cluster_share
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
ARENA_LABELS = {"qlora": "QLoRA", "prd": "PRD", "alpaca_eval": "AlpacaEval 2.0 (vs its baseline)"}


def _quiet(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


def judges_per_pair(log: ComparisonLog) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the code of its unordered model pair, ``min(a, b) K + max(a, b)``, and the
    number of distinct judges that compared that pair anywhere in the log."""
    k, judge = log.n_models, log.axes["judge"]
    pair = np.minimum(log.model_a, log.model_b).astype(np.int64) * k + np.maximum(
        log.model_a, log.model_b)
    pair_judge = np.unique(pair * judge.n_clusters + judge.codes)
    n_judges = np.bincount(pair_judge // judge.n_clusters, minlength=k * k)
    return pair, n_judges[pair]


def take_rows(log: ComparisonLog, keep: np.ndarray) -> ComparisonLog:
    """The rows ``keep`` of ``log`` with models and clusters that have no row left dropped
    (codes made dense again, labels kept)."""
    models, coded = factorize_groups(np.concatenate([log.model_a[keep], log.model_b[keep]]))
    a, b = np.split(models, 2)
    axes = {}
    for name, axis in log.axes.items():
        codes, used = factorize_groups(axis.codes[keep])
        axes[name] = ClusterAxis(codes, axis.labels[used])
    return ComparisonLog(
        a.astype(np.int32), b.astype(np.int32), log.score[keep], log.models[coded], axes,
        None if log.frequency is None else log.frequency[keep],
        {name: values[keep] for name, values in log.features.items()})


def multi_judge_rows(log: ComparisonLog) -> tuple[ComparisonLog, np.ndarray]:
    """``log`` without the model pairs that a single judge compared (deleting that judge
    would delete them), and the boolean mask of the rows of ``log`` left out."""
    single = judges_per_pair(log)[1] < 2
    return take_rows(log, ~single), single


def few_judges(paper: Paper) -> None:
    """Table ``few_judges``: PRD's judge axis under every few-cluster method, all on the
    pairs compared by at least two judges (:func:`multi_judge_rows`)."""
    full, _ = read_log("prd")
    log, single = multi_judge_rows(full)
    lost = np.unique(judges_per_pair(full)[0][single]).size
    judge = full.axes["judge"]
    lost_by = ", ".join(map(str, np.unique(judge.labels[judge.codes[single]])))
    pair, judges_of_pair = judges_per_pair(log)
    n_judges, n_pairs = log.axes["judge"].n_clusters, np.unique(pair).size
    rows, widths = [], []
    for label, cluster, variance in FEW_JUDGE_METHODS:
        result = _quiet(log, cluster=cluster, monte_carlo=MonteCarlo(seed=0), variance=variance)
        width = result.intervals.high - result.intervals.low
        widths.append(float(np.nanmedian(width)))
        rows.append({"method": label, "clusters": f"{log.axes[cluster].n_clusters}",
                     "median SE (points)": fmt(100 * np.nanmedian(result.se)),
                     "median 95% CI width (points)": fmt(100 * np.nanmedian(width)),
                     "reference": ("bootstrap percentile-t" if variance.method == "bootstrap"
                                   else reference_label(result.intervals.df))})
    by = "all" if judges_of_pair.min() == n_judges else "at least two of the"
    paper.table("few_judges", pd.DataFrame(rows),
                f"PRD's judge axis under each few-cluster method. Estimand, the same in every "
                f"row: the win rate of each of {log.n_models} models against the other "
                f"{log.n_models - 1}, on the {n_pairs} model pairs compared by {by} "
                f"{n_judges} judges ({log.n_comparisons:,.0f} comparisons). The {lost} pairs "
                f"compared by one judge only ({lost_by}) are left out: deleting that judge "
                "(jackknife) would delete them and change the leaderboard.")
    paper.number("prd_few_judges", n_judges, "d")
    paper.number("prd_judge_df", n_judges - 1, "d")
    paper.number("prd_jackknife_lost_pairs", lost, "d")
    paper.number("prd_lost_pairs_judge", lost_by)
    paper.number("prd_multijudge_pairs", n_pairs, "d")
    paper.number("prd_multijudge_models", log.n_models, "d")
    paper.number("prd_multijudge_comparisons", log.n_comparisons, ",.0f")
    paper.number("prd_multijudge_min_judges", judges_of_pair.min(), "d")
    for key, width in zip(("prompt", "normal", "t", "jackknife", "wild"), widths, strict=True):
        paper.number(f"prd_width_{key}", 100 * width)
    paper.number("prd_width_spread", max(widths[1:]) / min(widths[1:]), ".1f")
    board = fit(log)
    share = largest_cluster_share(board.influence, log.axes["judge"].codes)[0][board.codes]
    paper.number("prd_multijudge_judge_share_max", np.nanmax(share), ".3f")
    on_full = _quiet(full, cluster="judge", variance=Variance("jackknife"))
    paper.number("prd_width_jackknife_full_log",
                 100 * np.nanmedian(on_full.intervals.high - on_full.intervals.low))


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
        rows.append({"dataset": ARENA_LABELS[name], "models": str(log.n_models),
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
                "Bradley-Terry ratings (Elo points): prompt-clustered SE against winrate's "
                f"row bootstrap (comparisons resampled independently, seed {ARENA_SEED}); "
                "ratio: per-model clustered / bootstrap SE, median and range over models.")
