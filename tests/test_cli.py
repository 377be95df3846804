"""The `winrate leaderboard` command: table, JSON schema, CSV and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from winrate.analysis import analyze
from winrate.cli import main
from winrate.errors import WinrateWarning
from winrate.io.logs import read_comparisons
from winrate.settings import Variance

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
    assert "warning [few-clusters]: " in printed.err
    doc = json.loads(out.read_text())
    assert [n["axis"] for n in doc["notes"] if n["code"] == "few-clusters"] == ["judge"]
    assert REQUIRED_KEYS <= set(doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        expected = analyze(read_comparisons(log_file), "prompt+judge",
                           variance=Variance(correction="none"))
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
    from winrate.report.leaderboard import json_safe

    doc = json_safe({"a": np.float64("nan"), "b": {"c": [1.0, np.inf]}, "d": np.arange(2)})
    assert doc == {"a": None, "b": {"c": [1.0, None]}, "d": [0, 1]}
    json.dumps(doc, allow_nan=False)


def test_analyze_reuses_a_fitted_board(log_file):
    from winrate.estimators.win_rate_kernels import fit

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


# ------------------------------------------- printed Bradley-Terry report vs statsmodels


def _bt_log_frame(seed: int = 7, n: int = 900, k: int = 4) -> pd.DataFrame:
    """Decisive BT comparisons (no ties) with a style covariate and shared prompt effects."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    prompt = rng.integers(0, 45, n)
    length = rng.normal(1.0, 2.0, n)
    eta = (np.linspace(-0.8, 0.8, k)[a] - np.linspace(-0.8, 0.8, k)[b] + 0.3 * length
           + rng.normal(0, 0.8, 45)[prompt])
    win = rng.random(n) < 1 / (1 + np.exp(-eta))
    return pd.DataFrame({"prompt_id": prompt, "model_a": [f"m{i}" for i in a],
                         "model_b": [f"m{i}" for i in b], "outcome": np.where(win, "a", "b"),
                         "length": length})


def _statsmodels_bt(frame: pd.DataFrame, k: int = 4) -> dict:
    """Independent oracle: the binomial GLM on the difference design (model m0 dropped as
    reference) plus the population-standardised covariate; Elo = 400/ln 10 (theta - mean)
    + 1000. Clustered CR1 = statsmodels' CR0 times G/(G-1); naive CR1 = HC0 times
    n/(n-1) (the conventions of tests/test_bradley_terry.py)."""
    import statsmodels.api as sm

    n = len(frame)
    a = frame["model_a"].str[1:].astype(int).to_numpy()
    b = frame["model_b"].str[1:].astype(int).to_numpy()
    z = np.zeros((n, k))
    z[np.arange(n), a] += 1.0
    z[np.arange(n), b] -= 1.0
    x = frame["length"].to_numpy()
    exog = np.column_stack([z[:, 1:], (x - x.mean()) / x.std()])
    y = (frame["outcome"] == "a").to_numpy(float)
    glm = sm.GLM(y, exog, family=sm.families.Binomial())
    groups = frame["prompt_id"].to_numpy()
    g = len(np.unique(groups))
    clustered = glm.fit(cov_type="cluster", cov_kwds={"groups": groups,
                                                      "use_correction": False})
    hc0 = glm.fit(cov_type="HC0")
    elo = 400 / np.log(10)
    to_elo = np.zeros((k + 1, k))  # (centred ratings, coefficient) from (theta_1.., beta)
    to_elo[:k, :k - 1] = elo * (np.eye(k) - 1 / k)[:, 1:]
    to_elo[k, k - 1] = 1.0
    est = to_elo @ clustered.params
    est[:k] += 1000.0
    cov = to_elo @ np.asarray(clustered.cov_params()) @ to_elo.T * g / (g - 1)
    cov_naive = to_elo @ np.asarray(hc0.cov_params()) @ to_elo.T * n / (n - 1)
    return {"estimate": est, "se": np.sqrt(np.diag(cov)),
            "se_naive": np.sqrt(np.diag(cov_naive)), "cov": cov}


_NUMBER = r"-?\d[\d,]*\.?\d*"


def test_printed_bt_table_and_json_equal_statsmodels(tmp_path, capsys):
    """Every number of ``leaderboard --model bt --covariates`` (the Elo table in Elo points,
    its interval, inflation and count columns, the coefficient block and the JSON) against
    the independent statsmodels computation."""
    from scipy.stats import norm

    frame = _bt_log_frame()
    path, out = tmp_path / "bt.csv", tmp_path / "bt.json"
    frame.to_csv(path, index=False)
    assert main(["leaderboard", str(path), "--model", "bt", "--cluster", "prompt",
                 "--covariates", "length", "--ranks", "--json", str(out),
                 "--method", "sandwich"]) == 0
    printed = capsys.readouterr().out
    oracle = _statsmodels_bt(frame)
    z = norm.ppf(0.975)
    doc = json.loads(out.read_text())
    order = [doc["models"].index(f"m{i}") for i in range(4)]
    np.testing.assert_allclose(np.array(doc["score"])[order], oracle["estimate"][:4],
                               atol=1e-6)
    np.testing.assert_allclose(np.array(doc["se"])[order], oracle["se"][:4], rtol=1e-6)
    np.testing.assert_allclose(np.array(doc["se_naive"])[order], oracle["se_naive"][:4],
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(doc["cov"])[np.ix_(order, order)],
                               oracle["cov"][:4, :4], rtol=1e-6, atol=1e-9)
    coef = doc["coefficients"]
    assert coef["names"] == ["length"]
    assert coef["estimate"][0] == pytest.approx(oracle["estimate"][4], abs=1e-7)
    assert coef["se"][0] == pytest.approx(oracle["se"][4], rel=1e-6)
    assert coef["ci_low"][0] == pytest.approx(oracle["estimate"][4] - z * oracle["se"][4],
                                              abs=1e-6)

    rows = re.findall(rf"^\s*(\d)\s+(m\d)\s+({_NUMBER})\s+({_NUMBER})\s+({_NUMBER})\s+"
                      rf"\[\s*({_NUMBER}),\s+({_NUMBER})\]\s+({_NUMBER})\s+({_NUMBER})\s+"
                      rf"({_NUMBER})\s+(\d)-(\d)$", printed, re.M)
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]
    for _, model, *cells, rank_low, rank_high in rows:
        i = int(model[1:])
        est, se, naive = oracle["estimate"][i], oracle["se"][i], oracle["se_naive"][i]
        expected = [est, naive, se, est - z * se, est + z * se]
        np.testing.assert_allclose([float(c) for c in cells[:5]], expected, atol=0.051)
        assert float(cells[5]) == pytest.approx(se / naive, abs=0.0051)
        j = doc["models"].index(model)
        assert float(cells[6]) == pytest.approx(doc["effective_clusters"][j], abs=0.051)
        assert int(cells[7].replace(",", "")) == (frame[["model_a", "model_b"]] == model).sum(
            axis=None)
        assert (int(rank_low), int(rank_high)) == (doc["rank_low"][j], doc["rank_high"][j])
    assert [r[1] for r in rows] == [f"m{i}" for i in np.argsort(-oracle["estimate"][:4])]
    line = re.search(rf"^length\s+({_NUMBER})\s+({_NUMBER})\s+({_NUMBER})\s+"
                     rf"\[\s*({_NUMBER}),\s+({_NUMBER})\]$", printed, re.M)
    est, se = oracle["estimate"][4], oracle["se"][4]
    np.testing.assert_allclose([float(v) for v in line.groups()],
                               [est, oracle["se_naive"][4], se, est - z * se, est + z * se],
                               atol=5.1e-5)


def test_coefficient_block_columns_line_up(tmp_path, capsys):
    """Each header of the coefficient block ends where its column's values end, also when
    the covariate name is shorter than the word 'coefficient'."""
    path = tmp_path / "bt.csv"
    _bt_log_frame().to_csv(path, index=False)
    assert main(["leaderboard", str(path), "--model", "bt", "--cluster", "prompt",
                 "--covariates", "length"]) == 0
    block = capsys.readouterr().out.split("\ncoefficient")[1]
    header, row = ("coefficient" + block).splitlines()[:2]
    assert len(header) == len(row)
    for word in ("estimate", "SE naive", "SE  "):
        end = header.index(word) + len(word.rstrip())
        assert row[end - 1] != " " and (end == len(row) or row[end] == " "), (header, row)


@pytest.mark.parametrize("command", ["leaderboard", "eda"])
def test_dataset_help_names_every_bundled_dataset(command, capsys):
    from winrate.io.datasets import DATASET_NAMES

    with pytest.raises(SystemExit):
        main([command, "--help"])
    options = " ".join(capsys.readouterr().out.split("options:")[1].split())
    listed = re.search(r"--dataset DATASET (.*?) --", options).group(1)
    assert all(name in listed for name in DATASET_NAMES), listed


# ------------------------------------------------ the data directory, inside and outside make


def test_the_project_data_folder_is_the_makefiles_default(tmp_path):
    """``../shared/data`` beside a checkout (a folder with pyproject.toml), as the Makefile
    exports it; nothing for an installed package or a missing folder."""
    from winrate.io.download import project_data_dir

    checkout = tmp_path / "project"
    checkout.mkdir()
    assert project_data_dir(checkout) is None  # no shared folder
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert project_data_dir(checkout) is None  # not a checkout
    (checkout / "pyproject.toml").write_text("")
    assert project_data_dir(checkout) == tmp_path / "shared" / "data"
    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    assert "SHARED_DATA := $(abspath ../shared/data)" in makefile


def test_the_search_order_without_and_with_winrate_data(tmp_path, monkeypatch):
    from winrate.io import download

    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(download, "project_data_dir", lambda root=None: tmp_path / "shared")
    monkeypatch.delenv("WINRATE_DATA", raising=False)
    assert [d for d, _ in download.search_dirs()] == [tmp_path / "shared", tmp_path / "cache"]
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "env"))
    assert [d for d, _ in download.search_dirs()] == [tmp_path / "env", tmp_path / "cache"]


@pytest.mark.skipif(not (Path(__file__).parents[2] / "shared" / "data" / "mmlu_pro").is_dir(),
                    reason="needs the project's ../shared/data")
def test_demo_outside_make_finds_what_make_demo_finds(tmp_path):
    """Run by hand from another folder, without WINRATE_DATA: the real demo, not the
    simulated fallback (``make demo`` exports ../shared/data)."""
    env = {k: v for k, v in os.environ.items() if k != "WINRATE_DATA"}
    env["WINRATE_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-m", "winrate.cli", "demo"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "MMLU-Pro (TIGER-AI-Lab, 5-shot)" in done.stdout
    assert "data not found" not in done.stdout


@pytest.mark.parametrize("flag", ["--score-col", "--question-col", "--model-col"])
def test_a_scores_column_flag_without_format_scores_is_an_error(log_file, flag, capsys):
    """It would be ignored: the log is read with its own columns."""
    assert main(["leaderboard", str(log_file), flag, "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} applies to --format scores only" in err


@pytest.mark.parametrize("argv", [[], ["--cluster", "no_such_column"]])
def test_the_collector_is_given_back_as_found(log_file, argv, capsys):
    """The leaderboard pauses Python's cyclic collector while its modules import and
    freezes their objects during the analysis (``cli._imports_frozen``); after the command,
    also one that fails on its input, the collector runs again with nothing frozen, and a
    collector the caller had turned off stays off."""
    import gc

    assert gc.isenabled() and gc.get_freeze_count() == 0
    main(["leaderboard", str(log_file), *argv])
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        main(["leaderboard", str(log_file), *argv])
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
    capsys.readouterr()
