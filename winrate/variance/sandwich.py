"""Cluster-robust covariance of an influence matrix.

Every estimator in winrate is linearised as ``theta_hat - theta ~ sum_r u_r``, where the
influence ``u_r`` (a row of the ``(n, K)`` influence matrix) is row ``r``'s first-order push
on the ``K`` estimates. The variance of that sum under a dependence structure is a
*sandwich meat*; this module computes it for any clustering of the rows.

One-way (Liang & Zeger 1986; Cameron & Miller 2015, eq. 11)::

    V_G = c(G) * sum_g t_g t_g^T,    t_g = sum_{r in g} u_r

Multiway (Cameron, Gelbach & Miller 2011, "Robust inference with multiway clustering",
JBES 29(2), eq. 2.11): for d clustering dimensions, sum over every non-empty subset S of
the dimensions of ``(-1)^(|S|+1) V_{cap S}``, where ``cap S`` clusters rows that agree on
every dimension in S. For two dimensions: ``V = V_prompt + V_judge - V_{prompt x judge}``.

Bread. An M-estimator (Bradley-Terry) is linearised as ``u_r = B g_r`` with ``g_r`` row r's
score contribution and ``B`` the inverse Hessian (times any reporting map): its influence is
``G B^T`` for the sparse ``(n, q)`` score rows ``G``. Every function here takes that
factorisation as ``influence=G, bread=B`` and returns the sandwich
``B (c(G) sum_g t_g t_g^T) B^T`` (Huber 1967; Zeileis 2006, "Object-oriented computation of
sandwich estimators", JSS 16(9)), so a dense ``(n, K)`` influence is never built.
``bread=None`` means the influence is given directly.

Forms of the influence. Every function here reads it through its sums by cluster
(:class:`winrate.variance.cluster_sums.ClusterSums`): rows (CSR or dense), or totals within
cells that every clustering groups whole (a per-question eval's questions;
:class:`winrate.estimators.cells.CellTotals`), whose clustered meats follow from the cells'
totals and sums of squares and whose naive meat is kept with them (CR2 needs (cluster,
pair) totals, which cells hold only for clusters of one cell). The kernels are in
:mod:`winrate.variance.meats`.

Small-sample corrections ``c(G)``:

* ``"none"`` (CR0): ``c = 1``, the plain sandwich.
* ``"cr1"``: ``c = G / (G - 1)`` applied to each inclusion-exclusion term with that term's
  own number of clusters G (as statsmodels' ``cov_cluster_2groups`` does, without its
  ``(N - 1) / (N - k)`` regression factor, which has no counterpart for a plug-in
  estimator). This is the default: it is the convention of Stata and statsmodels and it
  matters exactly when clusters are few, which is when a user most needs the caution.
* ``"cr2"``: the bias-reduced linearisation of Bell & McCaffrey (2002, Survey Methodology
  28(2)) for an estimator that is a fixed combination of stratum means (the win rate's
  pairs; ``strata`` gives each row's stratum). The fitted stratum means make the hat
  matrix block-diagonal by stratum, ``H_gg`` restricted to stratum h in cluster g being
  ``f f^T / n_h`` (frequencies ``f``, stratum total ``n_h``), and since the influence is
  constant within a stratum, ``c^T (I - H_gg)^{-1/2} e_g`` reduces to scaling each
  (cluster, stratum) block total by ``(1 - m_gh / n_h)^{-1/2}`` with ``m_gh`` the block's
  frequency: ``c = 1``. It is unbiased when the rows are independent with a common
  variance within each stratum, where CR0 is biased down by the leverage ``m_gh / n_h``
  (large when each pair is seen on a few prompts). With every row its own cluster it is
  Cochran's ``n_h / (n_h - 1)`` of :func:`naive_cov`. A stratum lying wholly in one
  cluster has a zero block total (its residuals sum to zero) and is left as it is: its
  variance on that axis is not identified (flagged by the analysis).
"""

from __future__ import annotations

import numpy as np

from winrate import notes
from winrate.constants import CORRECTIONS, DEFAULT_CORRECTION
from winrate.variance.cluster_sums import clustered, influence_sums
from winrate.variance.meats import (
    GroupMeat,
    MultiwayCovariance,
    check_correction,
    combine_terms,
    group_codes,
    intersect_codes,
    leverage_factor,
    nested_sums,
    repair_psd,
    sandwich,
    small_sample_factor,
    stratum_leverage_scale,
    subsets,
    term_sign,
)

#: names of :mod:`winrate.variance.meats` that callers read from here
__all__ = [
    "CORRECTIONS", "DEFAULT_CORRECTION", "GroupMeat", "MultiwayCovariance", "cluster_cov",
    "combine_terms", "group_codes", "group_meat", "inclusion_exclusion", "intersect_codes",
    "leverage_factor", "multiway_cluster_cov", "naive_cov", "nested_sums", "pan_wall_df",
    "repair_psd", "sandwich", "small_sample_factor", "stratum_leverage_scale", "subsets",
]


def pan_wall_df(group: GroupMeat, variance: np.ndarray) -> np.ndarray:
    """Degrees of freedom of a clustered variance from the spread of the clusters'
    contributions (Pan & Wall 2002, "Small-sample adjustments in using the sandwich
    variance estimator in generalized estimating equations", Statistics in Medicine 21).

    Column a's clustered variance is ``V_a = sum_g P_ga`` with ``P_ga = t_ga^2`` the
    squared cluster totals (CR2: of the leverage-scaled rows, with no further factor).
    Treating the G clusters as independent draws, ``Var(V_a)`` is estimated by
    ``G / (G - 1) sum_g (P_ga - Pbar_a)^2`` (every cluster of the axis counted, those
    without a's comparisons with P = 0), and Satterthwaite's two-moment match gives
    ``nu_a = 2 W_a^2 / Var(V_a)`` with ``W_a`` = ``variance``, the variance actually used:
    ``V_a`` plus any fixed part (the small-sample floor), which adds no sampling noise.
    With G equal normal cluster totals ``nu ~ G``; heavy-tailed totals (rare, large
    deviations, as when a strong position bias cancels within a prompt) or a variance
    carried by a few clusters give fewer. At most ``G - 1``, the few-cluster reference
    (the moment estimate is itself noisy when G is small: with two clusters it is
    unbounded); ``G - 1`` also where the clustered part does not vary and only the fixed
    part remains; NaN where ``W_a`` is 0.
    ``group.fourth`` is ``sum_g t_g^4``, kept by the kernel.
    """
    g = group.n_groups
    total = np.diag(group.meat)
    spread = np.maximum(group.fourth - total**2 / g, 0.0) * g / max(g - 1, 1)
    variance = np.asarray(variance, float)
    nu = np.where(variance > 0, np.inf, np.nan)
    np.divide(2 * variance**2, spread, out=nu, where=(spread > 0) & (variance > 0))
    return np.clip(nu, 1.0, max(g - 1, 1))


def group_meat(influence, groups) -> GroupMeat:
    """:class:`GroupMeat` of the influence (or score rows, or cell totals) clustered by
    ``groups``."""
    return influence_sums(influence, [groups]).term_meats("none")[0]


def _cluster_meat(influence, groups) -> np.ndarray:
    """Sandwich meat ``sum_g t_g t_g^T`` with ``t_g = sum_{r in g} u_r``.

    Sparse influence goes through numba kernels: a radix pass scatters the non-zeros into
    buckets of groups, each bucket is sorted locally, and outer products are added over the
    columns a group touches; a dense ``(n, K)`` array is never built.
    Dense influence is group-summed by a sparse indicator product.
    """
    return group_meat(influence, groups).meat


def naive_cov(influence, correction: str = "none", frequency=None,
              bread: np.ndarray | None = None, strata=None) -> np.ndarray:
    """Covariance treating rows as independent: ``V = sum_r u_r u_r^T`` (times n/(n-1) for CR1).

    With frequency weights ``f_r`` (row r stands for f_r identical comparisons, and its
    influence row is their total ``f_r u_r``), ``V = sum_r (f_r u_r)(f_r u_r)^T / f_r`` and
    ``n = sum_r f_r``: exactly the naive covariance of the expanded log. ``bread``: see the
    module doc.

    ``strata`` (with CR1): the estimator is a combination of stratum means (the win rate's
    pairs), so each stratum h gets its own ``n_h / (n_h - 1)`` instead of ``n / (n - 1)``:
    the unbiased variance of a stratified mean (Cochran 1977, "Sampling Techniques", eq.
    5.6). A baseline design's naive SE is then exactly each model's standard error of the
    mean (AlpacaEval's ``standard_error``). A stratum of one comparison contributes nothing.
    """
    sums = influence_sums(influence, [], bread=bread, strata=strata, frequency=frequency)
    return clustered(sums, correction).naive


def cluster_cov(influence, groups, correction: str = DEFAULT_CORRECTION,
                bread: np.ndarray | None = None, strata=None,
                frequency=None) -> np.ndarray:
    """One-way cluster-robust covariance ``c(G) * sum_g t_g t_g^T`` (Liang-Zeger), sandwiched
    by ``bread`` when given; ``strata`` (and ``frequency``) for CR2 (module doc)."""
    return multiway_cluster_cov(influence, [groups], correction, bread, strata,
                                frequency).cov


def inclusion_exclusion(codes: list[np.ndarray], sizes: list[int], term,
                        what: str = "multiway covariance"):
    """``V = sum_{S non-empty} (-1)^(|S|+1) V_S`` over subsets S of the clustering
    dimensions (Cameron, Gelbach & Miller 2011, eq. 2.11), PSD-repaired when d > 1.

    ``codes``/``sizes``: dense codes and cluster counts of each dimension;
    ``term(term_codes, n_range)`` returns ``(V_S, info)`` for the intersection clustering
    of S (codes in ``[0, n_range)``, see :func:`intersect_codes`). A non-PSD sum is repaired
    by :func:`repair_psd` with a note naming ``what`` (this public function's own). Returns
    ``(cov, min_eigenvalue, repaired, parts)`` with ``parts`` the list of
    ``(dims, sign, V_S, info)`` in subset order (singletons first).
    """
    parts = []
    for dims in subsets(len(codes)):
        term_codes, n_range = intersect_codes([codes[d] for d in dims],
                                              [sizes[d] for d in dims])
        term_cov, info = term(term_codes, n_range)
        parts.append((dims, term_sign(dims), term_cov, info))
    cov, min_eig, repaired = combine_terms(parts)
    if repaired:
        notes.emit(notes.not_psd(what, min_eig))
    return cov, min_eig, repaired, parts


def multiway_cluster_cov(
    influence, groups: list, correction: str = DEFAULT_CORRECTION,
    bread: np.ndarray | None = None, strata=None, frequency=None,
) -> MultiwayCovariance:
    """Multiway cluster-robust covariance by inclusion-exclusion (CGM 2011, eq. 2.11).

    ``V = sum_{S non-empty} (-1)^(|S|+1) c(G_S) V_{cap S}`` over subsets S of the d
    dimensions, with ``G_S`` the number of non-empty intersection clusters. One dimension
    reduces to :func:`cluster_cov`; ``[np.arange(n)]`` with ``"none"`` gives
    :func:`naive_cov`. A non-PSD result is repaired by eigenvalue clipping, with a warning.
    ``bread``: every term is the sandwich ``B V_S B^T`` (module doc). The repair is then
    applied to the combined meat ``sum_S (-1)^(|S|+1) c(G_S) M_S`` before sandwiching, so the
    repaired covariance transforms with the bread: for any map T, bread ``T B`` gives
    ``T V T^T``. Clipping ``B V B^T`` itself would not, so a Bradley-Terry contrast's variance
    would depend on the anchor or baseline that only changes the reporting map in B
    (``min_eigenvalue`` is then the meat's). ``"cr2"`` scales each term's rows by that
    term's :func:`stratum_leverage_scale` of ``strata`` (frequency-weighted by
    ``frequency``).
    """
    check_correction(correction)
    if len(groups) == 0:
        raise ValueError("multiway_cluster_cov needs at least one grouping")
    sums = influence_sums(influence, groups, bread=bread, strata=strata, frequency=frequency)
    # cell totals have their strata summed in: none are passed
    if sums.keeps_rows and (correction == "cr2") != (strata is not None):
        raise ValueError("correction 'cr2' needs the rows' strata (the win rate's pairs), and "
                         "strata are only used by 'cr2'")
    result = clustered(sums, correction, designs=False).covariance
    if result.psd_repaired:
        notes.emit(notes.not_psd("multiway covariance", result.min_eigenvalue))
    return result
