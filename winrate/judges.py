"""Judge audits: is the judge biased, and what does each bias do to the leaderboard?

:func:`audit_judges` answers, per judge and overall, with the log's clustering:

* **position bias**: the first-shown advantage ``beta`` as a Bradley-Terry covariate,
  ``logit P(a beats b) = theta_a - theta_b + beta x_r`` with ``x_r = +1`` where ``model_a``
  was shown first and ``-1`` where ``model_b`` was (the home-advantage model of Agresti,
  *Categorical Data Analysis*, 3rd ed., sec. 11.6.2). ``beta`` is reported in logits, on
  the Elo scale (``400 / ln 10 * beta``) and as a probability, ``expit(beta)``: how often
  the first-shown of two equally rated answers wins.
* **self-preference**: with ``own_r = 1{family(model_a) = family(judge)} -
  1{family(model_b) = family(judge)}`` a second covariate, ``gamma`` is the log-odds a
  judge adds to an answer of its own family (the judge x own-model interaction).
* **order consistency** where the same pair is judged in both orders on one prompt by one
  judge: the flip rate (the share of such verdict pairs that disagree) with a
  prompt-clustered interval, and the ratings after averaging both orders.
* **tie propensity**: each judge's share of ties, prompt-clustered.
* what each adjustment does to the board: the Bradley-Terry board as judged, adjusted for
  position (and self-preference), and from the order-averaged verdicts, with the models
  whose rank sets change.

How the covariates enter the library's fit. Bradley-Terry standardises its covariates,
``(x - mean) / sd``, and the centring acts as a hidden a-versus-b offset unless the mean is
zero (:mod:`winrate.estimators.bradley_terry_kernels`). The audit fits a *symmetrised*
log: every comparison ``(a, b, s, x)`` of frequency ``f`` enters twice at ``f / 2``, as
itself and as ``(b, a, 1 - s, -x)``. The two copies have the same log-likelihood term
(``expit(theta_b - theta_a - beta x) = 1 - expit(theta_a - theta_b + beta x)``) and the
same score row (``(f/2)(s - pi) z_r`` and ``(f/2)((1 - s) - (1 - pi))(-z_r)``), so the
estimate, the information and every cluster's sum of score rows are those of the original
log, while each covariate's weighted mean is exactly zero, so its standardisation is a
rescaling only (``beta = beta_std / sd``). The covariance is the library's multiway
sandwich (:func:`winrate.analyze`, method ``"sandwich"``), and the shares' intervals come
from the same cluster sums (:func:`winrate.variance.cluster_sums.clustered`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.special import expit

from winrate import notes
from winrate.analysis import LeaderboardAnalysis, analyze
from winrate.errors import WinrateInputError
from winrate.estimators.bradley_terry_kernels import ELO_SCALE, low_orientation
from winrate.inference.intervals import logit_bounds
from winrate.inference.plan import default_clustering
from winrate.io.logs import ClusterAxis, ComparisonLog, read_comparisons
from winrate.notes import Notes
from winrate.report.builders import (
    frame_table,
    markdown_document,
    page_document,
    publish_page,
)
from winrate.report.leaderboard import json_safe
from winrate.report.text import Summary, text_block
from winrate.settings import Joint, Variance, parse_clustering
from winrate.variance.cluster_sums import clustered, influence_sums
from winrate.variance.reference import critical_value

#: The covariate of the first-shown answer, and of a judge's own family.
POSITION = "first shown"
OWN = "own model"
#: The axis of a symmetrised log that holds each comparison's two copies (:func:`symmetrised`).
COMPARISON = "comparison"
#: Per-judge effects are fitted when the log has at most this many judges.
MAX_JUDGES = 12
#: The variance of every fit: the multiway sandwich, CR1, as the covariates' intervals are.
SANDWICH = Variance("sandwich", "cr1")


# ----------------------------------------------------------------- results


@dataclass(frozen=True)
class Effect:
    """One covariate effect in logits (``logit``, its clustered ``se`` and interval
    ``low``, ``high`` at the audit's level, ``df`` of its reference) for ``judge`` ("all":
    pooled over judges)."""

    name: str
    judge: str
    logit: float
    se: float
    low: float
    high: float
    df: float | None

    def to_dict(self) -> dict:
        """The effect on the logit, Elo (``400 / ln 10`` logits) and probability
        (``expit``) scales."""
        return {"judge": self.judge, "effect": self.name, "logit": self.logit, "se": self.se,
                "ci_low": self.low, "ci_high": self.high,
                "elo": ELO_SCALE * self.logit, "elo_se": ELO_SCALE * self.se,
                "elo_low": ELO_SCALE * self.low, "elo_high": ELO_SCALE * self.high,
                "probability": float(expit(self.logit)),
                "probability_low": float(expit(self.low)),
                "probability_high": float(expit(self.high)), "df": self.df}


@dataclass(frozen=True)
class Share:
    """A weighted share (flip rate, tie rate) with its prompt-clustered SE and its interval
    built on the logit scale; ``n`` the units it averages, ``clusters`` the number of
    clusters and ``unit`` what they are (prompts; comparisons for a log without them)."""

    estimate: float
    se: float
    low: float
    high: float
    n: float
    clusters: int
    unit: str = "prompts"

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "se": self.se, "ci_low": self.low,
                "ci_high": self.high, "n": self.n, "clusters": self.clusters,
                "cluster_unit": self.unit}


@dataclass(frozen=True)
class OrderConsistency:
    """Verdicts of one pair on one prompt by one judge in both orders: the ``flip_rate``
    (pooled and per judge), the number of such ``pairs`` and the ``unmatched_rows`` judged
    in one order only (left out of the order-averaged board)."""

    flip_rate: Share
    per_judge: dict[str, Share]
    pairs: int
    unmatched_rows: int

    def to_dict(self) -> dict:
        return {"flip_rate": self.flip_rate.to_dict(), "pairs": self.pairs,
                "unmatched_rows": self.unmatched_rows,
                "per_judge": {j: s.to_dict() for j, s in self.per_judge.items()}}


@dataclass(frozen=True)
class Agreement:
    """Krippendorff's alpha (interval metric) between judges on shared items, with a
    prompt-cluster bootstrap percentile interval: ``units`` items judged by two or more
    judges, ``values`` their (item, judge) verdicts, ``reps`` bootstrap draws."""

    alpha: float
    low: float
    high: float
    units: int
    values: int
    reps: int

    def to_dict(self) -> dict:
        return {"krippendorff_alpha": self.alpha, "ci_low": self.low, "ci_high": self.high,
                "metric": "interval", "units": self.units, "values": self.values,
                "reps": self.reps}

    def text(self, level: str) -> str:
        return (f"Agreement between judges: Krippendorff's alpha {self.alpha:.3f} "
                f"[{self.low:.3f}, {self.high:.3f}] ({level} prompt-cluster bootstrap, "
                f"{self.reps} draws; {self.units:,} items judged by 2+ judges, "
                f"{self.values:,} verdicts)")


@dataclass(frozen=True, eq=False)
class JudgeAudit:
    """:func:`audit_judges`'s result. ``boards``: the Bradley-Terry analyses
    (:class:`winrate.analysis.LeaderboardAnalysis`, with rank sets) ``"as_judged"``,
    ``"position_adjusted"``, ``"self_adjusted"`` (when judges are contestants) and
    ``"orders_averaged"`` (when pairs are judged in both orders). ``to_dict()`` is the
    JSON, ``summary()`` the text report."""

    position_bias: tuple[Effect, ...]
    self_preference: tuple[Effect, ...]
    order_consistency: OrderConsistency | None
    tie_propensity: dict[str, Share]
    boards: dict[str, LeaderboardAnalysis]
    clustering: tuple[str, ...]
    alpha: float
    notes: Notes = field(default_factory=Notes)
    agreement: Agreement | None = None

    def rank_changes(self) -> dict[str, list[dict]]:
        """Per adjusted board, the models whose rank set differs from the board as judged:
        ``model``, ``before`` and ``after`` (the sets' low and high ranks)."""
        base = _rank_sets(self.boards["as_judged"])
        return {name: _changed(base, _rank_sets(board))
                for name, board in self.boards.items() if name != "as_judged"}

    def ratings(self) -> pd.DataFrame:
        """The Elo ratings of every board side by side, one column per board, indexed by
        model, best first as judged."""
        frame = pd.DataFrame({name: board.params for name, board in self.boards.items()})
        return frame.loc[self.boards["as_judged"].ranked_models]

    def to_dict(self) -> dict:
        """The JSON document (NaN as null)."""
        return json_safe({
            "clustering": list(self.clustering) or ["none"], "alpha": self.alpha,
            "position_bias": [e.to_dict() for e in self.position_bias],
            "self_preference": [e.to_dict() for e in self.self_preference],
            "order_consistency": (None if self.order_consistency is None
                                  else self.order_consistency.to_dict()),
            "tie_propensity": {j: s.to_dict() for j, s in self.tie_propensity.items()},
            "agreement": None if self.agreement is None else self.agreement.to_dict(),
            "boards": {name: _board_dict(board) for name, board in self.boards.items()},
            "rank_changes": self.rank_changes(),
            "notes": [note.to_dict() for note in self.notes],
        })

    def page_document(self) -> dict:
        """The leaderboard document of the board as judged with the audit under
        ``judges``: the web page's source (:func:`winrate.report.builders.page_document`)."""
        return page_document(self.boards["as_judged"], "judges", self.to_dict())

    def to_html(self, path=None, title: str | None = None) -> str:
        """The board as judged as a web page with a judges section
        (:mod:`winrate.report.html_page`), also written to ``path`` when given."""
        return publish_page(self.boards["as_judged"], "judges", self.to_dict(), path, title)

    def summary(self) -> Summary:
        """The audit as ``winrate judges`` prints it."""
        return text_block("Judge audit", _blocks(self, "text"), self.notes)

    def to_markdown(self) -> str:
        """The audit as a Markdown section (pipe tables)."""
        return markdown_document("Judge audit", _blocks(self, "markdown"), self.notes)

    def __str__(self) -> str:
        return str(self.summary())


def _rank_sets(board: LeaderboardAnalysis) -> pd.DataFrame:
    joint = board.joint
    sets = pd.DataFrame({"low": joint.rank_low, "high": joint.rank_high},
                        index=board.params.index)
    return sets.fillna(0).astype(int)  # 0: a model without a score has no rank


def _changed(before: pd.DataFrame, after: pd.DataFrame) -> list[dict]:
    both = before.merge(after, left_index=True, right_index=True, how="inner",
                        suffixes=("_before", "_after"))
    moved = both[(both.low_before != both.low_after) | (both.high_before != both.high_after)]
    return [{"model": str(m), "before": [int(r.low_before), int(r.high_before)],
             "after": [int(r.low_after), int(r.high_after)]} for m, r in moved.iterrows()]


def _board_dict(board: LeaderboardAnalysis) -> dict:
    joint = board.joint
    return {str(m): {"rating": float(s), "se": float(se), "rank_low": lo, "rank_high": hi}
            for m, s, se, lo, hi in zip(board.models, board.scores, board.se, joint.rank_low,
                                        joint.rank_high, strict=True)}


# ----------------------------------------------------------------- the audit


def audit_judges(log, *, cluster=None, alpha: float = 0.05, judge_family=None,
                 first_shown: str | None = None, progress: bool | None = None) -> JudgeAudit:
    """Audit the judges of a comparison log (module doc): position bias, self-preference,
    order consistency, tie propensity, and the Bradley-Terry board with and without each
    adjustment, all clustered as ``cluster`` says (None: the default ``prompt+judge``, or
    those axes the log has).

    ``log``: a :class:`ComparisonLog`, DataFrame or path (:func:`winrate.read_comparisons`).
    ``model_a`` is the answer shown first unless ``first_shown`` names a feature of the log
    holding 1 where ``model_a`` was shown first and 0 where ``model_b`` was.
    ``judge_family``: a mapping of judge and model names to a family (e.g. every GPT-4
    variant to ``"gpt-4"``); a name not in it is its own family, so a judge named as a
    contestant judges its own answers. ``progress``: progress bars of the fits.
    """
    log = log if isinstance(log, ComparisonLog) else read_comparisons(log)
    if not 0 < alpha < 1:
        raise WinrateInputError(f"alpha must be in (0, 1), got {alpha}")
    clustering, default_note = _clustering(log, cluster)
    first = _first_shown(log, first_shown)
    judges = _judge_axis(log)
    own = _own_family(log, judges, judge_family or {})
    fit = _Fitter(log, clustering, alpha, progress)
    with notes.gathered() as found:
        boards = {"as_judged": fit.board(log)}
        position, boards["position_adjusted"] = fit.effects({POSITION: first})
        position += _per_judge(fit, judges, POSITION, first)
        self_pref = ()
        if own.any():
            self_pref, boards["self_adjusted"] = fit.effects({POSITION: first, OWN: own})
            self_pref = self_pref[1:] + _per_judge(fit, judges, OWN, own, {POSITION: first})
        else:
            notes.emit(notes.judges_design("self-preference", "no judge's family is among "
                                           "the contestants"))
        order, averaged = order_consistency(log, first, alpha)
        if averaged is not None:
            boards["orders_averaged"] = fit.board(averaged)
        else:
            notes.emit(notes.judges_design("order consistency", "no model pair is judged "
                                           "in both orders on one prompt by one judge"))
        ties = tie_propensity(log, judges, alpha)
    agreement = judge_agreement(log, alpha)
    audit_notes = Notes(dict.fromkeys([*([default_note] if default_note else []), *found]))
    notes.give(audit_notes)
    return JudgeAudit(position, self_pref, order, ties, boards, clustering, alpha,
                      audit_notes, agreement)


def _clustering(log: ComparisonLog, cluster):
    if cluster is None:
        return default_clustering(log)
    return parse_clustering(cluster), None


def _first_shown(log: ComparisonLog, column: str | None) -> np.ndarray:
    """``x_r``: +1 where ``model_a`` was shown first, -1 where ``model_b`` was."""
    if column is None:
        return np.ones(log.n_rows)
    if column not in log.features:
        raise WinrateInputError(f"first-shown column {column!r} is not a feature of the log "
                                f"(it has {sorted(log.features) or 'none'})")
    values = log.features[column]
    bad = ~np.isin(values, (0.0, 1.0))
    if bad.any():
        raise WinrateInputError(f"first-shown column {column!r}: row {int(np.argmax(bad))} is "
                                f"{values[bad][0]!r}, not 1 (model_a first) or 0 (model_b)")
    return 2.0 * values - 1.0


def _judge_axis(log: ComparisonLog) -> ClusterAxis:
    """The judge axis, or one judge ``"all"`` for a log without one."""
    found = log.axes.get("judge")
    if found is not None:
        return found
    return ClusterAxis(np.zeros(log.n_rows, np.int64), np.array(["all"], dtype=object))


def _own_family(log: ComparisonLog, judges: ClusterAxis, family) -> np.ndarray:
    """``own_r = 1{family(a) = family(judge)} - 1{family(b) = family(judge)}``."""
    def families(names):
        return np.array([str(family.get(str(n), str(n))) for n in names], dtype=object)

    judge_family = families(judges.labels)[judges.codes]
    model_family = families(log.models)
    own_a = model_family[log.model_a] == judge_family
    own_b = model_family[log.model_b] == judge_family
    return own_a.astype(float) - own_b


def _per_judge(fit: _Fitter, judges: ClusterAxis, name: str, x: np.ndarray,
               fixed: dict | None = None) -> tuple[Effect, ...]:
    """The effect of covariate ``x`` per judge (one covariate ``x 1{judge = j}`` for each
    judge whose rows carry it), with ``fixed`` covariates pooled; none for one judge or
    more than :data:`MAX_JUDGES`. Clustered without the judge axis: a judge's own effect
    is a contrast within its cluster (its score rows sum to zero there), so the judge term
    of a multiway sum says nothing about it."""
    if not 1 < judges.n_clusters <= MAX_JUDGES:
        return ()
    covariates = dict(fixed or {})
    for code, label in enumerate(judges.labels):
        mine = np.where(judges.codes == code, x, 0.0)
        if mine.any():
            covariates[f"{name}: {label}"] = mine
    if len(covariates) - len(fixed or {}) < 2:
        return ()
    effects, _ = fit.within_judges().effects(covariates)
    return effects[len(fixed or {}):]


@dataclass(frozen=True)
class _Fitter:
    """Bradley-Terry fits of a log and of its symmetrised copies, clustered alike."""

    log: ComparisonLog
    clustering: tuple[str, ...]
    alpha: float
    progress: bool | None = None
    ranks: bool = True

    def within_judges(self) -> _Fitter:
        """The same fits clustered without the judge axis."""
        return replace(self, clustering=tuple(a for a in self.clustering if a != "judge"))

    def board(self, log: ComparisonLog, **options) -> LeaderboardAnalysis:
        return analyze(log, self.clustering, "bt", variance=SANDWICH,
                       joint=Joint(ranks=self.ranks),
                       alpha=self.alpha, progress=self.progress, **options)

    def effects(self, covariates: dict[str, np.ndarray]):
        """The covariates' effects in logits and the adjusted board (module doc)."""
        twice = symmetrised(self.log, covariates)
        fitter = self if self.clustering else replace(self, clustering=(COMPARISON,))
        board = fitter.board(twice, covariates=tuple(covariates))
        coef = board.coefficients
        moments = board.leaderboard.fitted["standardisation"]
        sd = np.array([moments[name]["sd"] for name in coef.names])
        df = board.intervals.df
        effects = tuple(
            Effect(name.split(": ")[0], name.split(": ", 1)[1] if ": " in name else "all",
                   float(est), float(se), float(lo), float(hi),
                   None if df is None else float(np.min(df)))
            for name, est, se, lo, hi in zip(coef.names, coef.estimate / sd, coef.se / sd,
                                              coef.low / sd, coef.high / sd, strict=True))
        return effects, board


def covariate_effects(log: ComparisonLog, covariates: dict[str, np.ndarray], cluster,
                      alpha: float = 0.05) -> tuple[tuple[Effect, ...], LeaderboardAnalysis]:
    """The effects (logits) of per-row ``covariates`` of the (a, b) orientation in a
    Bradley-Terry fit of ``log`` clustered by ``cluster``, fitted on the symmetrised log
    (module doc), and that fit (no rank sets). A name ``"NAME: JUDGE"`` is the effect NAME
    of that judge."""
    return _Fitter(log, parse_clustering(cluster), alpha, ranks=False).effects(covariates)


def symmetrised(log: ComparisonLog, covariates: dict[str, np.ndarray]) -> ComparisonLog:
    """Every row of ``log`` twice at half its frequency: as it is with ``covariates`` (per-row
    values of the (a, b) orientation), and as ``(b, a, 1 - s)`` with the covariates negated
    (module doc: same likelihood and cluster sums, covariates of mean zero). The axis
    :data:`COMPARISON` holds the two copies of each row together: an unclustered analysis
    of the original log is the symmetrised one clustered by it (each copy alone would count
    half the variance twice as independent)."""
    w = log.weight / 2
    axes = {name: ClusterAxis(np.concatenate([axis.codes, axis.codes]), axis.labels)
            for name, axis in log.axes.items()}
    rows = np.arange(log.n_rows)
    axes[COMPARISON] = ClusterAxis(np.concatenate([rows, rows]), rows)
    features = {name: np.concatenate([x, -x]) for name, x in covariates.items()}
    return ComparisonLog(np.concatenate([log.model_a, log.model_b]),
                         np.concatenate([log.model_b, log.model_a]),
                         np.concatenate([log.score, 1.0 - log.score]), log.models, axes,
                         np.concatenate([w, w]), features)


# ----------------------------------------------------------------- shares


def clustered_share(values: np.ndarray, weights: np.ndarray, clusters: np.ndarray | None,
                    alpha: float) -> Share:
    """The weighted share ``p = sum w v / sum w`` with its clustered SE and a logit-scale
    interval (:func:`winrate.inference.intervals.logit_bounds`).

    ``p`` is a ratio estimator whose influence is ``u_r = w_r (v_r - p) / sum w``
    (Stefanski & Boos 2002, sec. 3), summed by cluster as every other influence
    (:func:`winrate.variance.cluster_sums.clustered`, CR1 ``G / (G - 1)``); without
    ``clusters`` every unit is its own. The interval uses t(G - 1).
    """
    total = weights.sum()
    p = float((weights * values).sum() / total)
    groups = np.arange(len(values)) if clusters is None else clusters
    influence = (weights * (values - p) / total)[:, None]
    found = clustered(influence_sums(influence, [groups]), "cr1", designs=False).covariance
    se = float(np.sqrt(found.cov[0, 0]))
    g = found.n_clusters[0]
    half = critical_value(alpha, g - 1) * se
    low, high, _ = logit_bounds(np.array([p]), np.array([p - half]), np.array([p + half]))
    return Share(p, se, float(low[0]), float(high[0]), float(total), int(g),
                 "prompts" if clusters is not None else "comparisons")


def tie_propensity(log: ComparisonLog, judges: ClusterAxis, alpha: float) -> dict[str, Share]:
    """The share of ties (score 1/2), pooled (``"all"``) and per judge (of at most
    :data:`MAX_JUDGES`, each on two or more prompts), clustered by prompt when the log has
    one."""
    prompt = log.axes.get("prompt")
    clusters = None if prompt is None else prompt.codes
    tie = (log.score == 0.5).astype(float)
    found = {"all": clustered_share(tie, log.weight, clusters, alpha)}
    if not 1 < judges.n_clusters <= MAX_JUDGES:
        return found
    for code, label in enumerate(judges.labels):
        mine = judges.codes == code
        if np.unique(mine.nonzero()[0] if clusters is None else clusters[mine]).size > 1:
            found[str(label)] = clustered_share(tie[mine], log.weight[mine],
                                                None if clusters is None else clusters[mine],
                                                alpha)
    return found


# ----------------------------------------------------------------- agreement


def judge_agreement(log: ComparisonLog, alpha: float, reps: int = 999,
                    seed: int = 0) -> Agreement | None:
    """Krippendorff's alpha between the judges, ``1 - D_o / D_e``, with the interval
    metric (Krippendorff, *Content Analysis*, 4th ed., 2019, sec. 12.2; Hayes &
    Krippendorff 2007, Communication Methods and Measures 1(1)).

    An item is a (prompt, unordered model pair); a judge's value is its mean score of the
    lower-coded model there (both orders and repeats averaged). Over the items ``u`` with
    ``m_u >= 2`` values, ``n = sum m_u``, and with ``S1``, ``S2`` sums of the values and of
    their squares, the squared differences of all pairs within an item sum to
    ``2 (m_u S2_u - S1_u^2)`` and over all values to ``2 (n S2 - S1^2)``, so
    ``alpha = 1 - (n - 1) sum_u (m_u S2_u - S1_u^2) / (m_u - 1) / (n S2 - S1^2)``.
    The interval resamples prompts with replacement (each prompt's items together) and
    takes the percentiles of alpha. None without two judges sharing an item.
    """
    if "prompt" not in log.axes or "judge" not in log.axes:
        return None
    lo, hi, s_lo = low_orientation(log)
    frame = pd.DataFrame({"prompt": log.axes["prompt"].codes, "lo": lo, "hi": hi,
                          "judge": log.axes["judge"].codes, "ws": log.weight * s_lo,
                          "w": log.weight})
    values = frame.groupby(["prompt", "lo", "hi", "judge"])[["ws", "w"]].sum()
    value = (values.ws / values.w).rename("v").reset_index()
    units = value.assign(v2=value.v ** 2).groupby(["prompt", "lo", "hi"]).agg(
        m=("v", "size"), s1=("v", "sum"), s2=("v2", "sum"))
    units = units[units.m >= 2]
    if units.empty:
        return None
    within = (units.m * units.s2 - units.s1 ** 2) / (units.m - 1)
    per_prompt = pd.DataFrame({"n": units.m, "s1": units.s1, "s2": units.s2,
                               "within": within}).groupby(level="prompt").sum()
    estimate = _alpha_of(per_prompt.to_numpy()[None, :, :].sum(axis=1))[0]
    rng = np.random.default_rng(seed)
    g = len(per_prompt)
    draws = rng.multinomial(g, np.full(g, 1.0 / g), size=reps)
    boot = _alpha_of(draws @ per_prompt.to_numpy())
    low, high = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2])
    return Agreement(float(estimate), float(low), float(high), len(units),
                     int(units.m.sum()), reps)


def _alpha_of(totals: np.ndarray) -> np.ndarray:
    """Alpha from rows of summed ``(n, S1, S2, within)`` (NaN where the values do not
    vary)."""
    n, s1, s2, within = totals.T
    spread = n * s2 - s1 ** 2
    out = np.full(n.shape, np.nan)
    np.divide((n - 1) * within, spread, out=out, where=spread > 0)
    return 1.0 - out


# ----------------------------------------------------------------- both orders


def order_consistency(log: ComparisonLog, first: np.ndarray, alpha: float):
    """Flip rates of the pairs judged in both orders, and the log of their order-averaged
    verdicts (None, None without such pairs or without a prompt axis).

    A *verdict pair* is one (prompt, judge, unordered model pair) seen with each model
    shown first. With ``s`` the lower-coded model's score and ``W_1(c)``, ``W_2(c)`` the
    frequency of verdict ``c`` in each order, its flip rate is ``1 - sum_c W_1(c) W_2(c) /
    (W_1 W_2)``: the share of the cross-order verdict couples that disagree (with one
    verdict per order, 1 when they differ, 0 when they agree). The pooled flip rate is the
    mean over verdict pairs, clustered by prompt (:func:`clustered_share`). The averaged
    verdict is ``(mean s | lo first + mean s | hi first) / 2``, one row per verdict pair;
    the rows judged in one order only are kept as they are.
    """
    if "prompt" not in log.axes:
        return None, None
    frame = _orders_frame(log, first)
    keys = ["prompt", "judge", "lo", "hi"]
    weight = frame.groupby([*keys, "lo_first"]).w.sum().unstack("lo_first")
    if weight.shape[1] < 2:
        return None, None
    matched = weight.dropna()
    if matched.empty:
        return None, None
    per_verdict = frame.groupby([*keys, "s", "lo_first"]).w.sum().unstack("lo_first",
                                                                           fill_value=0.0)
    agree = (per_verdict[True] * per_verdict[False]).groupby(level=keys).sum()
    flip = 1.0 - agree.loc[matched.index] / (matched[True] * matched[False])
    rate = _flip_shares(flip, _judge_axis(log).labels, alpha)
    unmatched = int((~frame.set_index(keys).index.isin(matched.index)).sum())
    found = OrderConsistency(rate[0], rate[1], len(matched), unmatched)
    return found, _averaged_log(log, frame, keys, matched.index)


def _orders_frame(log: ComparisonLog, first: np.ndarray) -> pd.DataFrame:
    """One row per comparison as its unordered pair: prompt and judge codes, ``lo``,
    ``hi``, whether ``lo`` was shown first, its score ``s`` and frequency ``w``."""
    lo, hi, s_lo = low_orientation(log)
    judge = log.axes["judge"].codes if "judge" in log.axes else np.zeros(log.n_rows, np.int64)
    shown_a = first > 0
    return pd.DataFrame({"prompt": log.axes["prompt"].codes, "judge": judge, "lo": lo,
                         "hi": hi, "lo_first": (log.model_a == lo) == shown_a, "s": s_lo,
                         "w": log.weight})


def _flip_shares(flip: pd.Series, labels: np.ndarray,
                 alpha: float) -> tuple[Share, dict[str, Share]]:
    """The pooled flip rate and each judge's (of judges with two or more prompts)."""
    prompts = flip.index.get_level_values("prompt").to_numpy()
    judges = flip.index.get_level_values("judge").to_numpy()
    ones = np.ones(len(flip))
    pooled = clustered_share(flip.to_numpy(), ones, prompts, alpha)
    per_judge = {}
    if 1 < np.unique(judges).size <= MAX_JUDGES:
        for judge in np.unique(judges):
            mine = judges == judge
            if np.unique(prompts[mine]).size > 1:
                per_judge[str(labels[judge])] = clustered_share(flip.to_numpy()[mine], ones[mine],
                                                        prompts[mine], alpha)
    return pooled, per_judge


def _averaged_log(log: ComparisonLog, frame: pd.DataFrame, keys: list[str],
                  matched: pd.MultiIndex) -> ComparisonLog:
    """The order-averaged verdict of every verdict pair (one row each, frequency 1) and the
    rows judged in one order only, as they are."""
    totals = frame.assign(ws=frame.w * frame.s).groupby([*keys, "lo_first"])[["ws", "w"]].sum()
    mean = (totals.ws / totals.w).unstack("lo_first").loc[matched]
    single = ~frame.set_index(keys).index.isin(matched)
    rest = frame[single]
    columns = {name: np.concatenate([matched.get_level_values(name).to_numpy(),
                                     rest[name].to_numpy()]) for name in keys}
    score = np.concatenate([((mean[True] + mean[False]) / 2).to_numpy(), rest.s.to_numpy()])
    weight = np.concatenate([np.ones(len(matched)), rest.w.to_numpy()])
    axes = {name: ClusterAxis(*_relabelled(columns[name], log.axes[name].labels))
            for name in ("prompt", "judge") if name in log.axes}
    return ComparisonLog(columns["lo"].astype(np.int32), columns["hi"].astype(np.int32),
                         score, log.models, axes, weight)


def _relabelled(codes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of a subset of an axis' ``codes`` and their labels."""
    present, dense = np.unique(codes, return_inverse=True)
    return dense.astype(np.int64), labels[present]


# ----------------------------------------------------------------- text


def _blocks(audit: JudgeAudit, fmt: str) -> list[str]:
    level = f"{100 * (1 - audit.alpha):g}%"
    clustering = (f"clustered by {'+'.join(audit.clustering)}" if audit.clustering
                  else "each comparison its own cluster")
    parts = [_effects_block(f"Position bias: the first-shown answer's advantage "
                            f"({clustering}, {level} CI)", audit.position_bias,
                            "P(first wins)", fmt)]
    if audit.self_preference:
        parts.append(_effects_block("Self-preference: a judge's advantage to its own "
                                    "family's answers", audit.self_preference, "P(own wins)",
                                    fmt))
    parts.append(_order_block(audit.order_consistency, level))
    parts.append(_shares_block(f"Tie propensity (share of ties, prompt-clustered {level} CI)",
                               audit.tie_propensity))
    if audit.agreement is not None:
        parts.append(audit.agreement.text(level))
    parts.append(_boards_block(audit, fmt))
    return parts


def _effects_block(title: str, effects, probability: str, fmt: str) -> str:
    rows = [[e.judge, f"{e.logit:+.3f}", f"{e.se:.3f}",
             f"{ELO_SCALE * e.logit:+.1f} [{ELO_SCALE * e.low:+.1f}, {ELO_SCALE * e.high:+.1f}]",
             f"{expit(e.logit):.3f} [{expit(e.low):.3f}, {expit(e.high):.3f}]"]
            for e in effects]
    frame = pd.DataFrame(rows, columns=["judge", "logit", "se", "Elo [CI]",
                                        f"{probability} [CI]"])
    return title + "\n" + ("\n" if fmt == "markdown" else "") + frame_table(frame, fmt)


def _share_text(share: Share) -> str:
    return (f"{100 * share.estimate:.1f}% [{100 * share.low:.1f}%, {100 * share.high:.1f}%] "
            f"(SE {100 * share.se:.1f}%, n {_amount(share.n)}, {share.clusters:,} {share.unit})")


def _amount(n: float) -> str:
    """A count of comparisons: whole with thousands separators, or as it is if weighted."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.6g}"


def _shares_block(title: str, shares: dict[str, Share]) -> str:
    lines = [title] + [f"  {judge}: {_share_text(share)}" for judge, share in shares.items()]
    return "\n".join(lines) if shares else ""


def _order_block(order: OrderConsistency | None, level: str) -> str:
    if order is None:
        return "Order consistency: no pair is judged in both orders on one prompt"
    lines = [f"Order consistency: {order.pairs:,} verdict pairs judged in both orders "
             f"({order.unmatched_rows:,} comparisons in one order only)",
             f"  flip rate: {_share_text(order.flip_rate)}, prompt-clustered {level} CI"]
    lines += [f"  {judge}: {_share_text(share)}" for judge, share in order.per_judge.items()]
    return "\n".join(lines)


def _boards_block(audit: JudgeAudit, fmt: str) -> str:
    ratings = audit.ratings().round(1)
    lines = ["Bradley-Terry ratings (Elo) as judged and adjusted"
             + ("\n" if fmt == "markdown" else ""), frame_table(ratings, fmt, index=True)]
    for name, moved in audit.rank_changes().items():
        shown = ", ".join(f"{m['model']} {_ranks(m['before'])} -> {_ranks(m['after'])}"
                          for m in moved) or "none"
        lines.append(("\n" if fmt == "markdown" else "")
                     + f"rank sets changed ({name}): {shown}")
    return "\n".join(lines)


def _ranks(bounds: list[int]) -> str:
    return f"[{bounds[0]}, {bounds[1]}]" if bounds[0] != bounds[1] else f"[{bounds[0]}]"
