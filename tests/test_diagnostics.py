"""Design effects, ICC and identification warnings against independent computations."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

from tests.conftest import random_log
from tests.logit_oracle import logit_interval
from tests.note_codes import notes_of
from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.io.logs import ComparisonLog
from winrate.settings import Variance
from winrate.variance.diagnostics import anova_icc, comparisons_per_cluster, single_cluster_pairs


@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_anova_icc_matches_statsmodels_anova(offset):
    """Against statsmodels' ANOVA table; a common offset of 1e8 (scores in large units)
    must not change it (the sums of squares are taken about the grand mean)."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(25), rng.integers(1, 9, 25))
    values = rng.normal(size=25)[groups] * 0.7 + rng.normal(size=groups.size)
    table = sm.stats.anova_lm(smf.ols("y ~ C(g)", pd.DataFrame({"y": values, "g": groups})).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    sizes = np.bincount(groups)
    n0 = (sizes.sum() - (sizes**2).sum() / sizes.sum()) / (len(sizes) - 1)
    assert anova_icc(values + offset, groups) == pytest.approx(
        (msb - msw) / (msb + (n0 - 1) * msw), rel=1e-9 if offset else 1e-12)


def test_anova_icc_frequency_weights_equal_expansion():
    rng = np.random.default_rng(1)
    groups = rng.integers(0, 6, 40)
    values = rng.normal(size=40)
    freq = rng.integers(1, 4, 40)
    assert anova_icc(values, groups, freq.astype(float)) == pytest.approx(
        anova_icc(np.repeat(values, freq), np.repeat(groups, freq)), rel=1e-12)


def test_anova_icc_balanced_closed_form():
    """Balanced groups of size m: ICC = (MSB - MSW) / (MSB + (m - 1) MSW) by hand."""
    values = np.array([1.0, 2.0, 3.0, 7.0, 8.0, 9.0])
    groups = np.array([0, 0, 0, 1, 1, 1])
    msb = 3 * ((2 - 5) ** 2 + (8 - 5) ** 2) / 1
    msw = (1 + 0 + 1 + 1 + 0 + 1) / 4
    assert anova_icc(values, groups) == pytest.approx((msb - msw) / (msb + 2 * msw))


def test_single_cluster_pairs_and_comparisons_per_cluster():
    pair = np.array([0, 0, 1, 1, 2])
    codes = np.array([3, 3, 1, 2, 0])
    np.testing.assert_array_equal(single_cluster_pairs(pair, codes, 3), [True, False, True])
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    m = comparisons_per_cluster(a, b, np.array([0, 0, 1]), np.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(m, [2.0, 1.0, 1.0])


def test_design_effect_of_perfectly_shared_responses():
    """Each model answers a prompt once and that answer decides all its comparisons.

    Replicating every comparison m times within its prompt leaves the prompt-clustered
    covariance unchanged up to CR0 and multiplies the naive one by 1/m: DEFF = m exactly.
    """
    base = random_log(3, n=300, n_prompts=60)
    m = 4
    log = ComparisonLog.from_arrays(
        np.repeat(base.model_a, m), np.repeat(base.model_b, m), np.repeat(base.score, m),
        prompt=np.repeat(base.axes["prompt"].codes, m), judge=np.repeat(
            base.axes["judge"].codes, m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        once = analyze(base, cluster="prompt", variance=Variance(correction="none"))
        replicated = analyze(log, cluster="prompt", variance=Variance(correction="none"))
    np.testing.assert_allclose(replicated.cov, once.cov, rtol=1e-10)
    np.testing.assert_allclose(replicated.deff, m * once.deff, rtol=1e-10)


def test_warnings_are_returned_and_emitted():
    """Pair (1, 2) only in prompt 0, pair (0, 2) never, 3 judges, one model always wins."""
    a = np.array([0, 0, 0, 0, 1, 1, 3, 3, 3])
    b = np.array([1, 1, 1, 1, 2, 2, 0, 0, 1])
    score = np.array([1, 0, 0.5, 1, 1, 0, 1, 1, 1])
    prompt = np.array([0, 1, 2, 3, 0, 0, 1, 2, 3])
    judge = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
    log = ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)
    with pytest.warns(WinrateWarning) as record:
        result = analyze(log, cluster="prompt+judge")
    found = result.notes
    few = {note.axis: note for note in found.only("few-clusters")}
    assert set(few) == {"prompt", "judge"} and "only 3 clusters" in few["judge"]
    (design,) = found.only("incomplete-design")
    assert design.severity == "warning"  # 33% > 10% missing: not comparable, use --model bt
    assert design.models[0] == "2"  # most opponents missed: (0, 2) and (2, 3) never met
    assert "2 of 6 model pairs (33%)" in design
    single = {note.axis: note for note in found.only("single-cluster-pairs")}
    assert set(single) == {"prompt", "judge"}
    assert result.axes["prompt"].single_cluster_pairs == 2
    assert result.axes["judge"].single_cluster_pairs == 1
    assert "2 of 4 model pairs" in single["prompt"]
    (floor,) = found.only("small-sample-floor")
    assert floor.models == ("0", "1", "3")  # 3 beat 0 and 1 in every comparison
    assert "Bradley-Terry fit of the whole log" in floor  # 0, 1, 2 beat each other both ways
    # model 2's two comparisons (a win and a loss) are both in prompt 0: the prompt part of
    # its two-way variance is not identified, so it is not estimable (no interval)
    assert found.only("not-estimable")[0].models == ("2",)
    assert list(result.not_estimable) == ["2"]
    assert "one prompt cluster" in result.not_estimable["2"]
    assert np.isnan(result.se[2]) and (result.se[[0, 1, 3]] > 0).all()
    assert notes_of(record).codes == found.codes


def test_t_reference_uses_smallest_axis():
    log = random_log(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        result = analyze(log, cluster="prompt+judge", variance=Variance("sandwich", reference="t"))
    assert result.settings["df"] == log.axes["judge"].n_clusters - 1
    from scipy import stats

    crit = stats.t.ppf(0.975, result.settings["df"])
    # win probabilities: the t(G - 1) interval built on the logit scale (issue 24)
    np.testing.assert_allclose(result.intervals.high,
                               logit_interval(result.scores, crit * result.se)[1], rtol=1e-10)
