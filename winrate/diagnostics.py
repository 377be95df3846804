"""How much clustering matters: design effects, intraclass correlations, cluster sizes.

* Design effect (Kish 1965, sec. 8.2): ``DEFF_a = V_aa / V_naive_aa``; the SE inflation is
  ``sqrt(DEFF_a)`` and the effective number of comparisons ``n_a / DEFF_a``.
* Shared-response correlation: solving Kish's ``DEFF = 1 + (m - 1) rho`` for rho,
  ``rho_a = (DEFF_a - 1) / (m_a - 1)``, with ``m_a`` the mean number of comparisons of
  model a per cluster (per prompt, for the prompt axis).
* ANOVA intraclass correlation with unequal cluster sizes (Snedecor & Cochran 1989,
  sec. 13.11; Donner 1986, eq. 2.1)::

      ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW),   n0 = (N - sum_g n_g^2 / N) / (G - 1)

  here of the pair-centred scores ``s_r - psi_ab`` (the "pair-level ICC").
* Connectivity: scores of models in different components of the comparison graph share no
  comparison, so no estimator puts them on one scale; :func:`check_connected` refuses them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from winrate.errors import WinrateInputError


def design_effect(cov: np.ndarray, cov_naive: np.ndarray) -> np.ndarray:
    """``DEFF_a = V_aa / V_naive_aa``; NaN where the naive variance is zero (no information)."""
    naive = np.diag(cov_naive)
    return np.divide(np.diag(cov), naive, out=np.full(naive.shape, np.nan), where=naive > 0)


def effective_n(n: np.ndarray, deff: np.ndarray) -> np.ndarray:
    """``n_a / DEFF_a``: the number of independent comparisons the data is worth (Kish 1965);
    NaN where the design effect is zero or undefined."""
    return np.divide(n, deff, out=np.full(np.shape(n), np.nan), where=deff > 0)


def anova_icc(values: np.ndarray, codes: np.ndarray, weight: np.ndarray | None = None) -> float:
    """One-way ANOVA intraclass correlation of ``values`` grouped by ``codes`` (module doc).

    ``weight`` are frequency weights (a row stands for that many identical observations).
    Returns NaN when it is not identified: fewer than 2 groups, or no within-group
    degrees of freedom, or no variation at all.
    """
    w = np.ones(values.shape[0]) if weight is None else weight
    n_groups = int(codes.max()) + 1 if codes.size else 0
    size = np.bincount(codes, weights=w, minlength=n_groups)
    total = size.sum()
    size_present = size[size > 0]
    g = size_present.size
    if g < 2 or total - g <= 0:
        return float("nan")
    group_mean = np.bincount(codes, weights=w * values, minlength=n_groups)[size > 0]
    group_mean = group_mean / size_present
    grand_mean = (w * values).sum() / total
    ss_between = (size_present * (group_mean - grand_mean) ** 2).sum()
    dense = np.cumsum(size > 0) - 1
    ss_within = (w * (values - group_mean[dense[codes]]) ** 2).sum()
    ms_between = ss_between / (g - 1)
    ms_within = ss_within / (total - g)
    n0 = (total - (size_present**2).sum() / total) / (g - 1)
    denominator = ms_between + (n0 - 1) * ms_within
    return float((ms_between - ms_within) / denominator) if denominator > 0 else float("nan")


def comparisons_per_cluster(model_a: np.ndarray, model_b: np.ndarray, codes: np.ndarray,
                            n_models: int, weight: np.ndarray) -> np.ndarray:
    """``m_a``: comparisons of model a divided by the number of clusters a appears in."""
    models = np.concatenate([model_a, model_b]).astype(np.int64)
    clusters = np.concatenate([codes, codes])
    n_a = np.bincount(models, weights=np.concatenate([weight, weight]), minlength=n_models)
    distinct = pd.unique(models * (int(codes.max()) + 1) + clusters)
    clusters_of_a = np.bincount(distinct // (int(codes.max()) + 1), minlength=n_models)
    return np.divide(n_a, clusters_of_a, out=np.full(n_models, np.nan), where=clusters_of_a > 0)


def shared_response_correlation(deff: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``rho_a = (DEFF_a - 1) / (m_a - 1)``; NaN where ``m_a <= 1`` (not identified)."""
    return np.divide(deff - 1.0, m - 1.0, out=np.full(deff.shape, np.nan), where=m > 1)


def single_cluster_pairs(pair: np.ndarray, codes: np.ndarray, n_pairs: int) -> np.ndarray:
    """Boolean (P,): pairs all of whose rows fall in one cluster of the axis.

    For such a pair the centred scores sum to zero within that cluster, so the axis'
    variance gets no information about the pair: its contribution is not identified.
    """
    first = np.full(n_pairs, -1, dtype=np.int64)
    first[pair[::-1]] = codes[::-1]
    differs = codes != first[pair]
    return np.bincount(pair, weights=differs, minlength=n_pairs) == 0


def _components_text(labels: np.ndarray, names: np.ndarray, limit: int = 4) -> str:
    groups = [names[labels == c] for c in np.unique(labels)]
    groups.sort(key=len)
    shown = ["{" + ", ".join(map(str, g[:6])) + (", ..." if len(g) > 6 else "") + "}"
             for g in groups[:limit]]
    return "; ".join(shown) + (f"; ... ({len(groups)} groups)" if len(groups) > limit else "")


def check_connected(counts: np.ndarray, names: np.ndarray) -> None:
    """Error naming the components when the comparison graph is disconnected: ratings in
    different components are not on a common scale (no comparison links them)."""
    played = counts.sum(axis=1) > 0  # a model with no comparisons is reported as such
    n_comp, labels = connected_components(sp.csr_array(counts[np.ix_(played, played)] > 0),
                                          directed=False)
    names = names[played]
    if n_comp > 1:
        raise WinrateInputError(
            f"the comparison graph has {n_comp} disconnected components, so their scores "
            f"share no scale: {_components_text(labels, names)}. Compare models across "
            "components, or analyse each component separately")
