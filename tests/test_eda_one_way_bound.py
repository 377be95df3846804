"""A one-way clustering reported by the exploratory analysis (read off a two-way run's
terms) carries the variance bound of the pairs seen in a single cluster of that axis only,
so it equals ``analyze`` by that axis alone: the judge axis' single-judge pairs must not
widen the prompt clustering (issue 37's bound, found leaking in the paper's Table 1)."""

from __future__ import annotations

import numpy as np

from winrate.analysis import analyze
from winrate.eda import explore
from winrate.io.logs import ComparisonLog


def single_judge_pairs_log(seed: int = 4) -> ComparisonLog:
    """Six models, 60 prompts, 4 judges; the pairs (0, 1) and (2, 3) are judged by judge 0
    only, the others by every judge."""
    rng = np.random.default_rng(seed)
    n = 3_000
    a = rng.integers(0, 6, n)
    b = (a + rng.integers(1, 6, n)) % 6
    judge = rng.integers(0, 4, n)
    lonely = ((np.minimum(a, b) == 0) & (np.maximum(a, b) == 1)) | (
        (np.minimum(a, b) == 2) & (np.maximum(a, b) == 3))
    judge = np.where(lonely, 0, judge)
    score = (rng.random(n) < 0.5 + 0.05 * (b - a)).astype(float)
    return ComparisonLog.from_arrays(a.astype(np.int32), b.astype(np.int32), score,
                                     prompt=rng.integers(0, 60, n).astype(np.int32),
                                     judge=judge.astype(np.int32))


def test_each_one_way_clustering_equals_its_own_analysis():
    log = single_judge_pairs_log()
    report = explore(log)
    judge_only = analyze(log, "judge")
    assert np.any(judge_only.unidentified_bound != 0)  # the design has single-judge pairs
    for axis in ("prompt", "judge"):
        alone = analyze(log, axis)
        np.testing.assert_allclose(report.clusterings[axis].se, alone.se, rtol=1e-12,
                                   atol=1e-15, equal_nan=True)
