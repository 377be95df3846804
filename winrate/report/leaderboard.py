"""Tables and the JSON document of a leaderboard analysis.

JSON schema ``winrate.leaderboard/1`` (every per-model list is in the order of ``models``;
numbers that are undefined are ``null``, never NaN):

=====================  ==================================================================
key                    meaning
=====================  ==================================================================
schema                 ``"winrate.leaderboard/1"``
estimator_description  the estimator, its scale and options in one line (as ``summary()``)
settings               ``estimator`` (``winrate``, ``bt`` or ``rao-kupper``), ``scale``
                       (an object, :class:`winrate.estimators.base.Scale`: ``name``
                       ``probability``, scores in [0, 1], or ``elo``, Bradley-Terry ratings
                       ``400/ln(10) theta`` with mean 1000 or the anchor's rating; the range
                       ``low``, ``high`` (null: none); the interval ``link``, ``logit`` or
                       ``identity``; how scores print: ``factor``, ``width``, ``decimals``,
                       ``label``, ``unit_name``, ``points``, ``quantity``, ``plural``,
                       ``titled``),
                       ``baseline``, ``anchor`` (``{model, rating}`` or null), ``prior``,
                       ``ties``, ``covariates`` and their ``standardisation`` (Bradley-Terry
                       only), ``cluster`` (axes used, ``["none"]`` if unclustered),
                       ``weights`` (win rate only),
                       ``correction`` (``none`` = CR0, ``cr1`` = G/(G-1) per term,
                       ``cr2`` = Bell-McCaffrey leverage correction of the win rate),
                       ``alpha``, ``reference`` (``normal`` or ``t``), ``df`` (t degrees
                       of freedom or null; with CR2 a list, one per model in ``models``
                       order, Pan-Wall's, null for a model without a variance),
                       ``method`` (``auto``, ``sandwich``,
                       ``jackknife`` or ``bootstrap`` as requested; ``method`` below is
                       what ran), ``bootstrap_reps``, ``seed``
n_comparisons          comparisons in the log (sum of frequency weights)
n_rows                 rows of the log
models                 model names
score                  the estimate on ``settings.scale``: the half-tie win probability
                       S_a (opponent-weighted, or vs the baseline), or the Elo rating
se, se_naive           clustered and naive (rows independent) standard errors
ci_low, ci_high        marginal Wald interval at level 1 - alpha
inflation              se / se_naive = sqrt(design effect)
deff                   design effect V_aa / V_naive_aa of the clustering used
effective_n            n_a / deff
effective_clusters     G*: each model's effective number of clusters (inverse Herfindahl of
                       its clusters' shares of its squared influence; Carter, Schnepel &
                       Steigerwald 2017), the smallest over the clustering axes; null when
                       unclustered
n                      comparisons of each model (n_a)
cov                    K x K clustered covariance of the scores, on the reported scale
axes                   per clustering axis: n_clusters, mean_cluster_size, icc (pair-level
                       ANOVA ICC), single_cluster_pairs, and per model: se, deff, m (mean
                       comparisons per cluster), rho (shared-response correlation),
                       effective_clusters (G* on this axis)
unobserved_pairs       model pairs the design needs but never compared, as [name, name]
not_estimable          models whose uncertainty cannot be estimated, with the reason (their
                       se and interval are null and their rank set is every rank)
coefficients           further parameters (style covariates per standardised unit, the
                       Davidson tie parameter): ``names``, ``estimate``, ``se``,
                       ``se_naive``, ``ci_low``, ``ci_high``, ``cov``, and the joint
                       sandwich covariance ``cov_all`` of ratings and coefficients in the
                       order ``names_all``; null if none
warnings               the notes' texts (as in ``notes``), kept for scripts that read them
notes                  every warning and note: ``code`` (stable; winrate.notes.CODES),
                       ``severity`` (``warning`` or ``note``), ``axis``, ``models``, ``text``
method                 variance method actually run: ``sandwich``, ``jackknife`` (CV3J),
                       ``wild bootstrap`` (ci_low/ci_high are then percentile-t),
                       ``cluster bootstrap`` or ``pigeonhole bootstrap``
method_note            one line: which variance method was used and why
simultaneous_critical_value
                       critical value c of the simultaneous intervals (max-|T| quantile,
                       or the wild bootstrap's max-|t*| quantile); null unless requested
sim_low, sim_high      simultaneous intervals ``score -/+ c * se``, covering all scores
                       jointly with probability 1 - alpha; null unless requested
rank_low, rank_high    rank confidence set of each model, 1 = best (Mogstad et al. 2024);
                       null unless requested
rank_method            ``marginal`` (each set covers its model's rank) or ``simultaneous``
                       (all sets jointly); null unless ranks were requested
pairwise               list over model pairs (i < j in ``models`` order) of ``model_i``,
                       ``model_j``, ``estimate`` (score_i - score_j), ``se``, ``p``
                       (two-sided, normal or t(df)), ``p_holm`` (Holm-adjusted),
                       ``p_max_t`` (single-step max-T adjusted), ``sim_low``/``sim_high``
                       (simultaneous intervals over all pairs); null unless requested
monte_carlo            precision of the Monte-Carlo critical values: ``tolerance`` (target
                       MC SE relative to each critical value) and, for each of
                       ``simultaneous``, ``pairwise`` and ``ranks`` that was computed, its
                       ``critical_value``, ``mc_se`` and ``n_draws`` (ranks: per model, in
                       ``models`` order, null for a model left out); null when no joint
                       inference was requested
judges, plan, changes  only in the document of a page written by ``winrate judges``,
                       ``plan`` or ``diff`` (``--html``): that report's own JSON document
                       (:func:`winrate.report.builders.page_document`), shown as a judges
                       section, a plan table or a change column
=====================  ==================================================================
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd

from winrate import estimators
from winrate.inference.analysis import Analysis, expand_kept
from winrate.report.tables import comment_block, render_table
from winrate.variance.reference import reference_label

SCHEMA = "winrate.leaderboard/1"
_FRACTIONAL = " (a sum of fractional frequency weights)"


def json_safe(value):
    """JSON-safe, recursively: numpy to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.str_):
        return str(value)
    return value


def format_count(n: float) -> str:
    """A number of comparisons as it is: ``1,034`` when whole, ``1,034.5`` for a sum of
    fractional frequency weights (never rounded to a whole number)."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.10g}"


def format_number(value: float, spec: str, scale: float = 1.0) -> str:
    """``scale * value`` formatted by ``spec``; where it is undefined (NaN or infinite),
    ``-`` right-aligned to the width of ``spec``."""
    if np.isfinite(value):
        return format(scale * value, spec)
    width = re.match(r"\d*", spec).group()
    return "-".rjust(int(width or 0))


def defined_median(values) -> float:
    """Median over the defined (finite) values; NaN (no RuntimeWarning) when none is."""
    values = np.asarray(values, float)
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


def _joint_columns(analysis: Analysis) -> dict:
    """Per-model simultaneous intervals and rank bounds (NaN where not computed)."""
    joint = analysis.joint
    if joint is None:
        return {}
    cols = {}
    if joint.sim_low is not None:
        cols["sim_low"], cols["sim_high"] = joint.sim_low, joint.sim_high
    if joint.rank_low is not None:  # also when no model is estimable (joint.ranks None)
        cols["rank_low"], cols["rank_high"] = joint.rank_low, joint.rank_high
    return cols


def pairwise_frame(analysis: Analysis) -> pd.DataFrame | None:
    """All pairwise differences ``S_i - S_j`` (i before j in ``models`` order) with their SE,
    marginal, Holm and max-T p-values and simultaneous bounds; None if not computed."""
    joint = analysis.joint
    if joint is None or joint.pairwise is None:
        return None
    pw = joint.pairwise
    names = np.asarray([str(m) for m in analysis.models])[joint.kept]
    return pd.DataFrame({
        "model_i": names[pw.i], "model_j": names[pw.j], "estimate": pw.estimate,
        "se": pw.se, "p": pw.p_value, "p_holm": pw.p_holm, "p_max_t": pw.p_max_t,
        "sim_low": pw.low, "sim_high": pw.high,
    })


def pairwise_records(analysis: Analysis) -> list[dict] | None:
    """The ``pairwise`` JSON list (module docstring), or None if not computed."""
    frame = pairwise_frame(analysis)
    return None if frame is None else frame.to_dict(orient="records")


def format_p(p: float) -> str:
    """A p-value to four decimals, ``<0.0001`` below that, ``-`` where undefined."""
    return "<0.0001" if 0 <= p < 5e-5 else format_number(p, ".4f")


#: Above this many pairs the printed pairwise table shows neighbours in rank only.
PAIRWISE_SHOWN = 300


def _pairs_by_rank(analysis: Analysis) -> pd.DataFrame:
    """The pairwise frame with each pair oriented higher-ranked model first (``S_i - S_j``
    >= 0: estimate and bounds negated, bounds swapped where a pair is turned round), its
    two models' ranks as ``rank_i`` < ``rank_j``, sorted by them."""
    frame = analysis.pairwise_frame()
    ranked = pd.Index([str(m) for m in leaderboard_table(analysis)["model"]])
    rank_i, rank_j = (ranked.get_indexer(frame[c]) for c in ("model_i", "model_j"))
    flip = rank_i > rank_j
    i, j, low, high = (frame[c].to_numpy() for c in ("model_i", "model_j", "sim_low",
                                                      "sim_high"))
    pairs = frame.assign(model_i=np.where(flip, j, i), model_j=np.where(flip, i, j),
                         estimate=np.where(flip, -frame["estimate"], frame["estimate"]),
                         sim_low=np.where(flip, -high, low), sim_high=np.where(flip, -low, high),
                         rank_i=np.minimum(rank_i, rank_j), rank_j=np.maximum(rank_i, rank_j))
    return pairs.sort_values(["rank_i", "rank_j"])


def format_pairwise(analysis: Analysis, table_format: str = "text") -> str:
    """The pairwise differences as a table (:func:`_pairs_by_rank`: higher-ranked model
    first, so the difference is >= 0); with more than :data:`PAIRWISE_SHOWN` pairs, only the
    pairs adjacent in rank, with a note pointing to ``--json``."""
    shown = _pairs_by_rank(analysis)
    total, note = len(shown), ""
    if total > PAIRWISE_SHOWN:
        shown = shown[shown["rank_j"] == shown["rank_i"] + 1]
        note = f"{len(shown)} of {total:,} pairs shown (neighbours in rank); all pairs with --json"
    unit = analysis.leaderboard.scale
    scale, decimals = unit.factor, unit.decimals
    level = round(100 * (1 - analysis.intervals.alpha))
    header = ["higher", "lower", "difference", "SE", f"{level}% simult.", "p", "p Holm",
              "p max-T"]
    rows = [[r.model_i, r.model_j, format_number(r.estimate, f".{decimals}f", scale),
             format_number(r.se, f".{decimals}f", scale),
             f"[{format_number(r.sim_low, f'.{decimals}f', scale)}, "
             f"{format_number(r.sim_high, f'.{decimals}f', scale)}]",
             *(format_p(v) for v in (r.p, r.p_holm, r.p_max_t))]
            for r in shown.itertuples()]
    title = "\n".join([f"Pairwise differences ({unit.points}; simultaneous over all {total:,} "
                       "pairs)", *([note] if note else [])])
    title = title if table_format == "text" else comment_block(title, table_format)
    return title + "\n" + render_table(header, rows, table_format, "ll" + "r" * 6)


def inflation(analysis: Analysis) -> np.ndarray:
    """SE inflation ``sqrt(DEFF)``; NaN for a model without a clustered SE (not estimable:
    its zero clustered variance is not an inflation of 0)."""
    return np.where(np.isnan(analysis.intervals.se), np.nan, np.sqrt(analysis.deff))


def whole_counts(counts: np.ndarray) -> np.ndarray:
    """Frequency-weighted counts as integers when they are whole (every log of whole
    comparisons); fractional frequency weights keep them as floats."""
    counts = np.asarray(counts, dtype=float)
    return counts.astype(np.int64) if np.array_equal(counts, np.round(counts)) else counts


def leaderboard_table(analysis: Analysis) -> pd.DataFrame:
    """One row per model, best score first."""
    iv = analysis.intervals
    table = pd.DataFrame({
        "model": [str(m) for m in analysis.models],
        "score": analysis.scores,
        "se_naive": analysis.se_naive,
        "se": iv.se,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "inflation": inflation(analysis),
        "effective_clusters": analysis.effective_clusters,
        "n": whole_counts(analysis.leaderboard.comparisons_per_model),
        **_joint_columns(analysis),
    })
    table = table.sort_values("score", ascending=False, kind="stable", na_position="last")
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table.reset_index(drop=True)


def leaderboard_cells(analysis: Analysis,
                      padded: bool = True) -> tuple[list[str], list[list[str]]]:
    """Header and rows (best score first) of the printed leaderboard: win rates and SEs in
    percentage points, ratings in Elo points. ``padded``: each cell at its column's width in
    the text table; else bare, for Markdown and LaTeX."""
    table = leaderboard_table(analysis)
    unit = analysis.leaderboard.scale  # percentage points for win rates, Elo points
    scale, num, decimals = unit.factor, unit.width, unit.decimals
    level = round(100 * (1 - analysis.intervals.alpha))

    def pad(width: int) -> int:
        return width if padded else 0

    def cell(value: float, size: int = num) -> str:
        return format_number(value, f"{pad(size)}.{decimals}f", scale)

    model = pad(max(5, table["model"].str.len().max()))
    interval = pad(2 * num + 4)
    header = [f"{'#':>{pad(3)}}", f"{'model':<{model}}", f"{'score':>{pad(num)}}",
              f"{'SE naive':>{pad(8)}}", f"{'SE':>{pad(num)}}", f"{f'{level}% CI':>{interval}}",
              f"{'infl.':>{pad(5)}}", f"{'G*':>{pad(7)}}", f"{'n':>{pad(9)}}"]
    if "sim_low" in table:
        header.append(f"{f'{level}% simult.':>{interval}}")
    if "rank_low" in table:
        header.append(f"{'rank set':>{pad(8)}}")
    rows = []
    for row in table.itertuples():
        cells = [f"{row.rank:>{pad(3)}}", f"{row.model:<{model}}", cell(row.score),
                 cell(row.se_naive, 8), cell(row.se), f"[{cell(row.ci_low)}, {cell(row.ci_high)}]",
                 format_number(row.inflation, f"{pad(5)}.2f"),
                 format_number(row.effective_clusters, f"{pad(7)}.1f"),
                 f"{format_count(row.n):>{pad(9)}}"]
        if hasattr(row, "sim_low"):
            cells.append(f"[{cell(row.sim_low)}, {cell(row.sim_high)}]")
        if hasattr(row, "rank_low"):
            ranks = "" if np.isnan(row.rank_low) else f"{row.rank_low:.0f}-{row.rank_high:.0f}"
            cells.append(f"{ranks:>{pad(8)}}")
        rows.append(cells)
    return header, rows


_UNDEFINED = ("'-' = undefined: a model that is not estimable (see the warnings) has no SE, "
              "interval or inflation")


def _undefined_note(analysis: Analysis) -> list[str]:
    return [] if np.isfinite(inflation(analysis)).all() else [_UNDEFINED]


def _lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """Padded cells two spaces apart, one line per row."""
    return ["  ".join(cells) for cells in [header, *rows]]


def format_table(analysis: Analysis) -> str:
    """Plain-text leaderboard: win rates and SEs in percentage points, ratings in Elo points."""
    lines = _lines(*leaderboard_cells(analysis)) + _undefined_note(analysis)
    return "\n".join(lines) + format_coefficients(analysis)


def coefficient_cells(analysis: Analysis,
                      padded: bool = True) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the style covariates / tie parameter table (no rows if none)."""
    coef = analysis.coefficients
    names = () if coef is None else coef.names
    level = round(100 * (1 - analysis.intervals.alpha))

    def pad(width: int) -> int:
        return width if padded else 0

    def cell(values, i: int, size: int) -> str:
        return format_number(values[i], f"{pad(size)}.4f")

    width = pad(max([len("coefficient"), *(len(n) for n in names)]))
    header = [f"{'coefficient':<{width}}", f"{'estimate':>{pad(9)}}", f"{'SE naive':>{pad(8)}}",
              f"{'SE':>{pad(8)}}", f"{f'{level}% CI':>{pad(22)}}"]
    rows = [[f"{name:<{width}}", cell(coef.estimate, i, 9), cell(coef.se_naive, i, 8),
             cell(coef.se, i, 8), f"[{cell(coef.low, i, 9)}, {cell(coef.high, i, 9)}]"]
            for i, name in enumerate(names)]
    return header, rows


def format_coefficients(analysis: Analysis) -> str:
    """Style covariates / tie parameter with clustered and naive SEs (empty if none)."""
    header, rows = coefficient_cells(analysis)
    return "\n".join(["", *_lines(header, rows)]) if rows else ""


def format_report(analysis: Analysis, table_format: str = "text") -> str:
    """What ``winrate leaderboard`` prints on stdout: plain text (the summary, then the
    table), or for a paper a Markdown or LaTeX table (:mod:`winrate.report.tables`) with the summary
    and notes as a comment above it; the coefficient table (if any) follows."""
    if table_format == "text":
        return format_summary(analysis) + "\n" + format_table(analysis)
    header, rows = leaderboard_cells(analysis, padded=False)
    notes = "\n".join([format_summary(analysis), *_undefined_note(analysis)])
    parts = [comment_block(notes, table_format),
             render_table(header, rows, table_format, "rl" + "r" * (len(header) - 2))]
    coef_header, coef_rows = coefficient_cells(analysis, padded=False)
    if coef_rows:
        parts.append(render_table(coef_header, coef_rows, table_format))
    return "\n\n".join(parts)


def format_summary(analysis: Analysis) -> str:
    """Header lines: what was clustered how, and the per-axis diagnostics."""
    s = analysis.settings
    ref = reference_label(analysis.intervals.df)
    lines = [
        f"{format_count(analysis.n_comparisons)} comparisons"
        f"{'' if float(analysis.n_comparisons).is_integer() else _FRACTIONAL}, "
        f"{len(analysis.models)} models; "
        f"clustered by {' + '.join(s['cluster'])} ({s['correction']}), reference {ref}",
        f"estimator: {estimator_description(analysis)}",
    ]
    if analysis.method_note:
        lines.append(f"variance: {analysis.method_note}")
    joint = analysis.joint
    if joint is not None and joint.simultaneous_critical_value is not None:
        sim = joint.simultaneous
        mc = (f", Monte-Carlo SE {sim.mc_se:.4f} from {sim.n_draws:,} draws"
              if sim is not None else ", from the wild bootstrap's draws")
        lines.append(f"simultaneous intervals: critical value "
                     f"{joint.simultaneous_critical_value:.3f}{mc} (all models jointly)")
    if joint is not None and joint.ranks is not None:
        lines.append(f"rank sets: {joint.ranks.method} (1 = best)")
    for axis in analysis.axes.values():
        lines.append(
            f"  {axis.name}: {axis.n_clusters:,} clusters, mean size "
            f"{axis.mean_cluster_size:.1f}, median SE inflation "
            f"{format_number(defined_median(np.sqrt(axis.deff)), '.2f')}, pair-level ICC "
            f"{format_number(axis.icc, '.3f')}, effective clusters G* median "
            f"{format_number(defined_median(axis.effective_clusters), ',.1f')}"
        )
    return "\n".join(lines)


def estimator_description(analysis: Analysis) -> str:
    """One line naming the estimator, its scale and its options (the estimator's own
    :meth:`winrate.estimators.base.Estimator.describe`)."""
    return estimators.of(analysis.leaderboard).describe(analysis.leaderboard.options)


def to_dict(analysis: Analysis) -> dict:
    """The JSON document (schema in the module docstring)."""
    iv = analysis.intervals
    axes = {
        name: {
            "n_clusters": axis.n_clusters, "mean_cluster_size": axis.mean_cluster_size,
            "icc": axis.icc, "single_cluster_pairs": axis.single_cluster_pairs,
            "se": axis.se, "deff": axis.deff, "m": axis.m, "rho": axis.rho,
            "effective_clusters": axis.effective_clusters,
        }
        for name, axis in analysis.axes.items()
    }
    doc = {
        "schema": SCHEMA, "settings": analysis.settings.to_dict(),
        "estimator_description": estimator_description(analysis),
        "n_comparisons": analysis.n_comparisons, "n_rows": analysis.n_rows,
        "models": [str(m) for m in analysis.models], "score": analysis.scores,
        "se": iv.se, "se_naive": analysis.se_naive, "ci_low": iv.low, "ci_high": iv.high,
        "inflation": inflation(analysis), "deff": analysis.deff,
        "effective_n": analysis.effective_n,
        "effective_clusters": analysis.effective_clusters,
        "n": analysis.leaderboard.comparisons_per_model,
        "cov": analysis.cov, "axes": axes,
        "unobserved_pairs": [list(p) for p in analysis.leaderboard.unobserved_pairs],
        "warnings": [str(note) for note in analysis.notes],
        "notes": analysis.notes.to_list(),
        "coefficients": _coefficients_json(analysis),
        "not_estimable": analysis.not_estimable,
        **_joint_json(analysis),
    }
    return json_safe(doc)


def _coefficients_json(analysis: Analysis) -> dict | None:
    coef = analysis.coefficients
    if coef is None:
        return None
    return {"names": list(coef.names), "estimate": coef.estimate, "se": coef.se,
            "se_naive": coef.se_naive, "ci_low": coef.low, "ci_high": coef.high,
            "cov": coef.cov, "cov_all": coef.cov_full,
            "names_all": [str(m) for m in analysis.models] + list(coef.names)}


def _ints(values) -> list | None:
    return None if values is None else [None if np.isnan(v) else int(v) for v in values]


def _joint_json(analysis: Analysis) -> dict:
    """Method and joint-inference keys (module docstring); null when not requested."""
    joint, cols = analysis.joint, _joint_columns(analysis)
    ranks = None if joint is None else joint.ranks
    return {
        "method": analysis.method, "method_note": analysis.method_note,
        "simultaneous_critical_value": None if joint is None
        else joint.simultaneous_critical_value,
        "sim_low": cols.get("sim_low"), "sim_high": cols.get("sim_high"),
        "rank_low": _ints(cols.get("rank_low")), "rank_high": _ints(cols.get("rank_high")),
        "rank_method": None if ranks is None else ranks.method,
        "pairwise": pairwise_records(analysis),
        "monte_carlo": _monte_carlo_json(joint),
    }


def _monte_carlo_json(joint) -> dict | None:
    """The ``monte_carlo`` key (module docstring)."""
    if joint is None:
        return None
    parts = {"simultaneous": joint.simultaneous, "pairwise": joint.pairwise,
             "ranks": joint.ranks}
    done = {name: part for name, part in parts.items() if part is not None}
    out = {"tolerance": next((p.mc_tolerance for p in done.values()), None)}
    for name, part in done.items():
        crit, se = part.critical_value, part.mc_se
        if name == "ranks":  # per kept model, spread over all models
            crit, se = (expand_kept(x, joint.kept) for x in (crit, se))
        out[name] = {"critical_value": crit, "mc_se": se, "n_draws": int(part.n_draws)}
    return out


def write_json(analysis: Analysis, path) -> None:
    """The JSON report of ``analysis`` (:func:`to_dict`), written whole or not at all."""
    from winrate.report.output import write_text

    write_text(path, json.dumps(to_dict(analysis), indent=2) + "\n")
