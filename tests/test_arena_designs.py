"""Baseline designs and the incomplete-design rule (synthetic), and the arena-style acceptance
checks on real data: AlpacaEval 2's published numbers through ``analyze(..., baseline=...)``
and prompt-clustered Bradley-Terry intervals against a cluster bootstrap of the refit."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from winrate.analysis import analyze
from winrate.cli import main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.datasets import read_dataset
from winrate.io.logs import ComparisonLog
from winrate.settings import Joint, MonteCarlo, Variance

REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL).is_dir(),
                                reason="WINRATE_DATA is not set: real-data tests skipped")


def baseline_log(seed: int = 0, n_prompts: int = 200, k: int = 4, shared: float = 1.0):
    """Every model answers every prompt once against the baseline (code 0). The baseline's
    answer quality ``q_p`` is shared by all comparisons of a prompt."""
    rng = np.random.default_rng(seed)
    skill = np.linspace(-0.5, 0.5, k)
    base_quality = shared * rng.normal(size=n_prompts)
    a = np.repeat(np.arange(1, k + 1), n_prompts)
    prompt = np.tile(np.arange(n_prompts), k)
    eta = skill[a - 1] - base_quality[prompt] + rng.normal(scale=0.3, size=a.size)
    score = (rng.random(a.size) < 1 / (1 + np.exp(-eta))).astype(float)
    return ComparisonLog.from_arrays(a, np.zeros_like(a), score,
                                     models=["base", *[f"m{i}" for i in range(1, k + 1)]],
                                     prompt=prompt)


def quiet_analyze(log, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, **kwargs)


def test_baseline_scores_are_win_rates_against_it_and_it_is_not_ranked():
    log = baseline_log()
    result = quiet_analyze(log, baseline="base", cluster="prompt")
    assert list(result.models) == ["m1", "m2", "m3", "m4"]
    by_hand = [log.score[log.model_a == m].mean() for m in range(1, 5)]
    np.testing.assert_allclose(result.scores, by_hand, rtol=1e-12)
    n = 200
    sem = [log.score[log.model_a == m].std(ddof=1) / np.sqrt(n) for m in range(1, 5)]
    np.testing.assert_allclose(result.se_naive, sem, rtol=1e-12)  # CR1 naive = SEM
    assert "incomplete-design" not in result.notes.codes
    assert result.leaderboard.unobserved_pairs == []


def test_baseline_differences_are_narrower_under_a_shared_baseline_answer():
    """Both models face the same baseline answer on a prompt, so their errors are positively
    correlated and the difference is more precise than independent errors would say."""
    result = quiet_analyze(baseline_log(shared=1.5), baseline="base", cluster="prompt",
                           joint=Joint(pairwise=True))
    cov = result.cov
    var_diff = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    naive = result.cov_naive
    assert cov[0, 1] > 0.2 * np.sqrt(cov[0, 0] * cov[1, 1])
    assert var_diff < 0.8 * (naive[0, 0] + naive[1, 1] - 2 * naive[0, 1])
    pw = result.joint.pairwise
    first = (pw.i == 0) & (pw.j == 1)
    np.testing.assert_allclose(pw.se[first], np.sqrt(var_diff), rtol=1e-10)


def test_bt_baseline_is_the_reference_at_the_anchor_rating():
    log = baseline_log()
    result = quiet_analyze(log, model="bt", baseline="base", cluster="prompt")
    assert "base" not in list(result.models)
    p = np.array([log.score[log.model_a == m].mean() for m in range(1, 5)])
    # a star design is saturated: theta_a - theta_base = logit(p_a)
    np.testing.assert_allclose(result.scores, 1000 + 400 / np.log(10) * np.log(p / (1 - p)),
                               rtol=1e-9)
    anchored = quiet_analyze(log, model="bt", baseline="base", anchor="base=1200",
                             cluster="prompt")
    np.testing.assert_allclose(anchored.scores, result.scores + 200, rtol=1e-12)
    np.testing.assert_allclose(anchored.cov, result.cov, rtol=1e-9, atol=1e-9)


def test_baseline_errors_name_the_model():
    log = baseline_log()
    with pytest.raises(WinrateInputError, match="'nobody' is not a model"):
        analyze(log, baseline="nobody")
    with pytest.raises(WinrateInputError, match=r"anchor 'nobody' is not a model .*m1"):
        analyze(log, model="bt", anchor="nobody=1000")
    a = np.array([1, 2, 1])
    b = np.array([0, 1, 0])
    thin = ComparisonLog.from_arrays(a, b, [1, 0, 0], models=["base", "x", "y"])
    with pytest.raises(WinrateInputError, match=r"never were: \['y'\]"):
        analyze(thin, baseline="base", cluster="none")


def test_incomplete_design_recommends_bradley_terry():
    """Round robin among 6 models with 4 of 15 pairs removed (27% > 10%)."""
    rng = np.random.default_rng(3)
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)][4:]
    a = np.repeat([p[0] for p in pairs], 40)
    b = np.repeat([p[1] for p in pairs], 40)
    log = ComparisonLog.from_arrays(a, b, rng.choice([0.0, 0.5, 1.0], a.size))
    (note,) = quiet_analyze(log, cluster="none").notes.only("incomplete-design")
    assert note.severity == "warning"  # above 10% missing: not comparable, use Bradley-Terry
    assert set(note.models) == {"0", "1", "2", "3", "4"}  # the 4 pairs removed: 0-1 ... 0-4
    assert "4 of 15 model pairs (27%)" in note
    bt = quiet_analyze(log, cluster="none", model="bt")
    assert "incomplete-design" not in bt.notes.codes


def test_cli_bt_prints_elo_and_coefficients(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 600
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    frame = pd.DataFrame({
        "prompt_id": rng.integers(0, 60, n), "model_a": [f"m{i}" for i in a],
        "model_b": [f"m{i}" for i in b], "outcome": rng.choice(["a", "b", "tie"], n),
        "length": rng.normal(size=n)})
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    out_json = tmp_path / "out.json"
    code = main(["leaderboard", str(path), "--model", "bt", "--cluster", "prompt",
                 "--covariates", "length", "--anchor", "m0=1100", "--json", str(out_json)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "Bradley-Terry, Elo scale" in printed and "anchored at m0 = 1100" in printed
    assert "length" in printed.split("coefficient")[1]
    import json

    doc = json.loads(out_json.read_text())
    assert doc["settings"]["estimator"] == "bt" and doc["settings"]["scale"]["name"] == "elo"
    assert doc["settings"]["anchor"] == {"model": "m0", "rating": 1100.0}
    assert doc["score"][doc["models"].index("m0")] == pytest.approx(1100.0)
    assert doc["coefficients"]["names"] == ["length"]
    assert doc["coefficients"]["names_all"] == [*doc["models"], "length"]
    cov_all = np.array(doc["coefficients"]["cov_all"])
    np.testing.assert_allclose(cov_all[4, 4], doc["coefficients"]["se"][0] ** 2, rtol=1e-12)
    assert len(doc["cov"]) == 4 and doc["se_naive"] and doc["se"]


def test_cli_rejects_bt_options_for_the_win_rate(tmp_path, capsys):
    path = tmp_path / "log.csv"
    pd.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "x"], "outcome": ["a", "b"]}).to_csv(
        path, index=False)
    assert main(["leaderboard", str(path), "--cluster", "none", "--anchor", "x=1000"]) == 2
    assert "option 'anchor' applies to bt, rao-kupper, not to model 'winrate'" in (
        capsys.readouterr().err)


# ----------------------------------------------------------------------------- real data


def quiet_dataset(name, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return read_dataset(name, progress=False, **options)


@needs_real
@pytest.mark.parametrize("discrete", [False, True])
def test_alpaca_eval_baseline_reproduces_the_published_leaderboard(discrete, alpaca_eval_log):
    """``--baseline gpt4_1106_preview``: scores equal the published ``win_rate`` (weighted
    preference) or ``discrete_win_rate``, and the naive SE equals ``standard_error`` (the SEM
    of the weighted preference), for every model of the bundled leaderboard CSV."""
    log = alpaca_eval_log(discrete)
    result = quiet_analyze(log, baseline="gpt4_1106_preview", cluster="prompt")
    published = pd.read_csv(Path(REAL) / "alpaca_eval"
                            / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", index_col=0)
    ours = pd.DataFrame({"score": 100 * result.scores, "se_naive": 100 * result.se_naive,
                         "se": 100 * result.se}, index=[str(m) for m in result.models])
    common = ours.index.intersection(published.index)
    assert len(common) == 56
    column = "discrete_win_rate" if discrete else "win_rate"
    np.testing.assert_allclose(ours.loc[common, "score"], published.loc[common, column],
                               rtol=0, atol=1e-8)
    if not discrete:
        np.testing.assert_allclose(ours.loc[common, "se_naive"],
                                   published.loc[common, "standard_error"], rtol=0, atol=1e-8)
    # one comparison per model per prompt: clustering by prompt leaves each model's own SE
    # unchanged (its rows are its clusters) up to G/(G-1) vs n_a/(n_a-1) for the 3 models
    # with a failed judgment; it is the covariance across models that grows
    np.testing.assert_allclose(ours["se"], ours["se_naive"], rtol=1e-5)
    assert np.median(result.cov[np.triu_indices(len(result.models), 1)]) > 0


@needs_real
@pytest.mark.parametrize("name", ["qlora", "prd"])
def test_bt_prompt_clustered_intervals_agree_with_a_cluster_bootstrap(name):
    """Prompt-clustered BT sandwich SEs vs the SD of 999 cluster-bootstrap refits: equal
    within Monte Carlo error (the SE of a bootstrap SD with B draws is about SE/sqrt(2B),
    2.2%) plus the sandwich's own O(1/G) bias with G = 80 prompts (CR1 vs bootstrap)."""
    log = quiet_dataset(name)
    sandwich = quiet_analyze(log, model="bt", cluster="prompt")
    boot = quiet_analyze(log, model="bt", cluster="prompt", progress=False,
                         variance=Variance("bootstrap", bootstrap_reps=999),
                         monte_carlo=MonteCarlo(seed=11))
    ratio = boot.se / sandwich.se
    assert boot.method == "cluster bootstrap"
    assert np.all(np.abs(ratio - 1) < 0.12), ratio
    assert abs(np.median(ratio) - 1) < 0.06, ratio
