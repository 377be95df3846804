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

Model metadata (``NAME-models.csv``, the page's ``--models-meta``) is written here too, from
:data:`ORGANISATIONS` (the maker of a model by its name's first word, as the model cards
say; a name no prefix matches has none); AlpacaEval's rows link to the model's results
folder upstream, name the prompt variant (``_concise``, ``_verbose``) in a column and flag
``NullModel``, a submission that gives one constant answer to every instruction (Zheng et
al. 2024, "Cheating automatic LLM benchmarks"), as ``null model``.

Screenshots (``NAME-desktop.png`` at 1280 x 900 and ``NAME-phone.png`` at 390 x 844 CSS
pixels, the first screen of each leaderboard page) are taken in headless Chromium
(:mod:`browser`) when it is installed; they need not be byte-identical across runs.

Usage: ``python scripts/html_examples.py [--no-screenshots] [--rerender]`` (needs
``WINRATE_DATA``; ``--rerender`` renders each page again from the document it embeds,
without the data, after a change to the page and not to the analysis).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import winrate
from winrate.report import html_page

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "html"
_JOINT = {"joint": winrate.Joint(simultaneous=True, ranks=True, pairwise=True)}


#: A model's maker by the start of its name (lower case; the longest matching prefix wins).
ORGANISATIONS = {
    "gpt": "OpenAI", "chatgpt": "OpenAI", "text_davinci": "OpenAI", "gpt35": "OpenAI",
    "gpt4": "OpenAI", "claude": "Anthropic", "gemini": "Google", "gemma": "Google",
    "bard": "Google", "palm": "Google", "llama": "Meta", "codellama": "Meta",
    "humpback": "Meta", "llama2-70b-steerlm": "NVIDIA", "nemotron": "NVIDIA",
    "mistral": "Mistral AI", "mixtral": "Mistral AI", "qwen": "Alibaba", "phi-": "Microsoft",
    "wizardlm": "Microsoft", "vicuna": "LMSYS", "fastchat": "LMSYS", "alpaca-7b": "Stanford",
    "alpaca-13b": "Stanford", "alpaca-farm": "Stanford", "falcon": "TII",
    "chatglm": "Zhipu AI", "glm-": "Zhipu AI", "yi-": "01.AI", "deepseek": "DeepSeek",
    "command-r": "Cohere", "reka": "Reka", "dbrx": "Databricks", "dolly": "Databricks",
    "mpt": "MosaicML", "olmo": "AllenAI", "tulu": "AllenAI", "oasst": "OpenAssistant",
    "pythia": "EleutherAI", "stablelm": "Stability AI", "openchat": "OpenChat",
    "openhermes": "Nous Research", "nous-hermes": "Nous Research", "zephyr": "Hugging Face",
    "koala": "UC Berkeley", "starling": "UC Berkeley", "snowflake": "Snowflake",
    "solar": "Upstage", "pplx": "Perplexity", "athene": "Nexusflow", "jina": "Jina AI",
    "openbuddy": "OpenBuddy", "ultralm": "OpenBMB", "rwkv": "RWKV", "guanaco": "UW",
    "gpt4all": "Nomic AI", "stripedhyena": "Together AI",
}
ALPACA_RESULTS = "https://github.com/tatsu-lab/alpaca_eval/tree/main/results/"


@dataclass(frozen=True)
class Example:
    """One page: a bundled dataset, how it is analysed, the page's title and description,
    how its intervals are written, whether it has model metadata (``NAME-models.csv``)."""

    title: str
    dataset: str
    options: dict = field(default_factory=dict)
    eda: bool = False
    screenshots: bool = True
    description: str | None = None
    ci_style: str = "brackets"
    meta: bool = False


EXAMPLES = {
    "chatbot_arena": Example(
        "Chatbot Arena leaderboard", "chatbot_arena", {"model": "bt", **_JOINT},
        description="Chatbot Arena's public battle counts up to 14 August 2024 (129 models, "
                    "as bundled with leaderbot 0.4.3), ranked by Bradley-Terry on the Elo "
                    "scale with the mean rating at 1000. Organisations are winrate's "
                    "annotation by model name.",
        ci_style="plusminus", meta=True),
    "alpaca_eval": Example(
        "AlpacaEval 2.0 leaderboard", "alpaca_eval",
        {"baseline": "gpt4_1106_preview", "cluster": "prompt", **_JOINT},
        description="Each model's answers to AlpacaEval's 805 instructions, judged against "
                    "the baseline gpt4_1106_preview's by weighted_alpaca_eval_gpt4_turbo. "
                    "NullModel gives one constant answer to every instruction (Zheng et al. "
                    "2024): a high win rate here shows the judge can be gamed.",
        meta=True),
    "mmlu_pro_eda": Example("MMLU-Pro exploratory report", "mmlu_pro", eda=True,
                            screenshots=False),
}


def organisation(model: str) -> str:
    """The maker of ``model`` by :data:`ORGANISATIONS` (its longest matching prefix), or ''."""
    name = model.lower()
    found = [prefix for prefix in ORGANISATIONS if name.startswith(prefix)]
    return ORGANISATIONS[max(found, key=len)] if found else ""


def models_meta_csv(name: str, models: list[str]) -> str:
    """The example's model metadata as CSV, models in name order (module docstring)."""
    alpaca = name == "alpaca_eval"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["model", "organisation", "url", "flags", "variant"] if alpaca
                    else ["model", "organisation"])
    for model in sorted(models):
        row = [model, organisation(model)]
        if alpaca:
            variant = next((v for v in ("concise", "verbose") if model.endswith(f"_{v}")), "")
            row += [ALPACA_RESULTS + model, "null model" if model == "NullModel" else "",
                    variant]
        writer.writerow(row)
    return buffer.getvalue()


def meta_path(name: str) -> Path:
    return OUT / f"{name}-models.csv"


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


def embedded_document(path: Path) -> dict:
    """The JSON document a page embeds (its ``winrate-data`` script element)."""
    import json
    import re

    found = re.search(r'<script id="winrate-data" type="application/json">(.*?)</script>',
                      path.read_text(encoding="utf-8"), re.S)
    return json.loads(found.group(1))


def render(example: Example, doc: dict, version: str | None = None, name: str = "") -> str:
    """The example's page of ``doc``, with its metadata file when it has one."""
    from winrate.report.models_meta import read_models_meta

    meta = read_models_meta(meta_path(name)) if example.meta else None
    return html_page.render(doc, version or html_page.installed_version(), example.title,
                            description=example.description, meta=meta,
                            ci_style=example.ci_style)


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
    parser.add_argument("--rerender", action="store_true",
                        help="render the pages again from the documents they embed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import browser

    reason = None if args.no_screenshots else browser.missing()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, example in EXAMPLES.items():
        path = OUT / f"{name}.html"
        doc = embedded_document(path) if args.rerender else document(example)
        if example.meta:
            meta_path(name).write_text(models_meta_csv(name, doc["models"]), encoding="utf-8",
                                       newline="\n")
            print(f"wrote {meta_path(name).relative_to(ROOT)}")
        path.write_text(render(example, doc, name=name), encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
        if example.screenshots and not args.no_screenshots and reason is None:
            for shot in take_screenshots(name):
                print(f"wrote {shot.relative_to(ROOT)}")
    if reason:
        print(f"screenshots not taken: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
