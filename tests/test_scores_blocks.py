"""The 0/1 score table's fast pass 2 against a brute-force oracle, on every one of its paths.

:func:`winrate.estimators.win_rate_scores._binary_sums` splits each question's sums into a
product of the right answers with (K, K) matrices and sums over the answered models,
formed from the few unanswered ones (most questions), the answered ones (a question most
models skipped) or a product with the answered mask (a block with many gaps), in blocks of
questions run on threads. Here the blocks are made tiny and the threads are used on a
small table, so that every path runs, and each result is checked to 1e-12 against an
independent computation: the comparisons built by a pandas self-join, their pair means by
``groupby`` (psi), each comparison's influence ``w_ab (s - psi_ab) / N_ab`` on a and
``-w_ba (s - psi_ab) / N_ab`` on b (Hajek linearisation, :mod:`winrate.estimators.win_rate_kernels`)
summed per question by ``groupby``, and the clustered meat ``sum_q t_q t_q^T`` by a loop.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from winrate.estimators import fit, win_rate_scores
from winrate.io.scores import scores_log


def gappy_scores(seed: int = 5, n_questions: int = 45, n_models: int = 9) -> pd.DataFrame:
    """0/1 scores where the first third of the questions miss one answer at most, the
    second third most answers and the last third about half of them."""
    rng = np.random.default_rng(seed)
    right = rng.random((n_questions, n_models)) < rng.uniform(0.2, 0.8, (n_questions, 1))
    share = np.repeat([0.05, 0.75, 0.45], -(-n_questions // 3))[:n_questions, None]
    answered = rng.random((n_questions, n_models)) >= share
    answered[np.arange(n_questions), rng.integers(0, n_models, n_questions)] = True
    answered[np.arange(n_questions), rng.integers(0, n_models, n_questions)] = True
    q, m = np.nonzero(answered)
    return pd.DataFrame({"question_id": [f"q{i:02d}" for i in q],
                         "model": [f"m{j}" for j in m], "score": right[q, m].astype(float)})


def brute_force(frame: pd.DataFrame) -> dict:
    """The oracle (module doc): per question and model the influence totals, sums of squared
    rows and own centred scores, per question the lower models' centred sums, and the
    meat clustered by question."""
    pairs = frame.merge(frame, on="question_id", suffixes=("_a", "_b"))
    pairs = pairs[pairs["model_a"] < pairs["model_b"]].copy()
    pairs["s"] = np.where(pairs["score_a"] > pairs["score_b"], 1.0,
                          np.where(pairs["score_a"] < pairs["score_b"], 0.0, 0.5))
    by_pair = pairs.groupby(["model_a", "model_b"])["s"]
    pairs["psi"] = by_pair.transform("mean")
    pairs["n"] = by_pair.transform("size")
    degree = pd.concat([pairs[["model_a", "model_b"]].drop_duplicates()[c]
                        for c in ("model_a", "model_b")]).value_counts()
    centred = pairs["s"] - pairs["psi"]
    rows = pd.concat([
        pd.DataFrame({"question_id": pairs["question_id"], "model": pairs["model_a"],
                      "u": centred / pairs["n"] / pairs["model_a"].map(degree),
                      "own": centred}),
        pd.DataFrame({"question_id": pairs["question_id"], "model": pairs["model_b"],
                      "u": -centred / pairs["n"] / pairs["model_b"].map(degree),
                      "own": -centred})])
    rows["u2"] = rows["u"] ** 2
    per_cell = rows.groupby(["question_id", "model"])[["u", "u2", "own"]].sum()
    wide = {name: per_cell[name].unstack(fill_value=0.0).sort_index().sort_index(axis=1)
            for name in ("u", "u2", "own")}
    lower = centred.groupby(pairs["question_id"]).sum().sort_index()
    totals = wide["u"].to_numpy()
    meat = np.zeros((totals.shape[1],) * 2)
    for t in totals:  # sum over clusters (questions) of t_q t_q^T
        meat += np.outer(t, t)
    return {"totals": totals, "within": wide["u2"].to_numpy(), "own": wide["own"].to_numpy(),
            "lower": lower.to_numpy(), "meat": meat}


@pytest.mark.parametrize("by_product", [False, True])
def test_blocks_threads_and_gaps_equal_the_brute_force(monkeypatch, by_product):
    frame = gappy_scores()
    monkeypatch.setattr(win_rate_scores, "_BLOCK", 4)  # many blocks, several per thread
    monkeypatch.setattr(win_rate_scores, "PARALLEL_MIN_WORK", 0)  # threads even here
    # a block with many gaps summed by the product with the answered mask, or never
    monkeypatch.setattr(win_rate_scores, "_GAPS_BY_PRODUCT", 0.0 if by_product else 1.0)
    table = scores_log(frame)
    assert table.binary and list(table.models) == sorted(frame["model"].unique())
    cells = fit(table).influence
    want = brute_force(frame)
    scale = {name: np.abs(value).max() for name, value in want.items()}
    for name, got in (("totals", cells.totals), ("within", cells.within), ("own", cells.own),
                      ("lower", cells.centred), ("meat", cells.totals.T @ cells.totals)):
        assert np.abs(got - want[name]).max() <= 1e-12 * scale[name], name


def test_pair_table_and_scores_equal_the_group_means():
    """Pass 1 (float32 products, exact for counts) gives pandas' pair counts and means."""
    frame = gappy_scores(seed=11)
    board = fit(scores_log(frame))
    pairs = frame.merge(frame, on="question_id", suffixes=("_a", "_b"))
    pairs = pairs[pairs["model_a"] < pairs["model_b"]]
    s = np.where(pairs["score_a"] > pairs["score_b"], 1.0,
                 np.where(pairs["score_a"] < pairs["score_b"], 0.0, 0.5))
    means = pd.Series(s).groupby([pairs["model_a"].to_numpy(), pairs["model_b"].to_numpy()])
    index = {name: i for i, name in enumerate(board.models)}
    for (a, b), mean in means.mean().items():
        assert board.psi[index[a], index[b]] == pytest.approx(mean, abs=1e-14)
    for (a, b), size in means.size().items():
        assert board.counts[index[a], index[b]] == size
    psi = np.nan_to_num(board.psi)
    observed = board.counts > 0
    uniform = (psi * observed).sum(axis=1) / observed.sum(axis=1)
    np.testing.assert_allclose(board.scores, uniform, rtol=0, atol=1e-14)
