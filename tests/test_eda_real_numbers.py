"""Real-data numbers of the EDA pinned by an independent recomputation from the raw files.

MMLU-Pro: the slim files are read here with plain ``gzip`` + ``json`` (not through
:mod:`winrate.io.datasets`); scores, naive SEs and SEs clustered by question are then computed
from first principles with plain loops:

* a record is correct when ``pred`` is not null and equals the record's own ``answer``;
  on every question both models answered, ``s_r`` = 1 (a right, b wrong), 0 (the reverse)
  or 1/2 (tie);
* ``psi_ab`` = mean of ``s_r`` over the pair's rows, ``S_a = sum_b w_ab psi_ab`` with the
  uniform weights ``w_ab = 1 / |opponents of a|``;
* influence of row r of pair (a, b): ``u_r = w (s_r - psi_ab) / n_ab`` for a and ``-u_r``
  for b (``w_ab = w_ba`` here: every pair is observed);
* naive variance ``n / (n - 1) sum_r u_r^2`` (CR1, n rows), clustered variance
  ``G / (G - 1) sum_q (sum_{r on q} u_r)^2`` (CR1, G questions).

These are compared with ``winrate.analysis.analyze(..., cluster='prompt')`` and the EDA
report to 1e-10. PandaLM: the GPT-3.5 and PandaLM-7B verdicts per label, counted in the raw
JSON, against the loaded log. Needs ``WINRATE_DATA``; otherwise skipped.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import os
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from winrate.analysis import analyze
from winrate.eda import explore
from winrate.errors import WinrateWarning
from winrate.io import datasets
from winrate.io.logs import read_comparisons

REAL = os.environ.get("WINRATE_DATA")
pytestmark = pytest.mark.skipif(
    not REAL or not Path(REAL).is_dir(),
    reason="WINRATE_DATA is not set (or not a directory): real-data EDA numbers not checked",
)
# one partial model (DeepSeek answered 10,351 of 12,032 questions), strong and weak ones
MODELS = ["DeepSeek-Coder-V2", "Llama-2-7b-hf", "gemini-1.5-pro-002", "mathstral-7B"]


def _raw_correct(model: str) -> dict[int, bool]:
    path = Path(REAL) / "mmlu_pro" / f"model_outputs_{model}_5shots.slim.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = json.load(fh)
    out = {}
    for r in records:
        if isinstance(r, dict):
            assert r["question_id"] not in out
            out[r["question_id"]] = r["pred"] is not None and r["pred"] == r["answer"]
    return out


@pytest.fixture(scope="module")
def by_hand():
    """Scores, naive and question-clustered SEs, tie share: plain loops over raw files."""
    correct = {m: _raw_correct(m) for m in MODELS}
    rows = []  # (a, b, question, s)
    for a, b in itertools.combinations(range(len(MODELS)), 2):
        ca, cb = correct[MODELS[a]], correct[MODELS[b]]
        for q in sorted(set(ca) & set(cb)):
            s = 0.5 if ca[q] == cb[q] else (1.0 if ca[q] else 0.0)
            rows.append((a, b, q, s))
    k = len(MODELS)
    total, count = defaultdict(float), defaultdict(int)
    for a, b, _, s in rows:
        total[a, b] += s
        count[a, b] += 1
    psi = {pair: total[pair] / count[pair] for pair in total}
    opponents = [sum(1 for pair in psi if i in pair) for i in range(k)]
    score = [0.0] * k
    for (a, b), p in psi.items():
        score[a] += p / opponents[a]
        score[b] += (1 - p) / opponents[b]
    naive = [0.0] * k
    cluster = defaultdict(lambda: [0.0] * k)
    for a, b, q, s in rows:
        u_a = (s - psi[a, b]) / count[a, b] / opponents[a]
        u_b = -(s - psi[a, b]) / count[a, b] / opponents[b]
        ddof = count[a, b] / (count[a, b] - 1)  # per pair: Cochran's stratified mean
        naive[a] += ddof * u_a**2
        naive[b] += ddof * u_b**2
        cluster[q][a] += u_a
        cluster[q][b] += u_b
    n, g = len(rows), len(cluster)
    se_naive = [math.sqrt(v) for v in naive]
    se_prompt = [math.sqrt(g / (g - 1) * sum(t[i] ** 2 for t in cluster.values()))
                 for i in range(k)]
    ties = sum(1 for row in rows if row[3] == 0.5) / n
    return {"score": score, "se_naive": se_naive, "se_prompt": se_prompt, "n_rows": n,
            "n_questions": g, "tie_share": ties}


@pytest.fixture(scope="module")
def mmlu_log():
    return read_comparisons(datasets.load("mmlu_pro", models=MODELS, progress=False))


def test_mmlu_pro_scores_and_ses_match_first_principles(by_hand, mmlu_log):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(mmlu_log, cluster="prompt")
    assert list(result.models) == MODELS
    assert mmlu_log.n_rows == by_hand["n_rows"]
    assert mmlu_log.axes["prompt"].n_clusters == by_hand["n_questions"] == 12032
    np.testing.assert_allclose(result.scores, by_hand["score"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(result.se_naive, by_hand["se_naive"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(result.se, by_hand["se_prompt"], rtol=0, atol=1e-10)
    # question clustering matters here: every model's SE inflates by more than 5%
    assert np.all(np.asarray(by_hand["se_prompt"]) > 1.05 * np.asarray(by_hand["se_naive"]))


def test_eda_report_numbers_match_first_principles(by_hand, mmlu_log):
    report = explore(mmlu_log, ("prompt",), dataset="mmlu_pro")
    np.testing.assert_allclose(report.score, by_hand["score"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(report.se_naive, by_hand["se_naive"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(report.clusterings["prompt"].se, by_hand["se_prompt"],
                               rtol=0, atol=1e-10)
    assert report.structure["tie_share"] == pytest.approx(by_hand["tie_share"], abs=1e-12)
    assert report.structure["n_rows"] == by_hand["n_rows"]
    assert 0.3 < by_hand["tie_share"] < 0.7


PANDALM_LABELS = {"1": "a", "2": "b", "0": "tie", "tie": "tie"}


@pytest.mark.parametrize(("judge", "file", "column", "expected"), [
    ("gpt-3.5", "gpt-3.5-turbo-testset-v1.json", "gpt_result",
     {"a": 460, "b": 476, "tie": 38}),
    ("pandalm-7b", "pandalm-7b-testset-v1.json", "pandalm_result",
     {"a": 433, "b": 459, "tie": 107}),
])
def test_pandalm_verdict_counts_per_label(judge, file, column, expected):
    with open(Path(REAL) / "pandalm" / file, encoding="utf-8") as fh:
        raw = json.load(fh)
    verdict = {}  # idx -> outcome, the 'garbage' (unparseable) ones left out
    for record in raw:
        label = str(record[column]).strip().lower()
        if label != "garbage":
            verdict[str(record["idx"])] = PANDALM_LABELS[label]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        log = datasets.load("pandalm", judges=(judge,), progress=False)
    got = Counter(log["outcome"].astype(str))
    assert dict(got) == dict(Counter(verdict.values())) == expected
    loaded = dict(zip(log["item_id"].astype(str), log["outcome"].astype(str), strict=True))
    assert loaded == verdict  # item by item, not just in total
    share = read_comparisons(log).score
    assert np.mean(share == 0.5) == pytest.approx(expected["tie"] / sum(expected.values()),
                                                  abs=1e-12)
