"""Exploratory report: how much does clustering inflate the error bars of a comparison log?

:func:`explore` runs :func:`winrate.analysis.analyze` once per clustering of interest and
collects, for one log (usually a bundled dataset, :func:`winrate.io.datasets.read_dataset`):

* **structure**: comparisons, rows, models, observed pairs, prompts, judges, tie share,
  comparisons per prompt per model ``m_a`` (median and range), the clusters of every axis
  and which axes are nested in which;
* **per model**: score ``S_a``, naive SE, the SE under every clustering, the SE inflation
  ``SE_clustered / SE_naive = sqrt(DEFF_a)`` (Kish 1965, sec. 8.2) and the effective
  number of comparisons ``n_a / DEFF_a``;
* **summary** per clustering: median and range of the inflation; per single axis the
  pair-level ANOVA ICC of the pair-centred scores ``s_r - psi_ab`` (Donner 1986), the mean
  comparisons of a model per cluster ``m_a``, the implied shared-response correlation
  ``rho_a = (DEFF_a - 1) / (m_a - 1)`` and a back-of-envelope check (below); the
  effective n against the number of prompts each model answered;
* **warnings** of the engine, and clusterings that cannot be estimated, in plain words.

Back-of-envelope check. Kish's design effect for a mean over clusters of size ``m`` with
within-cluster correlation ``rho`` is ``DEFF = 1 + (m - 1) rho`` (Kish 1965, eq. 8.2.2;
Cochran 1977, sec. 9.4), so the SE inflates by ``sqrt(1 + (m - 1) rho)``. The implied
``rho_a`` solves that equation, so it cannot check it. The check instead measures rho
*directly*: ``shared_icc_a`` is the one-way ANOVA ICC, by cluster, of model a's own
comparisons, each oriented for a (``s_r - psi_ab`` when a is the first model of the pair,
its negative otherwise). Those comparisons share a's response on a prompt, which is the
dependence that moves a's score. The pair-level ICC pools every pair of a prompt, most of
which share no model, so it is small even when the inflation is large ("ICC paradox").
``predicted_a = sqrt(1 + (m_a - 1) shared_icc_a)`` is then compared with the measured
``sqrt(DEFF_a)``. It is approximate: the influence weights ``w_ab / n_ab`` differ across
opponents when the design is unbalanced and Kish's formula assumes equal cluster sizes.

Not identified. An axis the log lacks, or one with a single cluster (MMLU-Pro has one
judge, exact match), gives no variance across that axis: the influence of a leaderboard
sums to zero over the whole log, so the single cluster's meat is exactly zero and CR1's
``G / (G - 1)`` divides by zero. Such clusterings, and every multiway clustering that
contains such an axis, are reported as not identified with the reason, never computed.

Nested axes. When every cluster of axis A lies inside one cluster of axis B (an MMLU-Pro
question lies in one ``src`` subject, which lies in one ``category``), the two-way
estimator of Cameron, Gelbach & Miller (2011) collapses to the coarser one:
``V_A + V_B - V_{A cap B} = V_B`` because ``A cap B = A``. So ``prompt+category`` is just
``category`` and the report clusters nested axes one at a time.

JSON schema ``winrate.eda/1`` (per-model lists follow ``models``; undefined numbers are
``null``):

=================  ====================================================================
key                meaning
=================  ====================================================================
schema             ``"winrate.eda/1"``
dataset            dataset name, or null for a file
settings           the estimator's settings (``model`` when given, and its options as
                   :meth:`winrate.estimators.base.Estimator.settings` shows them:
                   ``weights``, ``baseline``, ...), ``correction``, ``clusterings``
                   (requested, in order)
structure          ``n_comparisons``, ``n_rows``, ``n_models``, ``n_pairs``,
                   ``n_pairs_possible``, ``n_prompts``, ``n_judges`` (null if absent),
                   ``tie_share``, ``m_prompt`` (median/min/max comparisons per prompt per
                   model), ``axes`` (per axis ``n_clusters``, ``mean_cluster_size``),
                   ``nested`` (list of ``[inner, outer]`` axis names)
models             model names
n                  comparisons of each model ``n_a``
prompts            prompts each model appears in (null without a prompt axis)
score              leaderboard score ``S_a``
se_naive           naive SE (rows independent)
clusterings        per clustering name (``"prompt"``, ``"prompt+judge"``, ...):
                   ``axes``, ``identified`` (bool), ``reason`` (why not, or null),
                   ``n_clusters`` (per axis), per model ``se``, ``inflation``, ``deff``,
                   ``effective_n``; ``inflation_median``, ``inflation_min``,
                   ``inflation_max``
axes               per identified single axis: ``n_clusters``, ``pair_icc``, per model
                   ``m``, ``rho`` (implied), ``shared_icc`` (direct), ``predicted``
                   (``sqrt(1 + (m - 1) shared_icc)``), ``measured`` (``sqrt(DEFF)``),
                   ``effective_clusters`` (G*, Carter, Schnepel & Steigerwald 2017);
                   medians ``m_median``, ``rho_median``, ``shared_icc_median``,
                   ``effective_clusters_median``;
                   ``predicted_median`` and ``measured_median`` over the same
                   ``check_models`` models (those where both are defined)
summary            ``main`` (the clustering used for the effective n: prompt+judge if
                   identified, else the first identified one), ``effective_n_median``,
                   ``prompts_median``, ``effective_n_per_prompt_median``
notes              every warning as a coded note: ``code``, ``severity``, ``axis``,
                   ``models``, ``text`` (docs/notes.md)
warnings           their texts
=================  ====================================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from winrate import estimators
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.estimators.cells import keeps_rows
from winrate.inference.covariance import AxisSummary, negligible_se
from winrate.inference.plan import clustering_problem
from winrate.inference.results import IntervalBasis, IntervalResults
from winrate.io.datasets import SCORE_DATASETS, read_dataset, read_scores
from winrate.io.logs import ComparisonLog, as_log
from winrate.notes import Note, Notes, as_note, clustering_not_identified, gathered
from winrate.report.leaderboard import defined_median, json_safe
from winrate.report.tables import comment_block, render_table
from winrate.report.text import Summary, text_block
from winrate.settings import Variance, parse_clustering
from winrate.variance import diagnostics
from winrate.variance.sandwich import DEFAULT_CORRECTION

SCHEMA = "winrate.eda/1"
DEFAULT_CLUSTERINGS = ("prompt", "judge", "prompt+judge")
#: Clusterings reported per dataset. MMLU-Pro: one judge (not identified, reported as
#: such); question within src subject within category, nested, so clustered one at a time.
DATASET_CLUSTERINGS = {
    "mmlu_pro": ("prompt", "src", "category", "judge", "prompt+judge"),
    "llmfao": DEFAULT_CLUSTERINGS,
    "pandalm": DEFAULT_CLUSTERINGS,
    "chatbot_arena": DEFAULT_CLUSTERINGS,
}


@dataclass(frozen=True, eq=False)
class ClusteringResult:
    """Per-model SEs of one clustering, or why it cannot be estimated; ``cov`` is the
    clustered covariance of the scores (None when not identified)."""

    name: str
    axes: tuple[str, ...]
    identified: bool
    reason: str | None
    n_clusters: tuple[int, ...]
    se: np.ndarray
    deff: np.ndarray
    effective_n: np.ndarray
    cov: np.ndarray | None = field(default=None, repr=False)

    @property
    def inflation(self) -> np.ndarray:
        """``SE / SE_naive = sqrt(DEFF)``."""
        return np.sqrt(self.deff)


@dataclass(frozen=True, eq=False)
class AxisCheck:
    """One identified axis: pair-level ICC, m_a, implied and direct rho, Kish check."""

    name: str
    n_clusters: int
    pair_icc: float
    m: np.ndarray
    rho: np.ndarray
    shared_icc: np.ndarray
    measured: np.ndarray
    effective_clusters: np.ndarray

    @property
    def predicted(self) -> np.ndarray:
        """Kish's ``sqrt(1 + (m_a - 1) shared_icc_a)`` (module doc); exactly 1 where
        ``m_a = 1`` (one comparison per cluster shares nothing, whatever the ICC, which is
        then undefined)."""
        kish = np.sqrt(np.clip(1.0 + (self.m - 1.0) * self.shared_icc, 0.0, None))
        return np.where(self.m == 1.0, 1.0, kish)

    def check_medians(self) -> tuple[float, float, int]:
        """Medians of ``predicted`` and ``measured`` over the same models, those where both
        are defined (like with like), and the number of those models."""
        return _common_medians(self.predicted, self.measured)


@dataclass(frozen=True, eq=False)
class EdaReport(IntervalResults):
    """Everything :func:`format_report` prints and :func:`to_dict` writes.

    ``to_frame()`` is the per-model table, ``summary()`` the printed report, ``conf_int(
    alpha, joint, clustering=None, reference="normal")`` the intervals under one
    clustering (default: the main one, ``main``), rows in the order of :meth:`to_frame`,
    from the report's CR1 sandwich
    (:meth:`winrate.inference.results.IntervalResults.conf_int`): ``score -/+ q se`` with
    ``q`` the normal quantile (``reference="normal"``,
    the report's) or that of t(G - 1), G the smallest cluster count of the clustering
    (``"t"``), or with ``joint=True`` the simultaneous ``score -/+ c se`` from that
    clustering's covariance (seed 0); on the logit scale for win probabilities. These
    describe the exploratory SEs; for inference use :func:`winrate.analyze`, whose default
    method is chosen from the design (CR2 with per-model t on thin designs). ``options``
    are the estimator's settled options. ``==`` is identity.
    """

    dataset: str | None
    settings: dict
    structure: dict
    models: np.ndarray
    n: np.ndarray
    prompts: np.ndarray
    score: np.ndarray
    se_naive: np.ndarray
    clusterings: dict[str, ClusteringResult]
    axes: dict[str, AxisCheck]
    main: str | None
    notes: Notes = field(default_factory=Notes)
    options: dict = field(default_factory=dict, repr=False)

    @property
    def effective_n(self) -> np.ndarray:
        """``n_a / DEFF_a`` of the main clustering (NaN if nothing is identified)."""
        if self.main is None:
            return np.full(self.n.shape, np.nan)
        return self.clusterings[self.main].effective_n

    def to_frame(self) -> pd.DataFrame:
        """Per model, indexed by model, best score first: n, prompts, score, se_naive, the
        SE and inflation under every identified clustering, G* per axis and eff_n
        (:func:`model_table`,
        on the scale of ``score``: win probabilities in [0, 1], or Elo points)."""
        return model_table(self, scale=1.0).set_index("model")

    def interval_basis(self, joint: bool, clustering: str | None = None,
                       reference: str = "normal") -> IntervalBasis:
        """The scores, SEs and covariance under ``clustering`` (class doc)."""
        name = clustering or self.main
        result = self.clusterings.get(name) if name else None
        if result is None or not result.identified:
            identified = [r.name for r in self.clusterings.values() if r.identified]
            raise WinrateInputError(f"clustering {name!r} has no SEs; identified: {identified}")
        if reference not in ("normal", "t"):
            raise WinrateInputError(f"reference must be 'normal' or 't', got {reference!r}")
        df = min(result.n_clusters) - 1 if reference == "t" else None
        return IntervalBasis(self.models, self.score, result.se, _estimator(self).scale,
                             result.cov, df, self.to_frame().index)

    def summary(self) -> Summary:
        """The report as ``winrate eda`` prints it, statsmodels style, warnings numbered."""
        return text_block("Exploratory report", [format_structure(self), format_table(self),
                                                 format_summary(self)], self.notes)

    def __repr__(self) -> str:
        return (f"EdaReport(dataset={self.dataset!r}, models={len(self.models)}, "
                f"comparisons={self.structure['n_comparisons']:g}, "
                f"clusterings={list(self.clusterings)}, main={self.main!r})")

    def to_html(self, path=None, title: str | None = None) -> str:
        """The report as one self-contained web page (:mod:`winrate.report.html_page`), also
        written to ``path`` when given."""
        from winrate.report.html_page import publish

        return publish(to_dict(self), path, title)

    def _repr_html_(self) -> str:
        from winrate.report.html_page import notebook_frame

        return notebook_frame(self.to_html())


# --------------------------------------------------------------------------- loading


# --------------------------------------------------------------------------- checks


def nested_axes(log: ComparisonLog) -> list[tuple[str, str]]:
    """Pairs ``(inner, outer)``: every cluster of ``inner`` lies inside one of ``outer``.

    Axes with a single cluster are left out (everything is trivially nested in them).
    """
    names = [n for n, a in log.axes.items() if a.n_clusters > 1]
    out = []
    for inner in names:
        for outer in names:
            a, b = log.axes[inner], log.axes[outer]
            if inner == outer or a.n_clusters < b.n_clusters:
                continue
            joint = pd.unique(a.codes.astype(np.int64) * b.n_clusters + b.codes).size
            if joint == a.n_clusters and (a.n_clusters > b.n_clusters or inner < outer):
                out.append((inner, outer))
    return out


@dataclass(frozen=True)
class _ByModel:
    """Each comparison twice, once per model, sorted by model: the layout of
    :func:`shared_response_icc`. ``block[k]:block[k+1]`` are model k's entries."""

    row: np.ndarray
    value: np.ndarray
    weight: np.ndarray | None
    block: np.ndarray

    @classmethod
    def of(cls, log: ComparisonLog, analysis: LeaderboardAnalysis) -> _ByModel:
        board = analysis.leaderboard
        low_high = board.pairs[board.pair].astype(np.int16 if log.n_models < 2**15 else int)
        model = np.concatenate([low_high[:, 0], low_high[:, 1]])
        order = np.argsort(model, kind="stable")  # radix sort for int16 codes
        row = order % log.n_rows
        sign = np.where(order < log.n_rows, 1.0, -1.0)
        weight = None if log.frequency is None else log.frequency[row]
        return cls(row, sign * board.centered[row], weight,
                   np.searchsorted(model[order], np.arange(log.n_models + 1)))


def shared_response_icc(log: ComparisonLog, analysis: LeaderboardAnalysis, codes: np.ndarray,
                        layout: _ByModel | None = None) -> np.ndarray:
    """Per model: ANOVA ICC by cluster of its own comparisons, oriented for it (module doc).

    Each comparison enters twice, once per model (``+centred`` for the lower-coded model,
    ``-centred`` for the other); the ICC of each model's block is
    :func:`winrate.variance.diagnostics.anova_icc` (frequency weighted). ``layout`` reuses the
    sorted layout across axes.
    """
    layout = layout or _ByModel.of(log, analysis)
    cluster = codes[layout.row]
    w = layout.weight
    return np.array([
        diagnostics.anova_icc(layout.value[lo:hi], cluster[lo:hi],
                              None if w is None else w[lo:hi])
        for lo, hi in zip(layout.block[:-1], layout.block[1:], strict=True)  # per model
    ])


# --------------------------------------------------------------------------- the report


def _analysis(log: ComparisonLog, axes: tuple[str, ...], correction, board):
    """The sandwich analysis of one clustering; its notes stay on it (the report's)."""
    with gathered():
        return analyze(log, cluster=axes or "none", board=board,
                       variance=Variance("sandwich", correction))


def _fit(log: ComparisonLog, estimator: dict):
    """The fit of the report's estimator (``model`` and its options: an option it does not
    have is an error naming the estimators that have it) and the notes it gave."""
    options = dict(estimator)
    model = options.pop("model", estimators.DEFAULT_ESTIMATOR)
    with gathered() as found:
        return estimators.fit(log, model, **options), found


@dataclass(frozen=True)
class _Run:
    """What the report keeps of one analysis; its influence matrix is let go."""

    se: np.ndarray
    deff: np.ndarray
    cov: np.ndarray
    summaries: dict[str, AxisSummary]
    notes: list


@dataclass(frozen=True)
class _Base:
    """Numbers that do not depend on the clustering, from the first analysis."""

    score: np.ndarray
    se_naive: np.ndarray
    n: np.ndarray
    n_pairs: int
    models: np.ndarray
    codes: np.ndarray
    floor: np.ndarray
    fixed: np.ndarray
    influence: object = None

    @classmethod
    def of(cls, run: LeaderboardAnalysis) -> _Base:
        """``floor``: the small-sample floor of single-outcome pairs that ``analyze`` adds to
        every covariance of the win rate (:mod:`winrate.estimators.small_sample`), added
        here to the one-way terms a multiway analysis reports too; zero for other estimators.
        ``fixed``: the mask of the models whose score is fixed by definition (an anchor:
        :meth:`winrate.estimators.base.Estimator.fixed_models`), which have no variance."""
        board = run.leaderboard
        floor = run.small_sample_floor
        fixed = estimators.of(board).fixed_models(board)
        return cls(run.scores, run.se_naive, board.comparisons_per_model, len(board.pairs),
                   board.models, board.codes, floor, fixed,
                   board.influence)


def _run_analyses(log, specs, correction, estimator: dict):
    """One analysis per identified clustering, multiway first, all of one fit; a single
    axis already summarised by a multiway analysis (its one-way term) is not analysed
    again. Returns ``(runs, checks, base, the fit's notes)``."""
    board, fit_notes = _fit(log, estimator)
    runs, checks, base, layout = {}, {}, None, None
    singles = {spec[0] for spec in specs if len(spec) == 1}
    identified = [s for s in specs if clustering_problem(log, s) is None]
    for spec in sorted(identified, key=len, reverse=True):
        if len(spec) == 1 and any(spec[0] in r.summaries for r in runs.values()):
            continue
        run = _analysis(log, spec, correction, board)
        base = base or _Base.of(run)
        for name in singles.intersection(run.axes).difference(checks):
            if keeps_rows(board.influence):  # a table has no rows to lay out
                layout = layout or _ByModel.of(log, run)
            checks[name] = _axis_check(log, run, name, layout)
        runs[spec] = _Run(run.se, run.deff, run.cov, dict(run.axes), run.notes)
    if base is None:
        run = _analysis(log, (), correction, board)
        base, runs[()] = _Base.of(run), _Run(run.se, run.deff, run.cov, {}, run.notes)
    return runs, checks, base, fit_notes


def _clustering_result(log, spec, runs: dict[tuple, _Run], base: _Base) -> ClusteringResult:
    name = "+".join(spec)
    reason = clustering_problem(log, spec)
    n_a = base.n
    nan = np.full(n_a.shape, np.nan)
    if reason is not None:
        counts = tuple(log.axes[a].n_clusters if a in log.axes else 0 for a in spec)
        return ClusteringResult(name, spec, False, reason, counts, nan, nan, nan)
    if spec in runs:
        se, deff, cov = runs[spec].se, runs[spec].deff, runs[spec].cov
    else:
        axis = next(r.summaries[spec[0]] for r in runs.values() if spec[0] in r.summaries)
        cov = axis.cov + base.floor + axis.unidentified
        deff = diagnostics.design_effect(cov, np.diag(base.se_naive**2))
        se = np.sqrt(np.diag(cov))
        # as analyze blanks them (not_estimable_models): unidentified or zero variance,
        # except a score fixed by definition (an anchor's rating)
        blank = np.isnan(axis.se) | (negligible_se(se, base.score) & ~base.fixed)
        se, deff = np.where(blank, np.nan, se), np.where(blank, np.nan, deff)
    counts = tuple(log.axes[a].n_clusters for a in spec)
    return ClusteringResult(name, spec, True, None, counts, se, deff,
                            diagnostics.effective_n(n_a, deff), cov)


def _axis_check(log, run: LeaderboardAnalysis, name: str,
                layout: _ByModel | None) -> AxisCheck:
    summary = run.axes[name]
    board, codes = run.leaderboard, log.axes[name].codes
    if not keeps_rows(board.influence):  # a score table: from its per-question sums
        shared = diagnostics.cells_shared_icc(board.influence, board.pairs, codes)
    else:
        shared = shared_response_icc(log, run, codes, layout)
    return AxisCheck(
        name=name, n_clusters=summary.n_clusters, pair_icc=summary.icc, m=summary.m,
        rho=summary.rho, shared_icc=shared[board.codes],
        measured=np.sqrt(summary.deff), effective_clusters=summary.effective_clusters,
    )


def _prompt_m(log: ComparisonLog, axes: dict[str, AxisCheck], base: _Base) -> np.ndarray:
    """m_a on the prompt axis (the reported models of ``base``): from its summary if the
    prompt axis was analysed, else from the fit's comparison counts."""
    if "prompt" in axes:
        return axes["prompt"].m
    if "prompt" not in log.axes:
        return np.full(base.codes.shape, np.nan)
    n_all = np.zeros(log.n_models)
    n_all[base.codes] = base.n
    codes = log.axes["prompt"].codes
    if not keeps_rows(base.influence):  # a score table: from its per-question sums
        return diagnostics.cells_per_cluster(base.influence, codes, n_all)[base.codes]
    return diagnostics.comparisons_per_cluster(log.model_a, log.model_b, codes,
                                               n_all)[base.codes]


def _structure(log: ComparisonLog, base: _Base, m_prompt: np.ndarray) -> dict:
    k = log.n_models
    prompts = log.axes.get("prompt")
    return {
        "n_comparisons": log.n_comparisons, "n_rows": log.n_rows, "n_models": k,
        "n_pairs": base.n_pairs, "n_pairs_possible": k * (k - 1) // 2,
        "n_prompts": prompts.n_clusters if prompts is not None else None,
        "n_judges": log.axes["judge"].n_clusters if "judge" in log.axes else None,
        "tie_share": log.tie_share,
        "m_prompt": None if prompts is None else {
            "median": defined_median(m_prompt), "min": _range(m_prompt)[0],
            "max": _range(m_prompt)[1]},
        "axes": {name: {"n_clusters": a.n_clusters,
                        "mean_cluster_size": log.n_comparisons / a.n_clusters}
                 for name, a in log.axes.items()},
        "nested": [list(p) for p in nested_axes(log)],
    }


def _notes(results: dict[str, ClusteringResult], runs) -> list[Note]:
    found = [clustering_not_identified(r.name, r.reason)
             for r in results.values() if not r.identified]
    for run in runs.values():
        found.extend(note for note in run.notes if note not in found)
    return found


def explore(log, cluster=DEFAULT_CLUSTERINGS, *,
            correction: str | None = DEFAULT_CORRECTION, dataset: str | None = None,
            notes: tuple[str, ...] = (), **estimator) -> EdaReport:
    """The exploratory report of ``log`` for the named clusterings (module doc).

    ``log``: a :class:`ComparisonLog`, DataFrame or file path (:func:`winrate.io.logs.as_log`).
    ``cluster`` names the clusterings to report: one spec or several, each such as
    ``"prompt"``, ``"judge"``, ``"prompt+judge"`` or any extra axis of the log; unidentified
    ones are reported with their reason, not computed.
    ``notes`` (e.g. the loader's warnings) head the report's warnings. ``estimator``:
    the estimator and its options (``model="bt"``, ``baseline=...``, the win rate's
    ``weights``; see :func:`winrate.estimators.fit`); scores and SEs are then on its
    scale.
    """
    log = _in_memory(log)
    given = [cluster] if isinstance(cluster, str) else list(cluster)
    specs = list(dict.fromkeys(parse_clustering(c) for c in given))
    if not specs or () in specs:
        raise WinrateInputError(f"each clustering must name axes, got {given}")
    correction = correction or DEFAULT_CORRECTION
    runs, checks, base, fit_notes = _run_analyses(log, specs, correction, estimator)
    model = estimators.get(estimator.get("model", estimators.DEFAULT_ESTIMATOR))
    options = estimators.settle(model, {k: v for k, v in estimator.items() if k != "model"})
    n_a = base.n
    results = {"+".join(s): _clustering_result(log, s, runs, base) for s in specs}
    axes = {s[0]: checks[s[0]] for s in specs if s[0] in checks and len(s) == 1}
    identified = [name for name, r in results.items() if r.identified]
    main = "prompt+judge" if "prompt+judge" in identified else next(iter(identified), None)
    m_prompt = _prompt_m(log, axes, base)
    prompts = np.divide(n_a, m_prompt, out=np.full(n_a.shape, np.nan), where=m_prompt > 0)
    return EdaReport(
        dataset=dataset,
        settings={**model.settings(options), "correction": correction,
                  "clusterings": ["+".join(s) for s in specs],
                  **({"model": model.name} if "model" in estimator else {})},
        structure=_structure(log, base, m_prompt), models=base.models, n=n_a, prompts=prompts,
        score=base.score, se_naive=base.se_naive, clusterings=results, axes=axes,
        main=main, notes=Notes(map(as_note, [*notes, *fit_notes, *_notes(results, runs)])),
        options=options,
    )


def _in_memory(log) -> ComparisonLog:
    """``log`` as a log in memory: a scan (:func:`winrate.io.scan.scan`) is read when it
    fits its budget; the report's nesting and per-model checks need the rows, so a scan
    analysed on an engine is refused with what gives its diagnostics there."""
    from winrate.io.scan import Scan

    if not isinstance(log, Scan):
        return as_log(log)
    if log.mode != "memory":
        raise WinrateInputError(
            f"the exploratory report reads the rows in memory, and this log is analysed on "
            f"{log.mode} ({log.reason}): run the leaderboard analysis on the engine for each "
            "clustering (it reports the DEFF, ICC, effective clusters and dominant cluster "
            "per axis), or raise the memory budget")
    return log.to_log()


def explore_dataset(name: str, models=None, cluster=None, **kwargs) -> EdaReport:
    """:func:`explore` of a bundled dataset with its default clusterings.

    A per-question eval (:data:`winrate.io.datasets.SCORE_DATASETS`, MMLU-Pro) is read as
    its score table, whose analysis equals that of its pairwise log without building it
    (:mod:`winrate.io.scores`), when the estimator and correction allow (the win rate, CR0
    or CR1); otherwise as the pairwise log. The loader's warnings (e.g. unparseable
    verdicts dropped) join the report's warnings.
    """
    from winrate.progress import stage

    with gathered() as loaded, stage(f"reading {name}"):
        if _per_question(name, kwargs):
            log = read_scores(name, models=models, progress=False)
        else:
            log = read_dataset(name, models=models, progress=False)
    specs = cluster or DATASET_CLUSTERINGS.get(name, DEFAULT_CLUSTERINGS)
    return explore(log, specs, dataset=name, notes=tuple(loaded), **kwargs)


def _per_question(name: str, options: dict) -> bool:
    """Whether dataset ``name`` is read as a score table for these :func:`explore` options:
    a per-question eval, with an estimator that fits score tables with its options
    (:meth:`winrate.estimators.base.Estimator.fits_score_tables`) and a correction that
    cell totals give (:mod:`winrate.estimators.cells`)."""
    estimator = estimators.get(options.get("model") or estimators.DEFAULT_ESTIMATOR)
    given = {key: value for key, value in options.items() if key in estimator.option_names}
    return (name in SCORE_DATASETS and estimator.fits_score_tables(estimator.settle(given))
            and options.get("correction") != "cr2")


# --------------------------------------------------------------------------- output


def _common_medians(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """Medians of ``x`` and ``y`` over the entries where both are defined (like with like)
    and the number of those entries."""
    both = np.isfinite(x) & np.isfinite(y)
    return defined_median(x[both]), defined_median(y[both]), int(both.sum())


def _range(x) -> tuple[float, float]:
    x = np.asarray(x, float)
    ok = np.isfinite(x)
    return (float(x[ok].min()), float(x[ok].max())) if ok.any() else (np.nan, np.nan)


def to_dict(report: EdaReport) -> dict:
    """The JSON document (schema ``winrate.eda/1`` in the module docstring)."""
    clusterings = {}
    for name, r in report.clusterings.items():
        low, high = _range(r.inflation)
        clusterings[name] = {
            "axes": list(r.axes), "identified": r.identified, "reason": r.reason,
            "n_clusters": list(r.n_clusters), "se": r.se, "inflation": r.inflation,
            "deff": r.deff, "effective_n": r.effective_n,
            "inflation_median": defined_median(r.inflation), "inflation_min": low,
            "inflation_max": high,
        }
    axes = {}
    for name, a in report.axes.items():
        per_model = {"m": a.m, "rho": a.rho, "shared_icc": a.shared_icc,
                     "predicted": a.predicted, "measured": a.measured,
                     "effective_clusters": a.effective_clusters}
        predicted, measured, n_both = a.check_medians()
        axes[name] = {"n_clusters": a.n_clusters, "pair_icc": a.pair_icc, **per_model,
                      **{f"{k}_median": defined_median(per_model[k])
                         for k in ("m", "rho", "shared_icc", "effective_clusters")},
                      "predicted_median": predicted, "measured_median": measured,
                      "check_models": n_both}
    eff = report.effective_n
    doc = {
        "schema": SCHEMA, "dataset": report.dataset, "settings": report.settings,
        "scale": _estimator(report).scale.to_dict(),
        "estimator_description": _estimator(report).describe(report.options),
        "structure": report.structure, "models": [str(m) for m in report.models],
        "n": report.n, "prompts": report.prompts, "score": report.score,
        "se_naive": report.se_naive, "clusterings": clusterings, "axes": axes,
        "summary": {"main": report.main, "effective_n_median": defined_median(eff),
                    "prompts_median": defined_median(report.prompts),
                    "effective_n_per_prompt_median": defined_median(eff / report.prompts)},
        "notes": report.notes.to_list(), "warnings": [str(w) for w in report.notes],
    }
    return json_safe(doc)


def write_json(report: EdaReport, path) -> None:
    """The JSON report (:func:`to_dict`), written whole or not at all."""
    from winrate.report.output import write_text

    write_text(path, json.dumps(to_dict(report), indent=2) + "\n")


def _fmt(x: float, spec: str = ".2f") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, spec)


def format_structure(report: EdaReport) -> str:
    s = report.structure
    title = f"Dataset {report.dataset}" if report.dataset else "Comparison log"
    lines = [
        f"{title}: {s['n_comparisons']:,.0f} comparisons in {s['n_rows']:,} rows, "
        f"{s['n_models']} models, {s['n_pairs']:,} of {s['n_pairs_possible']:,} pairs compared",
        f"  prompts {_fmt(s['n_prompts'], ',')}, judges {_fmt(s['n_judges'], ',')}, "
        f"tie share {100 * s['tie_share']:.1f}%",
    ]
    if s["m_prompt"]:
        m = s["m_prompt"]
        lines.append(f"  comparisons per prompt per model: median {m['median']:.1f} "
                     f"[{m['min']:.1f}, {m['max']:.1f}]")
    for name, a in s["axes"].items():
        plural = "s" if a["n_clusters"] != 1 else ""
        lines.append(f"  axis {name}: {a['n_clusters']:,} cluster{plural}, mean size "
                     f"{a['mean_cluster_size']:,.1f}")
    for inner, outer in s["nested"]:
        lines.append(f"  nested: every {inner} lies in one {outer}, so clustering by "
                     f"{inner}+{outer} is clustering by {outer}")
    return "\n".join(lines)


def _unit(report: EdaReport) -> tuple[float, str]:
    """Printed scale, as the estimator's :class:`winrate.estimators.base.Scale` declares it
    (win rates in percent, Bradley-Terry ratings in Elo points)."""
    estimator = _estimator(report)
    unit = estimator.scale
    what = unit.noun(estimator.title) if unit.titled else "score"
    return unit.factor, f"{what} and SEs in {unit.unit_name}"


def _estimator(report: EdaReport):
    return estimators.get(report.settings.get("model", estimators.DEFAULT_ESTIMATOR))


def model_table(report: EdaReport, scale: float | None = None) -> pd.DataFrame:
    """Per model (best score first): score and SEs in percent (Elo points for
    Bradley-Terry; times ``scale`` when given), inflations, the effective number of
    clusters G* of each single axis (:func:`winrate.variance.diagnostics.effective_clusters`) and
    the effective n."""
    factor = _unit(report)[0] if scale is None else scale
    table = {"model": [str(m) for m in report.models], "n": report.n,
             "prompts": report.prompts, "score": factor * report.score,
             "se_naive": factor * report.se_naive}
    shown = [r for r in report.clusterings.values() if r.identified]
    table.update({f"se_{r.name}": factor * r.se for r in shown})
    table.update({f"infl_{r.name}": r.inflation for r in shown})
    table.update({f"gstar_{name}": check.effective_clusters for name, check in report.axes.items()})
    table["eff_n"] = report.effective_n
    frame = pd.DataFrame(table).sort_values("score", ascending=False, kind="stable")
    return frame.reset_index(drop=True)


def model_cells(report: EdaReport) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, rows (best score first) and minimum text widths of the per-model table."""
    frame = model_table(report)
    cols = [c for c in frame.columns if c != "model"]
    spec = {"n": ",.0f", "prompts": ",.0f", "eff_n": ",.0f"}
    header = ["model", *(c.replace("se_", "SE ").replace("infl_", "x ").replace("gstar_", "G* ")
                         for c in cols)]
    rows = []
    for row in frame.itertuples(index=False):  # one line per model
        values = dict(zip(frame.columns, row, strict=True))
        rows.append([values["model"], *(_fmt(values[c], spec.get(c, ",.1f" if c.startswith(
            "gstar_") else ".2f")) for c in cols)])
    widths = [5, *(7 if c.startswith(("se", "score")) else 9 for c in cols)]
    return header, rows, widths


def _table_note(report: EdaReport) -> str:
    return (f"{_unit(report)[1]}; 'x AXIS' = SE inflation SE_AXIS / SE_naive; 'G* AXIS' = "
            "effective number of AXIS clusters behind the model's score; "
            + (f"eff_n = n / DEFF of {report.main}" if report.main else
               "eff_n undefined: no clustering is identified"))


def format_table(report: EdaReport, table_format: str = "text") -> str:
    """The per-model table (:func:`model_cells`) in ``table_format``
    (:func:`winrate.report.tables.render_table`) and the line that explains its columns (a comment
    of the format in Markdown and LaTeX)."""
    header, rows, widths = model_cells(report)
    table = render_table(header, rows, table_format, "l" + "r" * (len(header) - 1), widths)
    if table_format == "text":
        return table + "\n" + _table_note(report)
    return table + "\n\n" + comment_block(_table_note(report), table_format)


def format_summary(report: EdaReport) -> str:
    lines = ["Summary"]
    for r in report.clusterings.values():
        if not r.identified:
            lines.append(f"  {r.name}: not identified")
            continue
        low, high = _range(r.inflation)
        clusters = " x ".join(f"{g:,}" for g in r.n_clusters)
        lines.append(f"  {r.name} ({clusters} clusters): SE inflation median "
                     f"{_fmt(defined_median(r.inflation))} [{_fmt(low)}, {_fmt(high)}]")
    for a in report.axes.values():
        lines.append(
            f"  by {a.name}: pair-level ICC {_fmt(a.pair_icc, '.4f')}; own-comparison "
            f"(shared-response) ICC median {_fmt(defined_median(a.shared_icc), '.3f')}; "
            f"implied rho median {_fmt(defined_median(a.rho), '.3f')}; m median "
            f"{_fmt(defined_median(a.m), ',.1f')}; effective clusters G* median "
            f"{_fmt(defined_median(a.effective_clusters), ',.1f')} (min "
            f"{_fmt(_range(a.effective_clusters)[0], ',.1f')})")
        predicted, measured, n_both = a.check_medians()
        lines.append(
            f"    check over the {n_both} of {a.m.size} models where both are defined: "
            f"sqrt(1 + (m - 1) ICC_own) median {_fmt(predicted)} vs measured inflation "
            f"median {_fmt(measured)}")
    if report.main is not None:
        lines.append(_effective_n_line(report))
    return "\n".join(lines)


def _effective_n_line(report: EdaReport) -> str:
    """Effective n against prompts per model, both medians over the same models."""
    eff, prompts = report.effective_n, report.prompts
    tail = f"; comparisons per model median {_fmt(defined_median(report.n), ',.0f')}"
    if not np.isfinite(prompts).any():
        return f"  effective n ({report.main}) median {_fmt(defined_median(eff), ',.0f')}{tail}"
    eff_median, prompts_median, n_both = _common_medians(eff, prompts)
    over = "" if n_both == eff.size else f" over the {n_both} models where both are defined"
    return (f"  effective n ({report.main}) median {_fmt(eff_median, ',.0f')} vs prompts "
            f"per model median {_fmt(prompts_median, ',.0f')}{over} (ratio "
            f"{_fmt(defined_median(eff / prompts))}){tail}")


def format_report(report: EdaReport, table_format: str = "text") -> str:
    """Structure, per-model table, summary and warnings, as printed by ``winrate eda``. For
    Markdown or LaTeX the table is in that format and the text around it a comment of it
    (:func:`winrate.report.tables.comment_block`), so the output pastes as the table alone."""
    after = [format_summary(report)]
    if report.notes:
        after.append("Warnings\n" + "\n".join(f"  - ({w.code}) {w}" for w in report.notes))
    table = format_table(report, table_format)
    if table_format == "text":
        return "\n\n".join([format_structure(report), table, *after])
    return "\n\n".join([comment_block(format_structure(report), table_format), table,
                         comment_block("\n\n".join(after), table_format)])
