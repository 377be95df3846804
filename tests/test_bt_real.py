"""Bradley-Terry on the bundled Chatbot Arena counts against arena-rank's published procedure
(needs WINRATE_DATA; the package comparison also needs the ``arena`` extra).

arena-rank (lmarena/arena-rank, ``arena_rank/models/bradley_terry.py``, v0.1.1) fits the
same unpenalised half-tie BT likelihood by L-BFGS from zero ratings (which keeps their mean
at 0, so its ratings ``400 / ln 10 * theta + 1000`` are winrate's default scale) and computes
its "sandwich" CIs as ``(H + eps I)^-1 M (H + eps I)^-1`` with ``H`` the information and ``M``
the row-independent score outer products, ``sum_r f_r (s_r - p_r)^2 z_r z_r'`` -- the same
meat as winrate's naive covariance -- and ``eps = 1e-5 * N`` (N battles) added to the
diagonal because ``H`` is singular along the all-ones direction. winrate uses the
Moore-Penrose inverse under the centring constraint instead (exact: ``M`` vanishes along
the ones direction). The ridge ``eps`` grows with N at the same rate as ``H``, so it never
washes out: it shrinks every variance, most for the models with the fewest battles, whose
information is smallest relative to ``eps`` (the open issue lmarena/arena-rank#11, "Variance
computation / Fisher information": the inversion is dominated by ``hessian_reg`` as battles
grow). Measured on the 129 models / 1,670,250 battles: winrate's SE is larger for every
model, by 0.004 to 0.51 Elo (median 0.76%, at most 6.0% relative); arena-rank's ratings
differ from the exact MLE by up to 0.32 Elo because its L-BFGS stops at ``ftol = 1e-9`` on the
mean loss (its score equations are off by up to 2 battles there, winrate's by 5e-12).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.special import expit

from winrate.estimators import bradley_terry_kernels as bradley_terry
from winrate.io.datasets import read_dataset
from winrate.variance.sandwich import naive_cov

pytestmark = pytest.mark.skipif(
    not os.environ.get("WINRATE_DATA"),
    reason="WINRATE_DATA is unset: the Chatbot Arena counts are not available",
)

ELO = 400 / np.log(10)
ARENA_HESSIAN_REG = 1e-5  # arena-rank BradleyTerry(hessian_reg=1e-5), times N when unweighted


@pytest.fixture(scope="module")
def arena():
    log = read_dataset("chatbot_arena")
    board = bradley_terry.fit(log)
    cov = naive_cov(board.influence, "none", log.frequency, bread=board.bread)
    return log, board, cov


def information_and_meat(log, theta):
    """Dense ``H = sum f p (1 - p) z z'`` and ``M = sum f (s - p)^2 z z'``, ``z = e_a - e_b``,
    accumulated row by row (independent of winrate's pair-level code)."""
    k, a, b, f = log.n_models, log.model_a, log.model_b, log.weight
    p = expit(theta[a] - theta[b])

    def laplacian(w):
        out = np.zeros((k, k))
        for i, j, sign in ((a, a, 1), (b, b, 1), (a, b, -1), (b, a, -1)):
            np.add.at(out, (i, j), sign * w)
        return out

    return laplacian(f * p * (1 - p)), laplacian(f * (log.score - p) ** 2)


def score_equations(log, theta) -> np.ndarray:
    g = log.weight * (log.score - expit(theta[log.model_a] - theta[log.model_b]))
    k = log.n_models
    return np.bincount(log.model_a, g, k) - np.bincount(log.model_b, g, k)


def arena_rank_cov(log, theta, reg=ARENA_HESSIAN_REG) -> np.ndarray:
    """arena-rank's sandwich on the Elo scale (module doc), reproduced from its source."""
    H, M = information_and_meat(log, theta)
    inverse = np.linalg.inv(H + reg * log.weight.sum() * np.eye(log.n_models))
    return ELO**2 * inverse @ M @ inverse


def test_row_sandwich_is_the_centred_moore_penrose_sandwich(arena):
    log, board, cov = arena
    theta = board.fitted["theta"]
    assert np.abs(score_equations(log, theta)).max() < 1e-8
    assert abs(theta.mean()) < 1e-12
    H, M = information_and_meat(log, theta)
    centre = np.eye(log.n_models) - 1 / log.n_models
    expected = ELO**2 * centre @ np.linalg.pinv(H) @ M @ np.linalg.pinv(H) @ centre
    np.testing.assert_allclose(cov, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_arena_rank_sandwich_differs_only_by_its_hessian_ridge(arena):
    log, board, cov = arena
    theta = board.fitted["theta"]
    se = np.sqrt(np.diag(cov))
    se_arena = np.sqrt(np.diag(arena_rank_cov(log, theta)))
    gap = se - se_arena
    assert (gap > 0).all()  # the ridge shrinks every variance
    assert 0.3 < gap.max() < 0.6 and (gap / se).max() < 0.07  # 0.51 Elo, 6.0% measured
    fewest = np.argsort(log_battles(log))[:10]
    assert np.median((gap / se)[fewest]) > 2 * np.median(gap / se)
    # with a vanishing ridge the procedure is winrate's sandwich (centred, to drop the
    # 1/eps ones-direction term that only rounding error in M's zero row sums feeds)
    centre = np.eye(log.n_models) - 1 / log.n_models
    limit = centre @ arena_rank_cov(log, theta, 1e-12) @ centre
    np.testing.assert_allclose(np.sqrt(np.diag(limit)), se, rtol=1e-6)


def log_battles(log) -> np.ndarray:
    k = log.n_models
    return np.bincount(log.model_a, log.weight, k) + np.bincount(log.model_b, log.weight, k)


def test_arena_rank_package_matches_its_reproduced_procedure(arena):
    pytest.importorskip("arena_rank")
    import jax.numpy as jnp
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    log, board, cov = arena
    pairs = np.column_stack([log.model_a, log.model_b])
    data = PairDataset(competitors=list(map(str, log.models)),
                       pairs=jnp.asarray(pairs, dtype=jnp.int32),
                       outcomes=jnp.asarray(log.score), counts=jnp.asarray(log.weight),
                       weights=jnp.ones(log.n_rows), opt_weights=jnp.asarray(log.weight))
    out = BradleyTerry(log.n_models).compute_ratings_and_cis(data)
    ratings = np.asarray(out["ratings"])
    variances = np.asarray(out["variances"])
    # same estimator and scale: ratings agree up to its L-BFGS tolerance
    assert np.abs(ratings - board.scores).max() < 0.5
    theta = (ratings - 1000) / ELO
    assert np.abs(score_equations(log, theta)).max() < 5  # vs 5e-12 for winrate's Newton
    # its variances are the reproduced procedure at its own ratings
    np.testing.assert_allclose(variances, np.diag(arena_rank_cov(log, theta)), rtol=1e-9)
    assert (np.sqrt(variances) < np.sqrt(np.diag(cov))).all()
