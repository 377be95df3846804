"""Comparing a rerun with a committed result without depending on the last bits.

A deterministic kernel gives the same bits on one machine and one environment, but not
across CPUs (vector paths, fused multiply-add, libm) or library releases: the last digit
of a 17-digit float may move. Committed results are therefore compared with a stated
tolerance: relative ``RTOL`` for floats (a kernel whose output moves by more than that has
changed, not rounded differently), exact equality for integers, booleans and text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Relative tolerance for rerun floats of deterministic kernels: about 4,500 ulps, far
#: above round-off differences between machines (a few ulps per operation, growing with the
#: length of a sum) and far below any change of method.
RTOL = 1e-12


def assert_same_result(rerun: pd.DataFrame, committed: pd.DataFrame, rtol: float = RTOL):
    """Same columns, dtypes kinds and rows; float columns equal to ``rtol`` relative (an
    absolute floor of ``rtol`` times the column's largest magnitude covers values near
    zero; infinities and NaN must match exactly); every other column exactly equal."""
    assert list(rerun.columns) == list(committed.columns), "columns differ"
    assert len(rerun) == len(committed), f"{len(rerun)} rows against {len(committed)}"
    for name in rerun.columns:
        ours, theirs = rerun[name].to_numpy(), committed[name].to_numpy()
        if _is_float(ours) or _is_float(theirs):
            _assert_floats_close(name, ours.astype(float), theirs.astype(float), rtol)
        else:
            differ = ours != theirs
            assert not differ.any(), (f"column {name!r} differs in {int(differ.sum())} rows, "
                                      f"first at row {int(np.argmax(differ))}")


def _is_float(values: np.ndarray) -> bool:
    return values.dtype.kind == "f"


def _assert_floats_close(name: str, ours: np.ndarray, theirs: np.ndarray, rtol: float):
    finite = np.isfinite(theirs)
    same_special = np.array_equal(ours[~finite], theirs[~finite], equal_nan=True)
    assert same_special and np.isfinite(ours[finite]).all(), \
        f"column {name!r}: infinite or missing values differ"
    scale = np.max(np.abs(theirs[finite]), initial=0.0)
    gap = np.abs(ours[finite] - theirs[finite])
    allowed = rtol * np.maximum(np.abs(theirs[finite]), scale)
    worst = np.max(gap / np.where(allowed > 0, allowed, 1.0), initial=0.0)
    assert (gap <= allowed).all(), (f"column {name!r} differs by up to {worst:.3g} times the "
                                   f"tolerance (relative {rtol:g})")
