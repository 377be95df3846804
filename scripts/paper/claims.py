"""The claims audit: each claim of the lesson "Why the naive SE is wrong", the value
measured here with its uncertainty, and a verdict (``reproduced``, ``not reproduced``,
``untestable``) decided by the protocol ``paper/claims_protocol.md``, which was committed
before this code computed a verdict.

The protocol's last table is the single source of every tolerance (:func:`read_protocol`);
this module measures (:data:`CLAIMS`) and compares (:func:`verdict`):

* a **value** claim (rules R1-R3, a band ``[low, high]``) is reproduced if the
  measurement's uncertainty interval ``U`` meets the band;
* a **direction** claim (R4, ``> t`` or ``< t``) is reproduced if all of ``U`` lies
  beyond ``t``;
* an **untestable** claim (the data cannot identify the quantity) gets no measurement.

``U`` is the estimate +- 2 Monte Carlo SEs for a simulation, the range over the seeded
19-model MMLU-Pro subsets for the lesson's 19-model claims, and the point for a full real
dataset. The lesson's own figures are paraphrased as the claims, never taken as results.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from common import PAPER, Paper, fmt
from real_data import N_SUBSETS, implied_naive_coverage

PROTOCOL = PAPER / "claims_protocol.md"
TOLERANCE_HEADING = "## Tolerances"
REPRODUCED, NOT_REPRODUCED, UNTESTABLE = "reproduced", "not reproduced", "untestable"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNTESTABLE)
NOMINAL = 95.0


@dataclass(frozen=True)
class Tolerance:
    """One row of the protocol's table: ``kind`` is ``value`` (band ``[low, high]``),
    ``above`` / ``below`` (threshold ``low`` = ``high``) or ``untestable``."""

    key: str
    rule: str
    claimed: str
    kind: str
    low: float = np.nan
    high: float = np.nan

    def text(self) -> str:
        if self.kind == "untestable":
            return "none: untestable"
        if self.kind == "value":
            return f"{self.rule}: [{fmt_plain(self.low)}, {fmt_plain(self.high)}]"
        return f"{self.rule}: {'>' if self.kind == 'above' else '<'} {fmt_plain(self.low)}"


def fmt_plain(x: float) -> str:
    """A protocol number as written there (``0.025``, ``40``): shortest round-trip."""
    return f"{x:g}"


_BAND = re.compile(r"^\[\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\]$")
_THRESHOLD = re.compile(r"^([<>])\s*(-?[\d.]+)$")


def parse_band(key: str, rule: str, claimed: str, band: str) -> Tolerance:
    """A protocol row as a :class:`Tolerance`; a band that fits no form is an error."""
    if rule == "untestable" and band == "none":
        return Tolerance(key, rule, claimed, "untestable")
    if match := _BAND.match(band):
        low, high = map(float, match.groups())
        if low <= high:
            return Tolerance(key, rule, claimed, "value", low, high)
    if match := _THRESHOLD.match(band):
        side, threshold = match.group(1), float(match.group(2))
        return Tolerance(key, rule, claimed, "above" if side == ">" else "below",
                         threshold, threshold)
    raise ValueError(f"claims protocol, claim {key!r}: band {band!r} with rule {rule!r} is "
                     "not '[low, high]', '> t', '< t' or 'none' (untestable)")


def read_protocol(text: str) -> dict[str, Tolerance]:
    """The table after the protocol's ``## Tolerances`` heading: ``| key | rule | claimed |
    band |`` rows, in order."""
    if TOLERANCE_HEADING not in text:
        raise ValueError(f"claims protocol has no '{TOLERANCE_HEADING}' section")
    section = text.split(TOLERANCE_HEADING, 1)[1]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.lstrip().startswith("|")]
    if not rows or rows[0] != ["key", "rule", "claimed", "band"]:
        raise ValueError("claims protocol: the tolerance table must have the columns "
                         "key | rule | claimed | band")
    body = [row for row in rows[1:] if not set("".join(row)) <= set("-: ")]
    return {row[0]: parse_band(*row) for row in body}


@dataclass(frozen=True)
class Measurement:
    """The uncertainty interval ``U = [low, high]`` of a measurement, the format of its
    bounds and how it reads."""

    low: float
    high: float
    text: str
    spec: str = ".2f"


def verdict(tolerance: Tolerance, measured: Measurement | None) -> str:
    """The protocol's verdict (module docstring): band met by ``U``, or ``U`` all beyond the
    threshold."""
    if tolerance.kind == "untestable":
        return UNTESTABLE
    if measured is None:
        raise ValueError(f"claim {tolerance.key!r} is testable in the protocol but has no "
                         "measurement")
    if tolerance.kind == "value":
        met = measured.low <= tolerance.high and measured.high >= tolerance.low
    elif tolerance.kind == "above":
        met = measured.low > tolerance.low
    else:
        met = measured.high < tolerance.high
    return REPRODUCED if met else NOT_REPRODUCED


# ------------------------------------------------------------------ measurements


@dataclass(frozen=True)
class Sources:
    """What the measurements read: the registered numbers, the 19-model subsets table and
    the coverage study's per-cell results."""

    numbers: dict[str, str]
    subsets: pd.DataFrame
    coverage: pd.DataFrame

    def __call__(self, key: str) -> float:
        return float(self.numbers[key].replace(",", ""))


def subset_range(values, spec: str, unit: str = "") -> Measurement:
    """The range over the 19-model subsets (the protocol's ``U`` for them)."""
    low, high = float(np.min(values)), float(np.max(values))
    return Measurement(low, high, f"{fmt(low, spec)} to {fmt(high, spec)}{unit} "
                                  f"({N_SUBSETS} subsets)", spec)


def monte_carlo(estimate: float, mcse: float, what: str) -> Measurement:
    """``estimate +- 2 mcse`` (the protocol's ``U`` for a simulation), rounded to 9 decimals
    so that a bound on a threshold (97.4 - 2 x 1.2 = 95) is exactly on it, not a rounding
    error beyond it (the registered inputs have at most 4)."""
    low, high = (round(estimate + sign * 2 * mcse, 9) for sign in (-1, 1))
    return Measurement(low, high,
                       f"{fmt(estimate, '.1f')}% (Monte Carlo SE {fmt(mcse, '.1f')}; {what})",
                       ".1f")


def subset_effective_n(s: Sources) -> Measurement:
    """Effective n per question at 19 models, ``n_eff / Q = m / infl^2``: a model's
    ``n = m Q`` comparisons (m per question) count as ``n / DEFF`` independent ones with
    ``DEFF = infl^2`` (Kish 1965, sec. 8.2); from the registered subset medians of m and of
    the inflation (smallest and largest over the subsets)."""
    m = s("mmlusub_m")
    return subset_range([m / s("mmlusub_infl_max") ** 2, m / s("mmlusub_infl_min") ** 2],
                        ".2f", " x Q")


def subset_naive_coverage(s: Sources) -> Measurement:
    """Naive coverage at 19 models, ``2 Phi(1.96 / infl) - 1`` (%) of the smallest and the
    largest subset inflation (:func:`real_data.implied_naive_coverage`)."""
    infl = [s("mmlusub_infl_min"), s("mmlusub_infl_max")]
    return subset_range(100 * implied_naive_coverage(infl), ".1f", "%")


def few_judge_coverage(s: Sources) -> Measurement:
    """The coverage study's two-way CR1 interval (normal reference) with 3 judges: the
    cell with the largest marginal coverage, +- 2 of its Monte Carlo SEs."""
    cells = s.coverage[(s.coverage.judges == 3) & (s.coverage.method == "twoway")]
    best = cells.loc[cells.marginal.idxmax()]
    return monte_carlo(float(best.marginal), float(best.marginal_mcse),
                       f"largest of {len(cells)} cells, {int(best.prompts)} prompts")


def largest_judge_share(s: Sources) -> Measurement:
    """The largest one-judge share of a model's judge-clustered variance on the few-judge
    data (PandaLM; PRD's multi-judge pairs): a full-data point."""
    shares = {"PandaLM": s("pandalm_judge_share_max"),
              "PRD multi-judge": s("prd_multijudge_judge_share_max")}
    name = max(shares, key=shares.get)
    return Measurement(shares[name], shares[name], f"{fmt(shares[name], '.3f')} ({name})",
                       ".3f")


@dataclass(frozen=True)
class Claim:
    key: str
    claim: str  # the lesson's claim, paraphrased, with its number
    setting: str
    measure: Callable[[Sources], Measurement] | None  # None: untestable
    context: Callable[[Sources], str]  # values that decide nothing


def _n(s: Sources, key: str) -> str:
    return s.numbers[key]


CLAIMS = (
    Claim("effective_n",
          "Effective n is the number of prompts: a model's comparisons on one prompt count "
          "as about one observation",
          "MMLU-Pro, 19 models, by question; n_eff / Q = m / infl^2",
          subset_effective_n,
          lambda s: f"29 models: {_n(s, 'mmlu_effn_per_prompt')} x Q"),
    Claim("inflation", "Clustering by prompt inflates the SE 4.2-fold (19 models)",
          "MMLU-Pro, 19-model subsets, by question",
          lambda s: subset_range([s("mmlusub_infl_min"), s("mmlusub_infl_max")], ".2f"),
          lambda s: f"29 models: {_n(s, 'mmlu_infl_prompt')}"),
    Claim("sqrt_m",
          "Inflation ~ sqrt(m) = sqrt(18) = 4.24 because the comparisons sharing a model's "
          "answer are correlated near 1",
          "MMLU-Pro, 19-model subsets: own-comparison correlation rho",
          lambda s: subset_range([s("mmlusub_own_icc_min"), s("mmlusub_own_icc_max")], ".2f"),
          lambda s: (f"sqrt(m) = {_n(s, 'mmlusub_sqrtm')}; Kish sqrt(1 + (m - 1) rho) = "
                     f"{fmt(s.subsets['Kish prediction'].min())} to "
                     f"{fmt(s.subsets['Kish prediction'].max())}")),
    Claim("judge_axis", "Adding the judge axis (3 judges) raises the inflation to 5.4",
          "MMLU-Pro with 3 judges: here one judge (the answer key), no judge axis",
          None,
          lambda s: (f"other data, other claim: PandaLM {_n(s, 'pandalm_infl_prompt')} by "
                     f"prompt, {_n(s, 'pandalm_infl_prompt_judge')} by prompt and judge; PRD "
                     f"{_n(s, 'prd_infl_prompt')}, {_n(s, 'prd_infl_prompt_judge')}")),
    Claim("naive_half", "So a nominal 95% naive interval covers about one half",
          "MMLU-Pro, 19 models: 2 Phi(1.96 / infl) - 1",
          subset_naive_coverage,
          lambda s: (f"29 models: {_n(s, 'mmlu_naivecov_prompt')}%; MMLU-like simulation "
                     f"(29 models): {_n(s, 'sim_mmlu_naive')}%")),
    Claim("icc_paradox",
          "The pair-level prompt ICC is only about 0.03, yet the inflation is large",
          "MMLU-Pro, 19-model subsets, pair-level ICC by question",
          lambda s: subset_range(s.subsets["pair-level ICC"], ".4f"),
          lambda s: f"29 models: {_n(s, 'mmlu_prompt_pair_icc')}"),
    Claim("two_sided", "In a within-prompt paired design the naive interval can over-cover",
          "seeded paired, position-swapped simulation; naive coverage (%)",
          lambda s: monte_carlo(s("sim_paired_naive"), s("sim_paired_naive_mcse"),
                                f"{_n(s, 'sim_reps')} replications"),
          lambda s: (f"clustered {_n(s, 'sim_paired_clustered')}%, inflation "
                     f"{_n(s, 'sim_paired_infl')}")),
    Claim("lindeberg",
          "The many-cluster condition is fragile: one judge can dominate when judges are few",
          "PandaLM (5 judges), PRD multi-judge pairs (6): largest one-judge variance share",
          largest_judge_share,
          lambda s: (f"LLMFAO ({_n(s, 'llmfao_judges')} judges): "
                     f"{_n(s, 'llmfao_judge_share_max')}; PRD all pairs: "
                     f"{_n(s, 'prd_judge_share_max')}")),
    Claim("few_judges", "With 3 judges the judge-level dependence is only a crude estimate",
          "coverage study, 3 judges: two-way CR1, normal reference, coverage (%)",
          few_judge_coverage,
          lambda s: (f"t reference: {_n(s, 'cov_three_t_min')}% to "
                     f"{_n(s, 'cov_three_t_max')}%; PRD: widths differ by "
                     f"{_n(s, 'prd_width_spread')}x across methods")),
)


def sources(paper: Paper) -> Sources:
    """The registered numbers plus the files of the same build the claims read."""
    if "mmlu_subsets" not in paper.tables:
        raise KeyError("the claims need the table mmlu_subsets of the datasets step: run it "
                       "too")
    return Sources(paper.numbers, pd.read_csv(paper.root / "tables" / "mmlu_subsets.csv"),
                   pd.read_csv(paper.root / "coverage" / "coverage.csv"))


def audit(s: Sources, tolerances: dict[str, Tolerance]) -> pd.DataFrame:
    """One row per claim: its paraphrase, setting, tolerance, measurement, verdict and
    context, plus its key and measurement (``U``, None if untestable); the claims and the
    protocol must list the same keys in the same order."""
    if list(tolerances) != [c.key for c in CLAIMS]:
        raise ValueError(f"the claims protocol lists {list(tolerances)}, the code "
                         f"{[c.key for c in CLAIMS]}")
    rows = []
    for claim in CLAIMS:
        tolerance = tolerances[claim.key]
        if (claim.measure is None) != (tolerance.kind == "untestable"):
            raise ValueError(f"claim {claim.key!r}: the protocol and the code disagree on "
                             "whether it is testable")
        measured = None if claim.measure is None else claim.measure(s)
        rows.append({"claim": claim.claim, "setting": claim.setting,
                     "tolerance": tolerance.text(),
                     "measured": "not identified" if measured is None else measured.text,
                     "verdict": verdict(tolerance, measured),
                     "context (no verdict)": claim.context(s), "key": claim.key,
                     "U": measured})
    return pd.DataFrame(rows)


def claims_table(paper: Paper) -> None:
    """Table ``claims``, the verdict of each claim (``claim_<key>``) and their counts."""
    protocol = read_protocol(PROTOCOL.read_text(encoding="utf-8"))
    table = audit(sources(paper), protocol)
    for key, tolerance in protocol.items():  # the lesson's own figure, as quoted there
        paper.number(f"claim_{key}_claimed", tolerance.claimed)
    for key, outcome, measured, band in zip(table.key, table.verdict, table.U,
                                            table.tolerance, strict=True):
        paper.number(f"claim_{key}", outcome)
        paper.number(f"claim_{key}_tolerance", band)
        if measured is not None:
            paper.number(f"claim_{key}_low", measured.low, measured.spec)
            paper.number(f"claim_{key}_high", measured.high, measured.spec)
    counts = table.verdict.value_counts()
    for outcome in VERDICTS:
        paper.number(f"claims_{outcome.replace(' ', '_')}", int(counts.get(outcome, 0)), "d")
    paper.number("claims_total", len(table), "d")
    paper.table("claims", table.drop(columns=["key", "U"]),
                "The lesson's claims audited under a protocol committed before "
                "the audit was rerun: tolerance by one rule (R1 stated number, R3 verbal "
                "approximation, R4 direction), measurement with its uncertainty (range over "
                "the 19-model subsets, +- 2 Monte Carlo SE, or a full-data point), verdict. "
                "The context column reports other settings and decides nothing.")
