"""The by-hand oracle of win-rate intervals on the logit scale (issue 24), shared by tests:
log-odds with numpy logs, not winrate's code or scipy's logit."""

from __future__ import annotations

import numpy as np


def logit_interval(p, half) -> tuple[np.ndarray, np.ndarray]:
    """The interval of win probability ``p`` (inside (0, 1)) whose Wald half-width is
    ``half``: log-odds -/+ half / (p (1 - p)), mapped back."""
    p = np.asarray(p, float)
    assert ((p > 0) & (p < 1)).all()
    log_odds, spread = np.log(p) - np.log1p(-p), np.asarray(half, float) / (p * (1 - p))
    return 1 / (1 + np.exp(spread - log_odds)), 1 / (1 + np.exp(-log_odds - spread))
