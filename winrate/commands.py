"""What every command module shares: the parser (one-line errors with a guess at what was
meant), grouped help, sub-commands from ``COMMANDS`` dicts, the output checks made before
any work, and the runner that turns bad input into one line and exit code 2.

:mod:`winrate.cli` (``winrate``) and :mod:`winrate.evals.cli` (``winrate eval``, ``winrate
power``; also ``python -m winrate.evals.cli``) build on it; it imports only light modules,
so help loads no numerical library.
"""

from __future__ import annotations

import argparse
import sys

from winrate.errors import WinrateInputError, describe_os_error


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: an invalid choice, a missing or unknown flag is one
    line naming the command, with a guess at what was meant ("did you mean --cluster?")."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """Parse as argparse does; unknown flags are an error of the command they were
        given to, with the nearest flag of that command."""
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(namespace, "parser", self)
            command.error(f"unrecognized arguments: {' '.join(extras)}"
                          f"{_guess_flag(extras, command)}")
        return namespace

    def _check_value(self, action, value):
        """argparse's check of a choice, its error with the nearest choice appended."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            guess = did_you_mean(str(value), [str(c) for c in action.choices], repr)
            raise argparse.ArgumentError(action, error.message + guess) from None


def did_you_mean(given: str, known, show=str) -> str:
    """``"; did you mean X?"`` for the entry of ``known`` nearest ``given``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(given, list(known), n=1, cutoff=0.6)
    return f"; did you mean {show(close[0])}?" if close else ""


def _guess_flag(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """The guess for the first unknown flag among ``extras`` (``--flag=value`` too)."""
    flags = [s for action in parser._actions for s in action.option_strings]
    unknown = [e.split("=", 1)[0] for e in extras if e.startswith("--")]
    return did_you_mean(unknown[0], flags) if unknown else ""


def section(parser: argparse.ArgumentParser, title: str, description: str | None = None):
    """The argument group ``title`` of ``parser``, made on first use (help lists the
    groups in the order they were made, each flag under its group)."""
    groups = parser.__dict__.setdefault("_winrate_sections", {})
    if title not in groups:
        groups[title] = parser.add_argument_group(title, description)
    return groups[title]


def add_commands(parser: argparse.ArgumentParser, commands: dict) -> None:
    """One sub-command per ``name: (add_arguments, run)``; its help is the first paragraph
    of ``run``'s docstring, and the parsed namespace carries ``run`` and its parser."""
    sub = parser.add_subparsers(dest="command", required=True, title="commands")
    for name, (add_arguments, run) in commands.items():
        summary = " ".join((run.__doc__ or "").strip().split("\n\n")[0].split())
        command = sub.add_parser(name, help=summary or None, description=summary or None)
        add_arguments(command)
        command.usage = _short_usage(command)
        command.set_defaults(run=run, parser=command)


def _short_usage(parser: argparse.ArgumentParser) -> str:
    """``winrate leaderboard [input] [options]``: the positional arguments and a required
    choice of flags (``(--delta DELTA | --n N)``), the other flags left to the grouped list
    below (the full list of a command is dozens of lines)."""
    named = [f"[{action.metavar or action.dest}]" if action.nargs == "?"
             else action.metavar or action.dest
             for action in parser._actions if not action.option_strings]
    chosen = ["(" + " | ".join(f"{a.option_strings[0]} {a.metavar or a.dest.upper()}"
                               for a in group._group_actions) + ")"
              for group in parser._mutually_exclusive_groups if group.required]
    return " ".join(["%(prog)s", *named, *chosen, "[options]"])


#: The flags that name an input (a file, folder or glob) no output may touch.
INPUT_FLAGS = ("input", "answers", "file", "pilot")


def check_output_flags(args: argparse.Namespace, flags) -> None:
    """Before any work: every output flag of ``flags`` that is given names a writable
    file, each its own, clear of every input (:func:`winrate.report.output.check_outputs`)."""
    from winrate.report.output import check_outputs

    inputs = [getattr(args, flag, None) for flag in INPUT_FLAGS] + _dataset_folders(args)
    outputs = {f"--{flag}": getattr(args, flag, None) for flag in flags}
    check_outputs({k: v for k, v in outputs.items() if v != "-"}, inputs)


def _dataset_folders(args: argparse.Namespace) -> list:
    """The folders a ``--dataset`` is read from (its folder in each data directory)."""
    if not getattr(args, "dataset", None):
        return []
    from winrate.io.download import search_dirs

    return [folder / args.dataset for folder, _ in search_dirs()]


def run_parsed(args: argparse.Namespace) -> int:
    """Run the parsed command; bad input, missing data and a failed read or write end in
    one line on stderr and exit code 2."""
    from winrate.io.download import DataUnavailableError, DownloadError

    try:
        return args.run(args)
    except (WinrateInputError, DataUnavailableError, DownloadError) as error:
        print(f"winrate {args.command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # reading or writing a file the checks could not foresee
        print(f"winrate {args.command}: error: {describe_os_error(error)}", file=sys.stderr)
        return 2
