"""The ``peers`` step (scripts/paper/peer_comparison.py): the statements its table makes,
each against an independent computation, and the step on the committed peer outputs.

Oracles: a brute-force row bootstrap of the Bradley-Terry MLE (batched Newton refits,
written here) for "a bootstrap that resamples rows i.i.d. estimates winrate's naive SE";
AlpacaEval's SEM by hand (``std(ddof=1) / sqrt(n)`` of ``preference - 1``) for "the SEM is
the naive SE and, one comparison per prompt, the prompt-clustered SE"; scipy's optimiser on
FastChat's penalised logistic objective, written out from its definition, for "FastChat's
ratings are winrate's BT with the prior N(0, 2 ln^2 10)"; the normal-theory Monte Carlo SE of
an SD for the kurtosis formula.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators import fit
from winrate.io.logs import ComparisonLog
from winrate.settings import Variance

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "scripts" / "paper"
REAL = os.environ.get("WINRATE_DATA")
ELO = 400 / np.log(10)


@pytest.fixture(scope="module")
def peers():
    sys.path.insert(0, str(BUILD))
    try:
        yield importlib.import_module("peer_comparison")
    finally:
        sys.path.remove(str(BUILD))


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return function(*args, **kwargs)


def battle_log(seed: int = 1, n: int = 600, k: int = 4) -> ComparisonLog:
    """Random pairs of ``k`` models with BT outcomes and some ties (0.5)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = expit(np.linspace(-0.8, 0.8, k)[a] - np.linspace(-0.8, 0.8, k)[b])
    u = rng.random(n)
    score = np.where(u < 0.15, 0.5, (u < 0.15 + 0.85 * p).astype(float))
    return ComparisonLog.from_arrays(a, b, score, models=[f"m{i}" for i in range(k)],
                                     prompt=np.arange(n))


def bootstrap_bt_elo(log: ComparisonLog, reps: int, seed: int) -> np.ndarray:
    """Centred half-tie BT MLEs (Elo units) of ``reps`` i.i.d. row resamples: multinomial
    row counts, all refits at once by Newton steps on ``(H + 11'/k) d = grad``."""
    rng = np.random.default_rng(seed)
    n, k = log.n_rows, log.n_models
    weights = rng.multinomial(n, np.full(n, 1 / n), size=reps).astype(float)
    z = np.zeros((n, k))
    z[np.arange(n), log.model_a] += 1
    z[np.arange(n), log.model_b] -= 1
    theta = np.zeros((reps, k))
    for _ in range(30):
        p = expit(theta @ z.T)
        grad = (weights * (log.score - p)) @ z
        hess = np.einsum("bn,ni,nj->bij", weights * p * (1 - p), z, z) + 1 / k
        theta += np.linalg.solve(hess, grad[..., None])[..., 0]
    assert np.abs(grad).max() < 1e-8
    return ELO * (theta - theta.mean(1, keepdims=True))


def test_row_bootstrap_estimates_the_naive_bt_se():
    log = battle_log()
    draws = bootstrap_bt_elo(log, reps=4000, seed=7)
    naive = quiet(analyze, log, model="bt", cluster="none")
    ratio = draws.std(0, ddof=1) / naive.se
    # Monte Carlo SE of an SD from 4,000 draws ~ 1.1%; O(1/n) bootstrap bias on top
    np.testing.assert_allclose(ratio, 1, atol=0.05)
    clustered_by_pair_id = quiet(analyze, log, model="bt", cluster="prompt")  # one row each
    np.testing.assert_allclose(clustered_by_pair_id.se, naive.se, rtol=1e-2)


def test_monte_carlo_se_of_an_sd_is_the_normal_theory_value_for_normal_draws(peers):
    draws = pd.DataFrame(np.random.default_rng(3).normal(size=(200_000, 2)))
    relative = peers.bootstrap_sd_mc_se(draws)
    np.testing.assert_allclose(relative, 1 / np.sqrt(2 * len(draws)), rtol=0.02)


def alpaca_frame(seed: int = 2, n_prompts: int = 40):
    """AlpacaEval-like: models a, b, c vs the baseline once per prompt; preferences in
    [1, 2] with draws written as 0 and 1.5; c lost three judgments (null upstream)."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=n_prompts)  # the baseline answer's quality
    rows = []
    for shift, model in ((0.5, "a"), (0.0, "b"), (-0.4, "c")):
        pref = 1 + expit(shift - shared + rng.normal(scale=0.5, size=n_prompts))
        pref[rng.random(n_prompts) < 0.1] = 1.5
        pref[:2] = 0.0 if model == "b" else pref[:2]
        keep = np.arange(n_prompts) >= (3 if model == "c" else 0)
        rows.append(pd.DataFrame({"model": model, "prompt": np.arange(n_prompts)[keep],
                                  "preference": pref[keep]}))
    frame = pd.concat(rows, ignore_index=True)
    frame["value"] = np.where(frame.preference == 0, 0.5, frame.preference - 1)
    models = ["base", "a", "b", "c"]
    log = ComparisonLog.from_arrays(frame.model.map(models.index).to_numpy(),
                                    np.zeros(len(frame), int), frame.value.to_numpy(),
                                    models=models, prompt=frame.prompt.to_numpy())
    return frame, log


def test_alpaca_sem_is_the_naive_and_the_prompt_clustered_se(peers):
    frame, log = alpaca_frame()
    by_model = frame.groupby("model").value
    sem = (by_model.std(ddof=1) / np.sqrt(by_model.count())).loc[["a", "b", "c"]]
    naive = quiet(analyze, log, baseline="base", cluster="none")
    clustered = quiet(analyze, log, baseline="base", cluster="prompt",
                      variance=Variance(method="sandwich", correction="cr1"))
    assert [str(m) for m in naive.models] == ["a", "b", "c"]
    np.testing.assert_allclose(naive.scores, by_model.mean().loc[["a", "b", "c"]], atol=1e-14)
    np.testing.assert_allclose(naive.se, sem, rtol=1e-12)
    # a model's rows are its clusters: equal SEs, up to CR1's G/(G-1) against the SEM's
    # n/(n-1) for c, which has 3 prompts fewer than the G = 40 of the fit
    n = by_model.count().loc[["a", "b", "c"]].to_numpy()
    g = frame.prompt.nunique()
    np.testing.assert_allclose(clustered.se, sem * np.sqrt(g / (g - 1) / (n / (n - 1))),
                               rtol=1e-12)
    # the SE of a difference of two complete models is the SEM of the per-prompt differences
    values = frame.pivot(index="prompt", columns="model", values="value")
    diff = values.a - values.b
    cov = pd.DataFrame(clustered.cov[:2, :2], index=["a", "b"], columns=["a", "b"])
    expected = diff.std(ddof=1) / np.sqrt(len(diff)) / np.sqrt(sem.a**2 + sem.b**2)
    assert expected < 0.95  # the shared baseline answer correlates the two win rates
    assert peers.difference_se_ratio(cov, sem) == pytest.approx(expected, rel=1e-12)


def test_fastchat_penalty_is_winrates_bt_prior(peers):
    """FastChat 0.2.36's ``compute_elo_mle_with_tie``: scikit-learn's default-penalised
    logistic regression (``0.5 ||w||^2 + C sum log-loss``, C = 1) on the battles written
    twice, a tie once as a win of A and once as a loss, ``x = +-ln 10``, rating
    ``400 w + 1000``. Minimised here by scipy from that definition."""
    log = battle_log(seed=5, n=300)
    a = np.concatenate([log.model_a, log.model_a])
    b = np.concatenate([log.model_b, log.model_b])
    s = log.score
    y = np.concatenate([(s >= 0.5).astype(float), (s == 1).astype(float)])

    def objective(w):
        eta = np.log(10) * (w[a] - w[b])
        loss = -(y * log_expit(eta) + (1 - y) * log_expit(-eta)).sum() + 0.5 * w @ w
        resid = y - expit(eta)
        grad = w - np.log(10) * (np.bincount(a, resid, log.n_models)
                                 - np.bincount(b, resid, log.n_models))
        return loss, grad

    w = minimize(objective, np.zeros(log.n_models), jac=True, method="BFGS",
                 options={"gtol": 1e-10}).x
    ours = quiet(fit, log, "bt", prior=peers.FASTCHAT_PRIOR)
    np.testing.assert_allclose(ours.scores, 400 * w + 1000, atol=1e-6)
    unpenalised = quiet(fit, log, "bt")
    assert np.abs(unpenalised.scores - ours.scores).max() > 0.1  # the prior matters here


@pytest.mark.skipif(not REAL or not (ROOT / "paper" / "peers" / "manifest.json").exists(),
                    reason="WINRATE_DATA or the committed paper/peers outputs missing")
def test_step_reads_the_committed_peer_outputs(peers, tmp_path):
    from common import Paper

    paper = Paper(tmp_path)
    peers.peers(paper)
    table = pd.read_csv(tmp_path / "tables" / "peers.csv")
    assert len(table) == len(peers.RUNS)
    num = {k: float(v.replace(",", "")) for k, v in paper.numbers.items()
           if k.startswith("peers_") and not k.endswith("_version")}
    mc = num["peers_fastchat_mc_pct"] / 100
    for data in ("qlora", "prd"):  # bootstrap = naive SE within Monte Carlo error
        assert abs(num[f"peers_fastchat_{data}_se_ratio"] - 1) < 3 * mc
        assert num[f"peers_fastchat_{data}_penalised_maxdiff"] < (
            num[f"peers_fastchat_{data}_maxdiff"])
        assert num[f"peers_fastchat_{data}_clustered_ratio"] > 1.5
    assert num["peers_fastchat_max_z"] < 4
    for data in ("qlora", "prd", "arena"):  # arena-rank's ridge: just below winrate's
        assert 0.9 < num[f"peers_arenarank_{data}_se_ratio_min"]
        assert num[f"peers_arenarank_{data}_se_ratio_max"] < 1
    assert num["peers_alpaca_se_maxdiff"] < 1e-8 and num["peers_alpaca_maxdiff"] < 1e-8
    assert num["peers_alpaca_clustered_maxrel"] < 1e-4
    assert num["peers_alpaca_diff_ratio"] < 1
