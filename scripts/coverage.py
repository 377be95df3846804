"""Coverage study: do winrate's intervals cover the population scores they claim to?

For every cell of a grid of prompt counts x judge counts, simulate ``reps`` crossed
comparison logs from :mod:`winrate.io.simulate` (design ``DESIGN`` below, fixed seeds), fit the
leaderboard, and record for each interval method whether its 95% interval covers the
population score ``S_a = sum_b w_ab psi_ab`` (``w`` = uniform weights over the opponents
observed in that sample, which is the estimand of the fit), marginally for each model and
simultaneously for all K models, and the interval widths.

Methods (each gives marginal and simultaneous intervals; simultaneous = max-|T| critical
value of :func:`winrate.inference.simultaneous_intervals` from the method's covariance; each
built on the logit scale, as winrate reports win probabilities since issue 24, except the
wild bootstrap's percentile-t intervals):

=============  ===========================================================================
naive          rows independent (CR0), normal reference
prompt         one-way CR1 by prompt, normal
judge          one-way CR1 by judge, normal
twoway         two-way CR1 (Cameron-Gelbach-Miller), normal
twoway_t       two-way CR1 with t(G_min - 1), G_min the smaller cluster count
jackknife      two-way jackknife CV3J (mean-centred, inclusion-exclusion) with t(G_min - 1)
wild           wild cluster bootstrap (Webb weights, percentile-t) on the axis with fewer
               clusters (one-way; ignores the other axis)
pigeonhole     Owen's pigeonhole bootstrap covariance (prompts x judges), normal
auto           the default, ``method="auto"``: on each log, the method its rule picks for
               that log (:func:`auto_method`; CR2 with Pan-Wall t on thin logs)
=============  ===========================================================================

Design cells beyond the grid (``--part designs``, :func:`design_cells`): thin designs
(20-50 models, 1-5 pairs per prompt, rare models, clustered by prompt), strong judge
effects (30-60 prompts x 30 judges), and a design judging each pair in both orders; each
analysed by ``analyze`` as a user would, with rank-set errors. Results in
``coverage_designs.{csv,md,png}``.

Audit trail: the per-replication rows of the cheapest grid cell (``AUDIT_CELL``) are
committed too (``coverage_reps_10x2.csv``, lossless floats), so a test can rerun a few of
its replications and check them, and the cell's summary, without the whole study.

Monte Carlo error: marginal coverage is the mean over reps of the per-rep share of models
covered; its SE is the SD of those per-rep shares / sqrt(reps) (models within a rep are
correlated, so counting model-reps as independent would understate it). Simultaneous
coverage is a proportion of reps: SE = sqrt(p (1 - p) / reps).

Usage: ``python scripts/coverage.py [--reps 600] [--workers 2] [--out paper/coverage]``;
``--quick`` runs a tiny grid for a smoke test. ``--held-out`` runs the pre-registered
held-out study instead (``docs/coverage.md``; :mod:`heldout.study` in ``scripts/heldout/``
takes the remaining options: ``--reps``, ``--cells``, ``--estimators``, ``--workers``,
``--out``, ``--summary-only``). ``--confirmatory --reps N`` runs the confirmatory study of
the frozen default (issue 36; ``paper/confirmatory/registration.md``, :mod:`heldout.confirmatory`).
"""

from __future__ import annotations

if __name__ == "coverage":
    # Another script in scripts/ has this folder on sys.path, and numba's optional
    # ``import coverage`` found this file instead of the coverage package: decline.
    raise ImportError("scripts/coverage.py is the coverage study, not the coverage package")

import argparse
import sys
import time
import warnings
import zlib
from dataclasses import asdict, replace
from multiprocessing import Pool
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from winrate import estimators
from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators.base import PROBABILITY
from winrate.estimators.win_rate_kernels import fit
from winrate.inference.intervals import bounds_on_scale
from winrate.inference.joint import simultaneous_intervals
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.settings import Joint, MonteCarlo, Variance
from winrate.variance.cluster_sums import memory_sums
from winrate.variance.method_choice import choose, effective_sizes, thinnest_pair_size
from winrate.variance.reference import critical_value
from winrate.variance.resampling import (
    cluster_bootstrap,
    multiway_jackknife_cov,
    wild_cluster_bootstrap,
)
from winrate.variance.sandwich import cluster_cov, multiway_cluster_cov, naive_cov

PROMPTS = (10, 30, 100, 300)
JUDGES = (2, 3, 5, 10, 30)
ALPHA = 0.05
BASE_SEED = 20240611
SIM_DRAWS = 10_000  # MC draws per simultaneous critical value (its MC SE ~ 0.02)
WILD_REPS = 399
PIGEONHOLE_REPS = 199
# Control: no shared response, judge or position effects (rows independent given the pair);
# there the naive interval should be right, isolating response sharing as the cause of its
# under-coverage in the main design.
CONTROL_CELL = (100, 10)
AUDIT_CELL = (10, 2)  # its per-replication rows are committed (module doc)
METHODS = ("naive", "prompt", "judge", "twoway", "twoway_t", "jackknife", "wild", "pigeonhole",
           "auto")

# A realistic crossed design: 8 models, ~20 comparisons per prompt (gamma-Poisson sizes),
# each model's response to a prompt reused by ~5 comparisons with a strong response effect,
# judges with their own taste for models, position bias and tie propensity, unequal judge
# workloads, 10% of pairs never compared.
DESIGN = SimulationDesign(
    n_models=8, comparisons_per_prompt=20.0, size_dispersion=2.0, ability_sd=0.5,
    response_sd=1.0, judge_sd=0.3, noise_sd=0.5, tie_margin=0.3, tie_margin_sd=0.3,
    position_bias=0.2, position_bias_sd=0.2, judge_size_dispersion=5.0,
    missing_pair_share=0.1,
)
CONTROL = replace(DESIGN, response_sd=0.0, judge_sd=0.0, position_bias_sd=0.0,
                  tie_margin_sd=0.0, noise_sd=np.sqrt(2 * 1.0**2 + 2 * 0.3**2 + 0.2**2 + 0.5**2))


def _wald(est, cov, df, seed):
    """Marginal and simultaneous ``(low, high)`` bounds of Wald intervals from a covariance,
    built on the logit scale as winrate reports win probabilities
    (:func:`winrate.inference.intervals.bounds_on_scale`)."""
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    sim = simultaneous_intervals(est, cov, ALPHA, df, n_draws=SIM_DRAWS, seed=seed)
    return (_on_scale(est, critical_value(ALPHA, df) * se),
            _on_scale(est, sim.critical_value * se))


def _on_scale(est, half) -> tuple[np.ndarray, np.ndarray]:
    return bounds_on_scale(est, est - half, est + half, PROBABILITY)[:2]


def interval_bounds(log, board, seed: int) -> dict[str, tuple[tuple, tuple]]:
    """``{method: ((low, high) marginal, (low, high) simultaneous)}``: Wald intervals on
    the logit scale, except ``wild``'s percentile-t intervals (symmetric, as analyze
    reports them; their bounds are never cut here, which does not change coverage of a
    truth in [0, 1])."""
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    est, infl = board.scores, board.influence
    g_min = min(log.axes["prompt"].n_clusters, log.axes["judge"].n_clusters)
    fewest = prompt if log.axes["prompt"].n_clusters <= log.axes["judge"].n_clusters else judge
    twoway = multiway_cluster_cov(infl, [prompt, judge]).cov
    covs = {
        "naive": (naive_cov(infl), None),
        "prompt": (cluster_cov(infl, prompt), None),
        "judge": (cluster_cov(infl, judge), None),
        "twoway": (twoway, None),
        "twoway_t": (twoway, g_min - 1),
        "jackknife": (multiway_jackknife_cov(log, [prompt, judge], board=board).cov, g_min - 1),
        "pigeonhole": (cluster_bootstrap(log, [prompt, judge], reps=PIGEONHOLE_REPS, seed=seed,
                                         board=board, progress=False).cov, None),
    }
    out = {name: _wald(est, cov, df, seed) for name, (cov, df) in covs.items()}
    wild = wild_cluster_bootstrap(log, fewest, alpha=ALPHA, reps=WILD_REPS, seed=seed,
                                  board=board, progress=False)
    half, sim_half = wild.critical_values * wild.se, wild.simultaneous_critical_value * wild.se
    out["wild"] = ((est - half, est + half), (est - sim_half, est + sim_half))
    return out


def _auto_bounds(log, board, seed: int) -> tuple[tuple, tuple]:
    """``analyze``'s default intervals (the cells where it runs no grid method: CR2 with
    Pan-Wall t); a model that is not estimable gets the whole line (its interval is the
    whole scale, so it counts as covered, as in the design cells)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        run = analyze(log, cluster="prompt+judge", monte_carlo=MonteCarlo(SIM_DRAWS, seed),
                      joint=Joint(simultaneous=True), board=board)

    def whole_if_blank(low, high):
        blank = np.isnan(run.intervals.se)
        return np.where(blank, -np.inf, low), np.where(blank, np.inf, high)

    return (whole_if_blank(run.intervals.low, run.intervals.high),
            whole_if_blank(run.joint.sim_low, run.joint.sim_high))


def one_rep(n_prompts: int, n_judges: int, rep: int, design: SimulationDesign = DESIGN):
    """Coverage indicators and widths of every method for one simulated log."""
    seed = int(np.random.SeedSequence([BASE_SEED, n_prompts, n_judges, rep])
               .generate_state(1)[0])
    sim = simulate_comparisons(replace(design, n_prompts=n_prompts, n_judges=n_judges), seed)
    board = fit(sim.log)
    truth = sim.population_scores(board.weights)
    bounds = interval_bounds(sim.log, board, seed)
    grid_method = auto_method(sim.log, board)
    bounds["auto"] = (bounds[grid_method] if grid_method else
                      _auto_bounds(sim.log, board, seed))
    rows = []
    for method, ((low, high), (sim_low, sim_high)) in bounds.items():
        rows.append({
            "prompts": n_prompts, "judges": n_judges, "rep": rep, "method": method,
            "marginal": float(np.mean((low <= truth) & (truth <= high))),
            "simultaneous": bool(np.all((sim_low <= truth) & (truth <= sim_high))),
            "width": float(np.mean(high - low)), "sim_width": float(np.mean(sim_high - sim_low)),
        })
    return rows


# --------------------------------------------------------------- designs beyond the grid
#
# Cells where the overall cluster count hides how little informs each estimate (issue:
# valid by default). Every cell is analysed as a user would (``winrate.analysis.analyze``)
# by the naive interval, the old default (the CR1 sandwich, normal reference), ``auto``
# (the default; with its rank sets), and where two axes are clustered the jackknife and
# the pigeonhole bootstrap.

THIN = replace(DESIGN, n_judges=1, judge_sd=0.0, position_bias=0.0, position_bias_sd=0.0,
               tie_margin_sd=0.0, judge_size_dispersion=None, missing_pair_share=0.0,
               rare_weight=0.2)
# The thin design made lopsided (a wider ability spread, little response sharing): many
# pairs are near-certain, so their few comparisons often agree (the small-sample floor
# binds), and rare models miss opponents, so the win rate over the opponents met differs
# from the win rate over the field. A reconstruction of the generator behind the issue.
LOPSIDED = replace(THIN, ability_sd=1.0, response_sd=0.3, rare_weight=0.1)
STRONG_JUDGES = replace(DESIGN, judge_sd=1.0)
# Each pair judged in both orders on a prompt with a strong position bias and little
# response sharing: the two rows pull in opposite directions, so rows are negatively
# correlated within a prompt and the naive interval is too wide.
BOTH_ORDERS = replace(THIN, both_orders=True, position_bias=1.0, response_sd=0.3,
                      noise_sd=0.5, rare_models=0)


class Cell(NamedTuple):
    """One design cell: its kind, label, design and the clustering the analysis uses."""

    kind: str
    label: str
    design: SimulationDesign
    cluster: str


def design_cells() -> list[Cell]:
    """The thin, strong-judge and both-orders cells (module doc)."""
    cells = [Cell("thin", f"{k} models, {p} pairs/prompt, {n} prompts",
                  replace(THIN, n_models=k, pairs_per_prompt=p, n_prompts=n,
                          rare_models=k // 5), "prompt")
             for k, n, p in ((20, 300, 1), (20, 300, 3), (20, 1200, 5), (50, 1200, 3))]
    cells += [Cell("thin, lopsided", f"20 models, 3 pairs/prompt, {n} prompts, lopsided",
                   replace(LOPSIDED, n_models=20, pairs_per_prompt=3, n_prompts=n,
                           rare_models=4), "prompt")
              for n in (300, 1200)]
    cells += [Cell("strong judges", f"{n} prompts x 30 judges, judge_sd 1",
                   replace(STRONG_JUDGES, n_prompts=n, n_judges=30), "prompt+judge")
              for n in (30, 60)]
    cells += [Cell("both orders", f"20 models, {p} pairs/prompt in both orders, 300 prompts",
                   replace(BOTH_ORDERS, n_models=20, pairs_per_prompt=p, n_prompts=300),
                   "prompt") for p in (3,)]
    return cells


DESIGN_METHODS = ("naive", "sandwich", "cr2", "jackknife", "pigeonhole", "auto")


def _design_analyses(log, cell: Cell, seed: int):
    """``{method: analysis}`` of one log: every method of :data:`DESIGN_METHODS` that
    applies (the pigeonhole bootstrap needs two axes)."""
    common = {"cluster": cell.cluster, "monte_carlo": MonteCarlo(SIM_DRAWS, seed),
              "joint": Joint(simultaneous=True)}

    def method(name="auto", correction=None, reference=None):
        return Variance(name, correction, reference, bootstrap_reps=PIGEONHOLE_REPS)

    runs = {
        "naive": analyze(log, **{**common, "cluster": "none"}, variance=method("sandwich")),
        "sandwich": analyze(log, **common, variance=method("sandwich")),
        "cr2": analyze(log, **common, variance=method("sandwich", "cr2", "normal")),
        "auto": analyze(log, **{**common, "joint": Joint(simultaneous=True, ranks=True)},
                        variance=method()),
    }
    if "+" in cell.cluster:  # the few-cluster alternatives (cheap with few clusters)
        runs["jackknife"] = analyze(log, **common, variance=method("jackknife"))
        runs["pigeonhole"] = analyze(log, **common, variance=method("bootstrap"))
    return runs


def one_design_rep(cell: Cell, rep: int) -> list[dict]:
    """Coverage, widths and rank-set errors of every method on one simulated log.

    A model that is not estimable (no interval) counts as covered -- its interval is the
    whole scale -- and the share of such models is reported; the population truth is that
    of the fit's opponent weights, as in the grid."""
    seed = int(np.random.SeedSequence([BASE_SEED, zlib.crc32(cell.label.encode()), rep])
               .generate_state(1)[0])
    sim = simulate_comparisons(cell.design, seed)
    rows = []
    for method, run in _design_analyses(sim.log, cell, seed).items():
        truth = sim.population_scores(run.leaderboard.weights)
        scored = ~np.isnan(run.scores)
        blank = np.isnan(run.intervals.se) & scored
        low, high = run.intervals.low, run.intervals.high
        covered, sim_covered = _covered(run, truth, blank, scored)
        field, sim_field = _covered(run, sim.true_scores, blank, scored)
        row = {"cell": cell.label, "kind": cell.kind, "rep": rep, "method": method,
               "marginal": float(covered.mean()), "simultaneous": bool(sim_covered.all()),
               "marginal_field": float(field.mean()), "simultaneous_field": bool(sim_field.all()),
               "missing_opponents": float(_missed_opponents(sim, run.leaderboard)[scored].mean()),
               "width": float(np.nanmean((high - low)[scored & ~blank])),
               "not_estimable": float(blank[scored].mean()),
               "singletons": 0, "wrong_singletons": 0, "max_wrong_share": np.nan}
        if run.joint.rank_low is not None:
            true_rank = 1 + (truth[scored][None, :] > truth[scored][:, None]).sum(axis=1)
            single = (run.joint.rank_low == run.joint.rank_high)[scored]
            wrong = single & (run.joint.rank_low[scored] != true_rank)
            row.update(singletons=int(single.sum()), wrong_singletons=int(wrong.sum()),
                       wrong_models=",".join(map(str, np.flatnonzero(wrong))))
        rows.append(row)
    return rows


def _covered(run, truth: np.ndarray, blank: np.ndarray, scored: np.ndarray):
    """Per scored model, whether its marginal and its simultaneous interval cover
    ``truth`` (a model that is not estimable counts as covered)."""
    marginal = np.where(blank, True, (run.intervals.low <= truth)
                        & (truth <= run.intervals.high))[scored]
    joint = np.where(blank, True, (run.joint.sim_low <= truth)
                     & (truth <= run.joint.sim_high))[scored]
    return marginal, joint


def _missed_opponents(sim, board) -> np.ndarray:
    """Per reported model, whether it never met an opponent the design allows (so its
    fit-weights truth, the win rate over the opponents met, is not its field truth)."""
    allowed = np.zeros_like(board.counts, dtype=bool)
    allowed[sim.allowed[:, 0], sim.allowed[:, 1]] = True
    allowed |= allowed.T
    return (allowed & (board.counts == 0)).any(axis=1)[board.codes]


def _design_task(args):
    cell, reps = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return [row for rep in reps for row in one_design_rep(cell, rep)]


def run_design_study(cells: list[Cell], reps: int = 400, workers: int = 2, chunk: int = 20,
                     progress: bool | None = None) -> pd.DataFrame:
    """Per-rep results of every design cell and method."""
    tasks = [(cell, range(s, min(s + chunk, reps))) for cell in cells
             for s in range(0, reps, chunk)]
    rows = []
    with tqdm(total=len(tasks), desc="design cells",
              disable=None if progress is None else not progress) as bar:
        if workers > 1:
            with Pool(workers, initializer=_single_threaded) as pool:
                for part in pool.imap_unordered(_design_task, tasks):
                    rows.extend(part)
                    bar.update()
        else:
            for task in tasks:
                rows.extend(_design_task(task))
                bar.update()
    order = {c.label: i for i, c in enumerate(cells)}
    frame = pd.DataFrame(rows)
    frame["order"] = frame["cell"].map(order)
    return frame.sort_values(["order", "method", "rep"], kind="stable",
                             ignore_index=True).drop(columns="order")


def _worst_model_share(part: pd.DataFrame) -> float:
    """The largest share of replications in which one model got a wrong singleton rank."""
    counts = part["wrong_models"].fillna("").str.split(",").explode()
    counts = counts[counts != ""].value_counts()
    return float(counts.max() / len(part)) if len(counts) else 0.0


def summarise_designs(per_rep: pd.DataFrame) -> pd.DataFrame:
    """Coverage (percent) with Monte Carlo SEs, widths, not-estimable share and rank-set
    errors per design cell and method (SEs as in :func:`summarise`)."""
    grouped = per_rep.groupby(["kind", "cell", "method"], sort=False)
    table = grouped.agg(
        reps=("rep", "size"), marginal=("marginal", "mean"), marginal_sd=("marginal", "std"),
        simultaneous=("simultaneous", "mean"), width=("width", "mean"),
        not_estimable=("not_estimable", "mean"), singletons=("singletons", "sum"),
        wrong_singletons=("wrong_singletons", "sum"),
        marginal_field=("marginal_field", "mean"),
        simultaneous_field=("simultaneous_field", "mean"),
        missing_opponents=("missing_opponents", "mean"),
    ).reset_index()
    table["worst_model_wrong_share"] = [
        _worst_model_share(part) if "wrong_models" in part else np.nan
        for _, part in grouped]
    table["marginal_mcse"] = 100 * table["marginal_sd"] / np.sqrt(table["reps"])
    p = table["simultaneous"]
    table["simultaneous_mcse"] = 100 * np.sqrt(p * (1 - p) / table["reps"])
    for column in ("marginal", "simultaneous", "not_estimable", "worst_model_wrong_share",
                   "marginal_field", "simultaneous_field", "missing_opponents"):
        table[column] *= 100
    cols = ["kind", "cell", "method", "reps", "marginal", "marginal_mcse", "simultaneous",
            "simultaneous_mcse", "width", "not_estimable", "singletons", "wrong_singletons",
            "worst_model_wrong_share", "marginal_field", "simultaneous_field",
            "missing_opponents"]
    return table[cols]


def designs_markdown(table: pd.DataFrame, reps: int) -> str:
    """The committed report of the design cells (no timings, so a rerun reproduces it)."""
    lines = [
        "# Coverage in thin, lopsided, strong-judge and both-orders designs",
        "",
        f"Generated by `scripts/coverage.py` ({reps} replications per cell, base seed "
        f"{BASE_SEED}). Coverage in percent with its Monte Carlo SE in parentheses; nominal "
        "95. `sandwich` is the old default (CR1, normal reference); `cr2` the CR2 sandwich "
        "with a normal reference; `auto` is the default. "
        "Models that are not estimable count as covered (their interval is the whole "
        "scale); `not_estimable` is their share (%). Rank sets (marginal, from auto's "
        "covariance): "
        "`wrong / singletons` counts singleton rank sets that missed the true rank, and "
        "`worst` is the largest share of replications in which one model got a wrong "
        "singleton.",
        "",
        "Designs: thin = " + _design_text(THIN) + "; lopsided = " + _design_text(LOPSIDED)
        + "; strong judges = "
        + _design_text(STRONG_JUDGES) + "; both orders = " + _design_text(BOTH_ORDERS) + ".",
        "",
    ]
    cell = (table["marginal"].map("{:.1f}".format) + " (" + table["marginal_mcse"]
            .map("{:.1f}".format) + ") / " + table["simultaneous"].map("{:.1f}".format)
            + " (" + table["simultaneous_mcse"].map("{:.1f}".format) + ")")
    wide = table.assign(coverage=cell).pivot_table(
        index=["kind", "cell"], columns="method", values="coverage", aggfunc="first",
        sort=False)
    lines += ["## Marginal / simultaneous coverage", "",
              _md_table(wide[[m for m in DESIGN_METHODS if m in wide]].fillna("")
                        .reset_index()), ""]
    ranks = table[table["method"] == "auto"].assign(
        ranks=lambda t: t["wrong_singletons"].astype(str) + " / " + t["singletons"]
        .astype(str) + ", worst " + t["worst_model_wrong_share"].map("{:.1f}%".format))
    lines += ["## Rank sets and not-estimable models", "",
              _md_table(ranks[["cell", "method", "ranks", "not_estimable", "width"]]
                        .round({"not_estimable": 1, "width": 3})), ""]
    field = table[table["kind"] == "thin, lopsided"]
    if field.empty:  # a --quick or --kinds run without these cells
        return "\n".join(lines)
    field = field.assign(field=field["marginal_field"].map("{:.1f}".format) + " / "
                         + field["simultaneous_field"].map("{:.1f}".format))
    lines += ["## The estimand: opponents met or the whole field", "",
              "The win rate estimates each model's mean win probability over the opponents "
              "it met (the truth above). When models miss opponents, that differs from the "
              "mean over every opponent the design allows (the field). Coverage of the "
              "field's win rate, marginal / simultaneous, in the lopsided thin cells, with "
              "the share (%) of models that missed an opponent: where most models missed "
              "one, no variance method covers it, because the estimate is not aimed at it. "
              "winrate warns when pairs were never compared and, above 10% of pairs, points "
              "to `--model bt`. The estimand the win rate does aim at is covered in the table "
              "above; there, many pairs are near-certain and their few comparisons often "
              "agree, and the small-sample floor takes such a pair's variance from a "
              "Bradley-Terry fit of the rest of the log (`winrate.estimators.small_sample`).", "",
              _md_table(field.pivot_table(index="cell", columns="method", values="field",
                                          aggfunc="first", sort=False)
                        [[m for m in DESIGN_METHODS if m in set(field["method"])]]
                        .join(field.groupby("cell", sort=False)["missing_opponents"]
                              .first().round(1)).reset_index()), ""]
    return "\n".join(lines)


def _design_text(design: SimulationDesign) -> str:
    base = asdict(DESIGN)
    return ", ".join(f"{k}={v}" for k, v in asdict(design).items()
                     if base[k] != v and k not in ("n_prompts", "n_judges", "n_models",
                                                   "pairs_per_prompt", "rare_models"))


def _task(args):
    n_prompts, n_judges, reps, design = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return [row for rep in reps for row in one_rep(n_prompts, n_judges, rep, design)]


def _single_threaded() -> None:
    """Parallelism comes from the worker processes: keep numba single-threaded in each."""
    numba.set_num_threads(1)


def run_study(prompts=PROMPTS, judges=JUDGES, reps: int = 600, workers: int = 2,
              design: SimulationDesign = DESIGN, chunk: int = 25,
              progress: bool | None = None) -> pd.DataFrame:
    """Per-rep results for every (prompts, judges) cell: one row per rep and method."""
    tasks = [(p, j, range(s, min(s + chunk, reps)), design)
             for p in prompts for j in judges for s in range(0, reps, chunk)]
    rows = []
    bar = tqdm(total=len(tasks), desc="coverage study", disable=None if progress is None
               else not progress)
    if workers > 1:  # each worker single-threaded, like the serial path below
        with Pool(workers, initializer=_single_threaded) as pool:
            for part in pool.imap_unordered(_task, tasks):
                rows.extend(part)
                bar.update()
    else:
        threads = numba.get_num_threads()
        _single_threaded()  # the cluster meat sums per-thread partials: fix their number
        try:
            for task in tasks:
                rows.extend(_task(task))
                bar.update()
        finally:
            numba.set_num_threads(threads)
    bar.close()
    # workers finish in any order: sort, so every summary adds the reps in one order
    return pd.DataFrame(rows).sort_values(["prompts", "judges", "method", "rep"],
                                          kind="stable", ignore_index=True)


def audit_path(out: Path) -> Path:
    """Where the per-replication rows of ``AUDIT_CELL`` are written."""
    return out / "coverage_reps_{}x{}.csv".format(*AUDIT_CELL)


def write_audit(per_rep: pd.DataFrame, out: Path) -> None:
    """The per-replication rows of ``AUDIT_CELL``, floats written losslessly (repr)."""
    prompts, judges = AUDIT_CELL
    cell = per_rep[(per_rep["prompts"] == prompts) & (per_rep["judges"] == judges)]
    if len(cell):
        cell.to_csv(audit_path(out), index=False)


def summarise(per_rep: pd.DataFrame) -> pd.DataFrame:
    """Coverage (percent), its Monte Carlo SE (percentage points) and mean widths per cell
    and method (module doc for the SEs)."""
    grouped = per_rep.groupby(["prompts", "judges", "method"], sort=True)
    table = grouped.agg(
        reps=("rep", "size"), marginal=("marginal", "mean"), marginal_sd=("marginal", "std"),
        simultaneous=("simultaneous", "mean"), width=("width", "mean"),
        width_median=("width", "median"), sim_width=("sim_width", "mean"),
    ).reset_index()
    table["marginal_mcse"] = 100 * table["marginal_sd"] / np.sqrt(table["reps"])
    p = table["simultaneous"]
    table["simultaneous_mcse"] = 100 * np.sqrt(p * (1 - p) / table["reps"])
    table["marginal"] *= 100
    table["simultaneous"] *= 100
    order = {m: i for i, m in enumerate(METHODS)}
    table = table.sort_values(["prompts", "judges", "method"],
                              key=lambda c: c.map(order) if c.name == "method" else c)
    cols = ["prompts", "judges", "method", "reps", "marginal", "marginal_mcse", "simultaneous",
            "simultaneous_mcse", "width", "width_median", "sim_width"]
    return table[cols].reset_index(drop=True)


def auto_method(log, board) -> str | None:
    """The grid method that ``method="auto"`` (:func:`winrate.variance.method_choice.choose`)
    runs on this log, decided per log as ``analyze`` decides it: the two-way CR1 sandwich
    with t(G_min - 1) (normal from ``LARGE_AXIS`` clusters), or the pigeonhole bootstrap
    should the rule choose it; None when auto runs CR2 with Pan-Wall t (a thin design, or
    since issue 24 every axis below ``SMALL_AXIS`` clusters), or since issue 37 the
    jackknife or t on the effective clusters (few effective clusters), no grid method
    (:func:`one_rep` then runs ``analyze``). ``tests/test_coverage.py`` checks that
    analyze's auto intervals are exactly this method's."""
    clustering = ("prompt", "judge")
    sizes = [log.axes[name].n_clusters for name in clustering]
    choice = choose(clustering, sizes, estimators.of(board).thin_design_rule(),
                    thinnest_pair_size(board.counts),
                    effective_sizes(memory_sums(log, board, clustering, None), board.codes))
    if choice.method == "bootstrap":
        return "pigeonhole"
    if choice.method != "sandwich" or choice.correction != "cr1" or choice.df is not None:
        return None
    return "twoway_t" if choice.reference == "t" else "twoway"


def closest_to_nominal(table: pd.DataFrame, column: str = "marginal") -> pd.DataFrame:
    """For each cell, the method whose coverage is closest to 95%."""
    gap = (table[column] - 100 * (1 - ALPHA)).abs()
    best = table.loc[gap.groupby([table["prompts"], table["judges"]]).idxmin()]
    return best[["prompts", "judges", "method", column]].reset_index(drop=True)


def _md_table(frame: pd.DataFrame, fmt=str) -> str:
    """A pipe table (no extra dependency); ``fmt`` formats the cells."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---:" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body])


def _fmt(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _fmt_width(value) -> str:
    if not isinstance(value, float):
        return str(value)
    if np.isnan(value):
        return "-"
    return f"{value:.3f}" if value < 100 else f"{value:.2g}"


def markdown(table: pd.DataFrame, reps: int, control: pd.DataFrame | None = None) -> str:
    """The committed markdown report: design, coverage grids, closest method per cell.
    Nothing in it depends on the run (no timings), so a rerun reproduces it."""
    lines = [
        "# Coverage of 95% intervals for leaderboard scores",
        "",
        f"Generated by `scripts/coverage.py` ({reps} replications per cell, base seed "
        f"{BASE_SEED}). Coverage in percent; Monte Carlo SE in "
        "percentage points in parentheses (marginal: from per-replication averages over the "
        "8 models; simultaneous: binomial). Nominal 95.",
        "",
        "Design (`winrate.io.simulate.SimulationDesign`): "
        + ", ".join(f"{k}={v}" for k, v in asdict(DESIGN).items()
                    if k not in ("n_prompts", "n_judges")),
        "",
    ]
    for column, title in (("marginal", "Marginal coverage"),
                          ("simultaneous", "Simultaneous coverage (all 8 models jointly)")):
        lines += [f"## {title}", ""]
        wide = table.assign(cell=table[column].map("{:.1f}".format) + " ("
                            + table[f"{column}_mcse"].map("{:.1f}".format) + ")")
        grid = wide.pivot_table(index=["prompts", "judges"], columns="method", values="cell",
                                aggfunc="first")
        grid = grid[[m for m in METHODS if m in grid]].fillna("-")
        lines += [_md_table(grid.reset_index()), ""]
    for column, title in (("width", "Mean"), ("width_median", "Median")):
        lines += [f"## {title} width of the marginal intervals (score points; scores lie in "
                  "[0, 1], so a width above 1 is uninformative)", ""]
        width = table.pivot_table(index=["prompts", "judges"], columns="method",
                                  values=column)
        width = width[[m for m in METHODS if m in width]]
        lines += [_md_table(width.reset_index(), _fmt_width), ""]
    if control is not None:
        lines += [
            "## Control: no shared effects",
            "",
            f"Same design with response_sd = judge_sd = position_bias_sd = tie_margin_sd = 0 "
            f"and noise_sd = {CONTROL.noise_sd:.3f} (same total latent variance), "
            f"{CONTROL_CELL[0]} prompts x {CONTROL_CELL[1]} judges: rows are independent "
            "given the pair, so the naive interval is the right one here.",
            "",
            _md_table(control[["method", "marginal", "marginal_mcse", "simultaneous",
                               "simultaneous_mcse", "width"]].round(
                {"marginal": 1, "marginal_mcse": 1, "simultaneous": 1, "simultaneous_mcse": 1,
                 "width": 3})),
            "",
        ]
    lines += ["## Method closest to 95% per cell", ""]
    best = closest_to_nominal(table).merge(
        closest_to_nominal(table, "simultaneous"), on=["prompts", "judges"],
        suffixes=("_marginal", "_simultaneous"))
    lines += [_md_table(best, _fmt), ""]
    return "\n".join(lines)


def figure(table: pd.DataFrame, path: Path) -> None:
    """Coverage against the number of judges, one panel per prompt count and kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    prompts = sorted(table["prompts"].unique())
    fig, axes = plt.subplots(2, len(prompts), figsize=(4 * len(prompts), 8.5), sharey="row",
                             squeeze=False)
    colors = plt.get_cmap("tab10")
    for row, column in enumerate(("marginal", "simultaneous")):
        for col, n_prompts in enumerate(prompts):
            ax = axes[row, col]
            part = table[table["prompts"] == n_prompts]
            ax.axhspan(93, 97, color="0.9", zorder=0)
            ax.axhline(95, color="0.5", lw=0.8, zorder=1)
            for i, method in enumerate(METHODS):
                sub = part[part["method"] == method].sort_values("judges")
                ax.errorbar(sub["judges"], sub[column], yerr=1.96 * sub[f"{column}_mcse"],
                            marker="o", ms=3.5, lw=1.2, capsize=2, color=colors(i),
                            label=method)
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticks(sorted(table["judges"].unique()))
            ax.set_xticklabels(sorted(table["judges"].unique()))
            ax.set_ylim(max(0, table[column].min() - 3), 101)
            ax.set_title(f"{n_prompts} prompts, {column}", fontsize=10)
            ax.set_xlabel("judges")
            if col == 0:
                ax.set_ylabel("coverage of nominal 95% intervals (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(METHODS), fontsize=9,
               frameon=False)
    fig.suptitle("Coverage of leaderboard-score intervals (band: 93-97%, bars: +/-1.96 MC SE)")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save_figure(fig, path)
    plt.close(fig)


def save_figure(fig, path: Path) -> None:
    """PNG (130 dpi) or PDF by suffix, without timestamps or version strings in the
    metadata, so a rerun writes the same bytes."""
    if Path(path).suffix == ".pdf":
        fig.savefig(path, metadata={"CreationDate": None, "ModDate": None, "Creator": None,
                                    "Producer": None})
    else:
        fig.savefig(path, dpi=130, metadata={"Software": None})


def run_designs(out: Path, reps: int, workers: int, quick: bool = False,
                kinds: tuple[str, ...] = ()) -> None:
    """The design cells: per-cell table (CSV), report (markdown) and figure. ``kinds``
    reruns only the cells of those kinds and keeps the others' committed rows (every cell
    has its own seeds, so this equals a full rerun)."""
    cells = design_cells()
    if quick:  # the first cell of each kind
        cells = [c for i, c in enumerate(cells) if c.kind not in {d.kind for d in cells[:i]}]
    if kinds:
        cells = [c for c in cells if c.kind in kinds]
    start = time.time()
    table = summarise_designs(run_design_study(cells, reps, workers))
    if kinds:
        kept = pd.read_csv(out / "coverage_designs.csv")
        order = {c.label: i for i, c in enumerate(design_cells())}
        table = pd.concat([kept[~kept["kind"].isin(kinds)], table], ignore_index=True)
        table = table.sort_values("cell", key=lambda c: c.map(order), kind="stable",
                                  ignore_index=True)
    table = table.round(4)  # the report and the paper read the same digits as the CSV
    table.to_csv(out / "coverage_designs.csv", index=False, float_format="%.4f")
    (out / "coverage_designs.md").write_text(designs_markdown(table, reps))
    designs_figure(table, out / "coverage_designs.png")
    print(f"design cells: {len(cells)} x {reps} reps in {(time.time() - start) / 60:.1f} min")


def designs_figure(table: pd.DataFrame, path: Path) -> None:
    """Marginal and simultaneous coverage of each method in every design cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(dict.fromkeys(table["cell"]))
    methods = [m for m in DESIGN_METHODS if m in set(table["method"])]
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.42 * len(cells) + 2.2), sharey=True)
    colors = plt.get_cmap("tab10")
    y = np.arange(len(cells))
    for ax, column in zip(axes, ("marginal", "simultaneous"), strict=True):
        ax.axvspan(93, 97, color="0.9", zorder=0)
        ax.axvline(95, color="0.5", lw=0.8)
        for i, method in enumerate(methods):
            sub = table[table["method"] == method].set_index("cell").reindex(cells)
            ax.errorbar(sub[column], y + (i - len(methods) / 2) * 0.12,
                        xerr=1.96 * sub[f"{column}_mcse"], fmt="o", ms=3.5, capsize=2,
                        color=colors(i), label=method)
        ax.set_title(f"{column} coverage (%)", fontsize=10)
        ax.set_xlim(max(0, table[column].min() - 3), 101)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels(cells, fontsize=8)
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(methods), fontsize=9,
               frameon=False)
    fig.suptitle("Coverage in thin, lopsided, strong-judge and both-orders designs "
                 "(band 93-97%, bars +/-1.96 MC SE)", fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path)
    plt.close(fig)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--held-out" in argv:  # the held-out study has its own options (module doc)
        from heldout.study import main as held_out

        held_out([a for a in argv if a != "--held-out"])
        return
    if "--confirmatory" in argv:  # issue 36's confirmatory study (its own options)
        from heldout.confirmatory import main as confirmatory

        confirmatory([a for a in argv if a != "--confirmatory"])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="paper/coverage")
    parser.add_argument("--quick", action="store_true", help="tiny grid, few reps")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw the figure from OUT/coverage.csv")
    parser.add_argument("--part", choices=("all", "grid", "designs"), default="all",
                        help="the prompts x judges grid, the design cells, or both")
    parser.add_argument("--design-reps", type=int, default=400)
    parser.add_argument("--kinds", nargs="+", default=(),
                        help="rerun only these kinds of design cells (thin, 'strong judges', "
                             "'both orders'), keeping the others")
    args = parser.parse_args(argv)
    if args.replot:
        figure(pd.read_csv(Path(args.out) / "coverage.csv"), Path(args.out) / "coverage.png")
        return
    prompts, judges, reps = (PROMPTS, JUDGES, args.reps)
    if args.quick:
        prompts, judges, reps = (10, 30), (3, 10), min(args.reps, 20)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part in ("all", "designs"):
        run_designs(out, 10 if args.quick else args.design_reps, args.workers, args.quick,
                    tuple(args.kinds))
    if args.part == "designs":
        return
    start = time.time()
    per_rep = run_study(prompts, judges, reps, args.workers)
    control = summarise(run_study((CONTROL_CELL[0],), (CONTROL_CELL[1],), reps, args.workers,
                                  CONTROL))
    elapsed = time.time() - start
    # the report and the figure read the same digits as the CSV
    table, control = summarise(per_rep).round(4), control.round(4)
    table.to_csv(out / "coverage.csv", index=False, float_format="%.4f")
    write_audit(per_rep, out)
    control.to_csv(out / "coverage_control.csv", index=False, float_format="%.4f")
    (out / "coverage.md").write_text(markdown(table, reps, control))
    figure(table, out / "coverage.png")
    print(f"{len(per_rep)} method-replications in {elapsed / 60:.1f} min -> {out}")


if __name__ == "__main__":
    main()
