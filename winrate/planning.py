"""How much more data: :func:`plan` from a pilot analysis' variance components.

The clustered covariance of a leaderboard is a sum over the clustering's
inclusion-exclusion terms (Cameron, Gelbach & Miller 2011, eq. 2.11). For a crossed
prompt x judge design, by the method of moments on those terms (as in the two-way random
effects ANOVA; Searle, Casella & McCulloch, *Variance Components*, 1992, ch. 4):

* ``R = V_{prompt x judge}`` (with one axis: the naive covariance) is the residual part,
  which shrinks with the number of comparisons;
* ``A_a = V_a - R`` is axis a's own part (prompt, judge), which shrinks only with the
  number of that axis' clusters.

So with ``m_p`` times the prompts (at the current judges, comparisons per prompt and pair
mix), ``m_j`` times the judges (the same comparisons spread over them) and ``m_c`` times
the comparisons per prompt, the covariance is projected as

    V(m) = A_prompt / m_p + A_judge / m_j + R / (m_p m_c).

A contrast ``d = S_i - S_j`` with components ``(a_p, a_j, r)`` and a true difference
``delta`` is detected by a two-sided test at level alpha (critical value ``c``: normal, or
the max-|T| value of the contrasts tested together) with power
``Phi(|delta| / se - c) + Phi(-|delta| / se - c)``; the normal approximation
``se <= |delta| / (c + z_{1-beta})`` gives the multiplier of each axis in closed form, e.g.
``m_p = (a_p + r) / (t - a_j)`` with ``t = (delta / (c + z_{1-beta}))^2``: infinite when
the judge part alone exceeds ``t`` (more prompts cannot help; more judges can). Prompts
and judges grown together (``m_p = m_j = m``, the count shown is of prompts) need
``m = (a_p + a_j + r) / t``. The
components come from the library's cluster sums of the pilot
(:func:`winrate.variance.cluster_sums.memory_sums` and
:func:`~winrate.variance.cluster_sums.clustered`, CR1); a projected covariance that the
subtraction left slightly indefinite is repaired as the multiway sum is
(:func:`winrate.variance.sandwich.repair_psd`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from winrate import notes
from winrate.errors import WinrateInputError
from winrate.inference.analysis import Analysis
from winrate.inference.joint import rank_sets, simultaneous_intervals
from winrate.io.logs import ComparisonLog
from winrate.notes import Notes
from winrate.report.builders import (
    frame_table,
    markdown_document,
    page_document,
    publish_page,
)
from winrate.report.leaderboard import json_safe
from winrate.report.text import Summary, text_block
from winrate.variance.cluster_sums import clustered, memory_sums
from winrate.variance.sandwich import repair_psd

#: The data multipliers whose interval widths and rank sets are projected.
MULTIPLIERS = (2.0, 4.0, 10.0)
#: What can grow: more prompts, more judges, more comparisons per prompt.
#: (``comparisons``: more comparisons per prompt at the same prompts and judges; the count
#: shown is the total.)
LEVERS = ("prompts", "judges", "comparisons", "prompts and judges")


@dataclass(frozen=True, eq=False)
class Components:
    """The pilot's covariance split into parts (module doc): ``parts[axis]`` (K, K) for
    each clustering axis, ``residual`` (K, K), and the pilot's ``sizes`` (clusters per axis
    and comparisons)."""

    parts: dict[str, np.ndarray]
    residual: np.ndarray
    sizes: dict[str, float]

    def projected(self, prompts: float = 1.0, judges: float = 1.0,
                  comparisons: float = 1.0, repair: bool = True) -> np.ndarray:
        """``V(m)`` at the multipliers of prompts, judges and comparisons per prompt,
        repaired to PSD (``repair``; the contrasts' plans use the sum as it is)."""
        scale = {"prompt": prompts, "judge": judges}
        total = self.residual / (prompts * comparisons)
        for axis, part in self.parts.items():
            total = total + part / scale.get(axis, 1.0)
        return repair_psd(total)[0] if repair else total

    def extension_change(self, new: float, old: float = 1.0) -> np.ndarray:
        """The covariance of ``S_new - S_old`` when a release of ``old`` times the pilot's
        prompts is extended to ``new`` times them (the same judges and design; the new
        release holds the old one's rows).

        With ``P(m) = (A_prompt + R) / m`` the part that averages the prompts' influence,
        ``V(m) = A_judge + P(m)``. The new release's prompts include the old one's, so
        the releases' prompt parts have covariance ``P(new)`` (the larger release's); the
        same judges, with the same tastes, give both releases the judge part ``A_judge``.
        So ``Var(S_new - S_old) = V(old) + V(new) - 2 (A_judge + P(new)) = P(old) - P(new)
        = V(old) - V(new)``, repaired to PSD.
        The same covariance as :mod:`winrate.diff`'s stacked influence of both fits, in
        expectation (``tests/test_plan.py`` compares them)."""
        if not new > old > 0:
            raise WinrateInputError(f"an extension needs new > old > 0, got {new}, {old}")
        change = (self.projected(prompts=old, repair=False)
                  - self.projected(prompts=new, repair=False))
        return repair_psd(change)[0]

    def of(self, contrast: np.ndarray) -> dict[str, float]:
        """A contrast's variance components, each clipped at 0."""
        found = {axis: float(contrast @ part @ contrast) for axis, part in self.parts.items()}
        found["residual"] = float(contrast @ self.residual @ contrast)
        return {k: max(v, 0.0) for k, v in found.items()}


def components(result: Analysis) -> Components:
    """The variance components of ``result``'s fit (module doc), from its cluster sums by
    its clustering (CR1, as the leaderboard's own sandwich)."""
    if not isinstance(result.log, ComparisonLog):
        raise WinrateInputError("plan reads the rows' influence: it needs an analysis of a "
                                "comparison log in memory (not a scan or a score table)")
    clustering = tuple(result.clustering)
    if len(clustering) > 2:
        raise WinrateInputError(f"plan: at most two clustering axes, got {clustering}")
    board = result.leaderboard
    found = clustered(memory_sums(result.log, board, clustering, None), "cr1", designs=False)
    sizes = {"comparisons": float(result.n_comparisons)}
    if not clustering:
        return Components({}, found.naive, sizes)
    multiway = found.covariance
    by_dims = dict(zip((dims for dims, _, _ in multiway.terms), multiway.term_covs,
                       strict=True))
    residual = by_dims[tuple(range(len(clustering)))] if len(clustering) == 2 else found.naive
    parts = {axis: by_dims[(d,)] - residual for d, axis in enumerate(clustering)}
    sizes.update({axis: float(n) for axis, n in zip(clustering, multiway.n_clusters,
                                                     strict=True)})
    return Components(parts, residual, sizes)


@dataclass(frozen=True)
class Requirement:
    """What one contrast needs: its ``effect``, the ``critical_value`` it is tested at,
    its pilot ``se`` and power, and per lever the multiplier and the resulting count
    (``inf``: that lever alone cannot reach the power)."""

    name: str
    effect: float
    critical_value: float
    se: float
    power: float
    multipliers: dict[str, float]
    needed: dict[str, float]

    def to_dict(self) -> dict:
        return json_safe({"contrast": self.name, "effect": self.effect,
                          "critical_value": self.critical_value, "se_now": self.se,
                          "power_now": self.power, "multipliers": self.multipliers,
                          "needed": self.needed})


@dataclass(frozen=True, eq=False)
class Plan:
    """:func:`plan`'s result: the ``requirements`` of the contrasts asked for, and the
    projected marginal interval widths and mean rank-set sizes at :data:`MULTIPLIERS` times
    the prompts (``projection``, one row per multiplier, 1 = the pilot)."""

    requirements: tuple[Requirement, ...]
    projection: pd.DataFrame
    power: float
    alpha: float
    simultaneous: bool
    components: Components
    notes: Notes = field(default_factory=Notes)
    analysis: Analysis | None = None

    def to_dict(self) -> dict:
        return json_safe({
            "power": self.power, "alpha": self.alpha, "simultaneous": self.simultaneous,
            "pilot": self.components.sizes,
            "requirements": [r.to_dict() for r in self.requirements],
            "projection": self.projection.reset_index().to_dict(orient="records"),
            "notes": [note.to_dict() for note in self.notes],
        })

    def page_document(self) -> dict:
        """The pilot's leaderboard document with the plan under ``plan``: the web page's
        source (:func:`winrate.report.builders.page_document`)."""
        return page_document(self.analysis, "plan", self.to_dict())

    def to_html(self, path=None, title: str | None = None) -> str:
        """The pilot's board as a web page with the plan's tables
        (:mod:`winrate.report.html_page`), also written to ``path`` when given."""
        return publish_page(self.analysis, "plan", self.to_dict(), path, title)

    def summary(self) -> Summary:
        """The plan as ``winrate plan`` prints it."""
        return text_block("Plan", self._parts("text"), self.notes)

    def to_markdown(self) -> str:
        """The plan as a Markdown section (pipe tables)."""
        return markdown_document("Plan", self._parts("markdown"), self.notes)

    def _parts(self, fmt: str) -> list[str]:
        rows = [[r.name, f"{r.effect:.4g}", f"{r.se:.4g}", f"{100 * r.power:.0f}%",
                 *(_count(r.needed[lever]) for lever in LEVERS)] for r in self.requirements]
        needed = pd.DataFrame(rows, columns=["contrast", "effect", "SE now", "power now",
                                             *LEVERS])
        sizes = ", ".join(f"{v:,.0f} {k if k == 'comparisons' else k + 's'}"
                          for k, v in self.components.sizes.items())
        head = (f"Pilot: {sizes}. Needed for {100 * self.power:g}% power at level "
                f"{self.alpha:g}" + (" (simultaneous over the contrasts)" if self.simultaneous
                                     else "") + ", each lever alone:")
        gap = "\n\n" if fmt == "markdown" else "\n"
        return [head + gap + frame_table(needed, fmt),
                "Projected at more prompts (same judges and design):" + gap
                + frame_table(self.projection.round(4), fmt, index=True)]

    def __str__(self) -> str:
        return str(self.summary())


def _count(value: float) -> str:
    """A count, ``-`` for a lever the clustering has not, ``unreachable`` for infinity."""
    if np.isnan(value):
        return "-"
    return "unreachable" if np.isinf(value) else f"{value:,.0f}"


def plan(result: Analysis, *, models=None, delta: float | None = None, top: int | None = None,
         power: float = 0.8, alpha: float | None = None,
         simultaneous: bool = False) -> Plan:
    """How much more data ``result``'s leaderboard needs (module doc).

    (a) ``models=(A, B)`` and ``delta``: the difference ``S_A - S_B`` (on the score scale)
    to detect; (b) ``top=k``: every adjacent pair among the current top k, each at its
    current estimated gap. ``power`` (1 - beta) at level ``alpha`` (default the
    analysis'); ``simultaneous``: the contrasts are tested together (max-|T| critical
    value of their pilot covariance). Returns the :class:`Plan`.
    """
    alpha = result.alpha if alpha is None else alpha
    if not (0 < power < 1 and 0 < alpha < 1):
        raise WinrateInputError(f"power and alpha must be in (0, 1), got {power}, {alpha}")
    parts = components(result)
    contrasts, effects, names = _contrasts(result, models, delta, top)
    crit = _critical_value(contrasts, result.cov, alpha, simultaneous)
    pilot = {"prompts": parts.sizes.get("prompt", np.nan),
             "judges": parts.sizes.get("judge", np.nan),
             "comparisons": parts.sizes["comparisons"]}
    requirements = tuple(_requirement(name, c, effect, crit, power, parts, pilot)
                         for name, c, effect in zip(names, contrasts, effects, strict=True))
    found = Notes(notes.plan_unreachable(r.name, [lever for lever, m in r.multipliers.items()
                                                   if np.isinf(m)])
                  for r in requirements if np.isinf(list(r.multipliers.values())).any())
    notes.give(found)
    return Plan(requirements, _projection(result, parts, alpha), power, alpha, simultaneous,
                parts, found, result)


def change_power(result: Analysis, model: str, change: float, new: float, old: float = 1.0,
                 *, alpha: float | None = None, seed: int = 0) -> float:
    """The power with which ``winrate diff`` (:func:`winrate.diff.diff_releases`) detects a
    change ``change`` of ``model``'s score between a release of ``old`` times the prompts
    of ``result``'s log and its extension to ``new`` times them (same judges and design).

    The change covariance is :meth:`Components.extension_change`; on an unbounded scale
    (Elo) both releases are centred on their models, as the diff centres them
    (``D = M (S_new - S_old)``, ``M = I - 11'/K``), and ``change`` is the centred change.
    A change is detected when its simultaneous interval over every model's change excludes
    0: two-sided, at the max-|T| critical value ``c`` of the changes' covariance
    (:func:`winrate.inference.joint.simultaneous_intervals`, ``seed`` its draws) on the t
    reference the diff will use (:func:`planned_change_df`), so the power is
    :func:`detection_power` ``(change, sd, c)``.
    """
    alpha = result.alpha if alpha is None else alpha
    index = pd.Index(result.models.astype(str))
    at = index.get_indexer([str(model)])[0]
    if at < 0:
        raise WinrateInputError(f"plan: model {model!r} is not on the leaderboard")
    parts = components(result)
    k = len(index)
    centre = np.eye(k) if result.leaderboard.scale.bounded else np.eye(k) - 1.0 / k
    cov = centre @ parts.extension_change(new, old) @ centre.T
    df = planned_change_df(parts, centre, new)
    crit = simultaneous_intervals(np.zeros(k), cov, alpha, float(np.nanmin(df)),
                                  seed=seed).critical_value
    return detection_power(change, float(np.sqrt(cov[at, at])), float(crit))


def planned_change_df(parts: Components, contrasts: np.ndarray, new: float) -> np.ndarray:
    """The Satterthwaite degrees of freedom :func:`winrate.diff.satterthwaite_df` will give
    each change ``c' (S_new - S_old)`` of a release extended to ``new`` times the pilot's
    prompts, from the components. The change's variance ``v = c'(A_prompt + R)c Delta``
    (``Delta = 1/old - 1/new``) is estimated by the prompt term (``G_p - 1`` df, ``G_p``
    the new release's prompts); with a judge axis, its judge and prompt x judge terms each
    hold about the residual part ``r = c'Rc Delta`` and cancel, but their sums over the
    ``G_j`` judges add ``r^2 / (G_j - 1)`` to the spread (the cells' term is negligible):
    ``df = 1 / (1 / (G_p - 1) + (r / v)^2 / (G_j - 1))``."""
    total = np.einsum("ij,jk,ik->i", contrasts, parts.residual + parts.parts.get(
        "prompt", 0.0 * parts.residual), contrasts)
    share = np.divide(np.einsum("ij,jk,ik->i", contrasts, parts.residual, contrasts), total,
                      out=np.zeros(len(contrasts)), where=total > 0)
    prompts = new * parts.sizes.get("prompt", parts.sizes["comparisons"])
    spread = 1.0 / (prompts - 1.0)
    if "judge" in parts.parts:
        spread = spread + share ** 2 / (parts.sizes["judge"] - 1.0)
    return 1.0 / spread


def _contrasts(result: Analysis, models, delta, top):
    index = pd.Index(result.models.astype(str))
    rows, effects, names = [], [], []
    if models is not None:
        if delta is None or len(models) != 2:
            raise WinrateInputError("plan: give two models and the difference delta to "
                                    "detect between them")
        codes = index.get_indexer([str(m) for m in models])
        if (codes < 0).any():
            missing = [m for m, c in zip(models, codes, strict=True) if c < 0]
            raise WinrateInputError(f"plan: model(s) {missing} not on the leaderboard")
        rows.append(np.eye(len(index))[codes[0]] - np.eye(len(index))[codes[1]])
        effects.append(float(delta))
        names.append(f"{models[0]} - {models[1]}")
    if top is not None:
        ranked = index.get_indexer(result.ranked_models)[:top]
        if len(ranked) < 2:
            raise WinrateInputError(f"plan: top {top} needs at least 2 models")
        for hi, lo in zip(ranked[:-1], ranked[1:], strict=True):
            rows.append(np.eye(len(index))[hi] - np.eye(len(index))[lo])
            effects.append(float(result.scores[hi] - result.scores[lo]))
            names.append(f"{index[hi]} - {index[lo]}")
    if not rows:
        raise WinrateInputError("plan: give models and delta, or top")
    return np.array(rows), np.array(effects), names


def _critical_value(contrasts, cov, alpha: float, simultaneous: bool) -> float:
    """``z_{1-alpha/2}``, or the max-|T| critical value of the contrasts together."""
    if not simultaneous or len(contrasts) == 1:
        return float(ndtri(1 - alpha / 2))
    contrast_cov = contrasts @ cov @ contrasts.T
    return float(simultaneous_intervals(np.zeros(len(contrasts)), contrast_cov,
                                        alpha).critical_value)


def detection_power(effect: float, se: float, critical_value: float) -> float:
    """Two-sided ``P(|Z + effect / se| > c)``, ``Z ~ N(0, 1)``."""
    shift = abs(effect) / se
    return float(ndtr(shift - critical_value) + ndtr(-shift - critical_value))


def _requirement(name, contrast, effect, crit, power, parts: Components,
                 pilot: dict) -> Requirement:
    """The multiplier of each lever alone (module doc) and the count it means."""
    part = parts.of(contrast)
    a_p, a_j, r = part.get("prompt", 0.0), part.get("judge", 0.0), part["residual"]
    other = sum(v for k, v in part.items() if k not in ("prompt", "judge", "residual"))
    se = float(np.sqrt(a_p + a_j + r + other))
    target = (effect / (crit + ndtri(power))) ** 2

    def needed(share, fixed):
        return share / (target - fixed) if target > fixed else np.inf

    multipliers = {"prompts": needed(a_p + r, a_j + other) if "prompt" in part else np.nan,
                   "judges": needed(a_j, a_p + r + other) if "judge" in part else np.nan,
                   "comparisons": needed(r, a_p + a_j + other),
                   "prompts and judges": needed(a_p + a_j + r, other)}
    counts = {lever: np.ceil(m * pilot[lever.split()[0]]) if np.isfinite(m) else m
              for lever, m in multipliers.items()}  # prompts and judges: the prompts
    return Requirement(name, effect, crit, se, detection_power(effect, se, crit),
                       multipliers, counts)


def _projection(result: Analysis, parts: Components, alpha: float) -> pd.DataFrame:
    """Mean marginal interval width and mean rank-set size at more prompts (at the
    current scores: a plug-in projection)."""
    z = float(ndtri(1 - alpha / 2))
    keep = np.isfinite(result.se)
    rows = {}
    for m in (1.0, *MULTIPLIERS):
        cov = parts.projected(prompts=m)[np.ix_(keep, keep)]
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
        ranks = rank_sets(result.scores[keep], cov, alpha)
        rows[m] = {"mean_width": float(2 * z * se.mean()),
                   "mean_rank_set_size": float(np.mean(ranks.high - ranks.low + 1))}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "prompts_multiplier"
    return frame
