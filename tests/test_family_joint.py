"""The family of boards by category estimated jointly (winrate.inference.family, issue 33
item 3): its covariance equals a brute-force loop over the clusters of the stacked
influence (to 1e-10), clusters that span categories correlate the categories' scores
while disjoint ones leave the blocks independent, rank sets hold within each category,
and a family that cannot be estimated jointly falls back with a coded note."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests import reader_fixtures as fx
from tests.note_codes import notes_of
from winrate import read_comparisons
from winrate.by_category import analyze_by
from winrate.inference.joint import rank_sets
from winrate.io.formats import read_log
from winrate.settings import Joint

MODELS = ["m-a", "m-b", "m-c", "m-d"]


def _log(seed: int = 1, n: int = 1200, prompts: int = 40, judges: int = 20):
    """Comparisons of four models in three subjects, with prompt and judge effects; each
    prompt is asked in two neighbouring subjects and judges are drawn across subjects (so
    both axes span categories, and each subject sees its own set of prompts)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 4, n)
    second = (first + rng.integers(1, 4, n)) % 4
    prompt, judge = rng.integers(0, prompts, n), rng.integers(0, judges, n)
    strength = np.array([0.4, 0.1, -0.1, -0.4])
    logit = (strength[first] - strength[second] + rng.normal(0, 0.7, prompts)[prompt]
             + rng.normal(0, 0.5, judges)[judge])
    rows = pd.DataFrame({"prompt_id": prompt.astype(str), "judge_id": judge.astype(str),
                         "model_a": np.array(MODELS)[first],
                         "model_b": np.array(MODELS)[second],
                         "outcome": (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float),
                         "subject": np.array(["art", "law", "math"])[
                             (prompt * 3 // prompts + rng.integers(0, 2, n)) % 3]})
    return read_comparisons(rows, cluster_cols=("subject",))


def _brute_force(boards, axes: tuple[str, ...]) -> np.ndarray:
    """The CR1 multiway covariance of the stacked scores by hand: each board's per-row
    influence of its reported scores (influence @ bread^T), placed in its own columns of
    one matrix over all boards' rows; for each non-empty subset of the axes, a loop over
    the (intersected) cluster labels summing outer products of the cluster totals, times
    G / (G - 1), signed by inclusion-exclusion (Cameron, Gelbach & Miller 2011, eq. 2.11)."""
    blocks, labels = [], []
    for board in boards.boards.values():
        fit, k = board.leaderboard, len(board.models)
        rows = fit.influence.toarray()
        rows = rows @ fit.bread[:k].T if fit.bread is not None else rows[:, fit.codes]
        blocks.append(rows)
        labels.append(pd.DataFrame({name: board.log.axes[name].labels[
            board.log.axes[name].codes].astype(str) for name in axes}))
    total = sum(b.shape[1] for b in blocks)
    stacked = np.zeros((sum(b.shape[0] for b in blocks), total))
    r = c = 0
    for b in blocks:
        stacked[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    frame = pd.concat(labels, ignore_index=True)
    cov = np.zeros((total, total))
    subsets = [(a,) for a in axes] + ([tuple(axes)] if len(axes) == 2 else [])
    for subset in subsets:
        key = frame[list(subset)].agg("|".join, axis=1).to_numpy()
        meat = np.zeros((total, total))
        clusters = np.unique(key)
        for g in clusters:
            t = stacked[key == g].sum(axis=0)
            meat += np.outer(t, t)
        sign = 1.0 if len(subset) == 1 else -1.0
        cov += sign * len(clusters) / (len(clusters) - 1) * meat
    return cov


@pytest.mark.parametrize(("model", "cluster"), [("winrate", "prompt"),
                                                ("winrate", "prompt+judge"),
                                                ("bt", "prompt+judge")])
def test_joint_covariance_equals_a_loop_over_clusters_of_the_stacked_influence(model,
                                                                              cluster):
    log = _log()
    with pytest.warns(Warning):
        boards = analyze_by(log, "subject", cluster=cluster, model=model, family=True)
    family = boards.family
    assert family.rule == "joint"
    expected = _brute_force(boards, tuple(cluster.split("+")))
    eigenvalues = np.linalg.eigvalsh(expected)  # a multiway sum clipped to PSD is another
    assert eigenvalues.min() > -1e-10 * eigenvalues.max()  # matter: this one needs none
    np.testing.assert_allclose(family.cov, expected, rtol=1e-10, atol=1e-14)
    # the shared prompts and judges correlate the subjects' scores
    k = len(MODELS)
    assert np.abs(family.cov[:k, k:]).max() > 1e-3 * np.abs(family.cov[:k, :k]).max()
    assert [p[0] for p in family.parameters] == [s for s in ("art", "law", "math")
                                                 for _ in range(k)]


def test_disjoint_clusters_give_independent_blocks_and_each_board_its_own_covariance():
    """Prompts within one subject: the off-diagonal blocks are exactly zero and each
    diagonal block is the board's own CR1 covariance, up to the family's c(G) in place of
    the board's; the intervals use the boards' own SEs."""
    frame = pd.DataFrame({"prompt_id": np.arange(600) // 5, "model_a": "x", "model_b": "y"})
    rng = np.random.default_rng(4)
    frame["model_a"] = rng.choice(MODELS, 600)
    frame["model_b"] = [rng.choice([m for m in MODELS if m != a]) for a in frame["model_a"]]
    frame["outcome"] = rng.integers(0, 2, 600).astype(float)
    frame["subject"] = np.where(frame["prompt_id"] < 60, "art", "law")
    frame["prompt_id"] = frame["prompt_id"].astype(str)
    from winrate import analyze
    from winrate.settings import Variance

    log = read_comparisons(frame, cluster_cols=("subject",))
    cr1 = Variance(method="sandwich", correction="cr1")
    boards = analyze_by(log, "subject", cluster="prompt", family=True, variance=cr1)
    family, k = boards.family, len(MODELS)
    np.testing.assert_array_equal(family.cov[:k, k:], 0.0)
    for i, (label, board) in enumerate(boards.boards.items()):
        block = family.cov[i * k:(i + 1) * k, i * k:(i + 1) * k]
        g, g_all = board.axes["prompt"].n_clusters, 120
        own = analyze(board.log, cluster="prompt", variance=cr1).cov
        np.testing.assert_allclose(block * (g_all - 1) / g_all * g / (g - 1), own,
                                   rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(np.diag(family.scaled)[i * k:(i + 1) * k],
                                   board.se ** 2, rtol=1e-12)
        assert (family.low[label] <= board.intervals.low + 1e-12).all()
        assert (family.high[label] >= board.intervals.high - 1e-12).all()


def test_rank_sets_within_groups():
    """Ranks within each group: a group alone gives the same sets as ranking it alone
    (independent blocks), and bounds never leave 1..group size."""
    est = np.array([3.0, 1.0, 0.0, 5.0, 2.0])
    cov = np.diag([0.04, 0.04, 0.04, 1.0, 1.0])
    within = np.array(["a", "a", "a", "b", "b"])
    found = rank_sets(est, cov, within=within, method="simultaneous", seed=1)
    assert found.low.tolist()[:3] == [1, 2, 3] and found.high.tolist()[:3] == [1, 2, 3]
    assert found.low.tolist()[3:] == [1, 1] and found.high.tolist()[3:] == [2, 2]
    alone = rank_sets(est, cov, within=np.zeros(5), seed=1)
    plain = rank_sets(est, cov, seed=1)
    np.testing.assert_array_equal(alone.low, plain.low)
    np.testing.assert_array_equal(alone.high, plain.high)


def test_family_rank_sets_and_json(tmp_path):
    from winrate.by_category import boards_to_dict, format_boards

    with pytest.warns(Warning):
        boards = analyze_by(_log(), "subject", cluster="prompt", family=True,
                            joint=Joint(ranks=True))
    family = boards.family
    for label, board in boards.boards.items():
        assert ((family.rank_low[label] >= 1)
                & (family.rank_high[label] <= len(board.models))).all()
    doc = boards_to_dict(boards)
    assert doc["family"]["rule"] == "joint"
    assert len(doc["family"]["cov"]) == len(doc["family"]["parameters"]) == 12
    assert "family_rank_low" in doc["categories"]["art"]
    assert "joint max-|T| over 12 scores" in format_boards(boards)


def test_family_of_score_tables_falls_back_with_a_note(tmp_path):
    """A fit of per-question scores keeps its influence per question (cell totals), which
    the family does not stack: a family-not-joint note, and the Sidak rule (tasks share
    no question)."""
    out = fx.two_task_lm_eval(tmp_path / "results")
    with pytest.warns(Warning) as caught:
        boards = analyze_by(read_log(out, "lm_eval"), "task", cluster="prompt", family=True)
    assert boards.family.rule == "sidak"
    assert len(notes_of(caught).only("family-not-joint")) == 1


def test_a_wild_bootstrap_family_falls_back_to_its_boards_with_a_note():
    """The wild bootstrap's intervals are percentile-t, not Wald around a covariance: the
    family combines the boards' own by Bonferroni (prompts span the subjects)."""
    from winrate.settings import Variance

    with pytest.warns(Warning) as caught:
        boards = analyze_by(_log(), "subject", cluster="prompt", family=True,
                            variance=Variance(method="bootstrap", bootstrap_reps=199))
    assert {b.method for b in boards.boards.values()} == {"wild bootstrap"}
    assert boards.family.rule == "bonferroni" and boards.family.cov is None
    assert "wild bootstrap" in notes_of(caught).only("family-not-joint")[0]
