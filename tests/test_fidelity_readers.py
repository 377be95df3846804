"""Issue 26, the readers' edge cases: model names that are also outcome labels, ids
normalised alike in every reader, names that differ only by whitespace or Unicode form,
Parquet list columns. Each case is a small file in the format a user would have."""

from __future__ import annotations

import json
import unicodedata
import warnings

import numpy as np
import pandas as pd
import pytest

from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.logs import read_comparisons
from winrate.notes import gathered


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def read_noted(path, **options):
    """The log and the codes of the notes its reading gave."""
    with gathered() as notes:
        log = read_comparisons(path, **options)
    return log, notes.codes


def mean_score(log, model: str) -> float:
    """Half-tie win rate of ``model`` over its rows, by a plain loop (the oracle)."""
    k = list(log.models).index(model)
    wins = [s if a == k else 1 - s
            for a, b, s in zip(log.model_a, log.model_b, log.score, strict=True) if k in (a, b)]
    return float(np.mean(wins))


# --------------------------------------------------------------------------- name vs label


def test_winner_names_that_are_labels_are_refused_when_ambiguous(tmp_path):
    """Models named a and b, the winner's name as outcome: every value reads as a label
    too, and the two readings differ where b is model_a: refused, not 75 / 25."""
    rows = [{"model_a": "a", "model_b": "b", "outcome": "b"},
            {"model_a": "b", "model_b": "a", "outcome": "b"}] * 40
    path = tmp_path / "battles.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(WinrateInputError, match="both outcome labels and model names"):
        read_comparisons(path)


def test_winner_names_that_are_labels_resolved_by_content(tmp_path):
    """A third model's name as winner shows the column holds names: read as names (b won
    all 80 of its games with a), with an outcome-labels note."""
    rows = ([{"model_a": "a", "model_b": "b", "outcome": "b"},
             {"model_a": "b", "model_b": "a", "outcome": "b"}] * 40
            + [{"model_a": "c", "model_b": "a", "outcome": "c"}])
    path = tmp_path / "battles.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    log, codes = read_noted(path)
    assert "outcome-labels" in codes
    a, b = list(log.models).index("a"), list(log.models).index("b")
    pair = ((log.model_a == a) & (log.model_b == b)) | ((log.model_a == b) & (log.model_b == a))
    assert mean_score(log.__class__(log.model_a[pair], log.model_b[pair], log.score[pair],
                                    log.models), "b") == 1.0


def test_numeric_winner_names_are_not_read_as_scores(tmp_path):
    """Models 0 and 1, the winner's name in a numeric column: the numbers are names too,
    so the ambiguous column is refused rather than read as scores of model_a."""
    rows = [{"model_a": "0", "model_b": "1", "outcome": 1},
            {"model_a": "1", "model_b": "0", "outcome": 1}] * 10
    path = tmp_path / "battles.jsonl"
    write_jsonl(path, rows)
    with pytest.raises(WinrateInputError, match="both outcome labels and model names"):
        read_comparisons(path)


def test_labels_that_agree_with_names_pass_silently(tmp_path):
    rows = [{"model_a": "a", "model_b": "b", "outcome": "a"},
            {"model_a": "a", "model_b": "b", "outcome": "tie"}]
    path = tmp_path / "battles.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    log, codes = read_noted(path)
    assert codes == [] and log.score.tolist() == [1.0, 0.5]


# --------------------------------------------------------------------------- ids and names


def test_json_ids_7_and_7_0_are_one_cluster(tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", [
        {"prompt_id": 7, "model_a": "x", "model_b": "y", "outcome": 1},
        {"prompt_id": 7.0, "model_a": "x", "model_b": "y", "outcome": 0},
        {"prompt_id": "q", "model_a": "x", "model_b": "y", "outcome": 1}])
    assert read_comparisons(path).axes["prompt"].labels.tolist() == ["7", "q"]
    only_numbers = write_jsonl(tmp_path / "numbers.jsonl", [
        {"prompt_id": 7, "model_a": "x", "model_b": "y", "outcome": 1},
        {"prompt_id": 7.0, "model_a": "x", "model_b": "y", "outcome": 0}])
    assert read_comparisons(only_numbers).axes["prompt"].labels.tolist() == ["7"]


def test_parquet_float_ids_match_the_json_ids(tmp_path):
    frame = pd.DataFrame({"prompt_id": [7.0, 8.0], "model_a": ["x", "x"],
                          "model_b": ["y", "y"], "outcome": [1.0, 0.0]})
    frame.to_parquet(tmp_path / "log.parquet")
    labels = read_comparisons(tmp_path / "log.parquet").axes["prompt"].labels
    assert [str(v) for v in labels] == ["7", "8"]


def test_names_differing_by_whitespace_or_unicode_form_are_flagged(tmp_path):
    nfc = unicodedata.normalize("NFC", "modèle")
    nfd = unicodedata.normalize("NFD", "modèle")
    rows = [{"model_a": "gpt4", "model_b": "gpt4 ", "outcome": 1},
            {"model_a": nfc, "model_b": nfd, "outcome": 0},
            {"model_a": "gpt4", "model_b": nfc, "outcome": 1}]
    log, codes = read_noted(write_jsonl(tmp_path / "log.jsonl", rows))
    assert "similar-names" in codes and log.n_models == 4


@pytest.mark.parametrize("column", ["prompt_id", "model_a", "outcome"])
def test_parquet_list_column_is_a_one_line_error(column, tmp_path):
    frame = pd.DataFrame({"prompt_id": ["p1", "p2"], "model_a": ["x", "x"],
                          "model_b": ["y", "y"], "outcome": [1.0, 0.0]})
    frame[column] = [[1, 2], [3]]
    frame.to_parquet(tmp_path / "log.parquet")
    with pytest.raises(WinrateInputError, match=f"column.*{column}.*lists"):
        read_comparisons(tmp_path / "log.parquet")


def test_parquet_list_feature_column_is_a_one_line_error(tmp_path):
    frame = pd.DataFrame({"model_a": ["x", "x"], "model_b": ["y", "y"],
                          "outcome": [1.0, 0.0], "style": [[1.0], [2.0]]})
    frame.to_parquet(tmp_path / "log.parquet")
    with pytest.raises(WinrateInputError, match="style"):
        read_comparisons(tmp_path / "log.parquet", feature_cols=("style",))


def test_no_note_for_plain_files(tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", [
        {"prompt_id": 1, "model_a": "x", "model_b": "y", "outcome": "x"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", WinrateWarning)
        assert read_comparisons(path).score.tolist() == [1.0]
