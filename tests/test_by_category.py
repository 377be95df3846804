"""One board per category (winrate.by_category, leaderboard --by): each board equals a
separate run on that category's rows (scores and SEs to 1e-12), thin categories are named
in a note, score tables split by question, and the command line writes text and JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests import reader_fixtures as fx
from tests.note_codes import notes_of
from winrate import analyze, read_comparisons
from winrate.by_category import analyze_by
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.io.categories import split_by
from winrate.io.formats import read_format, read_log


@pytest.fixture()
def arena(tmp_path):
    path = tmp_path / "140k.parquet"
    fx.arena_140k(path, n=150)
    return path


def test_each_board_is_a_separate_run_on_its_rows(arena):
    frame = read_format(arena, "arena")
    boards = analyze_by(read_log(arena, "arena"), "language", cluster="prompt")
    assert list(boards.boards) == sorted(fx.LANGUAGES)
    for language, board in boards.boards.items():
        rows = frame.loc[frame["language"] == language, ["prompt_id", "model_a", "model_b",
                                                         "outcome"]]
        alone = analyze(read_comparisons(rows.astype({"model_a": str, "model_b": str,
                                                      "prompt_id": str})), cluster="prompt")
        assert list(board.models) == list(alone.models)
        np.testing.assert_allclose(board.scores, alone.scores, rtol=0, atol=1e-12)
        np.testing.assert_allclose(board.se, alone.se, rtol=0, atol=1e-12)


def test_thin_categories_are_named_in_one_note(tmp_path):
    rows = pd.DataFrame({"prompt_id": [f"p{k}" for k in range(40)],
                         "model_a": ["a", "b"] * 20, "model_b": ["b", "c"] * 20,
                         "outcome": [1, 0, 0.5, 1] * 10,
                         "subject": ["math"] * 38 + ["law"] * 2})
    rows.loc[38:, ["model_a", "model_b"]] = ["a", "b"]
    rows.loc[38:, "prompt_id"] = "p38"  # law: one prompt, so no clustered variance
    log = read_comparisons(rows, cluster_cols=("subject",))
    with pytest.warns(Warning) as caught:
        boards = analyze_by(log, "subject", cluster="prompt")
    assert list(boards.boards) == ["math"] and list(boards.thin) == ["law"]
    thin = notes_of(caught).only("not-estimable")
    assert len(thin) == 1 and "by subject: 1 category too thin" in thin[0]
    with pytest.raises(WinrateInputError, match="no column 'language' to split by"):
        analyze_by(log, "language")


def test_score_tables_split_by_question(tmp_path):
    out = fx.two_task_lm_eval(tmp_path / "results")
    table = read_log(out, "lm_eval")
    parts = split_by(table, "task")
    assert {k: v.scores.shape for k, v in parts.items()} == {"arc_easy": (40, 3),
                                                             "boolq": (35, 3)}
    boards = analyze_by(table, "task", cluster="prompt")
    whole = read_format(out, "lm_eval")
    for task, board in boards.boards.items():
        wide = whole[whole["task"] == task].pivot(index="question", columns="model",
                                                  values="score")
        # the half-tie win rate of a model on a task, from the table by brute force: its
        # mean score against each other model, question by question
        for k, model in enumerate(board.models):
            others = [m for m in wide.columns if m != model]
            rates = [(0.5 + (wide[model] - wide[o]) / 2).mean() for o in others]
            assert board.scores[k] == pytest.approx(np.mean(rates), abs=1e-12)


def test_command_line_by_column(arena, tmp_path, capsys):
    out = tmp_path / "by.json"
    assert main(["leaderboard", str(arena), "--format", "arena", "--by", "language",
                 "--cluster", "prompt", "--json", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert all(f"language = {lang}" in text for lang in fx.LANGUAGES)
    doc = json.loads(out.read_text())
    assert doc["by"] == "language" and doc["cluster"] == ["prompt"]
    assert sorted(doc["categories"]) == sorted(fx.LANGUAGES)
    assert main(["leaderboard", str(arena), "--format", "arena", "--by", "language",
                 "--csv", str(tmp_path / "p.csv")]) == 2
    assert "--by writes text, --json and --html, not --csv" in capsys.readouterr().err


def test_family_intervals_are_joint_over_the_boards(arena):
    """Sessions (the prompt clusters) never span is_code: the joint family's critical
    value lies between the marginal one and Bonferroni's over all scores, and its
    intervals are each board's scores -/+ that value times the board's own SEs (on the
    logit scale of win probabilities), so they contain the board's marginal intervals."""
    from scipy import special

    from winrate.inference.intervals import logit_bounds

    log = read_log(arena, "arena")
    boards = analyze_by(log, "is_code", cluster="prompt", family=True)
    family = boards.family
    assert family.rule == "joint" and family.board_alpha == 0.05
    m = len(family.parameters)
    assert m == sum(len(b.models) for b in boards.boards.values())
    assert special.stdtrit(family.df, 0.975) < family.critical_value \
        <= special.stdtrit(family.df, 1 - 0.025 / m) + 1e-12
    for label, board in boards.boards.items():
        half = family.critical_value * board.se
        low, high, _ = logit_bounds(board.scores, board.scores - half, board.scores + half)
        np.testing.assert_allclose(family.low[label], low, atol=1e-12, rtol=0)
        np.testing.assert_allclose(family.high[label], high, atol=1e-12, rtol=0)
        assert (family.low[label] <= board.intervals.low + 1e-12).all()
        assert (family.high[label] >= board.intervals.high - 1e-12).all()


def test_family_falls_back_to_bonferroni_when_clusters_span_categories():
    from winrate.by_category import _bounded_family, disjoint_clusters

    rng = np.random.default_rng(5)
    n = 400
    rows = pd.DataFrame({"prompt_id": rng.integers(0, 60, n).astype(str),
                         "model_a": rng.choice(["a", "b"], n), "model_b": "c",
                         "outcome": rng.integers(0, 2, n).astype(float),
                         "subject": rng.choice(["law", "math", "art"], n)})
    log = read_comparisons(rows, cluster_cols=("subject",))
    assert not disjoint_clusters(log, "subject", ("prompt",))
    assert disjoint_clusters(log, "subject", ())
    with pytest.warns(Warning):
        boards = analyze_by(log, "subject", cluster="prompt", family=True)
    assert boards.family.rule == "joint"  # shared prompts: the joint covariance holds them
    parts = split_by(log, "subject")
    with pytest.warns(Warning):
        fallback = _bounded_family(parts, ("prompt",), boards.boards, {}, "bonferroni")
    assert fallback.rule == "bonferroni"
    assert fallback.board_alpha == pytest.approx(0.05 / 3, abs=1e-15)


def test_command_line_family_intervals(arena, tmp_path, capsys):
    out = tmp_path / "by.json"
    assert main(["leaderboard", str(arena), "--format", "arena", "--by", "is_code",
                 "--cluster", "prompt", "--simultaneous", "--json", str(out),
                 "--no-progress"]) == 0
    assert "family 95% intervals (every score of the 2 boards at once; joint max-|T|" in \
        capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["family"]["rule"] == "joint"
    assert all(len(c["family_low"]) == len(c["models"]) for c in doc["categories"].values())
    assert main(["leaderboard", str(arena), "--format", "arena", "--by", "is_code",
                 "--cluster", "prompt", "--ranks", "--json", str(out), "--no-progress"]) == 0
    assert "rank sets within each category, jointly" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert all(1 <= low <= high <= len(c["models"]) for c in doc["categories"].values()
               for low, high in zip(c["family_rank_low"], c["family_rank_high"],
                                    strict=True))
