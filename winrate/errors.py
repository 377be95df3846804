"""Exception and warning types raised by winrate, and the row list their messages quote."""

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
