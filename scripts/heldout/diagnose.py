"""Side experiments of the held-out diagnostic (issue 24): where does the win rate's
default interval lose coverage, and what repairs it? Not part of the pre-registered study.

The stress cells below are *not* held-out cells: they were chosen after the diagnostic pass
(``paper/coverage/heldout/report.md``) showed the pre-registered thin cells covering, to push
the generators towards the issue's failing design (rarer models, lopsided abilities, pairs
that recur on a prompt, strong response sharing). On each log the win rate is analysed by
the default and by variants that change one ingredient at a time:

* ``cr2-normal``: the default's CR2 sandwich with a normal reference (the df's effect);
* ``cr1-t``, ``cr1-normal``: CR1 (no pair-stratum leverage correction) with t(G - 1) or normal;
* ``floor-plugin``: the small-sample floor of a single-outcome pair replaced by the
  plug-in binomial variance of the Bradley-Terry prediction, ``pi (1 - pi) / n``;
* ``floor-mean``: the plug-in variance of the floor's posterior mean ``p = a / (a + b)``;
* ``no-floor``: no floor (single-outcome pairs contribute nothing).

The floor variants monkeypatch ``winrate.estimators.small_sample.beta_binomial_floor`` inside this
process only; winrate itself is unchanged. Each row also records the coverage of the
*field* truth (the mean of psi over every opponent the design allows), to separate the
estimand from the variance.

A second experiment reruns the pre-registered cells where the default missed the rule or
the few-cluster PandaLM cell over-covered (:data:`METHOD_CELLS`) with other variance
methods (:data:`METHODS`), each estimator as in the study.

Run: ``python scripts/heldout/diagnose.py [--reps 200]`` (writes
``paper/coverage/heldout/side/``: ``side_experiments.csv`` and ``methods.csv``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path

import numba
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heldout.cells import cell_by_key  # noqa: E402
from heldout.design import Design  # noqa: E402
from heldout.shared import SharedResponses  # noqa: E402
from heldout.study import analyse, measure, per_model, rep_seed  # noqa: E402
from heldout.thurstone import Thurstone  # noqa: E402
from winrate.analysis import analyze
from winrate.errors import WinrateWarning  # noqa: E402
from winrate.estimators import small_sample
from winrate.io.logs import read_comparisons
from winrate.settings import Joint, MonteCarlo, Variance

THIN = Design(20, 300, 3, 1, 4, rare_weight=0.1, distinct=False)
STRESS = {
    "S-rare": SharedResponses(THIN),
    "S-rare-lopsided": SharedResponses(THIN, ability_sd=1.2),
    "S-rare-sharing": SharedResponses(THIN, response_sd=(1.5, 2.5)),
    "S-rarer-lopsided": SharedResponses(replace(THIN, rare_weight=0.05), ability_sd=1.2),
    "T-rare-lopsided": Thurstone(THIN, ability_sd=1.2),
}
SETTINGS = {
    "default": {},
    "cr2-normal": {"method": "sandwich", "correction": "cr2", "reference": "normal"},
    "cr1-t": {"method": "sandwich", "correction": "cr1", "reference": "t"},
    "cr1-normal": {"method": "sandwich", "correction": "cr1", "reference": "normal"},
    "floor-plugin": {},
    "floor-mean": {},
    "no-floor": {},
}


METHOD_CELLS = {"S-small": ("winrate", "bt"), "R-pandalm": ("winrate", "bt"),
                "R-alpaca": ("winrate",), "R-prd": ("winrate", "bt")}
METHODS = {
    "default": {},
    "sandwich-cr1-t": {"method": "sandwich", "correction": "cr1", "reference": "t"},
    "sandwich-cr1-normal": {"method": "sandwich", "correction": "cr1", "reference": "normal"},
    "jackknife": {"method": "jackknife"},
    "prompt-only-t": {"method": "sandwich", "cluster": "prompt", "reference": "t"},
}


def _plugin(prior_mean, x, n, strength=small_sample.PRIOR_COMPARISONS):
    return prior_mean * (1 - prior_mean) / n


def _posterior_mean_plugin(prior_mean, x, n, strength=small_sample.PRIOR_COMPARISONS):
    p = (strength * prior_mean + x) / (strength + n)
    return p * (1 - p) / n


def _zero(prior_mean, x, n, strength=small_sample.PRIOR_COMPARISONS):
    return 0.0 * n


FLOORS = {"floor-plugin": _plugin, "floor-mean": _posterior_mean_plugin, "no-floor": _zero}


@contextmanager
def floor(variant: str):
    """The small-sample floor of ``variant`` in place of winrate's (this process only)."""
    original = small_sample.beta_binomial_floor
    small_sample.beta_binomial_floor = FLOORS.get(variant, original)
    try:
        yield
    finally:
        small_sample.beta_binomial_floor = original


def field_truth(psi: np.ndarray, names) -> pd.Series:
    """The mean of psi over every other model (the design allows every pair)."""
    k = psi.shape[0]
    return pd.Series((psi.sum(1) - np.diag(psi)) / (k - 1), index=names)


def one_rep(key: str, rep: int) -> list[dict]:
    generator = STRESS[key]
    seed = rep_seed(key, rep)
    sample = generator.draw(seed)
    log = read_comparisons(sample.frame)
    truths = {"met": sample.truth["winrate"],
              "field": field_truth(generator.psi, sample.truth["winrate"].index)}
    rows = []
    for variant, options in SETTINGS.items():
        with floor(variant), warnings.catch_warnings():
            warnings.simplefilter("ignore", WinrateWarning)
            run = analyze(log, joint=Joint(simultaneous=True),
                          monte_carlo=MonteCarlo(10_000, seed), variance=Variance(**options))
        models = run.models.astype(str)
        se, q = run.intervals.se, run.intervals.critical_value
        for target, truth in truths.items():
            t = truth.reindex(models).to_numpy()
            z = (run.scores - t) / se
            covered = np.abs(z) <= q
            joint = (run.joint.sim_low <= t) & (t <= run.joint.sim_high)
            row = {"cell": key, "rep": rep, "variant": variant, "truth": target,
                   "marginal": covered.mean(), "simultaneous": joint.all()}
            row.update({f"z:{m}": v for m, v in zip(models, z, strict=True)})
            rows.append(row)
    return rows


def method_rep(key: str, rep: int) -> list[dict]:
    """One replication of a pre-registered cell under every method of :data:`METHODS`."""
    cell = cell_by_key(key)
    seed = rep_seed(key, rep)  # the study's seed: the same logs as the diagnostic pass
    sample = cell.generator.draw(seed)
    log = read_comparisons(sample.frame, feature_cols=sample.covariates)
    rows = []
    for estimator in METHOD_CELLS[key]:
        for name, options in METHODS.items():
            row = {"cell": key, "estimator": estimator, "variant": name, "rep": rep}
            row.update(measure(analyse(log, sample, estimator, seed, **options),
                               sample.truth[estimator]))  # "method": what analyze ran
            rows.append(row)
    return rows


def _task(args):
    kind, key, reps = args
    one = one_rep if kind == "floors" else method_rep
    return [row for rep in reps for row in one(key, rep)]


def summarise_methods(frame: pd.DataFrame) -> pd.DataFrame:
    """Marginal and simultaneous coverage and the SD of z per cell, estimator and method."""
    out = []
    for (key, estimator, variant), part in frame.groupby(["cell", "estimator", "variant"],
                                                         sort=False):
        z = per_model(part, "z")
        out.append({"cell": key, "estimator": estimator, "variant": variant,
                    "method": part["method"].mode().iloc[0],
                    "reps": len(part), "marginal": 100 * part["marginal"].mean(),
                    "simultaneous": 100 * part["simultaneous"].astype(float).mean(),
                    "sd_z": np.nanstd(z.to_numpy(), ddof=1),
                    "width": part["width"].mean()})
    return pd.DataFrame(out)


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (key, variant, target), part in frame.groupby(["cell", "variant", "truth"], sort=False):
        z = part[[c for c in part.columns if c.startswith("z:")]].astype(float)
        rare = [f"z:{m}" for m in STRESS[key].draw(rep_seed(key, 0)).rare]
        q_cover = (z.abs() <= 1.96).mean()
        out.append({"cell": key, "variant": variant, "truth": target, "reps": len(part),
                    "marginal": 100 * part["marginal"].mean(),
                    "simultaneous": 100 * part["simultaneous"].mean(),
                    "sd_z": np.nanstd(z.to_numpy(), ddof=1),
                    "sd_z_rare": np.nanstd(z[rare].to_numpy(), ddof=1),
                    "rare_cover_min_z196": 100 * q_cover[rare].min()})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="paper/coverage/heldout/side")
    args = parser.parse_args(argv)
    tasks = [(kind, key, range(s, min(s + 20, args.reps)))
             for kind, keys in (("floors", STRESS), ("methods", METHOD_CELLS)) for key in keys
             for s in range(0, args.reps, 20)]
    with Pool(args.workers, initializer=numba.set_num_threads, initargs=(1,)) as pool:
        parts = list(pool.imap(_task, tasks))  # in task order: deterministic tables
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    floors = pd.DataFrame([r for t, p in zip(tasks, parts, strict=True) if t[0] == "floors"
                           for r in p])
    methods = pd.DataFrame([r for t, p in zip(tasks, parts, strict=True)
                            if t[0] == "methods" for r in p])
    for name, table in (("side_experiments", summarise(floors)),
                        ("methods", summarise_methods(methods))):
        table.to_csv(out / f"{name}.csv", index=False, float_format="%.4f")
        print(table.round(3).to_string())


if __name__ == "__main__":
    main()
