"""Real-data results: SE inflation on every bundled dataset, the ICC paradox, the naive
coverage each inflation implies, MMLU-Pro 19-model subsets and the dominant-cluster
diagnostic.

Per dataset, :func:`winrate.eda.explore` gives, for each clustering: the SE inflation
``sqrt(DEFF_a) = SE_clustered / SE_naive`` per model, and per single axis the pair-level
ANOVA ICC, the own-comparison (shared-response) ICC ``rho_a``, the comparisons of a model
per cluster ``m_a`` and Kish's prediction ``sqrt(1 + (m_a - 1) rho_a)`` (Kish 1965,
sec. 8.2). A naive 95% interval whose SE is too small by the factor ``infl`` covers
``2 Phi(z / infl) - 1`` (z = 1.96) if the estimate is normal with the clustered SE.
The dominant-cluster diagnostic is :func:`winrate.variance.diagnostics.largest_cluster_share`; the
model pairs whose comparisons all fall in one cluster of an axis (no variance identified
for them there) are :func:`winrate.variance.diagnostics.single_cluster_pairs`.

One measured inflation in every table (``MEASURED_DEFINITION``): the SE that ``analyze``
reports for the clustering, which includes the small-sample floor of single-outcome pairs
(:mod:`winrate.estimators.small_sample`), over the naive SE. The eda's per-axis check
(``AxisCheck.measured``) leaves the floor out; the two differ only where a log has
single-outcome pairs (LLMFAO by prompt: 0.49 with the floor, 0.47 without). No naive
coverage is implied where the SE is weakly identified (:func:`weakly_identified`).

``DATASETS`` lists what the paper reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd
from common import Paper, add_number, fmt, pct
from scipy.stats import norm

from winrate.constants import FEW_CLUSTERS
from winrate.eda import DATASET_CLUSTERINGS, DEFAULT_CLUSTERINGS, EdaReport, explore
from winrate.estimators import fit
from winrate.io.datasets import read_dataset
from winrate.notes import gathered
from winrate.variance.diagnostics import DOMINANT_SHARE, largest_cluster_share, single_cluster_pairs

Z = float(norm.isf(0.025))
SUBSET_SIZE = 19
N_SUBSETS = 5
SUBSET_SEED = 20241019


@dataclass(frozen=True)
class Dataset:
    """A dataset the paper reports: ``name`` for :func:`read_dataset`, a label, a short
    key for number names, the clusterings to report and the estimator options (a
    baseline design is analysed as one: each model's win rate against the baseline)."""

    name: str
    label: str
    key: str
    clusterings: tuple[str, ...]
    estimator: tuple[tuple[str, str], ...] = ()


DATASETS = (  # the LLM-judge logs first, the per-question eval last
    Dataset("pandalm", "PandaLM", "pandalm", DEFAULT_CLUSTERINGS),
    Dataset("llmfao", "LLMFAO", "llmfao", DEFAULT_CLUSTERINGS),
    Dataset("qlora", "QLoRA Vicuna-80 (GPT-4 judge)", "qlora", DEFAULT_CLUSTERINGS),
    Dataset("prd", "PRD (5 LLM reviewers + humans)", "prd", DEFAULT_CLUSTERINGS),
    Dataset("alpaca_eval", "AlpacaEval 2.0 (vs its baseline)", "alpaca", DEFAULT_CLUSTERINGS,
            (("baseline", "gpt4_1106_preview"),)),
    Dataset("chatbot_arena", "Chatbot Arena (counts)", "arena", DEFAULT_CLUSTERINGS),
    Dataset("mmlu_pro", "MMLU-Pro (29 models)", "mmlu", DATASET_CLUSTERINGS["mmlu_pro"]),
)


def implied_naive_coverage(inflation) -> np.ndarray:
    """``2 Phi(z / infl) - 1``: coverage of a nominal 95% naive interval whose SE is too
    small by ``infl`` (the estimate normal with the clustered SE)."""
    return 2 * norm.cdf(Z / np.asarray(inflation, float)) - 1


def _quiet_read(name: str, models=None):
    with gathered() as found:
        log = read_dataset(name, models=models, progress=False)
    return log, tuple(found)


@cache
def read_log(name: str):
    """A bundled dataset's log and its loader warnings, read once per build (the few-judge
    and arena steps reuse PRD, QLoRA and AlpacaEval; AlpacaEval takes seconds to parse)."""
    return _quiet_read(name)


@dataclass(frozen=True)
class DatasetResult:
    """The EDA report of one dataset plus, per axis, its dominant-cluster diagnostic and
    the number of model pairs compared within a single cluster."""

    spec: Dataset
    report: EdaReport
    dominance: dict[str, tuple[int, np.ndarray, np.ndarray]]  # axis -> (G, share, label)
    single_pairs: dict[str, int]


@cache
def analyse(spec: Dataset) -> DatasetResult:
    """Load one dataset and run the EDA and the dominance diagnostic (cached per build)."""
    log, notes = read_log(spec.name)
    options = dict(spec.estimator)
    report = explore(log, spec.clusterings, dataset=spec.name, notes=notes, **options)
    board = fit(log, **options)
    dominance, single_pairs = {}, {}
    for name in report.axes:
        codes = log.axes[name].codes
        share, where = (x[board.codes] for x in largest_cluster_share(board.influence, codes))
        labels = np.where(where >= 0, log.axes[name].labels[np.maximum(where, 0)], None)
        dominance[name] = (log.axes[name].n_clusters, share, labels)
        single_pairs[name] = int(single_cluster_pairs(board.pair, codes, len(board.pairs)).sum())
    return DatasetResult(spec, report, dominance, single_pairs)


def _median(x) -> float:
    x = np.asarray(x, float)
    return float(np.nanmedian(x)) if np.isfinite(x).any() else float("nan")


def short_label(label, width: int = 40) -> str:
    """A cluster label on one line of at most ``width`` characters (AlpacaEval's prompt ids
    are whole instructions, with line breaks)."""
    text = " ".join(str(label).split())
    return text if len(text) <= width else text[:width - 3].rstrip() + "..."


def _spread(x) -> str:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if not x.size:
        return "n/a"
    return f"{fmt(np.median(x))} [{fmt(x.min())}, {fmt(x.max())}]"


def single_pair_share(result: DatasetResult, axis: str) -> float:
    """Share of the observed model pairs compared within a single cluster of ``axis``."""
    return result.single_pairs[axis] / result.report.structure["n_pairs"]


def weakly_identified(result: DatasetResult, clustering: str) -> str | None:
    """Why the SE of ``clustering`` is too weakly identified to imply a naive coverage, or
    None: an axis with fewer than ``FEW_CLUSTERS`` clusters (the CR1 variance then has few
    degrees of freedom), one within a single cluster of which most model pairs are
    compared (no variance is identified for those pairs on that axis), or one where a
    single cluster carries more than ``DOMINANT_SHARE`` of some model's clustered variance
    (that model's SE then rests on one cluster: fewer than four effective ones)."""
    r = result.report.clusterings[clustering]
    reasons = []
    if min(r.n_clusters) < FEW_CLUSTERS:
        reasons.append(f"< {FEW_CLUSTERS} clusters")
    if any(single_pair_share(result, a) > 0.5 for a in r.axes if a in result.single_pairs):
        reasons.append("most pairs in one cluster")
    if any(np.nanmax(result.dominance[a][1]) > DOMINANT_SHARE
           for a in r.axes if a in result.dominance):
        reasons.append("one cluster carries most of a model's variance")
    return "; ".join(reasons) or None


MEASURED_DEFINITION = (
    "SE inflation: the clustered SE that winrate.analyze reports for the clustering (CR1, "
    "with the small-sample floor of single-outcome pairs) over the naive SE, median over "
    "models")

INFLATION_COLUMNS = ("dataset", "clustering", "clusters", "SE inflation median [range]",
                     "implied naive coverage %")
#: Short codes of :func:`weakly_identified`'s reasons, as Table 1 prints them.
WEAK_CODES = {f"< {FEW_CLUSTERS} clusters": "a", "most pairs in one cluster": "b",
              "one cluster carries most of a model's variance": "c"}
IMPLIED = "implied naive coverage %"


def inflation_rows(result: DatasetResult) -> list[dict]:
    """One row per identified clustering (and one for a log without cluster ids): the
    inflation and the naive coverage its median implies, or '-' with the codes of
    :data:`WEAK_CODES` where the SE is weakly identified."""
    label = result.spec.label.split(" (")[0]
    if not result.report.structure["axes"]:
        return [{**dict.fromkeys(INFLATION_COLUMNS, ""), "dataset": label,
                 "clustering": "none possible", "clusters": "no prompt or judge ids"}]
    rows = []
    for name, r in result.report.clusterings.items():
        if not r.identified:
            continue
        weak = weakly_identified(result, name)
        codes = ", ".join(WEAK_CODES[w] for w in weak.split("; ")) if weak else ""
        rows.append({
            "dataset": label, "clustering": name,
            "clusters": " x ".join(f"{g:,}" for g in r.n_clusters),
            "SE inflation median [range]": _spread(r.inflation),
            IMPLIED: f"- ({codes})" if weak else pct(implied_naive_coverage(
                _median(r.inflation)))})
    return rows


def implied_coverage_points(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the inflation table (Table 1) that print an implied naive coverage,
    with the median inflation and that coverage as printed: Figure 5 plots exactly these."""
    shown = table[table[IMPLIED].str.match(r"^\d")]
    return pd.DataFrame({
        "dataset": shown["dataset"].to_numpy(), "clustering": shown["clustering"].to_numpy(),
        "inflation": [float(c.split()[0]) for c in shown["SE inflation median [range]"]],
        "implied": shown[IMPLIED].astype(float).to_numpy()})


ICC_COLUMNS = ("dataset", "axis", "pair-level ICC", "own-comparison ICC", "m", "sqrt(m)",
               "Kish prediction", "measured inflation")


def icc_rows(result: DatasetResult) -> list[dict]:
    """The ICC paradox per single axis: the small pooled ICC, the own-comparison ICC that
    drives the inflation, and what each predicts."""
    rows = []
    for name, a in result.report.axes.items():
        rows.append({
            "dataset": result.spec.label, "axis": name,
            "pair-level ICC": fmt(a.pair_icc, ".4f"),
            "own-comparison ICC": fmt(_median(a.shared_icc), ".3f"),
            "m": fmt(_median(a.m), ",.1f"), "sqrt(m)": fmt(np.sqrt(_median(a.m))),
            "Kish prediction": fmt(_median(a.predicted)),
            "measured inflation": fmt(_median(result.report.clusterings[name].inflation)),
        })
    return rows


DOMINANCE_COLUMNS = ("dataset", "axis", "clusters", "largest share median",
                     "largest share max", "model", "cluster", f"models > {DOMINANT_SHARE:g}")


def dominance_rows(result: DatasetResult) -> list[dict]:
    rows = []
    models = result.report.models
    for name, (n_clusters, share, labels) in result.dominance.items():
        worst = int(np.nanargmax(share)) if np.isfinite(share).any() else None
        rows.append({
            "dataset": result.spec.label, "axis": name, "clusters": f"{n_clusters:,}",
            "largest share median": fmt(_median(share), ".3f"),
            "largest share max": fmt(np.nanmax(share) if worst is not None else None, ".3f"),
            "model": "" if worst is None else str(models[worst]),
            "cluster": "" if worst is None else short_label(labels[worst]),
            f"models > {DOMINANT_SHARE:g}": str(int(np.sum(np.nan_to_num(share) > DOMINANT_SHARE))),
        })
    return rows


def dataset_numbers(result: DatasetResult) -> dict[str, str]:
    """Every number of one dataset the manuscript may quote, by name, formatted."""
    numbers: dict[str, str] = {}
    key, report = result.spec.key, result.report

    def put(name, value, spec=".2f"):
        add_number(numbers, name, value, spec)

    s = report.structure
    put(f"{key}_comparisons", s["n_comparisons"], ",.0f")
    put(f"{key}_models", s["n_models"], "d")
    put(f"{key}_pairs", s["n_pairs"], ",d")
    if s["n_prompts"] is not None:
        put(f"{key}_prompts", s["n_prompts"], ",d")
    if s["n_judges"] is not None:
        put(f"{key}_judges", s["n_judges"], ",d")
    for name, r in report.clusterings.items():
        if not r.identified:
            continue
        tag = name.replace("+", "_")
        put(f"{key}_{tag}_clusters", " x ".join(f"{g:,}" for g in r.n_clusters))
        put(f"{key}_infl_{tag}", _median(r.inflation))
        low, high = np.nanmin(r.inflation), np.nanmax(r.inflation)
        put(f"{key}_infl_{tag}_min", low)
        put(f"{key}_infl_{tag}_max", high)
        if weakly_identified(result, name) is None:
            put(f"{key}_naivecov_{tag}", pct(implied_naive_coverage(_median(r.inflation))))
    for name, a in report.axes.items():
        put(f"{key}_{name}_pair_icc", a.pair_icc, ".3f")
        put(f"{key}_{name}_own_icc", _median(a.shared_icc), ".2f")
        put(f"{key}_{name}_m", _median(a.m), ".1f")
        put(f"{key}_{name}_sqrtm", np.sqrt(_median(a.m)))
        put(f"{key}_{name}_single_pairs", result.single_pairs[name], ",d")
        put(f"{key}_{name}_kish", _median(a.predicted))
        n_clusters, share, labels = result.dominance[name]
        put(f"{key}_{name}_share_max", np.nanmax(share), ".3f")
        put(f"{key}_{name}_share_median", _median(share), ".3f")
        put(f"{key}_{name}_share_cluster", short_label(labels[int(np.nanargmax(share))]))
        put(f"{key}_{name}_dominated",
                      str(int(np.sum(np.nan_to_num(share) > DOMINANT_SHARE))))
    if report.main is not None:
        eff, prompts = report.effective_n, report.prompts
        put(f"{key}_effn", _median(eff), ",.0f")
        put(f"{key}_effn_per_prompt", _median(eff / prompts))
        put(f"{key}_n_per_model", _median(report.n), ",.0f")
    return numbers


@cache
def dataset_document(spec: Dataset) -> dict:
    """One dataset's results: numbers and table rows (cached per build)."""
    result = analyse(spec)
    return {"dataset": spec.name, "inflation": inflation_rows(result),
            "icc": icc_rows(result), "dominance": dominance_rows(result),
            "numbers": dataset_numbers(result)}


def dataset_results(paper: Paper, specs=DATASETS) -> None:
    """Write ``results/<dataset>.json`` for each dataset and register its numbers."""
    for spec in specs:
        doc = dataset_document(spec)
        paper.write_json(doc, "results", f"{spec.name}.json")
        paper.merge(doc["numbers"])


def inflation_table(specs=DATASETS) -> pd.DataFrame:
    """Table 1's cells (the inflation rows of every dataset in ``specs``)."""
    rows = [row for spec in specs for row in dataset_document(spec)["inflation"]]
    return pd.DataFrame(rows, columns=INFLATION_COLUMNS)


def real_data_tables(paper: Paper, specs=DATASETS) -> None:
    """Inflation, ICC-paradox and dominance tables over ``specs`` from their results."""
    docs = [dataset_document(spec) for spec in specs]
    tables = (("inflation", "inflation", INFLATION_COLUMNS,
               "SE inflation (clustered SE over naive SE; median and range over models) "
               "per log and clustering, and the coverage of a nominal 95% naive interval "
               "that the median implies, 2 Phi(1.96 / inflation) - 1. '-': not implied "
               f"because the clustered SE is weakly identified: (a) fewer than {FEW_CLUSTERS} "
               "clusters, (b) most model pairs compared within one cluster, (c) one "
               f"cluster carries more than {DOMINANT_SHARE} of some model's clustered "
               "variance. Axes with a single judge are left out. src: MMLU-Pro's source "
               "subject of a question."),
              ("icc_paradox", "icc", ICC_COLUMNS,
               "The ICC paradox: the pair-level ICC beside the own-comparison ICC, m (a "
               "model's mean comparisons per cluster), Kish's prediction and the measured "
               "SE inflation. Every column but the pair-level ICC is the median of "
               "per-model values, so Kish's column is not sqrt(1 + (m - 1) ICC) of the "
               "printed medians."),
              ("dominant_cluster", "dominance", DOMINANCE_COLUMNS,
               "Largest cluster's share of each model's clustered variance."))
    for name, part, columns, caption in tables:
        rows = [row for doc in docs for row in doc[part]]
        paper.table(name, pd.DataFrame(rows, columns=columns), caption)


def mmlu_subsets(n_subsets: int = N_SUBSETS, size: int = SUBSET_SIZE,
                 seed: int = SUBSET_SEED) -> list[tuple[str, ...]]:
    """Seeded random subsets of ``size`` of the 29 MMLU-Pro models (sorted names)."""
    from winrate.io.download import MMLU_PRO_MODELS

    rng = np.random.default_rng(seed)
    models = np.array(sorted(MMLU_PRO_MODELS))
    return [tuple(sorted(rng.choice(models, size, replace=False))) for _ in range(n_subsets)]


def mmlu_subset_table(paper: Paper) -> None:
    """Prompt-clustered inflation of MMLU-Pro on seeded 19-model subsets."""
    rows, medians, ms, iccs = [], [], [], []
    for i, models in enumerate(mmlu_subsets(), start=1):
        log, _ = _quiet_read("mmlu_pro", models=list(models))
        report = explore(log, ("prompt",), dataset="mmlu_pro")
        a, inflation = report.axes["prompt"], report.clusterings["prompt"].inflation
        medians.append(_median(inflation))
        ms.append(_median(a.m))
        iccs.append(_median(a.shared_icc))
        rows.append({"subset": str(i), "comparisons": f"{report.structure['n_comparisons']:,.0f}",
                     "SE inflation median [range]": _spread(inflation),
                     "own-comparison ICC": fmt(_median(a.shared_icc), ".3f"),
                     "m": fmt(_median(a.m), ".1f"), "sqrt(m)": fmt(np.sqrt(_median(a.m))),
                     "Kish prediction": fmt(_median(a.predicted)),
                     "pair-level ICC": fmt(a.pair_icc, ".4f")})
    paper.table("mmlu_subsets", pd.DataFrame(rows),
                f"MMLU-Pro, {N_SUBSETS} seeded random subsets of {SUBSET_SIZE} models, "
                f"clustered by question ({MEASURED_DEFINITION}). The own-comparison ICC, m "
                "and Kish's prediction are medians of per-model values (so Kish's column "
                "need not equal sqrt(1 + (m - 1) ICC) of the printed medians); sqrt(m) is "
                "the root of the median m.")
    paper.number("mmlusub_size", SUBSET_SIZE, "d")
    paper.number("mmlusub_count", N_SUBSETS, "d")
    paper.extremes("mmlusub_infl", medians)
    paper.number("mmlusub_m", float(np.median(ms)), ".1f")
    paper.number("mmlusub_sqrtm", float(np.sqrt(np.median(ms))))
    paper.extremes("mmlusub_own_icc", iccs, ".2f")
