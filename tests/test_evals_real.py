"""MMLU-Pro correctness matrix: 29 models, naive and clustered SEs (needs WINRATE_DATA)."""

import os

import numpy as np
import pytest
import statsmodels.api as sm

pytestmark = pytest.mark.skipif(
    not os.environ.get("WINRATE_DATA"),
    reason="WINRATE_DATA is unset: the MMLU-Pro files are not available (make test sets it)",
)


@pytest.fixture(scope="module")
def mmlu():
    from winrate.evals.mmlu import mmlu_pro_clustered
    from winrate.io.datasets import read_mmlu_pro

    return read_mmlu_pro(os.environ["WINRATE_DATA"], download=False), mmlu_pro_clustered(
        os.environ["WINRATE_DATA"], download=False)


def test_all_models_and_questions(mmlu):
    data, result = mmlu
    naive = result.reports["naive"].models
    assert len(naive) == 29
    counts = {m: r.summary.n for m, r in naive.items()}
    assert counts["DeepSeek-Coder-V2"] == 10_351 and max(counts.values()) == 12_032
    assert all(r.summary.naive_method == "bernoulli" for r in naive.values())
    assert result.reports["src"].models["Yi-34B"].summary.n_clusters == (91,)
    assert result.reports["category"].models["Yi-34B"].summary.n_clusters == (14,)
    assert len(result.pair_rows()) == 28


@pytest.mark.parametrize("model", ["gemini-1.5-pro-002", "DeepSeek-Coder-V2", "Yi-6B"])
@pytest.mark.parametrize("column", ["src", "category"])
def test_clustered_se_matches_statsmodels_on_real_data(mmlu, model, column):
    data, result = mmlu
    y = data.correctness[model].dropna()
    groups = data.questions.loc[y.index, column].cat.codes.to_numpy()
    fit = sm.OLS(y.to_numpy(), np.ones(y.size)).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": True})
    summary = result.reports[column].models[model].summary
    assert summary.se == pytest.approx(fit.bse[0], rel=1e-10)
    assert summary.mean == pytest.approx(y.mean())
    assert summary.deff > 5  # subjects differ a lot in difficulty


def test_neighbour_comparison_uses_paired_differences(mmlu):
    data, result = mmlu
    comp = result.reports["src"].comparisons[0]
    both = data.correctness[[comp.model_a, comp.model_b]].dropna()
    d = both[comp.model_a] - both[comp.model_b]
    assert comp.paired.test.estimate == pytest.approx(d.mean())
    assert comp.paired.se_paired == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    assert comp.paired.se_paired < comp.paired.se_unpaired
