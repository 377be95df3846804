"""Bradley-Terry with a covariate when auto gives each model its own t df (few effective
clusters and a jackknife too costly to run: CR1 with t on each model's G* - 1): the
covariate's interval takes the smallest model df (the joint reference), instead of
broadcasting K model df against its coefficients (a crash found by issue 36's
confirmatory study on AlpacaEval's design, 805 prompts x 45,875 rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import t

import winrate
from winrate.variance import method_choice


def _styled_log(seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 900
    a = rng.integers(0, 6, n)
    b = (a + rng.integers(1, 6, n)) % 6
    style = rng.normal(size=n)
    win = rng.random(n) < 1 / (1 + np.exp(-(0.3 * (b - a) + 0.5 * style)))
    return pd.DataFrame({"prompt_id": [f"p{i}" for i in rng.integers(0, 40, n)],
                         "model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                         "outcome": np.where(win, "a", "b"), "style_length": style})


def test_covariate_interval_takes_the_smallest_model_df(monkeypatch):
    monkeypatch.setattr(method_choice, "JACKKNIFE_MAX_ROW_REFITS", 0)  # no jackknife
    log = winrate.read_comparisons(_styled_log(), feature_cols=("style_length",))
    run = winrate.analyze(log, model="bt", cluster="prompt", covariates=("style_length",))
    df = np.asarray(run.settings["df"], float)
    assert run.method == "sandwich" and df.size == len(run.models)
    coef = run.coefficients
    q = t.ppf(0.975, np.nanmin(df))
    np.testing.assert_allclose(coef.high - coef.low, 2 * q * coef.se, rtol=1e-12)
