"""scripts/paper/coverage_methods.py: every method and choice the coverage studies name
reaches the reader in words, and the held-out table keeps the study's verdicts."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "paper"))
sys.path.insert(1, str(ROOT / "scripts"))  # heldout/, as the build sees it

import coverage_methods as cm  # noqa: E402

STUDY = ROOT / "paper" / "coverage"


def test_every_method_of_the_studies_has_a_name_in_words():
    grid = pd.read_csv(STUDY / "coverage.csv")
    designs = pd.read_csv(STUDY / "coverage_designs.csv")
    assert set(grid.method) | set(designs.method) <= set(cm.METHOD_NAMES)
    assert all(" " in name or "(" in name for name in cm.METHOD_NAMES.values())


def test_every_choice_of_auto_in_the_heldout_study_is_named():
    summary = pd.read_csv(STUDY / "heldout" / "summary.csv")
    named = {cm.auto_choice(label) for label in summary.method}
    assert named <= set(cm.AUTO_CHOICES.values())
    assert cm.auto_choice("auto/cr2/t [sandwich]") == "CR2, t (Pan-Wall df)"
    assert set(summary.estimator) <= set(cm.ESTIMATOR_NAMES)


def test_heldout_rule_column_follows_the_registered_rule(tmp_path):
    from common import Paper

    summary = pd.read_csv(STUDY / "heldout" / "summary.csv")
    paper = Paper(tmp_path)
    cm.heldout_coverage(paper, STUDY / "heldout")
    table = pd.read_csv(tmp_path / "tables" / "heldout_coverage.csv", dtype=str)
    assert len(table) == len(summary)
    few = summary.cell.isin(cm.FEW_CLUSTER_CELLS)
    assert (table["rule met"][~few] == summary.rule_met[~few].map({True: "yes",
                                                                  False: "no"})).all()
    assert table["rule met"][few].str.startswith("few clusters").all()
    # a 99% interval as in the study's report: "96.1 [95.8, 96.3]" for T-thin-3's win rate
    first = summary.iloc[0]
    assert table["marginal % [99% MC]"].iloc[0] == (
        f"{first.marginal:.1f} [{first.marginal_lo99:.1f}, {first.marginal_hi99:.1f}]")
    assert paper.numbers["heldout_rule_met"] == paper.numbers["heldout_rows"]
