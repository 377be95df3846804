"""Bradley-Terry ratings on the Elo scale, with the linearisation winrate's variance needs.

Model (Zermelo 1929; Bradley & Terry 1952). Comparison r of models (a, b) with score
``s_r`` in [0, 1] (1 a won, 0 b won) and frequency ``f_r``::

    logit P(a beats b) = eta_r = theta_a - theta_b + x_r' beta

with ``x_r`` optional per-row covariates of the (a, b) difference ("style control", LMArena
2024, "Does style matter?"), standardised over rows as LMArena does,
``x = (x_raw - mean) / sd`` (population sd, frequency-weighted). As in LMArena, the
centring acts as a hidden a-versus-b offset: relabelling a and b in *some* rows changes the
fit slightly (relabelling every row does not). The influence treats mean and sd as fixed;
jackknife and bootstrap refits re-standardise. Ties:

* ``"half"`` (default, the LMArena convention): a tie is half a win for each side, i.e. the
  Bernoulli log-likelihood with fractional outcome,
  ``l = sum_r f_r [s_r log pi_r + (1 - s_r) log(1 - pi_r)]``; graded preferences in [0, 1]
  enter the same way (a quasi-likelihood, McCullagh & Nelder 1989, sec. 9.2).
* ``"davidson"`` (Davidson 1970, JASA 65(329)): with ``x = eta / 2`` and ``nu = e^delta``,
  ``P(a) = e^x / D``, ``P(b) = e^-x / D``, ``P(tie) = nu / D``, ``D = 2 cosh x + nu``;
  ``delta`` is estimated with the ratings (outcomes must be 1, 0 or 1/2).

Fit. Without covariates the log-likelihood depends on the data only through the pair totals
``W_p = sum f_r s_r`` and ``N_p = sum f_r`` (and tie counts for Davidson), so Newton's
method runs on P observed pairs, not n rows. With covariates it runs on the rows (IRLS).
Both log-likelihoods are concave; steps are halved until the log-likelihood does not drop.

Identification. theta is defined up to a constant; winrate centres it, ``sum_a theta_a = 0``,
and the reported ratings are ``400 / ln(10) * theta`` shifted so that their mean is 1000
(Elo scale, as LMArena reports), or so that ``--anchor MODEL=RATING`` holds. Contrasts, and
their covariance, do not depend on that choice. A finite MLE needs a connected comparison
graph and, for every split of the models in two groups, a win of each group over the other
(Zermelo 1929; Ford 1957, Amer. Math. Monthly 64(8); Hunter 2004, Ann. Stat. 32(1),
Assumption 1): the "scored against" digraph must be strongly connected. Both are checked
and a failure names the models. An optional ridge prior ``theta ~ N(0, VAR)``
(``prior=VAR``, natural logit units) adds ``-theta' theta / (2 VAR)`` to the
log-likelihood, which keeps the estimate finite.

Influence. The M-estimator expansion ``theta_hat - theta ~ H^-1 sum_r g_r`` (Huber 1967;
Stefanski & Boos 2002, "The calculus of M-estimation", Amer. Stat. 56(1)) with score rows
``g_r = f_r (s_r - pi_r) z_r``, ``z_r = (e_a - e_b, x_r)``, and ``H = -d^2 l / d theta^2``
(observed information, plus ``I / VAR`` under the prior). Under the centring constraint
``H`` is singular along ``u = (1_K, 0) / sqrt(K)`` and ``H^-1`` is its Moore-Penrose inverse
``(H + u u')^-1 - u u'``. The estimator returns the sparse score rows and the bread
``B = R H^-1`` (``R`` the Elo/anchor reporting map) and :mod:`winrate.variance.sandwich` computes
``B M B'`` for any clustering of the rows: the influence ``G B'`` is never built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from winrate import notes
from winrate.constants import TIE_MODELS
from winrate.errors import WinrateInputError, listed, one_of
from winrate.estimators.base import ELO
from winrate.estimators.graph import check_connected
from winrate.estimators.leaderboard import Leaderboard
from winrate.estimators.win_rate_kernels import (
    baseline_code,
    influence_matrix,
    model_code,
    outcome_counts,
    pairwise_table,
)
from winrate.io.logs import ComparisonLog

ELO_SCALE = 400.0 / np.log(10.0)
DEFAULT_RATING = 1000.0
_STEP_TOL = 1e-10  # Newton stops when no parameter moves more than this (logit units)
_MAX_ITER = 200
_CHORD_STEPS = 8  # replicate refits: chord steps before Newton's (PairRefit._newton)
#: |theta| beyond this (e^40 odds) means the MLE is not finite (:func:`newton_maximise`).
DIVERGED = 40.0


# ------------------------------------------------------------------ identification


def dominance_problem(wins: np.ndarray, names: np.ndarray) -> str | None:
    """Why the MLE is infinite, in words, or None when it is finite.

    ``wins[a, b] > 0`` when a scored against b (a win, tie or graded preference). The MLE
    is finite iff this digraph is strongly connected (module doc); otherwise a group of
    models never lost to (or never won against) every model outside it.
    """
    labels = strong_components(wins)
    n_comp = labels.max() + 1
    if n_comp == 1:
        return None
    beaten_by_outside = np.zeros(n_comp, bool)
    beat_outside = np.zeros(n_comp, bool)
    a, b = np.nonzero(wins > 0)
    cross = labels[a] != labels[b]
    beat_outside[labels[a[cross]]] = True
    beaten_by_outside[labels[b[cross]]] = True
    parts = []
    for comp in np.flatnonzero(~beaten_by_outside)[:3]:
        parts.append(f"{_group(names[labels == comp])} never lost to a model outside it "
                     "(its rating would be +infinity)")
    for comp in np.flatnonzero(~beat_outside)[:3]:
        parts.append(f"{_group(names[labels == comp])} never won against a model outside it "
                     "(its rating would be -infinity)")
    return "; ".join(parts)


def strong_components(wins: np.ndarray) -> np.ndarray:
    """Label of each model's strongly connected component of the "scored against" digraph
    (``wins[a, b] > 0``): within one component the MLE of every rating difference is
    finite, across two it is not (:func:`dominance_problem`)."""
    from scipy.sparse.csgraph import connected_components  # 0.15 s to import: only here

    return connected_components(sp.csr_array(wins > 0), directed=True,
                                connection="strong")[1]


def _group(members: np.ndarray) -> str:
    if len(members) == 1:
        return f"model {members[0]!s}"
    return f"the group of models {listed(members, limit=6, quote=False)}"


# ------------------------------------------------------------------ likelihoods


@dataclass(frozen=True)
class _Pairs:
    """Pair-level sufficient statistics: ``W`` score of lo, ``N`` count, Davidson's
    ``wins``/``losses``/``ties`` counts of lo (None unless needed)."""

    lo: np.ndarray
    hi: np.ndarray
    W: np.ndarray
    N: np.ndarray
    k: int
    wins: np.ndarray | None = None
    losses: np.ndarray | None = None
    ties: np.ndarray | None = None


def incidence_laplacian(lo, hi, w, k, sparse: bool = False):
    """``M' diag(w) M`` for the (P, K) incidence ``M`` (+1 at lo, -1 at hi), as a dense
    array, or (``sparse``) a CSR array with O(P + K) entries."""
    if sparse:
        rows = np.concatenate([lo, hi, lo, hi])
        cols = np.concatenate([lo, hi, hi, lo])
        return sp.csr_array((np.concatenate([w, w, -w, -w]), (rows, cols)), shape=(k, k))
    flat = np.concatenate([lo * k + lo, hi * k + hi, lo * k + hi, hi * k + lo])
    return np.bincount(flat, np.concatenate([w, w, -w, -w]), k * k).reshape(k, k)


def incidence_sum(lo, hi, r, k) -> np.ndarray:
    """``M' r`` for the (P, K) incidence ``M`` (+1 at lo, -1 at hi): r added at lo and
    subtracted at hi (a per-pair derivative in ``eta = theta_lo - theta_hi`` spread to the
    ratings)."""
    return np.bincount(lo, r, k) - np.bincount(hi, r, k)


def _logit_pairs(theta, data: _Pairs, prior: float, sparse: bool = False):
    """Half-tie Bernoulli log-likelihood, gradient and information on pair totals (the
    information as a sparse array with ``sparse``)."""
    eta = theta[data.lo] - theta[data.hi]
    pi = expit(eta)
    loglik = -(data.W * np.logaddexp(0, -eta) + (data.N - data.W) * np.logaddexp(0, eta)).sum()
    grad = incidence_sum(data.lo, data.hi, data.W - data.N * pi, data.k)
    info = incidence_laplacian(data.lo, data.hi, data.N * pi * (1 - pi), data.k, sparse)
    return ridge_penalised(loglik, grad, info, theta, prior, data.k)


def _davidson_terms(eta, delta):
    """``x = eta/2``, ``D = 2 cosh x + e^delta`` and the per-comparison derivatives of
    ``log D``: ``dD/deta / D``, ``e^delta / D`` and the information entries (module doc)."""
    x = eta / 2
    nu = np.exp(delta)
    D = 2 * np.cosh(x) + nu
    i_ee = (np.cosh(x) * D / 2 - np.sinh(x) ** 2) / D**2
    i_ed = -np.sinh(x) * nu / D**2
    i_dd = 2 * np.cosh(x) * nu / D**2
    return x, D, np.sinh(x) / D, nu / D, i_ee, i_ed, i_dd


def _davidson_pairs(params, data: _Pairs, prior: float):
    """Davidson (1970) log-likelihood on pair counts; parameters ``(theta, delta)``."""
    k = data.k
    theta, delta = params[:k], params[k]
    eta = theta[data.lo] - theta[data.hi]
    x, D, sinh_d, nu_d, i_ee, i_ed, i_dd = _davidson_terms(eta, delta)
    n = data.wins + data.losses + data.ties
    loglik = ((data.wins - data.losses) * x + data.ties * delta - n * np.log(D)).sum()
    grad = np.append(incidence_sum(data.lo, data.hi, (data.wins - data.losses) / 2 - n * sinh_d, k),
                     (data.ties - n * nu_d).sum())
    info = np.zeros((k + 1, k + 1))
    info[:k, :k] = incidence_laplacian(data.lo, data.hi, n * i_ee, k)
    info[:k, k] = info[k, :k] = incidence_sum(data.lo, data.hi, n * i_ed, k)
    info[k, k] = (n * i_dd).sum()
    return ridge_penalised(loglik, grad, info, params, prior, k)


def _logit_rows(params, design: sp.csr_array, score, freq, prior: float, k: int):
    """Half-tie Bernoulli log-likelihood on rows with covariates (IRLS pieces)."""
    eta = design @ params
    pi = expit(eta)
    loglik = -(freq * (score * np.logaddexp(0, -eta)
                       + (1 - score) * np.logaddexp(0, eta))).sum()
    grad = design.T @ (freq * (score - pi))
    info = (design.T @ design.multiply((freq * pi * (1 - pi))[:, None])).toarray()
    return ridge_penalised(loglik, grad, info, params, prior, k)


def ridge_penalised(loglik, grad, info, params, prior, k):
    """Add the ridge prior ``-theta' theta / (2 VAR)`` on the K ratings (``prior = 1/VAR``)."""
    if prior:
        theta = params[:k]
        loglik = loglik - prior * (theta @ theta) / 2
        grad = grad.copy()
        grad[:k] -= prior * theta
        if sp.issparse(info):
            ridge = np.zeros(info.shape[0])
            ridge[:k] = prior
            return loglik, grad, (info + sp.diags_array(ridge)).tocsr()
        info = info.copy()
        info[np.arange(k), np.arange(k)] += prior
    return loglik, grad, info


def _centring(k: int, n_params: int) -> np.ndarray:
    """``u u'`` with ``u = (1_K, 0) / sqrt(K)``: the direction the centred model leaves free."""
    u = np.zeros(n_params)
    u[:k] = 1 / np.sqrt(k)
    return np.outer(u, u)


def newton_maximise(objective, n_params: int, k: int, centred: bool, what: str,
            start: np.ndarray | None = None, solve=np.linalg.solve) -> np.ndarray:
    """Maximise a concave log-likelihood by Newton's method with step halving, from
    ``start`` (default zeros).

    With ``centred`` the step solves ``(H + u u') d = g``: g is orthogonal to u, so d is the
    minimum-norm Newton step and the ratings stay centred. An information matrix that is
    singular on the way (the likelihood flat along a direction: a maximum at infinity, as
    Rao-Kupper's when a model never won outright and the tie threshold grows with its
    distance) is an input error pointing to the ridge prior, as a diverging fit is.
    ``solve(info, grad)`` gives the step (:func:`_cg_solve` for a sparse information).
    """
    params = np.zeros(n_params) if start is None else start.copy()
    fix = _centring(k, n_params) if centred else 0.0
    loglik, grad, info = objective(params)
    for _ in range(_MAX_ITER):
        try:
            step = solve(info + fix if centred else info, grad)
        except np.linalg.LinAlgError:
            raise WinrateInputError(f"the {what} likelihood is flat along some direction "
                                    "(singular information): the MLE is not finite for "
                                    "these data (try a ridge prior, option 'prior')") from None
        for _halving in range(50):
            new = objective(params + step)
            if new[0] >= loglik - 1e-12 * max(1.0, abs(loglik)):
                break
            step = step / 2
        params = params + step
        loglik, grad, info = new
        if np.abs(step).max() < _STEP_TOL:
            break
    else:
        raise WinrateInputError(f"the {what} fit did not converge in {_MAX_ITER} Newton "
                                "steps; the MLE may not be finite (try a ridge prior, "
                                "option 'prior')")
    if np.abs(params[:k]).max() > DIVERGED:
        raise WinrateInputError(f"the {what} ratings diverge (|theta| > {DIVERGED:.0f}): "
                                "the MLE is not finite for these data (try a ridge prior, "
                                "option 'prior')")
    return params


def inverse_information(info: np.ndarray, k: int, centred: bool) -> np.ndarray:
    """``H^-1``, the Moore-Penrose inverse under the centring constraint (module doc)."""
    if not centred:
        return np.linalg.inv(info)
    fix = _centring(k, info.shape[0])
    return np.linalg.inv(info + fix) - fix


# ------------------------------------------------------------------ empirical Bayes

#: Search interval of the prior variance tau^2 (natural logit units) for
#: :func:`empirical_bayes_probabilities`: from near-equal models to e^60-odds spreads.
_PRIOR_VARIANCE_RANGE = (1e-3, 1e3)
#: Fewest models in the largest strong component for the data to speak to the rating scale.
MIN_SCALE_MODELS = 3
#: Most models for which :func:`empirical_bayes_probabilities` factorises the dense (K, K)
#: information (exact, O(K^3) per Newton step: about 0.1 s at 1,000 models); beyond, its
#: steps run sparse (conjugate gradients, stochastic Lanczos log-determinant), which scales
#: with the pairs: 3,000 models in seconds instead of minutes.
DENSE_EB_MODELS = 1000


def _pairs_from_counts(psi: np.ndarray, counts: np.ndarray, models: np.ndarray) -> _Pairs:
    """Pair totals of the observed pairs among ``models`` (codes into psi and counts)."""
    sub = counts[np.ix_(models, models)]
    lo, hi = np.nonzero(np.triu(sub, k=1))
    n = sub[lo, hi]
    return _Pairs(lo, hi, np.nan_to_num(psi[np.ix_(models, models)])[lo, hi] * n, n,
                  len(models))


def _ridge_ratings(data: _Pairs, variance: float, start=None, sparse: bool = False):
    return newton_maximise(lambda t: _logit_pairs(t, data, 1.0 / variance, sparse), data.k, data.k,
                   False, "Bradley-Terry (empirical Bayes)", start,
                   _cg_solve if sparse else np.linalg.solve)


def laplace_evidence(log_variance: float, data: _Pairs, start=None,
                     sparse: bool = False) -> tuple[float, np.ndarray]:
    """Laplace approximation to the log marginal likelihood of the pair totals under the
    prior ``theta ~ N(0, tau^2 I)``, ``tau^2 = exp(log_variance)`` (Tierney & Kadane 1986,
    JASA 81(393); MacKay 1992, Neural Comput. 4(3)), up to a constant, and the posterior
    mode::

        log m(tau^2) ~ l(theta^) - |theta^|^2 / (2 tau^2) - K/2 log tau^2 - 1/2 log det H

    with ``theta^`` the mode and ``H`` the observed information plus ``I / tau^2``. With
    ``sparse`` (many models, :data:`DENSE_EB_MODELS`), the mode comes from Newton steps
    solved by conjugate gradients and ``log det H`` from stochastic Lanczos quadrature
    (:func:`slq_logdet`), in O(P + K) memory and time per step instead of O(K^3).
    """
    variance = float(np.exp(log_variance))
    theta = _ridge_ratings(data, variance, start, sparse)
    penalised, _, info = _logit_pairs(theta, data, 1.0 / variance, sparse)
    logdet = slq_logdet(info) if sparse else np.linalg.slogdet(info)[1]
    return penalised - data.k / 2 * log_variance - logdet / 2, theta


def _cg_solve(matrix, rhs: np.ndarray) -> np.ndarray:
    """``matrix^-1 rhs`` for a sparse symmetric positive-definite ``matrix`` by conjugate
    gradients with the Jacobi preconditioner (Hestenes & Stiefel 1952, J. Res. NBS 49(6)),
    to a relative residual of 1e-12: the ridge keeps the matrix well conditioned."""
    from scipy.sparse.linalg import cg

    diagonal = matrix.diagonal()
    solution, failed = cg(matrix, rhs, rtol=1e-12, maxiter=10 * len(rhs),
                          M=sp.diags_array(1.0 / diagonal))
    if failed:
        raise np.linalg.LinAlgError("conjugate gradients did not converge")
    return solution


#: Probe vectors and Lanczos steps of :func:`slq_logdet`, and the seed of its probes.
SLQ_PROBES, SLQ_STEPS, SLQ_SEED = 64, 40, 20240601


def slq_logdet(matrix, probes: int = SLQ_PROBES, steps: int = SLQ_STEPS,
               seed: int = SLQ_SEED) -> float:
    """``log det A = tr(log A)`` of a sparse symmetric positive-definite ``A`` (K, K) by
    stochastic Lanczos quadrature (Ubaru, Chen & Saad 2017, SIAM J. Matrix Anal. Appl.
    38(4)): for Rademacher probes ``v`` (fixed by ``seed``, so the estimate is a smooth,
    deterministic function of ``A``), ``v' log(A) v ~ |v|^2 sum_j y_j^2 log lambda_j``
    with ``lambda_j`` the eigenvalues of the ``steps``-step Lanczos tridiagonal of ``A``
    from ``v / |v|`` and ``y_j`` their eigenvectors' first components (Gauss quadrature);
    Hutchinson's (1989) mean over the probes estimates the trace. All probes run as one
    block of sparse products."""
    from scipy.linalg import eigh_tridiagonal

    k = matrix.shape[0]
    steps = min(steps, k)
    rng = np.random.default_rng(seed)
    q = rng.choice([-1.0, 1.0], size=(k, probes)) / np.sqrt(k)
    q_prev, b_prev = np.zeros_like(q), np.zeros(probes)
    alpha, beta = np.zeros((steps, probes)), np.zeros((steps - 1, probes))
    for j in range(steps):
        w = matrix @ q - b_prev * q_prev
        alpha[j] = np.einsum("ij,ij->j", q, w)
        w -= alpha[j] * q
        if j < steps - 1:
            beta[j] = np.maximum(np.linalg.norm(w, axis=0), 1e-300)
            q_prev, q, b_prev = q, w / beta[j], beta[j]
    total = 0.0
    for p in range(probes):
        values, vectors = eigh_tridiagonal(alpha[:, p], beta[:, p])
        total += vectors[0] ** 2 @ np.log(np.maximum(values, np.finfo(float).tiny))
    return k * total / probes


def golden_section_max(f, low: float, high: float, tol: float = 1e-3) -> float:
    """Maximiser of a unimodal ``f`` on ``[low, high]`` to within ``tol`` by golden-section
    search (Kiefer 1953, Proc. AMS 4(3)): each step keeps the part of the bracket that
    holds the larger of two interior values, shrinking it by 1/phi = 0.618. A monotone
    ``f`` converges to the end it rises towards. (scipy.optimize would do the same; its
    import takes half a second, longer than this search.)"""
    shrink = (np.sqrt(5.0) - 1) / 2
    left, right = high - shrink * (high - low), low + shrink * (high - low)
    f_left, f_right = f(left), f(right)
    while high - low > tol:
        if f_left >= f_right:
            high, right, f_right = right, left, f_left
            left = high - shrink * (high - low)
            f_left = f(left)
        else:
            low, left, f_left = left, right, f_right
            right = low + shrink * (high - low)
            f_right = f(right)
    return (low + high) / 2


def empirical_bayes_probabilities(psi: np.ndarray, counts: np.ndarray):
    """Bradley-Terry win probabilities ``pi_ab = expit(theta_a - theta_b)`` under a ridge
    prior whose variance is estimated from the data, or None where the data say nothing
    about the rating scale.

    The prior variance ``tau^2`` maximises :func:`laplace_evidence` (type-II maximum
    likelihood) on the pairs inside the largest strong component of the "scored against"
    digraph (:func:`strong_components`), where rating differences have a finite MLE: models
    that never lost (or never won) outside their component would pull ``tau^2`` to
    infinity. All models are then fitted with that prior, which keeps every rating finite.
    None when the largest component has fewer than :data:`MIN_SCALE_MODELS` models.
    Returns ``(pi, tau2)``: the (K, K) probabilities and the prior variance.
    """
    wins = np.nan_to_num(psi) * counts
    labels = strong_components(wins)
    core = np.flatnonzero(labels == np.bincount(labels).argmax())
    if core.size < MIN_SCALE_MODELS:
        return None
    data = _pairs_from_counts(psi, counts, core)
    sparse = core.size > DENSE_EB_MODELS
    last = [None]  # each evaluation starts Newton from the previous mode

    def evidence(log_variance):
        value, last[0] = laplace_evidence(log_variance, data, last[0], sparse)
        return value

    tau2 = float(np.exp(golden_section_max(evidence, *np.log(_PRIOR_VARIANCE_RANGE))))
    theta = _ridge_ratings(_pairs_from_counts(psi, counts, np.arange(len(counts))), tau2,
                           sparse=len(counts) > DENSE_EB_MODELS)
    return expit(theta[:, None] - theta[None, :]), tau2


# ------------------------------------------------------------------ score rows


def _score_rows_logit(log, table, pi_matrix):
    """(n, K) CSR score rows ``f_r (s_r - pi_r)(e_a - e_b)``; also each row's pair and its
    data-level centred score ``s_r - psi_ab``."""
    psi, counts, pair_of_key, pairs = table
    k = log.n_models
    ones = np.ones((k, k))
    rows, pair, centred_bt = influence_matrix(log, ones, pi_matrix, ones, pair_of_key)
    lo, hi = pairs[:, 0], pairs[:, 1]
    centered = centred_bt + (pi_matrix[lo, hi] - psi[lo, hi])[pair]
    return rows, pair, centered


def rows_csr(columns: list[np.ndarray], values: list[np.ndarray], n_cols: int) -> sp.csr_array:
    """CSR with the same number of non-zeros in every row, from per-slot columns/values."""
    width = len(columns)
    n = columns[0].shape[0]
    indices = np.column_stack(columns).ravel().astype(np.int64)
    data = np.column_stack(values).ravel()
    indptr = np.arange(0, width * n + 1, width, dtype=np.int64)
    return sp.csr_array((data, indices, indptr), shape=(n, n_cols))


def low_orientation(log: ComparisonLog):
    """Each row as its unordered pair: ``(lo, hi, s_lo)``, the lower and higher model code
    and the score of the lower-coded model (``1 - score`` where ``model_a`` is higher)."""
    lo = np.minimum(log.model_a, log.model_b)
    hi = np.maximum(log.model_a, log.model_b)
    s_lo = np.where(log.model_a < log.model_b, log.score, 1.0 - log.score)
    return lo, hi, s_lo


# ------------------------------------------------------------------ reporting


def parse_anchor(anchor) -> tuple[str, float] | None:
    """``"MODEL=RATING"`` (or a (model, rating) pair) -> (model, rating)."""
    if anchor is None:
        return None
    if isinstance(anchor, dict):  # as a fit keeps it (Leaderboard.options)
        anchor = (anchor.get("model"), anchor.get("rating"))
    if isinstance(anchor, str):
        model, sep, rating = anchor.rpartition("=")
        if not sep or not model:
            raise WinrateInputError(f"anchor must be MODEL=RATING, got {anchor!r}")
        anchor = (model, rating)
    model, rating = anchor
    try:
        value = float(rating)
    except ValueError:
        raise WinrateInputError(f"anchor rating must be a number, got {rating!r}") from None
    if not np.isfinite(value):
        raise WinrateInputError(f"anchor rating must be finite, got {rating!r}")
    return str(model), value


def elo_maps(log: ComparisonLog, anchor, keep: np.ndarray):
    """Canonical and reporting maps of the Elo scale (module doc).

    Canonical: the centred ratings ``c = 400 / ln 10 (theta - mean theta)`` of all L
    models, ``c = C theta``. Reported: ``rating = A c + offset`` with ``A`` the rows
    ``keep`` of the identity and offset 1000, or, anchored at model m with rating R,
    ``A = I - 1 e_m'`` (rows ``keep``) and offset R, i.e. ``400 / ln 10 (theta - theta_m)
    + R``. Returns ``(C, A, offset)``.
    """
    k = log.n_models
    C = ELO_SCALE * (np.eye(k) - 1.0 / k)
    A = np.eye(k)
    offset = DEFAULT_RATING
    if anchor is not None:
        m = model_code(log, anchor[0], "anchor")
        A[:, m] -= 1.0
        offset = anchor[1]
    return C, A[keep], offset


# ------------------------------------------------------------------ fit


def _standardised(log: ComparisonLog, covariates) -> tuple[np.ndarray, dict]:
    """(n, C) covariates ``(x - mean) / sd`` (LMArena's style control) and their raw
    means and sds for the report."""
    missing = [c for c in covariates if c not in log.features]
    if missing:
        has = (f"features {listed(sorted(log.features))}" if log.features
               else "no per-row features")
        raise WinrateInputError(f"covariate(s) {listed(missing)} not in the log; it has "
                                f"{has} (read them with feature_cols)")
    twice = sorted({c for c in covariates if covariates.count(c) > 1})
    if twice:
        raise WinrateInputError(f"covariate(s) {listed(twice)} given more than once")
    w = log.weight
    columns, moments = [], {}
    for name in covariates:
        x = log.features[name]
        mean = np.average(x, weights=w)
        sd = np.sqrt(np.average((x - mean) ** 2, weights=w))
        if not sd > _CONSTANT_SD * np.abs(x).max():  # 0.3 in every row has sd ~1e-17
            raise WinrateInputError(f"covariate {name!r} is constant (sd {sd:.3g} against "
                                    f"values up to {np.abs(x).max():.3g}): it cannot be "
                                    "standardised or estimated")
        columns.append((x - mean) / sd)
        moments[name] = {"mean": float(mean), "sd": float(sd)}
    standardised = np.column_stack(columns)
    check_collinear(standardised, covariates, w)
    return standardised, moments


def check_collinear(z: np.ndarray, names, w: np.ndarray) -> None:
    """A one-line error naming each column of the standardised covariates ``z`` (n, C;
    weighted mean 0, sd 1) that is a linear combination of the columns before it.

    With ``R`` the weighted correlation matrix ``z' W z / sum w``, column ``j`` regressed on
    the kept (independent) columns ``S`` before it has the squared multiple correlation
    ``R^2_j = r_jS R_SS^-1 r_Sj`` (Greene, *Econometric Analysis*, 7th ed., sec. 4.8.2: the
    variance inflation factor is ``1 / (1 - R^2_j)``). ``1 - R^2_j`` at rounding level
    (:data:`_COLLINEAR`) means the design is rank deficient and the coefficients are not
    identified; the columns named with it are those of ``S`` with a non-negligible
    coefficient ``R_SS^-1 r_Sj``."""
    corr = (z * w[:, None]).T @ z / w.sum()
    kept, found = [], []
    for j in range(corr.shape[0]):
        coef = np.linalg.solve(corr[np.ix_(kept, kept)], corr[kept, j]) if kept else []
        if 1.0 - corr[kept, j] @ coef > _COLLINEAR:
            kept.append(j)
            continue
        used = [names[s] for s, c in zip(kept, coef, strict=True)
                if abs(c) > 1e-6 * np.abs(coef).max()]
        found.append(f"{names[j]!r} is a linear combination of {listed(used)}")
    if found:
        raise WinrateInputError(f"covariates not separately estimable: {'; '.join(found)}; "
                                "leave out the dependent covariate(s)")


#: A covariate whose sd is below this fraction of its largest |value| is constant up to
#: rounding (the sd of n copies of 0.3 computes to ~1e-17, not 0).
_CONSTANT_SD = 1e-10
#: ``1 - R^2`` of a standardised covariate on the others at or below which it is a linear
#: combination of them up to rounding (:func:`check_collinear`).
_COLLINEAR = 1e-10


def check_identified(log, counts, psi, prior, names) -> None:
    """An error unless the comparison graph is connected and, without a ridge ``prior``
    (its precision), no group of models beats every other model in every comparison
    (then the MLE is infinite: :func:`dominance_problem`); with a prior, a note that it
    decides those ratings."""
    check_connected(counts, names)
    problem = dominance_problem(np.nan_to_num(psi) * counts, names)
    if problem is None:
        return
    if not prior:
        raise WinrateInputError(f"the Bradley-Terry MLE is not finite: {problem}. Add a "
                                "ridge prior (option 'prior') or more comparisons")
    notes.emit(notes.prior_dominates(problem))


def _pairs_data(log, table, ties: str) -> _Pairs:
    psi, counts = table[0], table[1]
    data = _pairs_from_counts(psi, counts, np.arange(log.n_models))
    if ties != "davidson":
        return data
    count = outcome_counts(log, table, "Davidson's tie model (use ties='half')")
    _check_tie_parameter(count[0].sum() + count[1].sum(), count[2].sum())
    return _Pairs(data.lo, data.hi, data.W, data.N, log.n_models, *count)


def _check_tie_parameter(decisive: float, ties: float) -> None:
    """Davidson's tie parameter has a finite MLE only with both ties and decisive outcomes:
    with only ties ``log nu -> +inf``, with none ``log nu -> -inf`` (its score
    ``sum (tie - P(tie))`` has one sign), and its SE would print as 0."""
    if not ties or not decisive:
        what = "every comparison is a tie" if not decisive else "no comparison is a tie"
        raise WinrateInputError(f"Davidson's tie model: {what}, so its tie parameter diverges "
                                f"(log nu -> {'+' if not decisive else '-'}inf); use ties "
                                "as half wins (ties='half')")


def fit(log: ComparisonLog, *, ties: str = "half", prior: float | None = None, anchor=None,
        baseline: str | None = None, covariates=(), table=None) -> Leaderboard:
    """Bradley-Terry (or Davidson) ratings on the Elo scale with their score rows and bread.

    ``prior``: variance VAR of the ridge prior on theta (natural units), None for the MLE.
    ``anchor``: ``"MODEL=RATING"``; default: mean rating 1000, or the baseline at 1000 when
    ``baseline`` is given (the baseline is then the reference and is not reported).
    ``covariates``: names of ``log.features`` to control for (style control).
    ``table``: the log's :func:`winrate.estimators.win_rate_kernels.pairwise_table`, when already
    computed.
    """
    if ties not in TIE_MODELS:
        raise WinrateInputError(f"ties must be one of {one_of(TIE_MODELS)}, got {ties!r}")
    if prior is not None and not (np.isfinite(prior) and prior > 0):
        raise WinrateInputError(f"option 'prior' must be a positive variance, got {prior!r}")
    covariates = tuple(covariates)
    if covariates and ties == "davidson":
        raise WinrateInputError("covariates are supported with ties='half' only")
    precision = 0.0 if prior is None else 1.0 / prior
    anchor = parse_anchor(anchor)
    table = pairwise_table(log) if table is None else table
    psi, counts = table[0], table[1]
    names = log.models
    keep, base_name = np.arange(log.n_models), None
    if baseline is not None:
        base = baseline_code(log, baseline, counts)
        base_name = str(names[base])
        anchor = anchor or (base_name, DEFAULT_RATING)
        keep = keep[keep != base]
    check_identified(log, counts, psi, precision, names)
    centred = precision == 0
    k = log.n_models
    if covariates:
        params, info, rows, pair, centered, moments = _fit_rows(log, table, covariates,
                                                                precision, centred)
        coef_names = covariates
    elif ties == "davidson":
        params, info, rows, pair, centered = _fit_davidson(log, table, precision, centred)
        coef_names, moments = ("tie: log nu (Davidson)",), {}
    else:
        params, info, rows, pair, centered = _fit_logit(log, table, precision, centred)
        coef_names, moments = (), {}
    C, A, offset = elo_maps(log, anchor, keep)
    R = A @ C
    n_coef = len(coef_names)
    full_map = np.zeros((len(keep) + n_coef, k + n_coef))
    full_map[:len(keep), :k] = R
    full_map[len(keep):, k:] = np.eye(n_coef)
    bread = full_map @ inverse_information(info, k, centred)
    options = {"ties": ties, "prior": prior, "covariates": list(covariates),
               "anchor": None if anchor is None else {"model": anchor[0], "rating": anchor[1]},
               "baseline": base_name}
    return Leaderboard(
        models=names[keep], scores=R @ params[:k] + offset, psi=psi, counts=counts,
        weights=None, influence=rows, pair=pair, pairs=table[3], centered=centered,
        bread=bread, estimator="bt", scale=ELO, log_models=names, contestants=keep,
        canonical_map=C, reported_map=A, report_offset=offset, coef_names=coef_names,
        coef=params[k:], options=options,
        fitted={"theta": params[:k], "standardisation": moments})


def _fit_logit(log, table, precision, centred):
    data = _pairs_data(log, table, "half")
    k = log.n_models
    theta = newton_maximise(lambda t: _logit_pairs(t, data, precision), k, k, centred,
                            "Bradley-Terry")
    info = _logit_pairs(theta, data, precision)[2]
    eta = theta[:, None] - theta[None, :]
    rows, pair, centered = _score_rows_logit(log, table, expit(eta))
    return theta, info, rows, pair, centered


def _fit_davidson(log, table, precision, centred):
    data = _pairs_data(log, table, "davidson")
    k = log.n_models
    params = newton_maximise(lambda p: _davidson_pairs(p, data, precision), k + 1, k, centred,
                     "Davidson")
    info = _davidson_pairs(params, data, precision)[2]
    lo, hi, s_lo = low_orientation(log)
    eta = params[lo] - params[hi]
    _, _, sinh_d, nu_d, *_ = _davidson_terms(eta, params[k])
    f = log.weight
    win, loss, tie = (s_lo == 1.0), (s_lo == 0.0), (s_lo == 0.5)
    g_eta = f * ((win.astype(float) - loss) / 2 - sinh_d)
    g_delta = f * (tie - nu_d)
    rows = rows_csr([lo, hi, np.full(lo.shape, k)], [g_eta, -g_eta, g_delta], k + 1)
    pair, centered = data_centred(log, table, lo, hi, s_lo)
    return params, info, rows, pair, centered


def data_centred(log, table, lo, hi, s_lo):
    """Each row's pair index into the pair ``table``
    (:func:`winrate.estimators.win_rate_kernels.pairwise_table`) and its pair-centred score
    ``s_lo - psi_lo,hi`` (rows as :func:`low_orientation` gives them)."""
    psi, _, pair_of_key, _ = table
    pair = pair_of_key[lo * log.n_models + hi]
    return pair, s_lo - psi[lo, hi]


def _fit_rows(log, table, covariates, precision, centred):
    x, moments = _standardised(log, covariates)
    k, c = log.n_models, x.shape[1]
    a, b = log.model_a.astype(np.int64), log.model_b.astype(np.int64)
    ones = np.ones(log.n_rows)
    cov_cols = [np.full(log.n_rows, k + j) for j in range(c)]
    design = rows_csr([a, b, *cov_cols], [ones, -ones, *x.T], k + c)
    f = log.weight
    params = newton_maximise(lambda p: _logit_rows(p, design, log.score, f, precision, k), k + c, k,
                     centred, "Bradley-Terry (with covariates)")
    info = _logit_rows(params, design, log.score, f, precision, k)[2]
    resid = f * (log.score - expit(design @ params))
    rows = design.multiply(resid[:, None]).tocsr()
    lo, hi, s_lo = low_orientation(log)
    pair, centered = data_centred(log, table, lo, hi, s_lo)
    return params, info, rows, pair, centered, moments


# ------------------------------------------------------------------ replicate refits


def _replicates_identified(counts, wins, tol, lo, hi, k: int, ridge: bool) -> np.ndarray:
    """Per replicate (rows of the (B, P) pair totals): whether its Bradley-Terry MLE is
    finite, i.e. the "scored against" digraph of its observed pairs (edge a -> b when a
    won some of its comparisons with b) is strongly connected (module doc); with a ridge
    prior (``ridge``), whether its observed pairs connect the models. Every model is
    reached from model 0 along the edges and against them (a depth-first search, O(P) per
    replicate, :func:`_reach_all`)."""
    order = np.argsort(np.concatenate([lo, hi]), kind="stable")
    starts = np.searchsorted(np.concatenate([lo, hi])[order], np.arange(k + 1))
    incident = (order % lo.size).astype(np.int64)
    return _reach_all(counts, wins, np.asarray(tol, float), lo, hi, starts.astype(np.int64),
                      incident, k, ridge)


@numba.njit(cache=True)
def _reach_all(counts, wins, tol, lo, hi, starts, incident, k, ridge):  # pragma: no cover
    """:func:`_replicates_identified`'s search; ``incident[starts[v]:starts[v + 1]]`` are
    the pairs of model v."""
    out = np.ones(counts.shape[0], np.bool_)
    reached = np.zeros(k, np.bool_)
    stack = np.empty(k, np.int64)
    for b in range(counts.shape[0]):
        for direction in range(1 if ridge else 2):  # 0: along the edges, 1: against them
            reached[:] = False
            reached[0], stack[0], top, count = True, 0, 1, 1
            while top:
                top -= 1
                v = stack[top]
                for idx in range(starts[v], starts[v + 1]):
                    p = incident[idx]
                    if counts[b, p] <= tol[p]:
                        continue
                    low_won, high_won = wins[b, p] > 0, counts[b, p] - wins[b, p] > 0
                    other = hi[p] if lo[p] == v else lo[p]
                    v_won = low_won if lo[p] == v else high_won
                    other_won = high_won if lo[p] == v else low_won
                    if ridge or (v_won if direction == 0 else other_won):
                        if not reached[other]:
                            reached[other] = True
                            stack[top] = other
                            top += 1
                            count += 1
            if count < k:
                out[b] = False
                break
    return out


def _solve_each(matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(B, K) solutions of B systems ``matrices[b] x = vectors[b]``; NaN for a replicate
    whose system is singular (its Newton path saturated the win probabilities: it has
    diverged, and the caller reports it as undefined), the others solved as one batch."""
    try:
        return np.linalg.solve(matrices, vectors[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(vectors.shape, np.nan)
        for b in range(vectors.shape[0]):  # only when some replicate is singular
            try:
                out[b] = np.linalg.solve(matrices[b], vectors[b])
            except np.linalg.LinAlgError:
                continue
        return out


class PairRefit:
    """Bradley-Terry refits of many re-weighted logs at once, from their pair totals.

    Without covariates the MLE depends on the data only through ``(W_p, N_p)`` (module
    doc), so a jackknife or bootstrap replicate is refitted exactly from its replicate
    totals: batched Newton steps from the full-sample estimate, ``(H_b + u u') d_b = g_b``
    for every replicate b at once. A replicate whose comparison graph is disconnected, or
    whose MLE is not finite (a model never lost or never won in it), has no rating: it is
    NaN, and the resampling method reports it.
    """

    def __init__(self, board: Leaderboard, total_counts: np.ndarray):
        self.board = board
        self.lo = board.pairs[:, 0].astype(np.int64)
        self.hi = board.pairs[:, 1].astype(np.int64)
        self.k = len(board.all_models)
        self.precision = 0.0 if board.options["prior"] is None else 1 / board.options["prior"]
        self.full = np.asarray(total_counts, float)
        self.tol = 1e-10 * self.full
        self.theta0 = board.fitted["theta"]
        flat = np.concatenate([self.lo * self.k + self.lo, self.hi * self.k + self.hi,
                               self.lo * self.k + self.hi, self.hi * self.k + self.lo])
        n_pairs = len(self.lo)
        sign = np.repeat([1.0, 1.0, -1.0, -1.0], n_pairs)
        self.to_info = sp.csr_array((sign, (np.tile(np.arange(n_pairs), 4), flat)),
                                    shape=(n_pairs, self.k * self.k))
        self.incidence = sp.csr_array(
            (np.repeat([1.0, -1.0], n_pairs),
             (np.tile(np.arange(n_pairs), 2), np.concatenate([self.lo, self.hi]))),
            shape=(n_pairs, self.k))

    def _identified(self, counts: np.ndarray, wins: np.ndarray) -> np.ndarray:
        """Per replicate: connected and every model scored and conceded (finite MLE), by
        :func:`_replicates_identified`."""
        return _replicates_identified(np.ascontiguousarray(counts, float),
                                      np.ascontiguousarray(wins, float), self.tol, self.lo,
                                      self.hi, self.k, self.precision > 0)

    def scores(self, wins: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(B, L) canonical ratings of B replicates with pair totals ``wins``, ``counts``."""
        wins, counts = np.atleast_2d(wins), np.atleast_2d(counts)
        ok = self._identified(counts, wins)
        theta = np.full((wins.shape[0], self.k), np.nan)
        if ok.any():
            theta[ok] = self._newton(wins[ok], counts[ok])
        return self.board.canonical(theta)

    def _newton(self, wins: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Every replicate's MLE from the full-sample estimate: first up to
        :data:`_CHORD_STEPS` chord steps, ``d_b = (H + F)^-1 g_b`` with the full sample's
        information ``H`` inverted once for all replicates (a replicate re-weights part of
        the data, so its information is close to ``H`` and the steps contract by about the
        share it changes: a jackknife replicate converges in a few cheap steps), then, for
        the replicates not converged by then, Newton's steps ``(H_b + F) d_b = g_b`` from
        the full-sample estimate again. ``F`` fixes the centring (``u u'``) or is the ridge
        prior's precision. Both stop at the same tolerance on the same root."""
        k = self.k
        fix = np.full((k, k), 1.0 / k) if self.precision == 0 else np.eye(k) * self.precision
        start = np.tile(self.theta0, (wins.shape[0], 1))
        chord = np.linalg.inv(self._information(self.theta0[None], self.full[None])[0] + fix)
        theta, moving = start.copy(), np.ones(wins.shape[0], bool)
        for _ in range(_CHORD_STEPS):
            t = theta[moving]
            step = self._gradient(t, wins[moving], counts[moving]) @ chord
            theta[moving] = t + step
            moving[moving] = np.abs(step).max(axis=1) >= _STEP_TOL
            if not moving.any():
                return theta
        theta[moving] = start[moving]
        for _ in range(_MAX_ITER):
            t = theta[moving]
            w, n = wins[moving], counts[moving]
            info = self._information(t, n)
            step = _solve_each(info + fix, self._gradient(t, w, n))
            theta[moving] = t + step
            moving[moving] = np.abs(step).max(axis=1) >= _STEP_TOL
            if not moving.any():
                break
        theta[moving | (np.abs(theta) > DIVERGED).any(axis=1)] = np.nan
        return theta

    def _gradient(self, theta: np.ndarray, wins: np.ndarray, counts: np.ndarray):
        """(B, K) scores ``sum_p (W_p - N_p pi_p) (e_lo - e_hi)`` less the prior's pull."""
        pi = expit(theta[:, self.lo] - theta[:, self.hi])
        return (self.incidence.T @ (wins - counts * pi).T).T - self.precision * theta

    def _information(self, theta: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(B, K, K) information ``sum_p N_p pi_p (1 - pi_p) (e_lo - e_hi)(e_lo - e_hi)'``."""
        pi = expit(theta[:, self.lo] - theta[:, self.hi])
        return (self.to_info.T @ (counts * pi * (1 - pi)).T).T.reshape(-1, self.k, self.k)
