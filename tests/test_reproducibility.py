"""The rerun comparison of tests/reproducibility.py: tolerant to round-off, strict on the rest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.reproducibility import RTOL, assert_same_result


@pytest.fixture
def committed() -> pd.DataFrame:
    return pd.DataFrame({"rep": [0, 1, 2], "method": ["a", "b", "c"],
                         "covered": [True, False, True],
                         "width": [0.9516094153450452, 1e-3, np.inf]})


def _moved(frame: pd.DataFrame, column: str, factor: float) -> pd.DataFrame:
    out = frame.copy()
    out[column] = out[column] * factor
    return out


def test_round_off_passes(committed):
    assert_same_result(_moved(committed, "width", 1 + 1e-15), committed)
    assert_same_result(_moved(committed, "width", 1 + RTOL / 2), committed)


def test_a_changed_float_fails(committed):
    with pytest.raises(AssertionError, match="width"):
        assert_same_result(_moved(committed, "width", 1 + 1e-9), committed)


def test_infinities_must_match(committed):
    changed = committed.copy()
    changed.loc[2, "width"] = 1.0
    with pytest.raises(AssertionError, match="infinite"):
        assert_same_result(changed, committed)


@pytest.mark.parametrize("column, value", [("rep", 5), ("method", "x"), ("covered", True)])
def test_integers_text_and_booleans_are_exact(committed, column, value):
    changed = committed.copy()
    changed.loc[1, column] = value
    with pytest.raises(AssertionError, match=column):
        assert_same_result(changed, committed)
