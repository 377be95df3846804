"""``winrate compare``: runs of one eval, given as files, compared question by question.

``winrate compare A B [C ...] [--format NAME] [--cluster COL] [--power P] [--alpha A]
[--table-format text|markdown|latex|csv] [--json PATH]``: each RUN a file (or a folder a
harness format searches) in one per-question format (:data:`winrate.constants.RUN_FORMATS`:
Inspect ``.eval`` logs, lm-evaluation-harness samples, Every Eval Ever instances, HELM,
lighteval, plain score tables), told by the files' own layout where ``--format`` is not
given. The runs are matched by question id (:func:`winrate.io.runs.check_questions`) and
compared by :func:`winrate.evals.runs.compare_runs`: the numbers of ``winrate eval
--paired A B`` on the same answers, with the minimal detectable difference and, for more
than two runs, every pair with simultaneous intervals.

The dispatcher :mod:`winrate.cli` imports :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import warnings

from winrate import notes
from winrate.commands import section
from winrate.constants import (
    DEFAULT_CORRECTION,
    EVAL_FORMATS,
    RUN_FORMATS,
    SCALAR_CORRECTIONS,
    SCORES_FORMAT,
)
from winrate.errors import WinrateInputError
from winrate.evals.cli import (
    add_harness_arguments,
    add_scale_argument,
    harness_options,
    opening,
    print_warnings,
    write_json,
)


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``winrate compare``."""
    group = section(parser, "input")
    group.add_argument("runs", nargs="+", metavar="RUN",
                       help="two or more runs of one eval: files (or folders a harness "
                            "format searches), matched by question id")
    group.add_argument("--format", choices=RUN_FORMATS, default=None,
                       help="the runs' format: Inspect, lm-eval, Every Eval Ever, HELM or "
                            "lighteval logs, or plain scores tables (default: told by the "
                            "files' layout, else scores)")
    group.add_argument("--question-col", default=None,
                       help="scores: column of the question id (default: question_id)")
    group.add_argument("--score-col", default=None,
                       help="scores: column of the score (default: score)")
    group.add_argument("--model-col", default=None,
                       help="scores: column naming the run (default: model where the file "
                            "has it, else the file's name)")
    add_harness_arguments(group)
    add_scale_argument(group)
    _add_compare_variance(parser)
    output = section(parser, "output")
    output.add_argument("--table-format", choices=EVAL_FORMATS, default="markdown",
                        help="text (aligned columns), markdown (default), latex (booktabs "
                             "tabular) or csv (raw numbers)")
    output.add_argument("--digits", type=int, default=1, help="decimals of percentages")
    output.add_argument("--json", default=None, metavar="PATH",
                        help="write the full results as JSON (winrate eval's keys, plus "
                             "mdd, power and simultaneous per pair; docs/json.md)")


def _add_compare_variance(parser: argparse.ArgumentParser) -> None:
    group = section(parser, "variance")
    group.add_argument("--cluster", "--cluster-col", dest="cluster", action="append",
                       default=[], metavar="COL",
                       help="cluster the SEs by this column, constant within a question (a "
                            "passage or subject id; repeat or COL+COL: multiway); default: "
                            "by question")
    group.add_argument("--correction", choices=SCALAR_CORRECTIONS, default=DEFAULT_CORRECTION,
                       help="small-sample correction of clustered SEs (default: %(default)s)")
    group.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level")
    group.add_argument("--power", type=float, default=0.8,
                       help="power of the minimal detectable difference (default 0.8)")
    group.add_argument("--seed", type=int, default=0,
                       help="seed of the simultaneous intervals' Monte-Carlo draws")


def _cluster_columns(args: argparse.Namespace) -> list[str]:
    """The cluster columns of ``--cluster`` (``question`` is the default: none)."""
    named = [c.strip() for given in args.cluster for c in given.split("+") if c.strip()]
    return [c for c in dict.fromkeys(named) if c not in ("question", args.question_col)]


def _run_format(paths: list[str]) -> str:
    """The runs' format from their layout (:func:`winrate.io.formats.detect_format`):
    one harness format for all, else plain scores tables; mixed formats are an error."""
    from winrate.io.formats import detect_format

    found = {path: detect_format(path) for path in paths}
    formats = {fmt for fmt in found.values() if fmt in RUN_FORMATS}
    if not formats:
        return SCORES_FORMAT
    if len(formats) == 1 and all(found.values()):
        return formats.pop()
    named = ", ".join(f"{path} ({fmt or 'no harness layout'})" for path, fmt in found.items())
    raise WinrateInputError(f"the runs are in different formats: {named}; give --format")


def _read_runs(args: argparse.Namespace):
    from winrate.io.runs import read_runs

    fmt = args.format or _run_format(args.runs)
    runs = read_runs(args.runs, fmt, question_col=args.question_col, score_col=args.score_col,
                     model_col=args.model_col, **harness_options(args, fmt))
    if len(runs.labels) < 2:
        raise WinrateInputError(f"{', '.join(args.runs)}: one run ({runs.labels[0]!r}); give "
                                "two or more runs to compare")
    return runs


def _check_args(args: argparse.Namespace) -> None:
    from winrate.report.output import check_outputs

    if args.seed < 0:
        raise WinrateInputError(f"--seed must be a whole number >= 0, got {args.seed}")
    if not 0 < args.power < 1:
        raise WinrateInputError(f"--power must be in (0, 1), got {args.power}")
    if args.json not in (None, "-"):
        check_outputs({"--json": args.json}, list(args.runs))


def run_compare(args: argparse.Namespace) -> int:
    """Two or more runs of one eval matched by question id: the paired difference with its
    clustered SE and interval, McNemar's exact test, the minimal detectable difference;
    with more runs every pair, with simultaneous intervals."""
    from winrate.evals.report import compare_header, compare_json, compare_table, score_table
    from winrate.evals.runs import compare_runs, runs_scores, with_files

    _check_args(args)
    with notes.gathered() as found, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = _read_runs(args)
        qs = runs_scores(runs, _cluster_columns(args), args.scale)
        result = with_files(compare_runs(qs, runs.labels, correction=args.correction,
                                         alpha=args.alpha, power=args.power, seed=args.seed),
                            runs.files)
    print(opening(compare_header(result), args.table_format), end="")
    print(score_table(result.report, args.table_format, args.digits), end="")
    print("\n" + compare_table(result, args.table_format, args.digits), end="")
    write_json(args.json, compare_json(result))
    print_warnings(found, caught)
    return 0


COMMANDS = {"compare": (add_compare_arguments, run_compare)}
