"""Coverage study: do winrate's intervals cover the population scores they claim to?

For every cell of a grid of prompt counts x judge counts, simulate ``reps`` crossed
comparison logs from :mod:`winrate.simulate` (design ``DESIGN`` below, fixed seeds), fit the
leaderboard, and record for each interval method whether its 95% interval covers the
population score ``S_a = sum_b w_ab psi_ab`` (``w`` = uniform weights over the opponents
observed in that sample, which is the estimand of the fit), marginally for each model and
simultaneously for all K models, and the interval widths.

Methods (each gives marginal and simultaneous intervals; simultaneous = max-|T| critical
value of :func:`winrate.inference.simultaneous_intervals` from the method's covariance):

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
=============  ===========================================================================

Monte Carlo error: marginal coverage is the mean over reps of the per-rep share of models
covered; its SE is the SD of those per-rep shares / sqrt(reps) (models within a rep are
correlated, so counting model-reps as independent would understate it). Simultaneous
coverage is a proportion of reps: SE = sqrt(p (1 - p) / reps).

Usage: ``python scripts/coverage.py [--reps 600] [--workers 2] [--out paper/coverage]``;
``--quick`` runs a tiny grid for a smoke test.
"""

from __future__ import annotations

if __name__ == "coverage":
    # Another script in scripts/ has this folder on sys.path, and numba's optional
    # ``import coverage`` found this file instead of the coverage package: decline.
    raise ImportError("scripts/coverage.py is the coverage study, not the coverage package")

import argparse
import time
import warnings
from dataclasses import asdict, replace
from multiprocessing import Pool
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from winrate.errors import WinrateWarning
from winrate.inference import critical_value, simultaneous_intervals
from winrate.leaderboard import fit
from winrate.resampling import cluster_bootstrap, multiway_jackknife_cov, wild_cluster_bootstrap
from winrate.simulate import SimulationDesign, simulate_comparisons
from winrate.variance import cluster_cov, multiway_cluster_cov, naive_cov

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
METHODS = ("naive", "prompt", "judge", "twoway", "twoway_t", "jackknife", "wild", "pigeonhole")

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
    """Marginal and simultaneous half-widths of Wald intervals from a covariance."""
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    sim = simultaneous_intervals(est, cov, ALPHA, df, n_draws=SIM_DRAWS, seed=seed)
    return critical_value(ALPHA, df) * se, sim.critical_value * se


def interval_half_widths(log, board, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{method: (marginal half-widths, simultaneous half-widths)}`` around the scores,
    except ``wild`` which is symmetric too (percentile-t): all methods are symmetric."""
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
    out["wild"] = (wild.critical_values * wild.se, wild.simultaneous_critical_value * wild.se)
    return out


def one_rep(n_prompts: int, n_judges: int, rep: int, design: SimulationDesign = DESIGN):
    """Coverage indicators and widths of every method for one simulated log."""
    seed = int(np.random.SeedSequence([BASE_SEED, n_prompts, n_judges, rep])
               .generate_state(1)[0])
    sim = simulate_comparisons(replace(design, n_prompts=n_prompts, n_judges=n_judges), seed)
    board = fit(sim.log)
    truth = sim.population_scores(board.weights)
    error = np.abs(board.scores - truth)
    rows = []
    for method, (half, sim_half) in interval_half_widths(sim.log, board, seed).items():
        rows.append({
            "prompts": n_prompts, "judges": n_judges, "rep": rep, "method": method,
            "marginal": float(np.mean(error <= half)),
            "simultaneous": bool(np.all(error <= sim_half)),
            "width": float(2 * np.mean(half)), "sim_width": float(2 * np.mean(sim_half)),
        })
    return rows


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
        "Design (`winrate.simulate.SimulationDesign`): "
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
                                aggfunc="first")[list(METHODS)]
        lines += [_md_table(grid.reset_index()), ""]
    for column, title in (("width", "Mean"), ("width_median", "Median")):
        lines += [f"## {title} width of the marginal intervals (score points; scores lie in "
                  "[0, 1], so a width above 1 is uninformative)", ""]
        width = table.pivot_table(index=["prompts", "judges"], columns="method",
                                  values=column)[list(METHODS)]
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="paper/coverage")
    parser.add_argument("--quick", action="store_true", help="tiny grid, few reps")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw the figure from OUT/coverage.csv")
    args = parser.parse_args(argv)
    if args.replot:
        figure(pd.read_csv(Path(args.out) / "coverage.csv"), Path(args.out) / "coverage.png")
        return
    prompts, judges, reps = (PROMPTS, JUDGES, args.reps)
    if args.quick:
        prompts, judges, reps = (10, 30), (3, 10), min(args.reps, 20)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    per_rep = run_study(prompts, judges, reps, args.workers)
    control = summarise(run_study((CONTROL_CELL[0],), (CONTROL_CELL[1],), reps, args.workers,
                                  CONTROL))
    elapsed = time.time() - start
    table = summarise(per_rep)
    table.to_csv(out / "coverage.csv", index=False, float_format="%.4f")
    control.to_csv(out / "coverage_control.csv", index=False, float_format="%.4f")
    (out / "coverage.md").write_text(markdown(table, reps, control))
    figure(table, out / "coverage.png")
    print(f"{len(per_rep)} method-replications in {elapsed / 60:.1f} min -> {out}")


if __name__ == "__main__":
    main()
