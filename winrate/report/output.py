"""Output files that cannot destroy data: checked before the work, written whole or not at all.

:func:`check_outputs` runs before a long computation. Each output must name a file (not a
folder) in an existing folder it may write to, differ from the other outputs, and stay
clear of every input: not an input file, not inside an input folder, not matched by an
input glob (the next read of that folder or glob would take the output in as data).

:func:`replacing` (and :func:`write_text` on it) writes to a temporary file in the
output's own folder and renames it over the output with :func:`os.replace`, which is
atomic there: a write that fails midway (a full disk) leaves the previous file as it was
and removes the temporary one. The output keeps the mode of the file it replaces (a new
one gets ``0o666`` less the umask, as :func:`open` gives).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from winrate.errors import WinrateInputError


def check_outputs(outputs: Mapping[str, object], inputs: Iterable = ()) -> None:
    """:func:`check_output` of every ``name: path`` of ``outputs`` (None: not written),
    and no two outputs the same file (a device such as ``/dev/null`` may take several)."""
    seen: dict[str, str] = {}
    inputs = list(inputs)
    for name, path in outputs.items():
        if path is None:
            continue
        check_output(path, name, inputs)
        key = os.path.realpath(path)
        if key in seen and not _special(Path(key)):
            raise WinrateInputError(f"{seen[key]} and {name} name the same file "
                                    f"{str(path)!r}; give each its own")
        seen[key] = name


def check_output(path, name: str, inputs: Iterable = ()) -> None:
    """Fail early, before any work, if output ``name`` cannot be written to ``path``: a
    folder, a missing folder, a collision with one of ``inputs`` (files, folders or
    globs, :func:`collision`) or a file or folder that refuses writing."""
    target = Path(path)
    if target.is_dir():
        raise WinrateInputError(f"{name} {str(path)!r} is a directory; give a file name")
    if not target.parent.is_dir():
        raise WinrateInputError(f"{name} {str(path)!r}: the directory "
                                f"{str(target.parent)!r} does not exist")
    for source in inputs:
        reason = collision(target, source) if source is not None else None
        if reason:
            raise WinrateInputError(f"{name} {str(path)!r} {reason}: writing it could "
                                    "destroy or change the data; give a path outside "
                                    "the input")
    _probe_write(target, name)


def collision(target, source) -> str | None:
    """Why writing ``target`` would touch the input ``source`` (a file, a folder or a
    glob; a ``file://`` URI of one), or None when it would not (another URI: remote)."""
    where = os.path.realpath(target)
    text = os.fspath(source)
    if "://" in text:
        if not text.startswith("file://"):
            return None
        text = text.removeprefix("file://")
    if glob.has_magic(text):
        return f"matches the input {text!r}" if _matches(where, text) else None
    place = os.path.realpath(text)
    if os.path.isdir(place):
        inside = os.path.commonpath([where, place]) == place
        return f"lies inside the input folder {text!r}" if inside else None
    return f"is the input file {text!r}" if where == place else None


def _matches(path: str, pattern: str) -> bool:
    """Whether the file ``path`` (absolute) is, or would be, one ``pattern`` names: part
    by part, a ``**`` standing for any folders in between."""
    parts = Path(os.path.realpath(os.path.dirname(pattern)), os.path.basename(pattern)).parts
    have = Path(path).parts
    if "**" not in parts:
        return len(parts) == len(have) and all(map(fnmatch.fnmatchcase, have, parts))
    cut = parts.index("**")
    head, tail = parts[:cut], parts[cut + 1:]
    return (len(have) >= len(head) + len(tail)
            and all(map(fnmatch.fnmatchcase, have[:cut], head))
            and all(map(fnmatch.fnmatchcase, have[len(have) - len(tail):], tail)))


def _probe_write(target: Path, name: str) -> None:
    """Make and remove a file next to ``target`` (unless it is a device or pipe, written
    directly) and open an existing ``target`` for appending (which changes no byte): a
    refusal shows now, not after the computation."""
    try:
        if not _special(target):
            os.unlink(_new_temporary(target))
        if target.exists():
            with open(target, "a"):
                pass
    except OSError as error:
        raise WinrateInputError(f"{name} {str(target)!r}: cannot write it "
                                f"({error.strerror or error})") from None


@contextmanager
def replacing(path) -> Iterator[str]:
    """A temporary path next to ``path`` (same suffix, so writers that choose the format
    by it choose the same) that replaces ``path`` when the block ends; on an error it is
    removed and ``path`` is left as it was (an :class:`OSError` names ``path``). A device
    or pipe (``/dev/stdout``) is written directly: it has nothing to keep or replace."""
    target = Path(os.path.realpath(path))
    if _special(target):
        yield os.fspath(target)
        return
    temporary = _new_temporary(target)
    try:
        yield temporary
        if target.exists():
            os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))
        os.replace(temporary, target)
    except BaseException as error:
        with suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise OSError(error.errno, f"cannot write it ({error.strerror or error}); the "
                          "file there before, if any, is unchanged", os.fspath(path)) from None
        raise


def write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` whole or not at all."""
    with replacing(path) as temporary, \
            open(temporary, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def _special(target: Path) -> bool:
    """Whether ``target`` exists and is neither a regular file nor a folder (a device, a
    pipe)."""
    return target.exists() and not target.is_file() and not target.is_dir()


def _new_temporary(target: Path) -> str:
    """Create an empty, hidden file next to ``target`` with a new name and its suffix
    (mode ``0o666`` less the umask) and return its path."""
    while True:
        name = f".{target.stem}.{secrets.token_hex(4)}.tmp{target.suffix}"
        path = os.fspath(target.with_name(name))
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return path
