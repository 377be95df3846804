"""The paper build (scripts/paper/build.py, ``make paper``): the manuscript quotes no
number by hand, references every generated table and figure, and a rebuild of the fast
parts rewrites the committed files byte for byte."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import statistics
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "paper"
BUILD = ROOT / "scripts" / "paper"
REAL = os.environ.get("WINRATE_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL).is_dir(),
                                reason="WINRATE_DATA is not set: real-data parts skipped")


@pytest.fixture(scope="module")
def build():
    sys.path.insert(0, str(BUILD))
    sys.path.insert(1, str(ROOT / "scripts"))
    threads = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))  # as the build does
    module = importlib.import_module("build")
    yield module
    numba.set_num_threads(threads)
    sys.path.remove(str(BUILD))
    sys.path.remove(str(ROOT / "scripts"))


# ------------------------------------------------------------------ hand-typed numbers

_IGNORED = [
    re.compile(r"<!--.*?-->", re.S),  # comments
    re.compile(r"^---\n.*?\n---\n", re.S),  # front matter (title)
    re.compile(r"\{\{[^}]*\}\}"),  # placeholders: generated numbers
    re.compile(r"\$\$.+?\$\$", re.S),  # displayed formulas (before inline ones)
    re.compile(r"\$[^$]*\$"),  # formulas
    re.compile(r"`[^`]*`"),  # code and file names
    re.compile(r"(?:[A-Z][\w.&-]*|al\.)\s(?:19|20)\d\d\b"),  # citation years: Kish 1965
]
STANDALONE_NUMBER = re.compile(r"(?<![\w.-])\d+(?:[.,]\d+)*%?(?![\w-])")


def hand_typed_numbers(text: str) -> list[str]:
    """Numbers in prose: outside placeholders, formulas, code, comments and citations;
    digits inside names (GPT-4, CR1, Vicuna-80) are not numbers."""
    for pattern in _IGNORED:
        text = pattern.sub(" ", text)
    return STANDALONE_NUMBER.findall(text)


def test_number_detector_catches_typed_results():
    assert hand_typed_numbers("the SE inflates 3.79 times, about 40% coverage") == [
        "3.79", "40%"]
    assert hand_typed_numbers("on 12,032 questions") == ["12,032"]
    assert hand_typed_numbers("{{mmlu_infl}} times with $z = 1.96$, `tables/x.md`, GPT-4, "
                              "CR1 (Kish 1965) <!-- 42 -->") == []


def test_template_quotes_no_number_by_hand():
    template = (PAPER / "paper.template.md").read_text()
    assert hand_typed_numbers(template) == []


# ------------------------------------------------------------------ references


def test_every_generated_table_and_figure_is_referenced_by_the_manuscript():
    manuscript = (PAPER / "paper.md").read_text()
    generated = [p for folder in ("tables", "figures", "results", "coverage")
                 for p in sorted((PAPER / folder).glob("*")) if p.is_file()]
    assert generated
    missing = [str(p.relative_to(PAPER)) for p in generated
               if str(p.relative_to(PAPER)) not in manuscript]
    assert missing == []


def test_manuscript_is_the_rendered_template(build):
    """Every placeholder of the template is filled in paper.md, so no stale hand edit can
    hide there."""
    manuscript = (PAPER / "paper.md").read_text()
    assert "{{" not in manuscript
    numbers = __import__("json").loads((PAPER / "numbers.json").read_text())
    template = (PAPER / "paper.template.md").read_text()
    keys = set(re.findall(r"\{\{\s*([a-z_]+)\s*\}\}", template))
    assert keys <= set(numbers)


def test_render_fills_placeholders_and_refuses_unknown_ones(build):
    from manuscript import TemplateError, render

    with pytest.raises(TemplateError, match="number nope"):
        render("x {{nope}} y\n", {}, {}, {})
    with pytest.raises(TemplateError, match="malformed placeholder"):
        render("x {{Nope-1}} y\n", {}, {}, {})
    with pytest.raises(TemplateError, match="table t"):
        render("{{table:t}}\n", {}, {}, {})
    text = "<!-- Template of the paper -->\n\na {{k}}\n{{table:t}}\n"
    out = render(text, {"k": "1.50"}, {"t": ("| x |", "Cap.")}, {})
    assert out == "a 1.50\n| x |\n\n**Table 1.** Cap.\n"


def test_render_numbers_floats_in_order_and_resolves_references(build):
    """Tables and figures are numbered separately in order of placement; a reference may
    come first; an unplaced reference or a float placed twice is refused."""
    from manuscript import TemplateError, render

    tables = {"b": ("| b |", "B."), "a": ("| a |", "A.")}
    figures = {"f": "F."}
    out = render("See {{tab:a}}, {{fig:f}} and {{tab:b}}.\n{{table:b}}\n{{figure:f}}\n"
                 "{{table:a}}\n", {}, tables, figures)
    assert out.splitlines()[0] == "See Table 2, Figure 1 and Table 1."
    assert "**Table 1.** B." in out and "**Table 2.** A." in out
    assert "![Figure 1](figures/f.png)\n\n**Figure 1.** F.\n" in out
    assert out.count("F.") == 1  # the caption once: the image's alt text is its label
    listed = render("{{table:b}}\n{{figure:f}}\n{{table:a}}\n{{files:floats}}\n", {}, tables,
                    figures).splitlines()[-3:]
    assert listed == ["- Table 1: `tables/b.md`, `tables/b.tex`, `tables/b.csv`",
                      "- Table 2: `tables/a.md`, `tables/a.tex`, `tables/a.csv`",
                      "- Figure 1: `figures/f.png`, `figures/f.pdf`"]
    with pytest.raises(TemplateError, match="reference to table a, which is not placed"):
        render("{{tab:a}}\n{{table:b}}\n", {}, tables, figures)
    with pytest.raises(TemplateError, match="table b placed twice"):
        render("{{table:b}}\n{{table:b}}\n", {}, tables, figures)


_CAPTION = re.compile(r"^\*\*(Table|Figure) (\d+)\.\*\* (.*)$", re.M)
#: What a caption must not name: files and folders of the repository.
_PATH = re.compile(r"\w\.(md|csv|tex|json|png|pdf|py|txt)\b|\b(tables|figures|scripts|docs|"
                   r"coverage|peers|results)/")


def test_manuscript_tables_and_figures_are_numbered_and_every_reference_resolves():
    """In paper.md: captions Table 1, 2, ... and Figure 1, 2, ... in order, each printed
    once; every "Table N" / "Figure N" in the prose names one of them, and each is cited."""
    manuscript = (PAPER / "paper.md").read_text()
    captions = _CAPTION.findall(manuscript)
    for kind in ("Table", "Figure"):
        numbers = [int(n) for k, n, _ in captions if k == kind]
        assert numbers == list(range(1, len(numbers) + 1)), kind
    assert sum(k == "Table" for k, _, _ in captions) >= 10
    assert sum(k == "Figure" for k, _, _ in captions) >= 2
    for _, _, caption in captions:
        assert manuscript.count(caption) == 1, caption
        assert not _PATH.search(caption), caption  # captions say what, not where
    prose = "\n".join(line for line in manuscript.splitlines()
                      if not re.match(r"\*\*(Table|Figure) \d+\.\*\*|!\[|\|", line))
    cited = set(re.findall(r"\b(Table|Figure)\s+(\d+)\b", prose))
    placed = {(k, n) for k, n, _ in captions}
    assert cited == placed  # every reference resolves, and every table and figure is cited
    assert not re.search(r"(Table|Figure)\s+`", manuscript)  # no code-name references


# ------------------------------------------------------------------ byte-identical rebuild


def _copy_inputs(tmp_path: Path) -> Path:
    out = tmp_path / "paper"
    shutil.copytree(PAPER / "coverage", out / "coverage")
    shutil.copy(PAPER / "paper.template.md", out / "paper.template.md")
    return out


def _assert_same_bytes(paper) -> None:
    assert paper.written
    for path in paper.written:
        committed = PAPER / path.relative_to(paper.root)
        assert committed.exists(), f"{committed} is generated but not committed"
        assert path.read_bytes() == committed.read_bytes(), f"{committed} differs"


def test_fast_steps_rebuild_the_committed_files(build, tmp_path):
    from common import Paper

    paper = Paper(_copy_inputs(tmp_path))
    build.run_steps(paper, [s.name for s in build.STEPS if s.fast])
    _assert_same_bytes(paper)
    assert hasattr(sys.modules["coverage_study"], "coverage_results")  # not shadowed by
    # scripts/coverage.py, which the coverage step loads as a module of its own


@needs_real
def test_small_real_datasets_rebuild_the_committed_results(build, tmp_path):
    from common import Paper
    from real_data import DATASETS, dataset_results

    small = [d for d in DATASETS if d.name in ("pandalm", "llmfao", "chatbot_arena")]
    paper = Paper(_copy_inputs(tmp_path))
    dataset_results(paper, small)
    _assert_same_bytes(paper)


def test_the_documentation_quotes_the_generated_numbers():
    """Every number the README and docs/ quote in prose (``<!-- n:KEY -->V<!-- /n -->``) is
    the generated ``paper/numbers.json[KEY]`` (scripts/doc_examples.py fills them)."""
    pages = [PAPER.parent / "README.md", *sorted((PAPER.parent / "docs").glob("*.md"))]
    text = "".join(page.read_text() for page in pages)
    numbers = __import__("json").loads((PAPER / "numbers.json").read_text())
    quoted = re.findall(r"<!-- n:([a-z0-9_]+) -->(.*?)<!-- /n -->", text)
    assert len(quoted) > 20
    assert [(key, numbers.get(key)) for key, _ in quoted] == quoted


# ------------------------------------------------------------------ oracles of the numbers


def test_implied_naive_coverage_is_the_normal_probability(build):
    """``2 Phi(1.96 / infl) - 1`` against the error function, ``erf(x / sqrt 2)``."""
    import math

    from real_data import Z, implied_naive_coverage

    assert Z == pytest.approx(1.959963984540054, abs=1e-12)
    inflation = [0.5, 0.77, 1.0, 2.0, 3.79, 11.48]
    expected = [math.erf(Z / f / math.sqrt(2)) for f in inflation]
    assert implied_naive_coverage(inflation) == pytest.approx(expected, abs=1e-14)
    assert implied_naive_coverage(1.0) == pytest.approx(0.95, abs=1e-12)


def test_simulated_coverage_matches_a_plain_loop(build):
    """The per-log coverage shares and inflation of the simulations, recomputed with the
    naive (n / (n - 1) sum_r u_r^2) and CR1 (G / (G - 1) sum_g t_g^2) variances by loops."""
    from simulations import _coverage

    from winrate.estimators.win_rate_kernels import fit
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    sim = simulate_comparisons(SimulationDesign(n_models=6, n_prompts=25, n_judges=2), seed=2)
    log = sim.log
    board = fit(log)
    truth = sim.population_scores(board.weights)
    naive, clustered, inflation = _coverage(log, lambda b: sim.population_scores(b.weights))
    dense = board.influence.toarray()
    prompts = log.axes["prompt"].codes
    n, groups = log.n_rows, sorted(set(prompts.tolist()))
    covered_naive, covered_cluster, ratios = [], [], []
    for a in range(log.n_models):
        var_naive = n / (n - 1) * sum(dense[r, a] ** 2 for r in range(n))
        sums = [sum(dense[r, a] for r in range(n) if prompts[r] == g) for g in groups]
        var_cluster = len(groups) / (len(groups) - 1) * sum(t * t for t in sums)
        error = abs(board.scores[a] - truth[a])
        covered_naive.append(error <= 1.959963984540054 * var_naive**0.5)
        covered_cluster.append(error <= 1.959963984540054 * var_cluster**0.5)
        ratios.append((var_cluster / var_naive) ** 0.5)
    assert 0 < sum(covered_naive) < sum(covered_cluster) < log.n_models  # not trivial
    assert naive == sum(covered_naive) / log.n_models
    assert clustered == sum(covered_cluster) / log.n_models
    assert inflation == pytest.approx(statistics.median(ratios), rel=1e-10)


def test_paired_design_truth_and_draws(build):
    """The paired simulation's truth is P(d > tau) + P(|d| <= tau) / 2 for
    d ~ N(theta_a - theta_b, sd_bias^2 + sd_noise^2) (scipy), and a large seeded draw's
    pairwise mean scores match it (a prompt's two orders share the bias with opposite
    signs, so each mean has SE below 0.5 / sqrt(2 prompts))."""
    from dataclasses import replace

    from scipy.stats import norm
    from simulations import PAIRED, paired_log

    design = replace(PAIRED, n_prompts=20_000)
    log, psi = paired_log(design, seed=11)
    theta = np.linspace(design.ability_sd * 1.5, -design.ability_sd * 1.5, design.n_models)
    sd = np.hypot(design.position_bias_sd, design.noise_sd)
    delta = theta[:, None] - theta[None, :]
    tau = design.tie_margin
    expected = norm.sf(tau, delta, sd) + 0.5 * (norm.cdf(tau, delta, sd)
                                                - norm.cdf(-tau, delta, sd))
    off = ~np.eye(design.n_models, dtype=bool)
    np.testing.assert_allclose(psi[off], expected[off], atol=1e-12)
    total = np.zeros((design.n_models, design.n_models))
    count = np.zeros_like(total)
    np.add.at(total, (log.model_a, log.model_b), log.score)
    np.add.at(total, (log.model_b, log.model_a), 1 - log.score)
    np.add.at(count, (log.model_a, log.model_b), 1)
    np.add.at(count, (log.model_b, log.model_a), 1)
    mean = total[off] / count[off]
    assert np.abs(mean - expected[off]).max() < 4 * 0.5 / np.sqrt(2 * design.n_prompts)


def test_table_cells_with_line_breaks_and_bars_stay_one_row(build):
    import pandas as pd
    from common import markdown_table
    from real_data import short_label

    text = markdown_table(pd.DataFrame({"a": ["x\n\n<code>y</code>"], "b": ["p|q"]}))
    assert text.splitlines()[2] == "| x  <code>y</code> | p\\|q |"
    assert short_label("Convert the given HTML into Markdown format.\n\n<code>Use") == (
        "Convert the given HTML into Markdown...")
    assert short_label("gpt-4") == "gpt-4"


def test_rating_dependence_matches_loops_over_pairs(build):
    from judges_and_arena import rating_dependence

    rng = np.random.default_rng(3)
    root = rng.normal(size=(5, 5)) + 1.5  # positively correlated ratings
    cov = np.zeros((6, 6))
    cov[1:, 1:] = root @ root.T  # model 0: a fixed baseline with no variance
    correlations, ratios = [], []
    for a in range(1, 6):
        for b in range(a + 1, 6):
            correlations.append(cov[a, b] / (cov[a, a] * cov[b, b]) ** 0.5)
            var_difference = cov[a, a] + cov[b, b] - 2 * cov[a, b]
            ratios.append((var_difference / (cov[a, a] + cov[b, b])) ** 0.5)
    correlation, ratio = rating_dependence(cov)
    assert correlation == pytest.approx(statistics.median(correlations), rel=1e-12)
    assert ratio == pytest.approx(statistics.median(ratios), rel=1e-12)
    assert correlation > 0 and ratio < 1


def test_closing_statements_name_every_requirement_and_the_data_licences():
    """The reproducibility statement lists each dependency of pyproject.toml with its range
    (read here line by line, not through the build's TOML parsing), and the data-licence
    note gives AlpacaEval's non-commercial licence; both sit in the last appendix, after the
    References (a workshop paper's main text ends before them)."""
    manuscript = (PAPER / "paper.md").read_text()
    licences = manuscript.index("### Data licences")
    statement = manuscript.index("### Reproducibility")
    assert manuscript.index("## References") < licences < statement
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = pyproject[pyproject.index("dependencies = ["):]
    block = block[:block.index("]")]
    requirements = re.findall(r'^\s*"([^"]+)",', block, re.M)
    assert len(requirements) >= 5
    text = " ".join(manuscript[statement:].split())
    for requirement in requirements:  # "duckdb>=2.0,<2.1" as "duckdb >= 2.0, < 2.1"
        name = re.match(r"[\w-]+", requirement).group(0)
        ranges = re.findall(r"([<>=!~]=?)([\w.]+)", requirement[len(name):])
        assert name + " " + ", ".join(f"{op} {v}" for op, v in ranges) in text, requirement
    assert "`CC-BY-NC-4.0`" in manuscript[licences:statement]
    for command in ("make paper", "make test", "python scripts/coverage.py --held-out",
                    "python scripts/bench.py --only scale"):
        assert command in text, command


def _caption_below(manuscript: str, name: str) -> str:
    """The caption printed under table ``name`` (its Markdown, then ``**Table N.**``)."""
    body = (PAPER / "tables" / f"{name}.md").read_text().strip()
    after = manuscript[manuscript.index(body) + len(body):]
    return re.search(r"^\*\*Table \d+\.\*\* (.*)$", after, re.M).group(1)


def test_coverage_captions_define_every_method_they_show():
    """Each method column of the coverage tables is defined in words in its caption, and
    the paper shows no figure whose legend uses scripts/coverage.py's code names (its own
    figure stays in paper/coverage/; the paper's is coverage_methods, in words)."""
    manuscript = (PAPER / "paper.md").read_text()
    captions = {name: _caption_below(manuscript, name)
                for name in ("coverage_summary", "design_coverage")}
    for name, caption in captions.items():
        header = (PAPER / "tables" / f"{name}.md").read_text().splitlines()[0]
        methods = [c.strip() for c in header.strip("|").split("|")][2:]
        assert len(methods) >= 6
        for method in methods:
            assert f" {method}: " in f" {caption}" or f"; {method}: " in caption, (name, method)
    assert "figures/coverage.png" not in manuscript
    assert "figures/coverage_methods.png" in manuscript
