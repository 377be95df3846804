"""Issue 26, the edges where winrate gave a traceback or a silent wrong number: covariates
given twice or constant up to rounding, a '$' in a model name on a plot, extreme alpha,
logs of ties only. Each runs the command line on a small CSV log, as a user would."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import special

from tests.note_codes import coded_lines, warns_code
from winrate.cli import main


def battle_log(path, names=("m1", "m2", "m3", "m4", "m5"), n=400, seed=0):
    rng = np.random.default_rng(seed)
    strength = np.linspace(1, -1, len(names))
    rows = []
    for i in range(n):
        a, b = rng.choice(len(names), 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        rows.append({"prompt_id": f"q{i % 50}", "model_a": names[a], "model_b": names[b],
                     "outcome": float(rng.random() < p), "constant": 0.3,
                     "length": rng.random()})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def one_line_error(capsys, args) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_same_covariate_twice_is_a_one_line_error(tmp_path, capsys):
    path = battle_log(tmp_path / "log.csv")
    err = one_line_error(capsys, ["leaderboard", str(path), "--model", "bt",
                                  "--covariates", "length,length"])
    assert "given more than once" in err


def test_constant_covariate_up_to_rounding_is_refused(tmp_path, capsys):
    """0.3 in every row: its computed sd is ~1e-17, not 0; it must not become an intercept."""
    path = battle_log(tmp_path / "log.csv")
    err = one_line_error(capsys, ["leaderboard", str(path), "--model", "bt",
                                  "--covariates", "constant"])
    assert "covariate 'constant' is constant" in err


@pytest.mark.parametrize("name", ["cost$5", "$x_$", "price: $\\undefined$"])
def test_dollar_in_a_model_name_is_plotted_as_text(name, tmp_path, capsys):
    path = battle_log(tmp_path / "log.csv", names=(name, "m2", "m3", "m4"))
    assert main(["leaderboard", str(path), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0


@pytest.mark.parametrize("alpha", [0.99, 0.999999, 1e-6])
def test_rank_sets_and_critical_values_stay_ordered_at_any_alpha(alpha, tmp_path, capsys):
    path = battle_log(tmp_path / "log.csv")
    out = tmp_path / "out.json"
    assert main(["leaderboard", str(path), "--ranks", "--simultaneous", "--alpha", str(alpha),
                 "--cluster", "prompt", "--reference", "normal", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert all(lo <= hi for lo, hi in zip(report["rank_low"], report["rank_high"],
                                          strict=True))
    marginal = special.ndtri(1 - alpha / 2)
    assert report["simultaneous_critical_value"] >= marginal
    bonferroni = special.ndtri(1 - alpha / (2 * 5))
    assert report["simultaneous_critical_value"] <= bonferroni + 1e-12


def ties_log(path):
    rows = [{"prompt_id": f"q{i}", "model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}",
             "outcome": 0.5} for i in range(60)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_all_ties_bradley_terry_with_ranks(tmp_path, capsys):
    path = ties_log(tmp_path / "ties.csv")
    out = tmp_path / "out.json"
    assert main(["leaderboard", str(path), "--model", "bt", "--ranks", "--simultaneous",
                 "--pairwise", "--json", str(out), "--plot", str(tmp_path / "p.png")]) == 0
    report = json.loads(out.read_text())
    assert report["rank_low"] == [1, 1, 1] and report["rank_high"] == [3, 3, 3]
    coded_lines(capsys.readouterr().err, "not-estimable")
    assert "not-estimable" in {note["code"] for note in report["notes"]}


def test_all_ties_davidson_says_the_tie_parameter_diverges(tmp_path, capsys):
    path = ties_log(tmp_path / "ties.csv")
    err = one_line_error(capsys, ["leaderboard", str(path), "--model", "bt", "--ties",
                                  "davidson"])
    assert "tie parameter diverges" in err


@pytest.mark.parametrize("flag", ["--csv", "--json"])
def test_output_may_not_overwrite_the_input(flag, tmp_path, capsys):
    path = battle_log(tmp_path / "log.csv")
    before = path.read_bytes()
    err = one_line_error(capsys, ["leaderboard", str(path), flag, str(path)])
    assert "is the input file" in err and path.read_bytes() == before


def test_output_may_not_overwrite_a_file_of_the_input_folder(tmp_path, capsys):
    folder = tmp_path / "battles"
    folder.mkdir()
    (folder / "b.jsonl").write_text(json.dumps({"question_id": 1, "model_a": "x",
                                                "model_b": "y", "winner": "tie"}) + "\n")
    err = one_line_error(capsys, ["leaderboard", str(folder), "--format", "clean_battle",
                                  "--json", str(folder / "b.jsonl")])
    assert "lies inside the input folder" in err


def test_unwritable_output_fails_before_the_computation(tmp_path, capsys):
    """/proc takes no new file, even for root: the error comes before the log is read (a
    log that could not be read would otherwise be reported first)."""
    bad_log = tmp_path / "log.csv"
    bad_log.write_text("model_a,model_b\nx,y\n")  # no outcome column
    err = one_line_error(capsys, ["leaderboard", str(bad_log), "--json",
                                  "/proc/winrate-report.json"])
    assert "cannot write it" in err


def test_rank_sets_over_the_work_budget_use_bonferroni():
    """Marginal rank sets of K models have K(K - 1) contrasts: at 1,000 models the
    Monte-Carlo max-T would take minutes and GBs (issue 26: 127 s, 2 GB), so over
    ``MC_WORK`` the critical values are Bonferroni's q_{1 - alpha / m}, m = 2(K - 1) at the
    first step, computed here by hand; the sets stay ordered. The timing itself is
    measured by ``scripts/bench.py --only ranks`` (not a timed test)."""
    from winrate.inference.joint import MC_WORK, rank_sets

    K = 1000
    assert K * (K - 1) * 10_000 > MC_WORK
    rng = np.random.default_rng(0)
    est = rng.normal(size=K) * 0.05
    V = np.diag(rng.uniform(1e-4, 1e-3, K))
    with warns_code("bonferroni-fallback"):
        result = rank_sets(est, V, 0.05, stepdown=False)
    assert result.n_draws == 0
    np.testing.assert_allclose(result.critical_value, special.ndtri(1 - 0.05 / (2 * (K - 1))),
                               rtol=1e-12)
    assert (result.low <= result.high).all()
