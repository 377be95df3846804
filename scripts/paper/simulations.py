"""Seeded simulations behind two claims: the naive coverage an inflation implies, and
two-sided honesty (the naive interval over-covers in a position-swapped paired design).

1. **MMLU-Pro-like design** (:data:`MMLU_LIKE`, :func:`winrate.io.simulate.simulate_comparisons`):
   29 models, one judge, about 406 comparisons per prompt (every model about 28 times
   per prompt, as on MMLU-Pro), one shared response effect per model and prompt and a
   tie margin giving MMLU-Pro's two-thirds ties. Per replication: the naive and the
   prompt-clustered CR1 95% intervals, whether each covers the population score
   (:meth:`SimulatedLog.population_scores` with the fit's opponent weights), and the
   median SE inflation. The implied naive coverage ``2 Phi(1.96 / infl) - 1`` of the
   median inflation is set beside the simulated one.
2. **Paired design** (:func:`paired_log`): every pair of models is judged twice on every
   prompt, once in each order (as arena-hard and MT-bench do), and a prompt-level position
   bias ``beta_p ~ N(0, sd^2)`` favours whichever answer is shown first:
   ``d = theta_a - theta_b + beta_p * (+1 first / -1 second) + eps``. A model's two
   games against an opponent on a prompt get ``+beta_p`` and ``-beta_p``, so the shared
   effect cancels within the prompt: the within-prompt correlation is negative, the
   prompt-clustered variance is smaller than the naive one, and the naive interval
   over-covers while the clustered one is right. Truth: :func:`winrate.io.simulate.population_psi`
   with ``position_bias_sd = sd`` (the marginal of ``d`` is the same).

Monte Carlo SE of a marginal coverage: SD over replications of the per-replication share
of models covered / sqrt(reps), as in ``scripts/coverage.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from common import Paper, fmt, new_figure, pct
from real_data import Z, implied_naive_coverage
from tqdm.auto import tqdm

from winrate.errors import WinrateWarning
from winrate.estimators.win_rate_kernels import fit
from winrate.io.logs import ComparisonLog
from winrate.io.simulate import SimulationDesign, population_psi, simulate_comparisons
from winrate.variance.sandwich import cluster_cov, naive_cov

SEED = 20241020
REPS = 200
MMLU_LIKE = SimulationDesign(
    n_models=29, n_prompts=150, n_judges=1, comparisons_per_prompt=406.0,
    size_dispersion=1e6, ability_sd=0.3, response_sd=1.0, judge_sd=0.0, noise_sd=0.0,
    tie_margin=1.4, missing_pair_share=0.0,
)
PAIRED = SimulationDesign(
    n_models=6, n_prompts=150, n_judges=1, ability_sd=0.3, response_sd=0.0, judge_sd=0.0,
    noise_sd=0.5, tie_margin=0.2, position_bias=0.0, position_bias_sd=1.0,
    missing_pair_share=0.0,
)


@dataclass(frozen=True)
class CoverageRun:
    """Per-replication naive and clustered coverage shares and median inflation."""

    naive: np.ndarray
    clustered: np.ndarray
    inflation: np.ndarray
    tie_share: float

    def summary(self) -> dict:
        reps = self.naive.size
        return {
            "naive": self.naive.mean(), "naive_mcse": self.naive.std(ddof=1) / np.sqrt(reps),
            "clustered": self.clustered.mean(),
            "clustered_mcse": self.clustered.std(ddof=1) / np.sqrt(reps),
            "inflation": float(np.median(self.inflation)),
            "implied": float(implied_naive_coverage(np.median(self.inflation))),
        }


def _coverage(log: ComparisonLog, truth_of) -> tuple[float, float, float]:
    """Shares of models covered by the naive and the prompt-clustered 95% interval, and the
    median SE inflation, for one log; ``truth_of(board)`` gives the population scores."""
    board = fit(log)
    truth = truth_of(board)
    error = np.abs(board.scores - truth)
    se_naive = np.sqrt(np.diag(naive_cov(board.influence, "cr1")))
    se_cluster = np.sqrt(np.diag(cluster_cov(board.influence, log.axes["prompt"].codes)))
    return (float(np.mean(error <= Z * se_naive)), float(np.mean(error <= Z * se_cluster)),
            float(np.median(se_cluster / se_naive)))


def _run(draw, reps: int, desc: str) -> CoverageRun:
    rows, ties = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        for rep in tqdm(range(reps), desc=desc, leave=False, disable=None):  # one log each
            log, truth_of = draw(rep)
            rows.append(_coverage(log, truth_of))
            ties.append(float(np.mean(log.score == 0.5)))
    naive, clustered, inflation = map(np.array, zip(*rows, strict=True))
    return CoverageRun(naive, clustered, inflation, float(np.mean(ties)))


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([SEED, *parts]).generate_state(1)[0])


def mmlu_like_run(reps: int = REPS, design: SimulationDesign = MMLU_LIKE) -> CoverageRun:
    def draw(rep):
        sim = simulate_comparisons(design, _seed(1, rep))
        return sim.log, lambda board: sim.population_scores(board.weights)
    return _run(draw, reps, "MMLU-like simulation")


def paired_log(design: SimulationDesign, seed: int) -> tuple[ComparisonLog, np.ndarray]:
    """Position-swapped paired log (module doc) and its population psi."""
    rng = np.random.default_rng(seed)
    k, n_prompts = design.n_models, design.n_prompts
    theta = np.linspace(design.ability_sd * 1.5, -design.ability_sd * 1.5, k)
    low, high = np.triu_indices(k, 1)
    first = np.concatenate([low, high])  # each pair once in each order
    second = np.concatenate([high, low])
    prompt = np.repeat(np.arange(n_prompts), first.size)
    a, b = np.tile(first, n_prompts), np.tile(second, n_prompts)
    bias = rng.normal(design.position_bias, design.position_bias_sd, n_prompts)
    d = theta[a] - theta[b] + bias[prompt] + rng.normal(0, design.noise_sd, a.size)
    score = np.where(d > design.tie_margin, 1.0, np.where(d < -design.tie_margin, 0.0, 0.5))
    log = ComparisonLog.from_arrays(a, b, score, prompt=prompt,
                                    judge=np.zeros(a.size, int))
    return log, population_psi(theta, design)


def paired_run(reps: int = REPS, design: SimulationDesign = PAIRED) -> CoverageRun:
    def draw(rep):
        log, psi = paired_log(design, _seed(2, rep))
        return log, lambda board: (board.weights * np.nan_to_num(psi)).sum(axis=1)
    return _run(draw, reps, "paired simulation")


def _row(label: str, run: CoverageRun) -> dict:
    s = run.summary()
    return {"design": label, "ties %": pct(run.tie_share),
            "SE inflation (median)": fmt(s["inflation"]),
            "naive coverage %": f"{pct(s['naive'])} ({pct(s['naive_mcse'])})",
            "implied 2Phi(1.96/infl)-1 %": pct(s["implied"]),
            "clustered coverage %": f"{pct(s['clustered'])} ({pct(s['clustered_mcse'])})"}


def simulation_results(paper: Paper) -> dict[str, CoverageRun]:
    """Both simulations: table ``simulated_coverage`` and their numbers."""
    runs = {"mmlu": mmlu_like_run(), "paired": paired_run()}
    labels = {"mmlu": "MMLU-Pro-like (29 models, 1 judge, shared responses)",
              "paired": "paired, position-swapped (6 models, prompt-level position bias)"}
    paper.table("simulated_coverage",
                pd.DataFrame([_row(labels[k], r) for k, r in runs.items()]),
                f"Coverage of nominal 95% intervals in two seeded simulations ({REPS} "
                "replications each; Monte Carlo SE in parentheses).")
    paper.number("sim_reps", REPS, "d")
    for key, run in runs.items():
        s = run.summary()
        paper.number(f"sim_{key}_infl", s["inflation"])
        paper.number(f"sim_{key}_naive", pct(s["naive"]))
        paper.number(f"sim_{key}_naive_mcse", pct(s["naive_mcse"]))
        paper.number(f"sim_{key}_implied", pct(s["implied"]))
        paper.number(f"sim_{key}_clustered", pct(s["clustered"]))
        paper.number(f"sim_{key}_clustered_mcse", pct(s["clustered_mcse"]))
        paper.number(f"sim_{key}_ties", pct(run.tie_share))
    paper.number("sim_mmlu_prompts", MMLU_LIKE.n_prompts, "d")
    paper.number("sim_paired_prompts", PAIRED.n_prompts, "d")
    paper.number("sim_paired_models", PAIRED.n_models, "d")
    return runs


def coverage_figure(paper: Paper, runs: dict[str, CoverageRun], points: pd.DataFrame):
    """Implied naive coverage against SE inflation: the curve, the real-data ``points``
    (the rows of Table 1 that print an implied coverage, at their printed values; also
    written to ``figures/naive_coverage_points.csv``) and the two simulations'
    (inflation, simulated coverage) points."""
    path = paper.path("figures", "naive_coverage_points.csv")
    points.to_csv(path, index=False, lineterminator="\n")
    paper.written.append(path)
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot()
    x = np.linspace(0.5, 6.0, 400)
    ax.plot(x, 100 * implied_naive_coverage(x), color="0.3", lw=1.2,
            label="implied: 2 Phi(1.96 / inflation) - 1")
    ax.axhline(95, color="0.6", lw=0.8, ls=":")
    ordered = points.sort_values("inflation", kind="stable").reset_index(drop=True)
    ax.plot(ordered["inflation"], ordered["implied"], "o", color="#1f77b4", ms=4,
            label="real logs (Table 1)")
    for i, row in ordered.iterrows():
        ax.annotate(f"{row['dataset']} ({row['clustering']})", (row["inflation"], row["implied"]),
                    fontsize=7, xytext=(4, 4 + 7 * (i % 2)), textcoords="offset points")
    for key, marker, name in (("mmlu", "s", "simulation, MMLU-Pro-like"),
                              ("paired", "D", "simulation, paired design")):
        s = runs[key].summary()
        ax.errorbar([s["inflation"]], [100 * s["naive"]], yerr=[196 * s["naive_mcse"]],
                    fmt=marker, color="#d62728", ms=5, capsize=2, label=name)
    ax.set_xlabel("SE inflation (clustered SE / naive SE)")
    ax.set_ylabel("coverage of the naive 95% interval (%)")
    ax.set_xlim(0.4, 6.1)
    ax.set_ylim(0, 101)
    ax.legend(fontsize=7, loc="lower left", frameon=False)
    fig.tight_layout()
    paper.figure("naive_coverage", fig,
                 "Coverage of the naive 95% interval against the SE inflation: the curve "
                 "2 Phi(1.96 / inflation) - 1 with each real log's median inflation where "
                 "Table 1 prints an implied coverage (no others), and the two simulations "
                 "(bars: 1.96 Monte Carlo SE).")


def calibration_check(design: SimulationDesign = MMLU_LIKE, seed: int = 0) -> dict:
    """Structure of one MMLU-like log (median m and own-comparison ICC), for the text."""
    from winrate.eda import explore

    sim = simulate_comparisons(design, _seed(3, seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        report = explore(sim.log, ("prompt",))
    axis = report.axes["prompt"]
    return {"m": float(np.median(axis.m)), "own_icc": float(np.median(axis.shared_icc))}
