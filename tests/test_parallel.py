"""Serial and threaded kernels: the size gate, distinct cache entries, equal results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import winrate.parallel
from winrate.analysis import analyze
from winrate.parallel import PARALLEL_MIN_WORK
from winrate.variance.sandwich import group_meat, multiway_cluster_cov, naive_cov

from .conftest import random_log

threads = pytest.mark.skipif(numba.get_num_threads() < 2, reason="needs 2 numba threads")


def test_choose_is_serial_below_the_work_threshold():
    from winrate.inference.joint import _family_max

    assert _family_max.choose(PARALLEL_MIN_WORK - 1) == (_family_max.serial, 1)
    if numba.get_num_threads() > 1:
        assert _family_max.choose(PARALLEL_MIN_WORK) == (_family_max.parallel,
                                                          numba.get_num_threads())


_PROBE = """
import numpy as np
from numba import get_thread_id, prange
from winrate.parallel import sized_kernel

@sized_kernel
def thread_ids(n_chunks):
    out = np.zeros(n_chunks, np.int64)
    for c in prange(n_chunks):
        out[c] = get_thread_id()
    return out
"""

_RUN = """
import probe
threaded = len(set(probe.thread_ids.parallel(64).tolist()))  # starts the thread pool
print(len(set(probe.thread_ids.serial(64).tolist())), threaded)
"""


@threads
def test_serial_and_threaded_compilations_survive_the_disk_cache(tmp_path):
    """Numba's cache keys entries by function name, not by the parallel flag: with one name
    the second process would load the same machine code for both (the bug this guards)."""
    (tmp_path / "probe.py").write_text(textwrap.dedent(_PROBE))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMBA_NUM_THREADS="2",
               PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    runs = [subprocess.run([sys.executable, "-c", _RUN], env=env, cwd=tmp_path, text=True,
                           capture_output=True, check=True).stdout.split()
            for _ in range(2)]  # compile and save, then load both from the cache
    assert runs == [["1", "2"], ["1", "2"]]
    assert len(list((tmp_path / "cache").rglob("*.nbi"))) == 2


def _kernel_outputs(log):
    board = analyze(log, cluster="none").leaderboard
    infl = board.influence
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    two_way = multiway_cluster_cov(infl, [prompt, judge])
    one_way = group_meat(infl, prompt)
    return {"scores": board.scores, "influence": infl.toarray(), "naive": naive_cov(infl),
            "two_way": two_way.cov, "prompt_meat": one_way.meat,
            "largest": one_way.largest, "argmax": one_way.argmax}


@threads
@pytest.mark.parametrize("seed", [0, 1])
def test_threaded_kernels_equal_serial(seed, monkeypatch):
    log = random_log(seed, n=3000, k=7, n_prompts=200, n_judges=6)
    serial = _kernel_outputs(log)
    monkeypatch.setattr(winrate.parallel, "PARALLEL_MIN_WORK", 0)
    parallel = _kernel_outputs(log)
    for name, value in serial.items():
        np.testing.assert_allclose(parallel[name], value, rtol=1e-12, atol=1e-15,
                                   err_msg=name)


def test_cli_blas_threads_sleep_unless_the_user_says_otherwise(monkeypatch):
    from winrate.cli import _waiting_threads_sleep

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    _waiting_threads_sleep()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    _waiting_threads_sleep()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_numba_workers_wait_passively_unless_the_user_says_otherwise(given, expected):
    """Importing the kernels' module (as every analysis does) sets passive OpenMP waiting
    in a fresh process, and leaves a user's own setting alone."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = "import os, winrate.parallel; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == expected
