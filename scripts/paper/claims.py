"""The claims table: each claim of the lesson "Why the naive SE is wrong", the value
measured here, and a verdict decided by a stated rule (never typed by hand).

Verdicts: ``holds``, ``holds with a correction`` (the direction holds, the size does not)
and ``does not hold here``. Each rule is in
:data:`CLAIMS` next to the claim. The lesson's own figures (4-6x, sqrt(18), 0.03, 5.4x,
"about half") are quoted as the claims, not as results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from common import Paper

HOLDS, CORRECTED, FAILS = "holds", "holds with a correction", "does not hold here"


def value(numbers: dict[str, str], key: str) -> float:
    return float(numbers[key].replace(",", ""))


@dataclass(frozen=True)
class Claim:
    key: str
    claim: str
    needs: tuple[str, ...]  # number keys the rule reads
    measured: Callable[[dict], str]
    verdict: Callable[[dict], str]
    rule: str


def _band(x: float, holds: tuple[float, float], corrected: tuple[float, float]) -> str:
    if holds[0] <= x <= holds[1]:
        return HOLDS
    return CORRECTED if corrected[0] <= x <= corrected[1] else FAILS


CLAIMS = (
    Claim("inflation", "SEs inflate 4-6x (MMLU-Pro by prompt: 4.2x)",
          ("mmlu_infl_prompt", "mmlusub_infl_min", "mmlusub_infl_max", "pandalm_infl_prompt"),
          lambda n: (f"MMLU-Pro {n['mmlu_infl_prompt']}x (29 models), "
                     f"{n['mmlusub_infl_min']}-{n['mmlusub_infl_max']}x (19-model subsets); "
                     f"PandaLM {n['pandalm_infl_prompt']}x"),
          lambda n: _band(value(n, "mmlu_infl_prompt"), (4, 6), (2, 4)),
          "holds if the MMLU-Pro median is in [4, 6]; corrected if in [2, 4)"),
    Claim("effective_n", "The effective n is the number of prompts, not comparisons",
          ("mmlu_effn", "mmlu_prompts", "mmlu_effn_per_prompt", "mmlu_n_per_model"),
          lambda n: (f"MMLU-Pro: {n['mmlu_effn']} per model = {n['mmlu_effn_per_prompt']}x "
                     f"the {n['mmlu_prompts']} prompts, of {n['mmlu_n_per_model']} comparisons"),
          lambda n: _band(value(n, "mmlu_effn_per_prompt"), (0.8, 1.25), (0.5, 4)),
          "holds if effective n / prompts is in [0.8, 1.25]; corrected if in [0.5, 4]"),
    Claim("sqrt_m", "Back-of-envelope: inflation ~ sqrt(m) (sqrt(18) = 4.24 with 19 models)",
          ("mmlusub_sqrtm", "mmlusub_infl_min", "mmlusub_infl_max", "mmlu_prompt_sqrtm",
           "mmlu_infl_prompt", "mmlu_prompt_kish", "mmlu_prompt_own_icc"),
          lambda n: (f"19 models: sqrt(m) = {n['mmlusub_sqrtm']} vs measured "
                     f"{n['mmlusub_infl_min']}-{n['mmlusub_infl_max']}; 29 models: sqrt(m) = "
                     f"{n['mmlu_prompt_sqrtm']} vs {n['mmlu_infl_prompt']}, Kish with rho = "
                     f"{n['mmlu_prompt_own_icc']}: {n['mmlu_prompt_kish']}"),
          lambda n: (HOLDS if abs(value(n, "mmlusub_sqrtm") / value(n, "mmlusub_infl_max")
                                  - 1) <= 0.1
                     else CORRECTED if abs(value(n, "mmlu_prompt_kish")
                                           / value(n, "mmlu_infl_prompt") - 1) <= 0.1
                     else FAILS),
          "holds if sqrt(m) is within 10% of the measured inflation; corrected if Kish's "
          "sqrt(1 + (m - 1) rho) with the measured own-comparison rho is"),
    Claim("icc_paradox", "ICC paradox: a tiny pair-level ICC (~0.03) beside a large inflation",
          ("mmlu_prompt_pair_icc", "mmlu_infl_prompt", "mmlu_prompt_own_icc"),
          lambda n: (f"MMLU-Pro pair-level ICC {n['mmlu_prompt_pair_icc']}, own-comparison "
                     f"ICC {n['mmlu_prompt_own_icc']}, inflation {n['mmlu_infl_prompt']}x"),
          lambda n: (HOLDS if value(n, "mmlu_prompt_pair_icc") < 0.05
                     and value(n, "mmlu_infl_prompt") > 2 else FAILS),
          "holds if the pair-level ICC is below 0.05 while the inflation exceeds 2"),
    Claim("naive_half", "Naive 95% intervals cover about half",
          ("mmlu_naivecov_prompt", "sim_mmlu_naive", "sim_mmlu_implied"),
          lambda n: (f"implied by MMLU-Pro's inflation: {n['mmlu_naivecov_prompt']}%; "
                     f"MMLU-like simulation: {n['sim_mmlu_naive']}% (implied "
                     f"{n['sim_mmlu_implied']}%)"),
          lambda n: _band(value(n, "mmlu_naivecov_prompt"), (40, 60), (15, 40)),
          "holds if the implied coverage is in [40, 60]%; corrected if in [15, 40)%"),
    Claim("two_sided", "Two-sided honesty: naive over-covers in within-prompt paired designs",
          ("sim_paired_naive", "sim_paired_naive_mcse", "sim_paired_clustered",
           "sim_paired_infl"),
          lambda n: (f"paired simulation: naive {n['sim_paired_naive']}% "
                     f"({n['sim_paired_naive_mcse']}), clustered {n['sim_paired_clustered']}%, "
                     f"inflation {n['sim_paired_infl']}x"),
          lambda n: (HOLDS if value(n, "sim_paired_naive")
                     > 95 + 2 * value(n, "sim_paired_naive_mcse")
                     and 93 <= value(n, "sim_paired_clustered") <= 97 else FAILS),
          "holds if the naive coverage exceeds 95% by 2 Monte Carlo SEs while the clustered "
          "one is in [93, 97]%"),
    Claim("judge_axis", "Adding the judge axis pushes the inflation further (4.2x to 5.4x)",
          ("pandalm_infl_prompt", "pandalm_infl_prompt_judge"),
          lambda n: (f"MMLU-Pro: one judge, not identified; PandaLM prompt "
                     f"{n['pandalm_infl_prompt']}x, prompt+judge "
                     f"{n['pandalm_infl_prompt_judge']}x"),
          lambda n: (HOLDS if value(n, "pandalm_infl_prompt_judge")
                     > 1.1 * value(n, "pandalm_infl_prompt") else FAILS),
          "holds if PandaLM's two-way inflation exceeds its prompt inflation by 10%"),
    Claim("lindeberg", "Fragile assumption: no dominant cluster (Lindeberg)",
          ("llmfao_judge_share_max", "llmfao_judge_share_cluster", "llmfao_judge_dominated",
           "mmlu_prompt_share_max"),
          lambda n: (f"LLMFAO judge axis: one judge ({n['llmfao_judge_share_cluster']}) carries "
                     f"up to {n['llmfao_judge_share_max']} of a model's variance, "
                     f"{n['llmfao_judge_dominated']} models above one half; MMLU-Pro prompts: "
                     f"at most {n['mmlu_prompt_share_max']}"),
          lambda n: HOLDS if value(n, "llmfao_judge_share_max") > 0.5 else FAILS,
          "holds (the assumption is fragile) if a real dataset has a cluster above one half"),
    Claim("few_judges", "With few judges the judge-axis variance is a crude estimate",
          ("prd_few_judges", "prd_width_normal", "prd_width_jackknife"),
          lambda n: (f"PRD, {n['prd_few_judges']} judges: median 95% CI width "
                     f"{n['prd_width_normal']} points (sandwich, normal) vs "
                     f"{n['prd_width_jackknife']} (jackknife, t(G - 1))"),
          lambda n: (HOLDS if value(n, "prd_width_jackknife")
                     > 1.5 * value(n, "prd_width_normal") else FAILS),
          "holds if the few-cluster (jackknife, t(G - 1)) interval is over 1.5 times as "
          "wide as the normal-reference sandwich"),
)


def claims_table(paper: Paper) -> None:
    """Table ``claims`` from the numbers the earlier steps registered."""
    rows = []
    for claim in CLAIMS:
        missing = [k for k in claim.needs if k not in paper.numbers]
        if missing:
            raise KeyError(f"claim '{claim.key}' needs the numbers {missing} of the earlier "
                           "build steps: run them too")
        verdict = claim.verdict(paper.numbers)
        rows.append({"claim": claim.claim, "measured here": claim.measured(paper.numbers),
                     "verdict": verdict, "rule": claim.rule})
        paper.number(f"claim_{claim.key}", verdict)
    paper.table("claims", pd.DataFrame(rows),
                "The lesson's claims, the value measured here, and the verdict.")
