"""Confirmatory generator: Bradley-Terry with per-prompt random slopes on model attributes
(prompt-specific rankings) and judges that differ in position bias, on a public log's design.

Written after ``auto`` was frozen for the confirmatory study (issue 36,
``paper/confirmatory/registration.md``) and never run before that freeze. The design --
every row's prompt, judge and models in their presentation order, hence the log's prompts,
judges, models and pair counts -- is that of a bundled log (:class:`heldout.semi.RealDesign`
reads it), kept row for row; only the outcomes are new. Comparison r on prompt p, judged by
judge j, model a shown first against b::

    eta_r = (1 + g_p) (theta_a - theta_b) + d_p (phi_a - phi_b) + beta_j
    P(a wins) = sigma(eta_r),  P(b wins) = 1 - sigma(eta_r)        (no ties)

* ``theta``: the log's abilities, the marginal Bradley-Terry (ordered-logit) fit of
  :func:`heldout.semi.fit_marginal` to its real outcomes, centred;
* ``phi_a = Phi^-1(u_a)``, ``u`` a fixed scrambled sequence in (0, 1): a second skill of
  each model, unrelated to its ability;
* ``g_p ~ N(0, slope_sd^2)`` and ``d_p ~ N(0, skill_slope_sd^2)``: prompt p's random slopes
  on the two attributes, shared by every comparison of the prompt. With ``d_p`` a prompt
  ranks the models by ``theta + d_p phi / (1 + g_p)``, its own order; with ``g_p < -1`` it
  reverses the abilities;
* ``beta_j ~ N(position_bias, position_bias_sd^2)``: judge j's bias towards the first
  position; the judges are a sample (drawn afresh in each log) when the log has several,
  and the one judge of a one-judge log is fixed (``beta = position_bias``).

Population truth. Given the order, ``eta`` is normal over prompts and judges:
``eta ~ N(mu_ab, v_ab)`` with ``mu_ab = theta_a - theta_b + position_bias`` and
``v_ab = slope_sd^2 (theta_a - theta_b)^2 + skill_slope_sd^2 (phi_a - phi_b)^2 + J``,
``J = position_bias_sd^2`` with several judges and 0 with one. So a's expected score when
shown first is ``P_first(a, b) = E sigma(mu_ab + sqrt(v_ab) Z)`` (Gauss-Hermite,
:func:`heldout.numerics.normal_expectation`), and as the order of every row is part of the
fixed design, ``psi_ab = f_ab P_first(a, b) + (1 - f_ab) (1 - P_first(b, a))`` with
``f_ab`` the share of the pair's rows that show a first. The win-rate and Bradley-Terry
truths follow from ``psi`` on the design (:func:`heldout.sample.truths`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from heldout.numerics import normal_expectation
from heldout.sample import Sample, log_frame, truths
from heldout.semi import RealDesign, fit_marginal, outcome_counts
from heldout.shared import _spread


def order_shares(first: np.ndarray, second: np.ndarray, k: int) -> np.ndarray:
    """(K, K) ``f_ab``: the share of the rows of pair {a, b} that show a first (1/2 for a
    pair never compared)."""
    shown_first = np.bincount(first * k + second, minlength=k * k).reshape(k, k)
    total = shown_first + shown_first.T
    return np.divide(shown_first, total, out=np.full((k, k), 0.5), where=total > 0)


@dataclass(frozen=True)
class RandomSlopes:
    """The generator (module doc) on ``source``'s design: a :class:`heldout.semi.RealDesign`
    (or any object with its ``log``, ``rows`` and ``rare``)."""

    source: RealDesign
    slope_sd: float = 0.5
    skill_slope_sd: float = 0.6
    position_bias: float = 0.3
    position_bias_sd: float = 0.5

    @property
    def n_judges(self) -> int:
        log = self.source.log
        return log.axes["judge"].n_clusters if "judge" in log.axes else 1

    @cached_property
    def attributes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(theta, phi)``: the fitted abilities and the second skill (module doc)."""
        log, rows = self.source.log, self.source.rows
        counts = outcome_counts(rows["first"], rows["second"], log.score, log.weight,
                                log.n_models)
        theta = fit_marginal(counts, log.n_models, with_bias=False)[0]
        return theta, norm.ppf(_spread(log.n_models, 0.35))

    @cached_property
    def psi(self) -> np.ndarray:
        """Population ``psi_ab`` on the design's presentation orders (module doc)."""
        theta, phi = self.attributes
        gap, skill_gap = theta[:, None] - theta[None, :], phi[:, None] - phi[None, :]
        judges = self.position_bias_sd**2 if self.n_judges > 1 else 0.0
        variance = (self.slope_sd * gap) ** 2 + (self.skill_slope_sd * skill_gap) ** 2 + judges
        p_first = normal_expectation(expit, gap + self.position_bias, np.sqrt(variance))
        rows = self.source.rows
        share = order_shares(rows["first"], rows["second"], theta.size)
        return share * p_first + (1 - share) * (1 - p_first.T)

    @cached_property
    def _truth(self):
        return truths(self.psi, self.source.rows, self.source.log.models.astype(object))

    def outcomes(self, rng) -> np.ndarray:
        """Outcome codes (2: the first model won, 0: the second) of the design's rows."""
        theta, phi = self.attributes
        rows = self.source.rows
        p, j, a, b = rows["prompt"], rows["judge"], rows["first"], rows["second"]
        n_prompts = int(p.max()) + 1
        slope = self.slope_sd * rng.standard_normal(n_prompts)
        skill = self.skill_slope_sd * rng.standard_normal(n_prompts)
        bias = np.full(self.n_judges, self.position_bias)
        if self.n_judges > 1:
            bias = bias + self.position_bias_sd * rng.standard_normal(self.n_judges)
        eta = (1 + slope[p]) * (theta[a] - theta[b]) + skill[p] * (phi[a] - phi[b]) + bias[j]
        return np.where(rng.random(p.size) < expit(eta), 2, 0)

    def draw(self, seed) -> Sample:
        """One log with the design's prompt and judge labels, and its truths."""
        rng = np.random.default_rng(seed)
        source = self.source
        frame = log_frame(source.rows, self.outcomes(rng), source.log.models.astype(object))
        for axis in ("prompt", "judge"):
            if axis in source.log.axes:
                labels = np.asarray(source.log.axes[axis].labels, dtype=object)
                frame[f"{axis}_id"] = labels[source.rows[axis]]
        return Sample(frame, self._truth, rare=source.rare)
