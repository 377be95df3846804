"""Exception and warning types raised by winrate, and the row and name lists their messages
quote (as text, never as a Python literal), and where a warning points."""

import os
import sys
from pathlib import Path

_SHOW_ROWS = 5


class WinrateInputError(ValueError):
    """Bad user input: the message names the column and the first offending rows."""


class WinrateWarning(UserWarning):
    """A result is computable but less trustworthy than it looks; the message says why."""


def first_rows(mask, labels=None, limit: int = _SHOW_ROWS) -> str:
    """The first offending rows of a boolean mask for an error message: ``'3, 7, 9'``, or
    ``'3, 7, 9, 12, 20, ... (41 in total)'``. ``labels`` maps positions to row labels."""
    import numpy as np  # here, so that importing the error types (the CLI's start) stays light

    where = np.flatnonzero(np.asarray(mask))
    shown = where if labels is None else np.asarray(labels)[where[:limit]]
    text = ", ".join(str(v) for v in shown[:limit])
    return text + (f", ... ({where.size} in total)" if where.size > limit else "")


def describe_os_error(error: OSError) -> str:
    """One line for a failed read or write: the file and the operating system's reason."""
    where = f"{error.filename!s}: " if error.filename else ""
    return f"{where}{error.strerror or error}"


def listed(names, limit: int | None = None, quote: bool = True, last: str = "and") -> str:
    """Names as text for a message: ``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'`` (each
    quoted unless ``quote`` is False; ``last`` joins the last two), the first ``limit``
    then ``and N more``; ``none`` for no name. Never a Python literal (a list's or set's
    repr)."""
    shown = [repr(str(n)) if quote else str(n) for n in names]
    if not shown:
        return "none"
    if limit is not None and len(shown) > limit:
        return f"{', '.join(shown[:limit])} and {len(shown) - limit} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {last} {shown[-1]}"


def one_of(choices) -> str:
    """The allowed values of an option as text: ``'a', 'b' or 'c'``."""
    return listed(choices, last="or")


_PACKAGE = str(Path(__file__).resolve().parent)


def outside_stacklevel() -> int:
    """The ``stacklevel`` (of :func:`winrate.notes.emit`, or ``warnings.warn`` minus one)
    that makes a warning issued by the calling function point at the first frame outside
    the winrate package: the user's line, however deep inside winrate the warning arose
    and whichever public function was called."""
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
            _PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level
