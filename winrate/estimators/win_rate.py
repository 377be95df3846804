"""The half-tie win rate (the default estimator), as the protocol declares it.

``S_a = sum_b w_ab psi_ab`` with opponent weights ``w`` (``"uniform"``, ``"count"`` or a
(K, K) matrix) or, with a baseline, each model's win rate against it; its influence rows
and the kernels are in :mod:`winrate.estimators.win_rate_kernels`. What this module adds is what the
variance step needs from the win rate:

* exact replicate scores from pair totals (:class:`winrate.estimators.win_rate_kernels.PairScorer`):
  ``psi*_p = W*_p / N*_p`` with the opponent weights recomputed on the replicate's
  observed pairs (module doc of :mod:`winrate.variance.resampling`);
* the CR2 strata (each row's pair: the win rate is a set of pair means), the small-sample
  floor of single-outcome pairs (:mod:`winrate.estimators.small_sample`) and the wild bootstrap's
  linear map of centred pair totals to the influence (:meth:`WinRate.wild_influence_map`).
"""

from __future__ import annotations

from winrate import notes
from winrate.estimators.base import PROBABILITY, Estimator, Option

#: Named opponent weight schemes (a (K, K) matrix is the third kind).
WEIGHT_SCHEMES = ("uniform", "count")

WEIGHTS = Option(
    "weights", "uniform", "opponent weights: uniform (mean win probability over the opponents "
    "met, default) or count (the raw half-tie win rate); in Python also a (K, K) matrix",
    choices=WEIGHT_SCHEMES)
BASELINE = Option(
    "baseline", None, "every model faces this baseline (AlpacaEval, arena-hard): it is the "
    "reference (50%% win rate, or the anchor rating) and is not ranked", metavar="MODEL",
    check=str)


def weights_label(weights) -> str:
    """``"uniform"``, ``"count"`` or ``"matrix"`` (a user matrix)."""
    return weights if isinstance(weights, str) else "matrix"


class WinRate(Estimator):
    name = "winrate"
    title = "half-tie win rate"
    scale = PROBABILITY
    options = (WEIGHTS, BASELINE)
    refit_phrase = "recomputed exactly from the resampled pair totals"

    def rows(self, log, options: dict):
        """With a baseline, the rows against it (:func:`winrate.io.logs.rows_against`): rows
        of two contestants would count in n and the cluster sizes without entering the
        score."""
        if options["baseline"] is None:
            return log
        from winrate.io.logs import rows_against

        return rows_against(log, options["baseline"])

    def fit(self, data, options: dict):
        from winrate.estimators.win_rate_kernels import fit

        return fit(data.rows, options["weights"], baseline=options["baseline"],
                   table=data.pair_table())

    def fit_scores(self, table, options: dict):
        from winrate.estimators.win_rate_scores import fit_scores

        return fit_scores(table, options["weights"], baseline=options["baseline"])

    def fits_score_tables(self, options: dict) -> bool:
        """Score tables have no baseline rows
        (:func:`winrate.estimators.win_rate_scores.fit_scores`)."""
        return options["baseline"] is None

    def refits_rows(self, options: dict) -> bool:
        """Refits need only the pair totals
        (:class:`winrate.estimators.win_rate_kernels.PairScorer`)."""
        return False

    def replicate_scorer(self, board, total_counts, log):
        from winrate.estimators.win_rate_kernels import PairScorer

        return PairScorer(board, total_counts)

    def cr2_strata(self, board):
        return board.pair

    def small_sample_floor(self, board, frequency):
        from winrate.estimators.small_sample import degenerate_pair_cov

        return degenerate_pair_cov(board, frequency)

    def unidentified_pair_floor(self, board, frequency, single, rho):
        from winrate.estimators.small_sample import unidentified_pair_cov

        return unidentified_pair_cov(board, frequency, single, rho)

    def same_pair_cells(self, board, log, codes):
        from winrate.estimators.win_rate_scores import same_pair_cells
        from winrate.io.logs import ScoreTable

        if not isinstance(log, ScoreTable):
            return None
        return same_pair_cells(log, codes, board.psi)

    def thin_design_rule(self) -> bool:
        return True

    def wild_influence_map(self, board, total_counts):
        from winrate.estimators.win_rate_kernels import wild_influence_map

        return wild_influence_map(board, total_counts)

    def design_notes(self, board) -> list:
        """The incomplete-design note (:func:`winrate.notes.incomplete_design`): a baseline
        design needs only the baseline pairs, so it gets none."""
        missing = board.unobserved_pairs
        if not missing or board.options.get("baseline"):
            return []
        return [notes.incomplete_design(missing, [str(m) for m in board.models])]

    def describe(self, options: dict) -> str:
        if options.get("baseline"):
            text = "half-tie win rate in % against the baseline"
        else:
            text = f"half-tie win rate in %, opponent weights {weights_label(options['weights'])}"
        if options.get("baseline"):
            text += f"; baseline {options['baseline']} (the reference, not ranked)"
        return text

    def settings(self, options: dict) -> dict:
        """The options as reports and JSON show them (a weight matrix as ``"matrix"``)."""
        return {"weights": weights_label(options["weights"]), "baseline": options["baseline"]}


ESTIMATOR = WinRate()
