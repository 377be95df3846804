"""The `winrate leaderboard` command: table, JSON schema, CSV and exit codes."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from winrate.analysis import analyze
from winrate.cli import main
from winrate.data import read_comparisons
from winrate.errors import WinrateWarning

REQUIRED_KEYS = {"models", "score", "se", "se_naive", "ci_low", "ci_high", "cov", "axes",
                 "warnings", "n_comparisons", "settings"}


@pytest.fixture(scope="module")
def log_file(simulated_log_file):
    return simulated_log_file


def test_leaderboard_json_matches_library(log_file, tmp_path, capsys):
    out = tmp_path / "out.json"
    table = tmp_path / "out.csv"
    code = main(["leaderboard", str(log_file), "--cluster", "prompt+judge", "--json", str(out),
                 "--csv", str(table), "--correction", "none"])
    assert code == 0
    printed = capsys.readouterr()
    assert "SE naive" in printed.out and "warning:" not in printed.out
    assert "warning: axis 'judge' has only 4 clusters" in printed.err
    doc = json.loads(out.read_text())
    assert REQUIRED_KEYS <= set(doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        expected = analyze(read_comparisons(log_file), "prompt+judge", correction="none")
    assert doc["models"] == [str(m) for m in expected.models]
    np.testing.assert_allclose(doc["score"], expected.scores)
    np.testing.assert_allclose(np.array(doc["cov"]), expected.cov)
    assert doc["axes"]["judge"]["n_clusters"] == 4
    assert doc["settings"]["correction"] == "none"
    ranked = pd.read_csv(table)
    assert list(ranked["score"]) == sorted(expected.scores, reverse=True)


def test_custom_columns_and_extra_axis(log_file, tmp_path, capsys):
    frame = pd.read_csv(log_file).rename(columns={"prompt_id": "q", "outcome": "winner"})
    frame["topic"] = frame["q"] % 7
    path = tmp_path / "custom.jsonl"
    frame.to_json(path, orient="records", lines=True)
    out = tmp_path / "custom.json"
    assert main(["leaderboard", str(path), "--prompt-col", "q", "--outcome-col", "winner",
                 "--cluster", "topic", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["axes"]["topic"]["n_clusters"] == 7


@pytest.mark.parametrize("argv, message", [
    (["leaderboard", "missing.csv"], "not found"),
    (["leaderboard", "{log}", "--cluster", "topic"], "not found"),
    (["leaderboard", "{log}", "--alpha", "1.5"], "alpha"),
    (["leaderboard"], "INPUT"),
])
def test_bad_input_exits_2_with_one_line(log_file, capsys, argv, message):
    argv = [a.format(log=log_file) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("winrate leaderboard: error:")


def test_demo_falls_back_to_simulated_log_without_data(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path))
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "MMLU-Pro data not found" in out and "clustered by prompt + judge" in out


def test_json_safe_recurses_and_drops_nan():
    from winrate.report import json_safe

    doc = json_safe({"a": np.float64("nan"), "b": {"c": [1.0, np.inf]}, "d": np.arange(2)})
    assert doc == {"a": None, "b": {"c": [1.0, None]}, "d": [0, 1]}
    json.dumps(doc, allow_nan=False)


def test_analyze_reuses_a_fitted_board(log_file):
    from winrate.leaderboard import fit

    log = read_comparisons(log_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        refit = analyze(log, "prompt+judge", weights="count")
        reused = analyze(log, "prompt+judge", weights="count", board=fit(log, "count"))
    np.testing.assert_array_equal(reused.cov, refit.cov)
    np.testing.assert_array_equal(reused.scores, refit.scores)


@pytest.mark.parametrize("argv", [["eda", "--dataset", "pandalm"],
                                  ["leaderboard", "--dataset", "llmfao"]])
def test_missing_data_exits_2_with_where_it_looked(argv, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WINRATE_DATA_MIRROR", "http://127.0.0.1:9")  # closed port: no network
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Looked in" in err and str(tmp_path / "data") in err
