"""The judge audit (issue 34, part 1) against independent computations: statsmodels' GLM
(logit, with the position and own-model covariates, cluster-robust by prompt) for the
effects, a Python loop over verdict pairs for the flip rate, a pandas count for the tie
shares, and the symmetrised log's identities (module doc of :mod:`winrate.judges`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm

from winrate.io.logs import ComparisonLog
from winrate.judges import (
    OWN,
    POSITION,
    audit_judges,
    covariate_effects,
    order_consistency,
    symmetrised,
)

MODELS = np.array(["m0", "m1", "m2", "m3", "m4"])


def simulated(seed: int, *, n_prompts: int = 40, beta: float = 0.5, own: float = 0.0,
              judges=("m0", "m3", "outsider"), both_orders: bool = False,
              ties: bool = False, prompt_sd: float = 0.5) -> ComparisonLog:
    """Every judge compares every pair of the 5 models on every prompt, the first shown
    drawn at random (or each pair in both orders), with a per-prompt random effect on each
    model (clustered verdicts), a first-shown effect ``beta`` and an own-model effect
    ``own`` (the judges named as models judge their own answers)."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(-0.8, 0.8, len(MODELS))
    pairs = np.array(list(itertools.combinations(range(len(MODELS)), 2)))
    rows = [(p, j, a, b) for p in range(n_prompts) for j in range(len(judges))
            for a, b in pairs]
    prompt, judge, a, b = (np.array(c) for c in zip(*rows, strict=True))
    if both_orders:
        prompt, judge, a, b = (np.concatenate([prompt, prompt]), np.concatenate([judge, judge]),
                               np.concatenate([a, b]), np.concatenate([b, a]))
    else:
        swap = rng.random(a.size) < 0.5
        a, b = np.where(swap, b, a), np.where(swap, a, b)
    effect = rng.normal(0, prompt_sd, (n_prompts, len(MODELS)))
    judge_model = np.array([np.flatnonzero(MODELS == j)[0] if j in MODELS else -1
                            for j in judges])[judge]
    eta = (theta[a] - theta[b] + effect[prompt, a] - effect[prompt, b] + beta
           + own * ((judge_model == a).astype(float) - (judge_model == b)))
    p = 1 / (1 + np.exp(-eta))
    u = rng.random(p.size)
    score = (u < p).astype(float)
    if ties:  # a band of ties around the decision threshold
        score = np.where(np.abs(u - p) < 0.1, 0.5, score)
    log = ComparisonLog.from_arrays(a, b, score, models=MODELS, prompt=prompt, judge=judge)
    judge_axis = log.axes["judge"]
    return ComparisonLog(log.model_a, log.model_b, log.score, log.models,
                         {"prompt": log.axes["prompt"],
                          "judge": type(judge_axis)(judge_axis.codes,
                                                    np.array(judges, dtype=object))})


def glm_oracle(log: ComparisonLog, columns: list[np.ndarray]):
    """statsmodels' logit GLM of ``score`` on ``e_a - e_b`` (last model dropped) and
    ``columns``, cluster-robust by prompt with CR1 ``G / (G - 1)`` (statsmodels' own
    correction also has ``(N - 1) / (N - k)``, which winrate's plug-in CR1 does not)."""
    k = log.n_models
    rows = np.arange(log.n_rows)
    design = np.zeros((log.n_rows, k))
    design[rows, log.model_a] += 1.0
    design[rows, log.model_b] -= 1.0
    X = np.column_stack([design[:, :-1], *columns])
    groups = log.axes["prompt"].codes
    fitted = sm.GLM(log.score, X, family=sm.families.Binomial()).fit(
        tol=1e-13, cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    g = np.unique(groups).size
    cov = np.asarray(fitted.cov_params()) * g / (g - 1)
    return np.asarray(fitted.params), np.sqrt(np.diag(cov))


def test_position_effect_equals_the_statsmodels_glm_with_cluster_cr1():
    log = simulated(1)
    effects, board = covariate_effects(log, {POSITION: np.ones(log.n_rows)}, "prompt")
    params, se = glm_oracle(log, [np.ones(log.n_rows)])
    (effect,) = effects
    assert effect.logit == pytest.approx(params[-1], abs=1e-6)
    assert effect.se == pytest.approx(se[-1], rel=1e-6)
    # the ratings' contrasts are the GLM's too (theta_m - theta_last)
    theta = board.leaderboard.fitted["theta"]
    np.testing.assert_allclose(theta[:-1] - theta[-1], params[:-1], atol=1e-6)


def test_self_preference_equals_the_statsmodels_glm_with_the_interaction():
    log = simulated(2, own=0.6)
    audit = audit_judges(log, cluster="prompt")
    judge_of = np.array(["m0", "m3", "outsider"], dtype=object)[log.axes["judge"].codes]
    own = ((log.models[log.model_a] == judge_of).astype(float)
           - (log.models[log.model_b] == judge_of))
    params, se = glm_oracle(log, [np.ones(log.n_rows), own])
    pooled = audit.self_preference[0]
    assert (pooled.name, pooled.judge) == (OWN, "all")
    assert pooled.logit == pytest.approx(params[-1], abs=1e-6)
    assert pooled.se == pytest.approx(se[-1], rel=1e-6)
    # one own-model effect per judge that is a contestant, none for the outsider
    assert [e.judge for e in audit.self_preference[1:]] == ["m0", "m3"]
    # no pair was judged in both orders: the audit says so with its code
    assert audit.order_consistency is None
    assert "judges-design" in [note.code for note in audit.notes]


def test_symmetrised_log_keeps_likelihood_sums_and_centres_the_covariate():
    log = simulated(3)
    x = np.where(np.arange(log.n_rows) % 3 == 0, 1.0, -1.0)
    twice = symmetrised(log, {POSITION: x})
    assert twice.n_comparisons == log.n_comparisons
    assert abs(np.average(twice.features[POSITION], weights=twice.weight)) < 1e-15
    # each model's weighted wins are unchanged (half from each copy)
    def wins(copy):
        return (np.bincount(copy.model_a, copy.weight * copy.score, len(MODELS))
                + np.bincount(copy.model_b, copy.weight * (1 - copy.score), len(MODELS)))

    np.testing.assert_allclose(wins(twice), wins(log))


def brute_force_flips(log: ComparisonLog) -> tuple[float, int]:
    """The flip rate by a loop: per (prompt, judge, unordered pair), every couple of one
    verdict in each order, counted as a flip when the same model's scores differ."""
    groups: dict = {}
    for r in range(log.n_rows):
        a, b = int(log.model_a[r]), int(log.model_b[r])
        key = (int(log.axes["prompt"].codes[r]), int(log.axes["judge"].codes[r]),
               min(a, b), max(a, b))
        low_score = log.score[r] if a < b else 1 - log.score[r]
        groups.setdefault(key, {True: [], False: []})[a < b].append(low_score)
    rates = []
    for verdicts in groups.values():
        first, second = verdicts[True], verdicts[False]
        if first and second:
            couples = [(s, t) for s in first for t in second]
            rates.append(sum(s != t for s, t in couples) / len(couples))
    return float(np.mean(rates)), len(rates)


def test_flip_rate_equals_a_brute_force_count():
    log = simulated(4, both_orders=True, ties=True)
    keep = np.ones(log.n_rows, bool)
    keep[::7] = False  # some verdicts seen in one order only
    extra = np.flatnonzero(~keep)[:30]  # and some pairs judged twice in one order
    rows = np.concatenate([np.flatnonzero(keep), extra, extra[:10]])
    part = ComparisonLog(log.model_a[rows], log.model_b[rows], log.score[rows], log.models,
                         {n: type(ax)(ax.codes[rows], ax.labels) for n, ax in log.axes.items()})
    found, averaged = order_consistency(part, np.ones(part.n_rows), 0.05)
    rate, pairs = brute_force_flips(part)
    assert found.pairs == pairs
    assert found.flip_rate.estimate == pytest.approx(rate, abs=1e-12)
    # every comparison is either in a verdict pair or kept as it is
    assert averaged.n_rows == pairs + found.unmatched_rows


def test_order_averaged_board_and_no_flips_on_consistent_verdicts():
    log = simulated(5, both_orders=True, beta=0.0)
    half = log.n_rows // 2
    # the second copy repeats the first's verdict on the same model: no flips
    score = np.concatenate([log.score[:half], 1 - log.score[:half]])
    same = ComparisonLog(log.model_a, log.model_b, score, log.models, log.axes)
    found, averaged = order_consistency(same, np.ones(same.n_rows), 0.05)
    assert found.flip_rate.estimate == 0.0 and found.unmatched_rows == 0
    assert averaged.n_rows == half


def test_tie_shares_equal_a_pandas_count_and_the_json_names():
    log = simulated(6, ties=True)
    audit = audit_judges(log, cluster="prompt")
    import pandas as pd

    frame = pd.DataFrame({"judge": log.axes["judge"].labels[log.axes["judge"].codes],
                          "tie": log.score == 0.5})
    expected = pd.concat([pd.Series({"all": frame.tie.mean()}),
                          frame.groupby("judge").tie.mean()])
    assert set(audit.tie_propensity) == set(expected.index)
    for judge, share in audit.tie_propensity.items():
        assert share.estimate == pytest.approx(expected[judge], abs=1e-12)
    doc = audit.to_dict()
    assert {"position_bias", "self_preference", "order_consistency", "tie_propensity",
            "boards", "rank_changes", "notes"} <= set(doc)
    assert doc["position_bias"][0]["probability"] == pytest.approx(
        1 / (1 + np.exp(-audit.position_bias[0].logit)))
    assert "Position bias" in str(audit.summary())


def test_judges_command_prints_the_audit_and_writes_the_json(tmp_path, capsys):
    import json

    import pandas as pd

    from winrate.cli import main

    log = simulated(7, both_orders=True, n_prompts=20)
    judge = log.axes["judge"]
    frame = pd.DataFrame({"prompt_id": log.axes["prompt"].codes,
                          "judge_id": judge.labels[judge.codes],
                          "model_a": log.models[log.model_a],
                          "model_b": log.models[log.model_b], "outcome": log.score})
    frame.to_csv(tmp_path / "log.csv", index=False)
    out = tmp_path / "audit.json"
    code = main(["judges", str(tmp_path / "log.csv"), "--cluster", "prompt",
                 "--judge-family", "m0=zero,outsider=zero", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Position bias" in printed and "flip rate" in printed
    doc = json.loads(out.read_text())
    # the outsider is of m0's family now: it judges its own family's answers too
    assert [e["judge"] for e in doc["self_preference"]] == ["all", "m0", "m3", "outsider"]
    assert doc["order_consistency"]["pairs"] == log.n_rows // 2


def test_judge_family_text_and_errors(tmp_path):
    from winrate.builder_cli import judge_families
    from winrate.errors import WinrateInputError

    assert judge_families("gpt-4-0613=gpt-4, gpt-4=gpt-4") == {"gpt-4-0613": "gpt-4",
                                                               "gpt-4": "gpt-4"}
    (tmp_path / "f.json").write_text('{"a": "x"}')
    assert judge_families(str(tmp_path / "f.json")) == {"a": "x"}
    with pytest.raises(WinrateInputError, match="NAME=FAMILY"):
        judge_families("gpt-4")


def test_krippendorff_alpha_of_krippendorffs_own_example():
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 observers x
    12 units example with missing values: interval alpha = 0.849."""
    from winrate.judges import judge_agreement

    table = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
             [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
             [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
             [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    cells = [(u, o, v) for o, row in enumerate(table) for u, v in enumerate(row)
             if v is not None]
    unit, observer, value = (np.array(c) for c in zip(*cells, strict=True))
    log = ComparisonLog.from_arrays(np.zeros(len(unit)), np.ones(len(unit)),
                                    (value - 1) / 4, prompt=unit, judge=observer)
    found = judge_agreement(log, 0.05)
    assert found.alpha == pytest.approx(0.849, abs=5e-4)
    assert found.units == 11 and found.values == 40  # unit 12 has one value


def brute_force_alpha(log: ComparisonLog) -> float:
    """Krippendorff's interval alpha by loops over every pair of values."""
    values: dict = {}
    for r in range(log.n_rows):
        a, b = int(log.model_a[r]), int(log.model_b[r])
        item = (int(log.axes["prompt"].codes[r]), min(a, b), max(a, b))
        s = log.score[r] if a < b else 1 - log.score[r]
        values.setdefault(item, {}).setdefault(int(log.axes["judge"].codes[r]), []).append(s)
    units = [[float(np.mean(v)) for v in judges.values()] for judges in values.values()]
    units = [u for u in units if len(u) > 1]
    pooled = [v for u in units for v in u]
    n = len(pooled)
    observed = sum(sum((x - y) ** 2 for i, x in enumerate(u) for j, y in enumerate(u) if i != j)
                   / (len(u) - 1) for u in units) / n
    expected = sum((x - y) ** 2 for i, x in enumerate(pooled) for j, y in enumerate(pooled)
                   if i != j) / (n * (n - 1))
    return 1 - observed / expected


def test_krippendorff_alpha_equals_a_brute_force_loop_and_its_interval_covers_it():
    from winrate.judges import judge_agreement

    log = simulated(8, n_prompts=12, both_orders=True, ties=True)
    found = judge_agreement(log, 0.05, reps=200)
    assert found.alpha == pytest.approx(brute_force_alpha(log), abs=1e-12)
    assert found.low <= found.alpha <= found.high


def test_markdown_reports_of_the_three_commands(tmp_path, capsys):
    from winrate.cli import main
    from winrate.examples import write_examples

    write_examples(tmp_path)
    example = str(tmp_path / "example.csv")
    lines = (tmp_path / "example.csv").read_text().splitlines()
    (tmp_path / "old.csv").write_text("\n".join(lines[:700]) + "\n")
    for argv in (["judges", example], ["plan", example, "--top", "3"],
                 ["diff", str(tmp_path / "old.csv"), example]):
        assert main([*argv, "--table-format", "markdown"]) == 0
        shown = capsys.readouterr().out
        assert shown.startswith("## ") and "|---|" in shown, argv


def test_a_first_shown_column_equals_the_log_oriented_first_shown_first():
    log = simulated(9, n_prompts=20)
    rng = np.random.default_rng(0)
    flip = rng.random(log.n_rows) < 0.4  # store these rows with model_b shown first
    stored = ComparisonLog(np.where(flip, log.model_b, log.model_a),
                           np.where(flip, log.model_a, log.model_b),
                           np.where(flip, 1 - log.score, log.score), log.models, log.axes,
                           features={"first": (~flip).astype(float)})
    by_column = audit_judges(stored, cluster="prompt", first_shown="first")
    oriented = audit_judges(log, cluster="prompt")
    assert by_column.position_bias[0].logit == pytest.approx(oriented.position_bias[0].logit,
                                                             abs=1e-9)
    assert by_column.position_bias[0].se == pytest.approx(oriented.position_bias[0].se,
                                                          rel=1e-9)
    from winrate.errors import WinrateInputError

    bad = ComparisonLog(log.model_a, log.model_b, log.score, log.models, log.axes,
                        features={"first": np.full(log.n_rows, 2.0)})
    with pytest.raises(WinrateInputError, match="first-shown column 'first': row 0"):
        audit_judges(bad, first_shown="first")


def test_unclustered_position_effect_is_the_row_robust_glm():
    """Without clustering, each comparison is its own cluster: statsmodels' HC0 times
    n / (n - 1) (CR1 with one comparison per cluster), not half of it (the symmetrised
    log's two copies of a row are one cluster)."""
    log = simulated(10, n_prompts=20)
    effects, _ = covariate_effects(log, {POSITION: np.ones(log.n_rows)}, "none")
    k = log.n_models
    design = np.zeros((log.n_rows, k))
    design[np.arange(log.n_rows), log.model_a] += 1.0
    design[np.arange(log.n_rows), log.model_b] -= 1.0
    X = np.column_stack([design[:, :-1], np.ones(log.n_rows)])
    fitted = sm.GLM(log.score, X, family=sm.families.Binomial()).fit(tol=1e-13,
                                                                      cov_type="HC0")
    n = log.n_rows
    assert effects[0].logit == pytest.approx(fitted.params[-1], abs=1e-6)
    assert effects[0].se == pytest.approx(np.sqrt(fitted.cov_params()[-1, -1] * n / (n - 1)),
                                          rel=1e-6)
