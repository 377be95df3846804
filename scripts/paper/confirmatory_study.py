"""The confirmatory coverage study in the paper (issue 36): its committed results
(``paper/confirmatory/summary.csv``, written by ``python scripts/coverage.py
--confirmatory``; registration ``paper/confirmatory/registration.md``) turned into
Appendix E's table and the numbers the text quotes. ``make paper`` only reads the
committed summary: the study takes over an hour on one core.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from common import PAPER, Paper, fmt
from heldout.confirmatory import CONFIRMATORY_SEED, WIDTH_LIMIT
from heldout.study import MC_LEVEL, RULE_MARGINAL

ESTIMATOR_SHORT = {"winrate": "WR", "bt": "BT", "bt_style": "BT+style"}
#: What auto ran, from the study's ``method`` label (``auto/<correction>/<reference>
#: [<method>]``).
AUTO_SHORT = {"cr2/t [sandwich]": "CR2, t", "cr1/t [jackknife]": "jackknife, t",
              "cr1/t [sandwich]": "CR1, t", "cr1/normal [sandwich]": "CR1, normal"}


def _auto(label: str) -> str:
    key = str(label).removeprefix("auto/")
    return AUTO_SHORT.get(key, key)


def _with_interval(value: float, low: float, high: float) -> str:
    return f"{fmt(value, '.1f')} [{fmt(max(low, 0.0), '.1f')}, {fmt(min(high, 100.0), '.1f')}]"


def _ratio(row, alt: str) -> str:
    """auto's width over the alternative's; a star where the alternative covers (and so
    sets the width bar of rule ii)."""
    ratio = getattr(row, f"width_ratio_{alt}")
    if not np.isfinite(ratio):
        return "-"
    return fmt(ratio, ".2f") + ("*" if getattr(row, f"{alt}_covers") else "")


def confirmatory_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Appendix E's per-cell table (formatted strings)."""
    return pd.DataFrame({
        "cell": summary.cell,
        "est.": summary.estimator.map(ESTIMATOR_SHORT),
        "auto ran": summary.method.map(_auto),
        "marginal [99% MC]": [_with_interval(r.marginal, r.marginal_lo99, r.marginal_hi99)
                              for r in summary.itertuples()],
        "simultaneous [99% MC]": [_with_interval(r.simultaneous, r.simultaneous_lo99,
                                                 r.simultaneous_hi99)
                                  for r in summary.itertuples()],
        "not est.": [fmt(v, ".1f") for v in summary.not_estimable_per_rep],
        "dropped": [str(int(d + e)) for d, e in zip(summary.dropped_no_estimate,
                                                    summary.errors, strict=True)],
        "width / CR1": [_ratio(r, "cr1") for r in summary.itertuples()],
        "width / alt. 2": [_ratio(r, "bm") for r in summary.itertuples()],
        "floor %": ["-" if not np.isfinite(v) else fmt(v, ".0f")
                    for v in summary.floor_share_median],
        "verdict": ["pass" if r.verdict == "pass" else f"fail: {_why(r)}"
                    for r in summary.itertuples()],
    })


def confirmatory_results(paper: Paper, source=PAPER / "confirmatory") -> None:
    """Table ``confirmatory`` and the ``conf_*`` numbers."""
    summary = pd.read_csv(source / "summary.csv")
    run = json.loads((source / "run.json").read_text(encoding="utf-8"))
    reps = int(summary.reps.max())
    paper.table("confirmatory", confirmatory_table(summary),
                f"Confirmatory study of the frozen auto ({reps} replications per cell, new "
                "seeds; registered before the run): coverage (%) of nominal 95% intervals "
                f"among the models reported as estimable, with {MC_LEVEL}% Monte Carlo "
                "intervals; not est.: models without an SE per replication; dropped: "
                "replications without an estimate or with an error; width / CR1 and "
                "width / alt. 2: auto's mean marginal width over that of CR1 with a normal "
                "reference and of the second alternative (CR2 with Bell-McCaffrey df for "
                "the win rate, CR1 with t on the effective clusters for Bradley-Terry), a "
                "star where the alternative covers and so sets the width bar; floor %: "
                "median share of the win rate's variance from the small-sample floor. "
                f"Rule (i): marginal interval meets [{RULE_MARGINAL[0]}, {RULE_MARGINAL[1]}], "
                "simultaneous reaches 92 (90 in the H- cells); rule (ii): width at most "
                f"{WIDTH_LIMIT} times that of a covering alternative. WR: win rate; BT: "
                "Bradley-Terry; N-: the generator written after the freeze; fail: the rule "
                "broken (coverage: i, width: ii).")
    failed = summary[summary.verdict == "fail"]
    paper.number("conf_reps", reps, "d")
    paper.number("conf_seed", CONFIRMATORY_SEED, "d")
    paper.number("conf_cells", summary.cell.nunique(), "d")
    paper.number("conf_rows", len(summary), "d")
    paper.number("conf_pass", int((summary.verdict == "pass").sum()), "d")
    paper.number("conf_fail", len(failed), "d")
    paper.number("conf_fail_i", int((~summary.rule_i.astype(bool)).sum()), "d")
    paper.number("conf_fail_ii", int((summary.rule_ii.astype(str) == "False").sum()), "d")
    paper.number("conf_registration", run["registration_commit"][:7])
    paper.number("conf_dropped", int(summary.dropped_no_estimate.sum()), "d")
    paper.number("conf_errors", int(summary.errors.sum()), "d")
    paper.extremes("conf_mar", summary.marginal, ".1f")
    paper.extremes("conf_sim", summary.simultaneous, ".1f")
    winrate = summary[summary.estimator == "winrate"]
    paper.extremes("conf_floor", winrate.floor_share_median.dropna(), ".0f")
    ratings = summary[summary.estimator != "winrate"]
    for alt, key in (("cr1", "cr"), ("bm", "bm")):
        paper.extremes(f"conf_ratio_{key}", summary[f"width_ratio_{alt}"].dropna(), ".2f")
        paper.extremes(f"conf_wr_ratio_{key}", winrate[f"width_ratio_{alt}"].dropna(), ".2f")
        paper.extremes(f"conf_bt_ratio_{key}", ratings[f"width_ratio_{alt}"].dropna(), ".2f")
    paper.number("conf_fail_list", "none" if failed.empty else "; ".join(
        f"{c} ({ESTIMATOR_SHORT[e]}: {_why(r)})" for c, e, r in
        zip(failed.cell, failed.estimator, failed.itertuples(), strict=True)))


def _why(row) -> str:
    """Which rule a failing cell broke, in words."""
    parts = []
    if not row.rule_i:
        parts.append("coverage")
    if str(row.rule_ii) == "False":
        parts.append("width")
    return " and ".join(parts)
