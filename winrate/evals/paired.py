"""Two models: paired and unpaired differences, McNemar, Bayesian P(theta_A > theta_B).

Frequentist formulas follow Miller (2024, arXiv 2411.00640, sec. 4); the Bayesian ones
follow Bowyer, Aitchison & Ivanova (2025, arXiv 2503.01747, "model comparison").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats
from scipy.special import expit, logit, owens_t

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.evals._checks import (
    as_cluster_list,
    as_scores,
    check_cluster_counts,
    check_correction,
    same_length,
)
from winrate.evals._importance import importance_sample, logit_beta_logpdf
from winrate.evals.intervals import check_counts, check_prior, warn_low_ess, weighted_quantiles
from winrate.evals.summary import clt_se, clustered_mean_ses, is_binary
from winrate.variance.reference import check_alpha, critical_value
from winrate.variance.sandwich import DEFAULT_CORRECTION, group_codes


@dataclass(frozen=True)
class DifferenceTest:
    """Wald test of a difference: ``estimate +/- crit * se``, ``z = estimate / se`` and the
    two-sided p-value (normal, or t with ``df`` degrees of freedom)."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    z: float
    p_value: float
    alpha: float
    df: int | None


def wald_test(estimate: float, se: float, alpha: float = 0.05, df=None) -> DifferenceTest:
    """CI ``d +/- q se`` and ``z = d / se`` (Miller 2024, eqs. 5-6); ``q`` normal or t(df).

    A zero SE gives ``z = 0, p = 1`` for a zero difference and ``z = +/-inf, p = 0``
    otherwise (the callers warn about zero variance).
    """
    crit = critical_value(check_alpha(alpha), df)
    if se > 0:
        z = estimate / se
    else:
        z = 0.0 if estimate == 0 else float(np.copysign(np.inf, estimate))
    ref = stats.norm if df is None else stats.t(df)
    p = float(2 * ref.sf(abs(z)))
    return DifferenceTest(
        estimate=float(estimate), se=float(se), ci_low=float(estimate - crit * se),
        ci_high=float(estimate + crit * se), z=float(z), p_value=p, alpha=alpha, df=df,
    )


def unpaired_difference(
    mean_a: float, se_a: float, mean_b: float, se_b: float, alpha: float = 0.05
) -> DifferenceTest:
    """Difference of independently reported scores: ``SE = sqrt(SE_A^2 + SE_B^2)``
    (Miller 2024, sec. 4.1, eqs. 5-6). Needs only the published means and SEs."""
    if not np.all(np.isfinite([mean_a, mean_b])):
        raise WinrateInputError(f"means must be finite, got {mean_a}, {mean_b}")
    if not (np.all(np.isfinite([se_a, se_b])) and se_a >= 0 and se_b >= 0):
        raise WinrateInputError(
            f"standard errors must be finite and non-negative, got {se_a}, {se_b}")
    return wald_test(mean_a - mean_b, float(np.hypot(se_a, se_b)), alpha)


@dataclass(frozen=True)
class PairedComparison:
    """Paired comparison of two models on the same questions (Miller 2024, sec. 4.2).

    ``test`` is the Wald test of ``mean_a - mean_b`` on ``se`` (clustered if ``cluster``
    labels were given); ``se_paired`` is the unclustered paired SE ``sd(d) / sqrt(n)``;
    ``se_unpaired`` the SE ignoring the pairing; ``correlation`` the Pearson correlation of
    the two models' scores (None if either is constant).
    """

    mean_a: float
    mean_b: float
    n: int
    se: float
    se_paired: float
    se_unpaired: float
    se_cr0: float | None
    se_cr1: float | None
    correlation: float | None
    cluster_names: tuple[str, ...]
    n_clusters: tuple[int, ...]
    correction: str
    test: DifferenceTest


def _correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    if np.all(a == a[0]) or np.all(b == b[0]):
        notes.emit(notes.undefined_correlation())
        return None
    return float(np.corrcoef(a, b)[0, 1])


def paired_difference(
    scores_a, scores_b, cluster=None, *, correction: str = DEFAULT_CORRECTION,
    alpha: float = 0.05, names=("A", "B"),
) -> PairedComparison:
    """Paired analysis of per-question differences ``d_i = s_A,i - s_B,i``.

    ``SE_paired = sqrt(sum (d_i - dbar)^2 / (n (n - 1)))`` (Miller 2024, sec. 4.2);
    clustered: ``SE^2 = c(G) sum_c (sum_{i in c} (d_i - dbar))^2 / n^2`` (Miller's paired
    clustered SE), multiway for several cluster columns, with a t(G - 1) reference.
    """
    a = as_scores(scores_a, f"scores of {names[0]}")
    b = as_scores(scores_b, f"scores of {names[1]}")
    same_length(a.size, b, f"scores of {names[1]}", f"scores of {names[0]}")
    check_correction(correction)
    n = a.size
    cluster_list, cnames = as_cluster_list(cluster, n)
    counts = [group_codes(c)[1] for c in cluster_list]
    check_cluster_counts(cnames, counts, f"{names[0]} vs {names[1]}")
    d = a - b
    if np.all(d == d[0]):
        notes.emit(notes.constant_difference(names[0], names[1], d[0], n))
    ses, _ = clustered_mean_ses(d, cluster_list)
    se_paired = clt_se(d)
    se = ses.get(correction, se_paired)
    df = min(counts) - 1 if cluster_list else None
    return PairedComparison(
        mean_a=float(a.mean()), mean_b=float(b.mean()), n=n, se=se, se_paired=se_paired,
        se_unpaired=float(np.hypot(clt_se(a), clt_se(b))), se_cr0=ses.get("none"),
        se_cr1=ses.get("cr1"), correlation=_correlation(a, b), cluster_names=tuple(cnames),
        n_clusters=tuple(counts), correction=correction,
        test=wald_test(float(d.mean()), se, alpha, df),
    )


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on the discordant counts ``b`` (only A right) and ``c`` (only B
    right): chi-square statistic, its p-value (1 df) and the exact binomial p-value."""

    b: int
    c: int
    statistic: float
    p_chi2: float
    p_exact: float
    continuity: bool


def mcnemar_counts(b: int, c: int, continuity: bool = False) -> McNemarResult:
    """McNemar (1947): ``chi2 = (|b - c| - cc)^2 / (b + c)``, cc = 1 with continuity
    correction else 0, referred to chi-square(1); exact p = two-sided Binomial(b + c, 1/2)
    test, ``min(1, 2 P(X <= min(b, c)))``."""
    if not all(np.isfinite(v) and v >= 0 and v == int(v) for v in (b, c)):
        raise WinrateInputError(f"discordant counts must be non-negative integers, got {b}, {c}")
    b, c = int(b), int(c)
    if b + c == 0:
        notes.emit(notes.no_discordant())
        return McNemarResult(b, c, 0.0, 1.0, 1.0, continuity)
    stat = (abs(b - c) - (1.0 if continuity else 0.0)) ** 2 / (b + c)
    p_exact = min(1.0, 2 * stats.binom.cdf(min(b, c), b + c, 0.5))
    return McNemarResult(b, c, float(stat), float(stats.chi2.sf(stat, 1)), float(p_exact),
                         continuity)


def _binary_pair(scores_a, scores_b) -> tuple[np.ndarray, np.ndarray]:
    a, b = as_scores(scores_a, "scores_a"), as_scores(scores_b, "scores_b")
    same_length(a.size, b, "scores_b", "scores_a")
    for arr, name in ((a, "scores_a"), (b, "scores_b")):
        if not is_binary(arr):
            raise WinrateInputError(f"{name!r} must be 0/1 for this test")
    return a, b


def mcnemar(scores_a, scores_b, continuity: bool = False) -> McNemarResult:
    """McNemar's test from paired 0/1 scores (see :func:`mcnemar_counts`)."""
    a, b = _binary_pair(scores_a, scores_b)
    return mcnemar_counts(int(np.sum(a > b)), int(np.sum(b > a)), continuity)


def prob_a_beats_b(k_a, n_a, k_b, n_b, prior=(1.0, 1.0)) -> float:
    """P(theta_A > theta_B) for independent Beta posteriors (summary statistics only).

    ``theta_M ~ Beta(a + k_M, b + n_M - k_M)`` (Bowyer et al. 2025, unpaired comparison);
    ``P = int_0^1 f_A(t) F_B(t) dt``, by adaptive quadrature (no Monte-Carlo noise).
    """
    check_counts([k_a, k_b], [n_a, n_b])
    pa, pb = check_prior(prior)
    post_a = stats.beta(pa + k_a, pb + n_a - k_a)
    post_b = stats.beta(pa + k_b, pb + n_b - k_b)
    lo, hi = post_a.ppf(1e-15), post_a.isf(1e-15)
    value, _ = integrate.quad(lambda t: post_a.pdf(t) * post_b.cdf(t), lo, hi, limit=200,
                              epsabs=1e-13, epsrel=1e-11, points=[post_a.mean()])
    return float(min(max(value, 0.0), 1.0))


def bivariate_normal_cdf(h, k, rho) -> np.ndarray:
    """``P(X <= h, Y <= k)`` for a standard bivariate normal with correlation ``rho``.

    Owen (1956): ``Phi2 = [Phi(h) + Phi(k)] / 2 - T(h, a_h) - T(k, a_k) - beta`` with
    ``a_h = (k - rho h) / (h sqrt(1 - rho^2))``, ``a_k = (h - rho k) / (k sqrt(1 - rho^2))``
    and ``beta = 0`` if ``h k > 0`` or (``h k = 0`` and ``h + k >= 0``), else 1/2. At
    ``h = 0`` the term is ``T(0, a) = arctan(a) / (2 pi)`` with ``a = +/-inf``, handled by
    taking the sign of the numerator; ``h = k = 0`` is Sheppard's
    ``1/4 + arcsin(rho) / (2 pi)``.
    """
    h, k, rho = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (h, k, rho)))
    s = np.sqrt(1 - rho**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_h = np.where(h == 0, np.sign(k - rho * h) * np.inf, (k - rho * h) / (h * s))
        a_k = np.where(k == 0, np.sign(h - rho * k) * np.inf, (h - rho * k) / (k * s))
    beta = np.where((h * k > 0) | ((h * k == 0) & (h + k >= 0)), 0.0, 0.5)
    value = (stats.norm.cdf(h) + stats.norm.cdf(k)) / 2 - owens_t(h, a_h) - owens_t(k, a_k) - beta
    value = np.where((h == 0) & (k == 0), 0.25 + np.arcsin(rho) / (2 * np.pi), value)
    return np.clip(value, 0.0, 1.0)


def paired_cell_probabilities(theta_a, theta_b, rho) -> np.ndarray:
    """Cell probabilities (both right, only A, only B, both wrong) of the latent model.

    Bowyer et al. (2025, paired comparison): ``(z_A, z_B) ~ N((mu_A, mu_B), [[1, rho],
    [rho, 1]])`` with ``mu = Phi^-1(theta)`` and a model is right when its ``z > 0``. Then
    ``p00 = Phi2(-mu_A, -mu_B; rho)``, ``p10 = 1 - theta_B - p00``,
    ``p01 = 1 - theta_A - p00``, ``p11 = theta_A + theta_B + p00 - 1``. Returns (..., 4).
    """
    p00 = bivariate_normal_cdf(-stats.norm.ppf(theta_a), -stats.norm.ppf(theta_b), rho)
    return np.stack([theta_a + theta_b + p00 - 1, 1 - theta_b - p00, 1 - theta_a - p00, p00],
                    axis=-1)


@dataclass(frozen=True)
class PairedBayesResult:
    """Posterior of the paired latent bivariate-normal model: ``prob_a_better`` =
    P(theta_A > theta_B | data), equal-tailed interval of theta_A - theta_B, posterior mean
    difference, importance-sampling effective sample size, the 2x2 counts (both right, only
    A, only B, both wrong), the seed and the proposal used (``sampler``)."""

    prob_a_better: float
    diff_low: float
    diff_high: float
    diff_mean: float
    alpha: float
    ess: float
    n_samples: int
    seed: int
    sampler: str
    counts: tuple[int, int, int, int]


def _paired_start(counts: np.ndarray) -> list[float]:
    """Start of the mode search: smoothed accuracies and the phi coefficient as rho."""
    n = counts.sum()
    theta_a, theta_b = (counts[0] + counts[1] + 1) / (n + 2), (counts[0] + counts[2] + 1) / (n + 2)
    cov = counts[0] / n - (counts[0] + counts[1]) * (counts[0] + counts[2]) / n**2
    scale = np.sqrt(theta_a * (1 - theta_a) * theta_b * (1 - theta_b))
    rho = float(np.clip(cov / scale, -0.9, 0.9))
    return [float(logit(theta_a)), float(logit(theta_b)), float(logit((rho + 1) / 2))]


def paired_bayes(
    scores_a, scores_b, *, alpha: float = 0.05, rho_prior=(4.0, 2.0), n_samples: int = 50_000,
    seed: int = 0, sampler: str = "laplace",
) -> PairedBayesResult:
    """Bayesian paired comparison of two models' 0/1 scores on the same questions.

    Prior (Bowyer et al. 2025): ``theta_A, theta_B ~ U(0, 1)``, ``rho = 2 Beta(4, 2) - 1``.
    Likelihood: multinomial over the 2x2 table with :func:`paired_cell_probabilities`
    (draws with a non-positive cell probability get weight 0). Posterior by seeded
    importance sampling in ``(logit theta_A, logit theta_B, logit (rho + 1) / 2)``:
    the paper's prior proposal with ``sampler="prior"``, a defensive Laplace-t proposal by
    default (:mod:`winrate.evals._importance`). Reports the effective sample size (warning
    below 200).
    """
    a, b = _binary_pair(scores_a, scores_b)
    alpha = check_alpha(alpha)
    counts = np.array([np.sum(a * b), np.sum(a * (1 - b)), np.sum((1 - a) * b),
                       np.sum((1 - a) * (1 - b))])
    ra, rb = check_prior(rho_prior)

    def log_prior(z):
        return (logit_beta_logpdf(z[:, 0], 1, 1) + logit_beta_logpdf(z[:, 1], 1, 1)
                + logit_beta_logpdf(z[:, 2], ra, rb))

    def sample_prior(k, rng):
        return logit(np.column_stack([rng.uniform(size=k), rng.uniform(size=k),
                                      rng.beta(ra, rb, k)]))

    def log_lik(z):
        cells = paired_cell_probabilities(expit(z[:, 0]), expit(z[:, 1]), 2 * expit(z[:, 2]) - 1)
        valid = np.all(cells > 0, axis=1)
        out = np.full(z.shape[0], -np.inf)
        out[valid] = np.log(cells[valid]) @ counts
        return out

    sample = importance_sample(log_prior, log_lik, sample_prior,
                               _paired_start(counts), n_samples, seed, sampler)
    warn_low_ess(sample.ess, n_samples, "paired Bayes comparison", sample.sampler)
    diff = expit(sample.draws[:, 0]) - expit(sample.draws[:, 1])
    w = sample.weights
    low, high = weighted_quantiles(diff, w, [alpha / 2, 1 - alpha / 2])
    return PairedBayesResult(
        prob_a_better=float(w @ (diff > 0)), diff_low=float(low), diff_high=float(high),
        diff_mean=float(w @ diff), alpha=alpha, ess=sample.ess, n_samples=int(n_samples),
        seed=int(seed), sampler=sample.sampler, counts=tuple(int(c) for c in counts),
    )
