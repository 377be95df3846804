"""``winrate eval --by COLUMN`` (winrate.evals.by_category, issue 33 item 3): one report per
category equal to a separate run on its questions (to 1e-12), the family's joint
covariance equal to statsmodels' cluster-robust covariance of the stacked cell-means
regression (to 1e-10), and the command line's text and JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from winrate.cli import main
from winrate.evals.by_category import evaluate_by
from winrate.evals.frame import evaluate, question_scores


def _answers(seed: int = 2) -> pd.DataFrame:
    """0/1 answers of three models to 240 questions in four subjects, with 16 sources that
    span the subjects (so the sources correlate the subjects' means)."""
    rng = np.random.default_rng(seed)
    n = 240
    source = rng.integers(0, 16, n)
    subject = rng.choice(["bio", "chem", "law", "math"], n)
    effect = rng.normal(0, 0.8, 16)[source]
    rows = []
    for k, model in enumerate(["m-a", "m-b", "m-c"]):
        p = 1 / (1 + np.exp(-(0.3 * k - 0.2 + effect)))
        answered = rng.random(n) < 0.95  # a few questions left unanswered
        rows.append(pd.DataFrame({"question": np.arange(n)[answered].astype(str),
                                  "src": source[answered].astype(str),
                                  "subject": subject[answered], "model": model,
                                  "correct": (rng.random(n) < p)[answered].astype(float)}))
    return pd.concat(rows, ignore_index=True)


def test_each_report_is_a_separate_run_on_its_questions():
    frame = _answers()
    qs = question_scores(frame, "correct", "question", "model", ["src", "subject"])
    boards = evaluate_by(qs, "subject", correction="cr1")
    assert list(boards.reports) == ["bio", "chem", "law", "math"]
    for subject, report in boards.reports.items():
        alone = evaluate(question_scores(frame[frame["subject"] == subject], "correct",
                                         "question", "model", ["src"]), correction="cr1")
        assert list(report.models) == list(alone.models)
        for name, result in report.models.items():
            for key in ("mean", "se", "ci_low", "ci_high"):
                assert getattr(result.summary, key) == pytest.approx(
                    getattr(alone.models[name].summary, key), abs=1e-12)


def test_family_covariance_equals_statsmodels_on_the_stacked_design():
    """The stacked means are the coefficients of a regression of every answer on one dummy
    per (subject, model) cell; statsmodels' CR0 covariance clustered by source
    (``use_correction=False``) times G / (G - 1) is the family's CR1 covariance."""
    frame = _answers()
    qs = question_scores(frame, "correct", "question", "model", ["src", "subject"])
    family = evaluate_by(qs, "subject", correction="cr1").family
    cell = pd.Categorical(list(zip(frame["subject"], frame["model"], strict=True)),
                          categories=list(family.parameters))
    design = pd.get_dummies(cell).to_numpy(float)
    fit = sm.OLS(frame["correct"].to_numpy(), design).fit(
        cov_type="cluster", cov_kwds={"groups": frame["src"].astype(int).to_numpy(),
                                      "use_correction": False})
    g = frame["src"].nunique()
    np.testing.assert_allclose(fit.params, [m for m in _means(qs, family)], atol=1e-12)
    np.testing.assert_allclose(family.cov, fit.cov_params() * g / (g - 1), rtol=1e-10,
                               atol=1e-15)
    assert np.abs(family.cov[:3, 3:]).max() > 0.1 * np.abs(family.cov[:3, :3]).max()


def _means(qs, family):
    scores = qs.scores
    subject = qs.clusters["subject"]
    return [scores.loc[subject == s, m].mean() for s, m in family.parameters]


def test_command_line_eval_by(tmp_path, capsys):
    path, out = tmp_path / "answers.csv", tmp_path / "by.json"
    _answers().to_csv(path, index=False)
    args = ["eval", str(path), "--score-col", "correct", "--question-col", "question",
            "--model-col", "model", "--cluster-col", "src", "--by", "subject"]
    assert main([*args, "--table-format", "text", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(f"subject = {s}\n=========" in text for s in ("bio", "chem", "law", "math"))
    assert text.count("joint max-|T| over 12 means") == 4
    doc = json.loads(out.read_text())
    assert doc["by"] == "subject" and sorted(doc["categories"]) == ["bio", "chem", "law", "math"]
    bio = doc["categories"]["bio"]
    assert set(bio["family_low"]) == set(bio["models"]) == {"m-a", "m-b", "m-c"}
    assert all(bio["family_low"][m] <= bio["models"][m]["ci_low"] + 1e-12 for m in bio["models"]
               if bio["models"][m]["ci_low"] > 0)
    assert len(doc["family"]["cov"]) == 12
    assert main([*args[:-2], "--by", "src"]) == 2  # src is a cluster column too
    assert "cannot also be a --cluster-col" in capsys.readouterr().err


def test_a_category_on_one_cluster_gets_no_report_but_a_note():
    from tests.note_codes import notes_of

    frame = _answers()
    frame.loc[frame["subject"] == "law", "src"] = "0"  # law: one source, one cluster
    qs = question_scores(frame, "correct", "question", "model", ["src", "subject"])
    with pytest.warns(Warning) as caught:
        boards = evaluate_by(qs, "subject", correction="cr1")
    assert list(boards.reports) == ["bio", "chem", "math"] and list(boards.thin) == ["law"]
    assert "by subject: 1 category too thin" in notes_of(caught).only("not-estimable")[0]
    assert [p[0] for p in boards.family.parameters] == [s for s in ("bio", "chem", "math")
                                                        for _ in range(3)]


def test_the_variance_module_refusing_the_family_is_an_input_error():
    from winrate.errors import WinrateInputError
    from winrate.inference.family import Member, family_covariance

    member = Member(np.ones((4, 2)), np.eye(2), (np.zeros(4, int),))
    with pytest.raises(WinrateInputError):
        family_covariance([member, member], [1], "cr1")
    with pytest.raises(WinrateInputError, match="correction 'none' or 'cr1'"):
        family_covariance([member], [2], "cr2")
