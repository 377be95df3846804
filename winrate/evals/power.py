"""Power analysis for paired model comparisons (Miller 2024, sec. 5 and appendices B-C).

With ``omega^2 = Var(x_A) + Var(x_B) - 2 Cov(x_A, x_B)`` (variance of the conditional-mean
difference), ``sigma_M^2 = E[sigma_{M,i}^2]`` (mean conditional variance) and ``K_M``
answers per question, the per-question variance of the paired difference is
``v = omega^2 + sigma_A^2 / K_A + sigma_B^2 / K_B``. Then

* sample size, eq. 9: ``n = (z_{alpha/2} + z_beta)^2 v / delta^2``;
* minimum detectable effect, eq. 10: ``delta = (z_{alpha/2} + z_beta) sqrt(v / n)``.

Planning with an expected design effect ``deff`` multiplies ``v`` by ``deff`` (clustered
questions carry ``n / deff`` questions' worth of information; clustered-se primer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.evals._checks import (
    as_cluster_list,
    as_score_matrix,
    check_cluster_counts,
    check_correction,
    same_length,
)
from winrate.evals.summary import clip_negative_variance, conditional_variance, total_variance
from winrate.variance.reference import critical_value
from winrate.variance.sandwich import DEFAULT_CORRECTION, group_codes


def _per_question_variance(omega2, sigma2_a, sigma2_b, k_a, k_b, deff) -> float:
    """``deff * (omega^2 + sigma_A^2 / K_A + sigma_B^2 / K_B)`` (Miller 2024, eq. 9)."""
    for name, value in (("omega2", omega2), ("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b)):
        if not np.isfinite(value) or value < 0:
            raise WinrateInputError(f"{name} must be a finite non-negative variance, got {value}")
    for name, k in (("k_a", k_a), ("k_b", k_b)):
        if not (np.isfinite(k) and k >= 1 and k == int(k)):
            raise WinrateInputError(f"{name} (answers per question) must be an integer >= 1, "
                                    f"got {k}")
    if not deff > 0:
        raise WinrateInputError(f"deff must be positive, got {deff}")
    v = deff * (omega2 + sigma2_a / k_a + sigma2_b / k_b)
    if v == 0:
        raise WinrateInputError("the per-question variance is 0: omega2, sigma2_a and sigma2_b "
                                "cannot all be 0 (a noiseless comparison needs no power analysis)")
    return v


def _check_n(n: float) -> None:
    if not (np.isfinite(n) and n > 0):
        raise WinrateInputError(f"n must be a finite positive number of questions, got {n}")


def _check_delta(delta: float) -> None:
    if not np.isfinite(delta):
        raise WinrateInputError(f"delta must be a finite difference, got {delta}")


def _z_sum(alpha: float, power: float, df=None) -> float:
    """``z_{alpha/2} + z_beta`` with ``z_p`` the upper-p normal quantile and beta = 1 - power;
    with ``df``, the same quantiles of t(df) (:func:`detectable_difference`)."""
    if not 0 < power < 1:
        raise WinrateInputError(f"power must be in (0, 1), got {power}")
    if df is None:
        return critical_value(alpha) + float(stats.norm.ppf(power))
    return float(critical_value(alpha, df) + stats.t.ppf(power, df))


def sample_size(
    delta: float, omega2: float, sigma2_a: float = 0.0, sigma2_b: float = 0.0, k_a: int = 1,
    k_b: int = 1, alpha: float = 0.05, power: float = 0.8, deff: float = 1.0,
) -> float:
    """Questions needed to detect a true difference ``delta`` (Miller 2024, eq. 9).

    ``n = (z_{alpha/2} + z_beta)^2 deff (omega^2 + sigma_A^2/K_A + sigma_B^2/K_B) / delta^2``;
    returned unrounded (round up to plan).
    """
    if not delta != 0 or not np.isfinite(delta):
        raise WinrateInputError(f"delta must be a finite non-zero difference, got {delta}")
    v = _per_question_variance(omega2, sigma2_a, sigma2_b, k_a, k_b, deff)
    return _z_sum(alpha, power) ** 2 * v / delta**2


def minimum_detectable_effect(
    n: float, omega2: float, sigma2_a: float = 0.0, sigma2_b: float = 0.0, k_a: int = 1,
    k_b: int = 1, alpha: float = 0.05, power: float = 0.8, deff: float = 1.0,
) -> float:
    """Smallest difference detectable with ``n`` questions (Miller 2024, eq. 10).

    ``delta = (z_{alpha/2} + z_beta) sqrt(deff (omega^2 + sigma_A^2/K_A + sigma_B^2/K_B) / n)``.
    """
    _check_n(n)
    v = _per_question_variance(omega2, sigma2_a, sigma2_b, k_a, k_b, deff)
    return _z_sum(alpha, power) * float(np.sqrt(v / n))


def detectable_difference(se: float, alpha: float = 0.05, power: float = 0.8,
                          df: float | None = None) -> float:
    """Minimal detectable difference of a design whose paired difference has standard
    error ``se``: the smallest true difference its two-sided level-``alpha`` Wald test
    finds with probability ``power``.

    ``MDD = (q_{1-alpha/2} + q_{power}) SE``. With the normal reference this is Miller
    (2024, eq. 10), ``(z_{alpha/2} + z_beta) sqrt(v / n)``, written on the design's SE
    (``SE^2 = v / n``, clustered where the SE is): it solves ``Phi(delta / SE -
    z_{alpha/2}) = power``, the two-sided power of :func:`power_at` without its
    opposite-side term (below 1e-6 at alpha = 0.05, power = 0.8). With a t(df) reference
    (few clusters, ``df = G - 1``) the quantiles are t(df)'s: the multiplier ``M = t_{df,
    1-alpha/2} + t_{df, power}`` of Bloom (1995, "Minimum detectable effects: a simple way
    to report the statistical power of experimental designs", Evaluation Review 19(5),
    547-556), which solves ``P(t_df > t_{df, 1-alpha/2} - delta / SE) = power``.
    """
    if not (np.isfinite(se) and se >= 0):
        raise WinrateInputError(f"the standard error must be finite and non-negative, got {se}")
    return _z_sum(alpha, power, df) * float(se)


def power_at(
    n: float, delta: float, omega2: float, sigma2_a: float = 0.0, sigma2_b: float = 0.0,
    k_a: int = 1, k_b: int = 1, alpha: float = 0.05, deff: float = 1.0,
) -> float:
    """Power of the two-sided paired z-test: ``Phi(d/SE - z_{alpha/2}) + Phi(-d/SE -
    z_{alpha/2})`` with ``SE = sqrt(v / n)`` (appendix B; eq. 9 drops the second, tiny term)."""
    _check_n(n)
    _check_delta(delta)
    se = np.sqrt(_per_question_variance(omega2, sigma2_a, sigma2_b, k_a, k_b, deff) / n)
    z = critical_value(alpha)
    return float(stats.norm.cdf(delta / se - z) + stats.norm.cdf(-delta / se - z))


@dataclass(frozen=True)
class PowerInputs:
    """Inputs of eqs. 9-10 estimated from pilot data (Miller 2024, appendix C).

    ``omega2``, ``sigma2_a``, ``sigma2_b``, ``k_a``, ``k_b``; ``n`` pilot questions;
    ``clustered`` and ``n_clusters``; ``sigma_estimated`` is False when a model had a single
    answer per question (its sigma^2 is then 0 here and folded into ``omega2``, which is only
    right for planning with the same K); ``deff`` is the pilot's design effect of the paired
    difference (clustered over unclustered per-question variance; 1 when unclustered).
    """

    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: int
    k_b: int
    n: int
    clustered: bool
    n_clusters: tuple[int, ...]
    correction: str
    sigma_estimated: bool
    deff: float | None


def _sigma2(matrix: np.ndarray, cluster_list) -> float:
    return 0.0 if matrix.shape[1] == 1 else conditional_variance(matrix, cluster_list)


def estimate_power_inputs(
    pilot_a, pilot_b, cluster=None, *, correction: str = DEFAULT_CORRECTION
) -> PowerInputs:
    """Estimate omega^2, sigma_A^2 and sigma_B^2 from pilot answers of two models.

    ``pilot_a`` is (n questions, K_A answers), ``pilot_b`` (n, K_B); 1-D means K = 1.
    ``sigma_M^2`` is the K - 1 corrected mean conditional variance (clustered: appendix C),
    and ``omega^2 = V(xhat_A - xhat_B) - sigma_A^2/K_A - sigma_B^2/K_B`` removes the
    conditional noise that the question means still carry (law of total variance, sec. 3);
    ``V`` is the per-question variance of the mean difference, ``n`` times its clustered
    variance when ``cluster`` labels are given. A negative omega^2 is clipped to 0 with a warning.
    """
    a, b = as_score_matrix(pilot_a, "pilot_a"), as_score_matrix(pilot_b, "pilot_b")
    same_length(a.shape[0], b, "pilot_b", "pilot_a")
    check_correction(correction)
    n = a.shape[0]
    cluster_list, names = as_cluster_list(cluster, n)
    counts = [group_codes(c)[1] for c in cluster_list]
    check_cluster_counts(names, counts, "power pilot")
    s2a, s2b = _sigma2(a, cluster_list), _sigma2(b, cluster_list)
    d = a.mean(axis=1) - b.mean(axis=1)
    total = total_variance(d, cluster_list, correction)
    omega2 = clip_negative_variance(total - s2a / a.shape[1] - s2b / b.shape[1],
                                    notes.negative_omega2)
    plain = total_variance(d)
    return PowerInputs(
        omega2=float(omega2), sigma2_a=s2a, sigma2_b=s2b, k_a=a.shape[1], k_b=b.shape[1], n=n,
        clustered=bool(cluster_list),
        n_clusters=tuple(counts), correction=correction,
        sigma_estimated=a.shape[1] > 1 and b.shape[1] > 1,
        deff=total / plain if plain > 0 else None,
    )
