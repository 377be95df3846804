"""Test helpers that identify warnings by their code (:mod:`winrate.notes`), never by wording.

``warns_code("few-clusters")`` is ``pytest.warns(WinrateWarning, match=...)`` by code: it
fails unless a WinrateWarning whose note has that code is raised inside, and yields the
matching notes (filled on exit) for checks of their fields. ``notes_of(caught)`` turns the
records of ``warnings.catch_warnings(record=True)`` or ``pytest.warns`` into notes.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from winrate.errors import WinrateWarning
from winrate.notes import CODES, Notes, as_note


def notes_of(caught) -> Notes:
    """The WinrateWarnings among recorded warnings, as coded notes (plain text: ``uncoded``)."""
    return Notes(as_note(w.message.args[0]) for w in caught
                 if issubclass(w.category, WinrateWarning))


def codes_of(caught) -> set[str]:
    """The codes of the WinrateWarnings among recorded warnings."""
    return set(notes_of(caught).codes)


@contextmanager
def warns_code(code: str):
    """Fail unless a WinrateWarning with ``code`` is raised inside; yields its notes."""
    assert code in CODES, f"unknown code {code!r}"
    found = Notes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield found
    found.extend(notes_of(caught).only(code))
    assert found, f"no {code!r} warning; got codes {sorted(codes_of(caught))}"


def coded_lines(err: str, code: str) -> list[str]:
    """The command line's stderr lines of notes with ``code`` (``warning [code]: text``);
    fails when there is none."""
    assert code in CODES, f"unknown code {code!r}"
    found = [line for line in err.splitlines() if f" [{code}]: " in line]
    assert found, f"no [{code}] line on stderr:\n{err}"
    return found
