"""Outputs cannot destroy data: every output path is checked before the work (no collision
with an input file, folder or glob; a writable folder) and written to a temporary file
renamed into place, so a failed write leaves the old output intact."""

from __future__ import annotations

import builtins
import errno
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from winrate.cli import main
from winrate.report.output import collision, replacing, write_text

OLD = "the previous output\n"


@pytest.fixture
def folder(simulated_log_file, tmp_path):
    """A folder holding the simulated log as two CSV parts."""
    frame = pd.read_csv(simulated_log_file)
    data = tmp_path / "logs"
    data.mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_csv(data / "part-0.csv", index=False)
    frame.iloc[half:].to_csv(data / "part-1.csv", index=False)
    return data


@pytest.fixture
def scores(tmp_path):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"q": [1, 2, 3, 4] * 2, "m": ["a"] * 4 + ["b"] * 4,
                  "s": [1, 0, 1, 1, 0, 0, 1, 0]}).to_csv(path, index=False)
    return path


@pytest.fixture
def no_analysis(monkeypatch):
    """Any analysis fails the test: the checks must come first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the analysis ran before the output check")

    monkeypatch.setattr("winrate.cli.analyze_input", refuse)
    monkeypatch.setattr("winrate.cli.explore_input", refuse)
    monkeypatch.setattr("winrate.evals.frame.evaluate", refuse)


def _one_line_error(argv, capsys, *expected) -> str:
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"winrate {argv[0]}: error:"), err
    for text in expected:
        assert text in err, err
    return err


def _snapshot(path):
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command, flag", [
    ("leaderboard", "--json"), ("leaderboard", "--csv"), ("leaderboard", "--html"),
    ("leaderboard", "--plot"), ("eda", "--json"), ("check", "--json"),
])
def test_an_output_inside_an_input_folder_is_refused(folder, command, flag, capsys,
                                                      no_analysis):
    before = _snapshot(folder)
    _one_line_error([command, folder, flag, folder / "report.out"], capsys,
                    "lies inside the input folder")
    assert _snapshot(folder) == before


@pytest.mark.parametrize("pattern, output", [
    ("part-*.csv", "part-9.csv"), ("*.csv", "table.csv"), ("**/*.csv", "deep/t.csv"),
])
def test_an_output_an_input_glob_would_read_is_refused(folder, pattern, output, capsys,
                                                       no_analysis):
    (folder / "deep").mkdir()
    before = _snapshot(folder)
    _one_line_error(["leaderboard", folder / pattern, "--csv", folder / output], capsys,
                    "matches the input")
    assert _snapshot(folder) == before


def test_an_output_beside_a_glob_it_does_not_match_is_written(folder, tmp_path, capsys):
    out = folder / "report.json"
    assert main(["leaderboard", str(folder / "part-*.csv"), "--json", str(out)]) == 0
    assert out.exists()


def test_eval_cannot_write_over_its_input(scores, capsys, no_analysis):
    before = scores.read_bytes()
    _one_line_error(["eval", scores, "--score-col", "s", "--question-col", "q",
                     "--model-col", "m", "--json", scores], capsys, "is the input file")
    assert scores.read_bytes() == before


def test_power_cannot_write_over_its_pilot(scores, capsys):
    _one_line_error(["power", "--n", "100", "--pilot", scores, "--score-col", "s",
                     "--question-col", "q", "--model-col", "m", "--models", "a", "b",
                     "--json", scores], capsys, "is the input file")


def test_two_outputs_on_one_file_are_refused(simulated_log_file, tmp_path, capsys,
                                             no_analysis):
    out = tmp_path / "same"
    _one_line_error(["leaderboard", simulated_log_file, "--json", out, "--csv", out], capsys,
                    "--json and --csv name the same file")


def test_a_missing_output_folder_is_refused_before_the_work(simulated_log_file, tmp_path,
                                                            capsys, no_analysis):
    _one_line_error(["leaderboard", simulated_log_file, "--html", tmp_path / "no" / "x.html"],
                    capsys, "does not exist")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs file permissions that bind (not root)")
def test_a_read_only_output_folder_is_refused_before_the_work(simulated_log_file, tmp_path,
                                                              capsys, no_analysis):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        _one_line_error(["leaderboard", simulated_log_file, "--json", locked / "x.json"],
                        capsys, "cannot write it")
    finally:
        locked.chmod(stat.S_IRWXU)


def _full_disk(monkeypatch, disk: Path):
    """Every file opened for writing in folder ``disk`` takes half of what is written, then
    the disk is full (files elsewhere, such as matplotlib's font cache written on a first
    run, are written as usual)."""
    real_open = builtins.open

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            self.handle.write(data[:len(data) // 2])
            self.handle.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    def fake_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        inside = isinstance(file, (str, os.PathLike)) and Path(file).parent == disk
        return Full(handle) if "w" in mode and inside else handle

    monkeypatch.setattr(builtins, "open", fake_open)


@pytest.mark.parametrize("flag", ["--json", "--csv", "--html", "--plot"])
def test_a_failed_leaderboard_write_keeps_the_old_output(simulated_log_file, tmp_path, flag,
                                                        monkeypatch, capsys):
    out = tmp_path / ("old.png" if flag == "--plot" else "old.out")
    out.write_text(OLD)
    _full_disk(monkeypatch, tmp_path)
    _one_line_error(["leaderboard", simulated_log_file, flag, out], capsys,
                    str(out), "No space left on device")
    assert out.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.png" if flag == "--plot"
                                                          else "old.out"]


def test_a_failed_eval_write_keeps_the_old_output(scores, tmp_path, monkeypatch, capsys):
    out = tmp_path / "old.json"
    out.write_text(OLD)
    _full_disk(monkeypatch, tmp_path)
    _one_line_error(["eval", scores, "--score-col", "s", "--question-col", "q",
                     "--model-col", "m", "--json", out], capsys, "No space left on device")
    assert out.read_text() == OLD


def test_a_failed_example_write_keeps_the_old_files(tmp_path, monkeypatch, capsys):
    (tmp_path / "example.csv").write_text(OLD)
    _full_disk(monkeypatch, tmp_path)
    _one_line_error(["example", tmp_path, "--force"], capsys, "No space left on device")
    assert (tmp_path / "example.csv").read_text() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["example.csv"]


def test_a_replaced_output_keeps_its_mode_and_a_new_one_gets_the_umask(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_text(OLD)
    kept.chmod(0o640)
    write_text(kept, "new\n")
    assert kept.read_text() == "new\n" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    mask = os.umask(0o022)
    os.umask(mask)
    write_text(tmp_path / "new.txt", "x")
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o666 & ~mask


def test_an_error_in_the_block_removes_the_temporary_file(tmp_path):
    with pytest.raises(ValueError), replacing(tmp_path / "x.png") as temporary:
        assert temporary.endswith(".png") and os.path.dirname(temporary) == str(tmp_path)
        raise ValueError
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("source, target, hit", [
    ("{d}/a.csv", "{d}/a.csv", True), ("{d}/a.csv", "{d}/b.csv", False),
    ("{d}", "{d}/x/y.json", True), ("{d}/x", "{d}/xy.json", False),
    ("{d}/*.csv", "{d}/new.csv", True), ("{d}/*.csv", "{d}/new.json", False),
    ("{d}/*.csv", "{d}/x/new.csv", False), ("{d}/**/*.csv", "{d}/x/y/new.csv", True),
    ("{d}/**/*.csv", "{d}/new.csv", True), ("{d}/p-?.parquet", "{d}/p-1.parquet", True),
    ("file://{d}/x", "{d}/x/r.json", True), ("s3a://bucket{d}/x", "{d}/x/r.json", False),
])
def test_collision_of_files_folders_and_globs(tmp_path, source, target, hit):
    (tmp_path / "x").mkdir()
    (tmp_path / "a.csv").write_text("")
    found = collision(target.format(d=tmp_path), source.format(d=tmp_path))
    assert bool(found) == hit, found


def test_a_symlinked_input_folder_is_still_the_input(folder, tmp_path, capsys, no_analysis):
    link = tmp_path / "link"
    link.symlink_to(folder, target_is_directory=True)
    _one_line_error(["leaderboard", link, "--json", folder / "r.json"], capsys,
                    "lies inside the input folder")


@pytest.mark.parametrize("command", [["leaderboard", "--dataset", "llmfao", "--csv"],
                                     ["eval", "--dataset", "mmlu_pro", "--json"]])
def test_an_output_inside_a_datasets_folder_is_refused(command, tmp_path, monkeypatch, capsys,
                                                       no_analysis):
    dataset = command[2]
    (tmp_path / "data" / dataset).mkdir(parents=True)
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "data"))
    _one_line_error([*command, tmp_path / "data" / dataset / "out.csv"], capsys,
                    "lies inside the input folder")


def test_a_device_is_written_directly(tmp_path):
    """/dev/null (as /dev/stdout) has nothing to keep: no temporary file beside it."""
    before = set(os.listdir("/dev"))
    with replacing("/dev/null") as temporary:
        assert temporary == "/dev/null"
    write_text("/dev/null", "x")
    assert set(os.listdir("/dev")) <= before


def test_a_device_output_passes_the_check(simulated_log_file, capsys):
    assert main(["leaderboard", str(simulated_log_file), "--csv", "/dev/null", "--json",
                 "/dev/null"]) == 0
