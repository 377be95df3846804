"""The estimator seam: one call from a comparison log to estimates plus their influence.

Every estimator returns a :class:`winrate.leaderboard.Leaderboard` (estimates, sparse score
or influence rows and a bread), and everything downstream -- variance, resampling,
inference, diagnostics, reports -- reads only that object:

* ``"winrate"`` (default): the half-tie win rate ``S_a = sum_b w_ab psi_ab``
  (:func:`winrate.leaderboard.fit`), in [0, 1]; with a baseline, each model's win rate
  against it.
* ``"bt"``: Bradley-Terry ratings on the Elo scale (:func:`winrate.bradley_terry.fit`),
  with ties as half wins or Davidson's model, a ridge prior, style covariates, an anchor.
"""

from __future__ import annotations

from winrate import bradley_terry, leaderboard
from winrate.constants import ESTIMATORS
from winrate.data import as_log
from winrate.errors import WinrateInputError
from winrate.leaderboard import Leaderboard


def fit(log, model: str = "winrate", *, weights="uniform",
        baseline: str | None = None, anchor=None, covariates=(), prior: float | None = None,
        ties: str = "half") -> Leaderboard:
    """Fit estimator ``model`` (:data:`ESTIMATORS`) to ``log``.

    ``weights`` are the win rate's opponent weights; ``anchor``, ``covariates``, ``prior``
    and ``ties`` are Bradley-Terry options (an error for the win rate, which has no such
    parameters); ``baseline`` works for both (module doc). ``log``: a
    :class:`ComparisonLog`, or a DataFrame or file path (:func:`winrate.data.as_log`).
    """
    log = as_log(log)
    if model == "winrate":
        bt_only = {"--anchor": anchor is not None, "--covariates": bool(covariates),
                   "--prior": prior is not None, "--ties": ties != "half"}
        given = [flag for flag, used in bt_only.items() if used]
        if given:
            raise WinrateInputError(f"{', '.join(given)} apply to --model bt only (the win "
                                    "rate has no ratings, covariates, prior or tie model)")
        return leaderboard.fit(log, weights, baseline=baseline)
    if model == "bt":
        if not (isinstance(weights, str) and weights == "uniform"):
            raise WinrateInputError("--weights applies to --model winrate only (Bradley-Terry "
                                    "weighs every comparison by its information)")
        return bradley_terry.fit(log, ties=ties, prior=prior, anchor=anchor, baseline=baseline,
                                 covariates=covariates)
    raise WinrateInputError(f"model must be one of {ESTIMATORS}, got {model!r}")
