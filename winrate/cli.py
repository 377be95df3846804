"""Command line: ``winrate leaderboard``, ``winrate demo`` and the commands of other modules.

Each command is a pair ``(add_arguments(parser), run(args) -> exit code)``. Bad input
(:class:`WinrateInputError`) ends with a one-line error on stderr and exit code 2.

The parser is built from light modules only (:mod:`winrate.constants`,
:mod:`winrate.errors`): each runner imports the numerical modules it needs, so ``winrate
--help`` and ``winrate --version`` load no numpy, pandas, scipy or numba.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from winrate import notes
from winrate.commands import Parser, add_commands, check_output_flags, run_parsed, section
from winrate.constants import (
    CORRECTIONS,
    DATASET_NAMES,
    DEFAULT_COLUMNS,
    DEFAULT_CORRECTION,
    LOG_FORMATS,
    SCORE_COLUMNS,
    SCORES_FORMAT,
    TABLE_FORMATS,
    VARIANCE_METHODS,
)
from winrate.errors import WinrateInputError

# Modules that contribute commands through a COMMANDS dict; optional until they exist.
_COMMAND_MODULES = ("winrate.evals.cli", "winrate.evals.compare_cli", "winrate.examples",
                    "winrate.builder_cli")


DATASET_HELP = " | ".join(DATASET_NAMES)


def add_estimator_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model`` and the options of every estimator, built from the estimators' own
    option specs (:func:`winrate.estimators.all_options`), and ``--correction``: shared by
    every command that fits a leaderboard. An option's flag is left out of the namespace
    unless given, so each estimator gets only what the user asked for."""
    from winrate import estimators

    group = section(parser, "estimator")
    listed = ", ".join(f"{name} ({est.title})" for name, est in estimators.REGISTRY.items())
    group.add_argument("--model", default=estimators.DEFAULT_ESTIMATOR,
                       choices=estimators.ESTIMATORS,
                       help=f"estimator: {listed}; default {estimators.DEFAULT_ESTIMATOR}")
    for option in estimators.all_options().values():
        owners = ", ".join(estimators.owners(option.name))
        default = "" if option.default in (None, ()) else f"; default {option.default}"
        group.add_argument(option.flag, dest=option.name, default=argparse.SUPPRESS,
                           choices=option.choices, metavar=option.metavar,
                           type=option.parse or str,
                           help=f"{owners}: {option.help}{default}")
    section(parser, "variance").add_argument(
        "--correction", default=None, choices=CORRECTIONS,
        help=f"small-sample correction (default: the method's; {DEFAULT_CORRECTION} for "
             "explicit methods, cr2 for the win rate on thin designs under auto)")


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The comparison log: INPUT (with its --format and column names) or --dataset, and
    each format's own flags in a group of that format."""
    group = section(parser, "input")
    group.add_argument("input", nargs="?", help="comparison log (.csv, .tsv, .jsonl, "
                                                ".parquet, a glob or a folder), or with "
                                                "--format a file or folder")
    group.add_argument("--dataset", help=f"a bundled dataset instead of INPUT: {DATASET_HELP}")
    group.add_argument("--format", choices=(*LOG_FORMATS, SCORES_FORMAT), metavar="NAME",
                       help=f"one of {', '.join((*LOG_FORMATS, SCORES_FORMAT))}: "
                            "read INPUT (a file, or a folder searched recursively for "
                            ".json/.jsonl[.gz]) as a leaderboard's published files; "
                            f"{SCORES_FORMAT}: per-question scores, one row per question "
                            "and model, compared pairwise on every question without "
                            "building the pairs (with --dataset mmlu_pro: its scores)")
    for role, default in DEFAULT_COLUMNS.items():
        flag = role.replace("_", "-")
        group.add_argument(f"--{flag}-col", dest=f"{role}_col", default=default,
                           help=f"column of the {role.replace('_', ' ')} (default: {default})")
    group.add_argument("--weight-col", default=None,
                       help="column of frequency weights (a row stands for that many)")
    _add_format_arguments(parser)


def _add_format_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that apply to one ``--format`` each, grouped by format."""
    scores = section(parser, f"--format {SCORES_FORMAT}")
    for role, default in SCORE_COLUMNS.items():
        scores.add_argument(f"--{role}-col", default=default,
                            help=f"column of the {role} (default: {default})")
    section(parser, "--format alpaca_eval").add_argument(
        "--discrete", action="store_true",
        help="win / tie / loss from the preference (AlpacaEval's discrete_win_rate) "
             "instead of the judge's probability (also with --dataset alpaca_eval)")
    battle = section(parser, "--format clean_battle")
    battle.add_argument("--include-named", action="store_true",
                        help="keep named (non-anonymous) battles too (LMArena ranks "
                             "anonymous ones only, the default)")
    battle.add_argument("--no-dedup", dest="dedup", action="store_false",
                        help="ignore dedup_tag (by default only battles tagged 'sampled' "
                             "are kept, as LMArena does)")
    arena = section(parser, "--format arena_hard")
    arena.add_argument("--strong-weight", type=int, default=None, metavar="K",
                       help="a strong verdict (A>>B) counts K times (default 3, "
                            "arena-hard-auto's)")
    arena.add_argument("--answers", metavar="FOLDER",
                       help="the model_answer folder; adds the answers' style features "
                            "(for --covariates)")
    arena.add_argument("--skip-malformed", action="store_true",
                       help="skip malformed records (e.g. one game) instead of stopping; "
                            "the notes count them")
    section(parser, "--format arena").add_argument(
        "--layout", choices=("55k", "100k", "140k"), default=None,
        help="LMArena's public layout (default: told by the columns)")
    section(parser, "--format mt_bench").add_argument(
        "--games", choices=("combined", "both"), default=None,
        help="combined (default): one row per judgment, a win only when both position "
             "orders agree (FastChat's count); both: each order a row")
    harness = section(parser, "--format lm_eval / inspect / helm / lighteval")
    harness.add_argument("--metric", default=None,
                         help="lm_eval, helm, lighteval: the metric, where the samples "
                              "carry several")
    harness.add_argument("--filter", default=None,
                         help="lm_eval: the filter, where a task is logged under several")
    harness.add_argument("--scorer", default=None,
                         help="inspect: the scorer, where the samples carry several")


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Where a comparison log is analysed (--engine) and its memory budget."""
    group = section(parser, "engine")
    group.add_argument("--engine", choices=("auto", "memory", "duckdb", "spark"),
                       default="auto",
                       help="where a comparison log INPUT (a file, glob or folder of "
                            "Parquet/CSV) is analysed: in memory, or by DuckDB or Spark "
                            "from sufficient statistics; auto (default): in memory when "
                            "it fits --memory, else DuckDB (the output says which and why)")
    group.add_argument("--memory", type=_byte_size, default=None, metavar="SIZE",
                       help="memory budget of --engine (e.g. 4G, 512M; default: half the "
                            "machine's memory)")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """How tables are printed, the web page, and progress bars."""
    group = section(parser, "output")
    group.add_argument("--table-format", choices=TABLE_FORMATS, default="text",
                       help="text (default), markdown (a pipe table) or latex (a booktabs "
                            "tabular); the report's other lines become a comment above it")
    group.add_argument("--html", metavar="PATH",
                       help="write the report as one self-contained web page here (sortable "
                            "table, interval charts, notes; loads nothing from the network)")
    add_page_text_arguments(group)
    add_progress_argument(parser)


def add_page_text_arguments(group) -> None:
    """--title and --description of the web page (--html)."""
    group.add_argument("--title", help="the web page's title (default: the dataset or input "
                                       "file and the report's kind)")
    group.add_argument("--description", help="a paragraph under the web page's title")


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``, with the outputs."""
    section(parser, "output").add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress bars on stderr for steps that take more than a few seconds "
             "(default: only when stderr is a terminal)")


def add_analysis_arguments(parser: argparse.ArgumentParser, extra_methods: tuple = ()) -> None:
    """The log and how it is analysed (estimator, clustering, level, variance method):
    shared by ``leaderboard`` and ``check`` (whose ``extra_methods`` add ``best``)."""
    add_input_arguments(parser)
    add_estimator_arguments(parser)
    group = section(parser, "variance")
    group.add_argument("--cluster", default=None,
                       help="none | prompt | judge | prompt+judge | COL[+COL...] "
                            "(default: prompt+judge, or those of the two axes the log "
                            "has; the report says which)")
    group.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level")
    group.add_argument("--reference", default=None, choices=("normal", "t"),
                       help="critical values: normal, or t with G - 1 df (default: the "
                            "method's; auto picks t(G - 1) below 50 clusters)")
    group.add_argument("--method", default="auto", choices=(*VARIANCE_METHODS, *extra_methods),
                       help="variance: auto (default: chosen from the design, the report "
                            "says which and why), sandwich, jackknife (CV3J + t(G-1)) or "
                            "bootstrap (wild / cluster / pigeonhole by the clustering)"
                            + ("; best: check auto and every other method on this design "
                               "and report the narrowest whose coverage meets the level"
                               if "best" in extra_methods else ""))
    group.add_argument("--bootstrap-reps", type=int, default=999,
                       help="bootstrap replicates for --method bootstrap (default 999)")
    group.add_argument("--seed", type=int, default=0,
                       help="seed of the bootstrap and Monte-Carlo critical values")


def add_leaderboard_arguments(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser)
    _add_inference_arguments(parser)
    group = section(parser, "output")
    group.add_argument("--json", metavar="PATH", help="write the JSON report here")
    group.add_argument("--csv", metavar="PATH", help="write the ranked table here")
    group.add_argument("--eee", metavar="FOLDER",
                       help="write one Every Eval Ever record per model here (the score "
                            "with its clustered SE and interval)")
    group.add_argument("--plot", metavar="PATH",
                       help="write a forest plot and a rank-interval plot (PNG) here; "
                            "implies --simultaneous and --ranks")
    group.add_argument("--models-meta", metavar="FILE",
                       help="model metadata for the web page, CSV or JSON: model, "
                            "organisation, licence, url, flags (badges such as baseline, "
                            "null model, deprecated) and any other columns, shown and "
                            "searchable")
    group.add_argument("--ci-style", choices=("brackets", "plusminus"), default="brackets",
                       help="intervals on the web page as [low, high] (default) or as "
                            "+up/-down about the score, as LMArena prints them")
    add_output_arguments(parser)
    add_engine_arguments(parser)


def _add_inference_arguments(parser: argparse.ArgumentParser) -> None:
    """Joint inference: simultaneous intervals, rank sets, pairs; --by."""
    group = section(parser, "joint inference")
    group.add_argument("--by", metavar="COLUMN",
                       help="one board per value of this column (language, "
                            "category_hard_prompt, task, ...), each analysed on its own "
                            "rows with the same clustering; with --simultaneous or --ranks "
                            "also the boards estimated jointly, intervals and rank sets "
                            "covering every board at once; text, --json and --html only")
    group.add_argument("--simultaneous", action="store_true",
                       help="add intervals covering all scores jointly (max-|T|)")
    group.add_argument("--ranks", action="store_true",
                       help="add rank confidence sets (Mogstad et al. 2024; 1 = best)")
    group.add_argument("--rank-method", default="marginal",
                       choices=("marginal", "simultaneous"),
                       help="rank sets valid per model (marginal) or jointly")
    group.add_argument("--pairwise", action="store_true",
                       help="print the pairwise differences (all pairs up to 300, else "
                            "neighbours in rank); the JSON holds all pairs (also with "
                            "--simultaneous or --ranks)")


def load_log(args: argparse.Namespace, clustering) -> tuple:
    """The log of INPUT or --dataset (with the extra axes ``clustering`` names) and the
    loader's warnings; a progress bar shows while it loads (that can take seconds)."""
    from winrate.progress import stage

    with notes.gathered() as loading, stage(f"reading {args.dataset or args.input}"):
        log = _read_log(args, clustering)
    return log, list(loading)


def _read_log(args: argparse.Namespace, clustering):
    from winrate.io.datasets import read_dataset, read_scores
    from winrate.io.formats import read_log
    from winrate.io.scores import scores_log

    discrete = {"discrete": True} if getattr(args, "discrete", False) else {}
    if discrete and "alpaca_eval" not in (args.dataset, getattr(args, "format", None)):
        raise WinrateInputError("--discrete applies to --format alpaca_eval or --dataset "
                                "alpaca_eval only")
    if args.dataset and args.input:
        raise WinrateInputError(f"give either an INPUT file ({args.input!r}) or --dataset "
                                f"{args.dataset}, not both")
    scores = getattr(args, "format", None) == SCORES_FORMAT
    if not scores:
        _refuse_score_columns(args)
    if args.dataset:
        _refuse_engine(args, f"--dataset {args.dataset}")
        return read_scores(args.dataset) if scores else read_dataset(args.dataset, **discrete)
    if not args.input:
        raise WinrateInputError("give an INPUT file or --dataset NAME")
    extra = tuple(name for name in clustering if name not in ("prompt", "judge"))
    if scores:
        _refuse_engine(args, f"--format {SCORES_FORMAT} (its cells are summed in memory)")
        return scores_log(args.input, question_col=args.question_col,
                          model_col=args.model_col, score_col=args.score_col,
                          cluster_cols=extra)
    fmt = getattr(args, "format", None) or _detected_format(args)
    if fmt:
        _refuse_engine(args, f"--format {fmt} (its reader parses the file's own layout)")
        return read_log(args.input, fmt, **discrete, **_format_options(args))
    from winrate.io.scan import scan

    columns = {role: getattr(args, f"{role}_col") for role in DEFAULT_COLUMNS}
    found = scan(args.input, args.engine, columns=columns, weight_col=args.weight_col,
                 feature_cols=covariate_columns(args), cluster_cols=extra, memory=args.memory)
    return found if found.mode != "memory" else found.to_log()


def _detected_format(args: argparse.Namespace) -> str | None:
    """INPUT's reader format when its own layout names one and no column flag was given
    (:func:`winrate.io.formats.detect_format`: LMArena's tables, MT-Bench judgments,
    lm-eval samples, Inspect logs, none of which has a comparison log's columns)."""
    from winrate.io.formats import detect_format

    if any(getattr(args, f"{role}_col", default) != default
           for role, default in DEFAULT_COLUMNS.items()):
        return None
    return detect_format(args.input)


def _refuse_engine(args: argparse.Namespace, read: str) -> None:
    """An error when --engine names an engine, or --memory is given, for an input that is
    read in memory (``read`` says which): the flags would be ignored."""
    given = [f"--engine {args.engine}"] if getattr(args, "engine", "auto") not in (
        "auto", "memory") else []
    given += ["--memory"] if getattr(args, "memory", None) is not None else []
    if given:
        raise WinrateInputError(f"{' and '.join(given)} apply to a comparison log in Parquet "
                                f"or CSV, which an engine scans; {read} is read in memory: "
                                f"drop {' and '.join(given)}")


def _refuse_score_columns(args: argparse.Namespace) -> None:
    """A column flag of ``--format scores`` given without it is an error: it would be
    ignored, the log read with its own columns."""
    for role, default in SCORE_COLUMNS.items():
        if getattr(args, f"{role}_col", default) != default:
            raise WinrateInputError(f"--{role}-col applies to --format {SCORES_FORMAT} only "
                                    "(a comparison log's columns are --prompt-col, "
                                    "--judge-col, --model-a-col, --model-b-col, "
                                    "--outcome-col)")


def _byte_size(text: str) -> int:
    """``4G``, ``512M``, ``3GB`` or a number of bytes, as bytes."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    number = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = number[-1:] if number[-1:] in units else ""
    try:
        value = float(number[:len(number) - len(unit)]) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4G, 512M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--memory must be positive, got {text!r}")
    return int(value)


#: Reader options of the format flags: (format, option, flag, value when not given).
_FORMAT_FLAGS = (
    ("clean_battle", "include_named", "--include-named", False),
    ("clean_battle", "dedup", "--no-dedup", True),
    ("arena_hard", "strong_weight", "--strong-weight", None),
    ("arena_hard", "answers", "--answers", None),
    ("arena_hard", "skip_malformed", "--skip-malformed", False),
    ("arena_hard", "baseline", "--baseline", None),
    ("arena", "layout", "--layout", None),
    ("mt_bench", "games", "--games", None),
    ("lm_eval", "metric", "--metric", None),
    ("helm", "metric", "--metric", None),
    ("lighteval", "metric", "--metric", None),
    ("lm_eval", "filter", "--filter", None),
    ("inspect", "scorer", "--scorer", None),
)


def _format_options(args: argparse.Namespace) -> dict:
    """The reader options of ``--format``'s flags; a flag of another format is an error."""
    options = {}
    for fmt, option, flag, unset in _FORMAT_FLAGS:
        value = getattr(args, option, unset)
        if value == unset or (option == "baseline" and fmt != args.format):
            continue  # --baseline is also the estimator's
        owners = [owner for owner, _, name, _ in _FORMAT_FLAGS if name == flag]
        if args.format not in owners:
            raise WinrateInputError(f"{flag} applies to --format {' / '.join(owners)} only")
        if fmt == args.format:
            options[option] = value
    return options


def covariate_columns(args: argparse.Namespace) -> tuple[str, ...]:
    """The feature columns to read: ``--covariates a,b`` -> ("a", "b") and the column of
    ``--length-feature`` (none when not given)."""
    given = getattr(args, "covariates", "").split(",") + [getattr(args, "length_feature", "")]
    return tuple(dict.fromkeys(c.strip() for c in given if c.strip()))


def estimator_options(args: argparse.Namespace) -> dict:
    """The estimator (``model``) and the options given on the command line."""
    from winrate import estimators

    given = {name: getattr(args, name) for name in estimators.all_options()
             if hasattr(args, name)}
    return {"model": args.model, **given}


def run_leaderboard(args: argparse.Namespace) -> int:
    """Ranked leaderboard with naive and clustered error bars."""
    from winrate.progress import preference

    with preference(args.progress):
        return _leaderboard(args)


def _leaderboard(args: argparse.Namespace) -> int:
    check_output_flags(args, ("json", "csv", "plot", "html"))
    if getattr(args, "by", None):
        return _leaderboard_by(args)
    meta = read_meta(args)
    result = analyze_input(args, _joint_flags(args))
    if getattr(args, "plot", None):
        from winrate.progress import stage
        from winrate.report.plots import plot_leaderboard

        with stage("drawing the plot"):
            plot_leaderboard(result, args.plot)
    # the report modules import after the read: analyze_input loads them while it reads
    from winrate.report.leaderboard import leaderboard_table, write_json

    if args.json:
        write_json(result, args.json)
    if args.eee:
        from winrate.report.eee import write_eee

        write_eee(result, args.eee, evaluation_name=args.dataset or
                  os.path.basename(os.path.normpath(args.input)))
    if args.csv:
        from winrate.report.output import write_text

        write_text(args.csv, leaderboard_table(result).to_csv(index=False))
    if args.html:
        from winrate.report.leaderboard import to_dict

        write_page(to_dict(result), args, "leaderboard", meta=meta, ci_style=args.ci_style)
    _print_report(result, args.table_format)
    if getattr(args, "pairwise", False):
        from winrate.report.leaderboard import format_pairwise

        print("\n" + format_pairwise(result, args.table_format))
    return 0


def _leaderboard_by(args: argparse.Namespace) -> int:
    """--by COLUMN: one board per category (:func:`winrate.by_category.analyze_by`)."""
    from winrate.by_category import analyze_by, boards_to_dict, format_boards
    from winrate.io.scan import Scan
    from winrate.report.output import write_text
    from winrate.settings import parse_clustering

    for flag in ("csv", "plot", "eee"):
        if getattr(args, flag, None):
            raise WinrateInputError(f"--by writes text, --json and --html, not --{flag}")
    meta = read_meta(args)
    clustering = parse_clustering(args.cluster) if args.cluster is not None else None
    log, loaded = load_log(args, (*(clustering or ()), args.by))
    if isinstance(log, Scan):
        raise WinrateInputError("--by needs the log in memory (--engine memory)")
    with notes.gathered(show=_on_stderr):
        boards = analyze_by(log, args.by, clustering, alpha=args.alpha,
                            family=bool(getattr(args, "simultaneous", False)
                                        or getattr(args, "ranks", False)),
                            **estimator_options(args), **_variance_flags(args),
                            **_joint_flags(args))
    if args.json:
        import json

        write_text(args.json, json.dumps(boards_to_dict(boards), indent=1))
    if args.html:  # one tab per category
        write_page(boards_to_dict(boards), args, f"leaderboard by {args.by}", meta=meta,
                   ci_style=args.ci_style)
    print(format_boards(boards, args.table_format))
    for note in loaded:
        print(note.line(), file=sys.stderr)
    return 0


def analyze_input(args: argparse.Namespace, joint: dict):
    """The log of INPUT or --dataset analysed as the flags say (:func:`winrate.analyze`
    with ``joint``), its notes kept on the result, not emitted: the clustering chosen by
    default and the loader's notes first, so the JSON, the page and stderr carry them."""
    from winrate.settings import parse_clustering

    if not 0 < args.alpha < 1:
        raise WinrateInputError(f"--alpha must be in (0, 1), got {args.alpha}")
    clustering = parse_clustering(args.cluster) if args.cluster is not None else None
    with _imports_frozen() as imported:
        return _analyze_input(args, joint, clustering, imported)


def _analyze_input(args: argparse.Namespace, joint: dict, clustering, imported):
    from dataclasses import replace

    preparing = _prepare_analysis()
    try:
        log, loaded = load_log(args, clustering or ())
    finally:  # an input error waits too: no import left running at exit
        preparing.join()
    imported()
    from winrate.analysis import analyze
    from winrate.inference.plan import default_clustering
    from winrate.io.scan import Scan
    from winrate.notes import Notes

    note = None
    if clustering is None and not isinstance(log, Scan):  # a scan's analysis gives the note
        clustering, note = default_clustering(log)
    with notes.gathered():  # the result carries its notes
        result = analyze(log, cluster=clustering, alpha=args.alpha,
                         **estimator_options(args), **_variance_flags(args), **joint)
    return replace(result, notes=Notes([*([note] if note else []), *loaded, *result.notes]))


@contextlib.contextmanager
def _imports_frozen():
    """Python's cyclic collector paused while the analysis modules are imported, their
    objects then frozen (:func:`gc.freeze`: left out of later collections) until the
    analysis ends. Importing pandas, numba and scipy makes about 150,000 objects, which
    the collector's default thresholds traversed in three full collections: 0.3-0.5 s of
    processor time of a 5M-row CLI run (the collector's own callbacks timed), none of it
    finding garbage. Imports make no reference cycles worth collecting; the analysis
    itself runs with the collector on."""
    import gc

    collecting = gc.isenabled()

    def imported() -> None:
        gc.freeze()
        if collecting:
            gc.enable()

    gc.disable()
    try:
        yield imported
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()


def _prepare_analysis():
    """A started thread that imports the analysis and report modules and loads numba's
    compiler tables (:func:`winrate.parallel.load_compiler_tables`) while this thread reads
    the log: a second of start-up that Arrow's reading, which runs without the interpreter
    lock, leaves room for. The reader's modules are imported here first, so the two
    threads never wait on each other's imports; a failure in the thread is left to the
    main thread's own import to report."""
    import threading

    import winrate.io.datasets
    import winrate.io.formats
    import winrate.io.scan
    import winrate.io.scores
    import winrate.progress  # noqa: F401

    def prepare() -> None:
        try:
            import winrate.report.leaderboard  # noqa: F401
            from winrate.parallel import load_compiler_tables

            load_compiler_tables()
        except Exception:  # noqa: BLE001, S110 - reported by the main thread's import
            pass

    thread = threading.Thread(target=prepare, name="winrate-prepare", daemon=True)
    thread.start()
    return thread


def _variance_flags(args: argparse.Namespace) -> dict:
    """analyze()'s ``variance`` and ``monte_carlo`` from the flags."""
    from winrate.settings import MonteCarlo, Variance

    method = getattr(args, "method", "sandwich")
    reps = getattr(args, "bootstrap_reps", 999)
    if method == "bootstrap" and reps < 99:
        raise WinrateInputError(f"--bootstrap-reps must be at least 99, got {reps}")
    seed = getattr(args, "seed", 0)
    if seed < 0:
        raise WinrateInputError(f"--seed must be a whole number >= 0, got {seed}")
    return {"variance": Variance(method, args.correction, args.reference, reps),
            "monte_carlo": MonteCarlo(seed=seed)}


def _joint_flags(args: argparse.Namespace) -> dict:
    """analyze()'s ``joint`` from the inference flags (absent flags keep the defaults); a
    plot needs the simultaneous intervals and the rank sets."""
    from winrate.settings import Joint

    plot = bool(getattr(args, "plot", None))
    simultaneous = getattr(args, "simultaneous", False) or plot
    ranks = getattr(args, "ranks", False) or plot
    return {"joint": Joint(simultaneous, ranks,
                           getattr(args, "pairwise", False) or simultaneous or ranks,
                           getattr(args, "rank_method", "marginal"))}


def _print_report(result, table_format: str = "text") -> None:
    """The report on stdout (:func:`winrate.report.leaderboard.format_report`) and the
    result's notes on stderr, one line each with its code."""
    from winrate.report.leaderboard import format_report

    print(format_report(result, table_format))
    for note in result.notes:
        print(note.line(), file=sys.stderr)


def read_meta(args: argparse.Namespace):
    """--models-meta, read (and checked) before any analysis; None without it."""
    if not getattr(args, "models_meta", None):
        return None
    from winrate.report.models_meta import read_models_meta

    return read_models_meta(args.models_meta)


def write_page(doc: dict, args: argparse.Namespace, kind: str, **options) -> None:
    """--html: the web page of the JSON document ``doc`` (:mod:`winrate.report.html_page`),
    titled --title or by the dataset or input file, e.g. "chatbot_arena leaderboard", with
    --description and the page ``options`` (the model metadata, the interval style)."""
    from winrate.report.html_page import publish

    source = args.dataset or os.path.basename(args.input or "") or "winrate"
    with notes.gathered(show=_on_stderr):  # the page's own notes (unknown metadata models)
        publish(doc, args.html, title=args.title or f"{source} {kind}",
                description=args.description, **options)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    section(parser, "simulation").add_argument("--seed", type=int, default=2024,
                        help="seed of the simulated log used when MMLU-Pro is unavailable")


def run_demo(args: argparse.Namespace) -> int:
    """MMLU-Pro leaderboard clustered by question (a simulated log if the data is absent)."""
    from winrate.analysis import analyze
    from winrate.io.datasets import read_scores
    from winrate.io.download import DataUnavailableError, DownloadError
    from winrate.progress import stage

    try:  # its score table: the pairwise log's analysis without building its 4.8M rows
        with stage("reading mmlu_pro"):
            log = read_scores("mmlu_pro", download=False, progress=False)
    except (DataUnavailableError, DownloadError) as error:
        print(f"MMLU-Pro data not found ({error.__class__.__name__}); set WINRATE_DATA to "
              "the data directory to run the real demo. Showing a simulated log instead.\n")
        return _simulated_demo(args.seed)
    print("MMLU-Pro (TIGER-AI-Lab, 5-shot): 29 models, every pair compared on every question "
          "both answered;\nthe correct answer wins, both right or both wrong is a tie. "
          "Each model's single answer to a\nquestion is reused in 28 comparisons, so "
          "the comparisons are clustered by question.\n")
    with notes.gathered():  # the report shows the result's notes
        result = analyze(log, cluster="prompt")
    _print_report(result)
    return 0


def _simulated_demo(seed: int) -> int:
    from winrate.analysis import analyze
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    design = SimulationDesign(n_models=8, n_prompts=300, n_judges=40)
    sim = simulate_comparisons(design, seed=seed)
    print(f"Simulated crossed log (seed {seed}): {design.n_models} models, "
          f"{design.n_prompts} prompts, {design.n_judges} judges; every response is reused "
          "by several comparisons.\n")
    with notes.gathered():  # the report shows the result's notes
        result = analyze(sim.log, cluster="prompt+judge")
    _print_report(result)
    return 0


def explore_input(args):
    """The exploratory report (:func:`winrate.eda.explore_dataset` of --dataset, or
    :func:`winrate.eda.explore` of the INPUT log)."""
    from winrate.eda import DEFAULT_CLUSTERINGS, explore, explore_dataset
    from winrate.settings import parse_clustering

    options = {**estimator_options(args), "correction": args.correction}
    if args.dataset and not args.input:
        return explore_dataset(args.dataset, models=args.models, cluster=args.cluster,
                               **options)
    if args.models:
        raise WinrateInputError("--models selects models of a --dataset; for a file, keep "
                                "the rows of those models in the file")
    specs = args.cluster or DEFAULT_CLUSTERINGS
    axes = tuple(dict.fromkeys(axis for spec in specs for axis in parse_clustering(spec)))
    log, loaded = load_log(args, axes)
    return explore(log, specs, notes=tuple(loaded), **options)


def add_eda_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    section(parser, "input").add_argument(
        "--models", nargs="+", metavar="MODEL",
        help="--dataset: keep only comparisons between these models")
    add_estimator_arguments(parser)
    section(parser, "variance").add_argument(
        "--cluster", nargs="+", metavar="SPEC",
        help="clusterings to report, e.g. prompt judge prompt+judge (default: the "
             "dataset's own set; for a file prompt judge prompt+judge)")
    section(parser, "output").add_argument("--json", metavar="PATH",
                                           help="write the report as JSON here")
    add_output_arguments(parser)
    add_engine_arguments(parser)


def run_eda(args: argparse.Namespace) -> int:
    """Exploratory report: how much clustering inflates each model's SE, for a comparison
    log (INPUT) or a bundled dataset."""
    from winrate.eda import format_report, write_json
    from winrate.progress import preference

    check_output_flags(args, ("json", "html"))
    with preference(args.progress):
        report = explore_input(args)
    if args.json:
        write_json(report, args.json)
    if args.html:
        from winrate.eda import to_dict

        write_page(to_dict(report), args, "exploratory report")
    print(format_report(report, args.table_format))
    return 0


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, ("best",))
    group = section(parser, "coverage check")
    group.add_argument("--reps", type=int, default=200,
                       help="simulated replications of the log (default 200, at least 20; "
                            "--seed seeds them too)")
    group.add_argument("--fail-under", type=float, metavar="PCT",
                       help="exit with code 1 when the estimated marginal coverage is below "
                            "PCT percent (for scripts)")
    group.add_argument("--workers", type=int, default=None,
                       help="worker processes (default: every core, when the replications "
                            "take more than a few seconds)")
    section(parser, "output").add_argument(
        "--json", metavar="PATH",
        help="write the check as JSON here ('-': on stdout, instead of the report)")
    add_progress_argument(parser)
    add_engine_arguments(parser)


def run_check(args: argparse.Namespace) -> int:
    """Coverage of the analysis' intervals on this log's own design: outcomes simulated on
    the same rows from a random-effects Bradley-Terry model fitted to the log, the same
    analysis rerun on each, marginal and simultaneous coverage with Monte-Carlo SEs."""
    from winrate.progress import preference

    with preference(args.progress):
        return _check(args)


def _check(args: argparse.Namespace) -> int:
    import json

    from winrate.check import check_coverage

    if args.reps < 20:
        raise WinrateInputError(f"--reps must be at least 20, got {args.reps}")
    if args.workers is not None and args.workers < 1:
        raise WinrateInputError(f"--workers must be at least 1, got {args.workers}")
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        raise WinrateInputError(f"--fail-under must be a percentage in [0, 100], got "
                                f"{args.fail_under}")
    check_output_flags(args, ("json",))
    best = args.method == "best"  # the analysis runs auto's choice; the check tries them all
    if best:
        args.method = "auto"
    result = analyze_input(args, {})
    for note in result.notes:
        print(note.line(), file=sys.stderr)
    with notes.gathered(show=_on_stderr):  # the check's notes as they come (how long it takes)
        check = check_coverage(result, reps=args.reps, seed=args.seed, workers=args.workers,
                               best=best)
    if args.json:
        text = json.dumps(check.to_dict(), indent=2)
        if args.json == "-":
            print(text)
        else:
            from winrate.report.output import write_text

            write_text(args.json, text + "\n")
    if args.json != "-":
        print(check.summary())
    failed = args.fail_under is not None and 100 * check.coverage.marginal < args.fail_under
    return 1 if failed else 0


def _on_stderr(note) -> None:
    print(note.line(), file=sys.stderr)


COMMANDS = {
    "leaderboard": (add_leaderboard_arguments, run_leaderboard),
    "demo": (add_demo_arguments, run_demo),
    "eda": (add_eda_arguments, run_eda),
    "check": (add_check_arguments, run_check),
}


def _all_commands() -> dict:
    commands = dict(COMMANDS)
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            continue
        commands.update(getattr(module, "COMMANDS", {}))
    return commands


class _Version(argparse.Action):
    """``--version``: print the installed version and exit (the package metadata is read
    only when asked, so the parser stays light)."""

    def __init__(self, option_strings, dest):
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0,
                         help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import winrate

        print(f"{parser.prog} {winrate.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="winrate",
                    description="Honest, cluster-robust error bars for LLM evaluations.",
                    epilog="winrate COMMAND --help lists the flags of a command in groups: "
                           "input (and each --format's own), estimator, variance, joint "
                           "inference, output, engine.")
    parser.add_argument("--version", action=_Version)
    add_commands(parser, _all_commands())
    return parser


def _waiting_threads_sleep() -> None:
    """Thread pools that wait by sleeping, not spinning, unless the user set otherwise.

    winrate's BLAS work is on K x K matrices, too small for OpenBLAS threads, which then
    only spin and take the core a numba kernel needs; numba's OpenMP workers spin after
    every parallel region (:mod:`winrate.parallel` sets their passive waiting for every
    use of winrate). On a shared 2-core machine the two made ``--simultaneous --ranks
    --pairwise`` about a quarter slower (a 100 x 100 eigh took 0.13 s instead of 1 ms).
    Runs before numpy starts its pool (the parser loads no numerical library)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    _waiting_threads_sleep()
    return run_parsed(build_parser().parse_args(argv))


def console(argv: list[str] | None = None) -> int:
    """The ``winrate`` script: :func:`main`, then, as the process is about to end, the
    cyclic collector off and every object frozen (:func:`gc.freeze`), so that the
    interpreter's exit does not traverse them. Its last full collections walked the
    objects of pandas, numba and scipy and of the analysis for 0.3-0.4 s of a 2.5 s
    5M-row leaderboard run (``perf``: ``gc_collect_main`` two thirds of the exit), finding
    nothing the operating system does not reclaim anyway. Exit handlers, finalizers and
    module teardown still run. A library caller of :func:`main` keeps its collector."""
    import gc

    try:
        return main(argv)
    finally:
        gc.disable()
        gc.freeze()


if __name__ == "__main__":
    sys.exit(console())
