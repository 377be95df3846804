"""Held-out generator (b): shared responses, a style covariate, judge x model tastes and
position bias, on a logistic latent with an ordered-logit tie model.

Comparison r on prompt p, judged by judge j, first model a, second model b::

    eta_r = theta_a - theta_b + gamma (L_pa - L_pb) + (R_pa - R_pb) + (g_ja - g_jb) + beta_j
    P(a wins) = sigma(eta_r - kappa),  P(b wins) = sigma(-eta_r - kappa),  tie otherwise

* ``theta_a = ability_sd * Phi^-1((K - a - 1/2) / K)`` (model 0 the strongest; a baseline,
  the last model of a baseline design, has theta = 0);
* ``R_pa = sigma_a Z_pa - c B_pa``: model a's one response to prompt p, reused by *every*
  comparison of a on p (in a baseline design the baseline's response enters every
  comparison of the prompt). ``Z ~ N(0, 1)``, and the response fails with probability
  ``q_a`` (``B_pa ~ Bernoulli(q_a)``, penalty ``c``): a skewed, model-specific response
  effect. ``sigma_a`` and ``q_a`` vary over models (:meth:`SharedResponses.model_table`);
* ``L_pa = l_a + style_sd Z'_pa``: the length (style) of that response; ``l_a`` correlates
  0.6 with ability, so style explains part of a model's wins. The log carries
  ``style_length = L_pa - L_pb`` (first minus second), the covariate of ``bt_style``;
* ``g_ja ~ N(0, judge_taste_sd^2)``: judge j's taste for model a; ``beta_j ~
  N(position_bias, position_bias_sd^2)``: its bias to the first position. With one judge the
  judge is fixed: ``g = 0``, ``beta = position_bias``.

Population truth. Write ``h(eta) = (1 + sigma(eta - kappa) - sigma(-eta - kappa)) / 2``, the
first model's expected half-tie score (:func:`heldout.numerics.half_tie_logit`); a's score
when shown second is ``1 - h(eta_b) = h(-eta_b)``, so a's latent advantage is
``eta_r`` with ``beta_j`` replaced by ``o beta_j``, ``o = +1`` (a first) or ``-1``. Given the
failures ``(B_a, B_b)``, a's advantage is normal with mean
``mu = theta_a - theta_b + gamma (l_a - l_b) - c (B_a - B_b) + o position_bias`` and variance
``V_ab = 2 gamma^2 style_sd^2 + sigma_a^2 + sigma_b^2 + J`` with
``J = 2 judge_taste_sd^2 + position_bias_sd^2`` (0 with one judge). So::

    psi_ab = sum_{B_a, B_b in {0, 1}} P(B_a) P(B_b) 1/2 sum_{o = +-1} E h(mu + sqrt(V_ab) Z)

by Gauss-Hermite quadrature (:func:`heldout.numerics.normal_expectation`). For
``bt_style`` the truth needs ``t_ab(x) = E[s | x]`` at the covariate ``x`` of the
(low, high) orientation: x is independent of the response and judge effects, so ``t`` is the
same sum with ``gamma x`` in place of ``gamma (l_a - l_b)`` and
``V'_ab = sigma_a^2 + sigma_b^2 + J``; the outer expectation over
``x ~ N(l_a - l_b, 2 style_sd^2)`` is a Gauss-Hermite rule of :data:`STYLE_NODES` nodes
(:mod:`heldout.truth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from heldout.design import Design, rare_indices
from heldout.numerics import half_tie_logit, hermite_rule, normal_expectation
from heldout.sample import Sample, log_frame, model_names, truths

STYLE_NODES = 40
_GOLDEN = (np.sqrt(5.0) - 1) / 2


def _spread(n: int, offset: float) -> np.ndarray:
    """n points of (0, 1) in a fixed scrambled order (the golden-ratio sequence)."""
    return np.mod(offset + _GOLDEN * np.arange(1, n + 1), 1.0)


@dataclass(frozen=True)
class SharedResponses:
    """Generator (b) (module doc) on ``design``."""

    design: Design
    ability_sd: float = 0.6
    kappa: float = 0.6
    response_sd: tuple[float, float] = (0.6, 1.4)
    failure_rate: tuple[float, float] = (0.02, 0.15)
    failure_penalty: float = 2.0
    style_effect: float = 0.3
    style_sd: float = 1.0
    judge_taste_sd: float = 0.4
    position_bias: float = 0.3
    position_bias_sd: float = 0.2

    @cached_property
    def model_table(self) -> pd.DataFrame:
        """Per model: ability, response sd, failure rate, mean style (the baseline last)."""
        k = self.design.n_models
        theta = self.ability_sd * norm.ppf((k - np.arange(k) - 0.5) / k)
        z = theta / self.ability_sd
        low, high = self.response_sd
        table = pd.DataFrame({
            "ability": theta,
            "response_sd": low + (high - low) * _spread(k, 0.1),
            "failure_rate": self.failure_rate[0] + np.diff(self.failure_rate)[0]
            * _spread(k, 0.7),
            "style": 0.6 * z + 0.8 * norm.ppf(_spread(k, 0.35)),
        })
        if self.design.baseline:
            base = {"ability": 0.0, "response_sd": 1.0, "failure_rate": 0.05, "style": 0.0}
            table = pd.concat([table, pd.DataFrame([base])], ignore_index=True)
        return table

    @property
    def judge_variance(self) -> float:
        if self.design.n_judges == 1:
            return 0.0
        return 2 * self.judge_taste_sd**2 + self.position_bias_sd**2

    def _failure_mixture(self, qa, qb):
        """Failure combinations ``(P(B_a) P(B_b), c (B_a - B_b))`` for failure rates
        ``qa``, ``qb`` of the two models (broadcast arrays)."""
        c = self.failure_penalty
        return [((1 - qa) * (1 - qb), 0.0), (qa * (1 - qb), c), ((1 - qa) * qb, -c),
                (qa * qb, 0.0)]

    def _expected_score(self, advantage, variance, mixture):
        """``sum_B P(B) 1/2 sum_o E h(advantage - c dB + o beta + sqrt(variance) Z)`` (module
        doc) for broadcast arrays of advantages, variances and failure ``mixture``."""
        total = 0.0
        for prob, shift in mixture:
            for o in (1.0, -1.0):
                mean = advantage - shift + o * self.position_bias
                total = total + prob * 0.5 * normal_expectation(
                    lambda e: half_tie_logit(e, self.kappa), mean, np.sqrt(variance))
        return total

    @cached_property
    def psi(self) -> np.ndarray:
        """Population ``psi_ab`` (module doc) of every ordered pair."""
        m = self.model_table
        theta, style, sd, q = (m[c].to_numpy() for c in
                               ("ability", "style", "response_sd", "failure_rate"))
        advantage = (theta[:, None] - theta[None, :]
                     + self.style_effect * (style[:, None] - style[None, :]))
        variance = (2 * self.style_effect**2 * self.style_sd**2 + sd[:, None] ** 2
                    + sd[None, :] ** 2 + self.judge_variance)
        return self._expected_score(advantage, variance,
                                    self._failure_mixture(q[:, None], q[None, :]))

    @cached_property
    def _all_style_nodes(self):
        """``(target, x, weights)`` of every unordered pair ``(low, high)``, as (K, K, Q)
        arrays (upper triangle used)."""
        m = self.model_table
        theta, style, sd, q = (m[c].to_numpy() for c in
                               ("ability", "style", "response_sd", "failure_rate"))
        nodes, weights = hermite_rule(STYLE_NODES)
        x = ((style[:, None] - style[None, :])[..., None]
             + np.sqrt(2) * self.style_sd * nodes)
        advantage = (theta[:, None] - theta[None, :])[..., None] + self.style_effect * x
        variance = (sd[:, None] ** 2 + sd[None, :] ** 2 + self.judge_variance)[..., None]
        mixture = self._failure_mixture(q[:, None, None], q[None, :, None])
        target = self._expected_score(advantage, np.broadcast_to(variance, advantage.shape),
                                      mixture)
        return target, x, np.broadcast_to(weights, x.shape)

    def style_nodes(self, low, high):
        """``(target, x, weights)`` of :func:`heldout.truth.bt_pseudo_truth` for pairs
        ``(low, high)``: ``t(x)`` at the Gauss-Hermite nodes of x (module doc)."""
        return tuple(array[low, high] for array in self._all_style_nodes)

    def draw(self, seed) -> Sample:
        """One log (with ``style_length``) and its truths."""
        rng = np.random.default_rng(seed)
        design, m = self.design, self.model_table
        rows = design.draw(rng)
        k, n_prompts, n = design.n_total, design.n_prompts, rows["prompt"].size
        theta, mean_style, sd, q = (m[c].to_numpy() for c in
                                    ("ability", "style", "response_sd", "failure_rate"))
        style = mean_style + self.style_sd * rng.standard_normal((n_prompts, k))
        response = (sd * rng.standard_normal((n_prompts, k))
                    - self.failure_penalty * (rng.random((n_prompts, k)) < q))
        if design.n_judges > 1:
            taste = self.judge_taste_sd * rng.standard_normal((design.n_judges, k))
            bias = self.position_bias + self.position_bias_sd * rng.standard_normal(
                design.n_judges)
        else:
            taste, bias = np.zeros((1, k)), np.array([self.position_bias])
        p, j, a, b = rows["prompt"], rows["judge"], rows["first"], rows["second"]
        x = style[p, a] - style[p, b]
        eta = (theta[a] - theta[b] + self.style_effect * x + response[p, a] - response[p, b]
               + taste[j, a] - taste[j, b] + bias[j])
        u = rng.random(n)
        outcome = np.where(u < expit(eta - self.kappa), 2,
                           np.where(u > 1 - expit(-eta - self.kappa), 0, 1))
        names = model_names(k)
        base = k - 1 if design.baseline else None
        return Sample(log_frame(rows, outcome, names, {"style_length": x}),
                      truths(self.psi, rows, names, base, self.style_nodes),
                      rare=tuple(names[rare_indices(design.n_models, design.rare_models)]),
                      baseline=None if base is None else str(names[base]),
                      covariates=("style_length",))
