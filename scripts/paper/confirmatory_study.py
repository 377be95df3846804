"""The confirmatory coverage study in the paper (issue 36): its committed results
(``paper/confirmatory/summary.csv``, written by ``python scripts/coverage.py
--confirmatory``; registration ``paper/confirmatory/registration.md``) turned into
Appendix E's table and the numbers the text quotes. ``make paper`` only reads the
committed summary: the study takes over an hour on one core.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
from common import PAPER, Paper, fmt
from heldout.confirmatory import CONFIRMATORY_SEED, WIDTH_LIMIT
from heldout.study import MC_LEVEL, MC_Z, RULE_MARGINAL

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
    detection(paper, summary, reps)
    paper.number("conf_width_limit", WIDTH_LIMIT, ".2f")
    paper.number("conf_limit_heavy", summary.simultaneous_limit.min(), ".0f")
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
    failure_groups(paper, summary)
    named_cells(paper, summary)
    said = re.search(r"(\d+) cell and estimator combinations",
                     (source / "registration.md").read_text(encoding="utf-8"))
    paper.number("conf_rows_said", int(said.group(1)), "d")
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


def detection(paper: Paper, summary: pd.DataFrame, reps: int) -> None:
    """What rule (i) can detect with ``reps`` replications: the median Monte-Carlo SE of
    the marginal coverages (``conf_mcse_mar``) and the binomial SE of a simultaneous
    coverage of 95% (``conf_mcse_sim``); the marginal coverage below which the rule's
    interval misses the band at that median SE (``conf_detect_mar``: 93 - z SE), and the
    simultaneous coverage p below which ``p + z sqrt(p (1 - p) / reps)`` stays under 92
    (``conf_detect_sim``), z the rule's Monte-Carlo quantile."""
    mcse = float(summary.marginal_mcse.median())
    paper.number("conf_mcse_mar", mcse, ".1f")
    paper.number("conf_mcse_sim", 100 * np.sqrt(0.95 * 0.05 / reps), ".1f")
    paper.number("conf_detect_mar", RULE_MARGINAL[0] - MC_Z * mcse, ".0f")
    p = np.linspace(0.0, 1.0, 100_001)
    reached = p + MC_Z * np.sqrt(p * (1 - p) / reps) >= 0.92
    paper.number("conf_detect_sim", 100 * p[np.argmax(reached)], ".0f")


def _listed(part: pd.DataFrame) -> str:
    """``cell (estimator)`` of each row, or ``none``."""
    if part.empty:
        return "none"
    return ", ".join(f"{c} ({ESTIMATOR_SHORT[e]})"
                     for c, e in zip(part.cell, part.estimator, strict=True))


def failure_groups(paper: Paper, summary: pd.DataFrame) -> None:
    """The failures by kind, each as a count and a list: coverage below the band
    (``conf_under``), above it (``conf_over``: the 99% interval lies above 97, which with
    few replications means every model covered in nearly every replication), the
    simultaneous limit missed (``conf_simfail``), and width (``conf_wide``), the last for
    the win rate and the ratings apart."""
    rule_i = summary.rule_i.astype(bool)
    under = summary[~rule_i & (summary.marginal_hi99 < RULE_MARGINAL[0])]
    over = summary[~rule_i & (summary.marginal_lo99 > RULE_MARGINAL[1])]
    sim = summary[~rule_i & (summary.simultaneous_hi99 < summary.simultaneous_limit)]
    wide = summary[summary.rule_ii.astype(str) == "False"]
    groups = {"under": under, "over": over, "simfail": sim, "wide": wide,
              "wide_wr": wide[wide.estimator == "winrate"],
              "wide_bt": wide[wide.estimator != "winrate"]}
    for name, part in groups.items():
        paper.number(f"conf_{name}", len(part), "d")
        paper.number(f"conf_{name}_list", _listed(part))
    paper.number("conf_fail_both", int((~rule_i & (summary.rule_ii.astype(str) == "False"))
                                       .sum()), "d")
    paper.number("conf_wide_wr_cells", " and ".join(groups["wide_wr"].cell) or "none")
    paper.extremes("conf_wide_bt_ratio", [_binding_ratio(r) for r in
                                          groups["wide_bt"].itertuples()], ".2f")


def _binding_ratio(row) -> float:
    """auto's width over the narrowest alternative that covers (the bar of rule ii)."""
    return max(getattr(row, f"width_ratio_{alt}") for alt in ("cr1", "bm")
               if getattr(row, f"{alt}_covers"))


#: Cells the text names, by their key in numbers (letters only), and the few-cluster cells
#: (an axis with fewer than 30 clusters).
NAMED = {"R-llmfao": "rllmfao", "R-qlora": "rqlora", "N-prd": "nprd", "N-qlora": "nqlora"}
FEW_CLUSTER = ("R-prd", "R-pandalm", "R-llmfao", "N-prd")


def named_cells(paper: Paper, summary: pd.DataFrame) -> None:
    """Marginal coverage of the cells the text names (``conf_<cell>_<wr|bt>_mar``), their
    not-estimable models per replication (``conf_<cell>_notest``), and the range of the
    marginal and simultaneous coverage over the cells with many clusters
    (``conf_many_mar``, ``conf_many_sim``)."""
    for cell, key in NAMED.items():
        rows = summary[summary.cell == cell].set_index("estimator")
        for estimator, short in (("winrate", "wr"), ("bt", "bt")):
            paper.number(f"conf_{key}_{short}_mar", rows.loc[estimator, "marginal"], ".1f")
            paper.number(f"conf_{key}_{short}_sim", rows.loc[estimator, "simultaneous"],
                         ".1f")
        paper.number(f"conf_{key}_notest", rows.loc["winrate", "not_estimable_per_rep"],
                     ".0f")
    many = summary[~summary.cell.isin(FEW_CLUSTER)]
    paper.extremes("conf_many_mar", many.marginal, ".1f")
    paper.extremes("conf_many_sim", many.simultaneous, ".1f")
