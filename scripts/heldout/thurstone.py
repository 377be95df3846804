"""Held-out generator (a): a probit (Thurstone) latent with heavy-tailed prompt difficulty.

Comparison r on prompt p, judged by judge j, first model a, second model b::

    d_r = (theta_a - theta_b) - (lambda_a - lambda_b) delta_p + (e_pa - e_pb) + omega_j eps_r
    outcome: a wins if d_r > tau_j, b wins if d_r < -tau_j, tie otherwise

* ``theta_a = ability_sd * Phi^-1((K - a - 1/2) / K)``: abilities at normal quantiles,
  model 0 the strongest;
* ``delta_p = difficulty_scale * T_p``, ``T_p ~ t(3)``: prompt difficulty, heavy-tailed, and
  ``lambda_a = 1/2 - loading_spread * theta_a / max|theta|``: weaker models lose more on hard
  prompts, so the difficulty moves every comparison of a prompt (a shared, heavy-tailed
  prompt effect that does not cancel in the difference);
* ``e_pa ~ N(0, response_sd^2)``: model a's one response to prompt p, reused by each of its
  comparisons on p;
* judges are of a type k drawn with probability ``share_k``: tie margin ``tau_k`` and noise
  sd ``omega_k`` (:data:`JUDGE_TYPES`); a log with one judge has one judge of type
  ``single_judge_type`` (the judge is then fixed, not sampled);
* ``eps_r ~ N(0, 1)``; no position bias.

Population truth: given the judge type k and ``T``, ``d ~ N(m_ab(T), s_k^2)`` with
``m_ab(T) = theta_a - theta_b - (lambda_a - lambda_b) difficulty_scale T`` and
``s_k^2 = 2 response_sd^2 + omega_k^2``, and the half-tie score of a normal latent with
margin tau is ``F = (1 + Phi((m - tau)/s) - Phi((-m - tau)/s)) / 2``
(:func:`heldout.numerics.half_tie_probit`). So::

    psi_ab = sum_k share_k int f_t3(T) F(m_ab(T), tau_k, s_k) dT

computed for all pairs at once by adaptive Gauss-Kronrod quadrature over the real line
(:func:`scipy.integrate.quad_vec`, absolute error 1e-12). The model is symmetric in the
order of presentation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import integrate
from scipy.stats import norm, t

from heldout.design import Design, rare_indices
from heldout.numerics import half_tie_probit
from heldout.sample import Sample, log_frame, model_names, truths

#: (tie margin tau, noise sd omega, share) of each judge type.
JUDGE_TYPES = ((0.15, 0.6, 0.4), (0.35, 1.0, 0.35), (0.6, 1.4, 0.25))


@dataclass(frozen=True)
class Thurstone:
    """Generator (a) (module doc) on ``design`` (no baseline designs)."""

    design: Design
    ability_sd: float = 0.6
    response_sd: float = 0.5
    difficulty_scale: float = 0.6
    loading_spread: float = 0.3
    judge_types: tuple = JUDGE_TYPES
    single_judge_type: int = 1

    @cached_property
    def abilities(self) -> np.ndarray:
        k = self.design.n_models
        return self.ability_sd * norm.ppf((k - np.arange(k) - 0.5) / k)

    @cached_property
    def loadings(self) -> np.ndarray:
        theta = self.abilities
        return 0.5 - self.loading_spread * theta / np.abs(theta).max()

    def type_shares(self) -> np.ndarray:
        """Probability of each judge type among this design's judges."""
        if self.design.n_judges == 1:
            return np.eye(len(self.judge_types))[self.single_judge_type]
        return np.array([share for *_, share in self.judge_types])

    @cached_property
    def psi(self) -> np.ndarray:
        """Population ``psi_ab`` (module doc); diagonal 1/2."""
        theta, lam = self.abilities, self.loadings
        gap, load = theta[:, None] - theta[None, :], lam[:, None] - lam[None, :]
        total = np.zeros_like(gap)
        for share, (tau, omega, _) in zip(self.type_shares(), self.judge_types, strict=True):
            if share == 0:
                continue
            sd = np.sqrt(2 * self.response_sd**2 + omega**2)

            def integrand(x, tau=tau, sd=sd):
                return t.pdf(x, 3) * half_tie_probit(gap - load * self.difficulty_scale * x,
                                                      tau, sd)

            value, _ = integrate.quad_vec(integrand, -np.inf, np.inf, epsabs=1e-12,
                                          epsrel=0.0, limit=2000)
            total += share * value
        return total

    def draw(self, seed) -> Sample:
        """One log and its truths."""
        rows, outcome = self.draw_codes(seed)
        names = model_names(self.design.n_models)
        return Sample(log_frame(rows, outcome, names), truths(self.psi, rows, names),
                      rare=tuple(names[rare_indices(self.design.n_models,
                                                    self.design.rare_models)]))

    def draw_codes(self, seed) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """One log as codes: the design's rows (:meth:`heldout.design.Design.draw`) and
        the outcome codes (:data:`heldout.sample.LABELS`), before any labels."""
        rng = np.random.default_rng(seed)
        design = self.design
        rows = design.draw(rng)
        k, n = design.n_models, rows["prompt"].size
        delta = self.difficulty_scale * rng.standard_t(3, design.n_prompts)
        response = rng.normal(0.0, self.response_sd, (design.n_prompts, k))
        kinds = rng.choice(len(self.judge_types), design.n_judges, p=self.type_shares())
        tau, omega = (np.array([jt[i] for jt in self.judge_types])[kinds] for i in (0, 1))
        p, j, a, b = rows["prompt"], rows["judge"], rows["first"], rows["second"]
        d = (self.abilities[a] - self.abilities[b]
             - (self.loadings[a] - self.loadings[b]) * delta[p]
             + response[p, a] - response[p, b] + omega[j] * rng.standard_normal(n))
        return rows, np.where(d > tau[j], 2, np.where(d < -tau[j], 0, 1))
