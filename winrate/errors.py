"""Exception and warning types raised by winrate, and the row list their messages quote."""

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


def check_output_path(path, flag: str, inputs=()) -> None:
    """Fail early, before any work, if the output file ``path`` of option ``flag`` cannot
    be written: its directory must exist, the path must not be a directory nor one of
    ``inputs`` (the files read: writing the table over the log would destroy it), and the
    file must open for writing."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise WinrateInputError(f"{flag} {str(path)!r} is a directory; give a file name")
    if not target.parent.is_dir():
        raise WinrateInputError(f"{flag} {str(path)!r}: the directory "
                                f"{str(target.parent)!r} does not exist")
    for source in (Path(p) for p in inputs if p is not None):
        if source.exists() and target.exists() and target.samefile(source):
            raise WinrateInputError(f"{flag} {str(path)!r} is the input file: writing it "
                                    "would overwrite the log; give another file name")
    _probe_write(target, flag)


def _probe_write(target: Path, flag: str) -> None:
    """Open ``target`` for appending (which changes no byte of an existing file) and close
    it, removing it again if it was not there: a permission or file-system refusal shows
    now, not after the computation."""
    existed = target.exists()
    try:
        with open(target, "a"):
            pass
    except OSError as error:
        raise WinrateInputError(f"{flag} {str(target)!r}: cannot write it "
                                f"({error.strerror or error})") from None
    if not existed:
        target.unlink()


def describe_os_error(error: OSError) -> str:
    """One line for a failed read or write: the file and the operating system's reason."""
    where = f"{error.filename!s}: " if error.filename else ""
    return f"{where}{error.strerror or error}"
