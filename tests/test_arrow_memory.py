"""The Parquet readers hand the memory Arrow's pool keeps back to the system once their
Arrow tables are freed (:func:`winrate.io.logs.release_arrow_memory`), so the analysis'
arrays reuse the pages the read touched."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from winrate.io.logs import read_comparisons, read_table
from winrate.io.scores import scores_log


class _SpyPool:
    """Arrow's default pool, recording the bytes Arrow still holds at each release."""

    def __init__(self, pool):
        self._pool, self.held_at_release = pool, []

    def release_unused(self):
        self.held_at_release.append(pa.total_allocated_bytes())
        self._pool.release_unused()


@pytest.fixture
def spy_pool(monkeypatch):
    spy = _SpyPool(pa.default_memory_pool())
    monkeypatch.setattr(pa, "default_memory_pool", lambda: spy)
    return spy


def _file(tmp_path, frame: pd.DataFrame):
    path = tmp_path / "log.parquet"
    frame.to_parquet(path, row_group_size=50_000)
    table_bytes = pa.parquet.read_table(path).nbytes
    return path, table_bytes


def _comparisons(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 20, n)
    return pd.DataFrame({"prompt": [f"p{i}" for i in rng.integers(0, 50_000, n)],
                         "judge": "j0", "model_a": [f"m{i}" for i in a],
                         "model_b": [f"m{i}" for i in (a + rng.integers(1, 20, n)) % 20],
                         "outcome": rng.choice(["a", "b", "tie"], n)})


def test_comparison_reader_releases_after_its_frame_is_freed(tmp_path, spy_pool):
    n = 200_000
    path, table_bytes = _file(tmp_path, _comparisons(n))
    log = read_comparisons(path)
    held = pa.total_allocated_bytes()  # what the log itself keeps of Arrow's (labels)
    assert log.n_rows == n
    assert len(spy_pool.held_at_release) == 2  # the table dropped, then the frame
    assert spy_pool.held_at_release[-1] <= held + table_bytes / 100  # the frame freed


def test_table_reader_releases_after_its_table_is_freed(tmp_path, spy_pool):
    path, table_bytes = _file(tmp_path, _comparisons(200_000))
    frame = read_table(path, text_cols=("prompt", "model_a", "model_b"),
                       coded_cols=("prompt", "model_a", "model_b", "outcome"))
    held = pa.total_allocated_bytes()  # the frame's own Arrow buffers
    assert len(frame) == 200_000
    assert len(spy_pool.held_at_release) == 1
    assert spy_pool.held_at_release[0] <= held + table_bytes / 100  # the table freed


def test_score_reader_releases_after_its_batches_are_freed(tmp_path, spy_pool):
    rng = np.random.default_rng(1)
    questions, models = 40_000, 5
    frame = pd.DataFrame({"question_id": np.repeat([f"q{i}" for i in range(questions)], models),
                          "model": np.tile([f"m{i}" for i in range(models)], questions),
                          "score": rng.integers(0, 2, questions * models).astype(float)})
    path, table_bytes = _file(tmp_path, frame)
    table = scores_log(path)
    held = pa.total_allocated_bytes()
    assert table.n_questions == questions
    assert len(spy_pool.held_at_release) == 1
    assert spy_pool.held_at_release[0] <= held + table_bytes / 100  # the batches freed
