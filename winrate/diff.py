"""What changed since the last release: :func:`diff_releases` of two comparison logs.

A leaderboard re-released after adding comparisons (and models) shares most of its rows
with the old one, so the old and new scores are strongly correlated and neither a naive nor
a per-release interval says whether a change is real. Each release's estimate is
linearised as ``S - S* ~ B sum_r g_r`` over its rows (:mod:`winrate.variance.sandwich`);
stacked, ``(S_old, S_new)`` has the influence ``(B_old g_r^old, B_new g_r^new)`` on every
row of the union, with ``g_r^old = 0`` for a row only in the new release and the other
way round. Summing the stacked rows by the union's clusters gives their joint multiway
covariance (:func:`winrate.variance.cluster_sums.clustered`, Cameron, Gelbach & Miller
2011, eq. 2.11; each release's block with its own CR1 factor, :func:`_release_cr1`), and
the change ``D = S_new - S_old`` of the models in both releases has

    Var(D) = V_new + V_old - C - C',    C = Cov(S_new, S_old)

(``C`` from the rows and clusters the releases share; with no shared cluster ``C = 0``
and ``Var(D)`` is the sum). Rows are matched by content (prompt, judge, models, outcome,
frequency and their order of occurrence), so an extended log and its original share the
original's rows. On the Elo scale both releases are first re-centred on the models they
share (mean 0 over them), so that a new model entering the mean 1000 does not shift every
change; a bounded scale (win probabilities) is compared as it is.

The changes get marginal and simultaneous intervals (max-|T|,
:func:`winrate.inference.joint.simultaneous_intervals`) on a t reference whose degrees of
freedom are Satterthwaite's for the change's variance (:func:`satterthwaite_df`): the judges
the releases share cancel in the change, but the estimate of their part still rests on
their few cluster sums, which a normal reference ignores (with 12 judges the simultaneous
intervals covered 92% where nothing changed, ``scripts/diff_study.py``). A rank change
between two models whose order swapped is *real* when the simultaneous interval of the
change of their gap, ``D_i - D_j`` over the swapped pairs, excludes 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from winrate import notes
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.inference.joint import simultaneous_intervals, wald_intervals
from winrate.inference.plan import default_clustering
from winrate.io.logs import ClusterAxis, ComparisonLog, factorize_groups, read_comparisons
from winrate.notes import Notes
from winrate.report.builders import (
    frame_table,
    markdown_document,
    page_document,
    publish_page,
)
from winrate.report.leaderboard import json_safe
from winrate.report.text import Summary, text_block
from winrate.settings import Variance, parse_clustering
from winrate.variance.cluster_sums import clustered, influence_sums
from winrate.variance.sandwich import combine_terms, intersect_codes, small_sample_factor

#: The variance of both fits: the multiway sandwich with CR1, as the stacked one is.
SANDWICH = Variance("sandwich", "cr1")


@dataclass(frozen=True, eq=False)
class ReleaseDiff:
    """:func:`diff_releases`'s result, one row per model in both releases (``models``):
    ``old`` and ``new`` scores (re-centred on the shared models on the Elo scale),
    ``change = new - old`` with its ``cov``, marginal (``low``, ``high``) and simultaneous
    (``sim_low``, ``sim_high``) intervals on t references of ``df`` (Satterthwaite's, per
    change; the simultaneous ones at the smallest), the ranks among the shared models in each
    release and the ``rank_changes`` (swapped pairs with the change of their gap and
    whether it is real). ``old_fit``, ``new_fit``: the two analyses; ``shared_rows``,
    ``shared_clusters`` what the releases have in common."""

    models: np.ndarray
    old: np.ndarray
    new: np.ndarray
    change: np.ndarray
    cov: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    sim_low: np.ndarray
    sim_high: np.ndarray
    rank_old: np.ndarray
    rank_new: np.ndarray
    rank_changes: pd.DataFrame
    old_fit: LeaderboardAnalysis
    new_fit: LeaderboardAnalysis
    shared_rows: int
    shared_clusters: dict[str, int]
    clustering: tuple[str, ...]
    alpha: float
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    notes: Notes = field(default_factory=Notes)
    df: np.ndarray | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per shared model, indexed by model, best new score first."""
        frame = pd.DataFrame({
            "old": self.old, "new": self.new, "change": self.change, "se": self.se,
            "ci_low": self.low, "ci_high": self.high, "sim_low": self.sim_low,
            "sim_high": self.sim_high, "rank_old": self.rank_old, "rank_new": self.rank_new,
            "real": (self.sim_low > 0) | (self.sim_high < 0),
        }, index=pd.Index(self.models.astype(str), name="model"))
        return frame.sort_values("new", ascending=False, kind="stable")

    def to_dict(self) -> dict:
        """The JSON document: ``changes`` (one entry per shared model), ``rank_changes``,
        the added and removed models, what the releases share, settings and notes."""
        frame = self.to_frame().reset_index()
        if self.df is not None:
            frame["df"] = pd.Series(self.df, index=self.models.astype(str))[frame.model].values
        return json_safe({
            "changes": frame.to_dict(orient="records"),
            "rank_changes": self.rank_changes.to_dict(orient="records"),
            "added": list(self.added), "removed": list(self.removed),
            "shared_rows": self.shared_rows, "shared_clusters": self.shared_clusters,
            "rows": {"old": self.old_fit.n_rows, "new": self.new_fit.n_rows},
            "clustering": list(self.clustering) or ["none"], "alpha": self.alpha,
            "estimator": self.new_fit.settings["estimator"],
            "notes": [note.to_dict() for note in self.notes],
        })

    def page_document(self) -> dict:
        """The new release's leaderboard document with the diff under ``changes``: the web
        page's source (:func:`winrate.report.builders.page_document`)."""
        return page_document(self.new_fit, "changes", self.to_dict())

    def to_html(self, path=None, title: str | None = None) -> str:
        """The new release's board as a web page with a change column
        (:mod:`winrate.report.html_page`), also written to ``path`` when given."""
        return publish_page(self.new_fit, "changes", self.to_dict(), path, title)

    def summary(self) -> Summary:
        """The report as ``winrate diff`` prints it."""
        return text_block("Changes between releases", self._parts("text"), self.notes)

    def to_markdown(self) -> str:
        """The report as a Markdown section (pipe tables)."""
        return markdown_document("Changes between releases", self._parts("markdown"),
                                 self.notes)

    def _parts(self, fmt: str) -> list[str]:
        level = f"{100 * (1 - self.alpha):g}%"
        shared = ", ".join(f"{n} {name}s" for name, n in self.shared_clusters.items())
        head = (f"Old release: {self.old_fit.n_rows:,} rows; new: {self.new_fit.n_rows:,} rows; "
                f"shared: {self.shared_rows:,} rows" + (f", {shared}" if shared else "")
                + f"\nClustered by {'+'.join(self.clustering) or 'none'}; {level} marginal "
                  f"and simultaneous intervals of the changes{_df_text(self.df)}")
        if self.added or self.removed:
            head += (f"\nAdded: {', '.join(self.added) or 'none'}; removed: "
                     f"{', '.join(self.removed) or 'none'}")
        table = frame_table(_printed(self.to_frame(), self.new_fit.leaderboard.scale), fmt,
                            index=True)
        return [head, table, _rank_text(self.rank_changes)]

    def __str__(self) -> str:
        return str(self.summary())


def _printed(frame: pd.DataFrame, scale) -> pd.DataFrame:
    """The table as printed: scores on the scale's printed unit (``factor``, ``decimals``),
    ranks whole."""
    shown = frame.copy()
    numbers = ["old", "new", "change", "se", "ci_low", "ci_high", "sim_low", "sim_high"]
    shown[numbers] = (shown[numbers] * scale.factor).round(scale.decimals)
    shown[["rank_old", "rank_new"]] = shown[["rank_old", "rank_new"]].astype(int)
    return shown


def _df_text(df) -> str:
    """The reference of the intervals in words: t with Satterthwaite's df (their range)."""
    finite = np.asarray(df if df is not None else [], float)
    finite = finite[np.isfinite(finite)]
    if not finite.size:
        return " (normal reference)"
    low, high = finite.min(), finite.max()
    shown = f"{low:.1f}" if np.isclose(low, high) else f"{low:.1f}-{high:.1f}"
    return f" (t reference, Satterthwaite df {shown})"


def _rank_text(changes: pd.DataFrame) -> str:
    if changes.empty:
        return "No two shared models changed order."
    lines = ["Order swaps (the change of the gap, simultaneous over the swaps):"]
    lines += [f"  {r.above_now} over {r.below_now}: gap change {r.gap_change:+.4g} "
              f"[{r.sim_low:+.4g}, {r.sim_high:+.4g}] {'real' if r.real else 'not shown'}"
              for r in changes.itertuples()]
    return "\n".join(lines)


# ----------------------------------------------------------------- the diff


def diff_releases(old, new, *, cluster=None, model: str | None = "bt", alpha: float = 0.05,
                  seed: int = 0, progress: bool | None = None, **options) -> ReleaseDiff:
    """The change of every model's score and rank between two releases (module doc).

    ``old``, ``new``: comparison logs (:class:`ComparisonLog`, DataFrame or path; see
    :func:`split_since` for one log with a time column). ``cluster``: the axes (None: the
    default ``prompt+judge``, or those of the two the new log has). ``model`` and
    ``options``: the estimator (Bradley-Terry by default: its ratings stay comparable when
    models are added; the win rate depends on the opponents). ``seed``: the Monte-Carlo
    draws of the simultaneous critical values.
    """
    old, new = (log if isinstance(log, ComparisonLog) else read_comparisons(log)
                for log in (old, new))
    if not 0 < alpha < 1:
        raise WinrateInputError(f"alpha must be in (0, 1), got {alpha}")
    clustering, default_note = ((parse_clustering(cluster), None) if cluster is not None
                                else default_clustering(new))
    with notes.gathered() as found:
        fits = [analyze(log, clustering, model, variance=SANDWICH, alpha=alpha,
                        progress=progress, **options) for log in (old, new)]
    common = np.intersect1d(fits[0].models.astype(str), fits[1].models.astype(str))
    if len(common) < 2:
        raise WinrateInputError(f"the releases share {len(common)} model(s); a diff needs "
                                "at least 2")
    stacked = _stacked(fits, clustering)
    if clustering and not any(stacked.shared_clusters.values()):
        found.append(notes.releases_disjoint(list(clustering)))
    if stacked.shared_rows == fits[0].n_rows == fits[1].n_rows:
        raise WinrateInputError(f"the two releases hold the same {fits[0].n_rows:,} "
                                "comparisons: nothing changed")
    maps = [_map(fit, common) for fit in fits]
    change_map = np.hstack([-maps[0], maps[1]])
    cov = change_map @ stacked.cov @ change_map.T + sum(
        m @ _floor(fit) @ m.T for m, fit in zip(maps, fits, strict=True))
    cov = (cov + cov.T) / 2  # symmetric to rounding
    scores = [m @ np.nan_to_num(fit.scores) for m, fit in zip(maps, fits, strict=True)]
    result_notes = Notes(dict.fromkeys([*([default_note] if default_note else []), *found]))
    notes.give(result_notes)
    df = satterthwaite_df(change_map, stacked.terms)
    return _result(common, scores, cov, df, fits, stacked, clustering, alpha, seed, result_notes)


@dataclass(frozen=True)
class _Stacked:
    """The joint covariance of (old, new) scores, its signed inclusion-exclusion ``terms``
    (each with its number of clusters), and what the releases share."""

    cov: np.ndarray
    shared_rows: int
    shared_clusters: dict[str, int]
    terms: tuple[tuple[np.ndarray, int], ...] = ()


def _stacked(fits: list[LeaderboardAnalysis], clustering: tuple[str, ...]) -> _Stacked:
    """The joint covariance of (old scores, new scores) from the stacked influence on the
    union's rows, clustered by the union's clusters (module doc)."""
    logs = [fit.log for fit in fits]
    new_row = _matched_rows(*logs)
    n_new = logs[1].n_rows
    only_old = new_row < 0
    union_of_old = np.where(only_old, n_new + np.cumsum(only_old) - 1, new_row)
    n_union = n_new + int(only_old.sum())
    blocks = [_placed(fits[0], union_of_old, n_union),
              _placed(fits[1], np.arange(n_new), n_union)]
    influence = sp.hstack([b for b, _ in blocks], format="csr")
    bread = sp.block_diag([bread for _, bread in blocks]).toarray()
    groups, shared = [], {}
    for name in clustering:
        labels = np.concatenate([_labels(logs[1], name), _labels(logs[0], name)[only_old]])
        groups.append(factorize_groups(pd.Series(labels).astype(str).to_numpy())[0])
        shared[name] = len(np.intersect1d(_labels(logs[0], name).astype(str),
                                          _labels(logs[1], name).astype(str)))
    if not groups:  # unclustered: every comparison its own cluster
        groups = [np.arange(n_union)]
    in_old = np.zeros(n_union, bool)
    in_old[union_of_old] = True
    in_new = np.arange(n_union) < n_new
    cov, terms = _release_cr1(influence, bread, groups, (in_old, in_new),
                              [len(fit.models) for fit in fits])
    return _Stacked(cov, int((~only_old).sum()), shared, terms)


def _release_cr1(influence, bread, groups, rows, sizes):
    """The stacked multiway covariance with each release's own CR1 factor, and its terms
    (each signed, with its number of clusters: :func:`satterthwaite_df`).

    Each inclusion-exclusion term ``V_S`` is the CR0 sandwich of the stacked cluster sums
    (:func:`winrate.variance.cluster_sums.clustered`); its (release i, release j) block is
    scaled by ``sqrt(c_i c_j)``, ``c_i = G_i / (G_i - 1)`` with ``G_i`` the term's clusters
    that hold rows of release i. So each diagonal block is exactly that release's own CR1
    covariance (the factor of a cluster count the other release does not change), and a
    scaling ``diag(s) V_S diag(s)`` keeps each term positive semi-definite. The terms are
    combined and repaired as the library combines them
    (:func:`winrate.variance.meats.combine_terms`)."""
    found = clustered(influence_sums(influence, groups, bread=bread), "none",
                      designs=False).covariance
    n_range = [int(g.max()) + 1 for g in groups]
    parts, terms = [], []
    for (dims, _, sign), term in zip(found.terms, found.term_covs, strict=True):
        codes, _ = intersect_codes([groups[d] for d in dims], [n_range[d] for d in dims])
        factors = [small_sample_factor(np.unique(codes[mine]).size, "cr1") for mine in rows]
        scale = np.sqrt(np.repeat(factors, sizes))
        parts.append((dims, sign, term * np.outer(scale, scale), None))
        terms.append((sign * parts[-1][2], int(np.unique(codes).size)))
    cov, min_eig, repaired = combine_terms(parts)
    if repaired:
        notes.emit(notes.not_psd("stacked covariance of two releases", min_eig))
    return cov, tuple(terms)


def satterthwaite_df(contrasts: np.ndarray, terms) -> np.ndarray:
    """Satterthwaite's degrees of freedom of each contrast's variance estimate.

    The variance of ``c' S`` is the sum over the inclusion-exclusion terms of the multiway
    sandwich, ``v = sum_S a_S`` with ``a_S = +/- c' V_S c``, each ``V_S`` a sum over its
    ``G_S`` clusters' outer products (``G_S - 1`` degrees of freedom). Matching the first two
    moments of ``v`` to a scaled chi-square (Satterthwaite 1946, "An approximate
    distribution of estimates of variance components", Biometrics Bulletin 2(6), eq. 3;
    the cluster-sum form of Cameron & Miller 2015, sec. VI.C) gives
    ``df = (sum_S a_S)^2 / sum_S a_S^2 / (G_S - 1)``; at least 1, infinite for a contrast
    with no estimated variance. A term of one cluster carries no information and is left
    out (its sum is the zero score of the whole fit)."""
    contrasts = np.atleast_2d(contrasts)
    kept = [(term, g) for term, g in terms if g > 1]
    if not kept:
        return np.full(len(contrasts), np.inf)
    parts = np.array([np.einsum("ij,jk,ik->i", contrasts, term, contrasts) for term, _ in kept])
    spread = (parts ** 2 / np.array([g - 1.0 for _, g in kept])[:, None]).sum(axis=0)
    df = np.full(len(contrasts), np.inf)
    np.divide(parts.sum(axis=0) ** 2, spread, out=df, where=spread > 0)
    return np.maximum(df, 1.0)


def _placed(fit: LeaderboardAnalysis, rows: np.ndarray, n_union: int):
    """The fit's influence rows placed at ``rows`` of the union, and its bread (the
    identity when the influence is the scores' own)."""
    board = fit.leaderboard
    influence = sp.csr_array(board.influence)
    select = sp.csr_array((np.ones(len(rows)), (rows, np.arange(len(rows)))),
                          shape=(n_union, influence.shape[0]))
    k = len(board.models)  # the scores' rows of the bread (not the covariates')
    bread = board.bread[:k] if board.bread is not None else np.eye(influence.shape[1])
    return select @ influence, bread


def _labels(log: ComparisonLog, name: str) -> np.ndarray:
    axis = log.axes.get(name)
    if axis is None:
        raise WinrateInputError(f"clustering axis {name!r} is not in both releases")
    return np.asarray(axis.labels)[axis.codes]


def _row_keys(log: ComparisonLog) -> pd.DataFrame:
    """Each row's content: prompt and judge labels, model names, outcome, frequency, and
    its occurrence among identical rows (so duplicates match one to one)."""
    keys = {name: pd.Series(_labels(log, name)).astype(str)
            for name in ("prompt", "judge") if name in log.axes}
    keys.update(model_a=pd.Series(log.models[log.model_a]).astype(str),
                model_b=pd.Series(log.models[log.model_b]).astype(str),
                score=pd.Series(log.score), weight=pd.Series(log.weight))
    frame = pd.DataFrame(keys)
    frame["occurrence"] = frame.groupby(list(frame.columns), sort=False).cumcount()
    return frame


def _matched_rows(old: ComparisonLog, new: ComparisonLog) -> np.ndarray:
    """For each old row, the new row with the same content (-1: none)."""
    old_keys, new_keys = _row_keys(old), _row_keys(new)
    shared_columns = [c for c in old_keys.columns if c in new_keys.columns]
    found = old_keys[shared_columns].merge(
        new_keys[shared_columns].assign(new_row=np.arange(new.n_rows)), how="left",
        on=shared_columns)
    return found.new_row.fillna(-1).to_numpy(dtype=np.int64)


def _map(fit: LeaderboardAnalysis, common: np.ndarray) -> np.ndarray:
    """(C, K) map from the fit's scores to the shared models' (centred on their mean on an
    unbounded scale such as Elo)."""
    index = pd.Index(fit.models.astype(str)).get_indexer(common)
    chosen = np.zeros((len(common), len(fit.models)))
    chosen[np.arange(len(common)), index] = 1.0
    if fit.leaderboard.scale.bounded:
        return chosen
    return (np.eye(len(common)) - 1.0 / len(common)) @ chosen


def _floor(fit: LeaderboardAnalysis) -> np.ndarray:
    """What the fit adds to its clustered covariance, added per release: its small-sample
    variance floor and the bound of its pairs seen in a single cluster (zeros without)."""
    added = np.zeros((len(fit.models),) * 2)
    for part in (fit.small_sample_floor, fit.unidentified_bound):
        added = added if part is None else added + part
    return added


def _result(common, scores, cov, df, fits, stacked: _Stacked, clustering, alpha, seed,
            found: Notes) -> ReleaseDiff:
    old, new = scores
    change = new - old
    marginal = wald_intervals(change, cov, alpha, df=df)
    simultaneous = simultaneous_intervals(change, cov, alpha, _smallest(df), seed=seed)
    rank_old, rank_new = (pd.Series(-s).rank(method="min").to_numpy() for s in (old, new))
    models = [set(fit.models.astype(str)) for fit in fits]
    return ReleaseDiff(
        common, old, new, change, cov, marginal.se, marginal.low, marginal.high,
        simultaneous.low, simultaneous.high, rank_old, rank_new,
        rank_swaps(common, old, new, change, cov, alpha, seed, _smallest(df)), fits[0],
        fits[1], stacked.shared_rows, stacked.shared_clusters, clustering, alpha,
        tuple(sorted(models[1] - models[0])), tuple(sorted(models[0] - models[1])), found, df)


def _smallest(df: np.ndarray) -> float | None:
    """The simultaneous intervals' df: the smallest change's (None, normal, if all are
    infinite); a family of changes is as uncertain as its least certain member."""
    finite = df[np.isfinite(df)]
    return float(finite.min()) if finite.size else None


def rank_swaps(models, old, new, change, cov, alpha: float, seed: int = 0,
               df: float | None = None) -> pd.DataFrame:
    """The pairs of models whose order differs between releases, each with the change of
    their gap ``(D_i - D_j)`` (i above j now), its simultaneous interval over the swapped
    pairs (on t(``df``), or normal) and whether it excludes 0 (``real``)."""
    i, j = np.triu_indices(len(models), 1)
    swapped = np.sign(old[i] - old[j]) * np.sign(new[i] - new[j]) < 0
    i, j = i[swapped], j[swapped]
    above, below = np.where(new[i] > new[j], i, j), np.where(new[i] > new[j], j, i)
    columns = ["above_now", "below_now", "gap_change", "se", "sim_low", "sim_high", "real"]
    if not len(above):
        return pd.DataFrame(columns=columns)
    contrast = np.zeros((len(above), len(models)))
    contrast[np.arange(len(above)), above] = 1.0
    contrast[np.arange(len(above)), below] = -1.0
    gap, gap_cov = contrast @ change, contrast @ cov @ contrast.T
    sim = simultaneous_intervals(gap, gap_cov, alpha, df, seed=seed)
    return pd.DataFrame({"above_now": np.asarray(models)[above],
                         "below_now": np.asarray(models)[below], "gap_change": gap,
                         "se": np.sqrt(np.diag(gap_cov)), "sim_low": sim.low,
                         "sim_high": sim.high, "real": (sim.low > 0) | (sim.high < 0)})


def split_since(log: ComparisonLog, column: str, since) -> tuple[ComparisonLog, ComparisonLog]:
    """(the rows before ``since``, every row) of a log whose axis ``column`` holds each
    comparison's time (read it with ``cluster_cols=(column,)``): the last release and this
    one."""
    axis = log.axes.get(column)
    if axis is None:
        raise WinrateInputError(f"time column {column!r} is not in the log (read it as a "
                                f"cluster column; the log has {sorted(log.axes)})")
    try:
        times = pd.to_datetime(pd.Series(np.asarray(axis.labels)))
        cut = pd.Timestamp(since)
    except (ValueError, TypeError) as error:
        raise WinrateInputError(f"time column {column!r} or date {since!r}: {error}") from None
    before = (times < cut).to_numpy()[axis.codes]
    if not before.any() or before.all():
        raise WinrateInputError(f"{int(before.sum()):,} of {log.n_rows:,} comparisons are "
                                f"before {since}: a diff needs rows on both sides")
    return _rows(log, before), log


def _rows(log: ComparisonLog, keep: np.ndarray) -> ComparisonLog:
    """The rows ``keep`` of ``log`` (models and axes re-coded densely, names kept)."""
    used, coded = np.unique(np.concatenate([log.model_a[keep], log.model_b[keep]]),
                               return_inverse=True)
    n = int(keep.sum())
    axes = {}
    for name, axis in log.axes.items():
        codes, present = factorize_groups(axis.codes[keep])
        axes[name] = ClusterAxis(codes, np.asarray(axis.labels)[present])
    frequency = None if log.frequency is None else log.frequency[keep]
    return ComparisonLog(coded[:n].astype(np.int32), coded[n:].astype(np.int32),
                         log.score[keep], log.models[used], axes, frequency,
                         {k: v[keep] for k, v in log.features.items()})
