"""The web page in a real browser: headless Chromium from Debian's packages, driven by
selenium (scripts/browser.py). Without the packages the module skips, naming them.

Each check is a function of scripts/browser.py that returns what is wrong; every kind of
check is also run on a deliberately broken page, to show it can fail: a page that misses a
model, one that loads a remote resource (a local HTTP server counts the requests: the
independent oracle of "no request"), one that runs a script from a model name, a blank
page, and a page wider than a phone.

The layout (issue 39) is read from the browser itself (bounding boxes, scroll and client
widths, the element at a point): the first row on a 390 x 844 phone's first screen, every
model name shown whole (so two different names never read the same), the model column kept
in view while the interval columns scroll into reach, the default table inside 1280 px, the
search box, metadata shown as text, one tab per category. Each of these checks is also run
on a page broken on purpose.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import sys
import threading
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


@pytest.fixture(scope="module")
def desktop():
    with browser.chromium(browser.DESKTOP) as driver:
        browser.record_violations(driver)
        yield driver


@pytest.fixture(scope="module")
def phone():
    with browser.chromium(browser.PHONE) as driver:
        yield driver


@pytest.fixture(scope="module")
def hostile():
    doc = document(hostile_analysis())
    return doc, html_page.render(doc, "9.9.9")


@pytest.fixture
def load(tmp_path):
    """Write a page to a file and open it; returns the driver's console errors so far
    cleared."""
    def open_in(driver, page: str, name: str = "page.html"):
        path = tmp_path / name
        path.write_text(page, encoding="utf-8")
        browser.console_errors(driver)  # drop what earlier pages logged
        browser.open_page(driver, path)
        return driver

    return open_in


class Counter(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a 1x1 GIF and counts it."""

    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (the standard library's name)
        Counter.hits.append(self.path)
        body = bytes.fromhex("47494638396101000100800000ffffff00000021f90401000000002c"
                             "00000000010001000002024401003b")
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def shown(driver):
    return browser.header_labels(driver), browser.table_rows(driver)


def without_row(page: str, model_index: int) -> str:
    """The page with one model's row taken out (a renderer that lost a model)."""
    return re.sub(rf'<tr data-i="\d+" data-m="{model_index}"[^>]*>.*?</tr>\n?', "", page,
                  count=1)


def unescaped(doc: dict) -> str:
    """A page from a careless renderer: model names pasted in raw, no policy."""
    rows = "".join(f"<tr><td>{name}</td></tr>" for name in doc["models"])
    return f"<!DOCTYPE html><html><body><table>{rows}</table></body></html>"


# --------------------------------------------------------------------------- content


def test_every_model_score_and_interval_is_in_the_dom(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    assert browser.table_problems(doc, *shown(desktop)) == []
    load(desktop, without_row(page, 2))
    problems = browser.table_problems(doc, *shown(desktop))
    assert any(repr(doc["models"][2]) in p and "on 0 rows" in p for p in problems)


def test_a_misstated_number_is_caught(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    header, rows = shown(desktop)
    col = header.index("score")
    rows[0][col] = f"{float(rows[0][col]) + 0.02:.2f}"
    assert len(browser.table_problems(doc, header, rows)) == 1


def test_clicking_a_header_sorts_the_rows_and_again_reverses(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    best_first = [doc["models"][i] for i in html_page.best_first(doc["score"])]
    header = browser.header_labels(desktop)

    def click(label):
        desktop.execute_script("document.querySelectorAll('#leaderboard thead th')"
                               "[arguments[0]].querySelector('button').click();",
                               header.index(label))
        return [row[header.index("model")] for row in browser.table_rows(desktop)]

    assert [row[1] for row in browser.table_rows(desktop)] == best_first
    by_n = sorted(range(len(best_first)), key=lambda k: -doc["n"][doc["models"].index(
        best_first[k])])  # stable: ties keep the first order
    assert click("n") == [best_first[k] for k in by_n]
    ascending = sorted(range(len(best_first)), key=lambda k: doc["n"][doc["models"].index(
        best_first[k])])
    assert click("n") == [best_first[k] for k in ascending]
    assert click("model") == sorted(doc["models"])
    assert click("model") == sorted(doc["models"], reverse=True)


def test_pairwise_matrix_counts_the_real_differences(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    alpha = doc["settings"]["alpha"]

    def count(key):
        return sum(p[key] is not None and p[key] < alpha for p in doc["pairwise"])

    summary = desktop.find_element("id", "pair-summary")
    assert int(summary.get_attribute("data-real")) == count("p_max_t")
    assert int(summary.get_attribute("data-total")) == len(doc["pairwise"])
    desktop.find_element("css selector", "input[value=p_holm]").click()
    assert int(summary.get_attribute("data-real")) == count("p_holm")


def test_downloads_hold_the_table_and_the_document(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    json_href = desktop.find_element("id", "download-json").get_attribute("href")
    csv_href = desktop.find_element("id", "download-csv").get_attribute("href")
    assert json_href.startswith("blob:") and csv_href.startswith("data:text/csv")
    embedded = desktop.execute_script(
        "return document.getElementById('winrate-data').textContent;")
    assert json.loads(embedded) == html_page.page_numbers(doc)  # 12 significant digits


# --------------------------------------------------------------------------- safety


def test_no_console_error_and_no_request(desktop, load, hostile):
    load(desktop, hostile[1])
    assert browser.console_errors(desktop) == []
    assert browser.resource_requests(desktop) == []
    assert browser.blocked_loads(desktop) == []


def test_policy_blocks_an_injected_remote_image(desktop, load, hostile, server):
    Counter.hits.clear()
    image = f'<img id="remote" src="{server}/pixel.gif" alt="">'
    load(desktop, hostile[1].replace("<main>", "<main>" + image, 1))
    desktop.execute_script("return document.getElementById('remote').complete;")
    assert any("/pixel.gif" in url for url in browser.blocked_loads(desktop))
    assert Counter.hits == []  # refused before any request was sent
    # without the policy the same image is requested: the checks see it
    open_page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", hostile[1])
    load(desktop, open_page.replace("<main>", "<main>" + image, 1))
    desktop.execute_script("return new Promise(function (done) { var i = "
                           "document.getElementById('remote'); i.complete ? done() : "
                           "i.addEventListener('load', done); });")
    assert Counter.hits == ["/pixel.gif"]
    assert [url for url in browser.resource_requests(desktop) if "/pixel.gif" in url]


def test_hostile_names_are_shown_as_text_and_run_nothing(desktop, load, hostile):
    doc, page = hostile
    load(desktop, page)
    assert browser.payload_ran(desktop) is None
    models = {row[1] for row in browser.table_rows(desktop)}
    assert set(HOSTILE) <= models
    notes = desktop.find_element("id", "notes").text
    assert '"><img src=x onerror="window.__pwned=2">' in notes
    load(desktop, unescaped(doc))
    assert browser.payload_ran(desktop) is not None  # the check sees a script that ran


def test_an_injected_inline_script_does_not_run_under_the_policy(desktop, load, hostile):
    load(desktop, hostile[1].replace("<main>", "<main><script>window.__pwned=9</script>", 1))
    assert browser.payload_ran(desktop) is None
    assert browser.blocked_loads(desktop)  # refused as an inline script without its hash


# --------------------------------------------------------------------------- layout


def test_screenshots_are_not_blank(desktop, phone, load, hostile, tmp_path):
    for driver in (desktop, phone):
        load(driver, hostile[1])
        assert browser.pixel_spread(browser.screenshot(driver, tmp_path / "shot.png")) > 0.05
    load(desktop, "<!DOCTYPE html><html><body></body></html>")
    assert browser.pixel_spread(browser.screenshot(desktop, tmp_path / "blank.png")) == 0


def test_150_models_fit_a_phone_and_the_table_scrolls_in_its_box(phone, load):
    doc = document(wide_analysis())
    page = html_page.render(doc, "1")
    load(phone, page)
    assert phone.execute_script("return document.documentElement.clientWidth;") == 390
    assert browser.horizontal_overflow(phone) == 0
    assert browser.console_errors(phone) == []
    assert browser.table_problems(doc, *shown(phone)) == []
    box = phone.execute_script("var b = document.querySelector('#board .scroll');"
                               "return [b.scrollWidth, b.clientWidth];")
    assert box[0] > box[1]  # the wide table scrolls inside its box
    load(phone, page.replace("<main>", '<main><div id="wide"></div>', 1))
    phone.execute_script("var w = document.getElementById('wide'); w.style.width = '800px';"
                         "w.style.height = '1px';")
    assert browser.horizontal_overflow(phone) > 0


# ------------------------------------------------- layout (issue 39): metadata, names, sizes

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


@pytest.fixture
def place(tmp_path):
    """Open a page (no console error) and return where its leaderboard sits
    (:func:`browser.layout`)."""
    def open_in(driver, page: str):
        path = tmp_path / "placed.html"
        path.write_text(page, encoding="utf-8")
        browser.console_errors(driver)
        browser.open_page(driver, path)
        assert browser.console_errors(driver) == []
        return browser.layout(driver)

    return open_in


# --------------------------------------------------------------------------- layout: phone


def test_first_row_is_on_a_phones_first_screen(phone, place, wide):
    shown = place(phone, wide[1])
    assert 0 <= shown["row_top"] < shown["row_bottom"] <= shown["viewport"] == 844
    assert browser.horizontal_overflow(phone) == 0
    # the same check on a page whose top fills the screen: it sees the row is not there
    phone.execute_script("document.body.insertAdjacentHTML('afterbegin', "
                         "'<div id=\"tall\"></div>');"
                         "document.getElementById('tall').style.height = '900px';")
    assert browser.layout(phone)["row_top"] > 844


def test_long_similar_names_are_shown_whole_and_never_read_the_same(phone, desktop, place,
                                                                    wide):
    doc, page = wide
    for driver in (phone, desktop):
        shown = place(driver, page)
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


def test_interval_columns_scroll_into_reach_with_the_model_column_kept(phone, place, wide):
    place(phone, wide[1])
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


# --------------------------------------------------------------------------- layout: desktop


def test_default_table_fits_1280_and_more_columns_adds_the_rest(desktop, place, wide):
    shown = place(desktop, wide[1])
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


def test_search_filters_rows_by_name_and_metadata(desktop, place, wide):
    doc, page = wide
    place(desktop, page)
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


def test_metadata_from_a_file_is_text_in_the_browser(desktop, place):
    doc = document(hostile_analysis())
    meta = from_json(json.dumps([{"model": m, "organisation": HOSTILE[k],
                                  "flags": [HOSTILE[-1 - k]]}
                                 for k, m in enumerate(doc["models"][:5])]))
    with notes.gathered():
        place(desktop, html_page.render(doc, "1", meta=meta))
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


def test_header_counts_ranked_models_not_the_baseline(desktop, place):
    import winrate
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=30, n_judges=1),
                                 seed=5).frame()
    with notes.gathered():
        doc = document(winrate.analyze(frame, baseline="model-00", cluster="prompt"))
    place(desktop, html_page.render(doc, "1"))
    lede = desktop.find_element("css selector", "p.lede").text
    assert lede.startswith("4 models ranked, ") and "model-00 (the reference" in lede
    assert len(browser.table_rows(desktop)) == 4


def test_category_tabs_switch_boards_and_search_each(desktop, phone, place):
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
    place(desktop, page)

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
    shown = place(phone, page)
    assert shown["row_bottom"] <= shown["viewport"] and browser.horizontal_overflow(phone) == 0


def test_pointing_at_a_matrix_cell_names_both_models(desktop, place, wide):
    from selenium.webdriver.common.action_chains import ActionChains

    doc, page = wide
    place(desktop, page)
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


# --------------------------------------------------------------------------- builders' pages


@pytest.fixture(scope="module")
def builder_pages():
    """The pages of ``winrate diff`` (a change column) and ``winrate judges`` (a judges
    section), from tests/test_html_builders.py's release pair and judged log."""
    import warnings

    from tests.test_html_builders import release_pair
    from tests.test_judges import simulated
    from winrate.diff import diff_releases
    from winrate.judges import audit_judges

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = diff_releases(*release_pair(), cluster="prompt+judge")
        audit = audit_judges(simulated(2, n_prompts=12, own=0.6, both_orders=True))
        return [(result.page_document(), html_page.render(result.page_document(), "9.9.9"))
                for result in (found, audit)]


def test_builders_pages_show_their_parts_clean_and_sort_by_change(desktop, phone, load,
                                                                  builder_pages):
    (diff_doc, diff_page), (judges_doc, judges_page) = builder_pages
    for driver in (desktop, phone):
        for doc, page in builder_pages:
            load(driver, page)
            assert browser.console_errors(driver) == []
            assert browser.resource_requests(driver) == []
            assert browser.horizontal_overflow(driver) == 0
            assert browser.table_problems(doc, *shown(driver)) == []
    load(desktop, judges_page)
    assert desktop.find_element("id", "judges").is_displayed()
    load(desktop, diff_page)
    header = browser.header_labels(desktop)
    where = browser.layout(desktop)
    assert where["box_scroll"] <= where["box_client"]  # the change column fits 1280 px
    change = {c["model"]: c["change"] for c in diff_doc["changes"]["changes"]}
    desktop.execute_script("document.querySelectorAll('#leaderboard thead th')"
                           "[arguments[0]].querySelector('button').click();",
                           header.index("change"))
    models = [row[header.index("model")] for row in browser.table_rows(desktop)]
    shared = [m for m in models if m in change]
    assert shared == sorted(change, key=lambda m: -change[m])  # largest change first
    assert models[len(shared):] == diff_doc["changes"]["added"]  # no change: sorted last


# --------------------------------------------------------------------------- real data


@pytest.mark.skipif(not os.environ.get("WINRATE_DATA"), reason="the committed example pages "
                    "are checked with the real data (WINRATE_DATA)")
@pytest.mark.parametrize("name", ["chatbot_arena", "alpaca_eval", "mmlu_pro_eda"])
def test_committed_example_opens_clean(name, desktop, phone):
    path = ROOT / "docs" / "html" / f"{name}.html"
    doc = json.loads(re.search(r'<script id="winrate-data" type="application/json">(.*?)'
                               r"</script>", path.read_text(encoding="utf-8"), re.S).group(1))
    for driver in (desktop, phone):
        browser.console_errors(driver)
        browser.open_page(driver, path)
        assert browser.console_errors(driver) == []
        assert browser.resource_requests(driver) == []
        assert browser.horizontal_overflow(driver) == 0
        if doc["schema"] == "winrate.leaderboard/1":
            assert browser.table_problems(doc, *shown(driver)) == []
            where = browser.layout(driver)
            assert where["row_bottom"] <= where["viewport"]  # a row on the first screen
            assert where["clipped"] == []  # every name whole
            if driver is desktop:
                assert where["box_scroll"] <= where["box_client"]  # fits 1280 px
        else:
            assert sorted(row[1] for row in browser.table_rows(driver)) == sorted(doc["models"])
