"""Regenerate the example web pages in docs/html/ and their screenshots.

Pages (:mod:`winrate.report.html_page`; the same data and version give the same bytes):

* ``chatbot_arena.html``: the bundled Chatbot Arena log, 129 models, Bradley-Terry on the
  Elo scale, with simultaneous intervals, rank sets and all pairwise differences (the log
  has no prompt or judge axis, so the default clustering leaves rows independent and the
  page says so);
* ``alpaca_eval.html``: AlpacaEval 2.0, every model against the baseline
  ``gpt4_1106_preview``, clustered by prompt (``winrate leaderboard --dataset alpaca_eval
  --baseline gpt4_1106_preview --cluster prompt --simultaneous --ranks --pairwise``);
* ``mmlu_pro_eda.html``: the exploratory report of MMLU-Pro (``winrate eda --dataset
  mmlu_pro``): how much clustering by question, subject and category inflates each SE.

Screenshots (``NAME-desktop.png`` at 1280 x 900 and ``NAME-phone.png`` at 390 x 844 CSS
pixels, the first screen of each leaderboard page) are taken in headless Chromium
(:mod:`browser`) when it is installed; they need not be byte-identical across runs.

Usage: ``python scripts/html_examples.py [--no-screenshots]`` (needs ``WINRATE_DATA``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import winrate
from winrate.report import html_page

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "html"
_JOINT = {"joint": winrate.Joint(simultaneous=True, ranks=True, pairwise=True)}


@dataclass(frozen=True)
class Example:
    """One page: a bundled dataset, how it is analysed, the page's title."""

    title: str
    dataset: str
    options: dict = field(default_factory=dict)
    eda: bool = False
    screenshots: bool = True


EXAMPLES = {
    "chatbot_arena": Example("Chatbot Arena leaderboard", "chatbot_arena",
                             {"model": "bt", **_JOINT}),
    "alpaca_eval": Example("AlpacaEval 2.0 leaderboard", "alpaca_eval",
                           {"baseline": "gpt4_1106_preview", "cluster": "prompt", **_JOINT}),
    "mmlu_pro_eda": Example("MMLU-Pro exploratory report", "mmlu_pro", eda=True,
                            screenshots=False),
}


def document(example: Example) -> dict:
    """The JSON document of the example's analysis (or exploratory report)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", winrate.WinrateWarning)
        if example.eda:
            from winrate.eda import explore_dataset, to_dict

            return to_dict(explore_dataset(example.dataset, **example.options))
        from winrate.report.leaderboard import to_dict

        log = winrate.read_dataset(example.dataset, progress=False)
        return to_dict(winrate.analyze(log, **example.options))


def render(example: Example, doc: dict, version: str | None = None) -> str:
    return html_page.render(doc, version or html_page.installed_version(), example.title)


def take_screenshots(name: str) -> list[Path]:
    """The first screen of the page at desktop and phone width."""
    import browser

    shots = []
    for size, tag in ((browser.DESKTOP, "desktop"), (browser.PHONE, "phone")):
        with browser.chromium(size) as driver:
            browser.open_page(driver, OUT / f"{name}.html")
            errors = browser.console_errors(driver)
            if errors:
                raise RuntimeError(f"{name}.html at {size}: console errors {errors}")
            path = OUT / f"{name}-{tag}.png"
            browser.screenshot(driver, path)
            shots.append(path)
    return shots


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-screenshots", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import browser

    reason = None if args.no_screenshots else browser.missing()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, example in EXAMPLES.items():
        path = OUT / f"{name}.html"
        path.write_text(render(example, document(example)), encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
        if example.screenshots and not args.no_screenshots and reason is None:
            for shot in take_screenshots(name):
                print(f"wrote {shot.relative_to(ROOT)}")
    if reason:
        print(f"screenshots not taken: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
