"""``winrate compare A B [C ...]`` (issue 33, item 2): runs of one eval given as files.

Oracles, none of them winrate's own code: the paired difference, its SE (questions
independent: ``sqrt(sum (d - dbar)^2 / (n (n - 1)))``; clustered: ``G / (G - 1)
sum_g (sum_{i in g} (d_i - dbar))^2 / n^2``, the eval's CR1 convention) and its interval
by pandas from the values the fixtures wrote; McNemar's exact p-value by statsmodels; the
minimal detectable difference by solving the power equation with scipy's root finder.
Then ``winrate compare`` against ``winrate eval --format ... --paired`` on the same
answers, three runs (every pair, simultaneous intervals), and the one-line errors.

The Inspect logs here are written by ``tests/reader_fixtures.inspect_eval`` the way
``inspect_ai/log/_recorders/eval.py`` writes them, so their scores are chosen exactly; they
are read through ``inspect_ai``'s own reader (the ``inspect`` extra, which ``make test``
installs). Logs made by Inspect itself, with its mock model, are the subject of
``tests/test_readers_inspect.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from tests import reader_fixtures as fx
from winrate.cli import main
from winrate.constants import RUN_FORMATS, SCORES_FORMAT
from winrate.evals.power import detectable_difference, minimum_detectable_effect
from winrate.io.harness import HARNESS_FORMATS

#: inspect_ai 0.3.285 warns of a deprecated tenacity parameter at every read (its retry
#: setup, inspect_ai/model/_retry.py), not winrate
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning")

N = 150
MODELS = ("openai/gpt-4o", "mockllm/model")


def _run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _json(path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    """Two Inspect ``.eval`` logs of one task (0/1 scores, ``C``/``I``), correlated; the
    scores as written, by sample id."""
    folder = tmp_path_factory.mktemp("compare_inspect")
    rng = np.random.default_rng(33)
    a = (rng.random(N) < 0.65).astype(int)
    b = np.where(rng.random(N) < 0.7, a, (rng.random(N) < 0.5).astype(int))
    for name, model, scores in (("a", MODELS[0], a), ("b", MODELS[1], b)):
        fx.inspect_eval(folder / "logs" / f"{name}.eval", model, "mmlu",
                        {k: ["C" if s else "I"] for k, s in enumerate(scores)})
    truth = pd.DataFrame({"a": a, "b": b}, index=[f"mmlu/{k}" for k in range(N)])
    return folder, truth


@pytest.fixture(scope="module")
def score_tables(tmp_path_factory):
    """Three plain score tables (``question_id, score, passage``), 24 passages of uneven
    size, graded scores for run c; and the same answers as one long table with a model
    column."""
    folder = tmp_path_factory.mktemp("compare_tables")
    rng = np.random.default_rng(7)
    passage = np.sort(rng.integers(0, 24, N))
    ease = rng.normal(size=24)[passage]
    frames = {}
    for name, shift in (("a", 0.3), ("b", 0.0), ("c", -0.2)):
        score = (rng.normal(ease + shift) > 0).astype(float)
        frames[name] = pd.DataFrame({"question_id": [f"q{k:03d}" for k in range(N)],
                                     "score": score, "passage": [f"p{p}" for p in passage]})
        frames[name].sample(frac=1, random_state=1).to_csv(folder / f"{name}.csv", index=False)
    long = pd.concat([f.assign(model=name) for name, f in frames.items()])
    long.to_csv(folder / "long.csv", index=False)
    return folder, frames


def _hand_paired(a: pd.Series, b: pd.Series, groups=None) -> dict:
    """The paired difference, its SE (unclustered: Miller's paired SE; clustered: CR1 by
    ``groups``), the interval and the reference df, by pandas."""
    d = (a - b).astype(float)
    n = len(d)
    if groups is None:
        se = np.sqrt(((d - d.mean()) ** 2).sum() / (n * (n - 1)))
        df, crit = None, stats.norm.ppf(0.975)
    else:
        totals = (d - d.mean()).groupby(groups.to_numpy()).sum()
        g = len(totals)
        se = np.sqrt(g / (g - 1) * (totals**2).sum()) / n
        df, crit = g - 1, stats.t.ppf(0.975, g - 1)
    return {"difference": d.mean(), "se": se, "ci_low": d.mean() - crit * se,
            "ci_high": d.mean() + crit * se, "df": df, "n": n}


def _mdd_by_root(se: float, df, power: float = 0.8, alpha: float = 0.05) -> float:
    """The MDD as the root of its power equation: ``Phi(delta / se - z_{alpha/2}) =
    power`` (normal), ``P(t_df > t_{df, alpha/2} - delta / se) = power`` (t)."""
    ref = stats.norm if df is None else stats.t(df)
    crit = ref.ppf(1 - alpha / 2)
    return optimize.brentq(lambda delta: ref.sf(crit - delta / se) - power, 0, 20 * se,
                           xtol=1e-15, rtol=4 * np.finfo(float).eps)


def test_two_inspect_logs_equal_a_pandas_hand_computation(inspect_logs, capsys, tmp_path):
    folder, truth = inspect_logs
    out = tmp_path / "c.json"
    code, text, _ = _run(["compare", folder / "logs" / "a.eval", folder / "logs" / "b.eval",
                          "--json", out], capsys)
    assert code == 0
    record = _json(out)["comparisons"][0]
    assert (record["model_a"], record["model_b"]) == MODELS
    hand = _hand_paired(truth["a"], truth["b"])
    for key, value in hand.items():
        if value is None:
            assert record[key] is None
        else:
            assert record[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    table = pd.crosstab(truth["a"], truth["b"]).reindex(index=[1, 0], columns=[1, 0])
    expected = sm_mcnemar(table.to_numpy(), exact=True).pvalue
    assert record["mcnemar"]["p_exact"] == pytest.approx(expected, rel=1e-12)
    assert (record["mcnemar"]["b"], record["mcnemar"]["c"]) == (table.iloc[0, 1],
                                                                table.iloc[1, 0])
    assert record["mdd"] == pytest.approx(_mdd_by_root(hand["se"], None), rel=1e-12)
    assert record["power"] == 0.8
    assert "MDD (80%)" in text and "McNemar p" in text


def test_a_cluster_column_clusters_the_se_and_the_mdd_uses_t(score_tables, capsys, tmp_path):
    folder, frames = score_tables
    out = tmp_path / "c.json"
    code, _, _ = _run(["compare", folder / "a.csv", folder / "b.csv", "--cluster", "passage",
                       "--power", "0.9", "--json", out], capsys)
    assert code == 0
    record = _json(out)["comparisons"][0]
    a, b = (frames[k].set_index("question_id") for k in ("a", "b"))
    hand = _hand_paired(a["score"], b["score"], a["passage"])
    assert record["df"] == hand["df"] == 23
    for key in ("difference", "se", "ci_low", "ci_high"):
        assert record[key] == pytest.approx(hand[key], rel=1e-12, abs=1e-12), key
    assert record["n_clusters"] == {"passage": 24}
    assert record["mdd"] == pytest.approx(_mdd_by_root(hand["se"], 23, 0.9), rel=1e-12)


def test_the_mdd_is_millers_eq_10_on_the_design_se():
    se, n = 0.0137, 400
    assert detectable_difference(se) == pytest.approx(
        minimum_detectable_effect(n, omega2=n * se**2), rel=1e-14)
    # the two-sided power at the MDD is the power asked, up to the dropped far tail
    z = stats.norm.ppf(0.975)
    delta = detectable_difference(se)
    power = stats.norm.cdf(delta / se - z) + stats.norm.cdf(-delta / se - z)
    assert abs(power - 0.8) < 1e-5
    assert detectable_difference(se, df=9) > detectable_difference(se)


def test_compare_equals_eval_paired_on_the_same_inspect_logs(inspect_logs, capsys, tmp_path):
    folder, _ = inspect_logs
    c_out, e_out = tmp_path / "c.json", tmp_path / "e.json"
    assert _run(["compare", folder / "logs" / "a.eval", folder / "logs" / "b.eval",
                 "--json", c_out], capsys)[0] == 0
    assert _run(["eval", folder / "logs", "--format", "inspect", "--paired", *MODELS,
                 "--json", e_out], capsys)[0] == 0
    _assert_same(_json(c_out), _json(e_out))


def test_compare_equals_eval_paired_clustered_on_score_tables(score_tables, capsys, tmp_path):
    folder, _ = score_tables
    c_out, e_out = tmp_path / "c.json", tmp_path / "e.json"
    assert _run(["compare", folder / "a.csv", folder / "b.csv", "--cluster", "passage",
                 "--json", c_out], capsys)[0] == 0
    assert _run(["eval", folder / "long.csv", "--format", SCORES_FORMAT, "--cluster-col",
                 "passage", "--paired", "a", "b", "--json", e_out], capsys)[0] == 0
    _assert_same(_json(c_out), _json(e_out))


def _assert_same(compared: dict, evaluated: dict) -> None:
    """Every number of ``winrate eval``'s JSON equals compare's (1e-12); compare adds
    ``mdd`` and ``power`` to each comparison."""
    (pair,), (ref,) = compared["comparisons"], evaluated["comparisons"]
    assert set(pair) - set(ref) == {"mdd", "power"}
    _close(pair, ref)
    runs = {pair["model_a"], pair["model_b"]}
    assert compared["models"].keys() == runs <= evaluated["models"].keys()
    _close(compared["models"], {run: evaluated["models"][run] for run in runs})


def _close(got, want, where="") -> None:
    if isinstance(want, dict):
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), where
    else:
        assert got == want, where


def test_three_runs_give_every_pair_with_simultaneous_intervals(score_tables, capsys,
                                                                tmp_path):
    folder, frames = score_tables
    out, e_out = tmp_path / "c.json", tmp_path / "e.json"
    code, text, _ = _run(["compare", *(folder / f"{k}.csv" for k in "bca"), "--cluster",
                          "passage", "--json", out, "--table-format", "text"], capsys)
    assert code == 0
    document = _json(out)
    means = {k: f["score"].mean() for k, f in frames.items()}
    ranked = sorted(means, key=lambda k: -means[k])
    assert document["ranked"] == ranked and [r["run"] for r in document["runs"]] == list("bca")
    pairs = [(c["model_a"], c["model_b"]) for c in document["comparisons"]]
    assert pairs == [(ranked[0], ranked[1]), (ranked[0], ranked[2]), (ranked[1], ranked[2])]
    crit_marginal, crit_bonferroni = stats.t.ppf([0.975, 1 - 0.05 / 6], 23)
    for c in document["comparisons"]:
        a, b = (frames[k].set_index("question_id") for k in (c["model_a"], c["model_b"]))
        hand = _hand_paired(a["score"], b["score"], a["passage"])
        assert c["se"] == pytest.approx(hand["se"], rel=1e-12)
        joint = c["simultaneous"]
        assert crit_marginal < joint["critical_value"] < crit_bonferroni
        for side, sign in (("ci_low", -1), ("ci_high", 1)):
            assert joint[side] == pytest.approx(
                hand["difference"] + sign * joint["critical_value"] * hand["se"], rel=1e-10)
    assert "simult. CI" in text and "p max-T" in text
    assert sum(line.startswith(tuple(ranked[:2])) for line in text.splitlines()) >= 3
    assert _run(["eval", folder / "long.csv", "--format", SCORES_FORMAT, "--cluster-col",
                 "passage", "--paired", ranked[1], ranked[2], "--json", e_out], capsys)[0] == 0
    last = dict(document["comparisons"][2])
    del last["simultaneous"]
    _close(last, _json(e_out)["comparisons"][0])


def test_three_runs_by_question_scale_the_joint_covariance_to_the_paired_se(
        score_tables, capsys, tmp_path):
    folder, frames = score_tables
    out = tmp_path / "c.json"
    assert _run(["compare", *(folder / f"{k}.csv" for k in "abc"), "--json", out],
                capsys)[0] == 0
    for c in _json(out)["comparisons"]:
        a, b = (frames[k].set_index("question_id") for k in (c["model_a"], c["model_b"]))
        hand = _hand_paired(a["score"], b["score"])
        joint = c["simultaneous"]
        half = (joint["ci_high"] - joint["ci_low"]) / 2
        assert half / joint["critical_value"] == pytest.approx(hand["se"], rel=1e-12)
        assert c["se"] == pytest.approx(hand["se"], rel=1e-12) and c["df"] is None
        assert stats.norm.ppf(0.975) < joint["critical_value"] < stats.norm.ppf(1 - 0.05 / 6)


def _error(argv, capsys) -> str:
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_runs_with_different_questions_are_an_error_naming_file_and_ids(score_tables,
                                                                         tmp_path, capsys):
    folder, frames = score_tables
    short = frames["b"].drop(index=[3, 40])
    extra = pd.DataFrame({"question_id": ["q999"], "score": [1.0], "passage": ["p1"]})
    pd.concat([short, extra]).to_csv(tmp_path / "b.csv", index=False)
    err = _error(["compare", folder / "a.csv", tmp_path / "b.csv"], capsys)
    assert err.startswith("winrate compare: error: ")
    assert str(tmp_path / "b.csv") in err and str(folder / "a.csv") in err
    assert "2 missing ('q003' and 'q040')" in err and "1 not in 'a' ('q999')" in err


def test_bad_inputs_are_one_line_errors(inspect_logs, score_tables, tmp_path, capsys):
    logs, _ = inspect_logs
    folder, _ = score_tables
    a, b = logs / "logs" / "a.eval", logs / "logs" / "b.eval"
    assert "two or more runs" in _error(["compare", a], capsys)
    assert "--metric applies to --format" in _error(["compare", a, b, "--metric", "acc"],
                                                    capsys)
    assert "different formats" in _error(["compare", a, folder / "a.csv"], capsys)
    err = _error(["compare", folder / "a.csv", folder / "b.csv", "--score-col", "correct"],
                 capsys)
    assert str(folder / "a.csv") in err and "'correct'" in err
    assert "--power" in _error(["compare", a, b, "--power", "1.2"], capsys)
    err = _error(["compare", a, b, "--json", a], capsys)
    assert "--json" in err


def test_the_formats_are_the_harness_readers_and_score_tables():
    assert RUN_FORMATS == (*HARNESS_FORMATS, SCORES_FORMAT)


def test_eval_format_reads_a_harness_log_and_keeps_the_table_format_alias(inspect_logs,
                                                                           capsys):
    folder, truth = inspect_logs
    code, out, _ = _run(["eval", folder / "logs", "--format", "inspect", "--table-format",
                         "csv"], capsys)
    assert code == 0
    frame = pd.read_csv(pd.io.common.StringIO(out)).set_index("model")
    assert frame.loc[MODELS[0], "mean"] == pytest.approx(truth["a"].mean(), rel=1e-12)
    assert "--format" in _error(["eval", folder / "logs", "--format", "inspect",
                                 "--scorer", "x", "--metric", "acc"], capsys)


def test_two_runs_of_one_model_keep_their_labels_and_the_order_given(tmp_path, capsys):
    values = {k: ["C" if k % 3 else "I"] for k in range(40)}
    after = {k: ["C" if k % 4 else "I"] for k in range(40)}
    fx.inspect_eval(tmp_path / "before.eval", "org/m", "mmlu", values)
    fx.inspect_eval(tmp_path / "after.eval", "org/m", "mmlu", after)
    out = tmp_path / "c.json"
    assert _run(["compare", tmp_path / "after.eval", tmp_path / "before.eval", "--json", out],
                capsys)[0] == 0
    document = _json(out)
    (record,) = document["comparisons"]
    assert (record["model_a"], record["model_b"]) == ("org/m@after", "org/m@before")
    assert record["difference"] == pytest.approx(np.mean([k % 4 > 0 for k in range(40)])
                                                 - np.mean([k % 3 > 0 for k in range(40)]),
                                                 rel=1e-12)
    assert document["runs"] == [{"run": "org/m@after", "files": [str(tmp_path / "after.eval")]},
                                {"run": "org/m@before",
                                 "files": [str(tmp_path / "before.eval")]}]


def test_a_folder_of_lm_eval_runs_is_the_docs_python_example(tmp_path, capsys, monkeypatch):
    """docs/formats.md's Python example (+0.020, SE 0.027, McNemar exact p = 0.585) from
    one folder holding both runs."""
    fx.write_doc_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _run(["compare", "results", "--format", "lm_eval", "--metric", "acc", "--json",
                 "c.json"], capsys)[0] == 0
    (record,) = _json(tmp_path / "c.json")["comparisons"]
    assert {record["model_a"], record["model_b"]} == {"org/model-a", "org/model-b"}
    sign = 1 if record["model_a"] == "org/model-b" else -1
    assert f"{sign * record['difference']:+.3f} {record['se']:.3f}" == "+0.020 0.027"
    assert f"{record['mcnemar']['p_exact']:.3f}" == "0.585"


def test_a_bad_score_names_its_file_and_line(score_tables, tmp_path, capsys):
    folder, frames = score_tables
    broken = frames["b"].copy()
    broken.loc[5, "score"] = np.nan
    broken.to_csv(tmp_path / "b.csv", index=False)
    err = _error(["compare", folder / "a.csv", tmp_path / "b.csv"], capsys)
    assert f"{tmp_path / 'b.csv'} line 7" in err  # header line 1, row 5 on line 7
