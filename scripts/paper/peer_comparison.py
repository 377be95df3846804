"""winrate next to what leaderboards publish, on the same data: the ``peers`` step.

Reads the committed outputs of the leaderboards' own code (``paper/peers/``, written by
``scripts/paper/peers/run.py`` in each peer's own venv), fits winrate on the same logs with
the same estimator and scale (Bradley-Terry on the Elo scale ``400 / ln 10 * theta + 1000``,
mean rating 1000; AlpacaEval's mean preference against its baseline, in points) and compares,
per peer and dataset, the median over models of the peer's SE with winrate's naive
(``cluster="none"``) and prompt-clustered SEs, and the largest difference of the point
estimates. What the comparison shows (each statement checked by a number registered here and
asserted in ``tests/test_paper_peers.py``):

* **FastChat** (``fschat``, ``elo_analysis``): ``get_bootstrap_result`` refits on battles
  resampled i.i.d., so its bootstrap SD estimates the naive (row) variance; the ratio to
  winrate's naive SE is 1 up to Monte Carlo error, whose SE for an SD from B draws is
  ``sqrt((m4 / s^4 - 1) / (4 B))`` relative (delta method on the sample variance,
  ``Var(s^2) ~ (m4 - s^4) / B``). Its MLE, ``compute_elo_mle_with_tie``, is scikit-learn's
  ``LogisticRegression`` with its default L2 penalty ``0.5 ||w||^2`` (C = 1) on the duplicated
  battles (``theta = ln 10 * w``): the maximiser of ``2 l(theta) - ||theta||^2 / (2 ln^2 10)``,
  i.e. winrate's BT with the ridge prior ``theta ~ N(0, 2 ln^2 10)``; against that fit the
  ratings agree to its solver tolerance.
* **arena-rank**: per-row (HC0-type) sandwich, the meat of winrate's naive covariance, with
  ``1e-5 N`` added to the information's diagonal (``tests/test_bt_real.py``): the ratio is
  just below 1, lowest for the models with the fewest battles.
* **AlpacaEval** (``alpaca_eval.metrics.get_winrate``): ``standard_error`` is the SEM of the
  per-instruction preferences, i.e. winrate's naive SE of the baseline win rate. Each model
  meets the baseline once per instruction, so clustering by prompt leaves each model's own
  SE unchanged (up to ``G / (G - 1)`` vs ``n / (n - 1)`` where judgments failed); what the
  SEM leaves out is the covariance the shared baseline answers induce, which shrinks the SE
  of a difference between two models below ``sqrt(se_a^2 + se_b^2)``.
* **arena-hard-auto** (not on PyPI; its ``show_result.py`` read, not run): a per-model
  bootstrap of the mean score against the baseline, 100 unseeded rounds of game rows
  (two per prompt, both answer orders, strong verdicts counted three times), reported as a
  5%-95% percentile interval -- rows resampled i.i.d. like FastChat's.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd
from common import PAPER, Paper, fmt
from real_data import Z, read_log

from winrate.analysis import analyze
from winrate.errors import WinrateWarning
from winrate.estimators import fit

PEER_DIR = PAPER / "peers"
RATIO = ".4f"  # SE ratios: arena-rank's ridge moves them in the fourth decimal
ALPACA_BASELINE = "gpt4_1106_preview"
#: FastChat's penalty as winrate's ridge prior variance on theta: 2 ln^2 10 (module doc)
FASTCHAT_PRIOR = 2 * np.log(10) ** 2
LABELS = {"fastchat": "FastChat", "arena_rank": "arena-rank", "alpaca_eval": "AlpacaEval"}
PEER_KEYS = {"fastchat": "fastchat", "arena_rank": "arenarank", "alpaca_eval": "alpaca"}
DATA_KEYS = {"qlora": "qlora", "prd": "prd", "chatbot_arena": "arena", "alpaca_eval": ""}
DATA_LABELS = {"qlora": "QLoRA", "prd": "PRD", "chatbot_arena": "Chatbot Arena (counts)",
               "alpaca_eval": "AlpacaEval 2.0"}


@dataclass(frozen=True)
class PeerRun:
    """One committed peer output: the peer, the dataset, the file's estimate and SE
    columns, what the peer publishes, and why its SE differs from winrate's."""

    peer: str
    dataset: str
    estimate: str
    se: str
    publishes: str
    why: str


RUNS = (
    PeerRun("fastchat", "qlora", "rating", "bootstrap_sd",
            "SD and 2.5-97.5% quantiles of row-bootstrap refits",
            "resamples battles i.i.d.: the naive variance, up to Monte Carlo error; its "
            "ratings are an L2-penalised (C = 1) logistic fit: winrate's BT with that penalty "
            "as prior theta ~ N(0, 2 ln^2 10) is within {penalised} Elo of them"),
    PeerRun("fastchat", "prd", "rating", "bootstrap_sd",
            "SD and 2.5-97.5% quantiles of row-bootstrap refits",
            "as for QLoRA (penalised fit within {penalised} Elo)"),
    PeerRun("arena_rank", "qlora", "rating", "se",
            "per-row sandwich SE, normal 95% interval",
            "same per-row meat as winrate's naive SE; its ridge 1e-5 N on the information "
            "shrinks each variance slightly"),
    PeerRun("arena_rank", "prd", "rating", "se",
            "per-row sandwich SE, normal 95% interval", "as for QLoRA"),
    PeerRun("arena_rank", "chatbot_arena", "rating", "se",
            "per-row sandwich SE, normal 95% interval",
            "as for QLoRA; the ridge shrinks most where a model has few battles; ratings "
            "differ by its L-BFGS tolerance; no prompt ids, so no clustering is possible"),
    PeerRun("alpaca_eval", "alpaca_eval", "win_rate", "standard_error",
            "standard error of the mean (SEM) of per-instruction preferences",
            "the SEM is the naive SE; one comparison per model per instruction, so the "
            "prompt-clustered SE of a model equals it; the SEM ignores the shared baseline "
            "answers' covariance, which shrinks the SE of differences"),
)


def manifest() -> dict[tuple[str, str], dict]:
    """The committed run records by (peer, dataset)."""
    records = json.loads((PEER_DIR / "manifest.json").read_text(encoding="utf-8"))
    return {(r["peer"], r["dataset"]): r for r in records}


def peer_output(run: PeerRun) -> pd.DataFrame:
    return pd.read_csv(PEER_DIR / f"{run.peer}_{run.dataset}.csv", index_col="model",
                       keep_default_na=False)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return function(*args, **kwargs)


@dataclass(frozen=True)
class WinrateFit:
    """winrate's estimates and SEs by model on the peer's scale (Elo, or win-rate points),
    naive and prompt-clustered (None without prompt ids), and the clustered covariance."""

    estimate: pd.Series
    naive: pd.Series
    clustered: pd.Series | None
    cov: pd.DataFrame | None


@cache
def winrate_fit(dataset: str) -> WinrateFit:
    """winrate on ``dataset`` with the peers' estimator: BT, or AlpacaEval's baseline win
    rate (times 100)."""
    log, _ = read_log(dataset)
    options = ({"baseline": ALPACA_BASELINE} if dataset == "alpaca_eval" else {"model": "bt"})
    unit = 100.0 if dataset == "alpaca_eval" else 1.0
    naive = _quiet(analyze, log, cluster="none", **options)
    names = [str(m) for m in naive.models]
    clustered = (_quiet(analyze, log, cluster="prompt", **options)
                 if "prompt" in log.axes else None)
    return WinrateFit(
        pd.Series(unit * naive.scores, index=names), pd.Series(unit * naive.se, index=names),
        None if clustered is None else pd.Series(unit * clustered.se, index=names),
        None if clustered is None else pd.DataFrame(unit**2 * clustered.cov, names, names))


def bootstrap_sd_mc_se(draws: pd.DataFrame) -> pd.Series:
    """Relative Monte Carlo SE of each column's SD over B draws,
    ``sqrt((m4 / s^4 - 1) / (4 B))`` (delta method, module doc)."""
    centred = draws - draws.mean()
    m2, m4 = (centred**2).mean(), (centred**4).mean()
    return np.sqrt((m4 / m2**2 - 1) / (4 * len(draws)))


def difference_se_ratio(cov: pd.DataFrame, se: pd.Series) -> float:
    """Median over model pairs of ``SE(x_a - x_b)`` from ``cov`` over
    ``sqrt(se_a^2 + se_b^2)`` (what independent errors with the SEs ``se`` would give)."""
    se = se.loc[cov.index].to_numpy()
    low, high = np.triu_indices(len(se), 1)
    v = cov.to_numpy()
    joint = v[low, low] + v[high, high] - 2 * v[low, high]
    return float(np.median(np.sqrt(joint / (se[low] ** 2 + se[high] ** 2))))


def run_key(run: PeerRun) -> str:
    """Number-name prefix: ``peers_fastchat_qlora``, ``peers_arenarank_arena``, ``peers_alpaca``."""
    return "_".join(filter(None, ("peers", PEER_KEYS[run.peer], DATA_KEYS[run.dataset])))


def _spread(x: pd.Series, spec: str = RATIO) -> str:
    return f"{fmt(x.median(), spec)} [{fmt(x.min(), spec)}, {fmt(x.max(), spec)}]"


def comparison_row(run: PeerRun, record: dict, paper: Paper, penalised: dict) -> dict:
    """One table row; registers the run's numbers as ``peers_<peer>_<dataset>_*``."""
    out = peer_output(run)
    ours = winrate_fit(run.dataset)
    models = ours.naive.index
    missing = models.difference(out.index)
    if len(missing):
        raise ValueError(f"{run.peer} on {run.dataset}: no output for {list(missing)}")
    peer_se, peer_est = out.loc[models, run.se], out.loc[models, run.estimate]
    ratio = peer_se / ours.naive
    gap = (peer_est - ours.estimate).abs().max()
    key = run_key(run)
    paper.number(f"{key}_se_ratio", ratio.median(), RATIO)
    paper.number(f"{key}_se_ratio_min", ratio.min(), RATIO)
    paper.number(f"{key}_se_ratio_max", ratio.max(), RATIO)
    paper.number(f"{key}_maxdiff", gap, ".2g")
    paper.number(f"{key}_se_median", peer_se.median())
    if ours.clustered is not None:
        paper.number(f"{key}_clustered_ratio", (ours.clustered / peer_se).median())
    unit = "win-rate points" if run.dataset == "alpaca_eval" else "Elo"
    return {
        "peer (version)": f"{LABELS[run.peer]} {record['version']}",
        "data": DATA_LABELS[run.dataset], "unit": unit, "peer publishes": run.publishes,
        "peer median SE": fmt(peer_se.median()),
        "winrate naive median SE": fmt(ours.naive.median()),
        "winrate prompt-clustered median SE":
            "n/a" if ours.clustered is None else fmt(ours.clustered.median()),
        "peer / naive SE, median [range]": _spread(ratio),
        "max |estimate difference|": fmt(gap, ".2g"),
        "why": run.why.format(penalised=penalised.get(run.dataset, "")),
    }


def fastchat_checks(paper: Paper, record: dict) -> dict[str, str]:
    """Monte Carlo error of FastChat's bootstrap SDs, and its ratings against winrate's BT
    with FastChat's penalty as a prior (module doc); returns that largest rating
    difference per dataset, formatted."""
    paper.number("peers_fastchat_rounds", record["rounds"], ",d")
    paper.number("peers_fastchat_seed", record["seed"], "d")
    z_all, mc_all, penalised_gap = [], [], {}
    for dataset in ("qlora", "prd"):
        ours = winrate_fit(dataset)
        draws = pd.read_csv(PEER_DIR / f"fastchat_{dataset}_draws.csv")[ours.naive.index]
        mc = bootstrap_sd_mc_se(draws)
        ratio = draws.std(ddof=1) / ours.naive
        z_all.append((ratio - 1) / mc)
        mc_all.append(mc)
        log, _ = read_log(dataset)
        penalised = _quiet(fit, log, "bt", prior=FASTCHAT_PRIOR)
        rating = peer_output(next(r for r in RUNS if r.peer == "fastchat"
                                  and r.dataset == dataset))["rating"]
        names = [str(m) for m in penalised.models]
        gap = np.abs(rating.loc[names].to_numpy() - penalised.scores).max()
        penalised_gap[dataset] = paper.number(f"peers_fastchat_{dataset}_penalised_maxdiff",
                                              gap, ".2g")
        width = (pd.read_csv(PEER_DIR / f"fastchat_{dataset}.csv", index_col="model")
                 .eval("q975 - q025").loc[ours.naive.index])
        paper.number(f"peers_fastchat_{dataset}_width_ratio",
                     (width / (2 * Z * ours.naive)).median(), ".3f")
    z, mc = pd.concat(z_all), pd.concat(mc_all)
    paper.number("peers_fastchat_mc_pct", 100 * mc.median(), ".1f")
    paper.number("peers_fastchat_max_z", z.abs().max(), ".1f")
    paper.number("peers_fastchat_n_models", len(z), "d")
    paper.number("peers_fastchat_prior", FASTCHAT_PRIOR, ".2f")
    return penalised_gap


def alpaca_checks(paper: Paper) -> None:
    """AlpacaEval's SE against winrate's naive and clustered SEs, and the SE of
    differences that the shared baseline answers shrink."""
    run = next(r for r in RUNS if r.peer == "alpaca_eval")
    out, ours = peer_output(run), winrate_fit(run.dataset)
    se = out.loc[ours.naive.index, "standard_error"]
    paper.number("peers_alpaca_se_maxdiff", (se - ours.naive).abs().max(), ".1e")
    paper.number("peers_alpaca_clustered_maxrel", (ours.clustered / se - 1).abs().max(), ".1e")
    paper.number("peers_alpaca_diff_ratio", difference_se_ratio(ours.cov, se), ".2f")
    paper.number("peers_alpaca_models", len(se), "d")


def peers(paper: Paper) -> None:
    """Table ``peers`` and its numbers (module doc)."""
    records = manifest()
    penalised = fastchat_checks(paper, records[("fastchat", "qlora")])
    rows = [comparison_row(run, records[(run.peer, run.dataset)], paper, penalised)
            for run in RUNS]
    for peer in LABELS:
        version = next(r["version"] for (p, _), r in records.items() if p == peer)
        paper.number(f"peers_{PEER_KEYS[peer]}_version", version)
    alpaca_checks(paper)
    paper.table("peers", pd.DataFrame(rows),
                "winrate next to the leaderboards' own code on the same data: each peer's "
                "standard error (median over models) against winrate's naive "
                "(comparisons independent) and prompt-clustered SEs of the same estimator, "
                "and the largest difference of the point estimates. FastChat: "
                f"{records[('fastchat', 'qlora')]['rounds']:,} bootstrap rounds, seed "
                f"{records[('fastchat', 'qlora')]['seed']}. arena-hard-auto (not on PyPI) "
                "resamples game rows i.i.d. like FastChat and reports 5-95% percentile "
                "intervals.")
