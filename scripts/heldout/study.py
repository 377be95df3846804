"""The held-out coverage study (``python scripts/coverage.py --held-out``).

For every pre-registered cell (:mod:`heldout.cells`, ``docs/coverage.md``) and estimator,
replication r draws a log with seed ``SeedSequence([HELD_OUT_SEED, crc32(key), r])``, runs
winrate's default analysis (:func:`analyse`) and records, per replication, the coverage of
the marginal and simultaneous intervals, and per model the standardised error ``z =
(estimate - truth) / SE``, the reference's degrees of freedom, the shares of the variance
from the small-sample floor and from the bound of the pairs seen in a single cluster
(``unidentified_bound``, issue 37), the mean comparisons per observed pair and whether its reported
interval covered (:func:`replication`; win-rate intervals are asymmetric on the logit scale
since issue 24's fix, so ``|z| <= q`` no longer decides coverage). Rows are appended to
``OUT/reps/<cell>.csv`` as each chunk of replications finishes, one row per replication and
estimator, so an interrupted run resumes where it stopped (and a rerun with more
replications adds only the new ones; every replication has its own seed, so the rows do not
depend on how the run was split). Chunks are taken in turn across the cells
(:func:`interleaved`), so the cells hold equal numbers of replications as the run goes.

Summaries (:func:`summarise`, :func:`model_table`, :func:`pair_size_table`) are rebuilt from
every row on disk (or the replications below ``--summary-reps``, one count for every cell)
and written to ``OUT/summary.csv``, ``OUT/models.csv``, ``OUT/pair_sizes.csv`` and
``OUT/report.md``. Monte-Carlo SEs as in ``docs/coverage.md``: the SD of the
per-replication shares / sqrt(reps) for marginal coverage, binomial for simultaneous
coverage; 99% MC intervals are +/- 2.576 SE.
"""

from __future__ import annotations

import argparse
import warnings
import zlib
from multiprocessing import Pool
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from scipy.stats import norm, t
from tqdm.auto import tqdm

from heldout.cells import HELD_OUT_SEED, Cell, cell_by_key, heavy_tailed_cells, held_out_cells
from heldout.sample import ESTIMATORS
from winrate.analysis import analyze
from winrate.constants import FEW_CLUSTERS
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.io.logs import read_comparisons
from winrate.settings import Joint, MonteCarlo, Variance
from winrate.variance.method_choice import no_reliable_method

SIM_DRAWS = 10_000
ALPHA = 0.05
MC_LEVEL = 99  # percent: Monte-Carlo intervals of the acceptance rule
MC_Z = float(norm.ppf(0.5 + MC_LEVEL / 200))
#: docs/coverage.md's acceptance rule: the MC interval of the marginal coverage meets this
#: band, and that of the simultaneous coverage reaches the cell's ``rule_simultaneous``
#: (percent: 92 for issue 24's cells, 90 for issue 37's)
RULE_MARGINAL = (93, 97)
ROUGH_CODES = ("few-clusters", "no-reliable-method")
PER_MODEL = ("z", "df", "floor", "bound", "pair_size", "cover")
BASE_COLUMNS = ("cell", "estimator", "rep", "seed", "error", "method", "reps_models",
                "marginal", "simultaneous", "width", "not_estimable", "rough_said",
                "miss_low", "miss_high")
#: The comparison methods of issue 37's cells (:data:`heldout.cells.COMPARE`): Variance
#: fields; each records its marginal coverage, mean width and one-sided misses.
COMPARED = {"cr1_normal": {"method": "sandwich", "correction": "cr1", "reference": "normal"},
            "cr2_t": {"method": "sandwich", "correction": "cr2", "reference": "t"}}
COMPARED_MEASURES = ("marginal", "width", "miss_low", "miss_high")
#: A one-sided miss rate above this (percent) is flagged (two-sided 95%: 2.5 expected)
ONE_SIDED_FLAG = 4.0
DEFAULT_HEAVY_OUT = Path("paper/coverage/heldout-heavy")
PAIR_BINS = (1, 1.5, 2, 3, 5, 10, 20, np.inf)
DEFAULT_OUT = Path("paper/coverage/heldout")


def rep_seed(key: str, rep: int, base: int = HELD_OUT_SEED) -> int:
    return int(np.random.SeedSequence([base, zlib.crc32(key.encode()), rep])
               .generate_state(1)[0])


def analyse(log, sample, estimator: str, seed: int, joint: bool = True, **variance):
    """winrate's default analysis of ``log`` for ``estimator`` (``docs/coverage.md``);
    ``variance`` (:class:`winrate.settings.Variance` fields) overrides the default method
    (side experiments and issue 37's comparison methods); ``joint=False`` leaves out the
    simultaneous intervals."""
    # only Bradley-Terry takes covariates (winrate rejects an option its model lacks)
    options = {"covariates": sample.covariates} if estimator == "bt_style" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return analyze(log, model="winrate" if estimator == "winrate" else "bt",
                       baseline=sample.baseline,
                       joint=Joint(simultaneous=True) if joint else None,
                       monte_carlo=MonteCarlo(SIM_DRAWS, seed), variance=Variance(**variance),
                       **options)


def _per_model_df(run) -> np.ndarray:
    df = run.intervals.df
    if df is None:
        return np.full(len(run.models), np.inf)
    return np.broadcast_to(np.asarray(df, float), (len(run.models),)).copy()


def _rough_said(run) -> bool:
    """Whether the output says the intervals are rough: a ``few-clusters`` or
    ``no-reliable-method`` note (by code where notes carry codes; otherwise by the
    condition under which analyze emits them)."""
    codes = [getattr(note, "code", None) for note in run.notes]
    if any(code is not None for code in codes):
        return any(code in ROUGH_CODES for code in codes)
    sizes = [axis.n_clusters for axis in run.axes.values()]
    return (any(g < FEW_CLUSTERS for g in sizes)
            or no_reliable_method(run.clustering, sizes) is not None)


def measure(run, truth: pd.Series) -> dict:
    """Coverage and the per-model diagnostics of one analysis against ``truth``."""
    models = run.models.astype(str)
    target = truth.reindex(models).to_numpy(float)
    se, estimate = run.intervals.se, run.scores
    blank = np.isnan(se)
    low, high = run.intervals.low, run.intervals.high
    covered = np.where(blank, True, (low <= target) & (target <= high))
    row = marginal_measures(run, target)
    joint = np.where(blank, True, (run.joint.sim_low <= target) & (target <= run.joint.sim_high))
    board = run.leaderboard
    counts = board.counts[board.codes]
    pair_size = counts.sum(1) / np.maximum((counts > 0).sum(1), 1)
    variance = np.diag(run.cov)
    row = {"method": "/".join(str(run.settings[k]) for k in ("method", "correction",
                                                              "reference"))
           + f" [{run.method}]",
           "reps_models": len(models), **row,
           "simultaneous": bool(joint.all()),
           "not_estimable": float(blank.mean()), "rough_said": _rough_said(run)}
    values = {"z": (estimate - target) / se, "df": _per_model_df(run),
              "floor": _share(run.small_sample_floor, variance),
              "bound": _share(run.unidentified_bound, variance),
              "pair_size": pair_size, "cover": covered.astype(float)}
    for name, array in values.items():
        row.update({f"{name}:{m}": float(v) for m, v in zip(models, array, strict=True)})
    return row


def _share(part: np.ndarray | None, variance: np.ndarray) -> np.ndarray:
    """Each model's share of its variance from the (K, K) ``part`` (zero when None)."""
    part = np.zeros_like(variance) if part is None else np.diag(part)
    return np.divide(part, variance, out=np.zeros_like(variance), where=variance > 0)


def marginal_measures(run, target: np.ndarray) -> dict:
    """Marginal coverage, mean width and the one-sided miss shares (the truth below the
    lower bound: ``miss_low``; above the upper: ``miss_high``) of one analysis; a model
    without an SE counts as covered."""
    blank = np.isnan(run.intervals.se)
    low, high = run.intervals.low, run.intervals.high
    below, above = ~blank & (target < low), ~blank & (target > high)
    return {"marginal": float(1 - (below | above).mean()),
            "width": float(np.nanmean(high - low)),
            "miss_low": float(below.mean()), "miss_high": float(above.mean())}


def compared(cell: Cell, log, sample, estimator: str, seed: int) -> dict:
    """The comparison methods' marginal measures (NaN where a method does not apply)."""
    row = {}
    for name in cell.compare:
        target = sample.truth[estimator]
        try:
            run = analyse(log, sample, estimator, seed, joint=False, **COMPARED[name])
            found = marginal_measures(run, target.reindex(run.models.astype(str))
                                      .to_numpy(float))
        except WinrateInputError:
            found = dict.fromkeys(COMPARED_MEASURES, np.nan)
        row.update({f"{name}:{k}": v for k, v in found.items()})
    return row


def replication(cell: Cell, rep: int, estimators=None) -> list[dict]:
    """One row per estimator of one replication of ``cell``."""
    seed = rep_seed(cell.key, rep, cell.seed)
    sample = cell.generator.draw(seed)
    log = read_comparisons(sample.frame, feature_cols=sample.covariates)
    rows = []
    for estimator in estimators or cell.estimators:
        row = {"cell": cell.key, "estimator": estimator, "rep": rep, "seed": seed}
        try:
            row.update(measure(analyse(log, sample, estimator, seed),
                               sample.truth[estimator]))
            row.update(compared(cell, log, sample, estimator, seed))
        except WinrateInputError as error:
            row["error"] = str(error)[:300]
        rows.append(row)
    return rows


def columns(cell: Cell) -> list[str]:
    """The fixed columns of a cell's file: every model the generator can report."""
    names = cell.generator.draw(rep_seed(cell.key, 0, cell.seed)).truth["winrate"].index
    return [*BASE_COLUMNS, *(f"{c}:{q}" for c in cell.compare for q in COMPARED_MEASURES),
            *(f"{q}:{m}" for q in PER_MODEL for m in names)]


def rep_path(out: Path, cell: Cell) -> Path:
    return Path(out) / "reps" / f"{cell.key}.csv"


def read_reps(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=list(BASE_COLUMNS))
    return pd.read_csv(path, dtype={"error": str, "method": str}, low_memory=False)


def missing(cell: Cell, reps: int, estimators, out: Path) -> dict[str, list[int]]:
    """Per estimator, the replications below ``reps`` not yet on disk."""
    done = read_reps(rep_path(out, cell))
    return {e: sorted(set(range(reps)) - set(done.loc[done["estimator"] == e, "rep"]))
            for e in estimators}


#: Cells a run may hand to its workers by key: the registered ones and any given to
#: :func:`run` (forked workers inherit it).
_CELLS: dict[str, Cell] = {}


def _task(args):
    key, estimators, reps = args
    cell = _CELLS.get(key) or cell_by_key(key)
    return key, [row for rep in reps for row in replication(cell, rep, estimators)]


def _append(cell: Cell, rows: list[dict], out: Path, cols: list[str]) -> None:
    """Append rows (skipping any replication already on disk) to the cell's file."""
    path = rep_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows).reindex(columns=cols)
    done = read_reps(path)
    if len(done):
        seen = set(zip(done["estimator"], done["rep"], strict=True))
        frame = frame[[(e, r) not in seen for e, r in zip(frame["estimator"], frame["rep"],
                                                          strict=True)]]
    text = frame.to_csv(header=not path.exists(), index=False, float_format="%.6g")
    with open(path, "a") as handle:  # one write per chunk, so a killed run leaves whole rows
        handle.write(text)


def interleaved(per_cell: list[list]) -> list:
    """The cells' task lists taken in turn (the first chunk of every cell, then the
    second, ...), so an interrupted run leaves the cells with equal numbers of replications
    (to a chunk)."""
    longest = max(map(len, per_cell), default=0)
    return [tasks[i] for i in range(longest) for tasks in per_cell if i < len(tasks)]


def run(cells: list[Cell], reps: int, out: Path = DEFAULT_OUT, workers: int = 2,
        estimators=None, chunk: int = 10, progress: bool | None = None) -> None:
    """Compute every missing replication of ``cells`` up to ``reps`` and append it."""
    per_cell, cols = [], {}
    for cell in cells:
        wanted = tuple(e for e in cell.estimators if not estimators or e in estimators)
        todo = missing(cell, reps, wanted, out)
        pending = sorted(set().union(*todo.values())) if todo else []
        cols[cell.key] = columns(cell)
        parts = [pending[start:start + chunk] for start in range(0, len(pending), chunk)]
        per_cell.append([(cell.key, tuple(e for e in wanted if set(part) & set(todo[e])),
                          tuple(part)) for part in parts])
    tasks = interleaved(per_cell)
    by_key = {cell.key: cell for cell in cells}
    _CELLS.update(by_key)
    bar = tqdm(total=sum(len(t[2]) for t in tasks), desc="held-out coverage",
               disable=None if progress is None else not progress)
    if workers > 1 and len(tasks) > 1:
        with Pool(workers, initializer=numba.set_num_threads, initargs=(1,)) as pool:
            for key, rows in pool.imap_unordered(_task, tasks):
                _append(by_key[key], rows, out, cols[key])
                bar.update(len({r["rep"] for r in rows}))
    else:
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            for task in tasks:
                key, rows = _task(task)
                _append(by_key[key], rows, out, cols[key])
                bar.update(len(task[2]))
        finally:
            numba.set_num_threads(threads)
    bar.close()


# ------------------------------------------------------------------------------- summaries


def per_model(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """(reps, models) values of per-model column ``name`` of one cell and estimator."""
    cols = [c for c in frame.columns if c.startswith(f"{name}:")]
    return frame[cols].rename(columns=lambda c: c.split(":", 1)[1]).astype(float)


def model_covered(frame: pd.DataFrame) -> pd.DataFrame:
    """Per replication and model: covered (1), not (0), or NaN if not reported; a model
    without an SE (not estimable) counts as covered. From the reported intervals (the
    ``cover:`` columns); rows written before they existed (symmetric intervals only) from
    ``|z| <= q``, q the t(df) or normal critical value."""
    df = per_model(frame, "df")
    if any(c.startswith("cover:") for c in frame.columns):
        return per_model(frame, "cover").where(df.notna())
    z = per_model(frame, "z")
    q = pd.DataFrame(t.ppf(1 - ALPHA / 2, df.to_numpy()), index=df.index, columns=df.columns)
    covered = (z.abs() <= q).astype(float)
    covered[z.isna() & df.notna()] = 1.0
    return covered.where(df.notna())


def _nan_stat(stat, values) -> float:
    """``stat`` of the finite values, NaN (without a warning) when there are none."""
    values = np.asarray(values, float).ravel()
    values = values[np.isfinite(values)]
    return float(stat(values)) if values.size > 1 else float("nan")


def _interval(mean: float, se: float) -> tuple[float, float]:
    return mean - MC_Z * se, mean + MC_Z * se


def summarise(per_rep: pd.DataFrame, rare: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """One row per cell and estimator: coverage with MC SEs and 99% MC intervals (percent),
    the acceptance rule at this number of replications, and the diagnostics."""
    rows = []
    for (key, estimator), part in per_rep.groupby(["cell", "estimator"], sort=False):
        ok = part[part["error"].isna()]
        n = len(ok)
        marginal, msd = ok["marginal"].mean(), ok["marginal"].std(ddof=1)
        sim = ok["simultaneous"].astype(float).mean()
        m_se, s_se = msd / np.sqrt(n), np.sqrt(sim * (1 - sim) / n)
        m_lo, m_hi = _interval(100 * marginal, 100 * m_se)
        s_lo, s_hi = _interval(100 * sim, 100 * s_se)
        rule_sim = cell_by_key(key).rule_simultaneous
        z = per_model(ok, "z")
        rare_cols = [m for m in rare[key] if m in z.columns]
        covered = model_covered(ok).mean()
        floor, bound = per_model(ok, "floor"), per_model(ok, "bound")
        rows.append({
            "cell": key, "estimator": estimator, "reps": n, "errors": len(part) - n,
            "method": ok["method"].mode().iloc[0] if n else "",
            "marginal": 100 * marginal, "marginal_mcse": 100 * m_se, "marginal_lo99": m_lo,
            "marginal_hi99": m_hi, "simultaneous": 100 * sim, "simultaneous_mcse": 100 * s_se,
            "simultaneous_lo99": s_lo, "simultaneous_hi99": s_hi,
            "rule_met": bool(m_hi >= RULE_MARGINAL[0] and m_lo <= RULE_MARGINAL[1]
                             and s_hi >= rule_sim),
            **one_sided(ok), **compared_summary(ok),
            "rough_said": 100 * ok["rough_said"].astype(float).mean(),
            "width": ok["width"].mean(), "not_estimable": 100 * ok["not_estimable"].mean(),
            "sd_z": _nan_stat(lambda v: v.std(ddof=1), z),
            "mean_z": _nan_stat(np.mean, z),
            "sd_z_rare": _nan_stat(lambda v: v.std(ddof=1), z[rare_cols]),
            "rare_cover_min": 100 * _nan_stat(np.min, covered[rare_cols]),
            "rare_cover_max": 100 * _nan_stat(np.max, covered[rare_cols]),
            "other_cover_min": 100 * _nan_stat(np.min, covered.drop(rare_cols)),
            "floor_share_rare": _nan_stat(np.mean, floor[rare_cols]),
            "floor_share": _nan_stat(np.mean, floor),
            "bound_share_rare": _nan_stat(np.mean, bound[[m for m in rare_cols
                                                           if m in bound.columns]]),
            "bound_share": _nan_stat(np.mean, bound),
        })
    return pd.DataFrame(rows)


def one_sided(ok: pd.DataFrame) -> dict:
    """Lower and upper miss rates (percent of model-replications) and whether either
    exceeds :data:`ONE_SIDED_FLAG`; NaN for rows written before they were recorded."""
    low, high = (100 * ok[c].astype(float).mean() if c in ok else np.nan
                 for c in ("miss_low", "miss_high"))
    return {"miss_low": low, "miss_high": high,
            "one_sided_flag": bool(max(low, high) > ONE_SIDED_FLAG)}


def compared_summary(ok: pd.DataFrame) -> dict:
    """The comparison methods' marginal coverage (percent), mean width and one-sided
    misses over the replications, where the cell ran them."""
    out = {}
    for name in COMPARED:
        for measure_name in COMPARED_MEASURES:
            column = f"{name}:{measure_name}"
            if column in ok and ok[column].notna().any():
                value = ok[column].astype(float).mean()
                out[column] = value if measure_name == "width" else 100 * value
    return out


def model_table(per_rep: pd.DataFrame, rare: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """One row per cell, estimator and model: coverage, mean and SD of z, median df,
    mean floor and single-cluster bound shares and mean comparisons per observed pair."""
    out = []
    for (key, estimator), part in per_rep.groupby(["cell", "estimator"], sort=False):
        ok = part[part["error"].isna()]
        z = per_model(ok, "z")
        table = pd.DataFrame({
            "coverage": 100 * model_covered(ok).mean(), "mean_z": z.mean(), "sd_z": z.std(),
            "df_median": per_model(ok, "df").median(),
            "floor_share": per_model(ok, "floor").mean(),
            "bound_share": per_model(ok, "bound").mean(),
            "pair_size": per_model(ok, "pair_size").mean(),
            "reps": z.notna().sum()})
        table = table[table["reps"] > 0]
        table.insert(0, "rare", table.index.isin(rare[key]))
        out.append(table.rename_axis("model").reset_index().assign(cell=key,
                                                                    estimator=estimator))
    cols = ["cell", "estimator", "model", "rare", "reps", "coverage", "mean_z", "sd_z",
            "df_median", "floor_share", "bound_share", "pair_size"]
    return pd.concat(out, ignore_index=True)[cols]


def pair_size_table(per_rep: pd.DataFrame) -> pd.DataFrame:
    """SD of z and coverage pooled over model-replications, by the model's mean
    comparisons per observed pair in that replication (:data:`PAIR_BINS`)."""
    out = []
    for (key, estimator), part in per_rep.groupby(["cell", "estimator"], sort=False):
        ok = part[part["error"].isna()]
        long = pd.DataFrame({
            "z": per_model(ok, "z").to_numpy().ravel(),
            "covered": model_covered(ok).to_numpy().ravel(),
            "floor": per_model(ok, "floor").to_numpy().ravel(),
            "size": per_model(ok, "pair_size").to_numpy().ravel()}).dropna(subset=["covered"])
        long["bin"] = pd.cut(long["size"], PAIR_BINS, right=False)
        grouped = long.groupby("bin", observed=True)
        table = grouped.agg(n=("z", "size"), sd_z=("z", "std"), coverage=("covered", "mean"),
                            floor_share=("floor", "mean")).reset_index()
        table["coverage"] *= 100
        table["bin"] = table["bin"].astype(str)
        out.append(table.assign(cell=key, estimator=estimator))
    return pd.concat(out, ignore_index=True)[["cell", "estimator", "bin", "n", "sd_z",
                                              "coverage", "floor_share"]]


def load_all(out: Path, cells: list[Cell], reps: int | None = None) -> pd.DataFrame:
    """Every cell's rows on disk, in registration order; with ``reps`` only the
    replications below it (every cell cut to the same count)."""
    frames = [read_reps(rep_path(out, c)) for c in cells if rep_path(out, c).exists()]
    if reps is not None:
        frames = [f[f["rep"] < reps] for f in frames]
    order = {c.key: i for i, c in enumerate(cells)}
    frame = pd.concat(frames, ignore_index=True)
    rank = {e: i for i, e in enumerate(ESTIMATORS)}
    frame = frame.assign(order=frame["cell"].map(order), rank=frame["estimator"].map(rank))
    frame = frame.sort_values(["order", "rank", "rep"], kind="stable").drop(
        columns=["order", "rank"])
    return frame.reset_index(drop=True)


def _md(frame: pd.DataFrame, digits: int = 1) -> str:
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"

    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return "-" if np.isnan(v) else f"{v:.{digits}f}"
        return str(v)

    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body])


def report(summary: pd.DataFrame, models: pd.DataFrame, sizes: pd.DataFrame) -> str:
    """The markdown report of the run on disk (no timings: a rerun reproduces it)."""
    shown = summary.assign(
        marginal=[f"{m:.1f} [{lo:.1f}, {hi:.1f}]" for m, lo, hi in
                  zip(summary.marginal, summary.marginal_lo99, summary.marginal_hi99,
                      strict=True)],
        simultaneous=[f"{m:.1f} [{lo:.1f}, {hi:.1f}]" for m, lo, hi in
                      zip(summary.simultaneous, summary.simultaneous_lo99,
                          summary.simultaneous_hi99, strict=True)])
    main = shown[["cell", "estimator", "reps", "errors", "method", "marginal", "simultaneous",
                  "rule_met", "sd_z", "sd_z_rare", "rare_cover_min", "rare_cover_max",
                  "floor_share_rare", "bound_share_rare", "rough_said"]]
    rare = models[models["rare"]].drop(columns="rare")
    extra = [c for c in ("miss_low", "miss_high", "one_sided_flag", "width",
                         *(f"{n}:{q}" for n in COMPARED for q in COMPARED_MEASURES))
             if c in summary and summary[c].notna().any()]
    sides = ("" if "miss_low" not in extra else "\n".join([
        "## One-sided misses and widths against the comparison methods",
        "",
        f"Lower / upper miss rates in percent of model-replications (flagged above "
        f"{ONE_SIDED_FLAG:g}%); mean marginal interval width of the default and of the "
        "comparison methods run on the same logs (CR1 with a normal reference, the old "
        "default; CR2 with its Pan-Wall t, the win rate only), with their marginal coverage.",
        "",
        _md(summary[["cell", "estimator", *extra]], 3),
        "",
    ]))
    return "\n".join([
        "# Held-out coverage study",
        "",
        "Generated by the commands in `README.md` (cells and rule: `docs/coverage.md`; "
        "generators: `scripts/heldout/`). Coverage in percent with 99% Monte-Carlo intervals in "
        "brackets; `rule_met` applies the acceptance rule to these replications (the rule "
        "itself is for 2,000). `sd_z`: SD of (estimate - truth) / SE over all model-"
        "replications (1 if the SEs are right); `sd_z_rare` over the rare models; "
        "`rare_cover_*`: the lowest and highest per-model coverage of the rare models; "
        "`floor_share_rare`, `bound_share_rare`: their mean shares of variance from the "
        "small-sample floor and from the bound of pairs seen in a single cluster; "
        "`rough_said`: % of replications whose output says the intervals are rough.",
        "",
        "## Coverage by cell and estimator",
        "",
        _md(main, 2),
        "",
        "## Rare models",
        "",
        _md(rare, 2),
        "",
        "## By comparisons per observed pair",
        "",
        "Model-replications binned by the model's mean comparisons per observed opponent in "
        "that replication.",
        "",
        _md(sizes, 2),
        "",
        sides,
    ])


def write_summaries(out: Path, cells: list[Cell], reps: int | None = None) -> pd.DataFrame:
    per_rep = load_all(out, cells, reps)
    rare = {c.key: c.generator.draw(rep_seed(c.key, 0, c.seed)).rare for c in cells}
    summary = summarise(per_rep, rare)
    models, sizes = model_table(per_rep, rare), pair_size_table(per_rep)
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4f")
    models.to_csv(out / "models.csv", index=False, float_format="%.4f")
    sizes.to_csv(out / "pair_sizes.csv", index=False, float_format="%.4f")
    (out / "report.md").write_text(report(summary, models, sizes))
    return summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="held-out coverage study (issues 24, 37)")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--cells", nargs="+", default=(), help="cell keys (default: all)")
    parser.add_argument("--heavy", action="store_true",
                        help="issue 37's heavy-tailed cells (their own pre-registration)")
    parser.add_argument("--estimators", nargs="+", default=(),
                        choices=("winrate", "bt", "bt_style"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=10,
                        help="replications per task: each is appended as it finishes")
    parser.add_argument("--out", default=None)
    parser.add_argument("--summary-reps", type=int, default=None,
                        help="summarise only the replications below this (every cell)")
    parser.add_argument("--summary-only", action="store_true",
                        help="only rebuild the summaries from the rows on disk")
    args = parser.parse_args(argv)
    registry = heavy_tailed_cells() if args.heavy else held_out_cells()
    out = Path(args.out or (DEFAULT_HEAVY_OUT if args.heavy else DEFAULT_OUT))
    cells = [cell_by_key(k) for k in args.cells] if args.cells else list(registry)
    if not args.summary_only:
        run(cells, args.reps, out, args.workers, tuple(args.estimators), args.chunk)
    on_disk = [c for c in registry if rep_path(out, c).exists()]
    print(write_summaries(out, on_disk, args.summary_reps).to_string())
