"""Small-sample floor of the win rate's covariance: pairs whose comparisons all agree.

A pair whose comparisons all had the same outcome (1 win in 1 comparison, 7 ties in 7) has
zero sample variance, so every variance estimator built on it -- naive, clustered,
jackknife -- gives it zero width. Its psi_ab = x / n is still a binomial proportion with
variance ``p (1 - p) / n``; only ``p (1 - p)`` must come from somewhere else.

Empirical-Bayes floor (the default). The other pairs of the log say how far apart models
are: a Bradley-Terry fit predicts each pair's ``pi_ab`` with a ridge prior whose variance
is estimated from the log
(:func:`winrate.estimators.bradley_terry_kernels.empirical_bayes_probabilities`; beyond
1,000 models its fit runs on sparse matrices, so thousands of models take seconds).
The pair's own outcomes update the prior ``p ~ Beta(m pi, m (1 - pi))``, worth ``m = 2``
comparisons (at ``pi = 1/2`` the uniform prior of Bayes and Laplace), and the floor is the
posterior mean of the variance (a conjugate Beta-binomial step; see e.g. Gelman et al.
2013, *Bayesian Data Analysis*, 3rd ed., sec. 2.4)::

    a = m pi + x,   b = m (1 - pi) + n - x       (x = n psi_ab, ties counting half)
    Var_ab = E[p (1 - p) | x] / n = a b / ((a + b) (a + b + 1)) / n

So a pair of near-equal models gets close to ``1/4n`` whatever it showed, and a pair the
rest of the log places far apart gets a small variance, as its sampling variance is: in a
lopsided design (most pairs near-certain) a floor built from the pair alone makes every
interval too wide, and one built from the fit is nearly exact (coverage study,
``paper/coverage``).

Wilson floor (when the log cannot place the models). If the largest strong component of
the "scored against" digraph has fewer than three models -- e.g. a fully ordered log, in
which every pair went one way -- nothing in the data measures the spread of abilities,
and each pair gets the variance that makes its Wald interval reach the far end of the
Wilson score interval of its proportion (Wilson 1927, JASA 22(158); recommended for small
n by Agresti & Coull 1998, Amer. Stat. 52(2), and Brown, Cai & DasGupta 2001, Stat. Sci.
16(2))::

    Var_ab = (max(psi - L, U - psi) / z)^2,
    [L, U] = (psi + z^2/2n -/+ z sqrt(psi (1 - psi) / n + z^2 / 4n^2)) / (1 + z^2 / n)

One win in one comparison then gets [L, U] = [0.21, 1], an SE of 0.40.

``z`` is fixed at :data:`WILSON_Z`, the normal quantile of a 95% interval, whatever level
the intervals are reported at: the floor is part of the covariance, and the variance is
a property of the estimate, the level only of the interval (``analyze(log, alpha=a).cov``
is the same for every ``a``, and ``conf_int(alpha=a)`` equals a fresh analysis at ``a``).
95% is the conventional level at which the Wilson interval is recommended and compared
(Brown, Cai & DasGupta 2001 tabulate it there), and at which the floor was calibrated;
at another level the floor's SE is scaled with the interval's own critical value, as
every other SE is.

Either floor is pushed onto the scores through the influence of psi_ab (``w_ab`` on S_a,
``-w_ba`` on S_b). Both vanish for pairs with any variation, whose sample variance is used
as it is. The Wilson floor is never zero; the empirical-Bayes one is zero only if the fit
puts a pair's pi at 0 or 1 in double precision (a rating gap above about 37), and a model
whose SE then rounds to zero is reported as not estimable
(:func:`winrate.inference.covariance.not_estimable_models`), never as certain.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy import special

from winrate.estimators.bradley_terry_kernels import empirical_bayes_probabilities
from winrate.estimators.leaderboard import Leaderboard

#: Weight of the Bradley-Terry prediction in the floor's Beta prior, in comparisons.
PRIOR_COMPARISONS = 2.0
#: The Wilson floor's reference level: z = Phi^-1(0.975), the 95% interval's (module doc).
WILSON_Z = float(special.ndtri(1 - 0.05 / 2))  # as winrate.variance.reference.critical_value


def degenerate_pairs(board: Leaderboard, frequency: np.ndarray | None) -> np.ndarray:
    """(P,) mask of the observed pairs whose comparisons all had the same outcome."""
    n = board.counts[board.pairs[:, 0], board.pairs[:, 1]]
    return pair_spread(board, frequency) <= 1e-12 * n


def pair_spread(board: Leaderboard, frequency: np.ndarray | None) -> np.ndarray:
    """(P,) each observed pair's sum of squared pair-centred scores ``sum_r f_r (s_r -
    psi_ab)^2``: from the rows, or kept by pair by a fit without rows (its cell totals,
    :class:`winrate.estimators.cells.CellTotals`)."""
    if board.pair is None:
        return board.influence.pair_spread
    freq = np.ones(board.pair.shape[0]) if frequency is None else frequency
    return _pair_spread(board.pair, board.centered, freq, len(board.pairs))


@njit(cache=True)
def _pair_spread(pair, centered, freq, n_pairs):  # pragma: no cover - numba
    """:func:`pair_spread` from the rows in one pass, added in row order (as
    ``np.bincount`` adds them) with no temporary arrays."""
    spread = np.zeros(n_pairs)
    for r in range(pair.shape[0]):
        spread[pair[r]] += freq[r] * (centered[r] * centered[r])
    return spread


def beta_binomial_floor(prior_mean, x, n, strength: float = PRIOR_COMPARISONS):
    """Posterior mean of ``p (1 - p) / n`` under ``p ~ Beta(m pi, m (1 - pi))`` after ``x``
    successes in ``n`` trials (module doc)."""
    a = strength * prior_mean + x
    b = strength * (1 - prior_mean) + n - x
    return a * b / ((a + b) * (a + b + 1)) / n


def wilson_floor(psi, n, z: float = WILSON_Z):
    """The variance whose Wald interval at critical value ``z`` reaches the far Wilson
    bound at ``z`` (module doc; the floor uses :data:`WILSON_Z`)."""
    centre = (psi + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * np.sqrt(psi * (1 - psi) / n + z**2 / (4 * n**2))
    return (np.maximum(psi - (centre - half), centre + half - psi) / z) ** 2


def degenerate_pair_cov(board: Leaderboard, frequency: np.ndarray | None,
                        z: float = WILSON_Z):
    """Floor (module doc) of the reported scores' covariance, the (P,) mask of the pairs
    whose comparisons all had the same outcome, and which floor was used
    (``"empirical Bayes"`` or ``"Wilson"``; None without such pairs)."""
    var, degenerate, kind = degenerate_pair_variance(board, frequency, z)
    if kind is None:
        return np.zeros((len(board.codes),) * 2), degenerate, None
    lo, hi = board.pairs[degenerate, 0], board.pairs[degenerate, 1]
    return pair_cov(board, lo, hi, var[degenerate]), degenerate, kind


def degenerate_pair_variance(board: Leaderboard, frequency: np.ndarray | None,
                             z: float = WILSON_Z):
    """The floor's variance of each observed pair's ``psi_ab`` (P,) (0 for a pair with any
    variation), the mask of the pairs whose comparisons all agree, and which floor
    (:func:`degenerate_pair_cov`)."""
    degenerate = degenerate_pairs(board, frequency)
    var = np.zeros(degenerate.shape)
    if not degenerate.any():
        return var, degenerate, None
    lo, hi = board.pairs[degenerate, 0], board.pairs[degenerate, 1]
    n, psi = board.counts[lo, hi], board.psi[lo, hi]
    predicted = empirical_bayes_probabilities(board.psi, board.counts)
    if predicted is None:
        var[degenerate], kind = wilson_floor(psi, n, z), "Wilson"
    else:
        var[degenerate] = beta_binomial_floor(predicted[0][lo, hi], n * psi, n)
        kind = "empirical Bayes"
    return var, degenerate, kind


def pair_cov(board: Leaderboard, lo: np.ndarray, hi: np.ndarray,
             var: np.ndarray) -> np.ndarray:
    """The reported scores' covariance from independent variances ``var`` of the pairs'
    ``psi_ab`` (``lo < hi``): pair (lo, hi) pushes S_lo by ``w_lo,hi`` and S_hi by
    ``-w_hi,lo``, so it adds ``var v v^T``."""
    k = len(board.all_models)
    push_lo, push_hi = board.weights[lo, hi], -board.weights[hi, lo]
    cov = np.zeros((k, k))
    for (i, j), (pi, pj) in (((lo, lo), (push_lo, push_lo)), ((hi, hi), (push_hi, push_hi)),
                             ((lo, hi), (push_lo, push_hi)), ((hi, lo), (push_hi, push_lo))):
        np.add.at(cov, (i, j), var * pi * pj)
    return cov[np.ix_(board.codes, board.codes)]


#: The largest variance of a score in [0, 1] (a win or a loss with probability 1/2 each).
MAX_SCORE_VARIANCE = 0.25


def unidentified_pair_cov(board: Leaderboard, frequency: np.ndarray | None,
                          single: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """The variance the clustered sandwich cannot see for the ``single`` (P,) pairs, whose
    comparisons all lie in one cluster of a clustering axis (issue 37).

    Such a pair's centred scores sum to zero in its one cluster, so the clustered meat gets
    nothing from it, yet its ``psi_ab`` (the mean of ``n`` comparisons) has variance
    (Kish's design effect)::

        Var(psi_ab) = sigma_ab^2 (1 + (n - 1) rho_ab) / n

    with ``rho_ab`` the correlation of comparisons that share the cluster, which one
    cluster cannot identify. It is taken from the other pairs of the axis: ``rho`` (P,), the
    one-way ANOVA ICC of the axis' (cluster, pair) cells
    (:func:`winrate.variance.diagnostics.anova_icc` of the pair-centred scores grouped by
    cluster and pair, ``winrate.inference.covariance._same_pair_icc``; clipped to [0, 1];
    1, the bound, where that ICC is not identified).
    ``sigma_ab^2`` is the pair's sample variance ``sum_r f_r (s_r - psi_ab)^2 / (n - 1)``, at
    most :data:`MAX_SCORE_VARIANCE`, or, for a pair whose comparisons all agree, its
    small-sample floor (``p (1 - p) / n``, :func:`degenerate_pair_variance`) times ``n``.
    What the analysis already counts for the pair (0 from the clustered meat, the floor) is
    subtracted, and the rest is pushed onto the scores as :func:`pair_cov`. So the pair
    counts at least as its ``n`` independent comparisons would, and more as the prompts'
    comparisons correlate; a pair of one comparison adds nothing (its variance is
    ``sigma^2`` whatever ``rho``; the floor holds it).
    """
    n = board.counts[board.pairs[:, 0], board.pairs[:, 1]].astype(float)
    bounded = single & (n > 1)
    if not bounded.any():
        return np.zeros((len(board.codes),) * 2)
    spread = pair_spread(board, frequency)
    sample = np.minimum(np.divide(spread, n - 1, out=np.zeros(n.shape), where=n > 1),
                        MAX_SCORE_VARIANCE)
    floor, degenerate, _ = degenerate_pair_variance(board, frequency)
    inflation = 1 + (n - 1) * np.clip(rho, 0.0, 1.0)
    extra = np.where(degenerate, floor * (inflation - 1), sample * inflation / n)
    extra = np.where(bounded, extra, 0.0)
    keep = extra > 0
    return pair_cov(board, board.pairs[keep, 0], board.pairs[keep, 1], extra[keep])
