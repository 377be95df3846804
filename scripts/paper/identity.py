"""Two results behind the real-data inflations: the per-question-eval identity and when
Kish's design effect reproduces the measured one.

**A. The per-question-eval identity** (:func:`identity`). On a per-question eval with 0/1
correctness ``C_qa`` every two models that answered question q are compared once, and a's
half-tie score against b is ``s_qab = (C_qa - C_qb + 1) / 2``. With every question answered
by all K models (Q questions, ``acc_a`` the accuracy):

* ``psi_ab = (acc_a - acc_b + 1) / 2``, so the win rate with uniform weights over the K - 1
  opponents is affine in the accuracy::

      S_a = 1/2 + (acc_a - mean_{b != a} acc_b) / 2.

* The influence of question q on ``S_a`` is ``t_qa = sum_b (s_qab - psi_ab) / ((K - 1) Q)
  = (D_qa - mean_q D_a) / (2 Q)`` with ``D_qa = C_qa - mean_{b != a} C_qb``; CR1 clustered
  by question, ``Q / (Q - 1) sum_q t_qa^2``, is therefore::

      Var_clustered(S_a) = s^2(D_a) / (4 Q),

  a quarter of the squared per-question SE of a's accuracy gap to its opponents
  (``s^2``: sample variance over questions, divisor Q - 1).
* The naive variance (rows independent, Cochran's per-pair ``N / (N - 1)``;
  :func:`winrate.variance.sandwich.naive_cov`) sums the pairs' binomial variances::

      Var_naive(S_a) = sum_{b != a} s^2(d_ab) / (4 (K - 1)^2 Q),   d_qab = C_qa - C_qb.

* So the design effect is ``DEFF_a = Var(sum_b d_ab) / sum_b Var(d_ab)``: the naive
  variance adds the K - 1 squared half-differences of a question, the clustered one squares
  their sum. Writing ``rho_a`` for the mean correlation of a's differences against two
  different opponents, ``DEFF_a = 1 + (K - 2) rho_a`` (Kish's formula with m = K - 1).
  If the ``C_qa`` have one variance ``v`` and one covariance ``c`` across models
  (exchangeable), ``Cov(d_ab, d_ac) = v - c`` and ``Var(d_ab) = 2 (v - c)``, so
  ``rho_a = 1/2`` and::

      DEFF = 1 + (K - 2) / 2 = K / 2,   inflation = sqrt(K / 2),

  whatever ``c``: a correlation common to all model pairs (a hard question missed by every
  model alike) cancels. The measured inflation departs from ``sqrt(K/2)`` only through the
  unevenness of the correctness covariances: ``rho_a > 1/2`` when a's opponents share
  their misses with each other more than with a (``Cov(d_ab, d_ac) = v_a - c_ab - c_ac +
  c_bc``), and unequal variances ``acc (1 - acc)``. :func:`common_correlation` separates
  the two: each model's own variance with the mean correlation in place of every
  correlation. MMLU-Pro has 1,713 missing answers
  (questions where a model's output was unusable); there the identity holds approximately,
  and exactly on the questions every model answered (:func:`identity_checks`).

The lesson behind the paper predicted ``sqrt(m)`` with ``m = K - 1`` comparisons per model
and question (rho = 1); the identity says rho = 1/2.

**B. Kish as a result** (:func:`kish_table`). For a mean over G clusters of m values each
(balanced), with ``SSB``, ``SST`` the between-cluster and total sums of squares about the
grand mean, ``eta2 = SSB / SST`` and ``MSB = SSB / (G - 1)``:

* the design effect of cluster sums against independent values is ``D0 = m SSB / SST``
  (winrate's measured DEFF in a design where every pair meets once per cluster: CR1's
  ``G / (G - 1)`` and the naive's per-pair ``N / (N - 1)`` are then the same factor);
* the ANOVA ICC is ``rho = (MSB - MSW) / (MSB + (m - 1) MSW)`` and, since ``G (MSB + (m -
  1) MSW) = SST + MSB``, Kish's ``1 + (m - 1) rho = m MSB G / (SST + MSB)``. Hence, for
  any data::

      (1 + (m - 1) rho) / D0 = G / (G - 1 + eta2)   in [1, G / (G - 1)]

  (:func:`kish_over_measured`; ``tests/test_paper_identity.py`` checks it against brute
  force on random data). If every pair meets ``r`` times per cluster (``N = G r``
  comparisons), the naive's factor is ``N / (N - 1)`` instead of ``G / (G - 1)`` and the
  ratio to winrate's measured DEFF is ``N / (N - 1) (G - 1) / (G - 1 + eta2)``, between
  ``(G - 1) / G`` and ``N / (N - 1)``. In a balanced design the Kish "check" is
  therefore an identity up to a factor G / (G - 1), not evidence. Balance here means
  equal pair sizes: every pair of models compared equally often, equally often in every
  cluster. Unequal pair sizes break it: the win rate's influence of a comparison is
  ``w_ab / n_ab``, so a model's comparisons in small pairs weigh more in the cluster
  totals than in the unweighted ANOVA ICC (PRD by prompt: pairs of 240 comparisons beside
  pairs of 880 to 1,200); a model pair seen in one cluster carries no clustered variance
  at all. The table reports per-model results (:func:`kish_model_rows`, written to
  ``tables/kish_models.csv``) and summarises them per axis (:func:`kish_summary`), each
  column a statistic of the per-model values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from common import Paper, fmt, new_figure
from real_data import (
    DATASETS,
    SUBSET_SEED,
    analyse,
    mmlu_subsets,
    read_log,
)

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.io.datasets import read_scores
from winrate.io.scores import score_table

CURVE_SIZES = tuple(range(2, 30))
CURVE_SUBSETS = 5
CURVE_SEED = SUBSET_SEED + 1
KISH_MIN_CLUSTERS = 5
#: Bound reported for the identity checks' deviations, which are round-off (2e-16 to 3e-14
#: on the development machine; the digits move between machines, the bound does not).
ROUND_OFF = 1e-12


# ----------------------------------------------------------------------- A: closed forms


def affine_win_rate(correct: np.ndarray) -> np.ndarray:
    """``1/2 + (acc_a - mean_{b != a} acc_b) / 2``, accuracies over the answered questions
    (NaN: no answer)."""
    acc = np.nanmean(correct, axis=0)
    others = (acc.sum() - acc) / (acc.size - 1)
    return 0.5 + (acc - others) / 2


def opponent_gap(correct: np.ndarray) -> np.ndarray:
    """``D_qa = C_qa - mean_{b != a} C_qb`` of a complete (Q, K) 0/1 table."""
    k = correct.shape[1]
    return correct - (correct.sum(axis=1, keepdims=True) - correct) / (k - 1)


def closed_form_variances(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Question-clustered (CR1) and naive variance of each ``S_a`` of a complete 0/1 table
    (module doc): ``s^2(D_a) / 4Q`` and ``sum_b s^2(d_ab) / (4 (K - 1)^2 Q)``."""
    q, k = correct.shape
    clustered = opponent_gap(correct).var(axis=0, ddof=1) / (4 * q)
    s = np.atleast_2d(np.cov(correct, rowvar=False, ddof=1))
    pair_var = np.diag(s)[:, None] + np.diag(s)[None, :] - 2 * s  # s^2(d_ab), zero diagonal
    return clustered, pair_var.sum(axis=1) / (4 * (k - 1) ** 2 * q)


def opponent_difference_correlation(correct: np.ndarray) -> np.ndarray:
    """``rho_a``: sum over ordered opponent pairs b != c of ``Cov(d_ab, d_ac)`` over
    ``(K - 2) sum_b Var(d_ab)``, from the sample covariance ``S`` of the correctness:
    ``Cov(d_ab, d_ac) = S_aa - S_ab - S_ac + S_bc``. ``DEFF_a = 1 + (K - 2) rho_a``."""
    k = correct.shape[1]
    s = np.cov(correct, rowvar=False, ddof=1)
    v, row = np.diag(s), s.sum(axis=1)  # row_a = sum_b S_ab, b over all models
    with_a = row - v  # sum_{b != a} S_ab
    among = s.sum() - 2 * row + v - (v.sum() - v)  # sum_{b != c; b, c != a} S_bc
    numerator = (k - 1) * (k - 2) * v - 2 * (k - 2) * with_a + among
    denominator = (k - 2) * ((k - 1) * v + (v.sum() - v) - 2 * with_a)
    return numerator / denominator


def design_effect_of_covariance(s: np.ndarray) -> np.ndarray:
    """``DEFF_a = Var(sum_b d_ab) / sum_b Var(d_ab)`` for a covariance matrix ``s`` of the
    models' correctness (population version of the closed forms' ratio)."""
    k = s.shape[0]
    v, row = np.diag(s), s.sum(axis=1)
    pair_var = (k - 1) * v + (v.sum() - v) - 2 * (row - v)  # sum_b Var(d_ab)
    total = (k - 1) ** 2 * v - 2 * (k - 1) * (row - v) + (s.sum() - 2 * row + v)
    return total / pair_var


def common_correlation(s: np.ndarray) -> np.ndarray:
    """``s`` with every correlation replaced by their mean (each model keeps its variance):
    what is left of the departure from ``sqrt(K/2)`` once the correlations are even."""
    sd = np.sqrt(np.diag(s))
    corr = s / np.outer(sd, sd)
    mean = corr[np.triu_indices_from(corr, 1)].mean()
    even = np.full(s.shape, mean)
    np.fill_diagonal(even, 1.0)
    return even * np.outer(sd, sd)


def exchangeable_inflation(k) -> np.ndarray:
    """``sqrt(K / 2)``: the inflation when correctness is exchangeable across models."""
    return np.sqrt(np.asarray(k, float) / 2)


# ----------------------------------------------------------------------- A: winrate's side


def _table(scores: np.ndarray, models: np.ndarray, questions: np.ndarray):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return score_table(scores, models, questions)


def measured(table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """winrate's question-clustered analysis of a score table: per model (in the table's
    column order) the score, clustered SE, naive SE and inflation ``sqrt(DEFF)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        run = analyze(table, cluster="prompt")
    order = pd.Index(run.models.astype(str)).get_indexer(table.models.astype(str))
    se = np.sqrt(np.diag(run.cov))[order]
    se_naive = np.sqrt(np.diag(run.cov_naive))[order]
    return run.scores[order], se, se_naive, np.sqrt(run.deff)[order]


def identity_checks(full) -> dict:
    """Largest deviations of winrate's scores and SEs from the closed forms: on the
    questions every model answered (exact up to rounding) and on all questions (the
    affine score with accuracies over each model's answered questions; largest for the
    model with most missing answers, whose pairs are scored on its questions only)."""
    scores = full.scores
    complete = ~np.isnan(scores).any(axis=1)
    questions = np.arange(scores.shape[0]).astype(str)
    out = {"questions": scores.shape[0], "complete": int(complete.sum()),
           "missing": int(np.isnan(scores).sum())}
    table = _table(scores[complete], full.models, questions[complete])
    score, se, se_naive, _ = measured(table)
    c = table.scores
    clustered, naive = closed_form_variances(c)
    out["score_dev_complete"] = float(np.abs(score - affine_win_rate(c)).max())
    out["se_rel_dev_complete"] = float(np.abs(se / np.sqrt(clustered) - 1).max())
    out["naive_rel_dev_complete"] = float(np.abs(se_naive / np.sqrt(naive) - 1).max())
    score_all, *_ = measured(full)
    deviation = np.abs(score_all - affine_win_rate(scores))
    worst = int(np.argmax(deviation))
    out["score_dev_all"] = float(deviation[worst])
    out["worst_model"] = str(full.models[worst])
    out["worst_missing"] = int(np.isnan(scores[:, worst]).sum())
    out["score_dev_rest"] = float(np.delete(deviation, worst).max())
    return out


def inflation_curve(full, sizes=CURVE_SIZES, n_subsets: int = CURVE_SUBSETS,
                    seed: int = CURVE_SEED) -> pd.DataFrame:
    """Median question-clustered inflation (winrate's analysis) of seeded random subsets
    of K models, ``n_subsets`` per K (one at K = all)."""
    rng = np.random.default_rng(seed)
    questions = np.arange(full.scores.shape[0]).astype(str)
    k_all, rows = full.scores.shape[1], []
    for k in sizes:
        for i in range(1 if k == k_all else n_subsets):
            cols = np.sort(rng.choice(k_all, k, replace=False))
            table = _table(full.scores[:, cols], full.models[cols], questions)
            rows.append({"k": k, "subset": i,
                         "inflation": float(np.nanmedian(measured(table)[3]))})
    return pd.DataFrame(rows)


def inflation_figure(curve: pd.DataFrame, paper: Paper) -> None:
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    k = np.arange(2, curve.k.max() + 1)
    ax.plot(k, np.sqrt(k - 1.0), "--", color="tab:red",
            label="sqrt(K - 1): every comparison of a question fully shared")
    ax.plot(k, exchangeable_inflation(k), "-", color="tab:blue",
            label="sqrt(K / 2): identity, exchangeable correctness")
    ax.plot(curve.k, curve.inflation, "o", ms=3, color="0.6", label="one random subset")
    med = curve.groupby("k").inflation.median()
    ax.plot(med.index, med.values, "o", ms=5, color="black", mfc="none",
            label="median over subsets")
    ax.set_xlabel("number of models K (every pair compared once per question)")
    ax.set_ylabel("SE inflation: clustered / naive SE\n(median over models)")
    ax.set_xlim(1, curve.k.max() + 1)
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    fig.tight_layout()
    paper.figure("inflation_vs_k", fig,
                 "MMLU-Pro: question-clustered SE inflation of the win rate against the "
                 f"number of models K, for {CURVE_SUBSETS} seeded random subsets of the 29 "
                 "models per K (grey; black: their median), with the identity's sqrt(K/2) "
                 "and the sqrt(K - 1) of treating a model's K - 1 comparisons on a question "
                 "as one fully shared response.")


def identity(paper: Paper) -> None:
    """Part A: the checks, the K = 29 and 19-model numbers, the figure."""
    full = read_scores("mmlu_pro")
    checks = identity_checks(full)
    paper.number("identity_questions", checks["questions"], ",d")
    paper.number("identity_complete_questions", checks["complete"], ",d")
    paper.number("identity_missing_answers", checks["missing"], ",d")
    paper.bound("identity_score_dev_complete", checks["score_dev_complete"], ROUND_OFF)
    paper.bound("identity_se_dev_complete", checks["se_rel_dev_complete"], ROUND_OFF)
    paper.bound("identity_naive_dev_complete", checks["naive_rel_dev_complete"], ROUND_OFF)
    paper.number("identity_score_dev_all_pp", 100 * checks["score_dev_all"], ".2f")
    paper.number("identity_worst_model", checks["worst_model"])
    paper.number("identity_worst_missing", checks["worst_missing"], ",d")
    paper.number("identity_score_dev_rest_pp", 100 * checks["score_dev_rest"], ".2f")

    k_all = full.scores.shape[1]
    complete = full.scores[~np.isnan(full.scores).any(axis=1)]
    rho = opponent_difference_correlation(complete)
    inflation_all = measured(full)[3]
    paper.number("identity_k", k_all, "d")
    paper.number("identity_sqrt_half_k", exchangeable_inflation(k_all), ".2f")
    paper.number("identity_infl_k", np.nanmedian(inflation_all), ".2f")
    paper.number("identity_sqrt_k_minus_one", np.sqrt(k_all - 1), ".2f")
    paper.number("identity_rho_median", np.median(rho), ".3f")
    paper.extremes("identity_rho", rho, ".3f")
    matrix = np.corrcoef(complete, rowvar=False)
    corr = matrix[np.triu_indices(k_all, 1)]
    paper.number("identity_corr_median", np.median(corr), ".2f")
    paper.extremes("identity_corr", corr, ".2f")
    # the departure from sqrt(K/2), split: each model's own variance with one common
    # correlation, against the measured covariances (questions every model answered)
    cov = np.cov(complete, rowvar=False)
    inflation_complete = np.sqrt(design_effect_of_covariance(cov))
    paper.number("identity_infl_complete", np.median(inflation_complete), ".2f")
    paper.number("identity_infl_common_corr",
                 np.median(np.sqrt(design_effect_of_covariance(common_correlation(cov)))),
                 ".2f")
    with_field = (matrix.sum(axis=1) - 1) / (k_all - 1)
    paper.number("identity_infl_vs_field_corr",
                 np.corrcoef(inflation_complete, with_field)[0, 1], ".2f")
    lowest = int(np.argmin(with_field))
    paper.number("identity_least_shared_model", str(full.models[lowest]))
    paper.number("identity_least_shared_corr", with_field[lowest], ".2f")
    paper.number("identity_least_shared_infl", inflation_complete[lowest], ".2f")
    position = pd.Index(full.models.astype(str))
    subset = []
    for models in mmlu_subsets():
        cols = position.get_indexer(list(models))
        table = _table(full.scores[:, cols], full.models[cols],
                       np.arange(full.scores.shape[0]).astype(str))
        subset.append(float(np.nanmedian(measured(table)[3])))
    size = len(mmlu_subsets()[0])
    paper.number("identity_sub_k", size, "d")
    paper.number("identity_sub_sqrt_half_k", exchangeable_inflation(size), ".2f")
    paper.extremes("identity_sub_infl", subset, ".2f")
    paper.number("identity_sub_infl_median", np.median(subset), ".2f")

    curve = inflation_curve(full)
    med = curve.groupby("k").inflation.median()
    ratio = med / exchangeable_inflation(med.index)
    paper.extremes("identity_curve_ratio", ratio, ".3f")
    paper.number("identity_curve_subsets", CURVE_SUBSETS, "d")
    inflation_figure(curve, paper)


# ----------------------------------------------------------------------- B: Kish


def kish_over_measured(eta2, n_clusters):
    """``(1 + (m - 1) rho_ANOVA) / D0 = G / (G - 1 + eta2)`` in a balanced design."""
    return n_clusters / (n_clusters - 1 + np.asarray(eta2, float))


def pair_sizes(log, models) -> list[np.ndarray]:
    """Per model of ``models`` (names), the comparison counts ``n_ab`` of its observed
    pairs (frequency-weighted)."""
    k = log.n_models
    weight = np.ones(log.n_rows) if log.frequency is None else log.frequency
    counts = np.bincount(log.model_a * k + log.model_b, weight, k * k).reshape(k, k)
    counts = counts + counts.T
    code = {str(name): i for i, name in enumerate(log.models)}
    return [counts[code[str(m)]][counts[code[str(m)]] > 0] for m in models]


def coefficient_of_variation(x: np.ndarray) -> float:
    """Population SD over mean (0: all equal)."""
    return float(np.std(x) / np.mean(x)) if len(x) else float("nan")


#: Columns of ``tables/kish_models.csv``, one row per model and axis.
KISH_MODEL_COLUMNS = ("dataset", "key", "axis", "clusters", "model", "m", "icc",
                      "kish", "measured", "ratio_squared", "pair_min", "pair_max",
                      "pair_cv")


def kish_model_rows() -> pd.DataFrame:
    """Per model and axis (at least ``KISH_MIN_CLUSTERS`` clusters): m_a, the
    own-comparison ANOVA ICC rho_a, Kish's ``sqrt(1 + (m_a - 1) rho_a)``, the measured
    inflation of the sandwich's design effect (the eda's ``AxisCheck.measured``: clustered
    CR1 over naive SE, without the small-sample floor, which is no design effect), the
    squared ratio of the two and the sizes ``n_ab`` of the model's pairs."""
    rows = []
    for spec in DATASETS:
        result = analyse(spec)
        log = read_log(spec.name)[0]
        models = result.report.models
        sizes = pair_sizes(log, models)
        for axis, check in result.report.axes.items():
            if check.n_clusters < KISH_MIN_CLUSTERS:
                continue
            for i, model in enumerate(models):
                kish, measured_ = float(check.predicted[i]), float(check.measured[i])
                if not (np.isfinite(kish) and np.isfinite(measured_) and measured_ > 0):
                    continue
                rows.append({"dataset": spec.label, "key": spec.key, "axis": axis,
                             "clusters": check.n_clusters, "model": str(model),
                             "m": float(check.m[i]), "icc": float(check.shared_icc[i]),
                             "kish": kish, "measured": measured_,
                             "ratio_squared": (kish / measured_) ** 2,
                             "pair_min": float(sizes[i].min()),
                             "pair_max": float(sizes[i].max()),
                             "pair_cv": coefficient_of_variation(sizes[i])})
    return pd.DataFrame(rows, columns=KISH_MODEL_COLUMNS)


#: A model's squared Kish / measured ratio counts as matched within this relative distance
#: of 1 (a balanced design guarantees [1, G / (G - 1)], G >= 5 here: at most 1.25).
KISH_MATCH = 0.10


def kish_summary(per_model: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset and axis, every column a statistic of the per-model values of
    ``per_model`` (so each recomputes from ``tables/kish_models.csv``)."""
    out = []
    for (label, axis), group in per_model.groupby(["dataset", "axis"], sort=False):
        ratio = group["ratio_squared"].to_numpy()
        off = np.abs(ratio - 1) > KISH_MATCH
        out.append({
            "dataset": short_dataset(label), "axis": axis,
            "clusters": f"{int(group['clusters'].iloc[0]):,}",
            "models": str(len(group)),
            "(Kish / measured)^2 median [range]":
                f"{fmt(np.median(ratio))} [{fmt(ratio.min())}, {fmt(ratio.max())}]",
            "models off by > 10%": str(int(off.sum())),
            "pair-size CV median [max]":
                f"{fmt(group['pair_cv'].median())} [{fmt(group['pair_cv'].max())}]",
        })
    return pd.DataFrame(out)


def short_dataset(label: str) -> str:
    """A dataset label without its parenthesis (``PRD (5 LLM ...)`` -> ``PRD``)."""
    return label.split(" (")[0].replace(" Vicuna-80", "")


def kish_table(paper: Paper) -> None:
    """Part B: Kish's prediction against the measured inflation per model, summarised per
    axis, with the balance of the pair sizes; the per-model values in
    ``tables/kish_models.csv`` and, for PRD by prompt, ``tables/kish_prd.*``."""
    per_model = kish_model_rows()
    path = paper.path("tables", "kish_models.csv")
    per_model.to_csv(path, index=False, float_format="%.6g", lineterminator="\n")
    paper.written.append(path)
    paper.table("kish", kish_summary(per_model),
                "Kish's prediction sqrt(1 + (m_a - 1) rho_a) against the measured SE "
                "inflation of each model (clustered CR1 over naive SE, without the "
                "small-sample floor), on every axis with at least "
                f"{KISH_MIN_CLUSTERS} clusters. Every column summarises per-model values: "
                "the squared ratio (within a factor G/(G - 1) of 1 whenever the design is "
                "balanced), the models whose squared ratio is more than 10% from 1, and "
                "the coefficient of variation of each model's pair sizes n_ab (0 when "
                "all its pairs have equal size).")
    prd = per_model[(per_model.key == "prd") & (per_model.axis == "prompt")]
    paper.table("kish_prd", pd.DataFrame({
        "model": prd.model, "pair sizes n_ab": [f"{a:,.0f}-{b:,.0f}" for a, b in
                                                zip(prd.pair_min, prd.pair_max, strict=True)],
        "m_a": [fmt(v, ".1f") for v in prd.m], "rho_a": [fmt(v, ".3f") for v in prd.icc],
        "Kish": [fmt(v) for v in prd.kish], "measured": [fmt(v) for v in prd.measured],
        "(Kish / measured)^2": [fmt(v) for v in prd.ratio_squared]}),
        "PRD by prompt, per model: Kish's prediction from m_a and rho_a, the measured "
        "inflation and their squared ratio. The models whose pairs differ in size "
        "are the ones Kish misses.")
    paper.number("kish_min_clusters", KISH_MIN_CLUSTERS, "d")
    paper.number("kish_match_pct", 100 * KISH_MATCH, ".0f")
    for (key, axis), group in per_model.groupby(["key", "axis"], sort=False):
        tag = f"kish_{key}_{axis}"
        ratio = group["ratio_squared"]
        paper.number(f"{tag}_ratio_sq_median", ratio.median(), ".2f")
        paper.extremes(f"{tag}_ratio_sq", ratio)
        paper.number(f"{tag}_off", int((np.abs(ratio - 1) > KISH_MATCH).sum()), "d")
        paper.number(f"{tag}_models", len(group), "d")
        paper.number(f"{tag}_pair_cv_max", group["pair_cv"].max(), ".2f")
    paper.number("kish_prd_prompt_equal_pairs", int((prd.pair_min == prd.pair_max).sum()), "d")
    off = prd[np.abs(prd.ratio_squared - 1) > KISH_MATCH]
    paper.number("kish_prd_prompt_off_models", ", ".join(off.model))
    paper.extremes("kish_prd_prompt_off_ratio_sq", off.ratio_squared)
    paper.number("kish_prd_prompt_off_pair_min", off.pair_min.min(), ",.0f")
    paper.number("kish_prd_prompt_off_pair_max", off.pair_max.max(), ",.0f")


def identity_and_kish(paper: Paper) -> None:
    identity(paper)
    kish_table(paper)
