"""One model, one eval: mean, naive and clustered SEs, design effect, ICC, resampling.

Conventions (Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640):

* CLT standard error, eq. 1: ``SE^2 = sum_i (s_i - s_bar)^2 / (n (n - 1))``.
* Bernoulli standard error for 0/1 scores, eq. 2: ``SE^2 = s_bar (1 - s_bar) / n``.
* Clustered standard error, appendix A: the sandwich
  ``V = c(G) sum_c (sum_{i in c} (s_i - s_bar))^2 / n^2`` (all pairs i, j of a cluster over
  n^2), computed by :func:`winrate.variance.sandwich.multiway_cluster_cov` on the influence
  ``(s_i - s_bar) / n``; ``c = 1`` (``"none"``, CR0, Miller's appendix A sum) or
  ``G / (G - 1)`` (``"cr1"``). Miller's eq. 4 instead adds the within-cluster cross terms
  to the n - 1 CLT variance of eq. 1. With singleton clusters CR1 reduces exactly to the
  CLT SE. Several cluster columns are combined by
  multiway inclusion-exclusion (Cameron, Gelbach & Miller 2011).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from winrate import notes
from winrate.constants import INTERVALS
from winrate.errors import WinrateInputError, one_of
from winrate.evals._checks import (
    as_cluster_list,
    as_score_matrix,
    as_scores,
    check_cluster_counts,
    check_correction,
)
from winrate.evals.intervals import binomial_interval, clustered_bayes_interval
from winrate.inference.joint import wald_intervals
from winrate.variance.diagnostics import anova_icc
from winrate.variance.reference import check_alpha
from winrate.variance.sandwich import (
    DEFAULT_CORRECTION,
    group_codes,
    multiway_cluster_cov,
    repair_psd,
    small_sample_factor,
)

#: below this many binary questions "auto" uses the Bayes interval (Bowyer et al. 2025)
SMALL_N = 300


def clustered_mean_ses(values: np.ndarray, cluster_list) -> tuple[dict[str, float], bool]:
    """Clustered SEs of the mean of ``values``, without (``"none"``) and with (``"cr1"``)
    G/(G - 1): ``sqrt(c(G) sum_c (sum_{i in c} (v_i - vbar))^2) / n`` (Miller 2024,
    appendix A; multiway by inclusion-exclusion). Also says whether a PSD repair happened.
    ``({}, False)`` without clusters.

    One :func:`~winrate.variance.sandwich.multiway_cluster_cov` call gives the CR1 variance and
    every inclusion-exclusion term ``G/(G - 1) meat``; the CR0 variance is the signed sum
    of ``meat = (G - 1)/G * term`` with the same PSD repair (CGM 2011, sec. 2.3).
    """
    if not cluster_list:
        return {}, False
    infl = (values - values.mean())[:, None] / values.size
    cr1 = multiway_cluster_cov(infl, cluster_list, "cr1")
    cr0 = sum(sign * cov / small_sample_factor(g, "cr1")
              for (_, g, sign), cov in zip(cr1.terms, cr1.term_covs, strict=True))
    cr0_repaired = False
    if len(cluster_list) > 1:
        cr0, min_eig, cr0_repaired = repair_psd(cr0)
        if cr0_repaired and not cr1.psd_repaired:
            notes.emit(notes.cr0_clipped(min_eig))
    ses = {"none": float(np.sqrt(cr0[0, 0])), "cr1": float(np.sqrt(cr1.cov[0, 0]))}
    return ses, cr1.psd_repaired or cr0_repaired


def is_binary(x: np.ndarray) -> bool:
    return bool(np.all((x == 0) | (x == 1)))


def icc_anova(scores, cluster) -> float | None:
    """One-way ANOVA estimator of the intra-cluster correlation (Snedecor & Cochran), by
    :func:`winrate.variance.diagnostics.anova_icc`.

    ``MSB = sum_g n_g (ybar_g - ybar)^2 / (G - 1)``, ``MSW = sum_g sum_i (y_gi - ybar_g)^2 /
    (n - G)``, ``m0 = (n - sum_g n_g^2 / n) / (G - 1)`` and
    ``ICC = (MSB - MSW) / (MSB + (m0 - 1) MSW)``; not clipped at 0, so a negative value
    says the clusters are no more alike than random groups. ``None`` (undefined) when there
    is a single cluster, every cluster is a singleton, or the scores do not vary.
    """
    x = as_scores(scores)
    (labels,), _ = as_cluster_list(np.asarray(cluster), x.size)
    v = anova_icc(x, group_codes(labels)[0])
    return None if np.isnan(v) else v


@dataclass(frozen=True)
class ScoreSummary:
    """Summary of one model's per-question scores.

    Attributes
    ----------
    mean, n : mean score and number of questions.
    se : the SE used for the interval: clustered (with ``correction``) if clusters were
        given, else ``se_naive``.
    se_naive : the independent-questions SE: ``se_bernoulli`` for 0/1 scores, else ``se_clt``
        (``naive_method`` says which).
    se_clt, se_bernoulli : Miller eqs. 1 and 2 (``se_bernoulli`` is None for non-binary).
    se_cr0, se_cr1 : clustered SE without and with G/(G - 1) (None without clusters).
    cluster_names, n_clusters, mean_cluster_size, icc : one entry per cluster column.
    deff, n_eff : design effect ``se^2 / se_naive^2`` and ``n / deff`` (None if undefined).
    ci_low, ci_high, interval, alpha, df : the interval, its method and t degrees of freedom
        (None for a normal reference).
    correction, binary, psd_repaired.
    """

    mean: float
    n: int
    se: float
    se_naive: float
    naive_method: str
    se_clt: float
    se_bernoulli: float | None
    se_cr0: float | None
    se_cr1: float | None
    cluster_names: tuple[str, ...]
    n_clusters: tuple[int, ...]
    mean_cluster_size: tuple[float, ...]
    icc: tuple[float | None, ...]
    deff: float | None
    n_eff: float | None
    ci_low: float
    ci_high: float
    interval: str
    alpha: float
    df: int | None
    correction: str
    binary: bool
    psd_repaired: bool

    @property
    def method(self) -> str:
        """Which SE the interval uses: ``clustered(<cols>, <correction>)`` or naive method."""
        if self.cluster_names:
            return f"clustered({', '.join(self.cluster_names)}; {self.correction})"
        return self.naive_method


def clt_se(x: np.ndarray) -> float:
    """``sqrt(sum (x - xbar)^2 / (n (n - 1)))`` (Miller 2024, eq. 1)."""
    return float(np.sqrt(np.var(x, ddof=1) / x.size))


def _naive_ses(x: np.ndarray) -> tuple[float, float | None, bool]:
    """(SE_CLT, SE_Bernoulli or None, binary) per Miller eqs. 1-2."""
    n = x.size
    se_clt = clt_se(x)
    binary = is_binary(x)
    se_bern = float(np.sqrt(x.mean() * (1 - x.mean()) / n)) if binary else None
    return se_clt, se_bern, binary


def _resolve_interval(interval: str, binary: bool, n: int, n_dims: int) -> str:
    if interval not in INTERVALS:
        raise WinrateInputError(f"interval must be one of {one_of(INTERVALS)}, got {interval!r}")
    if interval == "auto":
        return "bayes" if binary and n < SMALL_N and n_dims == 0 else "wald"
    if interval != "wald" and not binary:
        raise WinrateInputError(
            f"the {interval!r} interval is for 0/1 scores; these scores are not binary "
            "(use interval='wald')"
        )
    if interval != "wald" and n_dims > 0 and interval != "bayes":
        raise WinrateInputError(
            f"the {interval!r} interval assumes independent questions; with clusters use "
            "'wald' (clustered SE) or 'bayes' (beta-binomial cluster model)"
        )
    if interval == "bayes" and n_dims > 1:
        raise WinrateInputError("the clustered Bayes interval supports one cluster column")
    return interval


def _interval(x, method, se, df, alpha, cluster_list, prior, seed):
    """(low, high) for the resolved interval method."""
    if method == "wald":
        w = wald_intervals([x.mean()], [[se**2]], alpha, df)
        return float(w.low[0]), float(w.high[0])
    if method == "bayes" and cluster_list:
        codes, g = group_codes(cluster_list[0])
        ci = clustered_bayes_interval(
            np.bincount(codes, weights=x, minlength=g), np.bincount(codes, minlength=g),
            alpha, prior=prior, seed=seed,
        )
        return ci.low, ci.high
    ci = binomial_interval(x.sum(), x.size, method, alpha, prior)
    return float(ci.low), float(ci.high)


def _warn_degenerate(x: np.ndarray, name: str) -> None:
    if np.all(x == x[0]):
        notes.emit(notes.constant_scores(x.size, name, x[0]))


def summarize_scores(
    scores, cluster=None, *, correction: str = DEFAULT_CORRECTION, alpha: float = 0.05,
    interval: str = "auto", prior=(1.0, 1.0), seed: int = 0, name: str = "scores",
) -> ScoreSummary:
    """Mean, SEs, design effect, ICC and interval for one model's per-question scores.

    ``cluster`` is None, one label array, a list of label arrays or a ``{name: labels}``
    dict (several columns: multiway clustering). ``interval="auto"`` gives a Wald interval
    on the clustered SE (t with ``min G - 1`` df) with clusters; for independent 0/1 scores
    with fewer than :data:`SMALL_N` questions, the Bayes Beta(1 + k, 1 + n - k) interval
    (Bowyer et al. 2025); otherwise the normal Wald interval on the naive SE (Miller eq. 3).
    """
    x = as_scores(scores, name)
    check_correction(correction)
    alpha = check_alpha(alpha)
    n = x.size
    cluster_list, names = as_cluster_list(cluster, n)
    counts = [group_codes(c)[1] for c in cluster_list]
    check_cluster_counts(names, counts, name)
    _warn_degenerate(x, name)
    se_clt, se_bern, binary = _naive_ses(x)
    se_naive = se_bern if binary else se_clt
    ses, repaired = clustered_mean_ses(x, cluster_list)
    se = ses.get(correction, se_naive)
    deff = se**2 / se_naive**2 if se_naive > 0 else None
    df = min(counts) - 1 if cluster_list else None
    method = _resolve_interval(interval, binary, n, len(cluster_list))
    low, high = _interval(x, method, se, df, alpha, cluster_list, prior, seed)
    return ScoreSummary(
        mean=float(x.mean()), n=n, se=se, se_naive=se_naive,
        naive_method="bernoulli" if binary else "clt", se_clt=se_clt, se_bernoulli=se_bern,
        se_cr0=ses.get("none"), se_cr1=ses.get("cr1"), cluster_names=tuple(names),
        n_clusters=tuple(counts), mean_cluster_size=tuple(n / g for g in counts),
        icc=tuple(icc_anova(x, c) for c in cluster_list), deff=deff,
        n_eff=n / deff if deff else None, ci_low=low, ci_high=high,
        interval=method if method != "wald" or df is None else "wald-t", alpha=alpha,
        df=df if method == "wald" else None, correction=correction, binary=binary,
        psd_repaired=repaired,
    )


@dataclass(frozen=True)
class VarianceComponents:
    """Miller's (2024, sec. 3 and appendix C) split of the variance of a resampled eval.

    ``var_x``: variance of the question-level conditional means, Var(x);
    ``mean_sigma2``: mean conditional variance, E[sigma_i^2]; ``k``: answers per question;
    ``var_mean``: Var(mu_hat) of the question-mean estimator, ``se = sqrt(var_mean)``;
    ``clustered``: whether both components are the clustered versions (appendix C).
    Per question: ``Var(xhat_i) = Var(x) + E[sigma_i^2] / K`` (law of total variance).
    """

    mean: float
    n: int
    k: int
    var_x: float
    mean_sigma2: float
    var_mean: float
    se: float
    clustered: bool
    correction: str


def conditional_variance(matrix: np.ndarray, cluster_list) -> float:
    """Mean conditional variance E[sigma_i^2] from K answers per question, K - 1 corrected.

    Unclustered: ``sum_i sum_k (s_ik - xhat_i)^2 / (n (K - 1))``. Clustered (Miller 2024,
    appendix C): ``sum_k sum_c (sum_{i in c} (s_ick - xhat_ic))^2 / (n (K - 1))``, i.e. the
    trace of the plain (CR0) cluster meat of the (n, K) residual matrix. No G/(G - 1)
    factor under either correction: the K - 1 divisor is the small-sample correction, and
    the residuals are centred on each question's own mean, not on an estimated grand mean.
    """
    n, k = matrix.shape
    resid = matrix - matrix.mean(axis=1, keepdims=True)
    if not cluster_list:
        return float(np.square(resid).sum() / (n * (k - 1)))
    meat = multiway_cluster_cov(resid, cluster_list, "none").cov
    return float(np.trace(meat) / (n * (k - 1)))


def clip_negative_variance(value: float, note: Callable[[float], notes.Note]) -> float:
    """A method-of-moments variance estimate clipped at 0, with the ``negative-variance``
    note ``note(value)`` saying so and what a negative estimate means."""
    if value < 0:
        notes.emit(note(value))
        return 0.0
    return float(value)


def total_variance(
    xhat: np.ndarray, cluster_list=(), correction: str = DEFAULT_CORRECTION
) -> float:
    """Per-question variance of question means, ``n Var(mu_hat)``: the sample variance
    (n - 1) without clusters, or ``n V_cluster`` with V from the influence
    ``(xhat - mean) / n`` and the given ``correction`` (used only with clusters)."""
    n = xhat.size
    if not cluster_list:
        return float(np.var(xhat, ddof=1))
    infl = (xhat - xhat.mean())[:, None] / n
    return float(n * multiway_cluster_cov(infl, list(cluster_list), correction).cov[0, 0])


def variance_components(
    scores, cluster=None, *, correction: str = DEFAULT_CORRECTION, name: str = "scores"
) -> VarianceComponents:
    """Variance of the conditional means and mean conditional variance from resamples.

    ``scores`` is an (n questions, K answers) matrix with K >= 2. The estimator is the mean
    of the question means (never a pooled SE over all K n answers, which treats repeated
    answers to one question as independent). ``E[sigma^2]`` uses the K - 1 divisor and
    ``Var(x) = n Var(mu_hat) - E[sigma^2] / K`` (Miller 2024, sec. 3.1 and appendix C).
    """
    matrix = as_score_matrix(scores, name)
    check_correction(correction)
    n, k = matrix.shape
    if k < 2:
        raise WinrateInputError(f"{name!r} needs K >= 2 answers per question, got K = {k}")
    cluster_list, names = as_cluster_list(cluster, n)
    check_cluster_counts(names, [group_codes(c)[1] for c in cluster_list], name)
    xhat = matrix.mean(axis=1)
    sigma2 = conditional_variance(matrix, cluster_list)
    total = total_variance(xhat, cluster_list, correction)
    var_x = clip_negative_variance(total - sigma2 / k,
                                   lambda value: notes.negative_var_x(value, name))
    return VarianceComponents(
        mean=float(xhat.mean()), n=n, k=k, var_x=var_x, mean_sigma2=sigma2,
        var_mean=total / n, se=float(np.sqrt(total / n)), clustered=bool(cluster_list),
        correction=correction,
    )
