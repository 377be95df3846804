"""Headless Chromium for the web page's tests and example screenshots.

Only Debian's packaged browser is used (``apt-get install chromium chromium-driver``) with
selenium from PyPI, never a tool that downloads a browser of its own: the driver and the
browser are given by path, so selenium's driver manager is not consulted.
:func:`missing` names what is not installed; the checkers below read a loaded page and
return what is wrong with it (an empty list when nothing is), so a test can also show that
they catch a broken page.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import tempfile
from pathlib import Path

#: Chromium flags that work in a container as root, with no background network traffic.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars")
BROWSER, DRIVER = "chromium", "chromedriver"
#: Desktop and phone viewports (CSS pixels).
DESKTOP, PHONE = (1280, 900), (390, 844)


def missing() -> str | None:
    """Why the browser tests cannot run (the packages to install), or None if they can."""
    absent = [package for package, found in (
        ("Debian package chromium", shutil.which(BROWSER)),
        ("Debian package chromium-driver", shutil.which(DRIVER)),
        ("Python package selenium", importlib.util.find_spec("selenium"))) if not found]
    return f"not installed: {', '.join(absent)}" if absent else None


@contextlib.contextmanager
def chromium(size: tuple[int, int] = DESKTOP):
    """A headless Chromium (a fresh profile, deleted after) at window ``size`` whose
    console messages are kept for :func:`console_errors`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="winrate-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which(BROWSER)
        for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(shutil.which(DRIVER)))
        try:
            set_viewport(driver, size)
            yield driver
        finally:
            driver.quit()


def set_viewport(driver, size: tuple[int, int]) -> None:
    """The page's viewport exactly ``size`` (a window's size includes no chrome headless,
    but the device metrics override makes it exact, mobile layout included)."""
    width, height = size
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


def open_page(driver, path) -> None:
    driver.get(Path(path).resolve().as_uri())


def screenshot(driver, path) -> bytes:
    """The viewport as PNG bytes, also written to ``path``."""
    png = driver.get_screenshot_as_png()
    Path(path).write_bytes(png)
    return png


# --------------------------------------------------------------------------- checkers


def console_errors(driver) -> list[str]:
    """The browser console's errors since the last call (SEVERE entries)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE"]


def resource_requests(driver) -> list[str]:
    """Every resource the page tried to load (Resource Timing; a load the policy refused is
    listed too, though nothing was sent): none for a self-contained page."""
    return driver.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });")


def blocked_loads(driver) -> list[str]:
    """Loads the Content-Security-Policy refused, as recorded by the listener the page
    test installs before loading (:data:`RECORD_VIOLATIONS`)."""
    return driver.execute_script("return window.__violations || [];")


def table_rows(driver, table_id: str = "leaderboard", shown: bool = False) -> list[list[str]]:
    """The text of every body cell of a table, row by row, in the order shown (a model
    cell's name without its badges); only the rows not hidden when ``shown``."""
    return driver.execute_script(
        "var t = document.getElementById(arguments[0]), only = arguments[1];"
        "if (!t) { return []; }"
        "var rows = Array.prototype.filter.call(t.tBodies[0].rows, function (r) {"
        "  return !only || !r.hidden; });"
        "return rows.map(function (r) {"
        "  return Array.prototype.map.call(r.cells, function (c) {"
        "    var name = c.querySelector('.name'); return (name || c).textContent; });"
        "});", table_id, shown)


def header_labels(driver, table_id: str = "leaderboard") -> list[str]:
    """Each header cell's column key (``data-key``: rank, model, score, ci, sim, rank_set,
    n, ...), else its button's text, else ''."""
    return driver.execute_script(
        "var t = document.getElementById(arguments[0]);"
        "return Array.prototype.map.call(t.tHead.rows[0].cells, function (c) {"
        "  var b = c.querySelector('button');"
        "  return c.getAttribute('data-key') || (b ? b.textContent : ''); });", table_id)


def layout(driver) -> dict:
    """Where the (first) leaderboard sits in the viewport (CSS pixels): the first body row's top
    and bottom, the viewport's height, the table box's scroll and client widths, and per
    visible model cell whether its content is clipped (scroll width past its box) and the
    text shown."""
    return driver.execute_script(
        "var t = document.querySelector('table.lb');"
        "var row = t.tBodies[0].rows[0].getBoundingClientRect();"
        "var box = t.parentNode;"
        "var cells = Array.prototype.filter.call(t.querySelectorAll('td.model'),"
        "  function (c) { return !c.parentNode.hidden; });"
        "return {row_top: row.top, row_bottom: row.bottom, viewport: window.innerHeight,"
        "  box_scroll: box.scrollWidth, box_client: box.clientWidth,"
        "  clipped: cells.filter(function (c) { return c.scrollWidth > c.clientWidth + 1;"
        "    }).map(function (c) { return c.getAttribute('data-v'); }),"
        "  labels: cells.map(function (c) { return c.querySelector('.name').innerText; })};")


def horizontal_overflow(driver) -> int:
    """How far the page is wider than the viewport (CSS pixels; 0 when it fits). The
    viewport is the root's client width: on a phone, ``innerWidth`` grows with the page."""
    return driver.execute_script("var root = document.documentElement;"
                                 "return Math.max(0, root.scrollWidth - root.clientWidth);")


def pixel_spread(png: bytes) -> float:
    """Standard deviation of the screenshot's grey levels (0 for a blank page)."""
    import io

    import numpy as np
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return float(np.asarray(pixels, float).mean(axis=-1).std())


#: Installed before every page load (:func:`record_violations`): each load the page's
#: Content-Security-Policy refuses is kept in ``window.__violations``.
RECORD_VIOLATIONS = ("window.__violations = [];"
                     "document.addEventListener('securitypolicyviolation', function (e) {"
                     "  window.__violations.push(e.blockedURI || e.violatedDirective); });")


def record_violations(driver) -> None:
    """From the next page load on, keep the loads the policy refused (:func:`blocked_loads`)."""
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                           {"source": RECORD_VIOLATIONS})


def payload_ran(driver) -> object:
    """What a hostile model name's script set (``window.__pwned``), or None if none ran."""
    return driver.execute_script("return window.__pwned === undefined ? null : window.__pwned;")


def _parse_number(shown: str) -> float | None:
    return None if shown == "\u2014" else float(shown.replace(",", ""))


def _parse_interval(shown: str, score: float | None) -> tuple[float | None, float | None]:
    """``[low, high]``, or ``+up/-down`` about ``score`` (the document's, shown scale)."""
    if shown == "\u2014":
        return None, None
    if shown.startswith("+"):
        up, down = shown[1:].split("/-")
        return score - _parse_number(down), score + _parse_number(up)
    low, high = shown.strip("[]").split(", ")
    return _parse_number(low), _parse_number(high)


def table_problems(doc: dict, header: list[str], rows: list[list[str]]) -> list[str]:
    """What the shown leaderboard table misses or misstates against the JSON document
    ``doc``: each model on one row, with its score, clustered interval, simultaneous
    interval and rank set as the document has them, to the shown precision (the scale's
    ``decimals`` of its unit: Elo points to 0.1, percentages to 0.01); a dash exactly where
    the document has null."""
    scale = doc["settings"]["scale"]
    factor, tolerance = scale["factor"], 0.5 * 10.0 ** -scale["decimals"]
    col = {label: j for j, label in enumerate(header)}
    ci, sim = col["ci"], col.get("sim")
    by_model = {}
    for row in rows:
        by_model.setdefault(row[col["model"]], []).append(row)
    problems = [f"{len(rows)} rows for {len(doc['models'])} models"] \
        if len(rows) != len(doc["models"]) else []

    def differs(shown, value) -> bool:
        if value is None or shown is None:
            return (value is None) != (shown is None)
        return abs(shown - factor * value) > tolerance * (1 + 1e-9)

    for i, model in enumerate(doc["models"]):
        found = by_model.get(model, [])
        if len(found) != 1:
            problems.append(f"model {model!r} on {len(found)} rows")
            continue
        row = found[0]
        checks = [("score", _parse_number(row[col["score"]]), doc["score"][i])]
        score = factor * doc["score"][i] if doc["score"][i] is not None else None
        low, high = _parse_interval(row[ci], score)
        checks += [("ci_low", low, doc["ci_low"][i]), ("ci_high", high, doc["ci_high"][i])]
        if doc.get("sim_low") is not None:
            low, high = _parse_interval(row[sim], score) if sim is not None else (None, None)
            checks += [("sim_low", low, doc["sim_low"][i]), ("sim_high", high,
                                                             doc["sim_high"][i])]
        problems += [f"{model!r}: {key} shows {shown}, the document has {value}"
                     for key, shown, value in checks if differs(shown, value)]
        if doc.get("rank_low") is not None:
            expected = (f"{doc['rank_low'][i]}\u2013{doc['rank_high'][i]}"
                        if doc["rank_low"][i] is not None else "\u2014")
            if row[col["rank_set"]] != expected:
                problems.append(f"{model!r}: rank set {row[col['rank_set']]!r}, expected "
                                f"{expected!r}")
    return problems
