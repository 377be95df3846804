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
    """Every resource the page requested (Resource Timing): none for a self-contained page."""
    return driver.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });")


def blocked_loads(driver) -> list[str]:
    """Loads the Content-Security-Policy refused, as recorded by the listener the page
    test installs before loading (:data:`RECORD_VIOLATIONS`)."""
    return driver.execute_script("return window.__violations || [];")


def table_rows(driver, table_id: str = "leaderboard") -> list[list[str]]:
    """The text of every body cell of a table, row by row, in the order shown."""
    return driver.execute_script(
        "var t = document.getElementById(arguments[0]); if (!t) { return []; }"
        "return Array.prototype.map.call(t.tBodies[0].rows, function (r) {"
        "  return Array.prototype.map.call(r.cells, function (c) { return c.textContent; });"
        "});", table_id)


def header_labels(driver, table_id: str = "leaderboard") -> list[str]:
    return driver.execute_script(
        "var t = document.getElementById(arguments[0]);"
        "return Array.prototype.map.call(t.tHead.rows[0].cells, function (c) {"
        "  var b = c.querySelector('button'); return b ? b.textContent : ''; });", table_id)


def horizontal_overflow(driver) -> int:
    """How far the page is wider than the viewport (CSS pixels; 0 when it fits)."""
    return driver.execute_script(
        "return Math.max(0, document.documentElement.scrollWidth - window.innerWidth);")


def pixel_spread(png: bytes) -> float:
    """Standard deviation of the screenshot's grey levels (0 for a blank page)."""
    import io

    import numpy as np
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return float(np.asarray(pixels, float).mean(axis=-1).std())
