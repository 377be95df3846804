"""Leaderboards for the web page's tests, with model names that try to break out of HTML.

Each hostile name would set ``window.__pwned`` if any part of it ran as a script.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

HOSTILE = (
    "<script>window.__pwned=1</script>",
    '"><img src=x onerror="window.__pwned=2">',
    "</script><script>window.__pwned=3</script>",
    "<!-- a&amp;b \u2028 \u2029 'quoted' -->",
    "<svg onload=window.__pwned=4>",
)


@functools.cache
def _analysis(n_models: int, hostile: bool, ranks: bool, seed: int):
    import winrate
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    sim = simulate_comparisons(SimulationDesign(n_models=n_models, n_prompts=60, n_judges=4),
                               seed=seed)
    frame = sim.frame()
    if hostile:
        names = {m: HOSTILE[k] if k < len(HOSTILE) else m
                 for k, m in enumerate(np.unique(frame[["model_a", "model_b"]]))}
        frame[["model_a", "model_b"]] = frame[["model_a", "model_b"]].replace(names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", winrate.WinrateWarning)
        return winrate.analyze(frame, cluster="prompt+judge",
                               joint=winrate.Joint(simultaneous=True, ranks=ranks,
                                                   pairwise=True))


def hostile_analysis():
    """8 models, five of them named :data:`HOSTILE`, with every joint inference."""
    return _analysis(8, True, True, 4)


def wide_analysis():
    """150 models (simultaneous intervals and pairs; rank sets would take seconds)."""
    return _analysis(150, False, False, 3)


def document(analysis) -> dict:
    from winrate.report.leaderboard import to_dict

    return to_dict(analysis)
