"""The confirmatory coverage study of the frozen ``auto`` (issue 36;
``paper/confirmatory/registration.md`` is its pre-registration).

Cells (:func:`confirmatory_cells`): every cell of the issue-24 held-out table, the
heavy-tailed cells of issue 37 and the cells of the generator written after the freeze
(:mod:`heldout.slopes`), each with the generator, design and estimators it was registered
with and the simultaneous limit of its registration (92% for issue 24's cells and the new
ones, 90% for issue 37's). Replication r of cell ``key`` draws its log and runs its analyses
with the seed ``SeedSequence([CONFIRMATORY_SEED, crc32(key), r])`` taken as one 64-bit word
(:func:`confirmatory_seed`): every earlier study took one 32-bit word, so no seed here can
equal an earlier one (``tests/test_confirmatory.py`` also checks the earlier runs' seeds
one by one).

Per replication and estimator (:func:`replication`):

* ``auto``: winrate's default analysis (:func:`heldout.study.analyse`: simultaneous
  intervals, 10,000 Monte-Carlo draws for their critical value, everything else default)
  and its measures (:func:`heldout.study.measure`), plus the marginal coverage among the
  models reported as estimable (a model without an SE is not estimable);
* two alternatives on the same log, each with marginal and simultaneous intervals:
  ``cr1``, Wald intervals from the CR1 sandwich with a normal reference; and ``bm``, the CR2
  sandwich with a t reference on Bell-McCaffrey degrees of freedom (:func:`bm_df`: Bell &
  McCaffrey 2002, the df Imbens & Kolesar 2016 recommend) for the win rate, which has CR2
  strata; Bradley-Terry has no CR2 in winrate, so its ``bm`` is the CR1 sandwich with t on
  each model's Bell-McCaffrey df under working independence without leverage, its effective
  number of clusters G* (Carter, Schnepel & Steigerwald 2017; the identity is in
  :mod:`winrate.variance.method_choice`). Win-rate intervals are built on the logit scale as
  winrate builds them (:func:`winrate.inference.intervals.bounds_on_scale`).
* A replication whose estimate does not exist (the fit raises winrate's input error: a flat
  likelihood, diverging ratings, no convergence) is dropped and counted with its message;
  any other error counts as a miss of every interval (coverage 0) and is reported.

Rows are appended to ``OUT/reps/<cell>.csv`` per chunk (resumable, as the held-out study);
:func:`summarise` applies the registered rule (:func:`verdict`) and :func:`report` writes
``OUT/report.md``.
"""

from __future__ import annotations

import argparse
import time
import traceback
import zlib
from dataclasses import replace
from functools import cache
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from heldout import study
from heldout.cells import Cell, heavy_tailed_cells, held_out_cells
from heldout.semi import RealDesign
from heldout.slopes import RandomSlopes
from winrate.errors import WinrateInputError
from winrate.inference.intervals import bounds_on_scale
from winrate.inference.joint import simultaneous_intervals
from winrate.io.logs import read_comparisons
from winrate.variance.reference import critical_value, joint_df

#: The seed constant of this study (issue 36): issue 24's cells used 20260024, issue 37's
#: 20260037, the exploratory runs of issue 37 raw seeds 3700000 + r, the tuning grid
#: ``SeedSequence([20240611, ...])``.
CONFIRMATORY_SEED = 20260036
DEFAULT_OUT = Path("paper/confirmatory")
#: Width criterion (registration, rule ii): auto's mean marginal width at most this times
#: the narrowest alternative that covers (:func:`covers`).
WIDTH_LIMIT = 1.15
ALTERNATIVES = ("cr1", "bm")
#: Input errors that mean the estimate does not exist (the registered exclusion).
NO_ESTIMATE = ("flat along some direction", "diverge", "did not converge")
PER_MODEL = ("z", "df", "floor", "bound", "pair_size", "cover", "width", "cr1_width", "cr1_cover",
             "bm_width", "bm_cover", "bm_df")
BASE_COLUMNS = ("cell", "estimator", "rep", "seed", "error", "error_kind", "method",
                "reps_models", "marginal", "marginal_estimable", "simultaneous", "width",
                "not_estimable", "n_not_estimable", "rough_said", "miss_low", "miss_high",
                *(f"{alt}:{q}" for alt in ALTERNATIVES
                  for q in ("marginal", "simultaneous", "error")))


def confirmatory_seed(key: str, rep: int) -> int:
    """Replication ``rep`` of cell ``key``: ``SeedSequence([CONFIRMATORY_SEED, crc32(key),
    rep])``, one 64-bit word (module doc)."""
    sequence = np.random.SeedSequence([CONFIRMATORY_SEED, zlib.crc32(key.encode()), rep])
    return int(sequence.generate_state(1, np.uint64)[0])


@cache
def new_cells() -> tuple[Cell, ...]:
    """The cells of the generator written after the freeze (:mod:`heldout.slopes`)."""
    both = ("winrate", "bt")
    return (
        Cell("N-prd", "random slopes",
             "PRD design (80 prompts x 6 judges with random position biases, 9 models, "
             "15,200 rows)", RandomSlopes(RealDesign("prd")), both, seed=CONFIRMATORY_SEED),
        Cell("N-qlora", "random slopes",
             "QLoRA design (80 prompts, 1 judge, 8 models, 4,467 rows)",
             RandomSlopes(RealDesign("qlora")), both, seed=CONFIRMATORY_SEED),
    )


@cache
def confirmatory_cells() -> tuple[Cell, ...]:
    """Every cell of the study (module doc), with this study's seed and no issue-37
    comparison methods (the alternatives here replace them)."""
    earlier = (*held_out_cells(), *heavy_tailed_cells())
    return (*(replace(c, seed=CONFIRMATORY_SEED, compare=(), acceptance=True) for c in earlier),
            *new_cells())


def cell_by_key(key: str) -> Cell:
    for cell in confirmatory_cells():
        if cell.key == key:
            return cell
    raise KeyError(f"no confirmatory cell {key!r}")


# ------------------------------------------------------------------ Bell-McCaffrey df


def bm_df(log, clustering, baseline: int | None = None) -> np.ndarray:
    """Per model code, the Bell-McCaffrey degrees of freedom of the win rate's CR2
    variance, the smallest over the clustering axes.

    The win rate is a fixed combination of pair means: model a's score moves by
    ``k_ah = 1 / (|O_a| n_h)`` per unit of a residual in its pair h (``1 / n_h`` against a
    baseline). Under the working model of independent, equal-variance comparisons
    (Bell & McCaffrey 2002; Imbens & Kolesar 2016, sec. 4), a residual is
    ``e = (I - H) eps`` with H the pair means' hat matrix, and CR2's cluster total is
    ``t_g = sum_h c_gh sum_{r in g, h} e_r`` with ``c_gh = k_ah (1 - m_gh / n_h)^(-1/2)``
    (``m_gh`` the pair's comparisons in cluster g; 0 where ``m_gh = n_h``: that block's
    total is identically 0). So ``Cov(t) = S = D - sum_h v_h v_h' / n_h`` with
    ``D = diag(sum_h c_gh^2 m_gh)`` and ``v_hg = c_gh m_gh``, and the Satterthwaite df of
    ``sum_g t_g^2`` is ``nu = tr(S)^2 / tr(S^2)``, with ``tr(S^2) = sum_g D_g^2 - 2 sum_h
    sum_g v_hg^2 D_g / n_h + sum_{h,h'} (v_h' v_h')^2 / (n_h n_h')``. Clipped to
    ``[1, G - 1]``; ``G - 1`` where S is 0 (the variance is the floor's alone).
    """
    k = log.n_models
    low, high = np.minimum(log.model_a, log.model_b), np.maximum(log.model_a, log.model_b)
    pair_key, stratum = np.unique(low * k + high, return_inverse=True)
    stratum = stratum.ravel()
    pair_low, pair_high = pair_key // k, pair_key % k
    n_h = np.bincount(stratum, minlength=pair_key.size).astype(float)
    if baseline is None:
        degree = np.bincount(np.r_[pair_low, pair_high], minlength=k).astype(float)
    else:
        degree = np.ones(k)
    out = np.full((len(clustering), k), np.nan)
    for axis_index, name in enumerate(clustering):
        codes = log.axes[name].codes
        g = log.axes[name].n_clusters
        m = np.bincount(codes * pair_key.size + stratum,
                        minlength=g * pair_key.size).reshape(g, pair_key.size).astype(float)
        leverage = np.divide(m, n_h, out=np.zeros_like(m), where=m > 0)
        scale = np.where((m > 0) & (leverage < 1),
                         1 / np.sqrt(np.clip(1 - leverage, 1e-300, None)), 0.0)
        for a in range(k):
            strata = np.flatnonzero((pair_low == a) | (pair_high == a))
            if baseline is not None:
                strata = strata[(pair_low[strata] == baseline) | (pair_high[strata] == baseline)]
            if a == baseline or strata.size == 0:
                continue
            c = scale[:, strata] / (degree[a] * n_h[strata])  # (G, H_a)
            v = (c * m[:, strata]).T  # (H_a, G)
            d = (c**2 * m[:, strata]).sum(axis=1)  # (G,)
            trace = d.sum() - ((v**2).sum(axis=1) / n_h[strata]).sum()
            gram = v @ v.T
            square = ((d**2).sum() - 2 * ((v**2 @ d) / n_h[strata]).sum()
                      + (gram**2 / np.outer(n_h[strata], n_h[strata])).sum())
            nu = trace**2 / square if square > 1e-300 * max(trace**2, 1e-300) else g - 1
            out[axis_index, a] = np.clip(nu, 1.0, max(g - 1, 1))
    return np.fmin.reduce(out, axis=0)


# ------------------------------------------------------------------ one replication


def _bounds(run, cov, df, seed: int):
    """Marginal and simultaneous ``(low, high)`` of Wald intervals from ``cov`` with
    reference df ``df`` (None: normal; else per model), on the run's scale."""
    est = np.asarray(run.scores, float)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    se = np.where(np.isnan(run.intervals.se), np.nan, se)
    scale = run.leaderboard.scale
    q = critical_value(study.ALPHA, df)
    marginal = bounds_on_scale(est, est - q * se, est + q * se, scale)[:2]
    keep = np.isfinite(se) & (se > 0)
    sim_low, sim_high = np.full(est.shape, np.nan), np.full(est.shape, np.nan)
    if keep.any():
        sim = simultaneous_intervals(est[keep], cov[np.ix_(keep, keep)], study.ALPHA,
                                     joint_df(df, keep), n_draws=study.SIM_DRAWS, seed=seed)
        sim_low[keep], sim_high[keep] = sim.low, sim.high
    return marginal, bounds_on_scale(est, sim_low, sim_high, scale)[:2]


def coverage_of(bounds, target: np.ndarray, prefix: str) -> dict:
    """Per-replication coverage among the models with an interval: the marginal share,
    whether all are covered jointly, and per-model widths and cover indicators."""
    (low, high), (sim_low, sim_high) = bounds
    shown = np.isfinite(low) & np.isfinite(high)
    covered = (low <= target) & (target <= high)
    jointly = (sim_low <= target) & (target <= sim_high)
    return {f"{prefix}:marginal": float(covered[shown].mean()) if shown.any() else np.nan,
            f"{prefix}:simultaneous": float(jointly[shown].all()) if shown.any() else np.nan,
            "width": np.where(shown, high - low, np.nan),
            "cover": np.where(shown, covered.astype(float), np.nan)}


def alternatives(log, sample, estimator: str, seed: int, target: np.ndarray) -> dict:
    """The ``cr1`` and ``bm`` alternatives' measures (module doc) on one log."""
    cr1 = study.analyse(log, sample, estimator, seed, joint=False, method="sandwich",
                        correction="cr1", reference="normal")
    out, per_model = {}, {}
    found = coverage_of(_bounds(cr1, np.asarray(cr1.cov, float), None, seed), target, "cr1")
    per_model["cr1_width"], per_model["cr1_cover"] = found.pop("width"), found.pop("cover")
    out.update(found)
    if estimator == "winrate":
        run = study.analyse(log, sample, estimator, seed, joint=False, method="sandwich",
                            correction="cr2", reference="t")
        base = (None if sample.baseline is None else
                int(np.flatnonzero(log.models.astype(str) == sample.baseline)[0]))
        by_code = bm_df(log, tuple(run.clustering), base)
        df = pd.Series(by_code, index=log.models.astype(str)).reindex(
            run.models.astype(str)).to_numpy(float)
    else:
        run = cr1
        per_axis = [np.clip(np.asarray(a.effective_clusters, float), 1.0,
                            max(a.n_clusters - 1, 1)) for a in cr1.axes.values()]
        df = np.fmin.reduce(per_axis)
    found = coverage_of(_bounds(run, np.asarray(run.cov, float), df, seed), target, "bm")
    per_model["bm_width"], per_model["bm_cover"] = found.pop("width"), found.pop("cover")
    per_model["bm_df"] = np.asarray(df, float)
    out.update(found)
    return out, per_model


def _error_kind(error: Exception) -> str:
    if isinstance(error, WinrateInputError) and any(s in str(error) for s in NO_ESTIMATE):
        return "no-estimate"
    return "error"


def auto_measures(run, truth: pd.Series) -> tuple[dict, dict]:
    """:func:`heldout.study.measure` of the default analysis, plus coverage, misses and
    widths among the estimable models (module doc)."""
    row = study.measure(run, truth)
    target = truth.reindex(run.models.astype(str)).to_numpy(float)
    blank = np.isnan(run.intervals.se)
    low, high = run.intervals.low, run.intervals.high
    covered = (low <= target) & (target <= high)
    shown = ~blank
    row.update({
        "marginal_estimable": float(covered[shown].mean()) if shown.any() else np.nan,
        "n_not_estimable": int(blank.sum()),
        "miss_low": float((target[shown] < low[shown]).mean()) if shown.any() else np.nan,
        "miss_high": float((target[shown] > high[shown]).mean()) if shown.any() else np.nan,
    })
    return row, {"width": np.where(shown, high - low, np.nan)}


def replication(cell: Cell, rep: int, estimators=None) -> list[dict]:
    """One row per estimator of replication ``rep`` of ``cell``."""
    seed = confirmatory_seed(cell.key, rep)
    sample = cell.generator.draw(seed)
    log = read_comparisons(sample.frame, feature_cols=sample.covariates)
    rows = []
    for estimator in estimators or cell.estimators:
        row = {"cell": cell.key, "estimator": estimator, "rep": rep, "seed": str(seed)}
        truth = sample.truth[estimator]
        try:
            run = study.analyse(log, sample, estimator, seed)
        except Exception as error:  # noqa: BLE001 -- every error is counted (module doc)
            row.update(error=_message(error), error_kind=_error_kind(error))
            rows.append(row)
            continue
        found, per_model = auto_measures(run, truth)
        row.update(found)
        target = truth.reindex(run.models.astype(str)).to_numpy(float)
        try:
            extra, alt_models = alternatives(log, sample, estimator, seed, target)
            row.update(extra)
            per_model.update(alt_models)
        except Exception as error:  # noqa: BLE001 -- an alternative's failure is reported
            row.update({f"{alt}:error": _message(error) for alt in ALTERNATIVES})
        names = run.models.astype(str)
        for name, values in per_model.items():
            row.update({f"{name}:{m}": float(v) for m, v in zip(names, values, strict=True)})
        rows.append(row)
    return rows


def _message(error: Exception) -> str:
    text = f"{type(error).__name__}: {error}"
    if not isinstance(error, WinrateInputError):
        text += " @ " + traceback.extract_tb(error.__traceback__)[-1].name
    return text[:300]


def columns(cell: Cell) -> list[str]:
    """The fixed columns of a cell's file: every model the generator can report."""
    names = cell.generator.draw(confirmatory_seed(cell.key, 0)).truth["winrate"].index
    return [*BASE_COLUMNS, *(f"{q}:{m}" for q in PER_MODEL for m in names)]


def run(cells, reps: int, out: Path = DEFAULT_OUT, chunk: int = 1,
        progress: bool | None = None) -> None:
    """Compute every missing replication of ``cells`` below ``reps`` on one core and
    append it (:func:`heldout.study._append`), chunks taken in turn across the cells
    (:func:`heldout.study.interleaved`: an interrupted run leaves every cell with the
    same number of replications, to a chunk)."""
    per_cell = []
    for cell in cells:
        pending = sorted(set().union(*study.missing(cell, reps, cell.estimators,
                                                    out).values()))
        per_cell.append([(cell, tuple(pending[i:i + chunk]))
                         for i in range(0, len(pending), chunk)])
    tasks = study.interleaved(per_cell)
    cols = {cell.key: columns(cell) for cell in cells}
    bar = tqdm(total=sum(len(part) for _, part in tasks), desc="confirmatory coverage",
               disable=None if progress is None else not progress)
    numba.set_num_threads(1)
    for cell, part in tasks:
        rows = [row for rep in part for row in replication(cell, rep)]
        study._append(cell, rows, out, cols[cell.key])
        bar.update(len(part))
    bar.close()


# ------------------------------------------------------------------------ summaries


def _share_interval(values: pd.Series) -> tuple[float, float, float, float]:
    """Mean (percent), MC SE and 99% MC interval of per-replication shares."""
    values = values.astype(float).dropna()
    n = len(values)
    mean = 100 * values.mean() if n else np.nan
    se = 100 * values.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
    return mean, se, mean - study.MC_Z * se, mean + study.MC_Z * se


def _proportion_interval(values: pd.Series) -> tuple[float, float, float, float]:
    values = values.astype(float).dropna()
    n = len(values)
    p = values.mean() if n else np.nan
    se = 100 * np.sqrt(p * (1 - p) / n) if n else np.nan
    return 100 * p, se, 100 * p - study.MC_Z * se, 100 * p + study.MC_Z * se


def meets_rule_i(marginal_lo, marginal_hi, sim_hi, limit: float) -> bool:
    """Rule (i): the 99% MC interval of the marginal coverage meets [93, 97] and that of
    the simultaneous coverage reaches the cell's limit."""
    low, high = study.RULE_MARGINAL
    return bool(marginal_hi >= low and marginal_lo <= high and sim_hi >= limit)


def _common_width_ratio(ok: pd.DataFrame, alt: str) -> tuple[float, float, float]:
    """Mean marginal widths of auto and of ``alt`` over the model-replications where both
    gave an interval, and their ratio."""
    auto = study.per_model(ok, "width")
    other = study.per_model(ok, f"{alt}_width").reindex(columns=auto.columns)
    both = auto.notna() & other.notna()
    if not both.to_numpy().any():
        return np.nan, np.nan, np.nan
    a, b = auto.where(both).stack().mean(), other.where(both).stack().mean()
    return a, b, a / b


def summarise(per_rep: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and estimator: the registered measures and rule (module doc)."""
    rows = []
    for (key, estimator), part in per_rep.groupby(["cell", "estimator"], sort=False):
        cell = cell_by_key(key)
        kind = part["error_kind"].fillna("")
        dropped = part[kind == "no-estimate"]
        failed = part[kind == "error"]
        kept = part[kind != "no-estimate"]
        ok = part[kind == ""]
        # an error other than a missing estimate is a miss of every interval (module doc)
        marginal_est = pd.concat([ok["marginal_estimable"], pd.Series(0.0, failed.index)])
        marginal_all = pd.concat([ok["marginal"], pd.Series(0.0, failed.index)])
        simultaneous = pd.concat([ok["simultaneous"].astype(float),
                                  pd.Series(0.0, failed.index)])
        m, m_se, m_lo, m_hi = _share_interval(marginal_est)
        s, s_se, s_lo, s_hi = _proportion_interval(simultaneous)
        limit = cell.rule_simultaneous
        row = {"cell": key, "estimator": estimator, "reps": len(kept),
               "dropped_no_estimate": len(dropped), "errors": len(failed),
               "drop_reasons": "; ".join(sorted(set(dropped["error"].astype(str).str[:80]))),
               "error_messages": "; ".join(sorted(set(failed["error"].astype(str).str[:80]))),
               "method": ok["method"].mode().iloc[0] if len(ok) else "",
               "marginal": m, "marginal_mcse": m_se, "marginal_lo99": m_lo,
               "marginal_hi99": m_hi, "marginal_with_not_estimable": _share_interval(
                   marginal_all)[0],
               "simultaneous": s, "simultaneous_mcse": s_se, "simultaneous_lo99": s_lo,
               "simultaneous_hi99": s_hi, "simultaneous_limit": limit,
               "rule_i": meets_rule_i(m_lo, m_hi, s_hi, limit),
               "not_estimable_per_rep": ok["n_not_estimable"].mean(),
               "not_estimable_share": 100 * ok["not_estimable"].mean(),
               "miss_low": 100 * ok["miss_low"].mean(), "miss_high": 100 * ok["miss_high"].mean(),
               "floor_share_median": _share_median(ok, estimator, "floor"),
               "bound_share_median": _share_median(ok, estimator, "bound"),
               "rough_said": 100 * ok["rough_said"].astype(float).mean()}
        row.update(_alternatives_summary(ok, limit))
        row.update(verdict(row))
        rows.append(row)
    return pd.DataFrame(rows)


def _share_median(ok: pd.DataFrame, estimator: str, part: str) -> float:
    """Median over the estimable models and replications of the share of the win rate's
    variance (percent) from ``part``: ``floor``, the small-sample floor, or ``bound``, the
    bound of the pairs seen in a single cluster (the other estimators have neither)."""
    if estimator != "winrate":
        return np.nan
    floor = study.per_model(ok, part).where(study.per_model(ok, "width").notna())
    values = floor.to_numpy().ravel()
    values = values[np.isfinite(values)]
    return float(100 * np.median(values)) if values.size else np.nan


def covers(marginal: float, simultaneous: float, limit: float) -> bool:
    """Whether an alternative covers (rule ii): its point estimates meet the band, the
    marginal coverage in [93, 97] and the simultaneous at least the cell's limit."""
    low, high = study.RULE_MARGINAL
    return bool(low <= marginal <= high and simultaneous >= limit)


def _alternatives_summary(ok: pd.DataFrame, limit: float) -> dict:
    out = {}
    for alt in ALTERNATIVES:
        m = _share_interval(ok[f"{alt}:marginal"])[0]
        s = _proportion_interval(ok[f"{alt}:simultaneous"])[0]
        auto_width, alt_width, ratio = _common_width_ratio(ok, alt)
        out.update({f"{alt}_marginal": m, f"{alt}_simultaneous": s,
                    f"{alt}_covers": covers(m, s, limit) if np.isfinite(m) else False,
                    f"{alt}_width": alt_width, f"auto_width_vs_{alt}": auto_width,
                    f"width_ratio_{alt}": ratio,
                    f"{alt}_errors": int(ok[f"{alt}:error"].notna().sum())})
    return out


def verdict(row: dict) -> dict:
    """Rule (ii) and the cell's verdict: auto's width at most :data:`WIDTH_LIMIT` times
    that of the narrowest alternative that covers (:func:`covers`); judged on (i) alone
    where none does."""
    ratios = [row[f"width_ratio_{alt}"] for alt in ALTERNATIVES if row[f"{alt}_covers"]
              and np.isfinite(row[f"width_ratio_{alt}"])]
    rule_ii = bool(max(ratios) <= WIDTH_LIMIT) if ratios else None
    passed = row["rule_i"] and rule_ii is not False
    return {"rule_ii": "n/a" if rule_ii is None else rule_ii,
            "verdict": "pass" if passed else "fail"}


def load_all(out: Path, cells) -> pd.DataFrame:
    frames = [study.read_reps(study.rep_path(out, c)) for c in cells
              if study.rep_path(out, c).exists()]
    order = {c.key: i for i, c in enumerate(cells)}
    frame = pd.concat(frames, ignore_index=True).copy()  # one block: assign is cheap
    frame = frame.assign(order=frame["cell"].map(order))
    return frame.sort_values(["order", "rep"], kind="stable").drop(columns="order")


def report(summary: pd.DataFrame, reps: int) -> str:
    """The markdown report of every cell (no timings: a rerun reproduces it)."""
    def interval(m, lo, hi):
        return [f"{a:.1f} [{b:.1f}, {c:.1f}]" for a, b, c in zip(m, lo, hi, strict=True)]

    shown = summary.assign(
        marginal=interval(summary.marginal, summary.marginal_lo99, summary.marginal_hi99),
        simultaneous=interval(summary.simultaneous, summary.simultaneous_lo99,
                              summary.simultaneous_hi99))
    main = shown[["cell", "estimator", "reps", "dropped_no_estimate", "errors", "marginal",
                  "simultaneous", "simultaneous_limit", "rule_i", "rule_ii", "verdict"]]
    widths = summary[["cell", "estimator", "method", "width_ratio_cr1", "cr1_marginal",
                      "cr1_simultaneous", "cr1_covers", "width_ratio_bm", "bm_marginal",
                      "bm_simultaneous", "bm_covers"]]
    other = summary[["cell", "estimator", "marginal_with_not_estimable",
                     "not_estimable_per_rep", "not_estimable_share", "miss_low", "miss_high",
                     "floor_share_median", "bound_share_median", "rough_said"]]
    failed = summary[summary["verdict"] == "fail"]
    reasons = summary[(summary["dropped_no_estimate"] > 0) | (summary["errors"] > 0)][
        ["cell", "estimator", "dropped_no_estimate", "drop_reasons", "errors",
         "error_messages"]]
    return "\n".join([
        "# Confirmatory coverage study: results",
        "",
        f"The run of the registration `registration.md` ({reps} replications per cell and "
        "estimator; `python scripts/coverage.py --confirmatory`). Coverage in percent with "
        "99% Monte-Carlo intervals; marginal coverage among the models reported as "
        "estimable; rule (i): marginal interval meets [93, 97] and simultaneous reaches the "
        f"limit; rule (ii): auto's mean width at most {WIDTH_LIMIT} times that of the "
        "narrowest alternative that covers (its point estimates: marginal in [93, 97], "
        "simultaneous at least the limit; n/a: none does).",
        "",
        f"**{len(failed)} of {len(summary)} cell and estimator combinations fail**"
        + (": " + ", ".join(f"{c} ({e})" for c, e in zip(failed.cell, failed.estimator,
                                                           strict=True)) if len(failed) else "")
        + ".",
        "",
        "## Coverage and verdict",
        "",
        study._md(main, 1),
        "",
        "## Widths against the alternatives",
        "",
        "`width_ratio_*`: auto's mean marginal width over the alternative's, on the "
        "model-replications where both gave an interval; `cr1`: CR1 with a normal "
        "reference; `bm`: CR2 with Bell-McCaffrey df (the win rate), CR1 with t on each "
        "model's effective clusters (Bradley-Terry, which has no CR2); their marginal and "
        "simultaneous coverage and whether they cover (rule ii).",
        "",
        study._md(widths, 2),
        "",
        "## Not-estimable models, one-sided misses and the small-sample floor",
        "",
        "`marginal_with_not_estimable`: marginal coverage with not-estimable models counted "
        "as covered (as Appendix D counts them); `not_estimable_per_rep`: mean number of "
        "models without an SE per replication; misses: percent of estimable "
        "model-replications with the truth below the lower / above the upper bound; "
        "`floor_share_median`: median over models and replications of the small-sample "
        "floor's share of the win rate's variance (percent), `bound_share_median` that of "
        "the variance bound of pairs seen in a single cluster; `rough_said`: percent of "
        "replications whose output says the intervals are rough.",
        "",
        study._md(other, 2),
        "",
        "## Dropped replications and errors",
        "",
        study._md(reasons, 0) if len(reasons) else "None.",
        "",
    ])


def write_summaries(out: Path, cells, reps: int) -> pd.DataFrame:
    """``summary.csv`` and ``report.md`` from the replications below ``reps`` on disk (an
    interrupted run: the completed rounds, the same count in every cell)."""
    per_rep = load_all(out, cells)
    summary = summarise(per_rep[per_rep["rep"] < reps])
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4f")
    (out / "report.md").write_text(report(summary, reps))
    return summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="confirmatory coverage study (issue 36)")
    parser.add_argument("--reps", type=int, required=True)
    parser.add_argument("--cells", nargs="+", default=(), help="cell keys (default: all)")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--chunk", type=int, default=1)
    parser.add_argument("--summary-only", action="store_true",
                        help="only rebuild the summary and report from the first --reps "
                             "replications of every cell on disk")
    args = parser.parse_args(argv)
    out = Path(args.out)
    cells = [cell_by_key(k) for k in args.cells] if args.cells else list(confirmatory_cells())
    start = time.time()
    if not args.summary_only:
        run(cells, args.reps, out, args.chunk)
    on_disk = [c for c in confirmatory_cells() if study.rep_path(out, c).exists()]
    print(write_summaries(out, on_disk, args.reps).to_string())
    print(f"{(time.time() - start) / 60:.1f} min")
