"""Bradley-Terry ratings on the Elo scale, as the protocol declares them.

The model, its fit, identification, Davidson ties, style covariates and the exact batched
refits are in :mod:`winrate.estimators.bradley_terry_kernels` (the kernels); this module
declares the options,
the refits resampling uses (batched Newton on pair totals, or refits of the rows when the
fit needs them: covariates, Davidson ties) and the report line. Bradley-Terry has no CR2
strata, no small-sample floor and no wild bootstrap: its score rows are not a linear map of
pair totals, and its information already weighs each pair by ``pi (1 - pi)``.
"""

from __future__ import annotations

from winrate.constants import TIE_MODELS
from winrate.estimators.base import ELO, Estimator, Option
from winrate.estimators.win_rate import BASELINE


def _covariates(value) -> tuple[str, ...]:
    """``"a,b"`` or a sequence of names -> ("a", "b"); the same name twice is an error."""
    from winrate.errors import WinrateInputError

    names = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(n).strip() for n in names if str(n).strip())
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise WinrateInputError(f"option 'covariates': {twice} given more than once")
    return names


def _prior(value) -> float:
    """A positive, finite ridge prior variance."""
    from math import isfinite

    from winrate.errors import WinrateInputError

    try:
        variance = float(value)
    except (TypeError, ValueError):
        variance = float("nan")
    if not (isfinite(variance) and variance > 0):
        raise WinrateInputError(f"option 'prior' must be a positive variance, got {value!r}")
    return variance


def _anchor(value) -> dict:
    from winrate.estimators.bradley_terry_kernels import parse_anchor

    model, rating = parse_anchor(value)
    return {"model": model, "rating": rating}


ANCHOR = Option("anchor", None, "fix MODEL's rating (default: mean rating 1000, or the "
                "baseline at 1000)", metavar="MODEL=RATING", check=_anchor)
COVARIATES = Option("covariates", (), "numeric per-row columns of the (a, b) difference to "
                    "control for (style control), standardised", metavar="COL[,COL...]",
                    check=_covariates)
PRIOR = Option("prior", None, "variance of a ridge prior theta ~ N(0, VAR) on the ratings "
               "(natural units); keeps them finite when a model never lost or never won",
               metavar="VAR", parse=float, check=_prior)
TIES = Option("ties", "half", "ties as half wins (LMArena's convention) or Davidson's tie "
              "parameter", choices=TIE_MODELS)


def anchored(board):
    """(K,) mask of the anchor among the reported models (its rating is fixed by
    definition, option ``anchor`` or a baseline's 1000)."""
    anchor = (board.options.get("anchor") or {}).get("model")
    return board.models.astype(str) == anchor


def elo_description(options: dict) -> str:
    """The Elo scale and its anchor, the prior and the covariates, in words."""
    anchor = options.get("anchor")
    text = ("Elo scale 400/ln(10) theta, "
            + (f"anchored at {anchor['model']} = {anchor['rating']:g}" if anchor
               else "mean rating 1000"))
    if options.get("prior") is not None:
        text += f"; ridge prior theta ~ N(0, {options['prior']:g})"
    if options.get("covariates"):
        text += f"; controlled for {', '.join(options['covariates'])} (standardised)"
    if options.get("baseline"):
        text += f"; baseline {options['baseline']} (the reference, not ranked)"
    return text


class BradleyTerry(Estimator):
    name = "bt"
    title = "Bradley-Terry"
    scale = ELO
    options = (BASELINE, ANCHOR, COVARIATES, PRIOR, TIES)
    refit_phrase = "refitted on every resampled log"

    def fit(self, data, options: dict):
        from winrate.estimators.bradley_terry_kernels import fit

        return fit(data.rows, ties=options["ties"], prior=options["prior"],
                   anchor=options["anchor"], baseline=options["baseline"],
                   covariates=options["covariates"], table=data.pair_table())

    def refits_rows(self, options: dict) -> bool:
        """Style covariates and Davidson's tie parameter read the rows; otherwise the pair
        totals determine the fit
        (:class:`winrate.estimators.bradley_terry_kernels.PairRefit`)."""
        return bool(options["covariates"]) or options["ties"] == "davidson"

    def fixed_models(self, board):
        return anchored(board)

    def replicate_scorer(self, board, total_counts, log):
        if self.refits_rows(board.options):
            return super().replicate_scorer(board, total_counts, log)
        from winrate.estimators.bradley_terry_kernels import PairRefit

        return PairRefit(board, total_counts)

    def describe(self, options: dict) -> str:
        ties = "; ties as half wins" if options["ties"] == "half" else "; Davidson ties"
        head, _, rest = elo_description(options).partition(";")
        return f"Bradley-Terry, {head}{ties}" + (f";{rest}" if rest else "")

    def settings(self, options: dict) -> dict:
        return {"baseline": options["baseline"], "anchor": options["anchor"],
                "prior": options["prior"], "ties": options["ties"],
                "covariates": list(options["covariates"])}


ESTIMATOR = BradleyTerry()
