"""AlpacaEval's length-controlled win rate (``lc``), as the protocol declares it.

Dubois, Galambosi, Liang and Hashimoto (2024), "Length-controlled AlpacaEval: a simple way
to debias automatic evaluators", arXiv:2404.04475; upstream's ``length_controlled_v1`` GLM
(tatsu-lab/alpaca_eval ``src/alpaca_eval/metrics/glm_winrate.py``, and
``notebooks/instruction_difficulty.ipynb`` for the difficulty). Every contestant ``m`` meets
one baseline on prompts ``i``; ``y_r`` in [0, 1] is the judge's preference for ``m`` (the
log's score), ``D_r`` = len(m's answer) - len(the baseline's) in characters (the feature
``style_length_delta``), ``s_m`` its standard deviation over m's rows and
``x_r = tanh(-D_r / s_m)`` (upstream standardises len_1 - len_2, baseline minus model). Each
fit maximises the Bernoulli log-likelihood of the probabilities ``y`` (a quasi-likelihood,
as upstream's logistic regression on probabilities), in three stages:

1. instruction difficulty, jointly over the contestants:
   ``logit P_r = a_m + b_m x_r + d_i``, with ``d`` of the first prompt 0 (upstream's
   notebook fits this model with an L1 penalty and ships ``d`` on a dataset hub);
2. per model, ``logit P_r = theta_m + beta_m x_r + gamma_m d_j(r)`` with the Gaussian prior
   ``(beta_m, gamma_m) ~ N(mu, Sigma)``. Upstream regularises instead with the rows of the
   baseline against length-gamed copies of itself (hub data, weight 0.2), which share
   ``beta_m`` and ``gamma_m``: a fixed prior on them. Here ``(mu, Sigma)`` are estimated
   from the log by restricted maximum likelihood of the per-model fits without prior,
   ``(beta, gamma)^_m ~ N(mu, Sigma + V_m)`` with ``V_m`` their row sandwich: an
   empirical-Bayes partial pooling of the length slopes (Morris 1983, JASA 78(381));
3. the prediction at equal lengths, averaged over m's rows:
   ``LC_m = sum_r f_r expit(theta_m + gamma_m d_j(r)) / sum_r f_r``.

Stage 1 and the per-model fits without prior that the prior is estimated from use each
row's own instruction ``i`` (the prior stands in for upstream's regulariser, rows of the
baseline's own, which no join touches); the fits with the prior and stage 3 use the
difficulty of the instruction ``j(r)`` that the option ``difficulty_join`` joins to row r
(:func:`joined_instruction`): ``"instruction"``, ``j(r) = i(r)``; ``"position"`` (default),
upstream's join by the row's position in its model's rows, which differs from ``i(r)`` after
the first instruction a model's rows miss.

Inference: the stages stack into one M-estimator (Stefanski and Boos 2002, "The calculus of
M-estimation", Am. Stat. 56(1)) with score rows ``psi_r`` (the gradients of stage 1, of the
per-model fits without and with the prior, and ``f_r (expit(theta_m + gamma_m d_j(r)) -
LC_m)``, each stage with the instruction it joins), the prior's REML equations entering
through the slopes they are solved from (implicit function theorem), and a block
lower-triangular Jacobian ``A = -d sum psi / d params``; the influence of ``LC`` is its rows
of ``A^-1 psi_r`` (:func:`_influence`), clustered by the same machinery as every estimator.
Held fixed in it: the scales ``s_m`` and the ``V_m`` of the prior's fit (second order; a
bootstrap refits them, and agrees: docs/length-controlled.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from winrate.errors import listed
from winrate.estimators.base import PROBABILITY, Estimator, Option, RowRefit
from winrate.estimators.win_rate import BASELINE

#: The log feature with the answers' length difference (``winrate.io.formats``, alpaca_eval).
LENGTH_FEATURE = "style_length_delta"
#: How a row gets its instruction difficulty in stages 2 and 3 (:func:`joined_instruction`).
JOINS = ("position", "instruction")
JOIN = Option("difficulty_join", JOINS[0], "how a row gets its instruction difficulty: "
              "'position', as AlpacaEval (the r-th row of a model takes the r-th "
              "instruction's), or 'instruction' (its own)", choices=JOINS)
LENGTH = Option("length_feature", LENGTH_FEATURE, "per-row feature holding len(answer a) - "
                "len(answer b) in characters (--format / --dataset alpaca_eval provide it; "
                "from a CSV, name its column)", metavar="COL")
#: Fewest contestants from which the difficulty and the prior are estimable.
MIN_CONTESTANTS = 3
_TOL = 1e-10        # Newton stops when no parameter moves more than this
_MAX_STEPS = 100
#: Smallest eigenvalue of stage 1's Schur complement, relative to the largest, at or below
#: which the length slopes and difficulties are not identified (:func:`_check_separable`).
_SEPARABLE = 1e-10
_CONVERGED = 1e-6   # a fit whose last step moved more than this has no finite maximum


@dataclass(frozen=True)
class Design:
    """The rows of a baseline log as the GLM sees them: contestant ``c`` (0..K-1, position
    in ``contestants``, the log codes, named ``names``), dense prompt ``i`` (0..I-1),
    preference ``y`` for the contestant, length term ``x = tanh(-D / s_c)``, frequency
    ``w``; ``scale`` the (K,) ``s_c``; ``j`` the dense prompt whose difficulty the row takes
    in stages 2 and 3 (:func:`joined_instruction`), and ``unjoined`` the rows of a refit
    whose joined instruction the refit does not hold (no difficulty: left out of stages 2
    and 3, :meth:`LengthControlled.replicate_scorer`)."""

    c: object
    i: object
    y: object
    x: object
    w: object
    scale: object
    contestants: object
    names: object
    n_prompts: int
    j: object
    unjoined: object

    @property
    def k(self) -> int:
        return len(self.contestants)

    @property
    def model_weight(self):
        """The rows' frequencies in stages 2 and 3: ``w``, 0 on the ``unjoined`` rows."""
        import numpy as np

        return np.where(self.unjoined, 0.0, self.w)

    def by_instruction(self) -> Design:
        """The same rows with each its own instruction's difficulty (``j = i``)."""
        import numpy as np

        return replace(self, j=self.i, unjoined=np.zeros_like(self.unjoined))


def _fail(text: str):
    from winrate.errors import WinrateInputError

    raise WinrateInputError(f"model 'lc': {text}")


def design(log, base: int, feature: str, join: str = JOINS[0], carried=None) -> Design:
    """The :class:`Design` of ``log`` against the baseline code ``base``, its difficulty
    joined by ``join`` (:func:`joined_instruction`), or ``carried``: per row, the code in
    ``log.axes["prompt"].labels`` of the instruction a fit of a larger log joined it to (a
    refit's); a clear error when the log lacks prompts, the length feature or rows against
    the baseline, or when a model's or prompt's preferences all sit at one bound (no finite
    fit)."""
    import numpy as np

    if "prompt" not in log.axes:
        _fail("instruction difficulty is per prompt, and this log has no prompt ids")
    if feature not in log.features:
        _fail(f"no length feature {feature!r} in the log (features: "
              f"{listed(sorted(log.features))}); read AlpacaEval with its reader (format or "
              "dataset alpaca_eval), or name a column of len(a) - len(b) as option "
              "'length_feature'")
    on_a = log.model_b == base
    if not (on_a | (log.model_a == base)).all():
        _fail("every row must have the baseline on one side")
    contestants = np.flatnonzero(np.arange(log.n_models) != base)
    if contestants.size < MIN_CONTESTANTS:
        _fail(f"instruction difficulty and the prior of the length slopes are estimated "
              f"across contestants; it needs at least {MIN_CONTESTANTS}, this log has "
              f"{contestants.size}")
    position = np.full(log.n_models, -1)
    position[contestants] = np.arange(contestants.size)
    c = position[np.where(on_a, log.model_a, log.model_b)]
    y = np.where(on_a, log.score, 1.0 - log.score)
    delta = np.where(on_a, 1.0, -1.0) * log.features[feature]
    i_codes, i = np.unique(log.axes["prompt"].codes, return_inverse=True)
    w = log.weight
    scale = _length_scale(delta, c, w, contestants.size, log.models[contestants])
    _check_bounds(y, c, w, log.models[contestants],
                  "{n} model(s) {side} every comparison with the baseline (e.g. {example})")
    _check_bounds(y, i, w, log.axes["prompt"].labels[i_codes],
                  "{n} prompt(s) where every contestant {side} (e.g. {example}): its "
                  "difficulty is infinite")
    if carried is None:
        j = joined_instruction(c, i, contestants.size, i_codes.size, join)
    else:
        dense = np.full(len(log.axes["prompt"].labels), -1)
        dense[i_codes] = np.arange(i_codes.size)
        j = dense[carried]
    found = Design(c, i, y, np.tanh(-delta / scale[c]), w, scale, contestants,
                   log.models[contestants], i_codes.size, np.where(j < 0, i, j), j < 0)
    if carried is None:
        _check_separable(found, feature)
    return found


def _check_separable(dsg: Design, feature: str) -> None:
    """A clear error when stage 1's design ``(a_m, b_m x_r, d_i)`` is rank deficient: some
    contestants' length terms are (up to each one's affine map) one function of the prompt,
    so a shift ``d_i + t g(i)`` is undone by their slopes and the difficulties and slopes
    are not identified. With every prompt observed (``D > 0``), the information
    ``[[M, C], [C', D]]`` at any positive weights (here the rows' own, ``h = w``) has full
    rank exactly when its Schur complement ``M - C D^-1 C'`` does (Horn & Johnson, *Matrix
    Analysis*, 2nd ed., sec. 0.8.5); a null vector of it names the contestants involved."""
    import numpy as np

    values, vectors = np.linalg.eigh(JointInformation(dsg, dsg.w).schur)
    if values[0] > _SEPARABLE * values[-1]:
        return
    slopes = np.abs(vectors[dsg.k:, 0])
    involved = dsg.names[slopes > 1e-6 * slopes.max()] if slopes.any() else dsg.names
    _fail(f"the length term of feature {feature!r} is one function of the prompt for "
          f"contestants {listed(involved, limit=5)}, so their length slopes cannot be told "
          "from instruction difficulty: give the length difference of each answer to the "
          "baseline's")


def joined_instruction(c, i, k: int, n_prompts: int, join: str):
    """Per row, the instruction whose difficulty stages 2 and 3 use.

    ``"instruction"``: the row's own, ``i``. ``"position"``: upstream AlpacaEval's join
    (``_get_featurized_data`` in ``src/alpaca_eval/metrics/glm_winrate.py``: after
    ``reset_index``, the row at position r of a model's annotation file takes
    ``instruction_difficulty[r]``, the difficulty of the r-th instruction of the evaluation
    set). Here the r-th row (r = 0, 1, ...) of contestant m's rows, in log order, counting
    rows not frequencies, takes the difficulty of the r-th instruction of the canonical
    order: the log order of the rows of the first contestant (in the log's model order)
    whose rows hold each instruction of the log exactly once (in AlpacaEval's files, the
    evaluation set's order, which upstream's difficulty file follows). The two joins agree
    on every row of a model whose rows hold the instructions in canonical order, each once;
    from the first instruction a model's rows miss on, each row takes a later one's
    difficulty. Rows past the I-th of a model (only a model with repeated instructions has
    them) keep their own, and with no contestant holding every instruction once there is no
    canonical order: the join is by instruction."""
    import numpy as np

    if join == "instruction":
        return i
    order = np.argsort(c, kind="stable")  # each contestant's rows, in log order
    counts = np.bincount(c, minlength=k)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty(len(c), dtype=np.int64)
    position[order] = np.arange(len(c)) - start[c[order]]
    cells = np.bincount(c * n_prompts + i, minlength=k * n_prompts).reshape(k, n_prompts)
    complete = np.flatnonzero((cells == 1).all(axis=1))
    if complete.size == 0:
        return i
    canonical = i[order[start[complete[0]]:start[complete[0]] + n_prompts]]
    beyond = position >= n_prompts
    return np.where(beyond, i, canonical[np.where(beyond, 0, position)])


def _length_scale(delta, c, w, k: int, names):
    """Per-contestant standard deviation of the length difference, frequency-weighted with
    ``sum f - 1`` degrees of freedom (pandas' ``std`` of the expanded rows, as upstream)."""
    import numpy as np

    total = np.bincount(c, w, k)
    mean = np.bincount(c, w * delta, k) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.sqrt(np.bincount(c, w * (delta - mean[c]) ** 2, k) / (total - 1))
    flat = ~(np.isfinite(scale) & (scale > 0))
    if flat.any():
        _fail(f"the length difference to the baseline does not vary for "
              f"{listed(names[flat], limit=5)}: no length slope is estimable")
    return scale


def _check_bounds(y, group, w, labels, text: str) -> None:
    """Groups (models, prompts) whose preferences are all 0 (or all 1) have no finite logit
    parameter: an error from ``text`` (with ``{n}``, ``{side}``, ``{example}``)."""
    import numpy as np

    n = len(labels)
    low = np.bincount(group, w * (y > 0), n) == 0
    high = np.bincount(group, w * (y < 1), n) == 0
    for stuck, side in ((low, "lost"), (high, "won")):
        if stuck.any():
            example = repr(str(labels[stuck][0])[:60])
            _fail(text.format(n=int(stuck.sum()), side=side, example=example)
                  + ": no finite fit; leave them out or use graded preferences")


# ------------------------------------------------------------------ stage 1: difficulty


class JointInformation:
    """The information of stage 1 at given parameters, ``[[M, C], [C', diag(D)]]`` over
    ``(a, b)`` (2K) and the free ``d`` (I - 1), solved through the Schur complement of the
    diagonal prompt block, so no (2K + I)-square matrix is formed."""

    def __init__(self, dsg: Design, h):
        import numpy as np

        k, n_i = dsg.k, dsg.n_prompts
        self.M = np.zeros((2 * k, 2 * k))
        diag = np.arange(k)
        self.M[diag, diag] = np.bincount(dsg.c, h, k)
        self.M[diag, k + diag] = self.M[k + diag, diag] = np.bincount(dsg.c, h * dsg.x, k)
        self.M[k + diag, k + diag] = np.bincount(dsg.c, h * dsg.x**2, k)
        cell = dsg.c * n_i + dsg.i
        self.C = np.vstack([np.bincount(cell, h, k * n_i).reshape(k, n_i),
                            np.bincount(cell, h * dsg.x, k * n_i).reshape(k, n_i)])[:, 1:]
        self.D = np.bincount(dsg.i, h, n_i)[1:]
        self.schur = self.M - (self.C / self.D) @ self.C.T

    def solve(self, rhs):
        """``A11^-1 rhs`` for rhs of shape (2K + I - 1,) or (2K + I - 1, m)."""
        import numpy as np

        top, bottom = rhs[:len(self.M)], rhs[len(self.M):]
        scaled = bottom / (self.D if bottom.ndim == 1 else self.D[:, None])
        first = np.linalg.solve(self.schur, top - self.C @ scaled)
        rest = bottom - self.C.T @ first
        return np.concatenate([first, rest / (self.D if rest.ndim == 1 else self.D[:, None])])


def _joint_eta(dsg: Design, params):
    k = dsg.k
    d = _full_difficulty(params[2 * k:])
    return params[dsg.c] + params[k + dsg.c] * dsg.x + d[dsg.i]


def _full_difficulty(free):
    import numpy as np

    return np.concatenate([[0.0], free])


def _loglik(y, w, eta):
    """Bernoulli log-likelihood terms of the probabilities ``y`` (quasi-likelihood)."""
    import numpy as np

    return w * (y * eta - np.logaddexp(0.0, eta))


def fit_difficulty(dsg: Design):
    """Stage 1's MLE ``(a, b, d_free)`` by Newton's method with step halving."""
    import numpy as np
    from scipy.special import expit

    k = dsg.k
    params = np.zeros(2 * k + dsg.n_prompts - 1)
    value = _loglik(dsg.y, dsg.w, _joint_eta(dsg, params)).sum()
    for _ in range(_MAX_STEPS):
        p = expit(_joint_eta(dsg, params))
        residual = dsg.w * (dsg.y - p)
        grad = np.concatenate([np.bincount(dsg.c, residual, k),
                               np.bincount(dsg.c, residual * dsg.x, k),
                               np.bincount(dsg.i, residual, dsg.n_prompts)[1:]])
        step = JointInformation(dsg, dsg.w * p * (1 - p)).solve(grad)
        t = 1.0
        while True:
            new = _loglik(dsg.y, dsg.w, _joint_eta(dsg, params + t * step)).sum()
            if new >= value - 1e-12 * abs(value) or t < 1e-8:
                break
            t /= 2
        params, value = params + t * step, new
        if np.abs(t * step).max() < _TOL:
            break
    if not (np.abs(t * step).max() < _CONVERGED and np.isfinite(params).all()):
        _fail("the joint fit of instruction difficulty has no finite maximum")
    return params


# ------------------------------------------------------------------ stage 2: per model


def _model_terms(dsg: Design, d, omega):
    """Per row: the covariates ``z = (1, x, d_j)`` (n, 3) and the linear predictor."""
    import numpy as np

    z = np.column_stack([np.ones_like(dsg.x), dsg.x, d[dsg.j]])
    return z, np.einsum("nj,nj->n", z, omega[dsg.c])


def _grouped(values, group, k):
    """(k, *shape) sums over rows of ``values`` (n, *shape) by ``group``."""
    import numpy as np

    flat = values.reshape(len(values), -1)
    out = np.stack([np.bincount(group, flat[:, j], k) for j in range(flat.shape[1])], axis=1)
    return out.reshape((k, *values.shape[1:]))


def fit_models(dsg: Design, d, mean, precision, strict: bool = True):
    """Stage 2: per model the maximum of the log-likelihood plus the log prior
    ``-(omega - mu~)' P~ (omega - mu~) / 2`` (P~ zero on theta), by batched Newton with step
    halving per model. Returns ``(omega (K, 3), converged (K,))``; ``strict``: an error
    naming the models whose fit diverged."""
    import numpy as np

    k = dsg.k
    centre = np.concatenate([[0.0], mean])
    prior = np.zeros((3, 3))
    prior[1:, 1:] = precision

    def objective(omega):
        _, eta = _model_terms(dsg, d, omega)
        gap = omega - centre
        return (np.bincount(dsg.c, _loglik(dsg.y, dsg.model_weight, eta), k)
                - 0.5 * np.einsum("kj,jl,kl->k", gap, prior, gap))

    omega = np.zeros((k, 3))
    value = objective(omega)
    for _ in range(_MAX_STEPS):
        info, score, _ = _model_information(dsg, d, omega, precision)
        grad = _grouped(score, dsg.c, k) - (omega - centre) @ prior
        solvable = np.isfinite(info).all(axis=(1, 2))  # else too few distinct rows, or
        solvable[solvable] = np.linalg.cond(info[solvable]) < 1e12  # diverged: no maximum
        step = np.zeros((k, 3))
        step[solvable] = np.linalg.solve(info[solvable], grad[solvable, :, None])[:, :, 0]
        t = np.ones(k)
        new = objective(omega + t[:, None] * step)
        for _ in range(30):
            worse = new < value - 1e-12 * np.abs(value)
            if not worse.any():
                break
            t[worse] /= 2
            new = objective(omega + t[:, None] * step)
        omega, value = omega + t[:, None] * step, new
        moved = np.where(solvable, np.abs(t[:, None] * step).max(axis=1), np.inf)
        if moved.max() < _TOL:
            break
    converged = (moved < _CONVERGED) & np.isfinite(omega).all(axis=1)
    if strict and not converged.all():
        _fail(f"the per-model fit has no finite maximum for "
              f"{listed(dsg.names[~converged], limit=5)}")
    return omega, converged


def _model_information(dsg: Design, d, omega, precision):
    """Per model: the information ``sum f p (1 - p) z z' + P~`` (K, 3, 3), the score rows
    ``f (y - p) z`` (n, 3) and ``p``."""
    from scipy.special import expit

    z, eta = _model_terms(dsg, d, omega)
    p = expit(eta)
    w = dsg.model_weight
    info = _grouped((w * p * (1 - p))[:, None, None] * z[:, :, None] * z[:, None, :],
                    dsg.c, dsg.k)
    info[:, 1:, 1:] += precision
    return info, (w * (dsg.y - p))[:, None] * z, p


def _difficulty_dependence(dsg: Design, d, omega, p, score):
    """``-d (sum psi_m) / d d_i`` of a per-model fit, (K, I, 3): the sums over the rows of
    m joined to instruction i (``j = i``) of ``f (p (1 - p) gamma_m z - (y - p) e_3)``."""
    import numpy as np

    z, _ = _model_terms(dsg, d, omega)
    terms = ((dsg.model_weight * p * (1 - p) * omega[dsg.c, 2])[:, None] * z
             - score[:, :1] * np.array([0.0, 0.0, 1.0]))
    cells = dsg.k * dsg.n_prompts
    return _grouped(terms, dsg.c * dsg.n_prompts + dsg.j, cells).reshape(dsg.k,
                                                                         dsg.n_prompts, 3)


@dataclass(frozen=True)
class SlopePrior:
    """The prior ``N(mean, cov)`` of ``(beta_m, gamma_m)`` and what it was estimated from:
    the per-model fits without prior ``free`` (K, 3), the models ``used`` (a fit without a
    finite maximum is left out), their slopes ``b`` (K', 2) and row sandwiches ``variance``
    (K', 2, 2); ``interior``: Sigma lies inside the search bounds, so its REML equations
    hold (else only ``mean`` enters the influence)."""

    mean: object
    cov: object
    free: object
    used: object
    b: object
    variance: object
    interior: bool

    @classmethod
    def fixed(cls, mean, cov) -> SlopePrior:
        """A prior given from outside the log, held fixed (``estimate(..., prior=)``)."""
        return cls(mean, cov, None, None, None, None, False)


def _unit_matrices():
    """d Sigma / d (s11, s12, s22)."""
    import numpy as np

    return np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]],
                     [[0.0, 0.0], [0.0, 1.0]]])


def reml_gradient(h, b, variance):
    """The gradient of ``-2 l_R`` (:func:`slope_prior`) in ``h = (mu_1, mu_2, s11, s12,
    s22)``, ``Sigma = [[s11, s12], [s12, s22]]``: with ``W_m = (Sigma + V_m)^-1``,
    ``r_m = b_m - mu`` and ``E = d Sigma / d s``,
    ``d/d mu = -2 sum W_m r_m`` and
    ``d/d s = sum [tr(W_m E) - r_m' W_m E W_m r_m] - tr((sum W_m)^-1 sum W_m E W_m)``."""
    import numpy as np

    sigma = np.array([[h[2], h[3]], [h[3], h[4]]])
    W = np.linalg.inv(sigma + variance)
    r = b - h[:2]
    total = np.linalg.inv(W.sum(axis=0))
    grad = [-2 * np.einsum("kij,kj->i", W, r)]
    for E in _unit_matrices():
        WEW = W @ E @ W
        grad.append([np.einsum("kij,ji->", W, E) - np.einsum("ki,kij,kj->", r, WEW, r)
                     - np.trace(total @ WEW.sum(axis=0))])
    return np.concatenate(grad)


def reml_slope_derivative(h, b, variance):
    """``d reml_gradient / d b`` (5, K', 2): ``-2 W_m`` for mu and ``-2 W_m E W_m r_m`` for
    each entry of Sigma."""
    import numpy as np

    sigma = np.array([[h[2], h[3]], [h[3], h[4]]])
    W = np.linalg.inv(sigma + variance)
    Wr = np.einsum("kij,kj->ki", W, b - h[:2])
    rows = [-2 * W[:, j, :] for j in range(2)]
    rows += [-2 * np.einsum("kij,jl,kl->ki", W, E, Wr) for E in _unit_matrices()]
    return np.stack(rows)


def slope_prior(dsg: Design, d, variance=None) -> SlopePrior:
    """The prior of the slopes: restricted maximum likelihood of the per-model MLEs
    ``b_m ~ N(mu, Sigma + V_m)``, ``V_m`` their row sandwich (or ``variance``, held). With
    ``W_m = (Sigma + V_m)^-1``: ``mu = (sum W_m)^-1 sum W_m b_m`` and
    ``-2 l_R = sum log|Sigma + V_m| + sum r_m' W_m r_m + log|sum W_m|`` (Harville 1977,
    JASA 72(358)), minimised over the Cholesky factor of Sigma."""
    import numpy as np
    from scipy.optimize import minimize

    zero = np.zeros((2, 2))
    free, used = fit_models(dsg, d, np.zeros(2), zero, strict=False)
    if used.sum() < MIN_CONTESTANTS:
        _fail(f"the length slopes of only {int(used.sum())} model(s) are estimable; their "
              f"prior needs {MIN_CONTESTANTS}")
    if variance is None:
        info, score, _ = _model_information(dsg, d, free, zero)
        meat = _grouped(score[:, :, None] * score[:, None, :], dsg.c, dsg.k)
        inverse = np.linalg.inv(info[used])
        variance = (inverse @ meat[used] @ inverse)[:, 1:, 1:]
    b = free[used, 1:]

    def sigma(v):
        L = np.array([[np.exp(v[0]), 0.0], [v[1], np.exp(v[2])]])
        return L @ L.T

    def pooled(v):
        W = np.linalg.inv(sigma(v) + variance)
        return W, np.linalg.solve(W.sum(axis=0), np.einsum("kij,kj->i", W, b))

    def deviance(v):
        W, mu = pooled(v)
        r = b - mu
        return (-np.linalg.slogdet(W)[1].sum() + np.einsum("ki,kij,kj->", r, W, r)
                + np.linalg.slogdet(W.sum(axis=0))[1])

    spread = np.sqrt(np.clip(np.var(b, axis=0), 1e-4, 1e2))
    bounds = (np.log(1e-3), np.log(1e2))
    found = minimize(deviance, np.array([np.log(spread[0]), 0.0, np.log(spread[1])]),
                     method="L-BFGS-B", options={"ftol": 1e-14, "gtol": 1e-10},
                     bounds=[bounds, (-1e2, 1e2), bounds])
    inside = all(bounds[0] + 1e-4 < found.x[j] < bounds[1] - 1e-4 for j in (0, 2))
    mean, cov = pooled(found.x)[1], sigma(found.x)
    if inside:
        mean, cov = _polished(mean, cov, b, variance)
    return SlopePrior(mean, cov, free, used, b, variance, inside)


def _as_h(mean, cov):
    import numpy as np

    return np.concatenate([mean, cov[[0, 0, 1], [0, 1, 1]]])


def _reml_hessian(h, b, variance, active: int):
    """Central differences of :func:`reml_gradient` in the first ``active`` entries of h."""
    import numpy as np

    columns = []
    for j in range(active):
        step = 1e-6 * max(1.0, abs(h[j]))
        up, down = h.copy(), h.copy()
        up[j] += step
        down[j] -= step
        columns.append((reml_gradient(up, b, variance)
                        - reml_gradient(down, b, variance))[:active] / (2 * step))
    return np.column_stack(columns)


def _polished(mean, cov, b, variance):
    """Newton steps on the REML equations from the optimiser's answer, to machine
    precision (the influence differentiates them)."""
    import numpy as np

    h = _as_h(mean, cov)
    for _ in range(20):
        step = np.linalg.solve(_reml_hessian(h, b, variance, 5), reml_gradient(h, b, variance))
        h = h - step
        if np.abs(step).max() < 1e-14:
            break
    polished = np.array([[h[2], h[3]], [h[3], h[4]]])
    if not np.all(np.isfinite(h)) or np.linalg.eigvalsh(polished).min() <= 0:
        return mean, cov
    return h[:2], polished


def _prior_sensitivity(prior: SlopePrior):
    """``dh/db`` (H, K', 2) of the prior's parameters ``h`` in the slopes (implicit function
    theorem on the REML equations; central differences of :func:`reml_gradient` in ``h``);
    ``h`` = (mu, Sigma's entries) when Sigma is interior, else mu alone."""
    import numpy as np

    h = _as_h(prior.mean, prior.cov)
    active = 5 if prior.interior else 2
    by_slopes = reml_slope_derivative(h, prior.b, prior.variance)[:active]
    sens = -np.linalg.solve(_reml_hessian(h, prior.b, prior.variance, active),
                            by_slopes.reshape(active, -1))
    return sens.reshape(by_slopes.shape)


# ------------------------------------------------------------------ stage 3 and inference


def estimate(dsg: Design, prior: SlopePrior | None = None, variance=None) -> dict:
    """The three stages (module doc). ``prior``: a :class:`SlopePrior` to hold fixed
    (default: :func:`slope_prior`, whose estimation then enters the influence; ``variance``
    holds its ``V_m``). Returns the parameters, ``lc`` (K,), the score rows and bread."""
    import numpy as np
    from scipy.special import expit

    joint = fit_difficulty(dsg)
    d = _full_difficulty(joint[2 * dsg.k:])
    held = prior is not None
    prior = prior if held else slope_prior(dsg.by_instruction(), d, variance)
    precision = np.linalg.inv(prior.cov)
    omega, _ = fit_models(dsg, d, prior.mean, precision)
    at_equal_length = expit(omega[dsg.c, 0] + omega[dsg.c, 2] * d[dsg.j])
    n_c = np.bincount(dsg.c, dsg.model_weight, dsg.k)
    lc = np.bincount(dsg.c, dsg.model_weight * at_equal_length, dsg.k) / n_c
    rows, bread = _influence(dsg, joint, d, omega, prior, not held, at_equal_length, lc, n_c)
    return {"joint": joint, "difficulty": d, "omega": omega, "prior": prior, "lc": lc,
            "rows": rows, "bread": bread}


def _influence(dsg: Design, joint, d, omega, prior, prior_enters: bool, q, lc, n_c):
    """Score rows ``psi`` (n, Q) of the stacked estimating equations and the bread, the LC
    rows of ``A^-1`` (module doc). Parameter order: ``a`` (K), ``b`` (K), ``d_1..d_{I-1}``;
    the fits without prior (3K; the prior's slopes ``b_m``); the fits with prior
    ``(theta, beta, gamma)`` (3K); ``LC`` (K). ``prior_enters``: the prior was estimated
    from this log (else held fixed, and its block is zero).

    Back-substitution through the block lower-triangular ``A``: LC's coefficient on the
    prior fit of m is ``c_m = g_m' A22_m^-1 / n_m`` with ``g_m = sum f q (1 - q)
    (1, 0, d_j)``; on the prior's parameters ``h``, ``-c_m A2h_m`` (``A2h_m = -d eq_m / dh``:
    ``-P`` for mu, ``-P E P (omega_m - mu)`` for Sigma); on the slopes ``b``, that times
    :func:`_prior_sensitivity`, and on their score rows through ``A0_m^-1``; on the
    difficulty's score rows, ``(e_m - c_m A21_m - sum_m' c0_mm' A0_21,m') A11^-1`` with
    ``e_mi = gamma_m sum_(m, j = i) f q (1 - q)`` (:func:`_difficulty_dependence`)."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.special import expit

    k, n_i, n = dsg.k, dsg.n_prompts, len(dsg.y)
    q1 = 2 * k + n_i - 1
    base0, base2, base3 = q1, q1 + 3 * k, q1 + 6 * k
    precision = np.linalg.inv(prior.cov)
    info2, score2, p2 = _model_information(dsg, d, omega, precision)
    score0 = np.zeros((n, 3))
    if prior_enters:
        own = dsg.by_instruction()
        info0, score0, p0 = _model_information(own, d, prior.free, np.zeros((2, 2)))
        score0 = np.where(prior.used[dsg.c][:, None], score0, 0.0)
    # score rows: joint (a_c, b_c, d_i), free fit, prior fit (theta, beta, gamma)_c, LC_c
    p1 = expit(_joint_eta(dsg, joint))
    r1 = dsg.w * (dsg.y - p1)
    cols = [dsg.c, k + dsg.c, np.where(dsg.i > 0, 2 * k + dsg.i - 1, dsg.c),  # d_0: a 0
            *(base0 + 3 * dsg.c + j for j in range(3)), *(base2 + 3 * dsg.c + j for j in range(3)),
            base3 + dsg.c]
    vals = [r1, r1 * dsg.x, np.where(dsg.i > 0, r1, 0.0), *score0.T, *score2.T,
            dsg.model_weight * (q - lc[dsg.c])]
    rows = sp.csr_array((np.concatenate(vals),
                         (np.tile(np.arange(n), len(cols)), np.concatenate(cols))),
                        shape=(n, base3 + k))
    # LC's coefficients, from the last block back
    z, _ = _model_terms(dsg, d, omega)
    slope = dsg.model_weight * q * (1 - q)
    g = _grouped(slope[:, None] * z * np.array([1.0, 0.0, 1.0]), dsg.c, k)
    c2 = np.linalg.solve(info2, g[:, :, None])[:, :, 0] / n_c[:, None]
    e = np.bincount(dsg.c * n_i + dsg.j, slope * omega[dsg.c, 2], k * n_i).reshape(k, n_i)
    on_difficulty = (e / n_c[:, None]
                     - np.einsum("kj,kij->ki", c2, _difficulty_dependence(dsg, d, omega, p2,
                                                                          score2)))
    bread = np.zeros((k, base3 + k))
    if prior_enters:
        c0 = _through_prior(prior, omega, precision, c2, info0)
        used = np.flatnonzero(prior.used)
        a0_21 = _difficulty_dependence(own, d, prior.free, p0, score0)[used]
        on_difficulty -= np.einsum("kjm,jim->ki", c0, a0_21)
        for j in range(3):
            bread[:, base0 + 3 * used + j] = c0[:, :, j]
    rhs = np.vstack([np.zeros((2 * k, k)), on_difficulty[:, 1:].T])
    bread[:, :q1] = JointInformation(dsg, dsg.w * p1 * (1 - p1)).solve(rhs).T
    block = np.arange(k)
    for j in range(3):
        bread[block, base2 + 3 * block + j] = c2[:, j]
    bread[block, base3 + block] = 1.0 / n_c
    return rows, bread


def _through_prior(prior: SlopePrior, omega, precision, c2, info0):
    """LC's coefficients (K, K', 3) on the score rows of the fits without prior, through the
    prior's parameters (:func:`_influence`)."""
    import numpy as np

    sens = _prior_sensitivity(prior)
    gap = omega[:, 1:] - prior.mean
    a2h = [-np.broadcast_to(precision[:, j], gap.shape) for j in range(2)]
    a2h += [-(gap @ precision @ E @ precision) for E in _unit_matrices()][:len(sens) - 2]
    on_h = -np.stack([np.einsum("kj,kj->k", c2[:, 1:], column) for column in a2h], axis=1)
    on_slopes = np.einsum("kh,hjl->kjl", on_h, sens)
    padded = np.concatenate([np.zeros((*on_slopes.shape[:2], 1)), on_slopes], axis=2)
    return np.einsum("kjl,jlm->kjm", padded, np.linalg.inv(info0[prior.used]))


class LengthControlled(Estimator):
    name = "lc"
    title = "length-controlled win rate (AlpacaEval)"
    scale = PROBABILITY
    fit_axes = ("prompt",)  # each prompt's difficulty
    options = (BASELINE, LENGTH, JOIN)

    def reads_row_order(self, options: dict) -> bool:
        """The position join reads each contestant's rows in log order."""
        return options["difficulty_join"] == "position"

    def rows(self, log, options: dict):
        """The rows against the baseline (:func:`winrate.io.logs.rows_against`)."""
        from winrate.io.logs import rows_against

        return rows_against(log, self._baseline(options))

    @staticmethod
    def _baseline(options: dict) -> str:
        if options.get("baseline") is None:
            _fail("needs a baseline (option 'baseline'): the model every contestant faces")
        return options["baseline"]

    def design(self, data, options: dict, carried=None) -> Design:
        """The :class:`Design` of the fit's rows (``carried``: :func:`design`)."""
        from winrate.estimators import win_rate_kernels as kernels

        log = data.rows
        base = kernels.baseline_code(log, self._baseline(options), data.pair_table()[1])
        return design(log, base, options["length_feature"], options["difficulty_join"],
                      carried)

    def fit(self, data, options: dict):
        """The fit; a note (:func:`winrate.notes.positional_difficulty`) naming the models
        whose rows the positional join gives another instruction's difficulty."""
        from winrate import notes

        dsg = self.design(data, options)
        shifted = _shifted_rows(dsg)
        if shifted:
            notes.emit(notes.positional_difficulty(shifted))
        return self._fitted(data, options, dsg)

    def _fitted(self, data, options: dict, dsg: Design):
        from winrate.estimators import bradley_terry_kernels as bt
        from winrate.estimators import win_rate_kernels as kernels

        log, table = data.rows, data.pair_table()
        found = estimate(dsg)
        pair, centered = bt.data_centred(log, table, *bt.low_orientation(log))
        omega = found["omega"]
        return kernels.Leaderboard(
            models=log.models[dsg.contestants], scores=found["lc"], psi=table[0],
            counts=table[1], weights=None, influence=found["rows"], pair=pair,
            pairs=table[3], centered=centered, bread=found["bread"], estimator=self.name,
            scale=self.scale, log_models=log.models, contestants=dsg.contestants,
            options=dict(options),
            fitted={"intercept": omega[:, 0], "length_slope": omega[:, 1],
                    "difficulty_slope": omega[:, 2], "difficulty": found["difficulty"],
                    "slope_prior": {"mean": found["prior"].mean, "cov": found["prior"].cov},
                    "length_scale": dsg.scale})

    def replicate_scorer(self, board, total_counts, log):
        """Refits of re-weighted rows in which every row keeps the instruction the fit of
        the whole ``log`` joined it to (:class:`CarriedJoinRefit`)."""
        return CarriedJoinRefit(self, board, log)

    def describe(self, options: dict) -> str:
        return (f"AlpacaEval's length-controlled win rate in % against the baseline "
                f"{options.get('baseline')} (the reference, not ranked): per-model GLM with a "
                "length term and instruction difficulty (joined by "
                f"{options.get('difficulty_join', JOINS[0])}), predicted at equal lengths")

    def settings(self, options: dict) -> dict:
        return {"baseline": options["baseline"], "length_feature": options["length_feature"],
                "difficulty_join": options["difficulty_join"]}


def _shifted_rows(dsg: Design) -> dict[str, int]:
    """Per contestant whose rows take another instruction's difficulty, how many."""
    import numpy as np

    moved = np.bincount(dsg.c, dsg.j != dsg.i, dsg.k).astype(int)
    return {str(dsg.names[m]): int(moved[m]) for m in np.flatnonzero(moved)}


class CarriedJoinRefit(RowRefit):
    """Refits (jackknife, bootstrap) of the rows ``log`` of a fit in which each row keeps
    the instruction the whole log's join gave it (a positional join recomputed on a
    replicate's rows would shift with every instruction the replicate leaves out). A row
    whose joined instruction has no rows in a replicate has no estimated difficulty there:
    it is left out of that replicate's stages 2 and 3 (``Design.unjoined``)."""

    def __init__(self, estimator: LengthControlled, board, log):
        import numpy as np

        from winrate.estimators.base import SufficientData

        super().__init__(estimator, board, log)
        dsg = estimator.design(SufficientData(log), self.options)
        self.carried = np.unique(log.axes["prompt"].codes)[dsg.j]

    def _fit(self, sub, keep):
        from winrate.estimators.base import SufficientData

        data = SufficientData(sub)
        dsg = self.estimator.design(data, self.options, self.carried[keep])
        return self.estimator._fitted(data, self.options, dsg)


ESTIMATOR = LengthControlled()
