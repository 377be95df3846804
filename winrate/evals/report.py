"""Tables in the style of Miller (2024, tables 2-5) as aligned text, markdown, LaTeX or CSV,
and JSON.

The score table reads ``65.5% (0.7%)``: the mean with its SE in parentheses, next to the
number of questions and clusters. The pairwise table gives the difference with its paired
SE, the confidence interval and the score correlation. CSV output carries the raw numbers
instead of formatted strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial

import pandas as pd

from winrate.constants import EVAL_FORMATS
from winrate.errors import WinrateInputError, one_of
from winrate.evals.results import Comparison, ModelResult
from winrate.report.leaderboard import json_safe
from winrate.report.tables import render_table

JSON_SCHEMA_VERSION = 1


def pct(value: float | None, digits: int = 1, sign: bool = False) -> str:
    """``0.655 -> '65.5%'``; None or NaN -> ``'-'``."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{100 * value:{'+' if sign else ''}.{digits}f}%"


def on_scale(value: float | None, digits: int = 1, sign: bool = False,
             scale: str = "unit") -> str:
    """A score or difference as printed: a percentage (:func:`pct`) for 0/1 and [0, 1]
    scores; on scale ``other`` the number itself with ``digits + 2`` decimals."""
    if scale != "other" or value is None or not math.isfinite(value):
        return pct(value, digits, sign)
    return f"{value:{'+' if sign else ''}.{digits + 2}f}"


def number_cell(value: float | None, digits: int = 2) -> str:
    """A table cell: ``value`` to ``digits`` decimals, ``-`` when it is missing."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _clusters_text(result: ModelResult) -> str:
    s = result.summary
    return ", ".join(f"{g:,} {name}" for name, g in zip(s.cluster_names, s.n_clusters,
                                                        strict=True)) or "-"


def score_rows(models: Mapping[str, ModelResult], digits: int = 1,
               scale: str = "unit") -> list[dict]:
    """Formatted rows of the score table (one per model); ``scale`` as :func:`on_scale`."""
    rows, fmt = [], partial(on_scale, digits=digits, scale=scale)
    for name, result in models.items():
        s = result.summary
        rows.append({
            "Model": name,
            "Score (SE)": f"{fmt(s.mean)} ({fmt(s.se)})",
            f"{100 * (1 - s.alpha):g}% CI": f"({fmt(s.ci_low)}, {fmt(s.ci_high)})",
            "Naive SE": fmt(s.se_naive),
            "Questions": f"{s.n:,}",
            "Clusters": _clusters_text(result),
            "DEFF": number_cell(s.deff),
        })
    return rows


def _flatten(record: dict) -> dict:
    """Nested objects become ``key.sub`` columns (for CSV)."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            out[key] = value
    return out


def score_records(models: Mapping[str, ModelResult]) -> list[dict]:
    """Raw numbers of the score table (CSV)."""
    return [_flatten({"model": name, **summary_record(r)}) for name, r in models.items()]


def pairwise_rows(comparisons: Sequence[Comparison], digits: int = 1,
                  scale: str = "unit") -> list[dict]:
    """Formatted rows of the pairwise table (Miller 2024, table 5)."""
    rows, fmt = [], partial(on_scale, digits=digits, sign=True, scale=scale)
    for c in comparisons:
        t = c.paired.test
        rows.append({
            "Model": c.model_a,
            "Baseline": c.model_b,
            "Model - Baseline (SE)": f"{fmt(t.estimate)} ({fmt(t.se, sign=False)})",
            f"{100 * (1 - t.alpha):g}% CI": f"({fmt(t.ci_low)}, {fmt(t.ci_high)})",
            "Correlation": number_cell(c.paired.correlation),
            "p": f"{t.p_value:.2g}",
            "Questions": f"{c.paired.n:,}",
        })
        if c.bayes is not None:
            rows[-1]["P(Model > Baseline)"] = f"{c.bayes.prob_a_better:.3f}"
    return rows


def pairwise_records(comparisons: Sequence[Comparison]) -> list[dict]:
    """Raw numbers of the pairwise table (CSV / JSON)."""
    return [_flatten(comparison_record(c)) for c in comparisons]


def render(rows: list[dict], fmt: str) -> str:
    """Render rows (dicts; a key missing from a row shows as ``-``) as an aligned text,
    markdown, LaTeX (tabular) or CSV table (:func:`winrate.report.tables.render_table`)."""
    if fmt not in EVAL_FORMATS:
        raise WinrateInputError(f"format must be one of {one_of(EVAL_FORMATS)}, got {fmt!r}")
    if fmt == "csv":
        return pd.DataFrame(rows).to_csv(index=False)
    if not rows:
        return ""
    header = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[str(r.get(h, "-")) for h in header] for r in rows]
    return render_table(header, cells, fmt) + "\n"


def by_score(models: Mapping[str, ModelResult]) -> dict[str, ModelResult]:
    """The models best mean first (stable on ties; an undefined mean last)."""
    def key(name: str) -> float:
        mean = models[name].summary.mean
        return -mean if mean is not None and math.isfinite(mean) else math.inf

    return {name: models[name] for name in sorted(models, key=key)}


#: How the header names each score scale.
_SCALE_TEXT = {"binary": "0/1 scores", "unit": "scores in [0, 1]",
               "other": "scores on their own scale"}


def header(report) -> str:
    """The report's opening sentence: what was scored, how the SEs are clustered and the
    level, e.g. "3 models scored on 400 questions (0/1 scores in column 'correct');
    standard errors clustered by src (20 clusters), cr1 correction; 95% confidence
    intervals (wald-t)." """
    k = len(report.models)
    questions = (len(report.scores.scores) if report.scores is not None
                 else max((r.summary.n for r in report.models.values()), default=0))
    scored = (f"{k} model{'s' if k != 1 else ''} scored on {questions:,} questions "
              f"({_SCALE_TEXT.get(report.scale, 'scores')} in column {report.score_col!r})")
    methods = ", ".join(dict.fromkeys(r.summary.interval for r in report.models.values()))
    return (f"{scored}; {_clustering_text(report)}; {100 * (1 - report.alpha):g}% "
            f"confidence intervals ({methods or report.interval}).")


def _clustering_text(report) -> str:
    """``standard errors clustered by src (20 clusters), cr1 correction``, or that the
    questions are taken as independent."""
    if not report.cluster_cols:
        return "questions independent (no clustering)"
    counts = ({c: report.scores.clusters[c].nunique() for c in report.cluster_cols}
              if report.scores is not None else {})
    named = " and ".join(f"{c} ({counts[c]:,} clusters)" if c in counts else c
                         for c in report.cluster_cols)
    return f"standard errors clustered by {named}, {report.correction} correction"


def score_table(report, fmt: str = "markdown", digits: int = 1) -> str:
    """The per-model score table of a report (an :class:`~winrate.evals.frame.EvalReport`),
    best mean first."""
    models = by_score(report.models)
    rows = (score_records(models) if fmt == "csv"
            else score_rows(models, digits, report.scale))
    return render(rows, fmt)


def pairwise_table(report, fmt: str = "markdown", digits: int = 1) -> str:
    """The pairwise comparison table of a report (an
    :class:`~winrate.evals.frame.EvalReport`; empty string without comparisons)."""
    comps = report.comparisons
    rows = (pairwise_records(comps) if fmt == "csv"
            else pairwise_rows(comps, digits, report.scale))
    return render(rows, fmt) if rows else ""


def summary_record(result: ModelResult) -> dict:
    """JSON record of one model (see :func:`report_json` for the schema)."""
    s = result.summary
    per_col = {name: i for i, name in enumerate(s.cluster_names)}
    record = {
        "mean": s.mean, "se": s.se, "se_naive": s.se_naive, "naive_method": s.naive_method,
        "se_clt": s.se_clt, "se_bernoulli": s.se_bernoulli, "se_cr0": s.se_cr0,
        "se_cr1": s.se_cr1, "n": s.n,
        "n_clusters": {c: s.n_clusters[i] for c, i in per_col.items()},
        "mean_cluster_size": {c: s.mean_cluster_size[i] for c, i in per_col.items()},
        "icc": {c: s.icc[i] for c, i in per_col.items()},
        "deff": s.deff, "n_eff": s.n_eff, "ci_low": s.ci_low, "ci_high": s.ci_high,
        "method": s.method, "interval": s.interval, "df": s.df, "alpha": s.alpha,
        "correction": s.correction, "binary": s.binary,
        "answers_per_question": result.answers_per_question,
    }
    if result.components is not None:
        c = result.components
        record["variance_components"] = {"k": c.k, "var_x": c.var_x,
                                          "mean_sigma2": c.mean_sigma2, "clustered": c.clustered}
    return json_safe(record)


def comparison_record(c: Comparison) -> dict:
    """JSON record of one paired comparison."""
    p, t = c.paired, c.paired.test
    record = {
        "model_a": c.model_a, "model_b": c.model_b, "mean_a": p.mean_a, "mean_b": p.mean_b,
        "difference": t.estimate, "se": t.se, "se_paired": p.se_paired,
        "se_unpaired": p.se_unpaired, "se_cr0": p.se_cr0, "se_cr1": p.se_cr1,
        "ci_low": t.ci_low, "ci_high": t.ci_high, "z": t.z, "p_value": t.p_value, "df": t.df,
        "correlation": p.correlation, "n": p.n,
    }
    record["n_clusters"] = dict(zip(p.cluster_names, p.n_clusters, strict=True))
    if c.mcnemar is not None:
        m = c.mcnemar
        record["mcnemar"] = {"b": m.b, "c": m.c, "statistic": m.statistic,
                             "p_chi2": m.p_chi2, "p_exact": m.p_exact}
    if c.bayes is not None:
        bayes = c.bayes
        record["bayes"] = {"prob_a_better": bayes.prob_a_better, "diff_low": bayes.diff_low,
                           "diff_high": bayes.diff_high, "ess": bayes.ess,
                           "sampler": bayes.sampler, "seed": bayes.seed}
    return json_safe(record)


def report_json(report) -> dict:
    """The ``--json`` document (schema version :data:`JSON_SCHEMA_VERSION`).

    Top level: ``schema_version``, ``score_col``, ``question_col``, ``model_col``,
    ``cluster_cols``, ``correction``, ``alpha``, ``interval``, ``models`` (model name ->
    record) and ``comparisons`` (list). A model record holds ``mean``, ``se`` (the SE the
    interval uses), ``se_naive`` with ``naive_method`` (``bernoulli`` or ``clt``),
    ``se_clt``, ``se_bernoulli``, ``se_cr0``, ``se_cr1``, ``n`` (questions),
    ``n_clusters``, ``mean_cluster_size`` and ``icc`` (objects keyed by cluster column),
    ``deff``, ``n_eff``, ``ci_low``, ``ci_high``, ``method`` (which SE), ``interval``
    (which interval), ``df``, ``alpha``, ``correction``, ``binary``,
    ``answers_per_question`` and, for balanced resampled answers, ``variance_components``.
    ``scale`` is the score scale (``binary``, ``unit`` or ``other``), ``notes`` the warnings
    as coded notes (``code``, ``severity``, ``axis``, ``models``, ``text``; docs/notes.md)
    and ``warnings`` their texts, each once. Undefined numbers are ``null``.
    """
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "score_col": report.score_col, "question_col": report.question_col,
        "model_col": report.model_col, "cluster_cols": list(report.cluster_cols),
        "correction": report.correction, "alpha": report.alpha, "interval": report.interval,
        "scale": report.scale, "notes": report.notes.to_list(),
        "warnings": [str(note) for note in report.notes],
        "models": {name: summary_record(r) for name, r in report.models.items()},
        "comparisons": [comparison_record(c) for c in report.comparisons],
    }


# ------------------------------------------------------------------- winrate compare


def compare_header(result) -> str:
    """The opening sentence of ``winrate compare`` (a
    :class:`~winrate.evals.runs.RunComparison`): :func:`header`'s, then how the minimal
    detectable difference is computed and, for more than two runs, the simultaneous
    intervals."""
    report = result.report
    df = report.comparisons[0].paired.test.df if report.comparisons else None
    source = ("normal quantiles (Miller 2024, eq. 10)" if df is None
              else f"quantiles of t({df}) (Bloom 1995)")
    text = (f"{header(report)} Minimal detectable difference (MDD) at "
            f"{100 * result.power:g}% power: (q_(1-alpha/2) + q_power) x SE of the paired "
            f"difference, {source}.")
    if result.joint is not None:
        pairs = len(result.joint.estimate)
        text += (f" Simultaneous intervals cover all {pairs} pairs at once (max-|T| "
                 f"critical value {result.joint.critical_value:.3f}).")
    return text


def compare_rows(result, digits: int = 1) -> list[dict]:
    """Formatted rows of the comparison table: :func:`pairwise_rows`, then the MDD, the
    exact McNemar p-value (0/1 scores) and, for more than two runs, the simultaneous
    interval and the max-T adjusted p-value."""
    report = result.report
    rows = pairwise_rows(report.comparisons, digits, report.scale)
    fmt = partial(on_scale, digits=digits, scale=report.scale)
    level = f"{100 * (1 - report.alpha):g}%"
    for k, (row, c) in enumerate(zip(rows, report.comparisons, strict=True)):
        row[f"MDD ({100 * result.power:g}%)"] = fmt(result.detectable[k])
        row["McNemar p"] = "-" if c.mcnemar is None else f"{c.mcnemar.p_exact:.2g}"
        if result.joint is not None:
            j = result.joint
            low, high = fmt(j.low[k], sign=True), fmt(j.high[k], sign=True)
            row[f"{level} simult. CI"] = f"({low}, {high})"
            row["p max-T"] = (f"{j.p_max_t[k]:.2g}" if j.p_max_t[k] > 0
                              else f"<{1 / max(j.n_draws, 1):.0e}")  # none of the draws
    return rows


def compare_records(result) -> list[dict]:
    """Raw numbers of the comparison table: :func:`comparison_record` of each pair with
    ``mdd`` and ``power`` and, for more than two runs, ``simultaneous``."""
    records = []
    for k, c in enumerate(result.report.comparisons):
        record = comparison_record(c)
        record["mdd"], record["power"] = result.detectable[k], result.power
        if result.joint is not None:
            j = result.joint
            record["simultaneous"] = {
                "ci_low": float(j.low[k]), "ci_high": float(j.high[k]),
                "critical_value": j.critical_value, "p_max_t": float(j.p_max_t[k]),
                "p_holm": float(j.p_holm[k]), "mc_se": j.mc_se, "n_draws": j.n_draws}
        records.append(json_safe(record))
    return records


def compare_table(result, fmt: str = "markdown", digits: int = 1) -> str:
    """The comparison table of ``winrate compare`` (CSV: raw numbers)."""
    rows = ([_flatten(r) for r in compare_records(result)] if fmt == "csv"
            else compare_rows(result, digits))
    return render(rows, fmt)


def compare_json(result) -> dict:
    """The ``winrate compare --json`` document: :func:`report_json`'s keys (``models`` are
    the runs, ``comparisons`` carry ``mdd``, ``power`` and, for more than two runs,
    ``simultaneous`` with ``ci_low``, ``ci_high``, ``critical_value``, ``p_max_t``,
    ``p_holm``, ``mc_se`` and ``n_draws``), then ``runs`` (the runs in the order given,
    each with its ``files``), ``ranked`` (best mean first) and ``power``."""
    document = report_json(result.report)
    document["comparisons"] = compare_records(result)
    document["runs"] = [{"run": run, "files": list(result.files.get(run, ()))}
                        for run in result.runs]
    document["ranked"] = list(result.ranked)
    document["power"] = result.power
    return document
