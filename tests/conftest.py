"""Shared fixtures: small random comparison logs with missing pairs, ties and unequal clusters."""

from __future__ import annotations

import numpy as np
import pytest

from winrate.data import ComparisonLog


def random_log(seed: int, n: int = 400, k: int = 6, n_prompts: int = 37, n_judges: int = 5,
               drop_pair: tuple[int, int] | None = (0, 5)) -> ComparisonLog:
    """Unbalanced random log: skewed cluster sizes, ties, one pair never compared."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, 3 * n)
    b = rng.integers(0, k, 3 * n)
    keep = a != b
    if drop_pair is not None:
        keep &= ~((np.minimum(a, b) == drop_pair[0]) & (np.maximum(a, b) == drop_pair[1]))
    a, b = a[keep][:n], b[keep][:n]
    score = rng.choice([0.0, 0.5, 1.0], size=n, p=[0.4, 0.2, 0.4])
    prompt = np.minimum(rng.geometric(1 / 8, n), n_prompts) - 1 + rng.integers(0, 3, n)
    judge = rng.choice(n_judges, size=n, p=np.linspace(1, 3, n_judges) / np.linspace(
        1, 3, n_judges).sum())
    return ComparisonLog.from_arrays(a, b, score, prompt=prompt, judge=judge)


@pytest.fixture(params=[0, 1, 2])
def unbalanced_log(request) -> ComparisonLog:
    return random_log(request.param)


@pytest.fixture(scope="session")
def simulated_log_file(tmp_path_factory):
    """A small simulated crossed log (5 models, 60 prompts, 4 judges) written as CSV."""
    from winrate.simulate import SimulationDesign, simulate_comparisons

    sim = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=60, n_judges=4), seed=9)
    path = tmp_path_factory.mktemp("simulated") / "log.csv"
    sim.frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def alpaca_eval_log():
    """``read_dataset("alpaca_eval", discrete=...)``, read at most once per test worker
    (each read parses 58 annotation files, about 2 s)."""
    import warnings

    from winrate.data import read_dataset
    from winrate.errors import WinrateWarning

    logs = {}

    def load(discrete: bool = False):
        if discrete not in logs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", WinrateWarning)
                logs[discrete] = read_dataset("alpaca_eval", discrete=discrete, progress=False)
        return logs[discrete]

    return load

