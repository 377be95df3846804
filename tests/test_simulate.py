"""The simulator's population truth against independent computations (adaptive quadrature,
symmetry, a large simulated log with cluster-robust SEs) and its design features."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.io.simulate import SimulationDesign, population_psi, simulate_comparisons

FULL = SimulationDesign(n_models=5, position_bias=0.3, position_bias_sd=0.25,
                        tie_margin_sd=0.5, judge_size_dispersion=1.0)
ABILITIES = np.array([0.7, 0.2, 0.0, -0.3, -0.8])


def _quad_psi(mu: float, d: SimulationDesign) -> float:
    """psi by scipy's adaptive quadrature over the whole real line of the judge's z,
    written from the model definition (module docstring), independently of the code."""
    sigma = np.sqrt(2 * d.response_sd**2 + 2 * d.judge_sd**2 + d.position_bias_sd**2
                    + d.noise_sd**2)

    def half_tie(m, tau):  # scipy.special.ndtr is the normal CDF (norm.cdf without overhead)
        win = ndtr((m - tau) / sigma)
        tie = ndtr((tau - m) / sigma) - ndtr((-tau - m) / sigma)
        return win + tie / 2

    def integrand(z):
        tau = d.tie_margin * np.exp(d.tie_margin_sd * z)
        both = half_tie(mu + d.position_bias, tau) + half_tie(mu - d.position_bias, tau)
        return np.exp(-z * z / 2) / np.sqrt(2 * np.pi) * both / 2

    with np.errstate(over="ignore"):  # exp(sd z) -> inf far out: tau = inf is fine
        value, error = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-14,
                                      epsrel=1e-13, limit=500)
    assert error < 1e-11
    return value


@pytest.mark.parametrize("tie_margin_sd", [0.3, 0.5, 1.0, 2.0, 3.0])
def test_quadrature_psi_matches_adaptive_quadrature(tie_margin_sd):
    """Exact to 1e-10 for any spread of the judges' tie margins (the former 96-node
    Gauss-Hermite rule was off by 3e-10 at sd 1, 1.3e-5 at sd 2 and 1.2e-4 at sd 3)."""
    design = replace(FULL, tie_margin_sd=tie_margin_sd)
    psi = population_psi(ABILITIES, design)
    for i, j in [(0, 1), (0, 4), (3, 1), (4, 0), (2, 3)]:
        expected = _quad_psi(ABILITIES[i] - ABILITIES[j], design)
        assert psi[i, j] == pytest.approx(expected, abs=1e-10, rel=0)


def test_quadrature_psi_for_many_models_and_a_wide_margin_spread():
    """30 models, tie_margin_sd = 3: every pair to 1e-10 (spot-checked pairs)."""
    abilities = np.linspace(1.5, -1.5, 30)
    design = replace(FULL, n_models=30, tie_margin=0.5, tie_margin_sd=3.0)
    psi = population_psi(abilities, design)
    for i, j in [(0, 29), (0, 1), (14, 15), (29, 3), (7, 21)]:
        expected = _quad_psi(abilities[i] - abilities[j], design)
        assert psi[i, j] == pytest.approx(expected, abs=1e-10, rel=0)


@pytest.mark.parametrize("design", [SimulationDesign(n_models=5), FULL])
def test_population_psi_is_antisymmetric_and_half_for_equal_abilities(design):
    psi = population_psi(ABILITIES, design)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose((psi + psi.T)[off], 1.0, atol=1e-13)
    assert np.isnan(np.diag(psi)).all()
    flat = population_psi(np.zeros(3), design)
    np.testing.assert_allclose(flat[~np.eye(3, dtype=bool)], 0.5, atol=1e-13)
    # stronger models win more often
    assert np.all(np.diff(psi[0, 1:]) > 0)


def test_closed_form_without_judge_effects_is_the_normal_half_tie_formula():
    d = SimulationDesign(n_models=2)
    sigma = np.sqrt(2 * d.response_sd**2 + 2 * d.judge_sd**2 + d.noise_sd**2)
    mu, tau = 0.4, d.tie_margin
    expected = ndtr((mu - tau) / sigma) + 0.5 * (ndtr((tau - mu) / sigma)
                                                 - ndtr((-tau - mu) / sigma))
    assert population_psi(np.array([0.4, 0.0]), d)[0, 1] == pytest.approx(expected, abs=1e-15)


def test_large_simulation_recovers_population_scores():
    """Scores of a big log with every feature on lie within 4 two-way cluster-robust SEs
    of the exact population scores (for the observed opponent sets)."""
    design = replace(FULL, n_prompts=3000, n_judges=300, comparisons_per_prompt=8)
    sim = simulate_comparisons(design, seed=12, abilities=ABILITIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(sim.log, "prompt+judge")
    truth = sim.population_scores(result.leaderboard.weights)
    z = (result.scores - truth) / result.se
    assert np.all(np.abs(z) < 4), z
    # all allowed pairs are observed here, so the design truth is the estimand
    np.testing.assert_allclose(truth, sim.true_scores, atol=1e-15)


def test_position_bias_shows_in_the_first_slot_win_rate():
    design = replace(SimulationDesign(n_models=2, n_prompts=4000, n_judges=50,
                                      comparisons_per_prompt=4), position_bias=0.5)
    sim = simulate_comparisons(design, seed=3, abilities=np.zeros(2))
    first_wins = sim.log.score.mean()  # model_a is the model shown first
    sigma = np.sqrt(2 * 1.0 + 2 * 0.09 + 0.25)
    expected = ndtr((0.5 - 0.3) / sigma) + 0.5 * (ndtr((0.3 - 0.5) / sigma)
                                                  - ndtr((-0.3 - 0.5) / sigma))
    # SE of a mean of ~16k clustered half-tie scores is ~0.006
    assert first_wins == pytest.approx(expected, abs=0.03)
    assert fit(sim.log).psi[0, 1] == pytest.approx(0.5, abs=0.03)


def test_design_features_unequal_sizes_missing_pairs_and_ties():
    design = replace(FULL, n_models=8, n_prompts=400, n_judges=20, missing_pair_share=0.3)
    sim = simulate_comparisons(design, seed=4)
    log = sim.log
    prompt_sizes = np.bincount(log.axes["prompt"].codes)
    judge_sizes = np.bincount(log.axes["judge"].codes)
    assert prompt_sizes.std() / prompt_sizes.mean() > 0.4
    # Dirichlet(1) workloads vary far more than the multinomial's sqrt(20 / n) ~ 0.06
    assert judge_sizes.std() / judge_sizes.mean() > 0.3
    board = fit(log)
    assert len(board.unobserved_pairs) > 0
    assert len(sim.allowed) < 28 and np.all(sim.allowed[:, 1] > sim.allowed[:, 0])
    assert 0.02 < np.mean(log.score == 0.5) < 0.5
    # each judge's own tie margin: tie rates spread across judges far more than with a
    # common margin (same seed, same workloads)
    def tie_spread(d):
        big_log = simulate_comparisons(replace(d, n_prompts=3000, n_judges=12), seed=4).log
        codes = big_log.axes["judge"].codes
        return np.std(np.bincount(codes, big_log.score == 0.5) / np.bincount(codes))

    assert tie_spread(design) > 2 * tie_spread(replace(design, tie_margin_sd=0.0))


def test_defaults_draw_nothing_extra():
    """New judge features off by default: the same seed gives the same log whether or not
    their zero defaults are spelled out (so seeds of older studies still reproduce)."""
    base = SimulationDesign(n_models=5, n_prompts=60, n_judges=4)
    explicit = replace(base, position_bias=0.0, position_bias_sd=0.0, tie_margin_sd=0.0,
                       judge_size_dispersion=None)
    a, b = simulate_comparisons(base, 9), simulate_comparisons(explicit, 9)
    np.testing.assert_array_equal(a.log.score, b.log.score)
    # a constant position bias is not random either: only the outcomes move
    shifted = simulate_comparisons(replace(base, position_bias=0.4), 9)
    np.testing.assert_array_equal(a.log.model_a, shifted.log.model_a)
    assert np.mean(shifted.log.score) > np.mean(a.log.score)


@pytest.mark.parametrize("field, value", [
    ("response_sd", 0.4), ("judge_sd", 0.8), ("position_bias", 0.3),
    ("position_bias_sd", 0.5), ("noise_sd", 1.2), ("tie_margin", 0.6), ("tie_margin_sd", 0.7)])
def test_cached_truth_is_recomputed_when_any_latent_parameter_changes(field, value):
    """simulate_comparisons caches psi per abilities and latent parameters: with the same
    seed (same abilities) a change of any parameter population_psi reads must give that
    design's psi, bit for bit, not the cached psi of the base design."""
    base = SimulationDesign(n_models=4, n_prompts=10, n_judges=2, tie_margin_sd=0.2)
    first = simulate_comparisons(base, seed=0)
    changed = replace(base, **{field: value})
    second = simulate_comparisons(changed, seed=0)
    np.testing.assert_array_equal(first.abilities, second.abilities)
    np.testing.assert_array_equal(second.true_psi, population_psi(second.abilities, changed))
    assert not np.allclose(np.nan_to_num(first.true_psi), np.nan_to_num(second.true_psi))
