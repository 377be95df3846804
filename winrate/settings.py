"""The option objects of :func:`winrate.analyze` and the typed settings of its result.

``analyze(log, cluster, model, variance=Variance(...), joint=Joint(...),
monte_carlo=MonteCarlo(...), alpha=..., **estimator_options)``: the estimator's own options
(weights, baseline, anchor, ...) are keywords checked by the estimator
(:mod:`winrate.estimators`); how the covariance is estimated, which joint inference is run
and the Monte-Carlo precision are objects, each validated where it is built. A result keeps
one :class:`Settings` with one entry per input.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from winrate.constants import CORRECTIONS, DEFAULT_DRAWS, RANK_METHODS, VARIANCE_METHODS
from winrate.errors import WinrateInputError


@dataclass(frozen=True)
class Variance:
    """How the covariance is estimated. ``method``: ``"auto"`` (chosen from the design,
    :mod:`winrate.variance.method_choice`), ``"sandwich"``, ``"jackknife"`` or ``"bootstrap"``;
    ``correction`` (``none``, ``cr1``, ``cr2``) and ``reference`` (``normal`` or ``t``)
    default to the method's choice; ``bootstrap_reps`` replicates of a bootstrap."""

    method: str = "auto"
    correction: str | None = None
    reference: str | None = None
    bootstrap_reps: int = 999

    def __post_init__(self):
        if self.method not in VARIANCE_METHODS:
            raise WinrateInputError(f"method must be one of {VARIANCE_METHODS}, "
                                    f"got {self.method!r}")
        if self.correction is not None and self.correction not in CORRECTIONS:
            raise WinrateInputError(f"correction must be one of {CORRECTIONS}, "
                                    f"got {self.correction!r}")
        if self.reference not in (None, "normal", "t"):
            raise WinrateInputError(f"reference must be 'normal' or 't', got {self.reference!r}")


@dataclass(frozen=True)
class Joint:
    """Which joint inference to add: ``simultaneous`` intervals (max-|T|), rank confidence
    sets (``ranks``, ``rank_method`` marginal or simultaneous; Mogstad et al. 2024) and all
    ``pairwise`` differences."""

    simultaneous: bool = False
    ranks: bool = False
    pairwise: bool = False
    rank_method: str = "marginal"

    def __post_init__(self):
        if self.rank_method not in RANK_METHODS:
            raise WinrateInputError(f"rank_method must be one of {RANK_METHODS}, "
                                    f"got {self.rank_method!r}")

    @property
    def any(self) -> bool:
        return self.simultaneous or self.ranks or self.pairwise


@dataclass(frozen=True)
class MonteCarlo:
    """Draws of the Monte-Carlo critical values and the seed of every random step (the
    bootstraps included)."""

    n_draws: int = DEFAULT_DRAWS
    seed: int | None = 0


@dataclass(frozen=True)
class Settings:
    """What an analysis was run with: one entry per input (``settings["alpha"]`` and
    ``settings.alpha`` alike). ``scale`` is the estimator's
    :class:`winrate.estimators.base.Scale` (a dict in :meth:`to_dict`, by its own
    ``to_dict``); ``options`` are the estimator's, as reports show them; ``df`` the t
    degrees of freedom used (None: normal; per model with CR2)."""

    estimator: str
    scale: object
    cluster: list
    correction: str
    alpha: float
    reference: str
    df: object
    method: str
    bootstrap_reps: int
    seed: int | None
    n_draws: int
    options: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON ``settings``: every entry, the estimator's options at the top level,
        ``weights`` null for an estimator without opponent weights."""
        flat = {key: value for key, value in asdict(self).items() if key != "options"}
        head = {"estimator": flat.pop("estimator"), "scale": flat.pop("scale"),
                "cluster": flat.pop("cluster"), "weights": self.options.get("weights")}
        return {**head, **flat, **{k: v for k, v in self.options.items() if k != "weights"}}

    def __getitem__(self, key: str):
        return self.to_dict()[key]

    def get(self, key: str, default=None):
        return self.to_dict().get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()


def parse_clustering(spec: str | tuple | list | None) -> tuple[str, ...]:
    """``"none"`` -> (); ``"prompt+judge"`` -> ("prompt", "judge"); tuples pass through."""
    if spec is None:
        return ()
    names = spec.split("+") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names in (["none"], ["naive"]):
        return ()
    if len(set(names)) != len(names):
        raise WinrateInputError(f"clustering {spec!r} names an axis twice")
    return tuple(names)
