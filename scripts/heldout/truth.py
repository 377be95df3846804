"""The estimands of the held-out study, computed from a generator's population quantities.

Let ``psi_ab`` be the population half-tie win probability of a over b, ``P(win) + P(tie)/2``
averaged over everything the study treats as sampled (prompts, responses, judges, the
order of presentation); each generator computes it exactly (its module doc).

**Win rate** (winrate's default estimand, uniform opponent weights): on a drawn design,
``S_a = |O_a|^-1 sum_{b in O_a} psi_ab`` over the set ``O_a`` of opponents a met in that
sample; with a baseline, ``S_a = psi_{a,base}``.

**Bradley-Terry** (winrate's ``model="bt"``, ties as half wins): the pseudo-true parameter of
the misspecified logit model (White 1982, Econometrica 50(1)), the root of the expected
estimating equations of the fit on the drawn design. With ``n_ab`` comparisons of the
unordered pair ``(a, b)`` and optional covariate ``x`` (the first model's minus the
second's), the fit solves ``sum_r (s_r - sigma(theta_a - theta_b + gamma x_r)) z_r = 0`` with
``z_r = (e_a - e_b, x_r)``; relabelling a row's two models flips the signs of s - 1/2, of
``theta_a - theta_b`` and of ``x``, so each row contributes the same in the low/high
orientation. Its expectation given the design is::

    U(theta, gamma) = sum_pairs n_ab E_x[(t_ab(x) - sigma(theta_a - theta_b + gamma x)) z(x)]

with ``t_ab(x) = E[s | x]`` (presentation order averaged). The truth is the root of
``U = 0`` with ``sum_a theta_a = 0``, found by Newton's method (:func:`bt_pseudo_truth`,
its own code, not winrate's solver); the expectation over x is a quadrature rule the
generator supplies (one node at x = 0 and ``t = psi`` without a covariate). Reported as
winrate reports ratings: ``1000 + 400 / ln 10 (theta_a - mean theta)`` over the models of
the log, or ``1000 + 400 / ln 10 (theta_a - theta_base)`` with a baseline (not reported).
winrate standardises the covariate, ``(x - mean) / sd``; that rescales gamma and adds the
sample mean as an offset that vanishes in the population (x is antisymmetric in the random
order), so the ratings' truth does not depend on it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

ELO = 400.0 / np.log(10.0)
RATING_MEAN = 1000.0
_NEWTON_TOL = 1e-12


def observed_pairs(first: np.ndarray, second: np.ndarray, n_total: int):
    """The observed unordered pairs ``(low, high)`` and their comparison counts."""
    low, high = np.minimum(first, second), np.maximum(first, second)
    key, counts = np.unique(low * n_total + high, return_counts=True)
    return key // n_total, key % n_total, counts.astype(float)


def winrate_truth(psi: np.ndarray, low, high, baseline: int | None = None) -> np.ndarray:
    """``S_a`` (module doc) for every model (NaN without comparisons, and for a baseline)."""
    n_total = psi.shape[0]
    met = np.zeros((n_total, n_total), bool)
    met[low, high] = met[high, low] = True
    if baseline is not None:
        met[:, :] = False
        met[np.arange(n_total), baseline] = np.isin(np.arange(n_total), np.r_[low, high])
        met[baseline] = False
    degree = met.sum(axis=1)
    total = np.where(met, np.nan_to_num(psi), 0.0).sum(axis=1)
    return np.where(degree > 0, total / np.maximum(degree, 1), np.nan)


def bt_pseudo_truth(low, high, n, target, x=None, weights=None, n_total: int | None = None):
    """Pseudo-true ``theta`` (centred over the models present) and ``gamma`` (module doc).

    ``target``: (P,) pair values ``psi_low,high`` without a covariate, or (P, Q) values of
    ``t(x)`` at the (P, Q) nodes ``x`` with (P, Q) weights summing to one per pair.
    Returns (n_total,) theta (NaN for absent models) and gamma (0 without a covariate)."""
    low, high, n = np.asarray(low), np.asarray(high), np.asarray(n, float)
    slope = x is not None
    if not slope:
        target = np.asarray(target, float)[:, None]
        x, weights = np.zeros_like(target), np.ones_like(target)
    present, local = np.unique(np.r_[low, high], return_inverse=True)
    lo, hi = local[:low.size], local[low.size:]
    k = present.size
    params = np.zeros(k + slope)
    for _ in range(100):
        step = np.linalg.solve(*_newton_system(params, lo, hi, n, target, x, weights, k, slope))
        params += step[:-1]
        if np.abs(step[:-1]).max() < _NEWTON_TOL:
            break
    else:
        raise RuntimeError("Bradley-Terry pseudo-truth: Newton did not converge")
    theta = np.full(n_total or int(present.max()) + 1, np.nan)
    theta[present] = params[:k]
    return theta, (float(params[k]) if slope else 0.0)


def _newton_system(params, lo, hi, n, target, x, weights, k, slope):
    """The bordered Newton system ``[[I, c], [c', 0]] [step, lambda] = [U, 0]`` with ``I``
    the expected information, ``U`` the estimating function and ``c = (1_K, 0)`` the
    centring constraint."""
    eta = (params[lo] - params[hi])[:, None] + (params[k] * x if slope else 0.0)
    p = expit(eta)
    resid = n[:, None] * weights * (target - p)
    info = n[:, None] * weights * p * (1 - p)
    size = k + slope
    grad = np.zeros(size + 1)
    grad[:k] = np.bincount(lo, resid.sum(1), k) - np.bincount(hi, resid.sum(1), k)
    matrix = np.zeros((size + 1, size + 1))
    pair_info = info.sum(1)
    np.add.at(matrix, (lo, lo), pair_info)
    np.add.at(matrix, (hi, hi), pair_info)
    np.add.at(matrix, (lo, hi), -pair_info)
    np.add.at(matrix, (hi, lo), -pair_info)
    if slope:
        grad[k] = (resid * x).sum()
        cross = (info * x).sum(1)
        column = np.bincount(lo, cross, k) - np.bincount(hi, cross, k)
        matrix[:k, k] = matrix[k, :k] = column
        matrix[k, k] = (info * x * x).sum()
    matrix[:k, size] = matrix[size, :k] = 1.0
    return matrix, grad


def elo_ratings(theta: np.ndarray, baseline: int | None = None) -> np.ndarray:
    """Ratings as winrate reports them (module doc); NaN for absent models and a baseline."""
    if baseline is None:
        return RATING_MEAN + ELO * (theta - np.nanmean(theta))
    ratings = RATING_MEAN + ELO * (theta - theta[baseline])
    ratings[baseline] = np.nan
    return ratings
