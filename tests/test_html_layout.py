"""The leaderboard page's layout in a real browser (issue 39): headless Chromium from Debian's
packages, driven by selenium (scripts/browser.py); without them the module skips, naming
them.

Where things are is read from the browser itself (bounding boxes, scroll and client widths,
the element at a point): the first row on a 390 x 844 phone's first screen, every model name
shown whole (so two different names never read the same), the model column kept in view
while the interval columns scroll into reach, the default table inside 1280 px, the search
box, metadata shown as text. Each check is also run on a page broken on purpose, to show it
can fail.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import browser  # noqa: E402

MISSING = browser.missing()
if MISSING:
    pytest.skip(f"browser tests need Debian's chromium and chromium-driver and selenium "
                f"({MISSING}; make test installs the Debian packages when run as root)",
                allow_module_level=True)

from selenium.webdriver.common.keys import Keys  # noqa: E402

from tests.html_docs import HOSTILE, document, hostile_analysis, wide_analysis  # noqa: E402
from winrate import notes  # noqa: E402
from winrate.report import html_page  # noqa: E402
from winrate.report.models_meta import from_json  # noqa: E402

ORGS = ("Acme Research", "Beta Labs", "Gamma AI")


def renamed(doc: dict, name) -> dict:
    """``doc`` with every model called ``name(old)`` (models, pairs, notes)."""
    doc = json.loads(json.dumps(doc))
    doc["models"] = [name(m) for m in doc["models"]]
    for pair in doc.get("pairwise") or ():
        pair["model_i"], pair["model_j"] = name(pair["model_i"]), name(pair["model_j"])
    doc["unobserved_pairs"] = [[name(a), name(b)] for a, b in doc.get("unobserved_pairs") or ()]
    for note in doc.get("notes") or ():
        note["models"] = [name(m) for m in note["models"]]
    return doc


def long_name(model: str) -> str:
    """Long names that differ only at their end, as gemini-1.5-pro-api-0409-preview and
    its siblings do."""
    return f"gemini-1.5-pro-api-0409-preview-experimental-{model}"


def metadata(models: list[str]):
    """An organisation, a licence, a link and an extra column for every model; one badge."""
    return from_json(json.dumps([
        {"model": m, "organisation": ORGS[k % 3], "licence": "Apache-2.0" if k % 2 else
         "proprietary", "url": f"https://example.org/{k}", "context window": f"{8 * (k + 1)}k",
         **({"flags": ["null model"]} if k == 1 else {})}
        for k, m in enumerate(models)]))


@pytest.fixture(scope="module")
def wide():
    """150 models with long names that differ only at the end, metadata, a description."""
    doc = renamed(document(wide_analysis()), long_name)
    page = html_page.render(doc, "1", "A leaderboard with a long title for a phone",
                            description="One paragraph about where these comparisons come "
                                        "from and how the models were run.",
                            meta=metadata(doc["models"]), ci_style="plusminus")
    return doc, page


@pytest.fixture(scope="module")
def desktop():
    with browser.chromium(browser.DESKTOP) as driver:
        yield driver


@pytest.fixture(scope="module")
def phone():
    with browser.chromium(browser.PHONE) as driver:
        yield driver


@pytest.fixture
def load(tmp_path):
    def open_in(driver, page: str):
        path = tmp_path / "page.html"
        path.write_text(page, encoding="utf-8")
        browser.console_errors(driver)
        browser.open_page(driver, path)
        assert browser.console_errors(driver) == []
        return browser.layout(driver)

    return open_in


# --------------------------------------------------------------------------- phone


def test_first_row_is_on_a_phones_first_screen(phone, load, wide):
    shown = load(phone, wide[1])
    assert 0 <= shown["row_top"] < shown["row_bottom"] <= shown["viewport"] == 844
    assert browser.horizontal_overflow(phone) == 0
    # the same check on a page whose top fills the screen: it sees the row is not there
    phone.execute_script("document.body.insertAdjacentHTML('afterbegin', "
                         "'<div id=\"tall\"></div>');"
                         "document.getElementById('tall').style.height = '900px';")
    assert browser.layout(phone)["row_top"] > 844


def test_long_similar_names_are_shown_whole_and_never_read_the_same(phone, desktop, load,
                                                                    wide):
    doc, page = wide
    for driver in (phone, desktop):
        shown = load(driver, page)
        assert shown["clipped"] == []
        labels = ["".join(label.split()) for label in shown["labels"]]
        assert sorted(labels) == sorted(doc["models"])  # each whole, so all distinct
    # names cut with an ellipsis (as the page once did) are caught
    phone.execute_script(
        "Array.prototype.forEach.call(document.querySelectorAll('td.model'), function (c) {"
        "  c.style.whiteSpace = 'nowrap'; c.style.overflow = 'hidden';"
        "  c.style.textOverflow = 'ellipsis'; c.style.maxWidth = '9em'; });")
    assert len(browser.layout(phone)["clipped"]) == len(doc["models"])


def _cell_at_centre(driver, key: str) -> dict:
    """Scroll the table box so that column ``key``'s first cell sits just right of the
    sticky columns; where the cell is and what element the browser finds at its centre."""
    return driver.execute_script(
        "var t = document.getElementById('leaderboard'), box = t.parentNode;"
        "var key = arguments[0];"
        "var col = Array.prototype.findIndex.call(t.tHead.rows[0].cells, function (c) {"
        "  return c.getAttribute('data-key') === key; });"
        "var cell = t.tBodies[0].rows[0].cells[col];"
        "var sticky = t.tBodies[0].rows[0].cells[1].getBoundingClientRect().right;"
        "box.scrollLeft += cell.getBoundingClientRect().left - sticky;"
        "var r = cell.getBoundingClientRect(), boxRect = box.getBoundingClientRect();"
        "var hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);"
        "var model = t.tBodies[0].rows[0].cells[1].getBoundingClientRect();"
        "return {inside: r.left >= boxRect.left && r.right <= boxRect.right + 1,"
        "  hit: hit === cell || cell.contains(hit), model_left: model.left,"
        "  box_left: boxRect.left, scrolled: box.scrollLeft};", key)


def test_interval_columns_scroll_into_reach_with_the_model_column_kept(phone, load, wide):
    load(phone, wide[1])
    before = phone.execute_script("return document.querySelector('#leaderboard td.model')"
                                  ".getBoundingClientRect().left;")
    for key in ("ci", "chart", "sim", "n"):
        found = _cell_at_centre(phone, key)
        assert found["inside"] and found["hit"], key
        assert found["model_left"] == pytest.approx(before, abs=1)  # the name stays
    assert found["scrolled"] > 0
    # without the sticky column the model cell leaves: the check sees it
    phone.execute_script(
        "Array.prototype.forEach.call(document.querySelectorAll('.sticky-1, .sticky-2'),"
        "  function (c) { c.style.position = 'static'; });")
    assert _cell_at_centre(phone, "n")["model_left"] < before - 50


# --------------------------------------------------------------------------- desktop


def test_default_table_fits_1280_and_more_columns_adds_the_rest(desktop, load, wide):
    shown = load(desktop, wide[1])
    assert shown["box_scroll"] <= shown["box_client"]
    assert browser.horizontal_overflow(desktop) == 0
    hidden = desktop.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('#leaderboard th'),"
        "  function (c) { return c.offsetParent === null; }).map(function (c) {"
        "  return c.getAttribute('data-key'); });")
    assert set(hidden) == {"naive", "se", "inflation", "gstar", "meta:licence",
                           "meta:context window"}
    desktop.find_element("id", "more-columns").click()
    wider = browser.layout(desktop)
    assert wider["box_scroll"] > wider["box_client"]  # every column: the check sees overflow
    assert browser.horizontal_overflow(desktop) == 0  # inside its box, not the page
    desktop.find_element("id", "more-columns").click()
    assert browser.layout(desktop)["box_scroll"] <= shown["box_client"]


def test_search_filters_rows_by_name_and_metadata(desktop, load, wide):
    doc, page = wide
    load(desktop, page)
    box = desktop.find_element("id", "search")

    def rows_for(query: str) -> list[str]:
        box.send_keys(Keys.CONTROL, "a")  # replace what was typed, as a user does
        box.send_keys(query or Keys.DELETE)
        return sorted(row[1] for row in browser.table_rows(desktop, shown=True))

    assert rows_for("model-01") == sorted(m for m in doc["models"] if "model-01" in m)
    by_org = sorted(m for k, m in enumerate(doc["models"]) if ORGS[k % 3] == "Beta Labs")
    assert rows_for("beta LABS") == by_org
    assert rows_for("8k") == sorted(m for k, m in enumerate(doc["models"])
                                    if "8k" in f"{8 * (k + 1)}k")  # an extra column
    assert rows_for("null model") == [doc["models"][1]]  # a badge
    count = desktop.find_element("id", "shown-count").text
    assert count == f"1 of {len(doc['models'])} models"
    assert rows_for("no such model") == []
    assert rows_for("") == sorted(doc["models"])


def test_metadata_from_a_file_is_text_in_the_browser(desktop, load):
    doc = document(hostile_analysis())
    meta = from_json(json.dumps([{"model": m, "organisation": HOSTILE[k],
                                  "flags": [HOSTILE[-1 - k]]}
                                 for k, m in enumerate(doc["models"][:5])]))
    with notes.gathered():
        load(desktop, html_page.render(doc, "1", meta=meta))
    assert browser.payload_ran(desktop) is None
    orgs = desktop.execute_script(
        "var col = Array.prototype.findIndex.call(document.querySelectorAll("
        "'#leaderboard th'), function (c) { return c.getAttribute('data-key') === "
        "'meta:organisation'; });"
        "return Array.prototype.map.call(document.querySelectorAll('#leaderboard tbody tr'),"
        "  function (r) { return [r.cells[1].getAttribute('data-v'),"
        "    r.cells[col].textContent,"
        "    Array.prototype.map.call(r.querySelectorAll('.flag'), function (f) {"
        "      return f.textContent; })]; });")
    given = {m: (HOSTILE[k], [HOSTILE[-1 - k]]) for k, m in enumerate(doc["models"][:5])}
    for model, org, flags in orgs:
        assert (org, flags) == given.get(model, ("", []))


def test_header_counts_ranked_models_not_the_baseline(desktop, load):
    import winrate
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=30, n_judges=1),
                                 seed=5).frame()
    with notes.gathered():
        doc = document(winrate.analyze(frame, baseline="model-00", cluster="prompt"))
    load(desktop, html_page.render(doc, "1"))
    lede = desktop.find_element("css selector", "p.lede").text
    assert lede.startswith("4 models ranked, ") and "model-00 (the reference" in lede
    assert len(browser.table_rows(desktop)) == 4


def test_category_tabs_switch_boards_and_search_each(desktop, phone, load):
    from winrate import read_comparisons
    from winrate.by_category import analyze_by, boards_to_dict
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=6, n_prompts=40, n_judges=1),
                                 seed=8).frame()
    frame["topic"] = frame["prompt_id"].astype("category").cat.codes.map(
        lambda c: "coding" if c % 2 else "writing")
    with notes.gathered():
        doc = boards_to_dict(analyze_by(read_comparisons(frame, cluster_cols=("topic",)),
                                        "topic", cluster="prompt"))
    page = html_page.render(doc, "1", ci_style="plusminus")
    load(desktop, page)

    def visible_rows(k: int) -> list[str]:
        return [row[1] for row in browser.table_rows(desktop, f"leaderboard-{k}", shown=True)
                if desktop.find_element("id", f"panel-{k}").is_displayed()]

    boards = list(doc["categories"].values())
    assert sorted(visible_rows(0)) == sorted(boards[0]["models"]) and visible_rows(1) == []
    desktop.find_element("id", "tab-1").click()
    assert visible_rows(0) == [] and sorted(visible_rows(1)) == sorted(boards[1]["models"])
    header = browser.header_labels(desktop, "leaderboard-1")
    rows = browser.table_rows(desktop, "leaderboard-1")
    assert browser.table_problems(boards[1], header, rows) == []
    desktop.find_element("id", "search-1").send_keys("model-02")
    assert visible_rows(1) == ["model-02"]
    desktop.find_element("id", "tab-0").click()
    assert len(visible_rows(0)) == len(boards[0]["models"])  # the other board unfiltered
    shown = load(phone, page)
    assert shown["row_bottom"] <= shown["viewport"] and browser.horizontal_overflow(phone) == 0


def test_pointing_at_a_matrix_cell_names_both_models(desktop, load, wide):
    from selenium.webdriver.common.action_chains import ActionChains

    doc, page = wide
    load(desktop, page)
    order = [doc["models"][i] for i in html_page.best_first(doc["score"])]
    canvas = desktop.find_element("id", "pair-matrix")
    size = desktop.execute_script("var c = arguments[0]; return [c.clientWidth, "
                                  "c.clientHeight];", canvas)
    margin = 26  # the script's margin above 40 models
    cell = (size[0] - margin - 2) / len(order)
    row, col = 3, 140  # a far pair, as hard to read by position alone
    x = margin + (col + 0.5) * cell - size[0] / 2  # offsets from the canvas' centre
    y = margin + (row + 0.5) * cell - size[1] / 2
    ActionChains(desktop).move_to_element_with_offset(canvas, round(x), round(y)).perform()
    readout = desktop.find_element("id", "pair-readout").text
    assert readout.startswith(f"#{row + 1} {order[row]} \u2212 #{col + 1} {order[col]} = ")
