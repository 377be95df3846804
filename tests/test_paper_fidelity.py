"""The paper's LC-fidelity step (scripts/paper/fidelity.py): its table quotes the published
leaderboard's LC figures as they are in the data's CSV (read here with pandas alone), and
the published LC SE is smaller than the raw win rate's SE for every model that has one,
which the text states."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = os.environ.get("WINRATE_DATA")
LEADERBOARD = "alpaca_eval/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
pytestmark = pytest.mark.skipif(not REAL or not (Path(REAL) / LEADERBOARD).is_file(),
                                reason="WINRATE_DATA lacks AlpacaEval's leaderboard")


def test_table_quotes_the_published_lc_figures():
    published = pd.read_csv(Path(REAL) / LEADERBOARD, index_col=0)
    with_se = published[published["lc_standard_error"].notna()]
    table = pd.read_csv(ROOT / "paper" / "tables" / "lc_standard_errors.csv", index_col=0)
    assert set(table.index) <= set(with_se.index)
    for model, row in table.iterrows():
        assert row["LC, published"] == pytest.approx(
            with_se.loc[model, "length_controlled_winrate"], abs=0.005)
        assert row["LC SE, published"] == pytest.approx(
            with_se.loc[model, "lc_standard_error"], abs=0.005)
        assert row["raw win-rate SE, published"] == pytest.approx(
            with_se.loc[model, "standard_error"], abs=0.005)
    assert (table["LC SE, published"] < table["raw win-rate SE, published"]).all()
