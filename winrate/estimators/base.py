"""The estimator protocol: what every estimator declares, and the data it fits from.

An estimator is one module of this package holding one instance of a subclass of the
abstract :class:`Estimator`, listed in the registry (:data:`winrate.estimators.REGISTRY`).
Everything outside this package asks it, never its name or its options' names:

* ``name`` (the ``model=`` value and ``--model`` choice), ``title`` and the :class:`Scale`
  of its scores (range, interval link, printed unit), declared as class attributes;
* ``options`` (:class:`Option`): one spec from which the API validates keywords and the
  command line builds its flags and ``--help``; ``settings(options)`` the options as
  reports and the JSON ``settings`` show them; ``describe(options)`` one line for reports;
* ``fit(data, options)``: estimates and their influence (a
  :class:`winrate.estimators.leaderboard.Leaderboard`) from a :class:`SufficientData`,
  which answers named group-by sums (per-pair totals; per-row terms at given parameters);
  optionally ``fit_scores(table, options)``, the same from a per-question score table whose
  pairwise log is never built (its influence summed per question,
  :class:`winrate.estimators.cells.CellTotals`);
* ``fixed_models(board)``: the models whose score is fixed by definition (an anchor), which
  have no variance and are never "not estimable";
* what resampling needs: ``refits_rows(options)`` (whether a refit needs the rows or only
  the pair totals), hence ``resampling_units(board)``, and ``replicate_scorer`` (exact
  refits of the re-weighted units, the canonical scores of each replicate; by default a
  refit of re-weighted rows, :class:`RowRefit`, which needs ``refits_rows``);
* what variance needs: ``cr2_strata`` (the rows' strata of the CR2 leverage correction, or
  None: not supported), ``small_sample_floor`` (a variance floor for pairs whose
  comparisons all agree, or None), ``wild_influence_map`` (the linear map of pair totals
  to the influence that the wild bootstrap perturbs, or None: not supported) and
  ``design_notes`` (what the design means for its scores).

``fit``, ``settings`` and ``describe`` are abstract, and ``name``, ``title`` and ``scale``
must be declared: an estimator missing one fails when it is instantiated, with a message
naming what is missing. A feature an estimator does not support is refused with a message
naming the estimator (:meth:`Estimator.require`), never given another estimator's answer.
Modules of this package import numpy and the kernel modules inside the methods that use
them, so the registry, and with it the command line's ``--help``, stays light.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from winrate.errors import WinrateInputError, one_of
from winrate.estimators.scale import ELO, PROBABILITY, SCALES, Scale

#: Features a variance method may need from an estimator (``Estimator.supports``).
FEATURES = ("cr2", "wild bootstrap", "small-sample floor", "thin-design rule",
            "per-question scores")
__all__ = ["ELO", "FEATURES", "PROBABILITY", "SCALES", "Estimator", "Option", "RowRefit",
           "Scale", "SufficientData"]
@dataclass(frozen=True)
class Option:
    """One option of one or more estimators: API keyword ``name``, command-line flag
    ``--name`` (underscores as dashes), its ``default``, ``help``, ``choices`` and the
    ``parse`` of the flag's text (None: the text itself). ``check(value)`` returns the
    normalised value or raises :class:`WinrateInputError` naming the option."""

    name: str
    default: Any
    help: str
    choices: tuple | None = None
    metavar: str | None = None
    parse: Callable | None = None
    check: Callable | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def validate(self, value):
        if self.choices is not None and isinstance(value, str) and value not in self.choices:
            raise WinrateInputError(f"option {self.name!r} must be one of {one_of(self.choices)}, "
                                    f"got {value!r}")
        return value if self.check is None or value is None else self.check(value)


@dataclass(frozen=True)
class SufficientData:
    """The data an estimator fits from, as named group-by sums, answered in memory.

    ``pair_table()``: per unordered pair of model codes (lo < hi), the frequency-weighted
    comparisons ``N = sum f``, the lower model's score ``W = sum f s`` (half-tie kernel),
    as (L, L) arrays ``psi`` and ``counts`` with each observed pair's index and the (P, 2)
    pairs (:func:`winrate.estimators.win_rate_kernels.pairwise_table`). ``outcome_counts()``: per
    pair the frequency-weighted wins, losses and ties of the lower-coded model. ``rows``: the log,
    for row-level terms (score rows; per-row likelihood terms of a Newton step). A scan of a log too
    large for memory answers the same sums from an engine.
    """

    rows: Any
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def pair_table(self):
        if "pairs" not in self._cache:
            from winrate.estimators.win_rate_kernels import pairwise_table

            self._cache["pairs"] = pairwise_table(self.rows)
        return self._cache["pairs"]

    def outcome_counts(self, model: str) -> tuple:
        """(wins, losses, ties) of the lower-coded model per observed pair (P,) each
        (:func:`winrate.estimators.win_rate_kernels.outcome_counts`); an error naming
        ``model`` when outcomes are graded."""
        if "outcomes" not in self._cache:
            from winrate.estimators.win_rate_kernels import outcome_counts

            self._cache["outcomes"] = outcome_counts(self.rows, self.pair_table(), model)
        return self._cache["outcomes"]


#: What every estimator declares as a class attribute, with its type.
DECLARED = {"name": str, "title": str, "scale": Scale}


class Estimator(ABC):
    """The protocol (module doc). Subclasses declare ``name``, ``title`` and ``scale``,
    implement ``fit``, ``settings`` and ``describe``, and override what they support."""

    name: str
    title: str
    scale: Scale
    options: tuple[Option, ...] = ()
    #: what a resampling note says about this estimator's refits
    refit_phrase: str = "refitted on every resampled log"
    #: cluster axes the fit reads beyond each row's models, outcome and covariates (a
    #: scan groups its key table by them too: :mod:`winrate.io.scan`)
    fit_axes: tuple[str, ...] = ()

    def __new__(cls, *args, **kwargs):
        missing = sorted(getattr(cls, "__abstractmethods__", ()))
        wrong = [f"{key} ({kind.__name__})" for key, kind in DECLARED.items()
                 if not isinstance(getattr(cls, key, None), kind)]
        if missing or wrong:
            raise TypeError(f"estimator {cls.__name__} does not declare "
                            f"{', '.join([*wrong, *(f'{m}()' for m in missing)])}: every "
                            "estimator declares these (winrate.estimators.base)")
        return super().__new__(cls)

    def __repr__(self) -> str:
        return f"<estimator {self.name!r}: {self.title}>"

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(option.name for option in self.options)

    # ---------------------------------------------------------------- options

    def settle(self, given: dict) -> dict:
        """Every option of this estimator, validated: ``given`` values, else defaults
        (an option it does not have is refused by the registry,
        :func:`winrate.estimators.settle`, which names the estimators that have it)."""
        return {option.name: option.validate(given.get(option.name, option.default))
                for option in self.options}

    @abstractmethod
    def settings(self, options: dict) -> dict:
        """The settled ``options`` as reports and the JSON ``settings`` show them (plain
        JSON values: a weight matrix as ``"matrix"``, tuples as lists)."""

    @abstractmethod
    def describe(self, options: dict) -> str:
        """One line for reports: the estimator, its scale and its options in words."""

    def reads_row_order(self, options: dict) -> bool:
        """Whether the fit reads the order of the rows (a scan's key table has none)."""
        return False

    def rows(self, log, options: dict):
        """The rows of ``log`` the estimate uses (default: all of them)."""
        return log

    @abstractmethod
    def fit(self, data: SufficientData, options: dict):
        """The :class:`winrate.estimators.leaderboard.Leaderboard` of ``data`` (the rows
        :meth:`rows` keeps) with the settled ``options``; a
        :class:`winrate.errors.WinrateInputError` when the fit is not identified."""

    def fit_scores(self, table, options: dict):
        """The fit of the comparison log a per-question score table stands for
        (:class:`winrate.io.logs.ScoreTable`), without building it; not supported by
        default (:meth:`supports`)."""
        raise NotImplementedError

    def fits_score_tables(self, options: dict) -> bool:
        """Whether :meth:`fit_scores` fits a per-question score table with these settled
        ``options`` (default: whenever it is defined)."""
        return self.supports("per-question scores")

    def fixed_models(self, board):
        """(K,) mask of the reported models whose score is fixed by definition (an
        anchor's rating): no variance, and never "not estimable". Default: none."""
        import numpy as np

        return np.zeros(len(board.models), bool)

    # ---------------------------------------------------------------- variance needs

    def refits_rows(self, options: dict) -> bool:
        """Whether a refit needs the rows (True, the default, which :class:`RowRefit`
        needs) or only the per-pair totals (an estimator whose ``replicate_scorer`` refits
        from pair totals says False)."""
        return True

    def resampling_units(self, board):
        """The units whose cluster totals determine a refit: ``(unit of each row, number
        of units)``, the rows themselves when :meth:`refits_rows`, else each row's pair
        (-1 for a row of zero frequency, which belongs to no observed pair)."""
        import numpy as np

        if self.refits_rows(board.options):
            n = board.influence.shape[0]
            return np.arange(n), n
        return board.pair, len(board.pairs)

    def replicate_scorer(self, board, total_counts, log):
        """Canonical scores of replicate unit totals (:meth:`resampling_units`): by
        default a refit of re-weighted rows (exact for any estimator, one fit per
        replicate; it needs :meth:`refits_rows`)."""
        return RowRefit(self, board, log)

    def cr2_strata(self, board):
        """The rows' strata of the CR2 leverage correction; None when not supported."""
        return None

    def small_sample_floor(self, board, frequency):
        """``(floor (K, K), degenerate pairs mask, kind)`` or None when not defined. The
        floor is part of the covariance, so it must not depend on the interval's level."""
        return None

    def unidentified_pair_floor(self, board, frequency, single, rho):
        """The (K, K) covariance of the ``single`` (P,) pairs, whose comparisons all lie in
        one cluster of a clustering axis, with ``rho`` (P,) the within-cluster correlation
        taken for each, or None when the estimator has none."""
        return None

    def same_pair_cells(self, board, log, codes):
        """For a fit held as per-question cell totals (no rows), the (cluster, pair) cells
        of its comparisons by the question clusters ``codes``: each cell's size and sum of
        the pair-centred scores, and the total of their squares (what the within-cluster
        correlation of one pair's comparisons is computed from); None when the estimator
        cannot give them (the rows, where kept, give them instead)."""
        return None

    def wild_influence_map(self, board, total_counts):
        """The (P, K) map of centred pair totals to the influence, or None."""
        return None

    def thin_design_rule(self) -> bool:
        """Whether ``auto`` may choose CR2 with Pan-Wall df on a thin design (it needs
        ``cr2_strata``)."""
        return False

    def design_notes(self, board) -> list:
        """Notes on what the design means for the scores (:mod:`winrate.notes`)."""
        return []

    def supports(self, feature: str) -> bool:
        """Whether this estimator supports ``feature`` (:data:`FEATURES`)."""
        probes = {"cr2": lambda: type(self).cr2_strata is not Estimator.cr2_strata,
                  "wild bootstrap": lambda: (type(self).wild_influence_map
                                             is not Estimator.wild_influence_map),
                  "small-sample floor": lambda: (type(self).small_sample_floor
                                                 is not Estimator.small_sample_floor),
                  "thin-design rule": self.thin_design_rule,
                  "per-question scores": lambda: (type(self).fit_scores
                                                  is not Estimator.fit_scores)}
        return probes[feature]()

    def require(self, feature: str, instead: str) -> None:
        """An error naming this estimator when it does not support ``feature``, saying
        what to use ``instead``."""
        if not self.supports(feature):
            raise WinrateInputError(f"{feature} is not defined for model {self.name!r} "
                                    f"({self.title}); {instead}")


class RowRefit:
    """Refits of re-weighted logs: replicate b gives row r the frequency ``counts[b, r]``
    and the estimator is fitted again with the same options. A replicate whose fit is not
    identified (disconnected, an infinite MLE) has no scores (NaN). O(n) per replicate."""

    def __init__(self, estimator: Estimator, board, log):
        if not estimator.refits_rows(board.options):
            raise TypeError(f"estimator {estimator.name!r} refits from pair totals "
                            "(refits_rows is False), so it must declare its own "
                            "replicate_scorer")
        self.estimator, self.board, self.log = estimator, board, log
        self.options = dict(board.options)

    def scores(self, wins, counts):
        """(B, L) canonical scores; ``counts`` (B, n) are the replicate row frequencies."""
        import numpy as np

        counts = np.atleast_2d(counts)
        out = np.full((counts.shape[0], len(self.board.canonical_scores)), np.nan)
        for b, freq in enumerate(counts):
            out[b] = self._refit(freq)
        return out

    def _refit(self, freq):
        import numpy as np

        from winrate import notes
        from winrate.io.logs import ClusterAxis, ComparisonLog

        keep = freq > 1e-12 * freq.max(initial=0.0)
        log = self.log
        models = np.unique(np.concatenate([log.model_a[keep], log.model_b[keep]]))
        if models.size < log.n_models:  # a model lost every comparison of this replicate
            return np.nan
        axes = {name: ClusterAxis(axis.codes[keep], axis.labels)  # lc's prompts
                for name, axis in log.axes.items()}
        sub = ComparisonLog(log.model_a[keep], log.model_b[keep], log.score[keep], log.models,
                            axes, freq[keep], {k: v[keep] for k, v in log.features.items()})
        try:
            with notes.gathered():  # a replicate's fit: its notes are not the analysis'
                refit = self._fit(sub, keep)
        except WinrateInputError:  # not identified in this replicate
            return np.nan
        return refit.canonical_scores

    def _fit(self, sub, keep):
        """The fit of the replicate's rows ``sub`` (the rows ``keep`` of the log)."""
        return self.estimator.fit(SufficientData(sub), self.options)
