"""Power analysis: Miller's worked examples, inverse relations, pilot estimates."""

import numpy as np
import pytest
from scipy import stats

from tests.note_codes import warns_code
from winrate.errors import WinrateInputError
from winrate.evals import estimate_power_inputs, minimum_detectable_effect, power_at, sample_size


def test_miller_sample_size_969():
    # Miller 2024, sec. 5: (z_0.025 + z_0.2)^2 (1/9) / 0.03^2 ~ 969
    n = sample_size(0.03, omega2=1 / 9, alpha=0.05, power=0.8)
    assert round(n) == 969
    z = stats.norm.isf(0.025) + stats.norm.isf(0.2)
    assert n == pytest.approx(z**2 / 9 / 0.03**2, rel=1e-12)


def test_miller_mde_with_resampling():
    # Miller 2024, sec. 5: n = 198, omega^2 = 1/9, sigma_A^2 = sigma_B^2 = 1/6; going from
    # K = 1 to K = 10 cuts the MDE from about 13% to about 7.5%. Exactly, eq. 10 gives
    # 2.8016 sqrt((1/9 + 1/3)/198) = 0.13273 and 2.8016 sqrt((1/9 + 1/30)/198) = 0.07567
    # (the paper's text says 13.2% and 7.5%, its companion guide 13.3% and 7.6%).
    k1 = minimum_detectable_effect(198, 1 / 9, 1 / 6, 1 / 6, k_a=1, k_b=1)
    k10 = minimum_detectable_effect(198, 1 / 9, 1 / 6, 1 / 6, k_a=10, k_b=10)
    assert k1 == pytest.approx(0.1327, abs=5e-5)
    assert k10 == pytest.approx(0.0757, abs=5e-5)
    assert 0.131 < k1 < 0.134 and 0.074 < k10 < 0.077


def test_sample_size_and_mde_are_inverse_and_scale_with_deff():
    args = dict(omega2=0.08, sigma2_a=0.15, sigma2_b=0.2, k_a=3, k_b=2)
    n = sample_size(0.04, **args)
    assert minimum_detectable_effect(n, **args) == pytest.approx(0.04, rel=1e-12)
    assert sample_size(0.04, **args, deff=2.5) == pytest.approx(2.5 * n)
    assert power_at(n, 0.04, **args) == pytest.approx(0.8, abs=1e-4)


def test_power_by_simulation():
    # simulate the paired test at the planned n: rejection rate ~ 0.8
    rng = np.random.default_rng(0)
    omega2, delta = 0.1, 0.05
    n = int(np.ceil(sample_size(delta, omega2)))
    d = rng.normal(delta, np.sqrt(omega2), (4000, n))
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    assert np.mean(np.abs(z) > stats.norm.isf(0.025)) == pytest.approx(0.8, abs=0.02)


def test_power_input_errors():
    with pytest.raises(WinrateInputError, match="omega2"):
        sample_size(0.03, omega2=-1)
    with pytest.raises(WinrateInputError, match="delta"):
        sample_size(0.0, omega2=0.1)
    with pytest.raises(WinrateInputError, match="power"):
        sample_size(0.03, omega2=0.1, power=1.0)
    with pytest.raises(WinrateInputError, match="cannot all be 0"):
        minimum_detectable_effect(100, 0.0)


def _pilot(seed, n=4000, k_a=4, k_b=3, g=None):
    """x_A ~ U(0, 1); x_B = x_A with prob 1/2 else fresh U(0, 1): Corr = 1/2, Var = 1/12."""
    rng = np.random.default_rng(seed)
    x_a = rng.random(n)
    x_b = np.where(rng.random(n) < 0.5, x_a, rng.random(n))
    a = (rng.random((n, k_a)) < x_a[:, None]).astype(float)
    b = (rng.random((n, k_b)) < x_b[:, None]).astype(float)
    return a, b


def test_pilot_estimates_recover_miller_parameters():
    # omega^2 = 1/12 + 1/12 - 2 * (1/2)(1/12) = 1/12; E[x(1 - x)] = 1/6 for both models
    a, b = _pilot(1, n=20_000)
    est = estimate_power_inputs(a, b)
    assert est.omega2 == pytest.approx(1 / 12, abs=0.006)
    assert est.sigma2_a == pytest.approx(1 / 6, abs=0.004)
    assert est.sigma2_b == pytest.approx(1 / 6, abs=0.004)
    assert (est.k_a, est.k_b, est.sigma_estimated, est.deff) == (4, 3, True, 1.0)


def test_clustered_pilot_matches_appendix_c_loops():
    n = 400
    a, b = _pilot(2, n=n, k_a=3, k_b=2)
    groups = np.random.default_rng(3).integers(0, 80, n)
    est = estimate_power_inputs(a, b, groups, correction="none")

    def sigma2(m):
        xhat, total = m.mean(axis=1), 0.0
        for k in range(m.shape[1]):
            for c in np.unique(groups):
                total += np.sum(m[groups == c, k] - xhat[groups == c]) ** 2
        return total / (n * (m.shape[1] - 1))

    d = a.mean(axis=1) - b.mean(axis=1)
    v = sum(np.sum(d[groups == c] - d.mean()) ** 2 for c in np.unique(groups)) / n
    assert est.sigma2_a == pytest.approx(sigma2(a), rel=1e-12)
    assert est.sigma2_b == pytest.approx(sigma2(b), rel=1e-12)
    assert est.omega2 > 0
    assert est.omega2 == pytest.approx(v - sigma2(a) / 3 - sigma2(b) / 2, rel=1e-12)


def test_pilot_with_single_answers_and_negative_omega():
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    est = estimate_power_inputs(a, b)
    assert not est.sigma_estimated and est.sigma2_a == 0
    assert est.omega2 == pytest.approx(np.var(a - b, ddof=1))
    # pure answer noise (every x_i = 1/2, so omega^2 = 0): this seed estimates it below 0
    noise_a = (np.random.default_rng(5).random((60, 2)) < 0.5).astype(float)
    noise_b = (np.random.default_rng(6).random((60, 2)) < 0.5).astype(float)
    with warns_code("negative-variance") as found:
        est = estimate_power_inputs(noise_a, noise_b)
    assert "omega^2 is negative" in found[0]  # the component that was clipped
    assert est.omega2 == 0
    with pytest.raises(WinrateInputError, match="'pilot_b' has 3 entries"):
        estimate_power_inputs(np.ones((4, 2)), np.ones((3, 2)))


def test_pilot_cluster_counts_are_checked():
    a, b = _pilot(4, n=60, k_a=2, k_b=2)
    with pytest.raises(WinrateInputError, match="single cluster"):
        estimate_power_inputs(a, b, np.zeros(60))
    with warns_code("few-clusters"):
        assert estimate_power_inputs(a, b, np.arange(60) % 3).n_clusters == (3,)


@pytest.mark.parametrize("kwargs", [dict(k_a=1.5), dict(k_b=np.nan), dict(k_a=0), dict(k_b=np.inf)])
def test_answers_per_question_must_be_integers(kwargs):
    for call in (lambda: sample_size(0.03, 0.1, 0.1, 0.1, **kwargs),
                 lambda: power_at(500, 0.03, 0.1, 0.1, 0.1, **kwargs),
                 lambda: minimum_detectable_effect(500, 0.1, 0.1, 0.1, **kwargs)):
        with pytest.raises(WinrateInputError, match="integer >= 1"):
            call()


def test_delta_and_n_must_be_finite():
    with pytest.raises(WinrateInputError, match="delta"):
        sample_size(np.nan, 0.1)
    with pytest.raises(WinrateInputError, match="delta"):
        power_at(100, np.nan, 0.1)
    with pytest.raises(WinrateInputError, match="n must be"):
        minimum_detectable_effect(np.nan, 0.1)


def test_negative_var_x_is_clipped_with_the_same_warning_as_omega2():
    # pure answer noise: every x_i = 1/2, so Var(x) = 0 and this seed estimates it below 0
    from winrate.evals import variance_components

    noise = (np.random.default_rng(6).random((60, 2)) < 0.5).astype(float)
    xhat = noise.mean(axis=1)
    raw = np.var(xhat, ddof=1) - np.var(noise, axis=1, ddof=1).mean() / 2
    assert raw < 0
    with warns_code("negative-variance") as found:
        c = variance_components(noise)
    assert "Var(x) is negative" in found[0]  # the component that was clipped
    assert c.var_x == 0


@pytest.mark.parametrize("n,delta", [(150, 0.05), (400, -0.03), (60, 0.002)])
def test_power_at_matches_statsmodels_normal_power(n, delta):
    from statsmodels.stats.power import NormalIndPower

    args = dict(omega2=0.09, sigma2_a=0.2, sigma2_b=0.15, k_a=3, k_b=2)
    v = 0.09 + 0.2 / 3 + 0.15 / 2
    # ratio=0: one-sample two-sided z-test with standardised effect delta / sqrt(v)
    ref = NormalIndPower().power(effect_size=abs(delta) / np.sqrt(v), nobs1=n, alpha=0.1,
                                 ratio=0, alternative="two-sided")
    assert power_at(n, delta, **args, alpha=0.1) == pytest.approx(ref, rel=1e-10)


def test_power_at_by_simulation_with_resampled_answers():
    # d_i = u_i + mean of K_A answer noises - mean of K_B answer noises, u_i ~ N(delta, omega2)
    rng = np.random.default_rng(11)
    n, delta, reps = 120, 0.06, 3000
    omega2, s2a, s2b, k_a, k_b = 0.05, 0.2, 0.1, 4, 2
    u = rng.normal(delta, np.sqrt(omega2), (reps, n))
    noise_a = rng.normal(0, np.sqrt(s2a), (reps, n, k_a)).mean(axis=2)
    noise_b = rng.normal(0, np.sqrt(s2b), (reps, n, k_b)).mean(axis=2)
    d = u + noise_a - noise_b
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    rejected = np.mean(np.abs(z) > stats.norm.isf(0.025))
    expected = power_at(n, delta, omega2, s2a, s2b, k_a=k_a, k_b=k_b)
    assert 0.3 < expected < 0.9
    assert rejected == pytest.approx(expected, abs=4 * np.sqrt(expected * (1 - expected) / reps))
