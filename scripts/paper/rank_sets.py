"""Rank sets on real data, naive against clustered, and the forest plot of one leaderboard.

**Rank sets** (:func:`rank_set_results`): confidence sets ``{low_j, ..., high_j}`` for the
rank of each model (rank 1 = best; Mogstad, Romano, Shaikh & Wilhelm 2024, Review of
Economic Studies 91(1)). The headline sets are simultaneous at 95%: one family of the
one-sided hypotheses ``S_j <= S_k`` / ``S_j >= S_k`` over all ordered pairs, tested with the
max-|T| critical value and the Romano-Wolf step-down (:func:`winrate.inference.joint.rank_sets`,
``method="simultaneous"``); then

    low_j = 1 + #{k: S_k > S_j established},   high_j = K - #{k: S_k < S_j established},

and all K sets cover the true ranks jointly with probability >= 95%. The marginal sets
(each covers its own rank with probability >= 95%) are reported beside them. Per dataset and
variance :func:`summarise` gives the number of models K, the median width
``high - low + 1``, the share of singleton sets, the share of models whose set contains
rank 1 ("could be first"), and the number of model pairs whose order is established: each
established ``S_k > S_j`` raises ``low_j`` by one, so that number is ``sum_j (low_j - 1)``.

Data and variances:

* PRD, win rate and Bradley-Terry: independent comparisons (``cluster="none"``), clustered by
  prompt, and what :func:`winrate.analyze` chooses by default for this design.
* AlpacaEval 2.0 against its baseline ``gpt4_1106_preview``: independent comparisons and
  clustered by prompt (instruction). A model's win rate against the baseline has only its
  own comparisons, one per instruction, so its SE has no within-cluster covariance to add;
  two models' win rates share the baseline's answer to each instruction, so the covariance
  of their difference does, and rank sets are built from differences.
* Chatbot Arena (aggregated counts, no prompt or voter ids, so no clustering is possible):
  the independent-comparison covariance ``V`` of the Bradley-Terry ratings scaled to
  ``infl^2 V`` with ``infl`` the median over models of ``SE_prompt / SE_naive`` of
  Bradley-Terry measured here on PRD and on QLoRA (:func:`se_inflation`), and rank sets
  recomputed from it (:func:`scaled_rank_sets`). A common factor leaves every correlation and
  so every max-|T| critical value unchanged: it divides each statistic ``T_jk`` by ``infl``.

**Forest plot** (:func:`forest`): PRD's Bradley-Terry ratings on the Elo scale with three 95%
intervals per model: naive (independent comparisons), clustered by prompt, and clustered by
prompt simultaneous over all models (max-|T|), with the simultaneous rank sets beside them.
The Elo scale is what public leaderboards print, and PRD is where the naive intervals order
models that the clustered ones do not.

Every Monte-Carlo critical value uses the seed :data:`RANK_SEED`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from common import Paper, fmt, new_figure, pct
from judges_and_arena import ARENA_DATASETS
from matplotlib.lines import Line2D
from real_data import read_log

from winrate import estimators
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateWarning
from winrate.estimators.bradley_terry_kernels import DEFAULT_RATING
from winrate.inference.joint import RankSets, rank_sets
from winrate.settings import Joint, MonteCarlo
from winrate.variance.reference import reference_label

ALPHA = 0.05
RANK_SEED = 0
SIMULTANEOUS = Joint(simultaneous=True, ranks=True, rank_method="simultaneous")
MARGINAL = Joint(ranks=True, rank_method="marginal")
ALPACA_BASELINE = ARENA_DATASETS["alpaca_eval"]
NAIVE_LABEL = "naive"
PROMPT_LABEL = "prompt"
# Okabe & Ito (2008) colour-blind-safe palette: orange, blue, bluish green
FOREST_STYLES = (("naive 95% (independent comparisons)", "#E69F00", "o", "-"),
                 ("clustered by prompt, 95% per model", "#0072B2", "s", "-"),
                 ("clustered by prompt, 95% simultaneous (max-|T|)", "#009E73", "D", "--"))


@dataclass(frozen=True)
class RankSummary:
    """What one set of simultaneous rank sets says (module doc)."""

    models: int
    median_width: float
    singletons: float  # share of models with low == high
    could_be_first: float  # share of models with low == 1
    ordered_pairs: int  # pairs whose order is established
    pairs: int  # K (K - 1) / 2


def summarise(low, high) -> RankSummary:
    """Measures of simultaneous rank sets ``[low_j, high_j]`` (module doc)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    width = high - low + 1
    K = low.size
    return RankSummary(K, float(np.median(width)), float(np.mean(width == 1)),
                       float(np.mean(low == 1)), int(np.sum(low - 1)), K * (K - 1) // 2)


def scaled_rank_sets(scores, cov, inflation: float, method: str = "simultaneous") -> RankSets:
    """Rank sets from ``inflation**2 * cov``: what clustering by an axis that inflates
    every SE by the factor ``inflation`` would give, for data without that axis' ids."""
    return rank_sets(scores, inflation**2 * np.asarray(cov, float), ALPHA, method=method,
                     seed=RANK_SEED)


def _quiet(run, *args, **kwargs):
    """``run(*args, **kwargs)`` without its WinrateWarnings (the inflation tables report
    the design notes of these datasets)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return run(*args, **kwargs)


def _analyse(log, cluster, model=None, joint=SIMULTANEOUS, **options) -> LeaderboardAnalysis:
    return _quiet(analyze, log, cluster, model, joint=joint, alpha=ALPHA,
                  monte_carlo=MonteCarlo(seed=RANK_SEED), **options)


def _recluster(result: LeaderboardAnalysis, cluster, **changes) -> LeaderboardAnalysis:
    return _quiet(result.with_clustering, cluster, **changes)


def se_inflation(result: LeaderboardAnalysis) -> float:
    """Median over models of ``SE_clustered / SE_naive`` of a clustered analysis."""
    return float(np.nanmedian(result.se / result.se_naive))


@dataclass(frozen=True)
class RankRow:
    """One dataset under one variance: its simultaneous and marginal rank sets."""

    dataset: str
    estimator: str
    variance: str
    dataset_key: str  # e.g. ``prd_bt``
    variance_key: str  # e.g. ``naive``
    simultaneous: RankSummary
    marginal_width: float


def _estimable(result: LeaderboardAnalysis) -> np.ndarray:
    return ~np.isnan(result.scores)


def analysis_row(result: LeaderboardAnalysis, dataset: str, variance: str,
                 keys: tuple[str, str]) -> RankRow:
    """A row from an analysis with simultaneous rank sets; the marginal ones from the same
    fit re-inferred (:meth:`LeaderboardAnalysis.with_clustering`)."""
    keep = _estimable(result)
    marginal = _recluster(result, result.settings["cluster"], joint=MARGINAL)
    width = marginal.joint.rank_high - marginal.joint.rank_low + 1
    return RankRow(dataset, estimators.of(result.leaderboard).title, variance, *keys,
                   summarise(result.joint.rank_low[keep], result.joint.rank_high[keep]),
                   float(np.median(width[keep])))


def unidentified(result: LeaderboardAnalysis) -> int:
    """Models with a score but no SE (their variance is not identified on some axis): their
    rank set is every rank."""
    return int(np.sum(_estimable(result) & np.isnan(result.se)))


def _default_label(result: LeaderboardAnalysis) -> str:
    label = (f"default: {' + '.join(result.settings['cluster'])}, "
             f"{reference_label(result.intervals.df)}")
    missing = unidentified(result)
    return label + (f"; {missing} not estimable" if missing else "")


def prd_rows(prd_bt_prompt: LeaderboardAnalysis) -> tuple[list[RankRow], LeaderboardAnalysis]:
    """PRD, win rate and Bradley-Terry: naive, clustered by prompt, and the default."""
    log, _ = read_log("prd")
    rows, default = [], None
    for model, tag in ((None, "wr"), ("bt", "bt")):
        naive = _analyse(log, "none", model)
        prompt = prd_bt_prompt if model == "bt" else _analyse(log, "prompt", model)
        default = _analyse(log, None, model)
        rows += [analysis_row(naive, "PRD", NAIVE_LABEL, (f"prd_{tag}", "naive")),
                 analysis_row(prompt, "PRD", PROMPT_LABEL, (f"prd_{tag}", "prompt")),
                 analysis_row(default, "PRD", _default_label(default),
                              (f"prd_{tag}", "default"))]
    return rows, default


def difference_inflation(clustered: np.ndarray, naive: np.ndarray) -> float:
    """Median over model pairs ``a < b`` of ``SE_clustered(S_a - S_b) / SE_naive(S_a - S_b)``,
    ``SE(S_a - S_b) = sqrt(V_aa + V_bb - 2 V_ab)``."""
    a, b = np.triu_indices(clustered.shape[0], 1)

    def se(V):
        return np.sqrt(V[a, a] + V[b, b] - 2 * V[a, b])

    return float(np.median(se(clustered) / se(naive)))


def alpaca_rows() -> tuple[list[RankRow], dict[str, float]]:
    """AlpacaEval 2.0, each model's win rate against the baseline: naive and by prompt;
    plus the median inflation of the models' own SEs and of the SEs of their differences."""
    log, _ = read_log("alpaca_eval")
    label = "AlpacaEval"
    results = {tag: _analyse(log, cluster, baseline=ALPACA_BASELINE)
               for cluster, tag in (("none", "naive"), ("prompt", "prompt"))}
    rows = [analysis_row(results[tag], label, variance, ("alpaca", tag))
            for tag, variance in (("naive", NAIVE_LABEL), ("prompt", PROMPT_LABEL))]
    clustered = results["prompt"]
    keep = _estimable(clustered)
    cov, cov_naive = (V[np.ix_(keep, keep)] for V in (clustered.cov, clustered.cov_naive))
    return rows, {"own": se_inflation(clustered),
                  "difference": difference_inflation(cov, cov_naive)}


def arena_rows(inflations: dict[str, float]) -> list[RankRow]:
    """Chatbot Arena's Bradley-Terry ratings: the naive covariance, and scaled by each
    measured inflation squared (``inflations``: tag -> (label, factor))."""
    log, _ = read_log("chatbot_arena")
    naive = _analyse(log, "none", "bt", joint=Joint())
    keep = ~np.isnan(naive.se)
    scores, cov = naive.scores[keep], naive.cov[np.ix_(keep, keep)]
    rows = []
    for tag, (variance, factor) in {"naive": (NAIVE_LABEL, 1.0), **inflations}.items():
        sets = scaled_rank_sets(scores, cov, factor)
        marginal = scaled_rank_sets(scores, cov, factor, method="marginal")
        rows.append(RankRow("Chatbot Arena", estimators.of(naive.leaderboard).title,
                            variance, "arena", tag, summarise(sets.low, sets.high),
                            float(np.median(marginal.high - marginal.low + 1))))
    return rows


RANK_COLUMNS = ("dataset", "estimator", "variance", "models",
                "median width, simultaneous", "median width, marginal",
                "singleton sets %", "could be first %", "pairs ordered")


def _cells(row: RankRow) -> dict[str, str]:
    s = row.simultaneous
    return dict(zip(RANK_COLUMNS, (
        row.dataset, row.estimator, row.variance, str(s.models), fmt(s.median_width, ".1f"),
        fmt(row.marginal_width, ".1f"), pct(s.singletons, 0), pct(s.could_be_first, 0),
        f"{s.ordered_pairs:,} of {s.pairs:,}"), strict=True))


def _register(paper: Paper, row: RankRow) -> None:
    """``ranks_<dataset>_<variance>_<measure>``, and per dataset its models and pairs."""
    s, stem = row.simultaneous, f"ranks_{row.dataset_key}"
    key = f"{stem}_{row.variance_key}"
    paper.number(f"{key}_width", s.median_width, ".1f")
    paper.number(f"{key}_mwidth", row.marginal_width, ".1f")
    paper.number(f"{key}_single", pct(s.singletons, 0))
    paper.number(f"{key}_single_n", round(s.singletons * s.models), "d")
    paper.number(f"{key}_first", pct(s.could_be_first, 0))
    paper.number(f"{key}_first_n", round(s.could_be_first * s.models), "d")
    paper.number(f"{key}_ordered", s.ordered_pairs, ",d")
    if row.variance_key == "naive":
        paper.number(f"{stem}_models", s.models, "d")
        paper.number(f"{stem}_pairs", s.pairs, ",d")


def rank_set_results(paper: Paper) -> None:
    """Table ``rank_sets``, its numbers, and figure ``forest``."""
    prd_bt_prompt = _analyse(read_log("prd")[0], "prompt", "bt")
    qlora_bt_prompt = _analyse(read_log("qlora")[0], "prompt", "bt", joint=Joint())
    infl = {"prd": se_inflation(prd_bt_prompt), "qlora": se_inflation(qlora_bt_prompt)}
    scaled = {tag: (f"naive x {fmt(value)}^2 ({name})", value)
              for (tag, value), name in zip(infl.items(), ("PRD", "QLoRA"), strict=True)}
    prd, default = prd_rows(prd_bt_prompt)
    alpaca, alpaca_inflation = alpaca_rows()
    rows = prd + alpaca + arena_rows(scaled)
    paper.table("rank_sets", pd.DataFrame([_cells(r) for r in rows], columns=RANK_COLUMNS),
                "Confidence sets for ranks (rank 1 = best; Mogstad et al. 2024) at 95% under "
                "the independent-comparison (naive) covariance, clustered by prompt, and "
                "under the default analysis (clusters, reference distribution, and models "
                "whose SE is not identified, whose sets span every rank). AlpacaEval: each "
                f"model's win rate against {ALPACA_BASELINE}. Simultaneous sets "
                "cover all ranks jointly (max-|T| step-down), marginal sets each rank alone; "
                "width = upper - lower + 1 ranks. 'Could be first': the set contains rank 1. "
                "'Pairs ordered': model pairs whose order the simultaneous procedure "
                "establishes. Chatbot Arena publishes counts without prompt or voter ids; its "
                "last rows multiply the naive covariance of the Bradley-Terry ratings "
                "uniformly by the squared median prompt-clustered / naive SE ratio of "
                "Bradley-Terry on PRD or on QLoRA (a what-if, not an estimate). "
                f"Monte-Carlo critical values with seed {RANK_SEED}.")
    for row in rows:
        _register(paper, row)
    paper.number("ranks_prd_infl", infl["prd"])
    paper.number("ranks_qlora_infl", infl["qlora"])
    paper.number("ranks_prd_default_cluster", " + ".join(default.settings["cluster"]))
    paper.number("ranks_prd_default_reference", reference_label(default.intervals.df))
    paper.number("ranks_prd_default_unidentified", unidentified(default), "d")
    paper.number("ranks_alpaca_own_infl", alpaca_inflation["own"])
    paper.number("ranks_alpaca_diff_infl", alpaca_inflation["difference"])
    paper.number("ranks_seed", RANK_SEED, "d")
    forest(paper, prd_bt_prompt)


def forest(paper: Paper, clustered: LeaderboardAnalysis) -> None:
    """Figure ``forest``: PRD's Bradley-Terry ratings with three 95% intervals per model and
    the simultaneous rank sets, naive and clustered, at the right."""
    naive = _recluster(clustered, "none")
    table, naive_table = clustered.to_frame(), naive.to_frame().loc[clustered.ranked_models]
    intervals = ((naive_table.ci_low, naive_table.ci_high), (table.ci_low, table.ci_high),
                 (table.sim_low, table.sim_high))
    K = len(table)
    y = np.arange(K)[::-1].astype(float)
    fig = new_figure(7.2, 0.55 * K + 1.5)
    ax = fig.add_axes((0.2, 0.2, 0.58, 0.72))
    for shift, (low, high), (_, colour, marker, line) in zip(
            (0.22, 0.0, -0.22), intervals, FOREST_STYLES, strict=True):
        ax.hlines(y + shift, low, high, color=colour, linestyle=line, linewidth=2)
        ax.plot(table.score, y + shift, marker, color=colour, markersize=4)
    handles = [Line2D([], [], color=colour, marker=marker, linestyle=line, linewidth=2,
                      markersize=4, label=label)
               for label, colour, marker, line in FOREST_STYLES]
    ax.set_yticks(y, table.index)
    ax.set_ylim(-0.7, K - 0.3)
    ax.set_xlabel(f"Bradley-Terry rating (Elo points, 400/ln 10 per logit; mean rating "
                  f"{DEFAULT_RATING:g})")
    ax.grid(axis="x", color="0.9")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.6, -0.13), frameon=False,
              fontsize=8)
    ranks = [f"{int(a):d}-{int(b):d}".ljust(7) + f"{int(c):d}-{int(d):d}" for a, b, c, d in zip(
        naive_table.rank_low, naive_table.rank_high, table.rank_low, table.rank_high,
        strict=True)]
    for yy, text in zip([*y, K - 0.4], [*ranks, "rank set\n" + "naive".ljust(7) + "clustered"],
                        strict=True):
        ax.annotate(text, (1.02, yy), xycoords=("axes fraction", "data"),
                    va="center" if yy < K - 1 else "bottom", fontsize=8, family="monospace")
    log = clustered.log
    paper.figure("forest", fig,
                 f"PRD ({len(table)} models, {log.axes['prompt'].n_clusters} prompts): "
                 "Bradley-Terry ratings on the Elo scale, best first, each with three 95% "
                 "intervals: treating the comparisons as independent (naive), clustered by "
                 "prompt for each model alone, and clustered by prompt covering all models "
                 "at once (max-|T| critical value). Right: each model's simultaneous 95% "
                 "rank set (rank 1 = best) under the naive and the prompt-clustered "
                 f"covariance. Monte-Carlo seed {RANK_SEED}.")
    half = {"naive": naive_table.ci_high - naive_table.ci_low,
            "prompt": table.ci_high - table.ci_low, "sim": table.sim_high - table.sim_low}
    for key, width in half.items():
        paper.number(f"ranks_forest_{key}_halfwidth", float(np.median(width)) / 2, ".1f")
    paper.number("ranks_forest_crit", clustered.joint.simultaneous_critical_value)
