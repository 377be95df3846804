"""``method="auto"``: the variance method, small-sample correction and reference
distribution, chosen from the design, with the reason in words.

The rule reads only the design -- the clustering axes, their cluster counts G and each
model's *effective* number of clusters G* on each axis
(:func:`winrate.variance.diagnostics.effective_size`), how
many comparisons inform each model pair, and the estimator -- never the outcomes, so it
cannot pick the method that happens to give the narrowest interval. Each branch rests on
the coverage studies in ``paper/coverage/`` (``scripts/coverage.py``; the held-out study
of ``docs/coverage.md``), which also measure the ``auto`` rule itself.

**The effective number of clusters.** A clustered variance averages G cluster
contributions; when they are unequal -- a few prompts carry most of a model's comparisons
-- it behaves as an average of far fewer. Carter, Schnepel & Steigerwald (2017, REStat
99(4)) measure this by ``G* = (sum_g gamma_g)^2 / sum_g gamma_g^2``
(:func:`winrate.variance.diagnostics.effective_clusters`, with ``gamma_g`` cluster g's share
of the model's squared influence), and show that the normal approximation of the
cluster-robust t statistic is governed by G*, not G. MacKinnon, Nielsen & Webb (2023,
"Cluster-robust inference: a guide to empirical practice", J. Econometrics 232(2),
sec. 4-6) make it their first diagnostic: with unequal cluster sizes CR1 with t(G - 1)
over-rejects even for G of 50-100, and they recommend the bias-reduced CR2/CV3 variance
(CV3: the delete-one-cluster jackknife) with t critical values. The reference df follow
the same quantity: the Bell-McCaffrey (2002) degrees of freedom, which Imbens & Kolesar
(2016, REStat 98(4)) show to be what makes CR2 intervals valid with few or unequal
clusters, are a Satterthwaite match ``(sum_g lambda_g)^2 / sum_g lambda_g^2`` over the
clusters' contributions to the variance; under a working-independence model those
contributions are the ``gamma_g``, so the Bell-McCaffrey df of a model's score is its G*
(Pustejovsky & Tipton 2018, JBES 36(4), sec. 3, call this the Satterthwaite df of the
working model and show that CR2 with it holds its level where CR1 with G - 1 fails). The
rule therefore reads G* per model and axis: the fewest over the models decides the branch
(a method that is valid for the worst-placed model is valid for the others), and each
model's reference df is its own ``G*_a - 1`` (the smallest over the axes; at most
``G - 1``), as t(G - 1) would be for G equal clusters. The raw count G enters only where
the tuning grid tied the rule to it (a handful of judges, rule 4).

1. **No clustering**: the naive sandwich (each comparison independent), normal reference.
2. **Few effective clusters** -- some model's G* on some axis below :data:`LARGE_AXIS`,
   every axis with at least :data:`MIN_CROSSED_AXIS` clusters -- one rule for every
   estimator: a bias-reduced variance with a small-sample t reference. The win rate (an
   estimator with CR2 strata, :meth:`winrate.estimators.base.Estimator.thin_design_rule`)
   takes CR2 with a t reference on each model's Pan-Wall df, at most its ``G* - 1``; an
   estimator without CR2 strata (Bradley-Terry) the delete-one-cluster jackknife (CV3J,
   :func:`winrate.variance.resampling.multiway_jackknife_cov`, bias-reduced like CR2:
   MacKinnon, Nielsen & Webb 2023) with t on each model's ``G* - 1``; where the jackknife
   cannot run (per-question fits without rows, a scan on an engine) or would take too long
   (:func:`jackknife_affordable`) CR1 with t on ``G* - 1``. The issue-37 design
   (60 prompts with Pareto sizes, G* about 11-15): CR1 with a normal reference covered
   90.0 / 80.3 (win rate) and 90.6 / 82.0 (Bradley-Terry); CR2 with Pan-Wall df 95.2 /
   98.3, the jackknife with t 94.9 / 90.3 and 94.7 / 89.0 (300 exploratory replications,
   ``docs/coverage.md``, "Issue 37"). As rows per prompt grow G* does not, so the rule does
   not flip to CR1 with a normal reference (the win rate's "median pair < 20" rule did).
   The win rate checks rules 3 and 4 first (the same CR2 method; their Pan-Wall df are
   not capped at G* - 1: on a thin design the rare models' G* is small while their
   Pan-Wall df already carry the pairs' noise, and the cap made the held-out thin Pareto
   cell over-cover, 97.6% against 94.7% without it; ``docs/coverage.md``, amendment 2).
3. **The win rate on a small crossed design**: two or more axes, all with fewer than
   :data:`SMALL_AXIS` clusters and the smallest with at least :data:`MIN_CROSSED_AXIS` (e.g.
   30-60 prompts x 10-30 judges): the CR2 sandwich with a t reference on Pan & Wall's
   degrees of freedom, as in 4. There the two-way CR1 sandwich with t(G - 1) under-covers
   jointly (the tuning grid's 30 x 30: 91.6 / 83.8%): the prompts' sizes are unequal, so a
   few large prompts carry much of the variance, while CR2 with Pan-Wall df covered 93.3 /
   93.8 there and 93.4-94.3 / 92.8-93.9 in the other small crossed tuning cells (1,000
   replications each, Wald bounds; ``docs/coverage.md``, "The fix"). Owen's (2007)
   pigeonhole bootstrap, the rule until issue 24, over-covered a held-out design whose
   variance is mostly cell noise (98.7 / 99.5%). With fewer clusters on the smallest axis
   (a handful of judges) CR1 with t(G - 1) (rule 5) is kept: the tuning grid's 30 prompts x
   5 judges covered 95.5 / 94.8.
4. **The win rate on a thin design** (some model's median observed pair is informed by
   fewer than :data:`THIN_PAIR` comparisons, :func:`thinnest_pair_size`): the CR2
   sandwich (:mod:`winrate.variance.sandwich`, Bell & McCaffrey 2002) with a t reference on
   Pan & Wall's (2002) degrees of freedom per model
   (:func:`winrate.variance.sandwich.pan_wall_df`). Each pair's mean is then estimated from
   a few prompts: their leverage biases CR1 down by about the share of a pair each prompt
   carries, which CR2 removes; and the variance estimate itself can be noisy, most when
   the cluster totals are heavy-tailed, which the df carry. Joint inference takes the
   smallest model df.
5. **Otherwise the multiway CR1 sandwich with t(G_min - 1)** critical values, G_min the
   smallest cluster count among the axes (MacKinnon, Nielsen & Webb 2023); the normal
   reference when every model has at least :data:`LARGE_AXIS` effective clusters on every
   axis (t(G* - 1) is then within 2.5% of it). CR1 also for Bradley-Terry, which pools every
   pair into K ratings, so no comparison has a large leverage.

A caveat (:func:`no_reliable_method`) is added where no method in the study reached
nominal coverage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from winrate import notes
from winrate.variance import diagnostics
from winrate.variance.cluster_sums import ClusterSums

#: Below this many clusters on every one of two or more axes, the win rate takes CR2 with
#: Pan-Wall df...
SMALL_AXIS = 100
#: ... provided the smallest axis has at least this many clusters (until issue 24 the
#: pigeonhole bootstrap's condition, ``MIN_BOOTSTRAP_AXIS``; same value).
MIN_CROSSED_AXIS = 10
#: From this many effective clusters G* for every model on every axis, CR1 with the normal
#: reference (t(G* - 1) is within 2.5% of it); below it, rule 2 (module doc).
LARGE_AXIS = 50
#: The delete-one-cluster jackknife refits the estimator once per cluster (from its
#: sufficient statistics: 0.15 s for Bradley-Terry on 1,000 prompts); above this many
#: clusters on an axis rule 2 keeps CR1 with t on G* - 1 ...
JACKKNIFE_MAX_CLUSTERS = 5000
#: ... and, for an estimator whose refits read the rows (covariates, Davidson ties,
#: Rao-Kupper), above this many clusters x rows (each refit a fit of the whole log).
JACKKNIFE_MAX_ROW_REFITS = 20_000_000


def jackknife_affordable(sizes: list[int], refits_rows: bool, n_rows: int) -> bool:
    """Whether rule 2 may run the delete-one-cluster jackknife: at most
    :data:`JACKKNIFE_MAX_CLUSTERS` clusters on every axis and, when each refit reads the
    rows, at most :data:`JACKKNIFE_MAX_ROW_REFITS` clusters x rows."""
    return (max(sizes) <= JACKKNIFE_MAX_CLUSTERS
            and (not refits_rows or sum(sizes) * n_rows <= JACKKNIFE_MAX_ROW_REFITS))
#: Median comparisons per observed pair of some model below which the win rate's design is
#: thin (the study's thin cells have 1-6 for their rarest models, the crossed grid from 30
#: prompts about 20 and more).
THIN_PAIR = 20
#: Cluster counts at or below which no method reached nominal coverage in the study.
TOO_FEW = 2
#: With two or more axes, both at or below these counts, no method reached it either.
FEW_BOTH = (10, 30)


@dataclass(frozen=True)
class AutoChoice:
    """What ``method="auto"`` runs: ``method`` (``"sandwich"`` or ``"jackknife"``),
    ``correction``, ``reference`` (``"t"`` or ``"normal"``), the ``reason`` in words and
    any per-model reference ``df``."""

    method: str
    correction: str
    reference: str
    reason: str
    #: per-model t degrees of freedom from the effective clusters (``G*_a - 1``), or None
    #: for the method's own (Pan-Wall for CR2, G_min - 1 otherwise)
    df: np.ndarray | None = None


def thinnest_pair_size(counts: np.ndarray) -> float:
    """The smallest, over models, of the median number of comparisons over the model's
    observed pairs (the symmetric (K, K) ``counts``); NaN when no pair was observed.

    Per model, because the leverage that CR2 corrects is a pair's: a few rare models whose
    pairs rest on a handful of comparisons are thin even when the median pair of the whole
    log is large (the study's 5-pairs-per-prompt cell: median pair 31, rare models' pairs
    about 6, and CR1 with a normal reference covered 89.8% simultaneously).
    """
    observed = np.where(counts > 0, counts, np.nan)
    has_pairs = ~np.isnan(observed).all(axis=1)
    if not has_pairs.any():
        return float("nan")
    return float(np.nanmedian(observed[has_pairs], axis=1).min())


def effective_sizes(sums: ClusterSums, codes: np.ndarray,
                    expected: str | None = None) -> list[np.ndarray]:
    """Per clustering axis of ``sums`` (the :class:`~winrate.variance.cluster_sums.ClusterSums`
    of a fit's influence: rows or per-question cell totals), each model's effective number
    of clusters G* (:func:`winrate.variance.diagnostics.effective_size`; ``codes`` the
    fit's models): what :func:`choose` reads. ``expected``: the correction the choice
    takes whatever G* is (:func:`certain_correction`), which ``sums`` may compute in the
    same pass."""
    return [diagnostics.effective_size(sums.column_spread(axis, expected), codes)
            for axis in range(len(sums.n_clusters))]


def certain_correction(names: tuple[str, ...], sizes: list[int], thin_design_rule: bool,
                       pair_size: float) -> str | None:
    """``"cr2"`` where :func:`choose` takes CR2 whatever the effective cluster counts: an
    estimator with the CR2 rules on a small crossed or thin design (rules 3 and 4), or with
    an axis of fewer than :data:`LARGE_AXIS` clusters and none below
    :data:`MIN_CROSSED_AXIS` (rule 2: a model's G* is at most its axis' G); else None.
    A hint for how the counts are computed (:func:`effective_sizes`), never a choice."""
    if not names or thin_design_rule is not True:
        return None
    small_crossed = (len(names) > 1 and max(sizes) < SMALL_AXIS
                     and min(sizes) >= MIN_CROSSED_AXIS)
    few = LARGE_AXIS > min(sizes) >= MIN_CROSSED_AXIS
    return "cr2" if small_crossed or pair_size < THIN_PAIR or few else None


def effective_df(sizes: list[int], effective: list[np.ndarray]) -> np.ndarray:
    """Each model's reference df from its effective clusters (module doc): the smallest
    over the axes of ``G*_a - 1``, clipped to ``[1, G - 1]``; NaN for a model whose
    variance is identified on no axis."""
    per_axis = [np.clip(g_star - 1.0, 1.0, max(g - 1, 1))
                for g, g_star in zip(sizes, effective, strict=True)]
    return np.fmin.reduce(per_axis) if per_axis else np.array([])


def fewest_effective(names: tuple[str, ...], effective: list[np.ndarray] | None):
    """``(axis, model index, G*)`` of the smallest effective cluster count over the axes
    and models (identified ones), or None when it is not known."""
    if not effective:
        return None
    lowest = [(np.nanmin(e), name, int(np.nanargmin(e)))
              for name, e in zip(names, effective, strict=True) if np.isfinite(e).any()]
    if not lowest:
        return None
    g_star, name, model = min(lowest)
    return name, model, float(g_star)


def choose(names: tuple[str, ...], sizes: list[int], thin_design_rule: bool,
           pair_size: float, effective: list[np.ndarray] | None = None,
           jackknife: bool = True) -> AutoChoice:
    """The ``auto`` rule (module doc) for clustering axes ``names`` with ``sizes`` clusters
    and, per axis, each model's effective clusters ``effective`` (None when unknown: the
    raw counts stand in), whether the estimator takes the CR2 rules (CR2 with Pan-Wall
    df; they need the estimator's CR2 strata,
    :meth:`winrate.estimators.base.Estimator.thin_design_rule`), :func:`thinnest_pair_size`
    and whether the delete-one-cluster ``jackknife`` can run on this fit, affordably
    (:func:`jackknife_affordable`)."""
    if not names:
        return AutoChoice("sandwich", "cr1", "normal",
                          "no clustering, so each comparison is an independent unit")
    small_crossed = (len(names) > 1 and max(sizes) < SMALL_AXIS
                     and min(sizes) >= MIN_CROSSED_AXIS)
    if thin_design_rule is True and (small_crossed or pair_size < THIN_PAIR):
        why = (f"every axis has fewer than {SMALL_AXIS} clusters (and at least "
               f"{MIN_CROSSED_AXIS}), where unequal clusters bias CR1 down and make its "
               "variance noisy: CR2 corrects the leverage, t with Pan-Wall df per model "
               "carries the noise (paper/coverage)" if small_crossed else
               f"some model's median pair rests on {pair_size:g} comparisons (< {THIN_PAIR}), "
               "so each prompt carries a large share of a pair: CR2 corrects that leverage, "
               "and t with Pan-Wall df per model carries the noise of the variance estimate")
        return AutoChoice("sandwich", "cr2", "t", why)
    fewest = fewest_effective(names, effective)
    if fewest is not None and fewest[2] < LARGE_AXIS and min(sizes) >= MIN_CROSSED_AXIS:
        return _few_effective(sizes, effective, fewest, thin_design_rule, jackknife)
    g_min = min(sizes)
    if g_min >= LARGE_AXIS:
        counted = ("every model has at least " if fewest else "the smallest axis has ")
        least = g_min if fewest is None else fewest[2]
        return AutoChoice("sandwich", "cr1", "normal",
                          f"CR1; normal reference: {counted}{least:,.0f} "
                          f"{'effective ' if fewest else ''}clusters (>= {LARGE_AXIS}, "
                          "where t(G - 1) is within 2.5% of it)")
    return AutoChoice("sandwich", "cr1", "t",
                      f"CR1; t(G - 1) with G = {g_min:,}, the smallest cluster count "
                      "(MacKinnon, Nielsen & Webb 2023)")


def _few_effective(sizes: list[int], effective: list[np.ndarray], fewest: tuple,
                   thin_design_rule: bool, jackknife: bool) -> AutoChoice:
    """Rule 2 of the module doc: few effective clusters for some model."""
    axis, _, g_star = fewest
    head = (f"some model's SE rests on {g_star:.1f} effective {axis} clusters G* (< "
            f"{LARGE_AXIS}; Carter, Schnepel & Steigerwald 2017), where CR1 is biased down "
            "and a normal reference too light-tailed (MacKinnon, Nielsen & Webb 2023): ")
    df = effective_df(sizes, effective)
    if thin_design_rule is True:
        return AutoChoice("sandwich", "cr2", "t", head + "CR2 corrects the leverage of the "
                          "large clusters, t with Pan-Wall df per model, at most its G* - 1, "
                          "carries the noise of the variance estimate", df)
    if jackknife:
        return AutoChoice("jackknife", "cr1", "t", head + "the delete-one-cluster jackknife "
                          "corrects the leverage of the large clusters, t with G* - 1 df per "
                          "model (Bell-McCaffrey df under working independence) carries the "
                          "noise", df)
    return AutoChoice("sandwich", "cr1", "t", head + "t with G* - 1 df per model "
                      "(Bell-McCaffrey df under working independence) widens the intervals; "
                      "the jackknife, which would also correct CR1's bias, cannot run on "
                      "this fit", df)


def no_reliable_method(names: tuple[str, ...], sizes: list[int]):
    """The caveat (a :class:`winrate.notes.Note`) for designs where no interval method
    reached nominal coverage in the study (an axis with <= :data:`TOO_FEW` clusters, or two
    axes both at or below :data:`FEW_BOTH`), or None."""
    if not names:
        return None
    axis, g = min(zip(names, sizes, strict=True), key=lambda pair: pair[1])
    if g <= TOO_FEW:
        return notes.no_reliable_axis(axis, g)
    low, high = sorted(sizes)[:2] if len(sizes) > 1 else (g, np.inf)
    if low <= FEW_BOTH[0] and high <= FEW_BOTH[1]:
        return notes.no_reliable_pair(low, high)
    return None
