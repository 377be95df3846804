"""Dominant-cluster diagnostic (largest cluster's share of the clustered variance) and its
warning in ``analyze``, against brute-force loops and a Monte Carlo of Cochran's C."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from tests.conftest import random_log
from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.settings import Variance
from winrate.variance.diagnostics import DOMINANT_SHARE, largest_cluster_share


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_largest_share_matches_loops_over_rows(seed):
    log = random_log(seed)
    board = fit(log)
    codes = log.axes["prompt"].codes
    dense = board.influence.toarray()
    totals = {}
    for r in range(log.n_rows):  # brute force: add each row's influence to its cluster
        totals[codes[r]] = totals.get(codes[r], 0.0) + dense[r]
    squared = np.array([totals[g] ** 2 for g in sorted(totals)])
    labels = np.array(sorted(totals))
    share, cluster = largest_cluster_share(board.influence, codes)
    for a in range(log.n_models):
        assert share[a] == pytest.approx(squared[:, a].max() / squared[:, a].sum(), rel=1e-12)
        assert cluster[a] == labels[np.argmax(squared[:, a])]


def test_zero_variance_model_gives_nan():
    # model 2 only plays model 0 and always loses: its centred scores are all zero
    log = ComparisonLog.from_arrays([0, 1, 0, 1, 2, 2], [1, 0, 1, 0, 0, 0],
                                    [1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
                                    prompt=[0, 0, 1, 1, 0, 1])
    share, cluster = largest_cluster_share(fit(log).influence, log.axes["prompt"].codes)
    assert np.isnan(share[2]) and cluster[2] == -1
    assert np.all((share[:2] > 0) & (share[:2] <= 1))


def test_one_half_is_beyond_chance_and_leaves_under_four_effective_clusters():
    # Monte Carlo of Cochran's C: with G = 30 equal normal clusters the largest share
    # exceeds 1/2 with probability G P(F(1, G - 1) > G - 1) = 2.6e-4
    rng = np.random.default_rng(7)
    chi2 = rng.standard_normal((200_000, 30)) ** 2
    rate = np.mean(chi2.max(axis=1) / chi2.sum(axis=1) > DOMINANT_SHARE)
    assert rate == pytest.approx(30 * stats.f.sf(29, 1, 29), abs=4 * np.sqrt(2.6e-4 / 2e5))
    # a share above 1/2 leaves 1 / sum s^2 (Satterthwaite df) below 4, whatever the rest
    rest = rng.dirichlet(np.full(200, 0.3), 1000) * (1 - 0.51)
    shares = np.column_stack([np.full(1000, 0.51), rest])
    assert np.all(1 / (shares**2).sum(axis=1) < 4)


def _quiet(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


def _dominant_notes(result):
    return result.notes.only("dominant-cluster")


def test_analyze_warns_when_one_prompt_dominates():
    sim = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=120, n_judges=3), seed=3)
    log = sim.log
    assert not _dominant_notes(_quiet(log, cluster="prompt"))  # 120 similar prompts
    prompt = log.axes["prompt"].codes
    heavy = np.where(prompt == prompt[0], 60.0, 1.0)  # one prompt worth 60 copies of itself
    weighted = ComparisonLog.from_arrays(log.model_a, log.model_b, log.score,
                                         models=log.models, frequency=heavy,
                                         prompt=prompt, judge=log.axes["judge"].codes)
    result = _quiet(weighted, cluster="prompt")
    notes = _dominant_notes(result)
    assert len(notes) == 1
    share = result.axes["prompt"].largest_share
    assert np.nanmax(share) > DOMINANT_SHARE
    worst = int(np.nanargmax(share))
    assert notes[0].axis == "prompt" and notes[0].models == (str(result.models[worst]),)
    assert result.axes["prompt"].largest_cluster[worst] == prompt[0]
    assert f"up to {np.nanmax(share):.0%} for {result.models[worst]} (prompt {prompt[0]})" in (
        notes[0])


def test_no_dominance_warning_on_few_clusters():
    # 3 judges: the few-cluster warning covers it; shares are large by construction
    sim = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=60, n_judges=3), seed=1)
    result = _quiet(sim.log, cluster="judge")
    assert np.nanmin(result.axes["judge"].largest_share) >= 1 / 3
    assert not _dominant_notes(result)
    assert [note.axis for note in result.notes.only("few-clusters")] == ["judge"]


@pytest.mark.parametrize("options", [{"model": "bt"}, {"model": "bt", "anchor": "1=900"},
                                     {"baseline": "0"}])
def test_largest_share_of_other_estimators_matches_loops(options):
    """Bradley-Terry: the share of each model's score component (the summands of the
    estimating equation); a baseline design: of each contestant's influence. Both against
    a loop over rows of the dense rows."""
    log = random_log(1, drop_pair=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        # the CR1 sandwich named: auto may take CR2, whose meat scales the rows
        result = analyze(log, cluster="prompt", variance=Variance("sandwich"), **options)
    log = result.log  # a baseline design analyses the rows against the baseline
    board = result.leaderboard
    dense = board.influence.toarray()[:, board.codes]
    codes = log.axes["prompt"].codes
    totals = np.zeros((codes.max() + 1, dense.shape[1]))
    for r in range(log.n_rows):
        totals[codes[r]] += dense[r]
    squared = totals**2
    np.testing.assert_allclose(result.axes["prompt"].largest_share,
                               squared.max(axis=0) / squared.sum(axis=0), rtol=1e-10)
    assert (result.axes["prompt"].largest_cluster
            == log.axes["prompt"].labels[squared.argmax(axis=0)]).all()


def test_dense_and_sparse_influence_give_the_same_shares():
    """The numba kernel (sparse influence) and the indicator product (dense) agree."""
    log = random_log(2)
    board = fit(log)
    codes = log.axes["judge"].codes
    sparse = largest_cluster_share(board.influence, codes)
    dense = largest_cluster_share(board.influence.toarray(), codes)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12)
    np.testing.assert_array_equal(sparse[1], dense[1])
