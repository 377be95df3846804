"""Small-N intervals for binary scores, their exact coverage, and a clustered Bayes interval.

Bowyer, Aitchison & Ivanova (2025, arXiv 2503.01747) show that the CLT interval
``p +/- z sqrt(p(1-p)/N)`` under-covers badly below a few hundred questions and collapses to
zero width at ``k = 0`` or ``k = N``. The alternatives here are vectorised over ``k``:

* ``"wald"``: the CLT interval (Miller 2024, eqs. 2-3).
* ``"wilson"``: Wilson (1927) score interval.
* ``"clopper-pearson"``: exact interval from Beta quantiles (Clopper & Pearson 1934).
* ``"jeffreys"``: equal-tailed Beta(k + 1/2, N - k + 1/2) interval with the boundary
  convention of Brown, Cai & DasGupta (2001): lower end 0 at k = 0, upper end 1 at k = N.
* ``"bayes"``: equal-tailed credible interval of the Beta(a + k, b + N - k) posterior under
  a Beta(a, b) prior, uniform (a = b = 1) by default (Bowyer et al. 2025, "Beta-binomial").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from winrate import notes
from winrate.constants import BINOMIAL_METHODS
from winrate.errors import WinrateInputError, one_of
from winrate.evals._importance import importance_sample, log_gamma_logpdf, logit_beta_logpdf
from winrate.variance.reference import check_alpha, critical_value

#: below this importance-sampling effective sample size the posterior is poorly represented
MIN_ESS = 200


@dataclass(frozen=True)
class BinomialInterval:
    """Interval(s) for a binomial proportion: ``low``, ``high`` (arrays shaped like ``k``),
    the point estimate ``k / n``, ``method``, ``alpha`` and the Beta ``prior`` (Bayes only)."""

    low: np.ndarray
    high: np.ndarray
    estimate: np.ndarray
    method: str
    alpha: float
    prior: tuple[float, float] | None


def check_counts(k, n) -> tuple[np.ndarray, np.ndarray]:
    """``k`` successes of ``n`` trials as float arrays; an error unless ``n`` is a whole
    number >= 1 and ``k`` a whole number in [0, n]."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    if np.any(n < 1) or np.any(n != np.round(n)):
        raise WinrateInputError("n (number of questions) must be a positive integer")
    if np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)):
        raise WinrateInputError("k (number of correct answers) must be an integer in [0, n]")
    return k, n


def _wald(k, n, alpha, prior):
    """``p +/- z sqrt(p (1 - p) / n)`` (Miller 2024, eqs. 2-3)."""
    p = k / n
    half = critical_value(alpha) * np.sqrt(p * (1 - p) / n)
    return p - half, p + half


def _wilson(k, n, alpha, prior):
    """``(p + z^2/2n +/- z/(2n) sqrt(4 n p (1-p) + z^2)) / (1 + z^2/n)`` (Wilson 1927)."""
    z = critical_value(alpha)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (2 * n) * np.sqrt(4 * n * p * (1 - p) + z**2) / (1 + z**2 / n)
    # exactly 0 at k = 0 and 1 at k = n (the formula gives that up to round-off)
    return np.where(k == 0, 0.0, centre - half), np.where(k == n, 1.0, centre + half)


def _clopper_pearson(k, n, alpha, prior):
    """``[B(alpha/2; k, n-k+1), B(1-alpha/2; k+1, n-k)]``, 0 at k = 0, 1 at k = n."""
    with np.errstate(invalid="ignore"):
        low = stats.beta.ppf(alpha / 2, k, n - k + 1)
        high = stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    return np.where(k == 0, 0.0, low), np.where(k == n, 1.0, high)


def _jeffreys(k, n, alpha, prior):
    """Beta(k + 1/2, n - k + 1/2) quantiles; 0 at k = 0, 1 at k = n (Brown et al. 2001)."""
    low, high = stats.beta.interval(1 - alpha, k + 0.5, n - k + 0.5)
    return np.where(k == 0, 0.0, low), np.where(k == n, 1.0, high)


def _bayes(k, n, alpha, prior):
    """Equal-tailed interval of the Beta(a + k, b + n - k) posterior (Bowyer et al. 2025)."""
    a, b = prior
    return stats.beta.interval(1 - alpha, a + k, b + n - k)


_METHODS = {
    "wald": _wald,
    "wilson": _wilson,
    "clopper-pearson": _clopper_pearson,
    "jeffreys": _jeffreys,
    "bayes": _bayes,
}


def check_prior(prior) -> tuple[float, float]:
    """The Beta prior ``(a, b)`` as floats; an error unless both are positive."""
    a, b = (float(v) for v in prior)
    if not (a > 0 and b > 0):
        raise WinrateInputError(f"Beta prior parameters must be positive, got {prior}")
    return a, b


def binomial_interval(
    k, n, method: str = "bayes", alpha: float = 0.05, prior=(1.0, 1.0)
) -> BinomialInterval:
    """Interval for a proportion from ``k`` successes in ``n`` binary trials (vectorised).

    ``method`` is one of :data:`BINOMIAL_METHODS`; ``prior = (a, b)`` is the Beta prior of
    the ``"bayes"`` method. Wald intervals are not clipped to [0, 1] (they are reported as
    computed, so their failure is visible).
    """
    if method not in _METHODS:
        raise WinrateInputError(f"method must be one of {one_of(BINOMIAL_METHODS)}, got {method!r}")
    alpha = check_alpha(alpha)
    k, n = check_counts(k, n)
    prior = check_prior(prior)
    low, high = _METHODS[method](k, n, alpha, prior)
    return BinomialInterval(
        low=np.asarray(low, dtype=float), high=np.asarray(high, dtype=float), estimate=k / n,
        method=method, alpha=alpha, prior=prior if method == "bayes" else None,
    )


@dataclass(frozen=True)
class Coverage:
    """Average coverage and width of an interval method when theta ~ U(0, 1).

    ``coverage`` is ``int_0^1 sum_k Binom(k; n, theta) 1[theta in CI(k)] dtheta``;
    ``mean_width`` is the expected width of the interval clipped to [0, 1].
    """

    n: int
    method: str
    alpha: float
    coverage: float
    mean_width: float


def exact_average_coverage(
    n: int, method: str, alpha: float = 0.05, prior=(1.0, 1.0)
) -> Coverage:
    """Exact coverage averaged over theta ~ U(0, 1), with no simulation or quadrature error.

    Swapping sum and integral, ``int_L^U C(n,k) t^k (1-t)^(n-k) dt =
    [I_U(k+1, n-k+1) - I_L(k+1, n-k+1)] / (n + 1)`` with ``I`` the regularised incomplete
    beta function, so the coverage is ``sum_k [I_U - I_L] / (n + 1)`` over the clipped
    interval ``[L_k, U_k]``. Each ``k`` is equally likely a priori (probability 1/(n+1)), so
    the mean width is the plain average of the clipped widths. For the uniform-prior Bayes
    interval each term is exactly ``(1 - alpha) / (n + 1)``, so its coverage is ``1 - alpha``.
    """
    k = np.arange(n + 1)
    ci = binomial_interval(k, n, method, alpha, prior)
    low, high = np.clip(ci.low, 0, 1), np.clip(ci.high, 0, 1)
    mass = stats.beta.cdf(high, k + 1, n - k + 1) - stats.beta.cdf(low, k + 1, n - k + 1)
    return Coverage(
        n=int(n), method=method, alpha=ci.alpha, coverage=float(mass.sum() / (n + 1)),
        mean_width=float(np.mean(high - low)),
    )


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, probs) -> np.ndarray:
    """Quantiles of a weighted sample: invert the normalised cumulative weight at the
    midpoint of each sample's weight step (linear interpolation between them)."""
    order = np.argsort(values)
    v, w = values[order], weights[order] / weights.sum()
    cdf = np.cumsum(w) - w / 2
    return np.interp(probs, cdf, v)


def warn_low_ess(ess: float, n_samples: int, what: str, sampler: str) -> None:
    """WinrateWarning below :data:`MIN_ESS`, naming the proposal that was used."""
    if ess < MIN_ESS:
        notes.emit(notes.low_effective_draws(what, ess, n_samples, sampler))


@dataclass(frozen=True)
class ClusteredBayesInterval:
    """Posterior summary of the mean accuracy theta under the beta-binomial cluster model.

    ``low``/``high``: equal-tailed credible interval; ``mean``: posterior mean; ``ess``:
    Kish effective sample size of the importance weights; ``n_samples``, ``seed`` and
    ``sampler`` (proposal used) reproduce the draw; ``n_clusters`` and ``n`` describe the data.
    """

    low: float
    high: float
    mean: float
    alpha: float
    ess: float
    n_samples: int
    seed: int
    sampler: str
    n_clusters: int
    n: int
    prior: tuple[float, float]
    dispersion_prior: tuple[float, float]


def _betabinom_loglik(successes, totals, theta, dispersion, chunk: int = 4096) -> np.ndarray:
    """``sum_t log BetaBinomial(Y_t; N_t, d theta, d (1 - theta))`` for every prior draw.

    Clusters with identical ``(Y_t, N_t)`` are merged and weighted by their multiplicity, and
    draws are processed in chunks, so memory stays ``O(chunk x distinct clusters)``.
    """
    pairs, counts = np.unique(np.column_stack([successes, totals]), axis=0, return_counts=True)
    out = np.empty(theta.size)
    for start in range(0, theta.size, chunk):
        th, d = theta[start:start + chunk, None], dispersion[start:start + chunk, None]
        logpmf = stats.betabinom.logpmf(pairs[:, 0], pairs[:, 1], d * th, d * (1 - th))
        out[start:start + chunk] = logpmf @ counts
    return out


def _dispersion_start(y: np.ndarray, m: np.ndarray) -> float:
    """Moment start for d: ``rho = excess between-cluster variance / (p (1 - p))`` and
    ``d = 1 / rho - 1`` (the beta-binomial intra-cluster correlation is ``1 / (1 + d)``)."""
    p = y.sum() / m.sum()
    if p in (0.0, 1.0):
        return 1.0
    excess = np.var(y / m, ddof=1) - np.mean(p * (1 - p) / m)
    rho = excess / (p * (1 - p))
    return float(np.clip(1 / rho - 1, 0.05, 1e4)) if rho > 0 else 1e3


def clustered_bayes_interval(
    successes, totals, alpha: float = 0.05, prior=(1.0, 1.0), dispersion_prior=(1.0, 1.0),
    n_samples: int = 20_000, seed: int = 0, sampler: str = "laplace",
) -> ClusteredBayesInterval:
    """Credible interval for the mean accuracy of clustered binary scores.

    Model (Bowyer et al. 2025, "clustered questions"): ``theta ~ Beta(a, b)``, dispersion
    ``d ~ Gamma(shape, scale)`` (default Gamma(1, 1)), cluster accuracy
    ``theta_t ~ Beta(d theta, d (1 - theta))``, so the successes of cluster t are
    ``Y_t ~ BetaBinomial(N_t, d theta, d (1 - theta))``. The posterior is represented by
    ``n_samples`` seeded importance draws (:mod:`winrate.evals._importance`: the paper's
    prior proposal with ``sampler="prior"``, a defensive Laplace-t proposal by default);
    quantiles are read from the weighted sample (no resampling step) and the effective
    sample size is reported (a WinrateWarning below :data:`MIN_ESS`).
    """
    y = np.asarray(successes, dtype=float)
    m = np.asarray(totals, dtype=float)
    if y.shape != m.shape or y.ndim != 1:
        raise WinrateInputError(
            f"successes and totals must be 1-D and aligned, got {y.shape} and {m.shape}"
        )
    if y.size < 2:
        raise WinrateInputError(f"the clustered Bayes interval needs >= 2 clusters, got {y.size}")
    check_counts(y, m)
    alpha = check_alpha(alpha)
    a, b = check_prior(prior)
    shape, scale = check_prior(dispersion_prior)

    def log_prior(z):
        return logit_beta_logpdf(z[:, 0], a, b) + log_gamma_logpdf(z[:, 1], shape, scale)

    def sample_prior(k, rng):
        return np.column_stack([logit(rng.beta(a, b, k)), np.log(rng.gamma(shape, scale, k))])

    def log_lik(z):
        with np.errstate(over="ignore", invalid="ignore"):
            return _betabinom_loglik(y, m, expit(z[:, 0]), np.exp(z[:, 1]))

    start = [logit((y.sum() + a) / (m.sum() + a + b)), np.log(_dispersion_start(y, m))]
    sample = importance_sample(log_prior, log_lik, sample_prior, start, n_samples, seed, sampler)
    theta = expit(sample.draws[:, 0])
    low, high = weighted_quantiles(theta, sample.weights, [alpha / 2, 1 - alpha / 2])
    warn_low_ess(sample.ess, n_samples, "clustered Bayes interval", sample.sampler)
    return ClusteredBayesInterval(
        low=float(low), high=float(high), mean=float(sample.weights @ theta), alpha=alpha,
        ess=sample.ess, n_samples=int(n_samples), seed=int(seed), sampler=sample.sampler,
        n_clusters=int(y.size), n=int(m.sum()), prior=(a, b), dispersion_prior=(shape, scale),
    )
