"""The command line's help and its parse errors: every command's help is grouped (input,
estimator, variance, joint inference, output, engine; a format's flags under that format),
a mistyped flag or choice gets "did you mean", and every parse error is one line."""

from __future__ import annotations

import re

import pytest

from winrate.cli import build_parser, main

FORMATS = ["--format scores", "--format alpaca_eval", "--format clean_battle",
           "--format arena_hard", "--format arena", "--format mt_bench",
           "--format lm_eval / inspect / helm / lighteval"]
GROUPS = {
    "leaderboard": ["input", *FORMATS, "estimator", "variance", "joint inference", "output",
                    "engine"],
    "eda": ["input", *FORMATS, "estimator", "variance", "output", "engine"],
    "check": ["input", *FORMATS, "estimator", "variance", "coverage check", "output",
              "engine"],
    "eval": ["input", "variance", "paired comparisons", "output", "by category"],
    "compare": ["input", "variance", "output"],
    "power": ["effect or sample size", "variances", "pilot", "output"],
    "demo": ["simulation"],
    "example": ["output"],
}


def _help_of(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def _help(command: str, capsys) -> str:
    return _help_of([command], capsys)


def _sections(text: str) -> dict[str, str]:
    """Each help section (its title line ends with ':' at column 0) and its text."""
    parts = re.split(r"^(\S[^\n]*):\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("command", sorted(GROUPS))
def test_help_is_grouped_in_order(command, capsys):
    sections = _sections(_help(command, capsys))
    titles = [t for t in sections if t not in ("options", "usage")]
    assert titles == GROUPS[command]


@pytest.mark.parametrize("command, usage", [
    ("leaderboard", "usage: winrate leaderboard [input] [options]"),
    ("eval", "usage: winrate eval [FILE] [options]"),
    ("power", "usage: winrate power (--delta DELTA | --n N) [options]"),
])
def test_usage_is_one_line_above_the_groups(command, usage, capsys):
    assert _help(command, capsys).splitlines()[0] == usage


def test_the_top_level_help_lists_the_commands_and_points_to_their_groups(capsys):
    text = _help_of([], capsys)
    commands = _sections(text)["commands"]
    assert "leaderboard" in commands and "eval" in commands
    assert "winrate COMMAND --help lists the flags of a command in groups" in " ".join(
        text.split())


@pytest.mark.parametrize("flag, group", [
    ("--score-col", "--format scores"), ("--discrete", "--format alpaca_eval"),
    ("--include-named", "--format clean_battle"), ("--no-dedup", "--format clean_battle"),
    ("--strong-weight", "--format arena_hard"), ("--answers", "--format arena_hard"),
    ("--layout", "--format arena"), ("--games", "--format mt_bench"),
    ("--metric", "--format lm_eval / inspect / helm / lighteval"),
    ("--cluster", "variance"), ("--method", "variance"), ("--correction", "variance"),
    ("--model", "estimator"), ("--ranks", "joint inference"), ("--plot", "output"),
    ("--json", "output"), ("--engine", "engine"), ("--memory", "engine"),
    ("--prompt-col", "input"), ("--dataset", "input"),
])
def test_leaderboard_flags_sit_in_their_group(flag, group, capsys):
    sections = _sections(_help("leaderboard", capsys))
    assert re.search(rf"^\s+{re.escape(flag)}\b", sections[group], flags=re.M), group


def test_every_flag_of_every_command_is_in_a_named_group():
    """No flag is left in argparse's catch-all 'options' section (but --help)."""
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, command in commands.items():
        loose = [a.option_strings for group in command._action_groups
                 if group.title in ("options", "optional arguments", "positional arguments")
                 for a in group._group_actions if a.dest != "help"]
        assert loose == [], name


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_mistyped_flag_suggests_the_flag(capsys):
    err = _error(["leaderboard", "x.csv", "--clustr", "prompt"], capsys)
    assert err.startswith("winrate leaderboard: error: unrecognized arguments: --clustr")
    assert "did you mean --cluster?" in err


def test_a_mistyped_flag_with_a_value_suggests_the_flag(capsys):
    err = _error(["eval", "f.csv", "--score-col", "s", "--question-col", "q",
                  "--modle-col=m"], capsys)
    assert err.startswith("winrate eval: error:") and "did you mean --model-col?" in err


def test_a_mistyped_choice_suggests_the_choice_in_one_line(capsys):
    err = _error(["leaderboard", "x.csv", "--model", "btt"], capsys)
    assert "invalid choice: 'btt'" in err and "did you mean 'bt'?" in err
    assert "usage:" not in err


def test_a_mistyped_command_suggests_the_command(capsys):
    err = _error(["leaderbord", "x.csv"], capsys)
    assert err.startswith("winrate: error:") and "did you mean 'leaderboard'?" in err


def test_a_missing_required_flag_is_one_line(capsys):
    err = _error(["power", "--omega2", "0.1"], capsys)
    assert "one of the arguments --delta --n is required" in err


def test_a_far_off_flag_gets_no_guess(capsys):
    err = _error(["leaderboard", "x.csv", "--zzzzzz"], capsys)
    assert "did you mean" not in err and "winrate leaderboard --help" in err


@pytest.mark.parametrize("command", sorted(GROUPS))
def test_every_help_line_fits_an_80_column_terminal(command, capsys, monkeypatch):
    """argparse wraps the help text to the terminal, but not a ``{choice,...}`` metavar:
    a flag with many choices names them in its help instead (``--format NAME``)."""
    monkeypatch.setenv("COLUMNS", "80")
    wide = [line for line in _help(command, capsys).splitlines() if len(line) > 80]
    assert wide == []
