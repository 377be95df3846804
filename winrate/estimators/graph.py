"""The comparison graph: which models are linked by comparisons.

Scores in different connected components of the graph (models as nodes, an edge where a
pair was compared) share no scale, so every estimator checks the graph before it fits
(:func:`check_connected`).
"""

from __future__ import annotations

import numpy as np

from winrate.errors import WinrateInputError


def _components_text(labels: np.ndarray, names: np.ndarray, limit: int = 4) -> str:
    groups = [names[labels == c] for c in np.unique(labels)]
    groups.sort(key=len)
    shown = ["{" + ", ".join(map(str, g[:6])) + (", ..." if len(g) > 6 else "") + "}"
             for g in groups[:limit]]
    return "; ".join(shown) + (f"; ... ({len(groups)} groups)" if len(groups) > limit else "")


def component_labels(adjacency: np.ndarray) -> np.ndarray:
    """Connected-component label (0, 1, ... in order of first node) of every node of a
    symmetric boolean adjacency matrix: breadth-first search one level at a time, so each
    node's row is read once (O(K^2) for K nodes, no sparse-graph set-up)."""
    labels = np.full(adjacency.shape[0], -1)
    n_components = 0
    for start in range(adjacency.shape[0]):  # over nodes (models), not rows
        if labels[start] >= 0:
            continue
        frontier = np.zeros(adjacency.shape[0], bool)
        frontier[start] = True
        while frontier.any():
            labels[frontier] = n_components
            frontier = adjacency[frontier].any(axis=0) & (labels < 0)
        n_components += 1
    return labels


def check_connected(counts: np.ndarray, names: np.ndarray) -> None:
    """Error naming the components when the comparison graph is disconnected: ratings in
    different components are not on a common scale (no comparison links them)."""
    played = counts.sum(axis=1) > 0  # a model with no comparisons is reported as such
    labels = component_labels(counts[np.ix_(played, played)] > 0)
    n_comp = labels.max(initial=-1) + 1
    names = names[played]
    if n_comp > 1:
        raise WinrateInputError(
            f"the comparison graph has {n_comp} disconnected components, so their scores "
            f"share no scale: {_components_text(labels, names)}. Compare models across "
            "components, or analyse each component separately")
