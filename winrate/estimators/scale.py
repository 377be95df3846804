"""The :class:`Scale` an estimator declares for its scores (re-exported by
:mod:`winrate.estimators.base`): its range, the link intervals are built on and how scores
print. Every renderer reads it instead of re-deriving it from the estimator's name.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from winrate.errors import WinrateInputError, one_of

#: The links an interval may be built on (:func:`winrate.inference.intervals.bounds_on_scale`).
LINKS = ("logit", "identity")


@dataclass(frozen=True)
class Scale:
    """The scale of an estimator's scores, which every renderer reads.

    ``name`` names it (``"probability"``, ``"elo"``); scores lie in [``low``, ``high``]
    (None: unbounded on that side), and intervals are cut there; ``link`` is the scale
    Wald intervals are built on (``"logit"`` for a probability: the delta-method interval
    ``expit(logit p -/+ h / (p (1 - p)))``, :func:`winrate.inference.intervals.logit_bounds`;
    ``"identity"`` otherwise). Scores print as ``factor`` times the score with ``decimals``
    places in a column of ``width``, headed ``label`` (``"%"``, ``"Elo"``), in
    ``unit_name`` (``"percent"``); a difference of scores is in ``points`` (``"percentage
    points"``). A score is a ``quantity`` (``"win probability"``), a list of them
    ``plural`` (``"win rates"``), named after the estimator when ``titled``
    (:meth:`noun`: ``"Bradley-Terry ratings"``).
    """

    name: str
    low: float | None
    high: float | None
    link: str
    factor: float
    width: int
    decimals: int
    label: str
    unit_name: str
    points: str
    quantity: str
    plural: str
    titled: bool = False

    def __post_init__(self):
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {one_of(LINKS)}, got {self.link!r}")
        if self.link == "logit" and (self.low, self.high) != (0.0, 1.0):
            raise ValueError("a logit link needs the range [0, 1]")

    @property
    def bounded(self) -> bool:
        """Whether scores have a range that intervals are cut at."""
        return self.low is not None or self.high is not None

    @property
    def range(self) -> tuple[float, float]:
        """(low, high) with an open side as -inf or inf."""
        return (-math.inf if self.low is None else self.low,
                math.inf if self.high is None else self.high)

    def noun(self, title: str) -> str:
        """The scores of the estimator called ``title``, in words (``plural``, after the
        title when ``titled``)."""
        return f"{title} {self.plural}" if self.titled else self.plural

    @property
    def axis_label(self) -> str:
        """A plot axis of scores: the quantity and the label."""
        return f"{self.quantity} ({self.label})"

    def to_dict(self) -> dict:
        """The JSON form (``settings.scale``); :meth:`of` reads it back."""
        return asdict(self)

    @classmethod
    def of(cls, value) -> Scale:
        """A Scale from itself, its JSON form (:meth:`to_dict`) or the name of a scale of
        :data:`SCALES` (documents written before scales were objects)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        if value in SCALES:
            return SCALES[value]
        raise WinrateInputError(f"scale must be one of {one_of(tuple(SCALES))} or a scale's "
                                f"JSON form, got {value!r}")


#: Win probabilities, shown in percent; intervals built on the logit scale.
PROBABILITY = Scale("probability", 0.0, 1.0, "logit", 100.0, 6, 2, "%", "percent",
                    "percentage points", "win probability", "win rates")
#: Ratings on the Elo scale (``400 / ln 10`` times the natural log-odds), unbounded.
ELO = Scale("elo", None, None, "identity", 1.0, 7, 1, "Elo", "Elo points", "Elo points",
            "rating", "ratings", titled=True)
#: The scales of the built-in estimators, by name.
SCALES = {scale.name: scale for scale in (PROBABILITY, ELO)}
