"""The leaderboard builder's commands: ``winrate judges LOG`` (is the judge biased?),
``winrate plan LOG`` (how much more data?) and ``winrate diff OLD NEW`` or ``winrate diff
LOG --since DATE --time-col COL`` (what changed since the last release?).

Each is a pair ``(add_arguments(parser), run(args) -> exit code)`` in :data:`COMMANDS`,
which :mod:`winrate.cli` registers. The runners import the numerical modules they need.
"""

from __future__ import annotations

import argparse
import sys

from winrate import notes
from winrate.cli import (
    add_analysis_arguments,
    add_estimator_arguments,
    add_input_arguments,
    add_page_text_arguments,
    add_progress_argument,
    estimator_options,
    load_log,
    write_page,
)
from winrate.commands import check_output_flags, section
from winrate.errors import WinrateInputError


def _add_common(parser: argparse.ArgumentParser) -> None:
    """Clustering, level, JSON output and progress bars, shared by the commands."""
    group = section(parser, "variance")
    group.add_argument("--cluster", default=None,
                       help="none | prompt | judge | prompt+judge | COL[+COL...] (default: "
                            "prompt+judge, or those of the two axes the log has)")
    group.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level")
    _add_outputs(parser)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """--json, --table-format, --html (with --title, --description), --progress; the log
    is read in memory."""
    group = section(parser, "output")
    group.add_argument("--json", metavar="PATH", help="write the JSON report here")
    group.add_argument("--table-format", choices=("text", "markdown"), default="text",
                       help="the report as text (default) or Markdown (pipe tables)")
    group.add_argument("--html", metavar="PATH",
                       help="write the leaderboard with this report as one self-contained "
                            "web page here (loads nothing from the network)")
    add_page_text_arguments(group)
    add_progress_argument(parser)
    parser.set_defaults(engine="memory", memory=None)


def add_judges_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    group = section(parser, "judges")
    group.add_argument("--judge-family", metavar="NAME=FAMILY[,...]|FILE",
                       help="judge and model names of one family (e.g. every GPT-4 variant), "
                            "as NAME=FAMILY pairs or a JSON file of them; a name not given "
                            "is its own family")
    group.add_argument("--first-col", metavar="COL",
                       help="column holding 1 where model_a was shown first and 0 where "
                            "model_b was (default: model_a is shown first)")
    _add_common(parser)


def judge_families(text: str | None) -> dict[str, str]:
    """``--judge-family``: ``"a=x,b=x"`` or a JSON file of ``{name: family}``."""
    if not text:
        return {}
    import json
    from pathlib import Path

    path = Path(text)
    if path.suffix == ".json" or path.is_file():
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise WinrateInputError(f"--judge-family {text}: {error}") from None
        if not isinstance(found, dict):
            raise WinrateInputError(f"--judge-family {text}: not a JSON object of "
                                    "name: family")
        return {str(k): str(v) for k, v in found.items()}
    pairs = [item.partition("=") for item in text.split(",") if item.strip()]
    bad = [name for name, sep, family in pairs if not (sep and name.strip() and family.strip())]
    if bad:
        raise WinrateInputError(f"--judge-family: {bad[0]!r} is not NAME=FAMILY")
    return {name.strip(): family.strip() for name, _, family in pairs}


def run_judges(args: argparse.Namespace) -> int:
    """Audit the judges: position bias, self-preference, order consistency, ties.

    Position bias and self-preference are Bradley-Terry covariates with clustered
    intervals; the flip rate of pairs judged in both orders is prompt-clustered; the board
    is shown as judged and with each adjustment (winrate.audit_judges)."""
    from winrate.judges import audit_judges
    from winrate.progress import preference

    check_output_flags(args, ("json", "html"))
    families = judge_families(args.judge_family)
    clustering = _clustering(args)
    args.covariates = args.first_col or ""  # read the column as a feature
    with preference(args.progress):
        log, loaded = load_log(args, clustering or ())
        with notes.gathered():
            audit = audit_judges(log, cluster=clustering, alpha=args.alpha,
                                 judge_family=families, first_shown=args.first_col)
    _write_json(audit.to_dict(), args.json)
    if args.html:
        write_page(audit.page_document(), args, "judge audit")
    _print(audit, args.table_format)
    for note in [*loaded, *audit.notes]:
        print(note.line(), file=sys.stderr)
    return 0


def _clustering(args: argparse.Namespace):
    from winrate.settings import parse_clustering

    if not 0 < args.alpha < 1:
        raise WinrateInputError(f"--alpha must be in (0, 1), got {args.alpha}")
    return parse_clustering(args.cluster) if args.cluster is not None else None


def _print(report, table_format: str) -> None:
    """The report on stdout, as text or Markdown."""
    print(report.to_markdown() if table_format == "markdown" else report.summary())


def _write_json(doc: dict, path: str | None) -> None:
    if not path:
        return
    import json

    from winrate.report.output import write_text

    write_text(path, json.dumps(doc, indent=2) + "\n")


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    section(parser, "input").add_argument(
        "new", nargs="?", help="the new release's comparison log (INPUT is the old one)")
    group = section(parser, "releases")
    group.add_argument("--since", metavar="DATE",
                       help="one log: the rows before DATE are the old release, all rows "
                            "the new one (with --time-col)")
    group.add_argument("--time-col", metavar="COL", help="column of each comparison's time")
    add_estimator_arguments(parser)
    parser.set_defaults(model="bt")
    section(parser, "joint inference").add_argument(
        "--seed", type=int, default=0, help="seed of the simultaneous critical values")
    _add_common(parser)


def run_diff(args: argparse.Namespace) -> int:
    """What changed between two releases: each shared model's change with intervals.

    The old and new fits share rows, so the change's covariance comes from both fits'
    influence on every row of the union, clustered jointly (winrate.diff_releases); the
    rank swaps are real when their gap's change is simultaneously significant. Give OLD
    NEW, or one log with --since DATE --time-col COL."""
    from winrate.diff import diff_releases
    from winrate.progress import preference

    check_output_flags(args, ("json", "html"))
    clustering = _clustering(args)
    with preference(args.progress):
        old, new, loaded = _releases(args, clustering)
        options = estimator_options(args)
        with notes.gathered():
            found = diff_releases(old, new, cluster=clustering, alpha=args.alpha,
                                  seed=args.seed, **options)
    _write_json(found.to_dict(), args.json)
    if args.html:
        write_page(found.page_document(), args, "changes since the last release")
    _print(found, args.table_format)
    for note in [*loaded, *found.notes]:
        print(note.line(), file=sys.stderr)
    return 0


def _releases(args: argparse.Namespace, clustering):
    """(old log, new log, reading notes) of OLD NEW, or of one log split at --since."""
    from winrate.diff import split_since

    if args.since is None:
        if args.time_col:
            raise WinrateInputError("--time-col applies with --since only")
        if not (args.input and args.new):
            raise WinrateInputError("give OLD and NEW logs, or one log with --since DATE "
                                    "--time-col COL")
        old, old_notes = load_log(args, clustering or ())
        args.input = args.new
        new, new_notes = load_log(args, clustering or ())
        return old, new, [*old_notes, *new_notes]
    if args.new or not args.time_col:
        raise WinrateInputError("--since splits one log: give one INPUT and --time-col COL")
    log, loaded = load_log(args, (*(clustering or ()), args.time_col))
    return (*split_since(log, args.time_col, args.since), loaded)


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser)
    group = section(parser, "plan")
    group.add_argument("--models", nargs=2, metavar=("A", "B"),
                       help="the two models whose difference (--delta) is to be detected")
    group.add_argument("--delta", type=float,
                       help="the difference of A and B to detect, on the score scale")
    group.add_argument("--top", type=int, metavar="K",
                       help="every adjacent pair among the current top K, at its gap")
    group.add_argument("--power", type=float, default=0.8, help="1 - beta (default 0.8)")
    group.add_argument("--simultaneous", action="store_true",
                       help="test the contrasts together (max-|T| critical value)")
    _add_outputs(parser)


def run_plan(args: argparse.Namespace) -> int:
    """How much more data: prompts, judges or comparisons to detect a difference.

    From the log's own variance components per clustering axis (the multiway sandwich's
    terms), the prompts, judges, comparisons (or prompts and judges together) needed to
    detect A - B = --delta, or every adjacent gap of the top K, with --power at --alpha,
    and the interval widths and rank-set sizes at 2x, 4x and 10x the prompts
    (winrate.planning.plan, result.plan())."""
    from winrate.cli import analyze_input
    from winrate.progress import preference

    check_output_flags(args, ("json", "html"))
    with preference(args.progress):
        result = analyze_input(args, {})
        with notes.gathered():
            found = result.plan(models=args.models, delta=args.delta, top=args.top,
                                power=args.power, simultaneous=args.simultaneous)
    given = [*result.notes, *found.notes]
    _write_json({**found.to_dict(), "notes": [n.to_dict() for n in given]}, args.json)
    if args.html:
        write_page(found.page_document(), args, "plan")
    _print(found, args.table_format)
    for note in given:
        print(note.line(), file=sys.stderr)
    return 0


COMMANDS = {"judges": (add_judges_arguments, run_judges), "diff": (add_diff_arguments, run_diff),
            "plan": (add_plan_arguments, run_plan)}
