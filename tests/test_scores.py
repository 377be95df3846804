"""Per-question scores analysed as a pairwise leaderboard without building the pairs.

Oracle: the explicit pairwise log, built here independently of :mod:`winrate.io.scores`
by a pandas self-join of the long score table on the question (every two models that
answered it, the higher score winning, equal scores tying) and read by
:func:`winrate.read_comparisons`. Its analysis must equal that of the score table to
1e-12 of the largest value: scores, clustered and naive covariances, SEs, design effects
and every axis diagnostic, for 0/1 scores (products) and graded ones (the numba kernel),
with missing answers, by question, by a per-question subject and both, CR0 and CR1. On
the bundled MMLU-Pro data the naive covariance is also checked against a compensated sum
(``math.fsum``) over the explicit influence rows. Reading errors name their rows.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators import fit
from winrate.estimators.win_rate_scores import (
    _graded_outcomes,
    _graded_sums,
    cell_totals,
    pair_outcomes,
)
from winrate.io import logs
from winrate.io.logs import read_comparisons
from winrate.io.scores import scores_log
from winrate.settings import Variance

REAL = os.environ.get("WINRATE_DATA")
needs_data = pytest.mark.skipif(
    not REAL or not Path(REAL).is_dir(),
    reason="WINRATE_DATA is not set (or not a directory): MMLU-Pro score-table equality not "
           "checked")


def random_scores(seed: int, n_questions: int, n_models: int, missing: float, kind: str,
                  n_subjects: int = 3) -> pd.DataFrame:
    """A long table: question, model, score, subject (constant within a question); models
    differ in ability, questions in difficulty; answers missing at random."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1, n_models)
    difficulty = rng.normal(0, 1, n_questions)
    p = 1 / (1 + np.exp(difficulty[:, None] - ability[None, :]))
    if kind == "binary":
        y = (rng.random(p.shape) < p).astype(float)
    elif kind == "levels":  # graded on a few levels: many ties
        y = np.round(4 * np.clip(p + rng.normal(0, 0.2, p.shape), 0, 1)) / 4
    else:
        y = np.clip(p + rng.normal(0, 0.1, p.shape), 0, 1)
    q, m = np.nonzero(rng.random(p.shape) >= missing)
    return pd.DataFrame({"question": [f"q{i:03d}" for i in q],
                         "model": [f"model-{j}" for j in m], "score": y[q, m],
                         "subject": [f"s{i % n_subjects}" for i in q]})


def pairwise_log(frame: pd.DataFrame):
    """The explicit comparison log of a long score table (module doc)."""
    pairs = frame.merge(frame, on=["question", "subject"], suffixes=("_a", "_b"))
    pairs = pairs[pairs["model_a"] < pairs["model_b"]]
    outcome = np.where(pairs["score_a"] > pairs["score_b"], 1.0,
                       np.where(pairs["score_a"] < pairs["score_b"], 0.0, 0.5))
    pairs = pairs.assign(outcome=outcome)
    return read_comparisons(pairs, prompt_col="question", judge_col=None,
                            cluster_cols=("subject",))


def table_of(frame: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return scores_log(frame, question_col="question", model_col="model", score_col="score",
                          cluster_cols=("subject",))


def quiet_analyze(log, cluster, correction="cr1"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, cluster=cluster, variance=Variance("sandwich", correction))


def assert_close(got, want, what: str, rtol: float = 1e-12, unit: float = 0.0) -> None:
    """Equal NaN patterns and max |difference| <= rtol x max(max |value|, ``unit``) (the
    size of a quantity that may be 0, such as a correlation)."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert got.shape == want.shape, what
    assert (np.isnan(got) == np.isnan(want)).all(), what
    defined = ~np.isnan(want)
    scale = max(np.abs(want[defined]).max(initial=0.0), unit)
    assert np.abs(got[defined] - want[defined]).max(initial=0.0) <= rtol * scale, what


def assert_same_analysis(got, want, naive_rtol: float = 1e-12) -> None:
    """Every number of two analyses; a covariance whose exact value is 0 (all of a
    model's comparisons in one cluster) is round-off in both, so covariances are compared
    on the scale of the naive one at least."""
    assert list(got.models) == list(want.models)
    assert got.n_rows == want.n_rows and got.n_comparisons == want.n_comparisons
    unit = np.abs(want.cov_naive).max(initial=0.0)
    assert_close(got.scores, want.scores, "scores")
    assert_close(got.cov, want.cov, "cov", unit=unit)
    assert_close(got.cov_naive, want.cov_naive, "cov_naive", naive_rtol)
    assert_close(got.se, want.se, "se", unit=np.sqrt(unit))
    assert_close(got.deff, want.deff, "deff", max(naive_rtol, 1e-12))
    assert_close(got.small_sample_floor, want.small_sample_floor, "floor")
    assert got.not_estimable == want.not_estimable
    assert [n.code for n in got.notes] == [n.code for n in want.notes]
    assert got.axes.keys() == want.axes.keys()
    for name, axis in want.axes.items():
        mine = got.axes[name]
        assert (mine.n_clusters, mine.single_cluster_pairs) == (axis.n_clusters,
                                                                axis.single_cluster_pairs)
        for field in ("mean_cluster_size", "m", "effective_clusters"):
            assert_close(getattr(mine, field), getattr(axis, field), f"{name} {field}")
        assert_close(mine.cov, axis.cov, f"{name} cov", unit=unit)
        assert_close(mine.icc, axis.icc, f"{name} icc", unit=1.0)
        # a model whose variance on the axis is not identified has round-off for a variance
        identified = ~np.isnan(axis.se)
        assert_close(mine.largest_share[identified], axis.largest_share[identified],
                     f"{name} largest_share")
        for field, size in (("se", np.sqrt(unit)), ("deff", 0.0), ("rho", 1.0)):
            assert_close(getattr(mine, field), getattr(axis, field), f"{name} {field}",
                         max(naive_rtol, 1e-12), size)  # rho: a correlation


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_questions=st.integers(4, 40),
       n_models=st.integers(2, 6), missing=st.sampled_from([0.0, 0.2, 0.5]),
       kind=st.sampled_from(["binary", "levels", "continuous"]),
       cluster=st.sampled_from(["prompt", "subject", "prompt+subject", "none"]),
       correction=st.sampled_from(["cr1", "none", "cr2"]))
# a pair seen in one subject: its bound's ICC of (subject, pair) cells from the table's
# cells, as the log computes it from rows (the table once took the pooled ICC)
@example(seed=7, n_questions=5, n_models=4, missing=0.2, kind="binary", cluster="subject",
         correction="cr1")
@example(seed=4, n_questions=6, n_models=4, missing=0.5, kind="levels", cluster="subject",
         correction="cr1")  # and a pair never compared (its psi is NaN) beside it
def test_table_equals_pairwise_log(seed, n_questions, n_models, missing, kind, cluster,
                                   correction):
    frame = random_scores(seed, n_questions, n_models, missing, kind)
    try:
        want = quiet_analyze(pairwise_log(frame), cluster, correction)
    except WinrateInputError:  # disconnected, a single cluster, ...: refused alike
        with pytest.raises(WinrateInputError):
            quiet_analyze(table_of(frame), cluster, correction)
        return
    table = table_of(frame)
    grouped = [np.bincount(table.axes[axis].codes).max() > 1 for axis in cluster.split("+")
               if axis in table.axes]
    if correction == "cr2" and any(grouped):  # a cluster of several questions
        with pytest.raises(WinrateInputError, match="clusters of one question"):
            quiet_analyze(table, cluster, correction)
        return
    assert_same_analysis(quiet_analyze(table, cluster, correction), want)


def test_thin_designs_get_auto_cr2_as_the_pairwise_log_does():
    """``auto`` on 12 questions picks CR2 with Pan-Wall df by model: the same numbers."""
    frame = random_scores(8, 12, 4, 0.1, "binary")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        got, want = analyze(table_of(frame), cluster="prompt"), analyze(pairwise_log(frame),
                                                                         cluster="prompt")
    assert want.settings["correction"] == "cr2" and got.method_note == want.method_note
    assert_same_analysis(got, want)
    assert_close(got.intervals.df, want.intervals.df, "Pan-Wall df")


@pytest.mark.parametrize("kind", ["binary", "levels"])
def test_auto_and_eda_equal_pairwise_log(kind):
    """``auto`` (CR1 here: 200 questions per pair) and the exploratory report, whose
    shared-response ICCs read the per-question sums of each model's own comparisons."""
    from winrate.eda import explore

    frame = random_scores(7, 200, 5, 0.2, kind)
    log, table = pairwise_log(frame), table_of(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        got, want = analyze(table, cluster="prompt"), analyze(log, cluster="prompt")
        eda_got = explore(table, ["prompt", "subject"])
        eda_want = explore(log, ["prompt", "subject"])
    assert got.method_note == want.method_note
    assert_same_analysis(got, want)
    mine, theirs = dict(eda_got.structure), dict(eda_want.structure)
    for key in ("m_prompt", "tie_share"):
        assert mine.pop(key) == pytest.approx(theirs.pop(key), rel=1e-12)
    assert mine == theirs
    for name, check in eda_want.axes.items():
        for field in ("shared_icc", "pair_icc", "predicted", "measured"):
            assert_close(getattr(eda_got.axes[name], field), getattr(check, field), field)


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_binary_products_equal_the_graded_kernel(missing):
    """The 0/1 fast path (products) and the general kernel give the same sums."""
    table = table_of(random_scores(3, 60, 7, missing, "binary"))
    counts, wins = pair_outcomes(table)
    kernel_counts, kernel_wins = _graded_outcomes.serial(table.scores, 1)
    np.testing.assert_array_equal(counts, kernel_counts + kernel_counts.T)
    np.testing.assert_array_equal(wins, kernel_wins)
    board = fit(table)
    cells = cell_totals(table, board.psi, counts, wins, board.weights)
    v = np.divide(board.weights, counts, out=np.zeros(counts.shape), where=counts > 0)
    by_kernel = _graded_sums.serial(table.scores, board.psi, v, 1)
    for mine, theirs in zip((cells.totals, cells.within, cells.own, cells.centred), by_kernel,
                            strict=True):
        assert_close(mine, theirs, "cell sums", 1e-13)


def test_tie_share_counts_equal_scores():
    frame = random_scores(5, 50, 6, 0.3, "levels")
    assert table_of(frame).tie_share == pytest.approx(pairwise_log(frame).tie_share, rel=1e-14)


# ----------------------------------------------------------------------- what is refused


def test_methods_without_cell_totals_are_refused():
    table = table_of(random_scores(1, 60, 4, 0.0, "binary"))
    for variance in (Variance("jackknife"), Variance("bootstrap")):
        with pytest.raises(WinrateInputError, match="per-question scores"):
            analyze(table, cluster="prompt", variance=variance)
    with pytest.raises(WinrateInputError, match="clusters of one question"):
        analyze(table, cluster="subject", variance=Variance("sandwich", "cr2"))
    with pytest.raises(WinrateInputError, match="model 'bt'"):
        analyze(table, cluster="prompt", model="bt")
    with pytest.raises(WinrateInputError, match="baseline"):
        analyze(table, cluster="prompt", baseline="model-0")


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.assign(score=f["score"] + 1), "outside \\[0, 1\\]"),
    (lambda f: f.assign(score=f["score"].where(f.index != 3)), "rows \\(index labels\\): 3"),
    (lambda f: pd.concat([f, f.iloc[[5]]]), "several scores for one"),
    (lambda f: f.assign(subject=np.where(f.index == 2, "other", f["subject"])),
     "constant within a question"),
    (lambda f: f.drop(columns="model"), "not found"),
])
def test_bad_tables_are_refused_naming_the_problem(change, message):
    with pytest.raises(WinrateInputError, match=message):
        table_of(change(random_scores(2, 20, 4, 0.0, "binary")))


def test_questions_without_a_pair_are_left_out_with_a_note():
    frame = random_scores(4, 30, 4, 0.0, "binary")
    lonely = pd.DataFrame({"question": ["alone"], "model": ["model-0"], "score": [1.0],
                           "subject": ["s0"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        table = scores_log(pd.concat([frame, lonely]), question_col="question",
                           model_col="model", score_col="score", cluster_cols=("subject",))
    assert [w.message.args[0].code for w in caught] == ["unpaired-questions"]
    assert table.n_questions == 30 and table.n_rows == pairwise_log(frame).n_rows


# ----------------------------------------------------------------------- command line


def test_command_line_scores_format_equals_the_pairwise_file(tmp_path):
    frame = random_scores(6, 80, 5, 0.2, "binary")
    scores, pairs = tmp_path / "scores.csv", tmp_path / "pairs.csv"
    frame.rename(columns={"question": "q", "model": "m", "score": "y"}).to_csv(scores,
                                                                              index=False)
    log = frame.merge(frame, on=["question", "subject"], suffixes=("_a", "_b"))
    log = log[log["model_a"] < log["model_b"]]
    log.assign(outcome=np.sign(log["score_a"] - log["score_b"]) / 2 + 0.5).rename(
        columns={"question": "prompt_id"}).to_csv(pairs, index=False)
    command = [sys.executable, "-m", "winrate.cli", "leaderboard", "--cluster",
               "prompt+subject", "--method", "sandwich"]
    run = {}
    for name, args in (("scores", [str(scores), "--format", "scores", "--question-col", "q",
                                   "--model-col", "m", "--score-col", "y"]),
                       ("pairs", [str(pairs)])):
        out = tmp_path / f"{name}.json"
        subprocess.run([*command, *args, "--json", str(out)], check=True, capture_output=True)
        run[name] = pd.read_json(out, typ="series")
    for key in ("score", "se", "se_naive", "cov"):
        assert_close(np.array(run["scores"][key], float), np.array(run["pairs"][key], float),
                     key)
    assert run["scores"]["n_rows"] == run["pairs"]["n_rows"]


# ----------------------------------------------------------------------- MMLU-Pro


@pytest.fixture(scope="module")
def mmlu():
    from winrate.io.datasets import mmlu_pro_scores, read_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return mmlu_pro_scores(), read_dataset("mmlu_pro")


def _fsum_naive(board, stratified: bool) -> np.ndarray:
    """``sum_r c_r u_r u_r^T`` of the explicit influence rows (two entries each), every
    entry a compensated sum (``math.fsum``); ``c_r = n/(n - 1)`` of the row's pair when
    stratified (Cochran), else 1."""
    infl = board.influence
    lo, hi = infl.indices[0::2], infl.indices[1::2]
    d_lo, d_hi = infl.data[0::2], infl.data[1::2]
    n = board.counts[lo, hi]
    c = np.where(n > 1, n / (n - 1), 1.0) if stratified else np.ones(n.shape)
    k = board.counts.shape[0]
    keys = np.concatenate([lo * k + lo, hi * k + hi, lo * k + hi])
    terms = np.concatenate([c * d_lo**2, c * d_hi**2, c * d_lo * d_hi])
    order = np.argsort(keys, kind="stable")
    keys, terms = keys[order], terms[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    meat = np.zeros(k * k)
    for key, part in zip(keys[starts], np.split(terms, starts[1:]), strict=True):  # entries
        meat[key] = math.fsum(part)
    meat = meat.reshape(k, k)
    return meat + np.triu(meat, 1).T


@needs_data
def test_mmlu_pro_table_equals_its_pairwise_log(mmlu):
    """The acceptance check: clustered by question, CR1. The row path's naive covariance
    sums ~335,000 terms per model and is off its exact value by up to ~1.2e-12 (checked
    against compensated sums below, where the table's is within 1e-13); so the naive
    covariance is compared with the row path at 5e-12 and exactly with the fsum oracle."""
    table, log = mmlu
    got, want = quiet_analyze(table, "prompt"), quiet_analyze(log, "prompt")
    assert_same_analysis(got, want, naive_rtol=5e-12)
    oracle = _fsum_naive(want.leaderboard, stratified=True)
    assert_close(got.cov_naive, oracle, "naive covariance against fsum", 1e-13)


@needs_data
def test_mmlu_pro_eda_report_is_unchanged(mmlu):
    """``winrate eda --dataset mmlu_pro`` now reads the score table: its numbers equal the
    pairwise log's report (printed, to the digit)."""
    from winrate.eda import explore, format_report

    table, log = mmlu
    specs = ["prompt", "src", "category", "judge", "prompt+judge"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        got = explore(table, specs, dataset="mmlu_pro")
        want = explore(log, specs, dataset="mmlu_pro")
    assert format_report(got) == format_report(want)
    for name, result in want.clusterings.items():
        if result.identified:
            assert_close(got.clusterings[name].se, result.se, name)


# ----------------------------------------------------------------------- Parquet files


def _as_parquet(frame: pd.DataFrame, path: Path, row_group_size: int = 7) -> Path:
    """``frame`` written to ``path`` in several row groups (several dictionaries)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group_size)
    return path


@pytest.mark.parametrize(("score_type", "file_dictionaries"),
                         [("float64", True), ("int8", True), ("float32", False)])
def test_parquet_codes_give_the_frame_readers_table(tmp_path, monkeypatch, score_type,
                                                    file_dictionaries):
    """A Parquet file is coded from Arrow's dictionaries (the file's, or hashed when they
    are large; no pandas frame); the table must equal the one read from the same rows
    as a DataFrame (pd.factorize), a question with one answer left out with the same
    note."""
    if not file_dictionaries:
        monkeypatch.setattr(logs, "_SMALL_DICTIONARY", 0)
    frame = random_scores(8, 25, 5, 0.3, "binary").sample(frac=1, random_state=1)
    frame = pd.concat([frame, pd.DataFrame({"question": ["alone"], "model": ["model-9"],
                                            "score": [1.0], "subject": ["s9"]})])
    frame = frame.astype({"score": score_type})
    path = _as_parquet(frame, tmp_path / "scores.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        from_file = scores_log(path, question_col="question", model_col="model",
                               score_col="score", cluster_cols=("subject",))
        from_frame = scores_log(frame, question_col="question", model_col="model",
                                score_col="score", cluster_cols=("subject",))
    assert [w.message.args[0].code for w in caught] == ["unpaired-questions"] * 2
    assert caught[0].message.args[0].text == caught[1].message.args[0].text
    assert np.array_equal(from_file.scores, from_frame.scores, equal_nan=True)
    assert from_file.models.tolist() == from_frame.models.tolist() == [
        f"model-{j}" for j in range(5)]
    for name, axis in from_frame.axes.items():
        assert np.array_equal(from_file.axes[name].codes, axis.codes)
        assert from_file.axes[name].labels.tolist() == axis.labels.tolist()


def test_parquet_labels_no_row_uses_are_not_models(tmp_path):
    """A dictionary entry no row uses (a writer may keep one) is no model and no
    question: it is dropped without a note, as the frame reader drops unused categories."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = random_scores(9, 12, 4, 0.0, "binary")
    columns = {}
    for name in ("question", "model"):
        labels = pd.unique(frame[name])
        columns[name] = pa.DictionaryArray.from_arrays(
            pa.array(pd.Index(labels).get_indexer(frame[name]), pa.int32()),
            pa.array([*labels, "unused"]))
    path = tmp_path / "unused.parquet"
    pq.write_table(pa.table({**columns, "score": frame["score"].to_numpy()}), path)
    assert "unused" in pq.read_table(path, read_dictionary=["model"]).column(
        "model").chunk(0).dictionary.to_pylist()
    with warnings.catch_warnings():
        warnings.simplefilter("error", WinrateWarning)
        table = scores_log(path, question_col="question", model_col="model",
                           score_col="score")
    expected = table_of(frame)
    assert table.models.tolist() == expected.models.tolist()
    assert table.axes["prompt"].labels.tolist() == expected.axes["prompt"].labels.tolist()
    assert np.array_equal(table.scores, expected.scores)


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.assign(score=np.where(f.index == 4, 2.0, f["score"])),
     "outside \\[0, 1\\] in 1 row.*rows counted from 1\\): 5$"),
    (lambda f: f.assign(score=f["score"].where(f.index != 3)), "rows counted from 1\\): 4"),
    (lambda f: f.assign(score=np.where(f.index == 3, np.nan, f["score"])),
     "rows counted from 1\\): 4"),
    (lambda f: pd.concat([f, f.iloc[[5]]]), "several scores for one.*counted from 1\\): 6"),
    (lambda f: f.assign(model=f["model"].where(f.index != 2)), "missing value.*1\\): 3"),
    (lambda f: f.assign(subject=np.where(f.index == 2, "other", f["subject"])),
     "constant within a question"),
])
def test_bad_parquet_files_name_their_rows(tmp_path, change, message):
    """The Arrow path hands a file it cannot code to the frame reader, which names the
    rows by their position in the file."""
    path = _as_parquet(change(random_scores(2, 20, 4, 0.0, "binary")).reset_index(drop=True),
                       tmp_path / "bad.parquet")
    with pytest.raises(WinrateInputError, match=message):
        scores_log(path, question_col="question", model_col="model", score_col="score",
                   cluster_cols=("subject",))
