"""The claims audit (scripts/paper/claims.py) and the few-judges estimand
(scripts/paper/judges_and_arena.py): verdicts at and around every tolerance boundary with
expectations written here, the protocol's bands re-derived from its rule, and the
multi-judge PRD log checked by a pandas groupby on its decoded rows."""

from __future__ import annotations

import math
import os
import sys
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "paper"
REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not (Path(REAL) / "prd").is_dir(),
                                reason="WINRATE_DATA has no PRD data: real-data part skipped")


@pytest.fixture(scope="module")
def claims():
    sys.path.insert(0, str(ROOT / "scripts" / "paper"))
    import claims as module

    yield module
    sys.path.remove(str(ROOT / "scripts" / "paper"))


@pytest.fixture(scope="module")
def judges():
    sys.path.insert(0, str(ROOT / "scripts" / "paper"))
    import judges_and_arena as module

    yield module
    sys.path.remove(str(ROOT / "scripts" / "paper"))


# ------------------------------------------------------------------ the verdict rule


@pytest.mark.parametrize(("low", "high", "expected"), [
    (3.06, 3.08, "not reproduced"),  # all below the band
    (3.70, 3.7799, "not reproduced"),  # just short of its lower edge
    (3.70, 3.78, "reproduced"),  # touches the lower edge (closed band)
    (4.20, 4.20, "reproduced"),  # a point inside
    (4.62, 5.00, "reproduced"),  # touches the upper edge
    (4.6201, 5.00, "not reproduced"),  # just above it
    (3.00, 5.00, "reproduced"),  # wider than the band, around it
])
def test_value_claim_is_reproduced_when_its_interval_meets_the_band(claims, low, high,
                                                                    expected):
    band = claims.parse_band("x", "R1", "4.2", "[3.78, 4.62]")
    assert claims.verdict(band, claims.Measurement(low, high, "")) == expected


@pytest.mark.parametrize(("band", "low", "high", "expected"), [
    ("> 95", 95.0001, 99.0, "reproduced"),
    ("> 95", 95.0, 99.0, "not reproduced"),  # touching the threshold is not beyond it
    ("> 95", 94.0, 99.0, "not reproduced"),  # compatible with no effect
    ("> 0.5", 0.755, 0.755, "reproduced"),
    ("> 0.5", 0.5, 0.5, "not reproduced"),
    ("< 95", 83.1, 94.99, "reproduced"),
    ("< 95", 83.1, 95.0, "not reproduced"),
    ("< 95", 96.0, 97.0, "not reproduced"),
])
def test_direction_claim_needs_its_whole_interval_beyond_the_threshold(claims, band, low,
                                                                       high, expected):
    tolerance = claims.parse_band("x", "R4", band.split()[1], band)
    assert claims.verdict(tolerance, claims.Measurement(low, high, "")) == expected


def test_untestable_claim_gets_no_measurement(claims):
    untestable = claims.parse_band("x", "untestable", "5.4", "none")
    assert claims.verdict(untestable, None) == "untestable"
    with pytest.raises(ValueError, match="has no measurement"):
        claims.verdict(claims.parse_band("x", "R1", "4.2", "[3.78, 4.62]"), None)


@pytest.mark.parametrize("band", ["[4.62, 3.78]", "3.78-4.62", ">= 95", "none"])
def test_malformed_band_is_refused(claims, band):
    with pytest.raises(ValueError, match="claim 'x'"):
        claims.parse_band("x", "R1", "4.2", band)


def test_protocol_table_must_have_its_columns(claims):
    with pytest.raises(ValueError, match="no '## Tolerances' section"):
        claims.read_protocol("# nothing\n")
    with pytest.raises(ValueError, match="key \\| rule \\| claimed \\| band"):
        claims.read_protocol("## Tolerances\n\n| key | band |\n|---|---|\n| a | none |\n")


# ------------------------------------------------------------------ protocol and code agree


#: The direction of each R4 claim and the untestable claims, as the protocol's prose states
#: them (claims 7-9: "above 95", "above one half", "below 95"; claim 4 untestable).
DIRECTION = {"two_sided": "above", "lindeberg": "above", "few_judges": "below"}
UNTESTABLE = {"judge_axis"}


def band_by_rule(rule: str, claimed: str) -> tuple[Decimal, Decimal]:
    """The protocol's rule in decimal arithmetic: R1 ``c +- max(0.10 |c|, u / 2)`` with
    ``u`` one unit of the last stated digit; R3 ``c +- 0.20 |c|``."""
    c = Decimal(claimed)
    if rule == "R1":
        unit = Decimal(1).scaleb(c.as_tuple().exponent)
        half = max(abs(c) * Decimal("0.10"), unit / 2)
    elif rule == "R3":
        half = abs(c) * Decimal("0.20")
    else:
        raise AssertionError(f"no band rule {rule}")
    return c - half, c + half


def test_protocol_bands_follow_the_uniform_rule(claims):
    tolerances = claims.read_protocol(claims.PROTOCOL.read_text(encoding="utf-8"))
    assert tolerances
    for key, t in tolerances.items():
        if key in UNTESTABLE:
            assert (t.rule, t.kind) == ("untestable", "untestable"), key
        elif key in DIRECTION:
            assert (t.rule, t.kind, t.low) == ("R4", DIRECTION[key], float(t.claimed)), key
        else:
            low, high = band_by_rule(t.rule, t.claimed)
            assert (t.low, t.high) == (float(low), float(high)), key


def test_band_rule_on_hand_cases():
    """The re-derivation itself, on the cases the protocol's prose works out."""
    assert band_by_rule("R1", "4.2") == (Decimal("3.78"), Decimal("4.62"))
    assert band_by_rule("R1", "0.03") == (Decimal("0.025"), Decimal("0.035"))  # rounding
    assert band_by_rule("R1", "5.4") == (Decimal("4.86"), Decimal("5.94"))
    assert band_by_rule("R3", "50") == (Decimal("40"), Decimal("60"))


def test_protocol_and_code_list_the_same_claims(claims):
    tolerances = claims.read_protocol(claims.PROTOCOL.read_text(encoding="utf-8"))
    assert list(tolerances) == [c.key for c in claims.CLAIMS]
    assert {c.key for c in claims.CLAIMS if c.measure is None} == UNTESTABLE
    assert set(DIRECTION) | UNTESTABLE < set(tolerances)


# ------------------------------------------------------------------ measurements and audit


def _sources(claims, **changed):
    """Hand-made inputs, each measured quantity put at a value whose verdict is known."""
    numbers = {
        "mmlusub_m": "18.0", "mmlusub_infl_min": "3.00", "mmlusub_infl_max": "3.60",
        "mmlusub_own_icc_min": "0.49", "mmlusub_own_icc_max": "0.50", "mmlusub_sqrtm": "4.24",
        "sim_paired_naive": "97.4", "sim_paired_naive_mcse": "0.6", "sim_reps": "200",
        "pandalm_judge_share_max": "0.400", "prd_multijudge_judge_share_max": "0.527",
    }
    numbers.update(changed)
    text = {k: "1" for k in ("mmlu_effn_per_prompt", "mmlu_infl_prompt", "pandalm_infl_prompt",
                             "pandalm_infl_prompt_judge", "prd_infl_prompt",
                             "prd_infl_prompt_judge", "mmlu_naivecov_prompt", "sim_mmlu_naive",
                             "mmlu_prompt_pair_icc", "sim_paired_clustered",
                             "sim_paired_infl", "llmfao_judges", "llmfao_judge_share_max",
                             "prd_judge_share_max", "cov_three_t_min", "cov_three_t_max",
                             "prd_width_spread")}
    subsets = pd.DataFrame({"pair-level ICC": [0.0336, 0.0483, 0.0400],
                            "Kish prediction": [3.06, 3.08, 3.07]})
    coverage = pd.DataFrame({
        "prompts": [10, 30, 30, 100], "judges": [3, 3, 30, 3],
        "method": ["twoway", "twoway", "twoway", "naive"],
        "marginal": [77.7, 93.9, 99.0, 99.0], "marginal_mcse": [0.65, 0.5, 0.1, 0.1]})
    return claims.Sources({**text, **numbers}, subsets, coverage)


def test_measurements_read_the_right_quantities(claims):
    s = _sources(claims)
    effn = claims.subset_effective_n(s)
    assert (effn.low, effn.high) == pytest.approx((18 / 3.6**2, 18 / 3.0**2))
    cov = claims.subset_naive_coverage(s)
    expected = [100 * math.erf(1.959963984540054 / f / math.sqrt(2)) for f in (3.6, 3.0)]
    assert (cov.low, cov.high) == pytest.approx(expected, abs=1e-9)
    judges = claims.few_judge_coverage(s)  # 3 judges, two-way: 93.9 +- 2 x 0.5
    assert (judges.low, judges.high) == pytest.approx((92.9, 94.9))
    share = claims.largest_judge_share(s)
    assert (share.low, share.high) == (0.527, 0.527)


def test_audit_gives_the_verdicts_of_hand_made_numbers(claims):
    tolerances = claims.read_protocol(claims.PROTOCOL.read_text(encoding="utf-8"))
    base = claims.audit(_sources(claims), tolerances).set_index("key").verdict
    assert base.to_dict() == {
        "effective_n": "not reproduced",  # 1.39 to 2.00 x Q: band [0.8, 1.2]
        "inflation": "not reproduced",  # 3.00 to 3.60: band [3.78, 4.62]
        "sqrt_m": "not reproduced",  # 0.49 to 0.50: band [0.8, 1.2]
        "judge_axis": "untestable",
        "naive_half": "reproduced",  # 41.4 to 49.0%: band [40, 60]
        "icc_paradox": "reproduced",  # 0.0336 to 0.0483 meets [0.025, 0.035]
        "two_sided": "reproduced",  # 97.4 - 1.2 > 95
        "lindeberg": "reproduced",  # 0.527 > 0.5
        "few_judges": "reproduced",  # 94.9 < 95
    }
    moved = {  # one number moved across its claim's boundary
        ("inflation", "reproduced"): {"mmlusub_infl_max": "3.78"},
        ("effective_n", "reproduced"): {"mmlusub_infl_max": "3.90", "mmlusub_infl_min": "3.87"},
        ("sqrt_m", "reproduced"): {"mmlusub_own_icc_max": "0.80"},
        # 2 Phi(1.96 / 4.2) - 1 = 35.9%, 2 Phi(1.96 / 4.3) - 1 = 35.1%: all below 40%
        ("naive_half", "not reproduced"): {"mmlusub_infl_min": "4.20", "mmlusub_infl_max": "4.30"},
        ("two_sided", "not reproduced"): {"sim_paired_naive_mcse": "1.2"},  # 97.4 - 2.4 = 95
        ("lindeberg", "not reproduced"): {"prd_multijudge_judge_share_max": "0.500"},
    }
    for (key, expected), change in moved.items():
        result = claims.audit(_sources(claims, **change), tolerances).set_index("key").verdict
        assert result[key] == expected, (key, change)
    few = _sources(claims)
    few.coverage.loc[1, "marginal"] = 94.0  # 94.0 + 2 x 0.5 = 95.0: not beyond 95
    assert claims.audit(few, tolerances).set_index("key").verdict["few_judges"] == (
        "not reproduced")
    icc = _sources(claims)
    icc.subsets["pair-level ICC"] = [0.0351, 0.0483, 0.0400]  # all above 0.035
    assert claims.audit(icc, tolerances).set_index("key").verdict["icc_paradox"] == (
        "not reproduced")


def test_committed_verdicts_follow_the_protocol(claims):
    """The verdicts in paper/numbers.json are those of the committed protocol on the
    committed measurements, and the counts add up."""
    import json

    numbers = json.loads((PAPER / "numbers.json").read_text())
    sources = claims.Sources(numbers, pd.read_csv(PAPER / "tables" / "mmlu_subsets.csv"),
                             pd.read_csv(PAPER / "coverage" / "coverage.csv"))
    tolerances = claims.read_protocol(claims.PROTOCOL.read_text(encoding="utf-8"))
    table = claims.audit(sources, tolerances)
    for key, outcome in zip(table.key, table.verdict, strict=True):
        assert numbers[f"claim_{key}"] == outcome, key
    counts = [int(numbers[f"claims_{v.replace(' ', '_')}"]) for v in claims.VERDICTS]
    assert sum(counts) == int(numbers["claims_total"]) == len(tolerances)


# ------------------------------------------------------------------ few judges: one estimand


def _frame(log) -> pd.DataFrame:
    """The rows of a log decoded to names, the pair as a sorted name tuple."""
    a, b = log.models[log.model_a].astype(str), log.models[log.model_b].astype(str)
    judge = log.axes["judge"]
    return pd.DataFrame({"pair": [tuple(sorted(p)) for p in zip(a, b, strict=True)],
                         "judge": judge.labels[judge.codes].astype(str),
                         "score": log.score})


def test_multi_judge_rows_on_a_hand_made_log(judges):
    from winrate.io.logs import ComparisonLog

    # models 0..3; pair (0, 1) by judges 7 and 9, pair (1, 2) by 9 only (both orders),
    # pair (2, 3) by judge 7 only; pair (0, 2) by 7 and 9
    a = [0, 1, 1, 2, 2, 0, 2]
    b = [1, 0, 2, 1, 3, 2, 0]
    judge = [7, 9, 9, 9, 7, 7, 9]
    log = ComparisonLog.from_arrays(a, b, [1, 0, 0.5, 1, 0, 1, 0], models=list("wxyz"),
                                    judge=judge, prompt=[0, 1, 2, 3, 4, 5, 6])
    kept, single = judges.multi_judge_rows(log)
    assert single.tolist() == [False, False, True, True, True, False, False]
    assert kept.models.tolist() == ["w", "x", "y"]  # z is left with no row
    frame = _frame(kept)
    assert frame.pair.tolist() == [("w", "x"), ("w", "x"), ("w", "y"), ("w", "y")]
    assert frame.judge.tolist() == ["7", "9", "7", "9"]
    assert kept.score.tolist() == [1, 0, 1, 0]
    assert kept.axes["prompt"].labels[kept.axes["prompt"].codes].tolist() == [0, 1, 5, 6]


@needs_real
def test_prd_few_judges_log_has_no_pair_of_a_single_judge(judges):
    from real_data import read_log

    full, _ = read_log("prd")
    kept, _ = judges.multi_judge_rows(full)
    raw, restricted = _frame(full), _frame(kept)
    per_pair = raw.groupby("pair").judge.nunique()
    single = per_pair[per_pair == 1].index
    assert len(single) == 22  # the count the issue names
    assert set(raw[raw.pair.isin(single)].judge) == {"human"}
    assert restricted.groupby("pair").judge.nunique().min() == 6  # every pair, every judge
    assert len(restricted) == (~raw.pair.isin(single)).sum() == 9920
    assert restricted.pair.nunique() == 10 and kept.n_models == 5
    scores = raw[~raw.pair.isin(single)].groupby(["pair", "judge"]).score.agg(["sum", "size"])
    assert restricted.groupby(["pair", "judge"]).score.agg(["sum", "size"]).equals(scores)
