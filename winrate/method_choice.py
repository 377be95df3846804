"""``method="auto"``: the variance method, small-sample correction and reference
distribution, chosen from the design, with the reason in words.

The rule reads only the design -- the clustering axes and their cluster counts, how many
comparisons inform each model pair, and the estimator -- never the outcomes, so it cannot
pick the method that happens to give the narrowest interval. Each branch rests on the
coverage study in ``paper/coverage/`` (``scripts/coverage.py``, 400+ replications per
cell), which also measures the ``auto`` rule itself:

1. **No clustering**: the naive sandwich (each comparison independent), normal reference.
2. **Two or more axes, all with fewer than** :data:`SMALL_AXIS` **clusters** (e.g. 30
   prompts x 30 judges): Owen's (2007) pigeonhole bootstrap. There the two-way sandwich
   and the jackknife under-cover jointly even with t(G - 1); the pigeonhole bootstrap,
   which counts the cell variance twice, is the only method near nominal.
3. **Otherwise the multiway sandwich with t(G_min - 1)** critical values, G_min the
   smallest cluster count among the axes (MacKinnon, Nielsen & Webb 2023, "Cluster-robust
   inference: a guide to empirical practice", J. Econometrics 232(2)); with many clusters
   this is the normal reference. Its small-sample correction:

   * the win rate on a **thin design** (the median observed pair is informed by fewer
     than :data:`THIN_PAIR` comparisons): CR2 (:mod:`winrate.variance`, Bell & McCaffrey
     2002). Each pair's mean is then estimated from a few prompts, and the leverage of
     those prompts biases CR1 down by about the share of a pair each prompt carries;
   * otherwise CR1 (and always for Bradley-Terry, which pools every pair into K ratings,
     so no comparison has a large leverage).

A caveat (:func:`no_reliable_method`) is added where no method in the study reached
nominal coverage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Below this many clusters on every one of two or more axes, the pigeonhole bootstrap.
SMALL_AXIS = 50
#: Median comparisons per observed model pair below which the win rate's design is thin.
THIN_PAIR = 30
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


def median_pair_size(counts: np.ndarray) -> float:
    """Median number of comparisons over the observed model pairs (upper triangle of the
    symmetric (K, K) ``counts``); NaN when no pair was observed."""
    upper = counts[np.triu_indices_from(counts, k=1)]
    observed = upper[upper > 0]
    return float(np.median(observed)) if observed.size else float("nan")


def choose(names: tuple[str, ...], sizes: list[int], estimator: str,
           pair_size: float) -> AutoChoice:
    """The ``auto`` rule (module doc) for clustering axes ``names`` with ``sizes`` clusters,
    the ``estimator`` (``"winrate"`` or ``"bt"``) and the median observed pair size."""
    if not names:
        return AutoChoice("sandwich", "cr1", "normal",
                          "no clustering, so each comparison is an independent unit")
    if len(names) > 1 and max(sizes) < SMALL_AXIS:
        return AutoChoice(
            "bootstrap", "cr1", "normal",
            f"every axis has fewer than {SMALL_AXIS} clusters, where the two-way sandwich "
            "and the jackknife under-cover jointly and the pigeonhole bootstrap does not "
            "(paper/coverage)")
    thin = estimator == "winrate" and pair_size < THIN_PAIR
    correction = "cr2" if thin else "cr1"
    why = (f"the median model pair rests on {pair_size:g} comparisons (< {THIN_PAIR}), so "
           "each prompt carries a large share of a pair and CR2 corrects that leverage"
           if thin else "CR1")
    g_min = min(sizes)
    return AutoChoice("sandwich", correction, "t",
                      f"{why}; t(G - 1) with G = {g_min:,}, the smallest cluster count "
                      "(MacKinnon, Nielsen & Webb 2023)")


def no_reliable_method(names: tuple[str, ...], sizes: list[int]) -> str | None:
    """The caveat for designs where no interval method reached nominal coverage in the
    study (an axis with <= :data:`TOO_FEW` clusters, or two axes both at or below
    :data:`FEW_BOTH`), or None."""
    if not names:
        return None
    axis, g = min(zip(names, sizes, strict=True), key=lambda pair: pair[1])
    if g <= TOO_FEW:
        return (f"with only {g} {axis} clusters no interval method covers at its nominal "
                f"level (coverage study, paper/coverage): the intervals are wide and still "
                f"rough. Report results per {axis}, or cluster without the {axis} axis and "
                f"say they are conditional on these {g} {axis}s.")
    low, high = sorted(sizes)[:2] if len(sizes) > 1 else (g, np.inf)
    if low <= FEW_BOTH[0] and high <= FEW_BOTH[1]:
        return (f"with {low} and {high} clusters on the two smallest axes no interval method "
                "covers at its nominal level (coverage study, paper/coverage); treat the "
                "intervals as rough and collect more prompts.")
    return None
