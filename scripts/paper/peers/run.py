#!/usr/bin/env python
"""Run the leaderboards' own code (FastChat, arena-rank, AlpacaEval) on the bundled data,
each in its own virtual environment, and write their estimates and intervals to
``paper/peers/`` (committed; ``scripts/paper/peer_comparison.py`` reads them back in
``make paper``).

Each peer pins other versions of numpy/pandas/jax than winrate, so each gets a venv under
``--cache`` (default ``~/.cache/winrate-peers/<peer>``), outside the repository. A venv is
installed from the committed exact freeze ``paper/peers/<peer>_requirements.txt`` when it
exists (``pip install --no-deps -r``), else from :data:`PEERS`' top-level pins, after which the
freeze is written. The peer scripts (``*_peer.py`` next to this file) import nothing from
winrate: winrate (this interpreter) only exports the logs as plain CSV battles/counts.

Outputs (``paper/peers/``):

* ``fastchat_<dataset>.csv`` (model, rating, bootstrap SD, 2.5%/97.5% quantiles) and
  ``fastchat_<dataset>_draws.csv`` (the bootstrap ratings) for QLoRA and PRD;
* ``arena_rank_<dataset>.csv`` (model, rating, sandwich SE, 95% interval) for QLoRA, PRD
  and the Chatbot Arena counts;
* ``alpaca_eval_alpaca_eval.csv`` (per model: win rate, standard error, counts);
* ``manifest.json`` (per run: peer, package and version, seed, rounds, input, files) and
  ``README.md`` (the command and how long each run took).

Usage: ``WINRATE_DATA=/work/shared/data python scripts/paper/peers/run.py [--peers ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = ROOT / "paper" / "peers"
FASTCHAT_SEED = 42
FASTCHAT_ROUNDS = 3000
BATTLE_DATASETS = ("qlora", "prd")
WINNER = {1.0: "model_a", 0.0: "model_b", 0.5: "tie"}  # FastChat's / arena-rank's labels


@dataclass(frozen=True)
class Peer:
    """A peer: its venv name, the PyPI package whose version is reported, the top-level
    pins (``no_deps``: installed without dependencies, see the peer script) and the extra
    packages its functions import."""

    name: str
    package: str
    pins: tuple[str, ...]
    no_deps: tuple[str, ...] = ()


PEERS = {
    # fschat's own dependency list is a web server's; elo_analysis needs only these
    "fastchat": Peer("fastchat", "fschat",
                     ("numpy==1.26.4", "pandas==2.2.3", "scikit-learn==1.4.2", "plotly==5.24.1",
                      "pytz==2024.2", "tqdm==4.67.1"), ("fschat==0.2.36",)),
    "arena_rank": Peer("arena_rank", "arena-rank", ("arena-rank==0.1.1",)),
    "alpaca_eval": Peer("alpaca_eval", "alpaca_eval", ("alpaca-eval==0.6.6",)),
}


def pip(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                   check=True)


def ensure_venv(peer: Peer, cache: Path) -> Path:
    """The peer's venv, created and installed on first use (see the module docstring)."""
    venv = cache / peer.name
    freeze = OUT / f"{peer.name}_requirements.txt"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        if freeze.exists():
            pip(venv, "--no-deps", "-r", str(freeze))
        else:
            pip(venv, *peer.pins)
            if peer.no_deps:
                pip(venv, "--no-deps", *peer.no_deps)
    if not freeze.exists():
        listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze",
                                 "--exclude-editable"], check=True, capture_output=True,
                                text=True).stdout
        freeze.write_text(listed, encoding="utf-8")
    return venv


def package_version(venv: Path, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True,
                          capture_output=True, text=True).stdout.strip()


def read_quiet(name: str):
    from winrate.errors import WinrateWarning
    from winrate.io.datasets import read_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WinrateWarning)
        return read_dataset(name, progress=False)


def export_battles(name: str, path: Path) -> Path:
    """One CSV row per comparison: ``model_a, model_b, winner`` (model_a / model_b / tie)."""
    log = read_quiet(name)
    if not np.isin(log.score, list(WINNER)).all() or not (log.weight == 1).all():
        raise ValueError(f"{name}: battles need unit-weight outcomes in {{0, 0.5, 1}}")
    models = np.asarray(log.models, dtype=object)
    frame = pd.DataFrame({"model_a": models[log.model_a], "model_b": models[log.model_b],
                          "winner": pd.Series(log.score).map(WINNER)})
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def export_counts(name: str, path: Path) -> Path:
    """Aggregated counts: ``model_a, model_b, outcome, count``."""
    log = read_quiet(name)
    models = np.asarray(log.models, dtype=object)
    pd.DataFrame({"model_a": models[log.model_a], "model_b": models[log.model_b],
                  "outcome": log.score, "count": log.weight}).to_csv(
        path, index=False, lineterminator="\n")
    return path


def timed(command: list[str]) -> float:
    start = time.time()
    subprocess.run(command, check=True)
    return time.time() - start


def run_fastchat(venv: Path, inputs: Path) -> list[dict]:
    runs = []
    for name in BATTLE_DATASETS:
        battles = export_battles(name, inputs / f"{name}_battles.csv")
        prefix = OUT / f"fastchat_{name}"
        seconds = timed([str(venv / "bin" / "python"), str(HERE / "fastchat_peer.py"),
                         str(battles), str(prefix), str(FASTCHAT_SEED), str(FASTCHAT_ROUNDS)])
        runs.append({"dataset": name, "seed": FASTCHAT_SEED, "rounds": FASTCHAT_ROUNDS,
                     "method": "compute_elo_mle_with_tie + get_bootstrap_result "
                               "(battles resampled i.i.d.)",
                     "files": [f"{prefix.name}.csv", f"{prefix.name}_draws.csv"],
                     "seconds": seconds})
    return runs


def run_arena_rank(venv: Path, inputs: Path) -> list[dict]:
    jobs = [(name, "battles", inputs / f"{name}_battles.csv") for name in BATTLE_DATASETS]
    jobs.append(("chatbot_arena", "counts", export_counts("chatbot_arena",
                                                          inputs / "chatbot_arena_counts.csv")))
    runs = []
    for name, kind, path in jobs:
        if kind == "battles" and not path.exists():
            export_battles(name, path)
        out = OUT / f"arena_rank_{name}.csv"
        seconds = timed([str(venv / "bin" / "python"), str(HERE / "arena_rank_peer.py"),
                         kind, str(path), str(out)])
        runs.append({"dataset": name, "seed": None, "rounds": None,
                     "method": "BradleyTerry.compute_ratings_and_cis(ci_method='sandwich')",
                     "files": [out.name], "seconds": seconds})
    return runs


def run_alpaca_eval(venv: Path, inputs: Path) -> list[dict]:
    folder = Path(os.environ["WINRATE_DATA"]) / "alpaca_eval" / "weighted_alpaca_eval_gpt4_turbo"
    out = OUT / "alpaca_eval_alpaca_eval.csv"
    seconds = timed([str(venv / "bin" / "python"), str(HERE / "alpaca_eval_peer.py"),
                     str(folder), str(out)])
    return [{"dataset": "alpaca_eval", "seed": None, "rounds": None,
             "method": "metrics.get_winrate per model (win_rate, standard_error)",
             "files": [out.name], "seconds": seconds}]


NOT_RUN = (
    "Not run, and why:", "",
    "- FastChat's full dependency list (`fschat` 0.2.36 requires a web server stack, and "
    "`elo_analysis` imports `fastchat.model.model_registry`, which pulls in torch, "
    "transformers and accelerate, about 6 GB with CUDA wheels) is not installed: "
    "`fastchat_peer.py` puts empty stand-ins for the three FastChat modules that "
    "`elo_analysis` imports but `compute_elo_mle_with_tie` and `get_bootstrap_result` never "
    "call. The rating and bootstrap code that runs is upstream's, unchanged.",
    "- AlpacaEval's length-controlled win rate (`get_length_controlled_winrate`): its GLM "
    "needs the per-instruction difficulty that `glm_winrate._get_instructions_difficulty` "
    "downloads from the Hugging Face dataset `tatsu-lab/alpaca_eval` at run time; it is not "
    "in the bundled data, so only `get_winrate` (win rate and standard error) runs.",
    "- arena-hard-auto is not on PyPI: its `show_result.py` was read (per-model bootstrap of "
    "the mean score against the baseline, 100 unseeded rounds over game rows, 5%-95% "
    "percentile intervals), not run; no formula of it is re-implemented here.",
)

RUNNERS = {"fastchat": run_fastchat, "arena_rank": run_arena_rank,
           "alpaca_eval": run_alpaca_eval}


def write_readme(manifest: list[dict]) -> None:
    lines = ["# Peer leaderboards' own code on the bundled data", "",
             "Generated by `scripts/paper/peers/run.py` (see its docstring); read by the "
             "`peers` step of `make paper` (`scripts/paper/peer_comparison.py`). Regenerate:",
             "", "```",
             "WINRATE_DATA=/work/shared/data OPENBLAS_NUM_THREADS=1 nice -n 10 \\",
             "    .venv/bin/python scripts/paper/peers/run.py", "```", "",
             "Each peer runs in its own venv (`~/.cache/winrate-peers/<peer>`), installed from "
             "`<peer>_requirements.txt` (exact versions). Wall-clock time of each run on the "
             "last regeneration (venv creation not included):", "",
             "| peer | version | dataset | seed | rounds | seconds |", "|---|---|---|---|---|---|"]
    for run in manifest:
        lines.append(f"| {run['peer']} | {run['version']} | {run['dataset']} | "
                     f"{run['seed'] if run['seed'] is not None else '-'} | "
                     f"{run['rounds'] if run['rounds'] is not None else '-'} | "
                     f"{run['seconds']:.1f} |")
    lines += ["", *NOT_RUN]
    (OUT / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=list(PEERS))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "winrate-peers")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    inputs = args.cache / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    path = OUT / "manifest.json"
    manifest = [r for r in (json.loads(path.read_text()) if path.exists() else [])
                if r["peer"] not in args.peers]
    for name in args.peers:
        peer = PEERS[name]
        venv = ensure_venv(peer, args.cache)
        version = package_version(venv, peer.package)
        for run in RUNNERS[name](venv, inputs):
            manifest.append({"peer": name, "package": peer.package, "version": version, **run})
            print(f"[peers] {name} {run['dataset']}: {run['seconds']:.1f} s", flush=True)
    manifest.sort(key=lambda r: (r["peer"], r["dataset"]))
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    write_readme(manifest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
