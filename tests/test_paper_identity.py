"""scripts/paper/identity.py: the per-question-eval identity and Kish in balanced designs,
each against an independent computation (brute-force loops, a large simulation) and
winrate's own analysis."""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "paper"))

import identity  # noqa: E402

import winrate  # noqa: E402
from winrate.eda import explore  # noqa: E402
from winrate.errors import WinrateWarning  # noqa: E402
from winrate.variance.diagnostics import anova_icc  # noqa: E402

REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL, "mmlu_pro").is_dir(),
                                reason="WINRATE_DATA lacks MMLU-Pro")
needs_real_prd = pytest.mark.skipif(not REAL or not Path(REAL, "prd").is_dir(),
                                    reason="WINRATE_DATA lacks PRD")


# ------------------------------------------------------------------ A: the identity


def _correctness(rng, q: int, k: int) -> np.ndarray:
    """0/1 correctness with a question difficulty shared by all models and model skills."""
    difficulty = rng.normal(size=(q, 1))
    skill = rng.normal(scale=0.7, size=(1, k))
    return (skill - difficulty + rng.normal(size=(q, k)) > 0).astype(float)


def _brute_force(correct: np.ndarray):
    """Win rate, CR1-by-question and per-pair-stratified naive variances by loops over
    questions and pairs (s_qab = (C_qa - C_qb + 1) / 2, uniform opponent weights)."""
    q, k = correct.shape
    score, clustered, naive = np.zeros(k), np.zeros(k), np.zeros(k)
    for a in range(k):
        t = np.zeros(q)
        for b in range(k):
            if b == a:
                continue
            s = (correct[:, a] - correct[:, b] + 1) / 2
            psi = s.mean()
            score[a] += psi / (k - 1)
            t += (s - psi) / ((k - 1) * q)
            naive[a] += ((s - psi) ** 2).sum() * q / (q - 1) / ((k - 1) * q) ** 2
        clustered[a] = q / (q - 1) * (t ** 2).sum()
    return score, clustered, naive


def test_closed_forms_match_brute_force_and_winrate():
    correct = _correctness(np.random.default_rng(1), 150, 6)
    score, clustered, naive = _brute_force(correct)
    closed_clustered, closed_naive = identity.closed_form_variances(correct)
    np.testing.assert_allclose(identity.affine_win_rate(correct), score, atol=1e-14)
    np.testing.assert_allclose(closed_clustered, clustered, rtol=1e-12)
    np.testing.assert_allclose(closed_naive, naive, rtol=1e-12)
    rho = identity.opponent_difference_correlation(correct)
    np.testing.assert_allclose(1 + (6 - 2) * rho, clustered / naive, rtol=1e-12)
    table = identity._table(correct, np.array([f"m{i}" for i in range(6)]),
                            np.arange(150).astype(str))
    w_score, w_se, w_naive, w_infl = identity.measured(table)
    np.testing.assert_allclose(w_score, score, atol=1e-14)
    np.testing.assert_allclose(w_se**2, clustered, rtol=1e-10)
    np.testing.assert_allclose(w_naive**2, naive, rtol=1e-10)
    np.testing.assert_allclose(w_infl, np.sqrt(clustered / naive), rtol=1e-10)


@pytest.mark.parametrize("common", [0.0, 0.3, 0.9])
def test_exchangeable_covariance_gives_exactly_k_over_two(common):
    """v I + c (11' - I): DEFF = K/2 for every c (the algebra of the module doc), and the
    covariance form agrees with the closed forms' ratio on data."""
    k = 7
    s = np.full((k, k), common * 0.2) + np.eye(k) * 0.2 * (1 - common)
    np.testing.assert_allclose(identity.design_effect_of_covariance(s), k / 2, rtol=1e-12)
    correct = _correctness(np.random.default_rng(2), 300, k)
    clustered, naive = identity.closed_form_variances(correct)
    cov = np.cov(correct, rowvar=False)
    np.testing.assert_allclose(identity.design_effect_of_covariance(cov), clustered / naive,
                               rtol=1e-12)
    even = identity.common_correlation(cov)  # own variances kept, correlations evened
    np.testing.assert_allclose(np.diag(even), np.diag(cov), rtol=1e-12)
    sd = np.sqrt(np.diag(cov))
    off = (even / np.outer(sd, sd))[np.triu_indices(k, 1)]
    expected = (cov / np.outer(sd, sd))[np.triu_indices(k, 1)].mean()
    np.testing.assert_allclose(off, expected, rtol=1e-12)


def test_exchangeable_correctness_gives_sqrt_half_k_whatever_the_correlation():
    """Equal skills and a strong common difficulty (correctness correlated across models):
    rho_a -> 1/2 and the inflation -> sqrt(K/2) (large simulation, Monte Carlo error
    about 0.003)."""
    rng = np.random.default_rng(7)
    k, q = 10, 100_000
    difficulty = rng.normal(scale=1.5, size=(q, 1))
    correct = (rng.normal(size=(q, k)) - difficulty > 0).astype(float)
    assert np.corrcoef(correct, rowvar=False)[0, 1] > 0.3
    rho = identity.opponent_difference_correlation(correct)
    np.testing.assert_allclose(rho, 0.5, atol=0.015)
    clustered, naive = identity.closed_form_variances(correct)
    np.testing.assert_allclose(np.sqrt(clustered / naive), identity.exchangeable_inflation(k),
                               rtol=0.02)


@needs_real
def test_identity_holds_on_mmlu_pro():
    from winrate.io.datasets import read_scores

    checks = identity.identity_checks(read_scores("mmlu_pro"))
    assert checks["complete"] + 1706 == checks["questions"]  # questions with a missing answer
    assert checks["score_dev_complete"] < 1e-12
    assert checks["se_rel_dev_complete"] < 1e-10
    assert checks["naive_rel_dev_complete"] < 1e-10
    assert checks["score_dev_rest"] < 1e-3 < checks["score_dev_all"] < 2e-2


# ------------------------------------------------------------------ B: Kish


def _textbook(values: np.ndarray, codes: np.ndarray):
    """Loops: D0 = (cluster sums about the grand mean)^2 / SST, the one-way ANOVA ICC of a
    balanced design, eta^2 = SSB / SST."""
    grand = values.mean()
    groups = [values[codes == g] for g in np.unique(codes)]
    g, m = len(groups), len(groups[0])
    ssb = sum(len(x) * (x.mean() - grand) ** 2 for x in groups)
    ssw = sum(((x - x.mean()) ** 2).sum() for x in groups)
    sst = ((values - grand) ** 2).sum()
    msb, msw = ssb / (g - 1), ssw / (g * (m - 1))
    d0 = sum((x - grand).sum() ** 2 for x in groups) / sst
    return d0, (msb - msw) / (msb + (m - 1) * msw), ssb / sst


@pytest.mark.parametrize("seed", range(5))
def test_kish_with_anova_icc_is_the_design_effect_in_a_balanced_design(seed):
    rng = np.random.default_rng(seed)
    g, m = int(rng.integers(3, 20)), int(rng.integers(2, 15))
    codes = np.repeat(np.arange(g), m)
    values = rng.normal(scale=rng.uniform(0, 2), size=g)[codes] + rng.standard_t(3, g * m)
    d0, icc, eta2 = _textbook(values, codes)
    assert anova_icc(values, codes) == pytest.approx(icc, rel=1e-10)
    kish = 1 + (m - 1) * icc
    assert kish / d0 == pytest.approx(identity.kish_over_measured(eta2, g), rel=1e-10)
    assert 1 - 1e-12 <= kish / d0 <= g / (g - 1) + 1e-12


def test_kish_fails_in_an_unbalanced_design():
    """Ten clusters of 2 and one of 30 with random cluster effects: Kish's formula with the
    mean cluster size and the ANOVA ICC misses the design effect in every draw, in either
    direction, by up to a factor of about 2.5."""
    sizes = np.array([2] * 10 + [30])
    codes = np.repeat(np.arange(sizes.size), sizes)
    ratios = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        values = rng.normal(size=sizes.size)[codes] + rng.normal(size=codes.size)
        grand = values.mean()
        d0 = (np.bincount(codes, values - grand) ** 2).sum() / ((values - grand) ** 2).sum()
        ratios.append((1 + (sizes.mean() - 1) * anova_icc(values, codes)) / d0)
    ratios = np.array(ratios)
    assert np.all((ratios < 1) | (ratios > sizes.size / (sizes.size - 1)))
    assert ratios.min() < 0.95 and ratios.max() > 2


def _log(rng, pairs_per_prompt):
    """A comparison log with prompt effects: per prompt the listed model pairs once each."""
    rows = []
    for prompt, pairs in enumerate(pairs_per_prompt):
        shift = rng.normal(scale=1.0, size=5)  # the prompt's effect on each model
        for a, b in pairs:
            p = 1 / (1 + np.exp(-(shift[a] - shift[b])))
            rows.append((prompt, f"m{a}", f"m{b}", "a" if rng.random() < p else "b"))
    frame = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "outcome"])
    return winrate.read_comparisons(frame)


def _kish_over_measured(log) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        check = explore(log, ("prompt",)).axes["prompt"]
    return (check.predicted / check.measured) ** 2


def test_eda_kish_check_is_an_identity_on_a_balanced_log_and_not_on_an_unbalanced_one():
    rng = np.random.default_rng(11)
    every = list(itertools.combinations(range(5), 2))
    g = 40
    balanced = _kish_over_measured(_log(rng, [every] * g))
    assert np.all((balanced >= 1 - 1e-9) & (balanced <= g / (g - 1) + 1e-9))
    uneven = [every if i % 4 == 0 else [every[int(rng.integers(10))]] for i in range(g)]
    unbalanced = _kish_over_measured(_log(rng, uneven))
    assert np.any((unbalanced < 0.95) | (unbalanced > 1.05))


@needs_real
def test_implied_coverage_is_withheld_where_the_se_is_weakly_identified():
    from real_data import DATASETS, analyse, weakly_identified

    spec = {d.name: d for d in DATASETS}
    llmfao, mmlu = analyse(spec["llmfao"]), analyse(spec["mmlu_pro"])
    dominant = "one cluster carries most of a model's variance"
    assert weakly_identified(llmfao, "prompt") == (
        "< 30 clusters; most pairs in one cluster; " + dominant)
    # 126 judges and no single-judge pairs, but gpt-4 carries most of some models' variance
    assert weakly_identified(llmfao, "judge") == dominant
    assert weakly_identified(mmlu, "prompt") is None  # no question above 0.001 of a model
    assert weakly_identified(mmlu, "category") == "< 30 clusters; " + dominant
    assert weakly_identified(mmlu, "src") == dominant  # 91 subjects, 4 models dominated


def test_two_paths_to_mmlu_pro_inflation_agree():
    """The committed numbers reach MMLU-Pro's question-clustered inflation by two code
    paths: the pairwise comparison log through winrate's EDA (real_data: mmlu_*, mmlusub_*)
    and the per-question score table through winrate.analyze (identity: identity_*). The
    text quotes both, so they must agree to the printed digits."""
    import json

    numbers = json.loads((ROOT / "paper" / "numbers.json").read_text())
    assert numbers["identity_infl_k"] == numbers["mmlu_infl_prompt"]
    assert numbers["identity_sub_infl_min"] == numbers["mmlusub_infl_min"]
    assert numbers["identity_sub_infl_max"] == numbers["mmlusub_infl_max"]
    assert numbers["identity_sub_k"] == numbers["mmlusub_size"]


# ------------------------------------------------------- B: the Kish table, per model

TABLES = ROOT / "paper" / "tables"


def _kish_committed() -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(TABLES / "kish_models.csv"),
            pd.read_csv(TABLES / "kish.csv", dtype=str, keep_default_na=False))


def test_kish_per_model_values_recompute_from_m_and_icc():
    """Every per-model Kish prediction is sqrt(1 + (m - 1) rho) (1 where m = 1), and the
    squared ratio is (Kish / measured)^2, to the digits written."""
    per_model, _ = _kish_committed()
    kish = np.where(per_model.m == 1, 1.0,
                    np.sqrt(np.clip(1 + (per_model.m - 1) * per_model.icc, 0, None)))
    np.testing.assert_allclose(per_model.kish, kish, rtol=2e-5)
    np.testing.assert_allclose(per_model.ratio_squared,
                               (per_model.kish / per_model.measured) ** 2, rtol=2e-5)


def test_kish_table_columns_are_statistics_of_the_per_model_values():
    """Each printed cell of the Kish table recomputes from the per-model rows: the median
    and range of the squared ratio, the models more than 10% from 1, the pair-size CVs."""
    per_model, table = _kish_committed()
    assert len(table) == per_model.groupby(["dataset", "axis"]).ngroups
    for _, row in table.iterrows():
        group = per_model[(per_model.dataset.str.split(" \\(").str[0]
                           .str.replace(" Vicuna-80", "") == row["dataset"])
                          & (per_model.axis == row["axis"])]
        r = group.ratio_squared.to_numpy()
        assert row["models"] == str(len(group))
        assert row["(Kish / measured)^2 median [range]"] == (
            f"{np.median(r):.2f} [{r.min():.2f}, {r.max():.2f}]")
        assert row["models off by > 10%"] == str(int((np.abs(r - 1) > 0.10).sum()))
        cv = group.pair_cv
        assert row["pair-size CV median [max]"] == f"{cv.median():.2f} [{cv.max():.2f}]"


def test_kish_matches_exactly_the_prd_models_whose_pairs_have_equal_sizes():
    """PRD by prompt: the models whose pairs all have one size are matched within
    G / (G - 1); the ones with pairs of 240 beside pairs of 880 and more are not."""
    per_model, _ = _kish_committed()
    prd = per_model[(per_model.key == "prd") & (per_model.axis == "prompt")]
    equal = prd.pair_min == prd.pair_max
    g = prd.clusters.iloc[0]
    assert equal.sum() >= 4 and (~equal).sum() >= 3
    assert np.all(np.abs(prd.ratio_squared[equal] - 1) <= 1 / (g - 1))
    assert np.all(prd.ratio_squared[~equal] > 1.3)


@needs_real_prd
def test_kish_table_per_model_values_against_a_brute_force_recomputation():
    """PRD by prompt, from the raw log with pandas only: the pair sizes, each model's
    comparisons per prompt m_a, and the measured inflation, CR1 over naive (win rate
    influence w_ab (s - psi_ab) / n_ab; naive: each pair's n / (n - 1) times the sum of
    squares), against the committed per-model values."""
    from winrate.io.datasets import read_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        log = read_dataset("prd", progress=False)
    names = np.asarray(log.models).astype(str)
    weight = np.ones(log.n_rows) if log.frequency is None else log.frequency
    rows = pd.DataFrame({"a": names[log.model_a], "b": names[log.model_b],
                         "s": log.score, "w": weight,
                         "prompt": log.axes["prompt"].codes})
    rows = pd.concat([rows, rows.assign(a=rows.b, b=rows.a, s=1 - rows.s)])
    committed = pd.read_csv(TABLES / "kish_models.csv")
    committed = committed[(committed.key == "prd") & (committed.axis == "prompt")]
    g = rows.prompt.nunique()
    for _, expect in committed.iterrows():
        own = rows[rows.a == expect.model].copy()
        n = own.groupby("b").w.sum()
        assert n.min() == expect.pair_min and n.max() == expect.pair_max
        per_prompt = own.groupby("prompt").w.sum()
        assert per_prompt.mean() == pytest.approx(expect.m, rel=1e-9)
        psi = (own.s * own.w).groupby(own.b).sum() / n
        k = len(n)
        own["u"] = own.w * (own.s - own.b.map(psi)) / own.b.map(n) / k
        clustered = g / (g - 1) * (own.groupby("prompt").u.sum() ** 2).sum()
        own["u2"] = own.w * (own.s - own.b.map(psi)) ** 2 / own.b.map(n) ** 2 / k**2
        naive = (own.groupby("b").u2.sum() * n / (n - 1)).sum()
        assert np.sqrt(clustered / naive) == pytest.approx(expect.measured, rel=1e-4)
