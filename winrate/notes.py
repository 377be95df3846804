"""Coded notes: every warning and note winrate gives, as one structured object.

A :class:`Note` is its text (a ``str``: it prints, joins and compares as one) with a stable
``code``, a ``severity`` (``"warning"``: a number is less trustworthy than it looks;
``"note"``: what was done and why), the clustering ``axis`` it concerns (or None) and the
``models`` it names. The same object is kept on a result (``result.notes``), printed by the
command line as ``warning [code]: text``, written to JSON under ``notes`` and shown numbered
under ``summary()``; :class:`Notes` filters them by code. Scripts and tests match codes,
never wording: :data:`CODES` lists every code with its meaning, and each code is given by
one function of this module or of the module named there.

A library function emits a note as a Python warning (:func:`emit`, category
:class:`winrate.errors.WinrateWarning`, the note itself as the message), so callers outside
winrate see it as usual and :func:`collected` gathers them back as notes.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from winrate.errors import WinrateWarning

SEVERITIES = ("warning", "note")

#: Every code -> what it flags. A test checks that each is documented in docs/notes.md.
CODES = {
    # clustering and design
    "default-clustering": "the default prompt+judge clustering used only the axes the log has",
    "few-clusters": "an axis has fewer than 30 clusters: its clustered SE is rough",
    "single-cluster-pairs": "model pairs observed within one cluster of an axis",
    "dominant-cluster": "one cluster carries most of a model's variance on an axis",
    "few-effective-clusters": "some models' SEs rest on fewer than 10 effective clusters",
    "judges-fixed": "a log with few judges analysed without a judge axis",
    "no-reliable-method": "no interval method covers at its nominal level in this design",
    "incomplete-design": "model pairs never compared",
    # estimates and their uncertainty
    "not-estimable": "models whose uncertainty cannot be estimated",
    "psd-repaired": "a multiway covariance clipped to positive semi-definite",
    "small-sample-floor": "pairs with a single outcome got a small-sample variance floor",
    "interval-cut": "normal intervals reaching past 0% or 100% were cut at the bound",
    "prior-dominates": "ratings that only a ridge prior keeps finite",
    # resampling
    "undefined-replicates": "resampling replicates in which a model had no comparisons",
    "coarse-bootstrap-support": "a wild bootstrap with too few distinct draws",
    "bootstrap-conditional": "a bootstrap that holds every model in every draw",
    "resampling-note": "another remark of a resampling method",
    # joint inference
    "zero-variance-contrast": "contrasts with zero variance left out of a maximum",
    "monte-carlo-precision": "a Monte-Carlo critical value short of its target precision",
    # reading data and options
    "reader": "a remark of a reader about rows it dropped or changed",
    "deprecated": "an argument kept for compatibility; the note names its replacement",
    "eval": "a remark of the eval statistics of per-question scores",
    # fidelity branch (issue 26): upstream conventions and edge cases of the readers
    "outcome-labels": "model names that are also outcome labels, read by the column's content",
    "similar-names": "model names that differ only by surrounding whitespace or Unicode form",
    "battles-dropped": "clean_battle rows left out as LMArena does (named battles, dedup_tag)",
    "skipped-records": "malformed records skipped on request (--skip-malformed)",
    "folder-names-model": "AlpacaEval files whose rows name another model, or duplicate another",
    "baseline-inferred": "an arena-hard baseline read from the data, not given",
    "off-baseline-rows": "rows not against the baseline, which a baseline score ignores",
}


class Note(str):
    """A warning or note: the text, with ``code`` (:data:`CODES`), ``severity``, ``axis``
    and ``models`` (module doc)."""

    code: str
    severity: str
    axis: str | None
    models: tuple[str, ...]

    def __new__(cls, code: str, text: str, *, severity: str = "warning",
                axis: str | None = None, models=()):
        if code not in CODES:
            raise ValueError(f"unknown note code {code!r}: add it to winrate.notes.CODES")
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {severity!r}")
        note = super().__new__(cls, text)
        note.code, note.severity, note.axis = code, severity, axis
        note.models = tuple(str(m) for m in models)
        return note

    def __reduce__(self):
        return (_rebuild, (self.code, str(self), self.severity, self.axis, self.models))

    @property
    def text(self) -> str:
        return str(self)

    def to_dict(self) -> dict:
        """The JSON form: ``code``, ``severity``, ``axis``, ``models``, ``text``."""
        return {"code": self.code, "severity": self.severity, "axis": self.axis,
                "models": list(self.models), "text": str(self)}

    def line(self) -> str:
        """One line for the terminal: ``warning [few-clusters]: text``."""
        return f"{self.severity} [{self.code}]: {self}"


def _rebuild(code, text, severity, axis, models) -> Note:
    return Note(code, text, severity=severity, axis=axis, models=models)


def as_note(message, code: str = "resampling-note") -> Note:
    """``message`` as a :class:`Note` (a note passes through; plain text gets ``code``)."""
    return message if isinstance(message, Note) else Note(code, str(message))


class Notes(list):
    """The notes of a result, in order, each once; filterable by code."""

    def __init__(self, notes=()):
        super().__init__(dict.fromkeys(notes))

    @property
    def codes(self) -> list[str]:
        return [note.code for note in self]

    def only(self, *codes: str) -> Notes:
        """The notes with one of ``codes``."""
        _check_codes(codes)
        return Notes(note for note in self if note.code in codes)

    def without(self, *codes: str) -> Notes:
        """The notes with none of ``codes``."""
        _check_codes(codes)
        return Notes(note for note in self if note.code not in codes)

    def to_list(self) -> list[dict]:
        return [note.to_dict() for note in self]


def _check_codes(codes) -> None:
    unknown = [code for code in codes if code not in CODES]
    if unknown:
        from winrate.errors import WinrateInputError

        raise WinrateInputError(f"unknown note code(s) {unknown}; the codes are "
                                f"{', '.join(CODES)}")


def emit(note: Note, stacklevel: int = 2) -> None:
    """Give ``note`` as a :class:`WinrateWarning` (its message is the note itself)."""
    warnings.warn(note, WinrateWarning, stacklevel=stacklevel + 1)


@contextmanager
def collected(code: str = "resampling-note"):
    """Gather the WinrateWarnings raised inside as notes (a plain-text warning of another
    library gets ``code``); other warnings pass through to the caller."""
    gathered = Notes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        yield gathered
    for item in caught:
        if issubclass(item.category, WinrateWarning):
            message = item.message.args[0] if item.message.args else str(item.message)
            note = as_note(message, code)
            if note not in gathered:
                gathered.append(note)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
