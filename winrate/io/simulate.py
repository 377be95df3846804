"""Crossed comparison logs with known truth, for demos, tests and coverage studies.

Generative model (a Thurstone-type latent-difference model with crossed random effects).
Comparison r of models a and b on prompt p, judged by judge j, with a shown in the first
position::

    d_r = (theta_a - theta_b) + (e_pa - e_pb) + (g_ja - g_jb) + beta_j + eps_r
    outcome = a wins if d_r > tau_j, b wins if d_r < -tau_j, tie otherwise

* ``theta_a``: model abilities (fixed);
* ``e_pa ~ N(0, response_sd^2)``: the effect of model a's single response to prompt p,
  shared by every comparison that reuses that response (the dependence that inflates SEs);
* ``g_ja ~ N(0, judge_sd^2)``: judge j's taste for model a, shared across prompts;
* ``beta_j ~ N(position_bias, position_bias_sd^2)``: judge j's bias towards the model
  shown first (0 by default);
* ``tau_j = tie_margin * exp(tie_margin_sd * z_j)``, ``z_j ~ N(0, 1)``: judge j's
  tie margin (all judges share ``tie_margin`` by default);
* ``eps_r ~ N(0, noise_sd^2)``: comparison-level noise.

Design: each prompt gets a random number of comparisons (gamma-Poisson, so cluster sizes
are unequal), drawn from the allowed pairs (a fraction of pairs can be excluded, so some
pairs are never compared), each judged by one judge -- uniformly drawn, or with judge
shares ``~ Dirichlet(judge_size_dispersion)`` for unequal judge workloads -- in random
a/b order (probability 1/2 each).

Thin and paired designs (arena-style logs):

* ``pairs_per_prompt``: every prompt gets exactly this many comparisons instead of the
  gamma-Poisson count (pairs drawn independently, so a pair can recur on a prompt);
* ``rare_models``: the last ``rare_models`` models are drawn ``rare_weight`` times as often:
  a pair ``(a, b)`` is drawn with probability proportional to ``pop_a * pop_b``
  (``pop = 1``, or ``rare_weight`` for a rare model);
* ``both_orders``: every drawn comparison is judged twice on its prompt by the same judge,
  once with each model shown first (the two rows share the prompt's responses and the
  judge, and the position bias pushes them in opposite directions).

Population truth (prompts, responses, judges and noise all drawn afresh): given the order
and ``z_j``, ``d ~ N(mu_ab +/- beta0, sigma^2)`` with ``mu_ab = theta_a - theta_b``,
``beta0 = position_bias`` (+ when a is shown first) and
``sigma^2 = 2 response_sd^2 + 2 judge_sd^2 + position_bias_sd^2 + noise_sd^2``. With
``F(m, tau) = Phi((m - tau) / sigma) + 1/2 [Phi((tau - m) / sigma) - Phi((-tau - m) / sigma)]``
the half-tie win probability of a normal difference with mean m::

    psi_ab = 1/2 E_z[F(mu_ab + beta0, tau(z)) + F(mu_ab - beta0, tau(z))]

exactly in closed form when ``tie_margin_sd = 0``; otherwise the expectation over
``z ~ N(0, 1)`` is computed by globally adaptive Gauss-Kronrod quadrature
(:func:`scipy.integrate.quad_vec`, all pairs at once) on ``|z| <= 12`` to an absolute
error of 1e-13 per pair; the truncated tails weigh ``P(|z| > 12) < 1e-32``. (A fixed
96-node Gauss-Hermite rule, used before, is not accurate for every ``tie_margin_sd``: with
``tau = tie_margin * exp(tie_margin_sd * z)`` the integrand gets steep as the spread grows,
and its error reached 1.3e-5 at ``tie_margin_sd = 2``.) Tested to 1e-10 against
:func:`scipy.integrate.quad` for ``tie_margin_sd`` from 0.3 to 3. The population score is
``S_a = sum_b w_ab psi_ab`` over the design's allowed opponents (``true_scores``), or over
any weight matrix with :meth:`SimulatedLog.population_scores` (e.g. a fit's observed
opponents, which is the estimand when a sample misses an allowed pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import norm

from winrate.io.logs import ComparisonLog

_OUTCOME_LABELS = np.array(["b", "tie", "a"])


@dataclass(frozen=True)
class SimulationDesign:
    """Parameters of :func:`simulate_comparisons` (see the module docstring)."""

    n_models: int = 8
    n_prompts: int = 200
    n_judges: int = 10
    comparisons_per_prompt: float = 10.0
    size_dispersion: float = 2.0
    ability_sd: float = 0.5
    response_sd: float = 1.0
    judge_sd: float = 0.3
    noise_sd: float = 0.5
    tie_margin: float = 0.3
    missing_pair_share: float = 0.1
    position_bias: float = 0.0
    position_bias_sd: float = 0.0
    tie_margin_sd: float = 0.0
    judge_size_dispersion: float | None = None
    pairs_per_prompt: int | None = None
    rare_models: int = 0
    rare_weight: float = 0.1
    both_orders: bool = False


@dataclass(frozen=True)
class SimulatedLog:
    """A simulated log with its population truth."""

    design: SimulationDesign
    log: ComparisonLog
    abilities: np.ndarray
    allowed: np.ndarray
    true_psi: np.ndarray
    true_scores: np.ndarray

    def frame(self) -> pd.DataFrame:
        """The log as a DataFrame with the default winrate column names."""
        log = self.log
        return pd.DataFrame({
            "prompt_id": log.axes["prompt"].labels[log.axes["prompt"].codes],
            "judge_id": log.axes["judge"].labels[log.axes["judge"].codes],
            "model_a": log.models[log.model_a],
            "model_b": log.models[log.model_b],
            "outcome": _OUTCOME_LABELS[(2 * log.score).astype(int)],
        })

    def population_scores(self, weights: np.ndarray) -> np.ndarray:
        """``S_a = sum_b w_ab psi_ab`` for a (K, K) weight matrix, e.g. ``fit(log).weights``
        (uniform over the opponents actually observed in this sample)."""
        return (np.asarray(weights, float) * np.nan_to_num(self.true_psi)).sum(axis=1)


_Z_LIMIT = 12.0  # P(|z| > 12) < 1e-32: the truncated tails are negligible
_QUADRATURE_ABS_ERROR = 1e-13


def _half_tie_win(m: np.ndarray, tau, sigma: float) -> np.ndarray:
    """``F(m, tau)``: P(d > tau) + P(|d| <= tau) / 2 for ``d ~ N(m, sigma^2)``."""
    return ndtr((m - tau) / sigma) + 0.5 * (ndtr((tau - m) / sigma) - ndtr((-tau - m) / sigma))


def population_psi(abilities: np.ndarray, design: SimulationDesign) -> np.ndarray:
    """Population pairwise win probabilities (module docstring); diagonal NaN.

    Closed form without judge-specific tie margins; otherwise the expectation over
    ``z ~ N(0, 1)`` by adaptive quadrature of ``phi(z) * f(z)`` over ``|z| <= 12``
    (:func:`scipy.integrate.quad_vec`, every pair at once, absolute error <= 1e-13).
    """
    sigma = np.sqrt(2 * design.response_sd**2 + 2 * design.judge_sd**2
                    + design.position_bias_sd**2 + design.noise_sd**2)
    mu = np.asarray(abilities, float)[:, None] - np.asarray(abilities, float)[None, :]
    beta = design.position_bias

    def both(tau):
        return 0.5 * (_half_tie_win(mu + beta, tau, sigma) + _half_tie_win(mu - beta, tau, sigma))

    if design.tie_margin_sd > 0:
        def integrand(z: float) -> np.ndarray:
            return norm.pdf(z) * both(design.tie_margin * np.exp(design.tie_margin_sd * z))

        psi, _ = integrate.quad_vec(integrand, -_Z_LIMIT, _Z_LIMIT,
                                    epsabs=_QUADRATURE_ABS_ERROR, epsrel=0.0, norm="max",
                                    limit=10_000)
    else:
        psi = both(design.tie_margin)
    np.fill_diagonal(psi, np.nan)
    return psi


def _psi_parameters(design: SimulationDesign) -> tuple:
    """The fields of the design that :func:`population_psi` reads (the cache key)."""
    return (design.response_sd, design.judge_sd, design.position_bias,
            design.position_bias_sd, design.noise_sd, design.tie_margin, design.tie_margin_sd)


@lru_cache(maxsize=32)
def _population_psi_cached(theta: tuple[float, ...], parameters: tuple) -> np.ndarray:
    """:func:`population_psi`, computed once per abilities and latent parameters: the
    quadrature takes a fraction of a second, and a coverage study draws thousands of logs
    from one design (the result is the same array, bit for bit)."""
    (response_sd, judge_sd, position_bias, position_bias_sd, noise_sd, tie_margin,
     tie_margin_sd) = parameters
    design = SimulationDesign(response_sd=response_sd, judge_sd=judge_sd,
                              position_bias=position_bias, position_bias_sd=position_bias_sd,
                              noise_sd=noise_sd, tie_margin=tie_margin,
                              tie_margin_sd=tie_margin_sd)
    psi = population_psi(np.array(theta), design)
    psi.setflags(write=False)
    return psi


def _allowed_pairs(n_models: int, missing_share: float, rng) -> np.ndarray:
    """Unordered pairs in the design; drops a share of pairs but keeps the graph connected."""
    low, high = np.triu_indices(n_models, k=1)
    drop = rng.random(low.size) < missing_share
    drop &= high != low + 1  # keep the chain (0,1), (1,2), ... so every model has games
    return np.column_stack([low[~drop], high[~drop]])


def _judge_position_bias(design: SimulationDesign, rng) -> np.ndarray:
    """``beta_j`` per judge; no random draw (so old seeds reproduce) when it is constant."""
    if design.position_bias_sd == 0:
        return np.full(design.n_judges, design.position_bias)
    return rng.normal(design.position_bias, design.position_bias_sd, design.n_judges)


def _judge_tie_margins(design: SimulationDesign, rng) -> np.ndarray:
    """``tau_j`` per judge; no random draw when every judge has the same margin."""
    if design.tie_margin_sd == 0:
        return np.full(design.n_judges, design.tie_margin)
    return design.tie_margin * np.exp(design.tie_margin_sd * rng.standard_normal(design.n_judges))


def _prompt_sizes(design: SimulationDesign, rng) -> np.ndarray:
    """Comparisons per prompt: ``pairs_per_prompt`` each, or ``1 + Poisson(max(rate - 1,
    0))`` with ``rate ~ Gamma(size_dispersion, comparisons_per_prompt / size_dispersion)``."""
    if design.pairs_per_prompt is not None:
        return np.full(design.n_prompts, design.pairs_per_prompt)
    rate = rng.gamma(design.size_dispersion,
                     design.comparisons_per_prompt / design.size_dispersion, design.n_prompts)
    return 1 + rng.poisson(np.maximum(rate - 1, 0))


def _draw_pairs(design: SimulationDesign, allowed: np.ndarray, n: int, rng) -> np.ndarray:
    """Indices into ``allowed`` of ``n`` comparisons: uniform, or with probability
    ``pop_a * pop_b`` when some models are rare (module docstring)."""
    if not design.rare_models:
        return rng.integers(0, len(allowed), n)
    pop = np.ones(design.n_models)
    pop[design.n_models - design.rare_models:] = design.rare_weight
    p = pop[allowed[:, 0]] * pop[allowed[:, 1]]
    return rng.choice(len(allowed), size=n, p=p / p.sum())


def simulate_comparisons(design: SimulationDesign | None = None, seed=0,
                         abilities: np.ndarray | None = None) -> SimulatedLog:
    """Draw one comparison log from the crossed random-effects model (module docstring)."""
    design = design or SimulationDesign()
    rng = np.random.default_rng(seed)
    k = design.n_models
    theta = (np.linspace(design.ability_sd * 1.5, -design.ability_sd * 1.5, k)
             if abilities is None else np.asarray(abilities, float))
    allowed = _allowed_pairs(k, design.missing_pair_share, rng)
    prompt = np.repeat(np.arange(design.n_prompts), _prompt_sizes(design, rng))
    n = prompt.size
    chosen = allowed[_draw_pairs(design, allowed, n, rng)]
    swap = rng.random(n) < 0.5
    a = np.where(swap, chosen[:, 1], chosen[:, 0])
    b = np.where(swap, chosen[:, 0], chosen[:, 1])
    if design.judge_size_dispersion is None:
        judge = rng.integers(0, design.n_judges, n)
    else:
        share = rng.dirichlet(np.full(design.n_judges, design.judge_size_dispersion))
        judge = rng.choice(design.n_judges, size=n, p=share)
    if design.both_orders:
        prompt, judge = np.repeat(prompt, 2), np.repeat(judge, 2)
        a, b = np.column_stack([a, b]).ravel(), np.column_stack([b, a]).ravel()
        n = 2 * n
    response = rng.normal(0, design.response_sd, (design.n_prompts, k))
    taste = rng.normal(0, design.judge_sd, (design.n_judges, k))
    d = (theta[a] - theta[b] + response[prompt, a] - response[prompt, b]
         + taste[judge, a] - taste[judge, b] + rng.normal(0, design.noise_sd, n))
    d = d + _judge_position_bias(design, rng)[judge]
    tau = _judge_tie_margins(design, rng)[judge]
    score = np.where(d > tau, 1.0, np.where(d < -tau, 0.0, 0.5))
    names = np.array([f"model-{i:02d}" for i in range(k)], dtype=object)
    log = ComparisonLog.from_arrays(a, b, score, models=names, prompt=prompt, judge=judge)
    psi = _population_psi_cached(tuple(theta.tolist()), _psi_parameters(design)).copy()
    observed = np.zeros((k, k), bool)
    observed[allowed[:, 0], allowed[:, 1]] = True
    observed |= observed.T
    weights = observed / observed.sum(axis=1, keepdims=True)
    true_scores = (weights * np.nan_to_num(psi)).sum(axis=1)
    return SimulatedLog(design, log, theta, allowed, psi, true_scores)
