"""Startup stays light: the parser, ``--help`` and ``--version`` load no numerical library.

Checked through ``sys.modules`` in a fresh interpreter rather than by timing, so the tests
hold on a loaded machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

HEAVY = ("numpy", "pandas", "scipy", "numba", "pyarrow", "matplotlib", "tqdm")
ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str) -> tuple[list[str], str]:
    """Run ``code`` in a fresh interpreter; the heavy top-level packages it imported and
    what it printed before."""
    probe = (f"import sys\n{code}\n"
             f"print('LOADED', *sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    head, _, loaded = done.stdout.rpartition("LOADED")
    return loaded.split(), head


def _cli(argv: list[str]) -> str:
    return ("from winrate.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as stop:\n    assert stop.code == 0\n")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["leaderboard", "--help"],
                                  ["eda", "--help"], ["eval", "--help"], ["power", "--help"],
                                  ["demo", "--help"]])
def test_help_and_version_import_no_numerical_library(argv):
    loaded, printed = _loaded_after(_cli(argv))
    assert loaded == []
    assert printed.strip()


def test_import_winrate_is_light_and_names_load_on_use():
    loaded, _ = _loaded_after("import winrate, winrate.evals, winrate.constants")
    assert loaded == []
    loaded, _ = _loaded_after("import winrate\nwinrate.analyze")
    assert {"numpy", "scipy", "numba"} <= set(loaded)


def test_version_is_the_project_version():
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    _, printed = _loaded_after(_cli(["--version"]))
    assert printed.strip() == f"winrate {expected}"
    _, printed = _loaded_after("import winrate\nprint(winrate.__version__)")
    assert printed.strip() == expected


def test_every_command_is_listed_in_help():
    _, printed = _loaded_after(_cli(["--help"]))
    for command in ("leaderboard", "demo", "eda", "eval", "power"):
        assert command in printed


def test_a_leaderboard_on_a_file_loads_no_network_plotting_or_engine_library(tmp_path):
    """``winrate leaderboard FILE`` needs the numerical libraries, not HTTP (the data
    downloader loads it when it downloads), plotting, progress bars or a query engine."""
    log = tmp_path / "log.csv"
    log.write_text("prompt_id,judge_id,model_a,model_b,outcome\np1,j1,x,y,model_a\n"
                   "p2,j1,y,z,tie\np3,j2,x,z,model_b\np4,j2,z,x,model_a\n")
    code = (_cli(["leaderboard", str(log)])
            + "print('EXTRA', *sorted(m for m in ('http.client', 'matplotlib', 'tqdm', "
              "'duckdb', 'pyspark') if m in sys.modules))")
    loaded, printed = _loaded_after(code)
    assert {"numpy", "pandas", "numba"} <= set(loaded)
    assert printed.rpartition("EXTRA")[2].split() == []


def test_the_log_reader_loads_no_numba_before_the_first_byte():
    """The modules ``winrate leaderboard`` imports before it starts reading (the reader's,
    :func:`winrate.cli._prepare_analysis`) leave numba to the thread that prepares the
    analysis meanwhile: importing it first put 0.1 s before the read."""
    loaded, _ = _loaded_after("import winrate.io.datasets, winrate.io.formats, "
                              "winrate.io.scan, winrate.io.scores, winrate.progress")
    assert {"numpy", "pandas"} <= set(loaded)
    assert "numba" not in loaded


def test_the_script_ends_without_the_collectors_last_walk():
    """The ``winrate`` script is :func:`winrate.cli.console`: :func:`~winrate.cli.main`'s
    exit code, then the collector off and the objects frozen for the interpreter's exit
    (pyproject's entry point names it); :func:`~winrate.cli.main` called from Python leaves
    the collector as it was."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["winrate"] == "winrate.cli:console"
    code = ("import gc\nfrom winrate.cli import console, main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print('AFTER-MAIN', gc.isenabled())\n"
            "status = console(['leaderboard', '--input-that-does-not-exist'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert "AFTER-MAIN True" in done.stdout
    assert done.returncode == 2  # argparse's usage error passes through console()
    code = ("import gc\nimport winrate.cli as cli\n"
            "cli.main = lambda argv=None: 7\n"  # a command that returned its exit code
            "status = cli.console([])\n"
            "print('STATUS', status, gc.isenabled(), gc.get_freeze_count() > 0)\n")
    _, printed = _loaded_after(code)
    assert "STATUS 7 False True" in printed
