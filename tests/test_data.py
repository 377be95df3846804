"""Reading, coding and validating comparison logs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from winrate.errors import WinrateInputError
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog, read_comparisons

#: the row labels of input errors
AT = r"first rows \(index labels\): "


def _frame(outcomes, model_a=("x", "y", "z", "x"), model_b=("y", "z", "x", "z")):
    n = len(outcomes)
    return pd.DataFrame({"prompt_id": [f"p{i % 2}" for i in range(n)],
                         "judge_id": ["j"] * n, "model_a": list(model_a)[:n],
                         "model_b": list(model_b)[:n], "outcome": list(outcomes)})


@pytest.mark.parametrize("outcomes", [
    ["a", "b", "tie", "A"],
    ["model_a", "model_b", "tie", "Model_A"],
    ["x", "z", "tie", "x"],
    [1, 0, 0.5, 1],
    ["1", "0", "0.5", "1.0"],
])
def test_every_outcome_encoding_gives_the_same_scores(outcomes):
    log = read_comparisons(_frame(outcomes))
    np.testing.assert_array_equal(log.score, [1.0, 0.0, 0.5, 1.0])
    assert list(log.models) == ["x", "y", "z"]


def test_both_orders_pool_into_one_pair():
    forward = read_comparisons(_frame(["a", "a", "b"], ("x", "x", "y"), ("y", "y", "x")))
    board = fit(forward)
    assert board.counts[0, 1] == 3
    assert board.psi[0, 1] == pytest.approx(1.0)


def test_categorical_columns_and_custom_names():
    frame = _frame(["a", "b", "tie", "a"]).rename(columns={"model_a": "left", "outcome": "w"})
    frame["left"] = frame["left"].astype("category")
    log = read_comparisons(frame, model_a_col="left", outcome_col="w")
    np.testing.assert_array_equal(log.score, [1.0, 0.0, 0.5, 1.0])


def test_judge_and_prompt_columns_are_optional_by_default():
    log = read_comparisons(_frame(["a", "b", "tie", "a"]).drop(columns=["judge_id"]))
    assert set(log.axes) == {"prompt"}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_file_formats_round_trip(tmp_path, suffix):
    frame = _frame(["a", "b", "tie", "x"])
    path = tmp_path / f"log{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    np.testing.assert_array_equal(read_comparisons(path).score, [1.0, 0.0, 0.5, 1.0])


@pytest.mark.parametrize(("frame", "kwargs", "message"), [
    (_frame(["a", "b", "tie", "a"]).iloc[:0], {}, "empty"),
    (_frame(["a", "b", None, "a"]), {}, r"'outcome': missing value .* " + AT + "2"),
    (_frame(["a", "won", "tie", "a"]), {}, r"unknown outcome .* " + AT + "1"),
    (_frame(["a", "x", "tie", "a"]), {}, r"unknown outcome .* " + AT + "1"),
    (_frame([1, 2, 0.5, 1]), {}, r"not in \[0, 1\] .* " + AT + "1"),
    (_frame(["a", "b", "tie", "a"], ("x", "y", "z", "z")), {}, r"same model .* " + AT + "3"),
    (_frame(["a", "b", "tie", "a"], ("x", None, "z", "x")), {}, r"'model_a': missing .* 1"),
    (_frame(["a", "b", "tie", "a"]), {"judge_col": "rater"}, r"'rater' not found"),
    (_frame(["a", "b", "tie", "a"]), {"cluster_cols": ("topic",)}, r"'topic' not found"),
])
def test_bad_input_names_the_column_and_rows(frame, kwargs, message):
    with pytest.raises(WinrateInputError, match=message):
        read_comparisons(frame, **kwargs)


def test_weight_column_validated_and_zero_rows_dropped():
    frame = _frame(["a", "b", "tie", "a"])
    frame["count"] = [2, 0, 1, 3]
    log = read_comparisons(frame, weight_col="count")
    assert log.n_rows == 3 and log.n_comparisons == 6
    frame["count"] = [2, -1, 1, 3]
    with pytest.raises(WinrateInputError, match=r"'count'.*" + AT + "1"):
        read_comparisons(frame, weight_col="count")


def test_from_arrays_validation():
    with pytest.raises(WinrateInputError, match="empty"):
        ComparisonLog.from_arrays([], [], [])
    with pytest.raises(WinrateInputError, match="model_a equals model_b"):
        ComparisonLog.from_arrays([0, 1], [1, 1], [1, 0])
    with pytest.raises(WinrateInputError, match=r"score not in"):
        ComparisonLog.from_arrays([0, 1], [1, 0], [1, 1.3])


def test_from_arrays_rejects_codes_outside_the_model_list():
    with pytest.raises(WinrateInputError, match="negative model code"):
        ComparisonLog.from_arrays([0, -1], [1, 0], [1, 0])
    with pytest.raises(WinrateInputError, match="model codes go up to 2 but only 2"):
        ComparisonLog.from_arrays([0, 2], [1, 0], [1, 0], models=["x", "y"])


def test_unused_categories_are_not_clusters():
    """A categorical column keeps categories of dropped rows; they must not count as clusters."""
    frame = _frame(["a", "b", "tie", "a"])
    frame["prompt_id"] = pd.Categorical(frame["prompt_id"], categories=["p0", "p1", "p9"])
    frame["judge_id"] = pd.Categorical(frame["judge_id"], categories=["j", "k", "l"])
    log = read_comparisons(frame)
    assert log.axes["prompt"].n_clusters == frame["prompt_id"].nunique() == 2
    assert log.axes["judge"].n_clusters == 1


def test_graded_preferences_and_features_are_kept():
    frame = _frame([0.25, 1, 0.5, 0.875])
    frame["style_length"] = [0.1, -0.2, 0.0, 0.3]
    log = read_comparisons(frame, feature_cols=("style_length",))
    np.testing.assert_array_equal(log.score, [0.25, 1.0, 0.5, 0.875])
    np.testing.assert_array_equal(log.features["style_length"], [0.1, -0.2, 0.0, 0.3])
    frame.loc[2, "style_length"] = np.nan
    with pytest.raises(WinrateInputError, match=r"'style_length': feature .* " + AT + "2"):
        read_comparisons(frame, feature_cols=("style_length",))


@pytest.mark.parametrize("change, match", [
    ({"model_a": ["x"]}, r"ids\.jsonl': column 'model_a' holds a list, object or true/false "
                         r"where a name or id belongs, in row\(s\) 1 \(counted from 0\)"),
    ({"prompt_id": {"a": 1}}, r"column 'prompt_id' holds a list, object"),
    ({"judge_id": True}, r"column 'judge_id' holds a list, object or true/false"),
    ({"outcome": [1]}, r"column 'outcome': a list or object, not an outcome in 1 row"),
])
def test_json_list_object_or_bool_id_is_an_error(tmp_path, change, match):
    """A JSON list / object / true where a name, id or outcome belongs was a model named
    "['x']", a prompt "True", or (outcome) a TypeError traceback."""
    rows = [{"prompt_id": "p0", "judge_id": "j", "model_a": "x", "model_b": "y",
             "outcome": "a"}]
    rows.append({**rows[0], "prompt_id": "p1", **change})
    path = tmp_path / "ids.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(WinrateInputError, match=match):
        read_comparisons(path)


def test_text_outcomes_mixed_labels_numbers_and_winner_names_by_plain_rules():
    """Every text outcome against a row-by-row reading of the module docstring's rules."""
    rng = np.random.default_rng(3)
    n = 3000
    pool = ["a", " B ", "Tie", "model_a", "MODEL_B", "x", "y", "z", "0.25", "1", "0",
            *np.round(rng.random(200), 3).astype(str)]
    model_a = rng.choice(["x", "y"], n)
    model_b = np.where(model_a == "x", "y", "z")
    outcome = rng.choice(pool, n)
    winner_ok = (outcome == model_a) | (outcome == model_b)
    keep = winner_ok | ~np.isin(outcome, ["x", "y", "z"])  # a third model's name is an error
    frame = pd.DataFrame({"model_a": model_a, "model_b": model_b, "outcome": outcome})[keep]

    def plain(label: str, a: str, b: str) -> float:
        word = label.strip().lower()
        named = {"a": 1.0, "model_a": 1.0, "b": 0.0, "model_b": 0.0, "tie": 0.5}
        if word in named:
            return named[word]
        if label == a or label == b:
            return 1.0 if label == a else 0.0
        return float(label)

    expected = [plain(o, a, b) for a, b, o in frame.itertuples(index=False)]
    log = read_comparisons(frame)
    assert (log.models[log.model_a] == frame["model_a"].to_numpy()).all()
    np.testing.assert_allclose(log.score, expected, atol=0)
    bad = frame.assign(outcome=["x" if a == "y" else "w" for a in frame["model_a"]])
    with pytest.raises(WinrateInputError, match="unknown outcome"):
        read_comparisons(bad)
