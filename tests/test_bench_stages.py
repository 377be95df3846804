"""scripts/bench.py's stage breakdown reads the current call path: every function its stage
table names exists, and a small leaderboard run gives every stage some time (a stage whose
functions the run no longer calls would print 0.000 s)."""

from __future__ import annotations

import pytest

from tests.script_modules import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench", "winrate_bench")


def test_every_function_of_the_stage_table_exists(bench):
    for specs in bench.STAGES.values():
        for spec in specs:
            assert callable(bench.resolve_stage_function(spec)[2]), spec


def test_a_renamed_function_is_refused_not_timed_as_zero(bench, monkeypatch):
    import winrate

    reader = winrate.io.logs.read_comparisons
    monkeypatch.setitem(bench.STAGES, "fit", ("winrate.inference.plan:no_such_step",))
    with pytest.raises(SystemExit, match="no_such_step"), bench.StageTimer():
        pass
    assert winrate.io.logs.read_comparisons is reader  # refused before anything is patched


def test_a_small_run_gives_every_stage_time_and_restores_the_functions(bench, tmp_path):
    log = tmp_path / "log.parquet"
    bench.write_parquet_log(log, 3_000, 8, 300, 5)
    originals = {spec: bench.resolve_stage_function(spec)[2]
                 for specs in bench.STAGES.values() for spec in specs}
    argv = ["leaderboard", str(log), "--cluster", "prompt+judge", "--simultaneous",
            "--pairwise", "--json", str(tmp_path / "out.json")]
    for _ in range(2):  # the second run: modules the first imported hold no stale wrapper
        total, stages = bench._cli_in_process(argv)
        assert set(stages) == set(bench.STAGES)
        assert all(seconds > 0 for seconds in stages.values()), stages
        assert sum(stages.values()) <= total
        for spec, function in originals.items():
            assert bench.resolve_stage_function(spec)[2] is function
