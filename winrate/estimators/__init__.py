"""The estimators, one module each behind one protocol (:mod:`winrate.estimators.base`).

Every estimator returns a :class:`winrate.estimators.leaderboard.Leaderboard` (estimates, sparse
score or influence rows and a bread), and everything downstream -- variance, resampling, inference,
diagnostics, reports -- reads only that object and asks the estimator that made it (:func:`of`) for
what it needs. :data:`REGISTRY` lists them:

* ``"winrate"`` (default): the half-tie win rate ``S_a = sum_b w_ab psi_ab``
  (:mod:`winrate.estimators.win_rate`), in [0, 1]; with a baseline, each model's win rate
  against it.
* ``"bt"``: Bradley-Terry ratings on the Elo scale (:mod:`winrate.estimators.bradley_terry`),
  with ties as half wins or Davidson's model, a ridge prior, style covariates, an anchor.
* ``"rao-kupper"``: Bradley-Terry with Rao and Kupper's tie threshold
  (:mod:`winrate.estimators.rao_kupper`).
* ``"lc"``: AlpacaEval's length-controlled win rate against a baseline, in [0, 1]
  (:mod:`winrate.estimators.length_controlled`).

Adding an estimator is one module (a subclass of the abstract :class:`Estimator` declaring
its :class:`Scale`) plus one line below. This package is light to import
(its modules load numpy and the kernels on first use), so the command line builds its
estimator flags from :func:`all_options` without loading a numerical library.
"""

from __future__ import annotations

from winrate.errors import WinrateInputError, one_of
from winrate.estimators import bradley_terry, length_controlled, rao_kupper, win_rate
from winrate.estimators.base import Estimator, Option, Scale, SufficientData

REGISTRY: dict[str, Estimator] = {
    win_rate.ESTIMATOR.name: win_rate.ESTIMATOR,
    bradley_terry.ESTIMATOR.name: bradley_terry.ESTIMATOR,
    rao_kupper.ESTIMATOR.name: rao_kupper.ESTIMATOR,
    length_controlled.ESTIMATOR.name: length_controlled.ESTIMATOR,
}
#: The estimator names (``model=``, ``--model``), the default first.
ESTIMATORS = tuple(REGISTRY)
DEFAULT_ESTIMATOR = ESTIMATORS[0]


def get(name: str) -> Estimator:
    """The estimator called ``name``; an error listing the estimators otherwise."""
    if name not in REGISTRY:
        raise WinrateInputError(f"model must be one of {one_of(ESTIMATORS)}, got {name!r}")
    return REGISTRY[name]


def of(board) -> Estimator:
    """The estimator that made the fit ``board``."""
    return REGISTRY[board.estimator]


def owners(option: str) -> list[str]:
    """The names of the estimators that have ``option``."""
    return [name for name, est in REGISTRY.items()
            if any(o.name == option for o in est.options)]


def all_options() -> dict[str, Option]:
    """Every option of every estimator, each once (first declaration wins), in order."""
    seen: dict[str, Option] = {}
    for est in REGISTRY.values():
        for option in est.options:
            seen.setdefault(option.name, option)
    return seen


def settle(estimator: Estimator, options: dict) -> dict:
    """``estimator``'s options, validated (:meth:`Estimator.settle`); an option it does
    not have is an error naming the estimators that do."""
    foreign = [name for name in options if name not in estimator.option_names]
    if foreign:
        parts = [f"{name!r} applies to {', '.join(owners(name)) or 'no estimator'}"
                 for name in foreign]
        raise WinrateInputError(f"option {'; '.join(parts)}, not to model {estimator.name!r}")
    return estimator.settle(options)


def fit(log, model: str = DEFAULT_ESTIMATOR, **options):
    """Fit estimator ``model`` (:data:`REGISTRY`) with its ``options`` to ``log`` (a
    :class:`winrate.io.logs.ComparisonLog` or :class:`~winrate.io.logs.ScoreTable`,
    DataFrame or file path, :func:`winrate.io.logs.as_log`). An option the estimator does
    not have is an error naming the estimators that do; the options are kept on the fit
    (``board.options``)."""
    from winrate.io.logs import as_log

    estimator = get(model)
    return fit_settled(estimator, as_log(log), settle(estimator, options))[0]


def used_rows(estimator: Estimator, log, options: dict):
    """The rows of ``log`` that ``estimator`` uses (:meth:`Estimator.rows`); a per-question
    score table as it is (its fit refuses what it cannot give)."""
    from winrate.io.logs import ScoreTable

    return log if isinstance(log, ScoreTable) else estimator.rows(log, options)


def fit_settled(estimator: Estimator, log, options: dict):
    """``(fit, rows used)`` of ``estimator`` with settled ``options`` on ``log``: a
    comparison log through :class:`SufficientData`, a score table through
    :meth:`Estimator.fit_scores` (an error naming the estimator if it has none)."""
    from winrate.io.logs import ScoreTable

    log = used_rows(estimator, log, options)
    if isinstance(log, ScoreTable):
        estimator.require("per-question scores", "use model 'winrate' (the half-tie win "
                          "rate), or the pairwise log of the scores")
        return estimator.fit_scores(log, options), log
    return estimator.fit(SufficientData(log), options), log


__all__ = ["ESTIMATORS", "REGISTRY", "Estimator", "Option", "Scale", "SufficientData",
           "all_options", "fit", "fit_settled", "get", "of", "owners", "settle", "used_rows"]
