"""Crossed comparison logs with known truth, for demos, tests and coverage studies.

Generative model (a Thurstone-type latent-difference model with crossed random effects).
Comparison r of models a and b on prompt p, judged by judge j::

    d_r = (theta_a - theta_b) + (e_pa - e_pb) + (g_ja - g_jb) + eps_r
    outcome = a wins if d_r > tau, b wins if d_r < -tau, tie otherwise

* ``theta_a``: model abilities (fixed);
* ``e_pa ~ N(0, response_sd^2)``: the effect of model a's single response to prompt p,
  shared by every comparison that reuses that response (the dependence that inflates SEs);
* ``g_ja ~ N(0, judge_sd^2)``: judge j's taste for model a, shared across prompts;
* ``eps_r ~ N(0, noise_sd^2)``: comparison-level noise; ``tau``: the tie margin.

Design: each prompt gets a random number of comparisons (gamma-Poisson, so cluster sizes
are unequal), drawn from the allowed pairs (a fraction of pairs can be excluded, so some
pairs are never compared), each judged by one uniformly drawn judge, in random a/b order.

Population truth (prompts, responses, judges and noise all drawn afresh): marginally
``d ~ N(mu_ab, sigma^2)`` with ``mu_ab = theta_a - theta_b`` and
``sigma^2 = 2 response_sd^2 + 2 judge_sd^2 + noise_sd^2``, so exactly::

    psi_ab = Phi((mu_ab - tau) / sigma) + 1/2 [Phi((tau - mu_ab) / sigma)
                                               - Phi((-tau - mu_ab) / sigma)]

and the population score ``S_a = sum_b w_ab psi_ab`` over the design's allowed opponents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

from winrate.data import ComparisonLog

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


def population_psi(abilities: np.ndarray, design: SimulationDesign) -> np.ndarray:
    """Exact population pairwise win probabilities (module docstring); diagonal NaN."""
    sigma = np.sqrt(2 * design.response_sd**2 + 2 * design.judge_sd**2 + design.noise_sd**2)
    mu = abilities[:, None] - abilities[None, :]
    tau = design.tie_margin
    win = norm.cdf((mu - tau) / sigma)
    tie = norm.cdf((tau - mu) / sigma) - norm.cdf((-tau - mu) / sigma)
    psi = win + 0.5 * tie
    np.fill_diagonal(psi, np.nan)
    return psi


def _allowed_pairs(n_models: int, missing_share: float, rng) -> np.ndarray:
    """Unordered pairs in the design; drops a share of pairs but keeps the graph connected."""
    low, high = np.triu_indices(n_models, k=1)
    drop = rng.random(low.size) < missing_share
    drop &= high != low + 1  # keep the chain (0,1), (1,2), ... so every model has games
    return np.column_stack([low[~drop], high[~drop]])


def simulate_comparisons(design: SimulationDesign | None = None, seed=0,
                         abilities: np.ndarray | None = None) -> SimulatedLog:
    """Draw one comparison log from the crossed random-effects model (module docstring)."""
    design = design or SimulationDesign()
    rng = np.random.default_rng(seed)
    k = design.n_models
    theta = (np.linspace(design.ability_sd * 1.5, -design.ability_sd * 1.5, k)
             if abilities is None else np.asarray(abilities, float))
    allowed = _allowed_pairs(k, design.missing_pair_share, rng)
    rate = rng.gamma(design.size_dispersion,
                     design.comparisons_per_prompt / design.size_dispersion, design.n_prompts)
    sizes = 1 + rng.poisson(np.maximum(rate - 1, 0))
    prompt = np.repeat(np.arange(design.n_prompts), sizes)
    n = prompt.size
    chosen = allowed[rng.integers(0, len(allowed), n)]
    swap = rng.random(n) < 0.5
    a = np.where(swap, chosen[:, 1], chosen[:, 0])
    b = np.where(swap, chosen[:, 0], chosen[:, 1])
    judge = rng.integers(0, design.n_judges, n)
    response = rng.normal(0, design.response_sd, (design.n_prompts, k))
    taste = rng.normal(0, design.judge_sd, (design.n_judges, k))
    d = (theta[a] - theta[b] + response[prompt, a] - response[prompt, b]
         + taste[judge, a] - taste[judge, b] + rng.normal(0, design.noise_sd, n))
    score = np.where(d > design.tie_margin, 1.0, np.where(d < -design.tie_margin, 0.0, 0.5))
    names = np.array([f"model-{i:02d}" for i in range(k)], dtype=object)
    log = ComparisonLog.from_arrays(a, b, score, models=names, prompt=prompt, judge=judge)
    psi = population_psi(theta, design)
    observed = np.zeros((k, k), bool)
    observed[allowed[:, 0], allowed[:, 1]] = True
    observed |= observed.T
    weights = observed / observed.sum(axis=1, keepdims=True)
    true_scores = (weights * np.nan_to_num(psi)).sum(axis=1)
    return SimulatedLog(design, log, theta, allowed, psi, true_scores)
