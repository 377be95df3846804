"""The web page in a real browser: headless Chromium from Debian's packages, driven by
selenium (scripts/browser.py). Without the packages the module skips, naming them.

Each check is a function of scripts/browser.py that returns what is wrong; every kind of
check is also run on a deliberately broken page, to show it can fail: a page that misses a
model, one that loads a remote resource (a local HTTP server counts the requests: the
independent oracle of "no request"), one that runs a script from a model name, a blank
page, and a page wider than a phone.
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

from tests.html_docs import HOSTILE, document, hostile_analysis, wide_analysis  # noqa: E402
from winrate.report import html_page  # noqa: E402


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
    assert json.loads(embedded) == doc


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
