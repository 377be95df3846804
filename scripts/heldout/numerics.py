"""Expectations the held-out truths need, each to about 1e-10.

* :func:`normal_expectation`: ``E f(mu + sd Z)``, ``Z ~ N(0, 1)``. Up to
  :data:`HERMITE_MAX_SD` by Gauss-Hermite quadrature,
  ``sum_i w_i f(mu + sd sqrt(2) x_i) / sqrt(pi)`` with :data:`HERMITE_NODES` nodes
  (Abramowitz & Stegun 1964, 25.4.46): for the integrands here (logistic and normal cdfs,
  which change over about one latent unit) its error is below 1e-10 there. For a wider
  latent the integrand is a near-step in z and Gauss-Hermite degrades (3e-5 at sd 8.8), so
  ``phi(z) f(mu + sd z)`` is integrated over ``|z| <= 12`` (the tails weigh < 1e-32) by
  composite 8-point Gauss-Legendre panels no wider than ``1 / (4 sd)``. Both are checked
  against adaptive quadrature in ``tests/test_heldout.py``.
* :func:`half_tie_probit` and :func:`half_tie_logit`: the expected half-tie score of the
  first model, ``P(win) + P(tie) / 2``, given the latent advantage ``m`` (module docs of the
  generators for the two tie models).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import expit, ndtr

HERMITE_NODES = 160
HERMITE_MAX_SD = 3.5
_Z_LIMIT = 12.0


@lru_cache(maxsize=4)
def hermite_rule(n: int = HERMITE_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``sqrt(2) x_i`` and weights ``w_i / sqrt(pi)`` of the standard normal
    Gauss-Hermite rule (weights sum to 1)."""
    x, w = np.polynomial.hermite.hermgauss(n)
    nodes, weights = np.sqrt(2.0) * x, w / np.sqrt(np.pi)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@lru_cache(maxsize=8)
def legendre_panels(n_panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes z and weights ``phi(z) dz`` of composite 8-point Gauss-Legendre on
    ``[-12, 12]`` split into ``n_panels`` equal panels."""
    x, w = np.polynomial.legendre.leggauss(8)
    edges = np.linspace(-_Z_LIMIT, _Z_LIMIT, n_panels + 1)
    half = np.diff(edges)[:, None] / 2
    nodes = ((edges[:-1, None] + edges[1:, None]) / 2 + half * x).ravel()
    weights = (half * w).ravel() * np.exp(-nodes**2 / 2) / np.sqrt(2 * np.pi)
    return nodes, weights


def normal_expectation(f, mu, sd) -> np.ndarray:
    """``E f(mu + sd Z)`` elementwise over broadcast ``mu`` and ``sd`` (module doc)."""
    mu, sd = np.asarray(mu, float)[..., None], np.asarray(sd, float)[..., None]
    widest = float(sd.max()) if sd.size else 0.0
    if widest <= HERMITE_MAX_SD:
        nodes, weights = hermite_rule()
    else:
        nodes, weights = legendre_panels(int(np.ceil(2 * _Z_LIMIT * 4 * widest)))
    return f(mu + sd * nodes) @ weights


def half_tie_probit(m, tau, sd):
    """``P(d > tau) + P(|d| <= tau) / 2`` for ``d ~ N(m, sd^2)``:
    ``(1 + Phi((m - tau) / sd) - Phi((-m - tau) / sd)) / 2``."""
    return 0.5 * (1.0 + ndtr((m - tau) / sd) - ndtr((-m - tau) / sd))


def half_tie_logit(eta, kappa):
    """Ordered logit with symmetric thresholds: ``P(first wins) = sigma(eta - kappa)``,
    ``P(second wins) = sigma(-eta - kappa)``; the half-tie score is
    ``(1 + sigma(eta - kappa) - sigma(-eta - kappa)) / 2``."""
    return 0.5 * (1.0 + expit(eta - kappa) - expit(-eta - kappa))


def half_tie_logit_slope(eta, kappa):
    """``d/d eta`` of :func:`half_tie_logit`: ``(s(eta - kappa) + s(-eta - kappa)) / 2`` with
    ``s(x) = sigma(x) (1 - sigma(x))``."""
    p, q = expit(eta - kappa), expit(-eta - kappa)
    return 0.5 * (p * (1 - p) + q * (1 - q))
