"""The ``psd-repaired`` note's number: when the two-way CGM sum is clipped to PSD, the note
gives the largest ratio over models of the SE from the positive inclusion-exclusion terms
(the two one-way covariances, without the intersection term) to the SE of the clipped
sum. Checked against a brute-force computation from the fit's influence rows: cluster
totals by ``numpy.add.at``, CR1's G / (G - 1) per term, eigenvalues clipped with
``numpy.linalg.eigh``, the bread applied after the clip."""

import re

import numpy as np
import pytest

from winrate.analysis import analyze
from winrate.settings import Variance

from .conftest import random_log


def _meat(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """CR1 meat of dense influence rows clustered by ``codes``."""
    _, dense = np.unique(codes, return_inverse=True)
    totals = np.zeros((dense.max() + 1, rows.shape[1]))
    np.add.at(totals, dense, rows)
    g = totals.shape[0]
    return g / (g - 1) * totals.T @ totals


def _expected_ratio(log, board) -> float:
    rows = board.influence.toarray()
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    one_way = _meat(rows, prompt) + _meat(rows, judge)
    cells = _meat(rows, prompt.astype(np.int64) * (judge.max() + 1) + judge)
    eigval, eigvec = np.linalg.eigh(one_way - cells)
    assert eigval.min() < 0  # the design needs the repair
    clipped = (eigvec * np.clip(eigval, 0, None)) @ eigvec.T
    bread = np.eye(rows.shape[1]) if board.bread is None else board.bread
    k = len(board.models)
    se = np.sqrt(np.diag(bread @ clipped @ bread.T)[:k])
    se_positive = np.sqrt(np.diag(bread @ one_way @ bread.T)[:k])
    return float(np.max(se_positive / se))


@pytest.mark.filterwarnings("ignore::winrate.errors.WinrateWarning")
@pytest.mark.parametrize("model", ["winrate", "bt"])
@pytest.mark.parametrize("seed", range(4))
def test_the_note_gives_what_the_one_way_sum_gives(seed, model):
    log = random_log(seed)
    result = analyze(log, cluster="prompt+judge", model=model,
                     variance=Variance("sandwich", correction="cr1"))
    (note,) = [n for n in result.notes if n.code == "psd-repaired"]
    ratio = float(re.search(r"at most ([0-9.]+) times", note.text).group(1))
    # the note prints three significant digits
    assert ratio == pytest.approx(_expected_ratio(log, result.leaderboard), rel=5e-3)
    assert ratio >= 1.0  # the terms left out are PSD: never smaller
