"""Progress bars on stderr for the steps that can take seconds: loading a log or dataset,
bootstrap replicates, simultaneous intervals and rank sets, drawing a plot.

A bar is shown when progress is wanted -- ``progress=True`` (the commands' ``--progress``),
or by default when stderr is a terminal -- and only once its step has run for
:data:`DELAY` seconds, so a quick run prints nothing. ``progress=False``
(``--no-progress``) turns every bar off. Inside :func:`preference` a command's choice holds
for every bar that is not given one explicitly, so it need not be passed down each call.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar

#: Seconds a step runs before its bar appears.
DELAY = 2.0
_TICK = 1.0  # seconds between redraws of a step without inner counts
_PREFERENCE: ContextVar[bool | None] = ContextVar("winrate_progress", default=None)


def wanted(progress: bool | None = None) -> bool:
    """Whether bars are shown: ``progress`` if given, else the :func:`preference` in force,
    else whether stderr is a terminal."""
    if progress is None:
        progress = _PREFERENCE.get()
    if progress is None:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    return bool(progress)


@contextmanager
def preference(progress: bool | None):
    """Within the block, bars without an explicit ``progress`` follow this one (None: the
    terminal decides)."""
    token = _PREFERENCE.set(progress)
    try:
        yield
    finally:
        _PREFERENCE.reset(token)


def bar(iterable=None, *, desc: str, total: int | None = None, unit: str = "it",
        progress: bool | None = None, **options):
    """A tqdm bar on stderr that appears after :data:`DELAY` seconds and is cleared when
    done; disabled unless :func:`wanted`."""
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, file=sys.stderr,
                delay=DELAY, disable=not wanted(progress), **options)


@contextmanager
def stage(desc: str, progress: bool | None = None):
    """A bar for one step that has no inner counts: its name and the time it has run,
    redrawn every second (from :data:`DELAY` on) by a helper thread while the block runs."""
    if not wanted(progress):
        yield
        return
    with bar(desc=desc, progress=True, bar_format="{desc}: {elapsed}") as shown:
        done = threading.Event()
        start = time.monotonic()

        def tick() -> None:
            while not done.wait(_TICK):
                if time.monotonic() - start >= DELAY:
                    shown.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
