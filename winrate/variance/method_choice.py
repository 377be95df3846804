"""``method="auto"``: the variance method, small-sample correction and reference
distribution, chosen from the design, with the reason in words.

The rule reads only the design -- the clustering axes and their cluster counts, how many
comparisons inform each model pair, and the estimator -- never the outcomes, so it cannot
pick the method that happens to give the narrowest interval. Each branch rests on the
coverage study in ``paper/coverage/`` (``scripts/coverage.py``, 400+ replications per
cell), which also measures the ``auto`` rule itself:

1. **No clustering**: the naive sandwich (each comparison independent), normal reference.
2. **The win rate on a small crossed design**: two or more axes, all with fewer than
   :data:`SMALL_AXIS` clusters and the smallest with at least :data:`MIN_CROSSED_AXIS` (e.g.
   30-60 prompts x 10-30 judges): the CR2 sandwich with a t reference on Pan & Wall's
   degrees of freedom, as in 3. There the two-way CR1 sandwich with t(G - 1) under-covers
   jointly (the tuning grid's 30 x 30: 91.6 / 83.8%): the prompts' sizes are unequal, so a
   few large prompts carry much of the variance -- CR1 leaves their leverage bias and
   t(G - 1) overstates how well G clusters pin the variance down -- while CR2 with Pan-Wall
   df covered 93.3 / 93.8 there and 93.4-94.3 / 92.8-93.9 in the other small crossed tuning
   cells (1,000 replications each, Wald bounds; ``docs/coverage.md``, "The fix"). Owen's
   (2007) pigeonhole bootstrap, the rule until issue 24, reached nominal coverage on the
   tuning grid only through its known conservativeness (it counts the prompt x judge cell
   variance three times): on a held-out design whose variance is mostly cell noise (8
   models, 30 prompts x 30 judges) it covered 98.7 / 99.5%, where CR2 with Pan-Wall df
   covers 94.5 / 93.9 (200 / 1,000 replications). Bradley-Terry (no CR2 strata) falls
   through to 4 (t(G - 1) CR1: 94.8 / 94.7 on that design). With fewer clusters on the
   smallest axis (a handful of judges) CR1 with t(G - 1) (rule 4) is kept: the tuning grid's
   30 prompts x 5 judges covered 95.5 / 94.8.
3. **The win rate on a thin design** (some model's median observed pair is informed by
   fewer than :data:`THIN_PAIR` comparisons, :func:`thinnest_pair_size`): the CR2
   sandwich (:mod:`winrate.variance.sandwich`, Bell &
   McCaffrey 2002) with a t reference on Pan & Wall's (2002) degrees of freedom per model
   (:func:`winrate.variance.sandwich.pan_wall_df`). Each pair's mean is then estimated from a few
   prompts: their leverage biases CR1 down by about the share of a pair each prompt
   carries, which CR2 removes; and the variance estimate itself can be noisy, most when
   the cluster totals are heavy-tailed (pairs judged in both orders with a strong
   position bias: the design study's ``cr2`` column, CR2 with a normal reference, falls
   short of nominal simultaneous coverage there), which the df carry. Joint inference
   takes the smallest model df.
4. **Otherwise the multiway CR1 sandwich with t(G_min - 1)** critical values, G_min the
   smallest cluster count among the axes (MacKinnon, Nielsen & Webb 2023, "Cluster-robust
   inference: a guide to empirical practice", J. Econometrics 232(2)); from
   :data:`LARGE_AXIS` clusters the normal reference. CR1 also for Bradley-Terry, which
   pools every pair into K ratings, so no comparison has a large leverage.

A caveat (:func:`no_reliable_method`) is added where no method in the study reached
nominal coverage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from winrate import notes

#: Below this many clusters on every one of two or more axes, the win rate takes CR2 with
#: Pan-Wall df...
SMALL_AXIS = 100
#: ... provided the smallest axis has at least this many clusters (until issue 24 the
#: pigeonhole bootstrap's condition, ``MIN_BOOTSTRAP_AXIS``; same value).
MIN_CROSSED_AXIS = 10
#: From this many clusters on the smallest axis, the normal reference (t(G - 1) is within
#: 2.5% of it).
LARGE_AXIS = 50
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
    """What ``method="auto"`` runs: ``method`` (``"sandwich"`` or ``"bootstrap"``),
    ``correction``, ``reference`` (``"t"`` or ``"normal"``) and the ``reason`` in words."""

    method: str
    correction: str
    reference: str
    reason: str


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


def choose(names: tuple[str, ...], sizes: list[int], thin_design_rule: bool,
           pair_size: float) -> AutoChoice:
    """The ``auto`` rule (module doc) for clustering axes ``names`` with ``sizes`` clusters,
    whether the estimator takes the thin-design and small-crossed rules (CR2 with Pan-Wall
    df; they need the estimator's CR2 strata,
    :meth:`winrate.estimators.base.Estimator.thin_design_rule`) and
    :func:`thinnest_pair_size`."""
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
    g_min = min(sizes)
    if g_min >= LARGE_AXIS:
        return AutoChoice("sandwich", "cr1", "normal",
                          f"CR1; normal reference: the smallest axis has {g_min:,} "
                          f"clusters (>= {LARGE_AXIS}, where t(G - 1) is within 2.5% of it)")
    return AutoChoice("sandwich", "cr1", "t",
                      f"CR1; t(G - 1) with G = {g_min:,}, the smallest cluster count "
                      "(MacKinnon, Nielsen & Webb 2023)")


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
