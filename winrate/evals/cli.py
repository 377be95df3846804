"""``winrate eval`` and ``winrate power``: the eval-statistics command line.

The dispatcher :mod:`winrate.cli` imports :data:`COMMANDS`; ``python -m winrate.evals.cli``
runs the same commands standalone.

``winrate eval FILE --score-col S --question-col Q [--model-col M] [--cluster-col C ...]
[--correction none|cr1] [--paired A B ...] [--neighbours] [--table-format
text|markdown|latex|csv] [--json PATH]`` prints the score table (``65.5% (0.7%)``,
questions, clusters, design effect; best score first) and the pairwise table.

``winrate power (--delta D | --n N) --omega2 W [--sigma2-a] [--sigma2-b] [--k-a] [--k-b]
[--deff] [--alpha] [--power]`` gives the sample size (Miller 2024, eq. 9) or the minimum
detectable effect (eq. 10); with ``--pilot FILE ... --models A B`` the variances are
estimated from pilot answers (clustered with ``--cluster-col``).

The parsers use only :mod:`winrate.constants`; each runner imports the statistics it needs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings

from winrate import notes
from winrate.commands import Parser, add_commands, check_output_flags, run_parsed, section
from winrate.constants import (
    DEFAULT_CORRECTION,
    EVAL_FORMATS,
    INTERVALS,
    RUN_FORMATS,
    SCALAR_CORRECTIONS,
    SCALES,
    SCORE_DATASET_NAMES,
)
from winrate.errors import WinrateInputError


def _add_eval_input(parser: argparse.ArgumentParser) -> None:
    """The answers: FILE with its columns, or a bundled per-question eval."""
    group = section(parser, "input")
    group.add_argument("file", metavar="FILE", nargs="?",
                       help="CSV, TSV, JSONL or Parquet, one row per answer")
    group.add_argument("--dataset", choices=SCORE_DATASET_NAMES,
                       help="a bundled per-question eval instead of FILE (its per-question "
                            "columns, e.g. src and category, are cluster columns)")
    group.add_argument("--score-col", help="column of the per-answer score (0/1 or real)")
    group.add_argument("--question-col", help="column of the question id")
    group.add_argument("--model-col", default=None,
                       help="column of the model name (omit for a single model)")
    _add_input_format(group)
    _add_scale_argument(group)


def _add_input_format(group) -> None:
    """``--format`` of FILE (a harness log or a plain score table) and the harness flags;
    the former ``--format`` of the tables (``text``, ``markdown``, ...) is still read."""
    group.add_argument("--format", choices=(*RUN_FORMATS, *EVAL_FORMATS), default=None,
                       dest="input_format", metavar="FORMAT",
                       help=f"read FILE (a file or folder) as {', '.join(RUN_FORMATS[:-1])} "
                            "harness logs (columns question, model, score and the samples' "
                            "metadata, e.g. --cluster-col subject) or as a plain scores "
                            "table (columns question_id, model, score unless named)")
    add_harness_arguments(group)


def add_harness_arguments(group) -> None:
    """The harness readers' flags (as ``winrate leaderboard``'s)."""
    group.add_argument("--metric", default=None,
                       help="lm_eval, helm, lighteval: the metric, where the samples carry "
                            "several")
    group.add_argument("--filter", default=None,
                       help="lm_eval: the filter, where a task is logged under several")
    group.add_argument("--scorer", default=None,
                       help="inspect: the scorer, where the samples carry several")


# Public names of the helpers ``winrate compare`` (:mod:`winrate.evals.compare_cli`)
# shares with ``winrate eval``: the --scale flag, the opening sentence and the JSON file.
def add_scale_argument(group) -> None:
    """``--scale``, as ``winrate eval`` has it."""
    _add_scale_argument(group)


def opening(sentence: str, table_format: str) -> str:
    """The report's opening sentence as ``winrate eval`` prints it (:func:`_opening`)."""
    return _opening(sentence, table_format)


def write_json(path: str | None, document: dict) -> None:
    """``document`` as indented JSON at ``path`` (nothing when None)."""
    _write_json(path, document)


#: The harness flags: option -> the formats that take it.
_HARNESS_FLAGS = {"metric": ("lm_eval", "helm", "lighteval"), "filter": ("lm_eval",),
                  "scorer": ("inspect",)}


def harness_options(args: argparse.Namespace, fmt: str) -> dict:
    """The reader options of the harness flags given; a flag of another format is an
    error."""
    options = {}
    for option, formats in _HARNESS_FLAGS.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        if fmt not in formats:
            raise WinrateInputError(f"--{option} applies to --format {' / '.join(formats)} "
                                    f"only, not {fmt}")
        options[option] = value
    return options


def _input_format(args: argparse.Namespace) -> str | None:
    """The per-question format of FILE; ``--format`` naming a table format (its former
    meaning) sets ``--table-format`` instead."""
    fmt = getattr(args, "input_format", None)
    if fmt in EVAL_FORMATS:
        args.table_format, args.input_format = fmt, None
        return None
    if fmt is None and any(getattr(args, o, None) is not None for o in _HARNESS_FLAGS):
        raise WinrateInputError("--metric, --filter and --scorer apply to FILE read with "
                                "--format (a harness log)")
    return fmt


def _format_scores(args: argparse.Namespace, fmt: str):
    """The question-level scores of FILE read in per-question format ``fmt``."""
    from winrate.evals.frame import question_scores
    from winrate.io.runs import read_runs

    if args.dataset or not args.file:
        raise WinrateInputError(f"--format {fmt} reads FILE; give FILE"
                                + (f", not --dataset {args.dataset}" if args.dataset else ""))
    runs = read_runs([args.file], fmt, question_col=args.question_col,
                     score_col=args.score_col, model_col=args.model_col,
                     **harness_options(args, fmt))
    return question_scores(runs.frame, runs.score_col, runs.question_col, runs.run_col,
                           args.cluster_col, scale=args.scale)


def _add_eval_variance(parser: argparse.ArgumentParser) -> None:
    """Clustering, correction, level and interval method of the eval."""
    group = section(parser, "variance")
    group.add_argument("--cluster-col", action="append", default=[], metavar="COL",
                       help="cluster column, constant within a question (repeat: multiway)")
    group.add_argument("--correction", choices=SCALAR_CORRECTIONS, default=DEFAULT_CORRECTION,
                       help="small-sample correction of clustered SEs (default: %(default)s)")
    group.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level")
    group.add_argument("--interval", choices=INTERVALS, default="auto",
                       help="interval method (default: %(default)s)")
    group.add_argument("--seed", type=int, default=0, help="seed of Monte-Carlo intervals")


def _add_scale_argument(group) -> None:
    group.add_argument("--scale", choices=SCALES, default="auto",
                       help="score scale: binary (0/1), unit (proportions in [0, 1]), other "
                            "(any number, reported as is) or auto (default: binary or unit "
                            "from the values; anything outside [0, 1] is an error)")


def _read_scores(path, args: argparse.Namespace):
    """The answer table of ``path`` as question-level scores; ids and names read as text."""
    from winrate.evals.frame import question_scores
    from winrate.io.logs import read_table

    text = [args.question_col, args.model_col, *args.cluster_col]
    frame = read_table(path, text_cols=[c for c in text if c])
    return question_scores(frame, args.score_col, args.question_col, args.model_col,
                           args.cluster_col, scale=args.scale)


def _dataset_scores(args: argparse.Namespace):
    """The question-level scores of the bundled eval ``--dataset``; its per-question axes
    (but the question itself) can be cluster columns."""
    import pandas as pd

    from winrate.evals.frame import question_scores_from_wide
    from winrate.io.datasets import read_scores

    table = read_scores(args.dataset)
    questions = _axis_labels(table.axes["prompt"])
    wide = pd.DataFrame(table.scores, index=questions, columns=table.models)
    clusters = pd.DataFrame({name: _axis_labels(axis) for name, axis in table.axes.items()
                             if name != "prompt"}, index=questions)
    return question_scores_from_wide(wide, clusters, args.cluster_col)


def _axis_labels(axis):
    """Each question's label on a clustering axis."""
    import numpy as np

    return np.asarray(axis.labels, dtype=object)[axis.codes]


def _eval_scores(args: argparse.Namespace):
    """The question-level scores of FILE (with its columns, or in its --format) or of
    --dataset."""
    fmt = _input_format(args)
    if fmt:
        return _format_scores(args, fmt)
    given = [flag for flag in ("score_col", "question_col", "model_col")
             if getattr(args, flag)]
    if args.dataset:
        if args.file or given:
            raise WinrateInputError(f"--dataset {args.dataset} brings its own scores; give "
                                    "it without FILE, --score-col, --question-col or "
                                    "--model-col")
        return _dataset_scores(args)
    if not args.file:
        raise WinrateInputError("give a FILE of answers (with --score-col and "
                                "--question-col) or --dataset NAME")
    missing = [f"--{flag.replace('_', '-')}" for flag in ("score_col", "question_col")
               if flag not in given]
    if missing:
        raise WinrateInputError(f"{args.file}: give {' and '.join(missing)} (the columns "
                                "of the score and of the question id)")
    return _read_scores(args.file, args)


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``winrate eval``."""
    _add_eval_input(parser)
    _add_eval_variance(parser)
    pairs = section(parser, "paired comparisons")
    pairs.add_argument("--paired", nargs=2, action="append", default=[], metavar=("A", "B"),
                       help="paired comparison of model A against baseline B (repeatable)")
    pairs.add_argument("--neighbours", action="store_true",
                       help="also compare models that are adjacent in the ranking")
    pairs.add_argument("--bayes", action="store_true",
                       help="add P(A > B) from the Bayesian paired model (0/1 scores)")
    output = section(parser, "output")
    output.add_argument("--table-format", choices=EVAL_FORMATS, default="markdown",
                        help="how the tables are printed: text (aligned columns), markdown "
                             "(default), latex (booktabs tabular) or csv (raw numbers)")
    output.add_argument("--digits", type=int, default=1, help="decimals of percentages")
    output.add_argument("--json", default=None, metavar="PATH",
                        help="write the full results as JSON (schema in docs/json.md)")
    _add_eval_by(parser)


def _add_eval_by(parser: argparse.ArgumentParser) -> None:
    """--by COLUMN: one eval per category, with the family over all of them."""
    group = section(parser, "by category")
    group.add_argument("--by", metavar="COLUMN", default=None,
                       help="one eval per value of this per-question column (subject, "
                            "task, ...), each on its own questions with the same clustering, "
                            "and family intervals and rank sets covering every model of "
                            "every category at once (joint covariance over the categories)")


def _write_json(path: str | None, document: dict) -> None:
    if path is not None:
        from winrate.report.output import write_text

        write_text(path, json.dumps(document, indent=2, allow_nan=False) + "\n")


def run_eval(args: argparse.Namespace) -> int:
    """Per-question scores: a table with naive and clustered SEs, and paired comparisons
    between models."""
    from winrate.evals.frame import evaluate
    from winrate.evals.report import header, pairwise_table, report_json, score_table

    check_output_flags(args, ("json",))
    if args.seed < 0:
        raise WinrateInputError(f"--seed must be a whole number >= 0, got {args.seed}")
    if getattr(args, "by", None):
        return _run_eval_by(args)
    with notes.gathered() as found, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate(_eval_scores(args), correction=args.correction,
                          alpha=args.alpha, interval=args.interval,
                          pairs=[tuple(p) for p in args.paired], neighbours=args.neighbours,
                          bayes=args.bayes, seed=args.seed)
    print(_opening(header(report), args.table_format), end="")
    print(score_table(report, args.table_format, args.digits), end="")
    pairs = pairwise_table(report, args.table_format, args.digits)
    if pairs:
        print("\n" + pairs, end="")
    _write_json(args.json, report_json(report))
    print_warnings(found, caught)
    return 0


def _run_eval_by(args: argparse.Namespace) -> int:
    """--by COLUMN: each category's report under a heading naming it, its family
    intervals and rank sets after it (:func:`winrate.evals.by_category.evaluate_by`)."""
    from winrate.evals.by_category import boards_json, evaluate_by, family_lines
    from winrate.evals.report import header, pairwise_table, score_table

    if args.by in args.cluster_col:
        raise WinrateInputError(f"--by {args.by} cannot also be a --cluster-col: within a "
                                "category it is one cluster")
    with notes.gathered() as found, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = _eval_scores(argparse.Namespace(**{**vars(args),
                                                    "cluster_col": [*args.cluster_col,
                                                                    args.by]}))
        boards = evaluate_by(scores, args.by, correction=args.correction, alpha=args.alpha,
                             interval=args.interval, pairs=[tuple(p) for p in args.paired],
                             neighbours=args.neighbours, bayes=args.bayes, seed=args.seed)
    for label, report in boards.reports.items():
        heading = f"{args.by} = {label}"
        print(f"{heading}\n{'=' * len(heading)}\n" if args.table_format == "text"
              else f"{heading}\n\n", end="")
        print(_opening(header(report), args.table_format), end="")
        print(score_table(report, args.table_format, args.digits), end="")
        pairs = pairwise_table(report, args.table_format, args.digits)
        if pairs:
            print("\n" + pairs, end="")
        print("\n" + family_lines(boards, label, args.digits) + "\n")
    _write_json(args.json, boards_json(boards))
    print_warnings(found, caught)
    return 0


def _opening(sentence: str, table_format: str) -> str:
    """The report's opening sentence above the tables: wrapped text (a paragraph in
    Markdown), a comment in LaTeX, nothing in CSV (raw numbers, for machines)."""
    import textwrap

    from winrate.report.tables import comment_block

    if table_format == "csv":
        return ""
    if table_format == "latex":
        return comment_block(textwrap.fill(sentence, 88), "latex") + "\n\n"
    return textwrap.fill(sentence, 88) + "\n\n"


def print_warnings(found, caught) -> None:
    """Each distinct note once on stderr (no file paths): winrate's ``found`` notes as their
    coded lines (``warning [code]: text``), another library's ``caught`` warnings as
    ``warning: text``."""
    shown = [*(note.line() for note in found), *(f"warning: {w.message}" for w in caught)]
    for line in dict.fromkeys(shown):
        print(line, file=sys.stderr)


def add_power_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``winrate power``."""
    test = section(parser, "effect or sample size")
    target = test.add_mutually_exclusive_group(required=True)
    target.add_argument("--delta", type=float, help="difference to detect: print the sample size")
    target.add_argument("--n", type=float, help="number of questions: print the MDE")
    test.add_argument("--power", type=float, default=0.8, help="1 - beta (default 0.8)")
    test.add_argument("--alpha", type=float, default=0.05, help="significance level")
    given = section(parser, "variances")
    given.add_argument("--omega2", type=float, default=None,
                       help="variance of the conditional-mean differences, omega^2")
    given.add_argument("--sigma2-a", type=float, default=None, help="E[sigma_A^2] (default 0)")
    given.add_argument("--sigma2-b", type=float, default=None, help="E[sigma_B^2] (default 0)")
    given.add_argument("--k-a", type=int, default=None, help="answers per question, model A")
    given.add_argument("--k-b", type=int, default=None, help="answers per question, model B")
    given.add_argument("--deff", type=float, default=1.0, help="expected design effect")
    _add_pilot_arguments(section(parser, "pilot", "estimate omega2, sigma2-a and sigma2-b "
                                                  "from pilot answers instead"))
    section(parser, "output").add_argument("--json", default=None, metavar="PATH",
                                           help="write inputs and result as JSON")


def _add_pilot_arguments(pilot) -> None:
    pilot.add_argument("--pilot", default=None, metavar="FILE",
                       help="the pilot answers, one row per answer")
    pilot.add_argument("--models", nargs=2, default=None, metavar=("A", "B"),
                       help="the two pilot models")
    for name in ("score-col", "question-col", "model-col"):
        pilot.add_argument(f"--{name}", default=None, help="pilot column")
    pilot.add_argument("--cluster-col", action="append", default=[], metavar="COL",
                       help="pilot cluster column (repeat: multiway)")
    _add_scale_argument(pilot)
    pilot.add_argument("--correction", choices=SCALAR_CORRECTIONS, default=DEFAULT_CORRECTION)


def _pilot_matrix(qs, model, questions):
    """(n, K) answers of one pilot model on the common questions, in that order; balanced K
    (over those questions) only."""
    from winrate.evals.frame import answer_matrix

    matrix = answer_matrix(qs, model, questions, min_k=1)
    if matrix is None:
        k = qs.answers.loc[questions, model]
        raise WinrateInputError(f"pilot model {model!r} must have the same number of answers on "
                                f"every common question; counts range {k.min()}..{k.max()}")
    return matrix


def _pilot_inputs(args: argparse.Namespace):
    from winrate.evals.power import estimate_power_inputs

    missing = [n for n in ("score_col", "question_col", "model_col", "models")
               if getattr(args, n) is None]
    if missing:
        flags = ", ".join("--" + m.replace("_", "-") for m in missing)
        raise WinrateInputError(f"--pilot needs {flags}")
    qs = _read_scores(args.pilot, args)
    a, b = args.models
    common = qs.scores[[a, b]].dropna().index if {a, b} <= set(qs.models) else None
    if common is None or len(common) < 2:
        raise WinrateInputError(f"pilot models {a!r} and {b!r} need >= 2 common questions; "
                                f"models in the pilot: {qs.models}")
    matrices = [_pilot_matrix(qs, m, common) for m in (a, b)]
    return estimate_power_inputs(*matrices, qs.cluster_arrays(common) or None,
                                 correction=args.correction)


def _power_settings(args: argparse.Namespace) -> dict:
    settings = {"omega2": args.omega2, "sigma2_a": args.sigma2_a, "sigma2_b": args.sigma2_b,
                "k_a": args.k_a, "k_b": args.k_b}
    if args.pilot:
        pilot = _pilot_inputs(args)
        estimated = {"omega2": pilot.omega2, "sigma2_a": pilot.sigma2_a,
                     "sigma2_b": pilot.sigma2_b, "k_a": pilot.k_a, "k_b": pilot.k_b}
        settings = {k: estimated[k] if v is None else v for k, v in settings.items()}
    elif args.omega2 is None:
        raise WinrateInputError("give --omega2 (or --pilot FILE to estimate it)")
    defaults = {"sigma2_a": 0.0, "sigma2_b": 0.0, "k_a": 1, "k_b": 1}
    return {k: defaults[k] if v is None else v for k, v in settings.items()}


def run_power(args: argparse.Namespace) -> int:
    """Sample size, or minimum detectable effect, of a paired comparison of two models."""
    from winrate.evals.power import minimum_detectable_effect, sample_size

    check_output_flags(args, ("json",))
    with notes.gathered() as found, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = _power_settings(args)
    print_warnings(found, caught)
    common = dict(settings, alpha=args.alpha, power=args.power, deff=args.deff)
    if args.delta is not None:
        n = sample_size(args.delta, **common)
        result = {"n": n, "n_required": math.ceil(n - 1e-9)}
        print(f"questions needed: {result['n_required']:,} (n = {n:.2f}) to detect "
              f"delta = {args.delta:g} with power {args.power:g} at alpha = {args.alpha:g}")
    else:
        mde = minimum_detectable_effect(args.n, **common)
        result = {"mde": mde}
        print(f"minimum detectable effect: {mde:.4g} ({100 * mde:.2f} points) with "
              f"n = {args.n:g}, power {args.power:g}, alpha = {args.alpha:g}")
    print("inputs: " + ", ".join(f"{k} = {v:.4g}" for k, v in common.items()))
    _write_json(args.json, {"inputs": common, "delta": args.delta, "n": args.n, **result})
    return 0


COMMANDS = {"eval": (add_eval_arguments, run_eval), "power": (add_power_arguments, run_power)}


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point: ``python -m winrate.evals.cli {eval,power} ...``."""
    parser = Parser(prog="python -m winrate.evals.cli")
    add_commands(parser, COMMANDS)
    return run_parsed(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
