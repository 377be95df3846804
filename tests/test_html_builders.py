"""The web page's parts of the leaderboard builder's commands (issue 34, part 4): the judges
section (``winrate judges --html``), the plan table (``winrate plan --html``) and the change
column (``winrate diff --html``), read back with Python's HTML parser and compared with the
results' own numbers (the results are tested against independent computations in
tests/test_judges.py, test_plan.py and test_diff.py; here: that the page shows them), to
the shown precision. tests/test_html_browser.py opens a diff page in Chromium."""

from __future__ import annotations

import io
import json
import re
import warnings
from html.parser import HTMLParser
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pytest

import winrate
from tests.test_judges import simulated
from winrate.diff import diff_releases, split_since
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.io.simulate import SimulationDesign, simulate_comparisons
from winrate.judges import audit_judges
from winrate.report import html_page

NUMBER = r"[+-]?\d[\d,]*(?:\.\d+)?"


class Page(HTMLParser):
    """Per ``<section id>``: its tables as rows of cell texts (header row first); the
    leaderboard's header keys (``data-key``), its rows' cells (text, and whether a ``real``
    badge is in it) and the notes' codes."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[list[str]]]] = {}
        self.keys, self.board, self.codes, self.links = [], [], [], {}
        self._section, self._cell, self._row, self._in_board = None, None, None, False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._section = attrs.get("id")
        elif tag == "table":
            self._in_board = attrs.get("id") == "leaderboard"
            self.tables.setdefault(self._section, []).append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = [""]
            if tag == "th" and self._in_board:
                self.keys.append(attrs.get("data-key"))
        elif tag == "span" and attrs.get("data-flag") == "real" and self._cell is not None:
            self._cell.append("<real>")
        elif tag == "li" and attrs.get("data-code"):
            self.codes.append(attrs["data-code"])
        elif tag == "a" and attrs.get("id"):
            self.links[attrs["id"]] = attrs.get("href")

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell[0].replace("real", "").strip() if "<real>" in
                             self._cell else self._cell[0].strip())
            if "<real>" in self._cell:
                self._row[-1] += " <real>"
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._section][-1].append(self._row)
            if self._in_board and self._row and not self._row[0] == "#":
                self.board.append(self._row)
            self._row = None
        elif tag == "table":
            self._in_board = False


def numbers(shown: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(NUMBER, shown)]


def close(shown: float, value: float, decimals: int) -> bool:
    return abs(shown - value) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9)


# ----------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def audit():
    log = simulated(2, n_prompts=12, own=0.6, both_orders=True, ties=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_judges(log)


def release_pair(seed: int = 3, gain: float = 1.5, n_old: int = 60):
    """(old, new): one log of 80 prompts in which model-00 is ``gain`` stronger on the
    prompts from ``n_old`` on (the same draws otherwise: same seed), the old release its
    first ``n_old`` prompts without model-05 (added in the new release)."""
    design = SimulationDesign(n_models=6, n_prompts=80, n_judges=8, missing_pair_share=0.0)
    theta = np.linspace(0.75, -0.75, 6)
    base = simulate_comparisons(design, seed=seed, abilities=theta).log
    gained = simulate_comparisons(design, seed=seed, abilities=theta + gain * np.eye(6)[0]).log
    late = base.axes["prompt"].codes >= n_old
    old_row = ~late & (base.model_a != 5) & (base.model_b != 5)
    dates = np.array(["2024-02-01", "2024-01-01"], dtype=object)
    axes = {**base.axes, "time": ClusterAxis(old_row.astype(np.int64), dates)}
    timed = ComparisonLog(base.model_a, base.model_b, np.where(late, gained.score, base.score),
                          base.models, axes)
    return split_since(timed, "time", "2024-01-15")


@pytest.fixture(scope="module")
def diff():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diff_releases(*release_pair(), cluster="prompt+judge")


@pytest.fixture(scope="module")
def plan():
    sim = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=60, n_judges=6), seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = winrate.analyze(sim.log, cluster="prompt+judge")
        return result.plan(models=("model-01", "model-02"), delta=0.02, top=3)


def page_of(result) -> tuple[Page, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        content = html_page.render(result.page_document(), "9.9.9")
    return Page(content), content


# ----------------------------------------------------------------- changes


def test_change_column_shows_each_change_its_simultaneous_interval_and_real_badge(diff):
    page = page_of(diff)[0]
    unit = diff.new_fit.leaderboard.scale
    column, model = page.keys.index("change"), page.keys.index("model")
    shown = {row[model]: row[column] for row in page.board}
    frame = diff.to_frame()
    assert set(shown) == {*frame.index, *diff.added} and diff.added == ("model-05",)
    assert shown["model-05"] == "new"
    for name, entry in frame.iterrows():
        change, low, high = numbers(shown[name])
        for found, value in ((change, entry.change), (low, entry.sim_low),
                             (high, entry.sim_high)):
            assert close(found, unit.factor * value, unit.decimals), (name, shown[name])
        assert shown[name].endswith("<real>") == bool(entry.real), name
    # the study's design makes model-00's gain real and leaves another model's change not
    assert frame.real["model-00"] and not frame.real.all()


def test_changes_section_and_csv_download_carry_the_diff(diff):
    page = page_of(diff)[0]
    swaps = diff.rank_changes
    (table,) = page.tables["changes"]
    assert not swaps.empty  # seed 3: model-02 and model-04 swap places
    assert [(r[0], r[1]) for r in table[1:]] == list(zip(swaps.above_now, swaps.below_now,
                                                         strict=True))
    assert [r[-1] == "real" for r in table[1:]] == list(swaps.real)
    for row, gap in zip(table[1:], swaps.itertuples(), strict=True):
        shown = numbers(row[2]) + numbers(row[3])
        assert all(close(f, v, 1) for f, v in zip(shown, (gap.gap_change, gap.sim_low,
                                                          gap.sim_high), strict=True))
    csv = unquote(page.links["download-csv"].split(",", 1)[1])
    table = pd.read_csv(io.StringIO(csv)).set_index("model")
    frame = diff.to_frame()
    # to the page's 12 significant digits (html_page.PAGE_DIGITS)
    np.testing.assert_allclose(table.loc[frame.index, "change"], frame.change, rtol=5e-12)
    np.testing.assert_allclose(table.loc[frame.index, "change_sim_high"], frame.sim_high,
                               rtol=5e-12)
    assert table.loc[frame.index, "change_real"].tolist() == frame.real.tolist()
    assert np.isnan(table.loc["model-05", "change"])


# ----------------------------------------------------------------- judges


def test_judges_section_shows_the_audits_effects_shares_and_boards(audit):
    page, content = page_of(audit)
    position, own, flips, ties, boards = page.tables["judges"]
    for table, effects in ((position, audit.position_bias), (own, audit.self_preference)):
        assert [r[0] for r in table[1:]] == [e.judge for e in effects]
        for row, effect in zip(table[1:], effects, strict=True):
            doc = effect.to_dict()
            assert close(float(row[1]), doc["logit"], 3) and close(float(row[2]), doc["se"], 3)
            assert all(close(f, v, 1) for f, v in zip(numbers(row[3]), (
                doc["elo"], doc["elo_low"], doc["elo_high"]), strict=True))
            assert all(close(f, v, 3) for f, v in zip(numbers(row[4]), (
                doc["probability"], doc["probability_low"], doc["probability_high"]),
                strict=True))
    order = audit.order_consistency
    expected = {"all": order.flip_rate, **order.per_judge}
    for table, shares in ((flips, expected), (ties, audit.tie_propensity)):
        assert [r[0] for r in table[1:]] == list(shares)
        for row in table[1:]:
            share = shares[row[0]]
            assert close(numbers(row[1])[0], 100 * share.estimate, 1)
            assert all(close(f, 100 * v, 1) for f, v in zip(numbers(row[2]),
                                                            (share.low, share.high),
                                                            strict=True))
    ratings = audit.ratings()
    assert boards[0] == ["model", *(name.replace("_", " ") for name in ratings.columns)]
    assert [r[0] for r in boards[1:]] == list(ratings.index)
    for row in boards[1:]:
        assert all(close(numbers(f)[0], v, 1) for f, v in zip(row[1:], ratings.loc[row[0]],
                                                               strict=True))
    agreement = audit.agreement
    assert f"{agreement.alpha:.3f} [{agreement.low:.3f}, {agreement.high:.3f}]" in content


def test_the_audits_notes_reach_the_page_with_their_codes_once(audit):
    page, content = page_of(audit)
    codes = {note.code for note in audit.notes}
    assert codes and codes <= set(page.codes)
    board = audit.boards["as_judged"]
    shared = [n for n in audit.notes if (n.code, str(n)) in {(m.code, str(m))
                                                               for m in board.notes}]
    listed = re.search(r'<ul class="notes">(.*?)</ul>', content, re.S).group(1)
    assert shared  # the board's notes are the audit's too: each is listed once
    for note in shared:
        assert listed.count(html_page.text(str(note))) == 1


# ----------------------------------------------------------------- plan


def test_plan_table_shows_each_levers_count_and_the_projection(plan):
    page = page_of(plan)[0]
    unit = plan.analysis.leaderboard.scale
    needed, projection = page.tables["plan"]
    assert needed[0][4:] == ["prompts", "judges", "comparisons", "prompts and judges"]
    assert [r[0] for r in needed[1:]] == [r.name for r in plan.requirements]
    for row, requirement in zip(needed[1:], plan.requirements, strict=True):
        assert close(numbers(row[1])[0], unit.factor * requirement.effect, unit.decimals)
        assert close(float(row[2]), unit.factor * requirement.se, unit.decimals)
        assert row[3] == f"{100 * requirement.power:.0f}%"
        for cell, lever in zip(row[4:], ("prompts", "judges", "comparisons",
                                         "prompts and judges"), strict=True):
            value = requirement.needed[lever]
            assert cell == ("unreachable" if np.isinf(value) else f"{value:,.0f}"), lever
    assert any(np.isinf(v) for r in plan.requirements for v in r.needed.values())
    for row, (multiplier, found) in zip(projection[1:], plan.projection.iterrows(),
                                        strict=True):
        assert numbers(row[0])[0] == multiplier
        assert close(float(row[1]), unit.factor * found.mean_width, unit.decimals)
        assert close(float(row[2]), found.mean_rank_set_size, 1)
    assert "plan-unreachable" in page.codes


# ----------------------------------------------------------------- the page as a whole


def test_page_renders_from_its_json_alone_and_a_plain_board_has_no_parts(diff, plan, audit):
    for result in (diff, plan, audit):
        doc = result.page_document()
        again = json.loads(json.dumps(doc))
        assert html_page.render(again, "1") == html_page.render(doc, "1")
    board = page_of(audit)[1]
    plain = html_page.render(winrate.report.leaderboard.to_dict(audit.boards["as_judged"]), "1")
    for marker in ('id="judges"', 'id="plan"', 'id="changes"', 'data-key="change"'):
        assert marker not in plain
    assert 'id="judges"' in board


def test_the_commands_write_pages_and_refuse_an_input_as_output(tmp_path, capsys):
    from winrate.cli import main
    from winrate.examples import write_examples

    write_examples(tmp_path)
    example = str(tmp_path / "example.csv")
    lines = (tmp_path / "example.csv").read_text().splitlines()
    (tmp_path / "old.csv").write_text("\n".join(lines[:700]) + "\n")
    runs = {"judges": ["judges", example], "plan": ["plan", example, "--top", "3"],
            "changes": ["diff", str(tmp_path / "old.csv"), example]}
    for part, argv in runs.items():
        path = tmp_path / f"{part}.html"
        assert main([*argv, "--html", str(path), "--title", f"T {part}"]) == 0
        content = path.read_text()
        assert f'<section id="{part}">' in content and "<title>T " in content
        doc = json.loads(re.search(r'<script id="winrate-data" type="application/json">'
                                   r"(.*?)</script>", content, re.S).group(1))
        assert doc["schema"] == "winrate.leaderboard/1" and part in doc
    capsys.readouterr()
    assert main(["judges", example, "--html", example]) == 2
    assert "example.csv" in capsys.readouterr().err
