"""Numba kernels compiled twice, serial and threaded, and run threaded only for large work.

Starting a parallel region wakes numba's worker threads; when the other cores are busy the
OpenMP workers spin at every region, and a small problem pays milliseconds for
microseconds of work (a 10k-row analysis took 0.39 s threaded against 0.013 s serial on a
shared 2-core machine). So every threaded kernel also has a serial compilation, and
:meth:`SizedKernel.choose` picks the threaded one only when the work (about the number of
elementary loop steps) reaches :data:`PARALLEL_MIN_WORK`; below that a serial run takes a
few milliseconds at most.

Numba's on-disk cache names an entry by the function's qualified name and its signature,
not by its compilation flags, so two compilations of one function under one name load
whichever was cached first. The two compilations here get distinct names (``name_serial``,
``name_parallel``) and so distinct cache entries.

Waiting workers sleep. Numba's OpenMP workers spin after every parallel region; where the
other core is busy (a second process, the main thread's numpy work) the spinning takes
the core a kernel needs: ``analyze`` on the 10M-row bench log took 4.0 s after a series of
kernel runs in the same process, 2.5 s with passive waiting (``scripts/bench.py``). So
importing this module sets ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it; it takes
effect where the OpenMP runtime is not yet loaded, as numba loads it at the first
threaded kernel.
"""

from __future__ import annotations

import functools
import os
import types

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before numba's OpenMP pool starts

import numba  # noqa: E402
from numba import njit  # noqa: E402


def usable_cores() -> int:
    """The cores this process may run on (its affinity on Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: Elementary loop steps (rows, non-zeros, draws x cells) below which kernels run serially.
PARALLEL_MIN_WORK = 1_000_000


def _renamed(func, suffix: str):
    """A copy of ``func`` whose name and qualified name end in ``suffix`` (same code)."""
    clone = types.FunctionType(func.__code__, func.__globals__, func.__name__ + suffix,
                               func.__defaults__, func.__closure__)
    clone.__qualname__ = func.__qualname__ + suffix
    clone.__module__ = func.__module__
    clone.__doc__ = func.__doc__
    return clone


class SizedKernel:
    """A numba kernel (whose loops use ``numba.prange``) compiled serial and threaded.

    ``serial`` and ``parallel`` are the two compilations; :meth:`choose` returns the one to
    run for a given amount of work and the number of chunks to split it into (1 serially,
    the number of numba threads otherwise).
    """

    def __init__(self, func, **options):
        self.__doc__ = func.__doc__
        self._func, self._options = func, options
        self.serial = njit(cache=True, **options)(_renamed(func, "_serial"))

    @functools.cached_property
    def parallel(self):
        """The threaded compilation, made on first use (small inputs never need it)."""
        return njit(parallel=True, cache=True, **self._options)(
            _renamed(self._func, "_parallel"))

    def choose(self, work: float):
        """``(kernel, n_chunks)`` for ``work`` elementary steps."""
        threads = numba.get_num_threads()
        if work >= PARALLEL_MIN_WORK and threads > 1:
            return self.parallel, threads
        return self.serial, 1


def sized_kernel(func=None, **options):
    """Decorator: :class:`SizedKernel` of ``func``; ``@sized_kernel(**options)`` passes
    further numba options (e.g. ``fastmath``) to both compilations."""
    if func is None:
        return lambda inner: SizedKernel(inner, **options)
    return SizedKernel(func, **options)


def load_compiler_tables() -> None:
    """Load numba's typing and lowering tables, as the first compilation or cache load of
    a process does (about half a second on the development machine: numba imports its
    implementations of numpy and the builtins), under numba's compiler lock, so a kernel
    called meanwhile from another thread waits for them instead of loading them twice."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()
