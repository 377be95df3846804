"""The exploratory report (winrate.eda): numbers against independent computations.

Synthetic logs always; the real datasets when ``WINRATE_DATA`` points at the data
directory (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_frequency import _brute_force, _meat
from winrate import eda
from winrate.cli import main as cli_main
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.logs import ComparisonLog
from winrate.settings import Variance

ROOT = Path(__file__).resolve().parents[1]
DATA = os.environ.get("WINRATE_DATA")
needs_data = pytest.mark.skipif(
    not DATA or not Path(DATA).is_dir(),
    reason="real-data test: set WINRATE_DATA to the data directory (see the data README)",
)


def _frame(seed: int = 3, n: int = 600, k: int = 5, prompts: int = 40, judges: int = 6):
    """Random crossed log with ties, uneven clusters and a category above the prompt."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    prompt = rng.integers(0, prompts, n)
    return pd.DataFrame({
        "model_a": a, "model_b": b, "score": rng.choice([0.0, 0.5, 1.0], n, p=[.4, .2, .4]),
        "prompt": prompt, "judge": rng.integers(0, judges, n), "category": prompt % 4,
    })


def _log(frame: pd.DataFrame, judge=True) -> ComparisonLog:
    axes = {"prompt": frame["prompt"], "category": frame["category"]}
    if judge is True:
        axes["judge"] = frame["judge"]
    elif judge is not None:
        axes["judge"] = judge
    return ComparisonLog.from_arrays(frame["model_a"], frame["model_b"], frame["score"],
                                     **axes)


def _explore(log, cluster=eda.DEFAULT_CLUSTERINGS, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return eda.explore(log, cluster, **kwargs)


def _direct_icc(values: np.ndarray, groups: np.ndarray) -> float:
    """Textbook one-way ANOVA ICC with unequal group sizes (Donner 1986, eq. 2.1)."""
    frame = pd.DataFrame({"x": values, "g": groups})
    stats = frame.groupby("g")["x"].agg(["size", "mean"])
    n, k = len(frame), len(stats)
    msb = (stats["size"] * (stats["mean"] - frame["x"].mean()) ** 2).sum() / (k - 1)
    msw = ((frame["x"] - frame["g"].map(stats["mean"])) ** 2).sum() / (n - k)
    n0 = (n - (stats["size"] ** 2).sum() / n) / (k - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


@pytest.mark.parametrize("seed", range(4))
def test_every_column_is_the_analysis_of_its_clustering_on_thin_logs(seed):
    """One-way SEs the report takes from a multiway analysis get the same small-sample
    floor and not-estimable blanks as analysing that clustering alone (a thin log of 30
    rows over 8 models has single-outcome pairs and models seen by one judge)."""
    log = _log(_frame(seed, n=30, k=8, prompts=12, judges=3))
    report = _explore(log)
    for name, result in report.clusterings.items():
        alone = _analyze_quietly(log, name)
        np.testing.assert_allclose(result.se, alone.se, rtol=1e-10, err_msg=name)
        np.testing.assert_allclose(result.deff, alone.deff, rtol=1e-10, err_msg=name)
    assert np.isnan(report.clusterings["judge"].se).any() or seed != 0


def _analyze_quietly(log, cluster):
    from winrate.analysis import analyze

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, cluster=cluster, variance=Variance("sandwich"))


def test_per_clustering_ses_match_brute_force():
    frame = _frame()
    report = _explore(_log(frame), ("prompt", "judge", "prompt+judge", "category"))
    scores, _, u = _brute_force(frame.rename(columns={}), 5)
    pair = np.minimum(frame.model_a, frame.model_b) * 5 + np.maximum(frame.model_a, frame.model_b)
    n_pair = pair.map(pair.value_counts()).to_numpy()
    ddof = n_pair / (n_pair - 1)  # each pair its own stratum (Cochran 1977, eq. 5.6)
    naive = (u * ddof[:, None]).T @ u
    np.testing.assert_allclose(report.score, scores, atol=1e-12)
    np.testing.assert_allclose(report.se_naive, np.sqrt(np.diag(naive)), rtol=1e-9)

    def cr1(col):
        g = frame[col].nunique()
        return g / (g - 1) * _meat(u, frame[col].to_numpy())

    both = frame["prompt"] * 100 + frame["judge"]
    g_both = both.nunique()
    two_way = cr1("prompt") + cr1("judge") - g_both / (g_both - 1) * _meat(u, both.to_numpy())
    expected = {"prompt": cr1("prompt"), "judge": cr1("judge"), "category": cr1("category"),
                "prompt+judge": two_way}
    for name, cov in expected.items():
        result = report.clusterings[name]
        assert result.identified and result.reason is None
        np.testing.assert_allclose(result.se, np.sqrt(np.diag(cov)), rtol=1e-9, err_msg=name)
        np.testing.assert_allclose(result.inflation, np.sqrt(np.diag(cov) / np.diag(naive)),
                                   rtol=1e-9, err_msg=name)
    n_a = np.bincount(np.r_[frame["model_a"], frame["model_b"]], minlength=5)
    np.testing.assert_allclose(report.n, n_a)
    np.testing.assert_allclose(report.effective_n,
                               n_a * np.diag(naive) / np.diag(two_way), rtol=1e-9)
    assert report.main == "prompt+judge"


@pytest.mark.parametrize("options", [{}, {"baseline": "0"}], ids=["winrate", "baseline"])
def test_prompts_per_model_without_a_prompt_only_clustering(options):
    """With only the two-way clustering asked for, each model's prompt count and m come
    from the fit's comparison counts and the prompt codes (not a prompt axis summary):
    both against pandas."""
    frame = _star_frame() if options else _frame(seed=6)
    report = _explore(_log(frame), ("judge+prompt",), **options)
    per_prompt = pd.concat([frame[["model_a", "prompt"]].set_axis(["m", "p"], axis=1),
                            frame[["model_b", "prompt"]].set_axis(["m", "p"], axis=1)])
    names = [int(m) for m in report.models]
    prompts = per_prompt.groupby("m")["p"].nunique().loc[names].to_numpy()
    np.testing.assert_allclose(report.prompts, prompts, rtol=1e-12)
    m = per_prompt.groupby("m").size().loc[names].to_numpy() / prompts
    assert report.structure["m_prompt"]["median"] == pytest.approx(np.median(m))


def test_shared_response_icc_and_structure_against_pandas():
    frame = _frame(seed=5)
    report = _explore(_log(frame), ("prompt", "judge"))
    _, psi, _ = _brute_force(frame, 5)
    for model in range(5):
        for axis in ("prompt", "judge"):
            mine = frame[(frame["model_a"] == model) | (frame["model_b"] == model)]
            opponent = np.where(mine["model_a"] == model, mine["model_b"], mine["model_a"])
            own = np.where(mine["model_a"] == model, mine["score"], 1 - mine["score"])
            centred = own - psi[model, opponent]
            expected = _direct_icc(centred, mine[axis].to_numpy())
            np.testing.assert_allclose(report.axes[axis].shared_icc[model], expected,
                                       rtol=1e-9, err_msg=f"{axis} model {model}")
    per_prompt = pd.concat([frame[["model_a", "prompt"]].set_axis(["m", "p"], axis=1),
                            frame[["model_b", "prompt"]].set_axis(["m", "p"], axis=1)])
    prompts = per_prompt.groupby("m")["p"].nunique().to_numpy()
    np.testing.assert_allclose(report.prompts, prompts)
    m = per_prompt.groupby("m").size().to_numpy() / prompts
    s = report.structure
    assert s["m_prompt"]["median"] == pytest.approx(np.median(m))
    assert s["tie_share"] == pytest.approx((frame["score"] == 0.5).mean())
    assert (s["n_prompts"], s["n_judges"], s["n_comparisons"]) == (40, 6, len(frame))
    assert s["axes"]["category"]["n_clusters"] == 4
    assert ["prompt", "category"] in s["nested"]
    assert ["judge", "prompt"] not in s["nested"] and ["prompt", "judge"] not in s["nested"]


def test_kish_check_and_icc_paradox_on_correctness_data():
    """MMLU-like: each model answers each prompt right or wrong, every pair compared.

    A model's comparisons on a prompt share its answer x_a. With independent answers of
    variance v = p (1 - p), the comparisons (a, b) and (a, c) correlate by
    v_a / sqrt((v_a + v_b)(v_a + v_c)), about 1/2, while the pair-level ICC, pooling pairs
    that share no model, is small; Kish's sqrt(1 + (m - 1) rho) then predicts the measured
    inflation.
    """
    rng = np.random.default_rng(11)
    k, prompts = 8, 500
    accuracy = np.linspace(0.3, 0.8, k)
    right = rng.random((prompts, k)) < accuracy
    ia, ib = np.triu_indices(k, 1)
    p = np.repeat(np.arange(prompts), len(ia))
    a, b = np.tile(ia, prompts), np.tile(ib, prompts)
    score = (1.0 + right[p, a] - right[p, b]) / 2
    log = ComparisonLog.from_arrays(a, b, score, prompt=p)
    report = _explore(log, ("prompt",))
    check = report.axes["prompt"]
    v = accuracy * (1 - accuracy)
    for model in range(k):
        others = np.delete(v, model)
        corr = v[model] / np.sqrt(np.outer(v[model] + others, v[model] + others))
        theory = corr[~np.eye(k - 1, dtype=bool)].mean()
        assert abs(check.shared_icc[model] - theory) < 0.07, model
    assert check.pair_icc < 0.2 * np.median(check.shared_icc)
    np.testing.assert_allclose(check.m, k - 1)
    np.testing.assert_allclose(check.predicted, check.measured, rtol=0.05)
    assert np.median(check.measured) == pytest.approx(np.sqrt(1 + (k - 2) * 0.5), rel=0.1)


def test_single_judge_and_missing_axis_are_flagged_not_computed():
    frame = _frame()
    one_judge = _log(frame, judge=np.zeros(len(frame), int))
    report = _explore(one_judge)
    for name in ("judge", "prompt+judge"):
        result = report.clusterings[name]
        assert not result.identified and "same judge" in result.reason
        assert np.isnan(result.se).all()
        assert name in [n.axis for n in report.notes.only("clustering-not-identified")]
    assert report.clusterings["prompt"].identified and report.main == "prompt"
    assert "judge" not in report.axes
    text = eda.format_report(report)
    assert "judge: not identified" in text and "SE judge" not in text
    no_judge = _explore(_log(frame, judge=None))
    assert "no 'judge' axis" in no_judge.clusterings["judge"].reason


def test_no_identified_clustering_still_reports_naive():
    frame = _frame()
    log = ComparisonLog.from_arrays(frame["model_a"], frame["model_b"], frame["score"])
    report = _explore(log)
    assert report.main is None and not report.axes
    assert np.isfinite(report.se_naive).all() and np.isnan(report.effective_n).all()
    assert report.structure["n_prompts"] is None
    eda.format_report(report)
    json.dumps(eda.to_dict(report), allow_nan=False)


def test_json_document_follows_the_schema(tmp_path):
    frame = _frame()
    report = _explore(_log(frame, judge=np.zeros(len(frame), int)),
                      ("prompt", "category", "judge", "prompt+judge"))
    path = tmp_path / "eda.json"
    eda.write_json(report, path)
    doc = json.loads(path.read_text())
    json.dumps(doc, allow_nan=False)
    assert doc["schema"] == eda.SCHEMA
    for key in ("dataset", "settings", "structure", "models", "n", "prompts", "score",
                "se_naive", "clusterings", "axes", "summary", "notes", "warnings"):
        assert key in doc and key in eda.__doc__
    assert doc["clusterings"]["judge"]["identified"] is False
    assert doc["clusterings"]["judge"]["se"] == [None] * 5
    prompt = doc["clusterings"]["prompt"]
    np.testing.assert_allclose(prompt["se"], report.clusterings["prompt"].se)
    assert prompt["inflation_median"] == pytest.approx(
        np.median(report.clusterings["prompt"].inflation))
    axis = doc["axes"]["prompt"]
    for key in ("pair_icc", "m", "rho", "shared_icc", "predicted", "measured"):
        assert key in axis
    assert doc["summary"]["main"] == "prompt"


def test_bad_clusterings_and_unknown_dataset():
    with pytest.raises(WinrateInputError, match="must name axes"):
        eda.explore(_log(_frame()), ("none",))
    assert cli_main(["eda", "--dataset", "no_such_data"]) == 2


# --------------------------------------------------------------------------- real data


@needs_data
def test_real_llmfao_and_pandalm_structure_and_cli(tmp_path, capsys):
    path = tmp_path / "llmfao.json"
    assert cli_main(["eda", "--dataset", "llmfao", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Dataset llmfao" in out and "Summary" in out and "Warnings" in out
    doc = json.loads(path.read_text())
    s = doc["structure"]
    assert (s["n_models"], s["n_prompts"], s["n_judges"]) == (59, 13, 126)
    assert {(n["code"], n["axis"]) for n in doc["notes"]} >= {("few-clusters", "prompt")}
    assert [n["text"] for n in doc["notes"]] == doc["warnings"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        pandalm = eda.explore_dataset("pandalm")
    assert (pandalm.structure["n_models"], pandalm.structure["n_prompts"],
            pandalm.structure["n_judges"]) == (5, 170, 5)
    assert "verdicts-dropped" in pandalm.notes.codes  # the loader's warning is kept
    assert all(r.identified for r in pandalm.clusterings.values())


@needs_data
def test_real_mmlu_pro_script_subset(tmp_path):
    """The script end to end on four models: the single judge is flagged, Kish holds."""
    path = tmp_path / "mmlu.json"
    models = ["Llama-2-7b-hf", "Mistral-7B-v0.1", "Yi-34B", "gemma-7b"]
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "eda_our_data.py"),
                           "--dataset", "mmlu_pro", "--models", *models, "--json", str(path)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "WINRATE_DATA": DATA})
    assert done.returncode == 0, done.stderr
    doc = json.loads(path.read_text())
    assert doc["structure"]["n_judges"] == 1 and doc["structure"]["n_prompts"] > 12000
    assert not doc["clusterings"]["judge"]["identified"]
    assert not doc["clusterings"]["prompt+judge"]["identified"]
    assert ["prompt", "src"] in doc["structure"]["nested"]
    prompt = doc["axes"]["prompt"]
    np.testing.assert_allclose(prompt["predicted"], prompt["measured"], rtol=0.1)
    assert "judge: not identified" in done.stdout
    assert {(n["code"], n["axis"]) for n in doc["notes"]} >= {
        ("clustering-not-identified", "judge"), ("clustering-not-identified", "prompt+judge")}


def _star_frame(seed: int = 8, prompts: int = 50, judges: int = 5, k: int = 4):
    """Every model 1..k answers every prompt once against the baseline 0, judged by a
    random judge; the baseline answer's quality is shared within a prompt."""
    rng = np.random.default_rng(seed)
    a = np.repeat(np.arange(1, k + 1), prompts)
    prompt = np.tile(np.arange(prompts), k)
    eta = 0.3 * a - 0.7 - rng.normal(0, 1.2, prompts)[prompt]
    score = (rng.random(a.size) < 1 / (1 + np.exp(-eta))).astype(float)
    score[rng.random(a.size) < 0.1] = 0.5
    return pd.DataFrame({"model_a": a, "model_b": 0, "score": score, "prompt": prompt,
                         "judge": rng.integers(0, judges, a.size), "category": prompt % 4})


@pytest.mark.parametrize("frame, options", [
    (_frame(), {"model": "bt"}),
    (_frame(), {"model": "bt", "ties": "davidson", "anchor": "2=1200"}),
    (_star_frame(), {"baseline": "0"}),
    (_star_frame(), {"model": "bt", "baseline": "0"}),
], ids=["bt", "bt-davidson-anchor", "baseline", "bt-baseline"])
def test_estimator_options_report_what_analyze_reports(frame, options):
    """``explore(..., model=..., baseline=...)``: the models (the baseline is not one), their
    scores, naive and per-clustering SEs, inflations and effective n are those of
    ``analyze`` with the same options; n, prompts and m per model are counted by pandas."""
    from winrate.analysis import analyze

    log = _log(frame)
    report = _explore(log, ("prompt", "judge", "prompt+judge"), **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        runs = {spec: analyze(log, cluster=spec, variance=Variance("sandwich"), **options)
                for spec in ("prompt", "judge", "prompt+judge")}
    first = runs["prompt"]
    assert list(map(str, report.models)) == list(map(str, first.models))
    assert "0" not in list(map(str, report.models)) or "baseline" not in options
    np.testing.assert_allclose(report.score, first.scores, rtol=1e-12)
    np.testing.assert_allclose(report.se_naive, first.se_naive, rtol=1e-10)
    for spec, run in runs.items():
        result = report.clusterings[spec]
        np.testing.assert_allclose(result.se, run.se, rtol=1e-9)
        with np.errstate(invalid="ignore"):  # the anchor: 0 / 0
            np.testing.assert_allclose(result.inflation, run.se / run.se_naive, rtol=1e-9)
    np.testing.assert_allclose(report.effective_n, runs["prompt+judge"].effective_n,
                               rtol=1e-9)
    long = pd.concat([frame.assign(model=frame["model_a"]), frame.assign(model=frame["model_b"])])
    names = [int(m) for m in report.models]
    count = long.groupby("model").size().loc[names].to_numpy()
    prompts = long.groupby("model")["prompt"].nunique().loc[names].to_numpy()
    np.testing.assert_array_equal(report.n, count)
    np.testing.assert_allclose(report.prompts, prompts, rtol=1e-12)
    np.testing.assert_allclose(report.axes["prompt"].m, count / prompts, rtol=1e-12)
    table = eda.model_table(report)
    scale = 1.0 if options.get("model") == "bt" else 100.0
    best = int(np.nanargmax(first.scores))
    assert table.iloc[0]["score"] == pytest.approx(scale * first.scores[best])


def test_bt_table_note_names_the_estimator():
    report = _explore(_log(_frame()), ("prompt",), model="bt")
    assert eda.format_table(report).splitlines()[-1].startswith(
        "Bradley-Terry ratings and SEs in Elo points;")
