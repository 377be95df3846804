#!/usr/bin/env python
"""``make paper``: regenerate every number, table and figure under ``paper/``, then the
manuscript ``paper/paper.md`` from ``paper/paper.template.md`` and ``paper/references.bib``,
print its main-text word count, then a PDF when pandoc and Chromium are installed.

Steps (each writes its files and registers the numbers the text quotes):

==============  ===========================================================================
exact           exact coverage of binomial intervals (``scripts/exact_interval_coverage.py``)
coverage        the coverage study's figure, summary table and numbers from the committed
                ``paper/coverage/`` (``--full``: rerun the study first, minutes)
confirmatory    the confirmatory study's table and numbers from the committed
                ``paper/confirmatory/summary.csv`` (the study itself: ``python
                scripts/coverage.py --confirmatory``, over an hour on one core)
datasets        SE inflation, ICC paradox and dominant-cluster diagnostic on every bundled
                dataset, ``results/<dataset>.json``, MMLU-Pro 19-model subsets
simulations     MMLU-Pro-like and paired-design coverage simulations, naive-coverage figure
few_judges      PRD's judge axis under every few-cluster method
arena           Bradley-Terry clustered vs row bootstrap (QLoRA, PRD, AlpacaEval)
peers           FastChat, arena-rank and AlpacaEval's own code (committed ``paper/peers/``)
                next to winrate's naive and clustered SEs on the same data
software        Appendix A's scale table from the committed ``paper/benchmarks_scale.txt``
ranks           naive vs clustered rank sets (PRD, AlpacaEval, Chatbot Arena), forest plot
identity        MMLU-Pro's win rate as an affine function of accuracy (inflation vs K,
                sqrt(K/2)); Kish's prediction against the measured inflation per axis
fidelity        AlpacaEval's LC win rate against the published leaderboard and its SE
                (``scripts/lc_compare.py``, about half a minute)
claims          the claims table with verdicts
manuscript      ``paper/paper.md`` (+ ``numbers.json``, ``numbers.tex``): placeholders filled,
                citations ``[@key]`` rendered as author-year text and a References section
                from ``references.bib`` (``scripts/paper/bibliography.py``)
pdf             ``paper/paper.pdf`` (not committed): pandoc renders ``paper.md`` to standalone
                HTML (``paper/paper.html``, MathML formulas), headless Chromium prints it
==============  ===========================================================================

Tables and figures are numbered in the order the template places them (``{{table:NAME}}``,
``{{figure:NAME}}``; Table 1, 2, ... and Figure 1, 2, ... separately), each caption printed
once below it as ``**Table N.** ...`` / ``**Figure N.** ...``; the text refers to them by
label, ``{{tab:NAME}}`` and ``{{fig:NAME}}``, which render as ``Table N`` and ``Figure N``
(an unplaced or twice-placed name is an error; ``scripts/paper/manuscript.py``).

Word count (the issue's limit is on it): the words of ``paper.md`` from the end of the
front matter to the first ``## Appendix`` or ``## References`` heading, without HTML
comments, code blocks, tables (rows and ``**Table N.**`` captions) and figures (image lines
and ``**Figure N.**`` captions); headings count, an inline formula counts as one word
(``manuscript.main_text_words``).

Reproducibility: seeds are fixed in each step; numba runs 2 threads and BLAS 1 (the
cluster meat adds per-thread partial sums, so the thread count fixes the rounding); all
numbers are formatted to fixed decimals; figures carry no timestamps. So a rerun in the
same environment rewrites every file byte for byte (``tests/test_paper.py`` checks the
fast parts). The PDF is the one output that is not byte-identical (Chromium stamps dates).

Usage: ``python scripts/paper/build.py [--full] [--only STEP ...] [--out DIR]``.
"""

from __future__ import annotations

import os

# fixed thread counts before numpy / numba load (see the module docstring)
os.environ["NUMBA_NUM_THREADS"] = "2"
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # scripts/ for the table scripts

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from common import PAPER, Paper  # noqa: E402

TEMPLATE = "paper.template.md"
ENVIRONMENT = "environment.txt"
#: the distributions whose exact versions ``--record-environment`` writes to ENVIRONMENT
RECORDED = ("numpy", "scipy", "pandas", "numba", "matplotlib", "duckdb", "pyarrow")
#: Judged logs (LLM judges, and people in PRD) with at least FEW_CLUSTERS prompts in which a
#: model answers a prompt once and meets several opponents on it (the abstract's range of
#: prompt-clustered inflations, medians over models). LLMFAO also reuses answers but has 13
#: prompts, too few for a prompt-clustered SE (its inflation is reported apart).
ANSWER_REUSE = ("pandalm", "qlora", "prd")
BIBLIOGRAPHY = "references.bib"
#: The PDF's page layout (letter, 10 pt, tables that fit the text width), beside paper.md
PRINT_CSS = "paper.css"


def step_exact(paper: Paper, full: bool) -> None:
    """Exact binomial-interval coverage: the script's own files plus a 95% table."""
    import pandas as pd
    from common import fmt
    from exact_interval_coverage import coverage_table, markdown

    table = coverage_table()
    path = paper.path("tables", "interval_coverage_exact.csv")
    table.to_csv(path, index=False, float_format="%.12g", lineterminator="\n")
    paper.written.append(path)
    paper.write_text(markdown(table), "tables", "interval_coverage_exact.md")
    nominal = table[table.alpha == 0.05]
    grid = nominal.pivot(index="method", columns="n", values="coverage")
    cells = pd.DataFrame({"method": grid.index,
                          **{f"N = {n}": [fmt(100 * v, ".1f") for v in grid[n]]
                             for n in grid.columns}})
    paper.table("interval_coverage_exact_95", cells,
                "Exact average coverage (%) of nominal 95% binomial intervals when theta is "
                "uniform on [0, 1], computed exactly.")
    paper.number("exact_wald_small", 100 * grid.loc["wald", grid.columns.min()], ".1f")
    paper.number("exact_wald_large", 100 * grid.loc["wald", grid.columns.max()], ".1f")
    paper.number("exact_small_n", int(grid.columns.min()), "d")
    paper.number("exact_large_n", int(grid.columns.max()), "d")


def constants(paper: Paper) -> None:
    """Design constants the text quotes (levels and thresholds of the code, not results)."""
    from real_data import Z

    from winrate.constants import FEW_CLUSTERS
    from winrate.estimators.bradley_terry_kernels import DEFAULT_RATING
    from winrate.variance.diagnostics import DOMINANT_SHARE
    from winrate.variance.method_choice import LARGE_AXIS

    paper.number("nominal", "95")
    paper.number("zcrit", Z, ".2f")
    paper.number("dominant_share", DOMINANT_SHARE, ".1f")
    paper.number("dominant_eff_clusters", 1 / DOMINANT_SHARE**2, ".0f")
    paper.number("min_clusters", FEW_CLUSTERS, "d")
    paper.number("elo_offset", DEFAULT_RATING, ".0f")
    paper.number("auto_large_axis", LARGE_AXIS, "d")


def environment(paper: Paper) -> None:
    """The reproducibility statement's software and machine, from committed files only (so
    the manuscript stays byte-identical wherever it is rebuilt): the requirement ranges of
    ``pyproject.toml`` (no lock file pins exact versions; versions read from the running
    environment would change the text from one install to the next) and the machine line
    of ``paper/benchmarks.txt`` without its load average."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's dependency, installed by make paper
        import tomli as tomllib
    from common import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    def spaced(requirement: str) -> str:  # "duckdb>=2.0,<2.1" -> "duckdb >= 2.0, < 2.1"
        return re.sub(r"\s*([<>=!~]=?)\s*", r" \1 ", requirement).strip()

    paper.number("repro_python", spaced("Python" + project["requires-python"]))
    paper.number("repro_requirements", "; ".join(map(spaced, project["dependencies"])))
    machine = re.search(r"^machine: (.*?)(?:, load average .*)?$",
                        (PAPER / "benchmarks.txt").read_text(encoding="utf-8"), re.M)
    paper.number("repro_machine", machine.group(1))
    paper.number("repro_versions", (PAPER / ENVIRONMENT).read_text(encoding="utf-8").strip())


def record_environment(root: Path) -> Path:
    """Write ``ENVIRONMENT``: Python's and :data:`RECORDED`'s exact versions in the running
    environment, one line. Run once with the environment that produced the committed
    outputs (``--record-environment``); ``make paper`` only reads it, so the text stays
    byte-identical when the paper is rebuilt elsewhere."""
    import platform
    from importlib.metadata import version

    line = ", ".join([f"Python {platform.python_version()}"]
                     + [f"{name} {version(name)}" for name in RECORDED])
    path = root / ENVIRONMENT
    path.write_text(line + "\n", encoding="utf-8")
    return path


def step_coverage(paper: Paper, full: bool) -> None:
    from coverage_study import coverage_results, design_results, heldout_results, rerun

    if full:
        rerun(paper.root / "coverage")
    coverage_results(paper, paper.root / "coverage")
    design_results(paper, paper.root / "coverage")
    heldout_results(paper, paper.root / "coverage" / "heldout")
    from coverage_methods import coverage_methods

    coverage_methods(paper)


def step_datasets(paper: Paper, full: bool) -> None:
    from real_data import dataset_results, mmlu_subset_table, real_data_tables

    dataset_results(paper)
    real_data_tables(paper)
    mmlu_subset_table(paper)
    inflation = [float(paper.numbers[f"{name}_infl_prompt"]) for name in ANSWER_REUSE]
    paper.extremes("llmjudge_infl", inflation)


def step_simulations(paper: Paper, full: bool) -> None:
    from real_data import implied_coverage_points, inflation_table
    from simulations import calibration_check, coverage_figure, simulation_results

    runs = simulation_results(paper)
    check = calibration_check()
    paper.number("sim_mmlu_m", check["m"], ".1f")
    paper.number("sim_mmlu_own_icc", check["own_icc"], ".2f")
    coverage_figure(paper, runs, implied_coverage_points(inflation_table()))


def calls(module: str, function: str) -> Callable[[Paper, bool], None]:
    """A step that runs ``module.function(paper)``, importing the module only when the step
    runs (``--only`` builds load no more than they need)."""
    def run(paper: Paper, full: bool) -> None:
        getattr(importlib.import_module(module), function)(paper)

    return run


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Paper, bool], None]
    fast: bool  # runs in seconds without the real data (tests/test_paper.py)


STEPS = (
    Step("exact", step_exact, True),
    Step("coverage", step_coverage, True),
    Step("confirmatory", calls("confirmatory_study", "confirmatory_results"), True),
    Step("datasets", step_datasets, False),
    Step("simulations", step_simulations, False),
    Step("few_judges", calls("judges_and_arena", "few_judges"), False),
    Step("arena", calls("judges_and_arena", "arena"), False),
    Step("peers", calls("peer_comparison", "peers"), False),
    Step("software", calls("software", "scale_table"), True),
    Step("ranks", calls("rank_sets", "rank_set_results"), False),
    Step("identity", calls("identity", "identity_and_kish"), False),
    Step("fidelity", calls("fidelity", "lc_fidelity"), False),
    Step("claims", calls("claims", "claims_table"), False),
)


def run_steps(paper: Paper, names, full: bool = False) -> None:
    """Run the named steps in order."""
    import numba

    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    constants(paper)
    environment(paper)
    for step in STEPS:
        if step.name not in names:
            continue
        start = time.time()
        step.run(paper, full)
        print(f"[paper] {step.name}: done ({time.time() - start:.1f} s)", flush=True)


def write_manuscript(paper: Paper) -> Path:
    from bibliography import parse_bibtex, render_citations
    from manuscript import render

    paper.write_numbers()
    template = (paper.root / TEMPLATE).read_text(encoding="utf-8")
    bib = parse_bibtex((paper.root / BIBLIOGRAPHY).read_text(encoding="utf-8"))
    text = render_citations(render(template, paper.numbers, paper.tables, paper.figures), bib)
    banner = ("\n<!-- generated by scripts/paper/build.py from paper.template.md and "
              "references.bib: edit those, not this file -->\n")
    front_end = text.find("\n---\n", 4) + 5 if text.startswith("---\n") else 0
    return paper.write_text(text[:front_end] + banner + text[front_end:], "paper.md")


def compile_pdf(paper: Paper) -> None:
    """paper.pdf (not committed: Chromium stamps dates): pandoc Markdown -> standalone HTML
    with MathML (no implicit figures: the ``**Figure N.**`` line is the one caption) and
    the print layout ``paper.css``, then headless Chromium's print-to-PDF. Skipped, saying
    which program is missing, without pandoc or chromium (``make paper`` installs both when
    it can)."""
    missing = [name for name in ("pandoc", "chromium") if shutil.which(name) is None]
    if missing:
        print(f"[paper] {' and '.join(missing)} not found: skipping the PDF "
              "(paper/paper.md is complete; Debian packages pandoc, chromium)")
        return
    html, pdf = paper.root / "paper.html", paper.root / "paper.pdf"
    steps = (
        ["pandoc", "paper.md", "--from", "markdown-implicit_figures", "--to", "html5",
         "--standalone", "--css", PRINT_CSS,
         "--mathml", "--output", html.name],
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
         f"--print-to-pdf={pdf}", html.resolve().as_uri()],
    )
    for command in steps:
        try:
            result = subprocess.run(command, cwd=paper.root, capture_output=True, text=True,
                                    timeout=300)
        except subprocess.TimeoutExpired:
            print(f"[paper] {command[0]} timed out: no PDF")
            return
        if result.returncode:
            print(f"[paper] {command[0]} failed, no PDF: {result.stderr.strip()[-500:]}")
            return
    if not pdf.is_file():
        print("[paper] chromium wrote no PDF")
        return
    print(f"[paper] wrote paper/paper.pdf ({pdf.stat().st_size / 1e6:.1f} MB)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="rerun the coverage study first (minutes; must reproduce "
                             "the committed paper/coverage/ byte for byte)")
    parser.add_argument("--only", nargs="+", choices=[s.name for s in STEPS],
                        help="run only these steps (no manuscript)")
    parser.add_argument("--record-environment", action="store_true",
                        help=f"write paper/{ENVIRONMENT} (the exact versions the text quotes) "
                             "from the running environment, and stop")
    parser.add_argument("--out", type=Path, default=PAPER,
                        help="output directory holding paper.template.md (default paper/)")
    args = parser.parse_args(argv)
    if args.record_environment:
        print(f"[paper] wrote {record_environment(args.out)}")
        return 0
    paper = Paper(args.out)
    names = args.only or [s.name for s in STEPS]
    start = time.time()
    run_steps(paper, names, args.full)
    if not args.only:
        from manuscript import main_text_words

        manuscript = write_manuscript(paper)
        words = main_text_words(manuscript.read_text(encoding="utf-8"))
        print(f"[paper] main text: {words:,} words (tables, code, appendices excluded)")
        compile_pdf(paper)
    print(f"[paper] {len(paper.written)} files in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
