"""AlpacaEval's win rate against its baseline and the standard error it publishes (runs in
the alpaca-eval venv of ``run.py``; imports nothing from winrate).

Upstream code called: ``alpaca_eval.metrics.get_winrate`` on each model's
``annotations.json`` records as stored (one gzipped JSON list per model, named by the model as
upstream's ``results/<model>/`` folder names it). It returns ``win_rate`` (mean of
``preference - 1``, times 100), ``standard_error`` (the SEM of the same per-instruction values,
times 100), ``discrete_win_rate`` and the counts.

The length-controlled win rate (``get_length_controlled_winrate``) is not run: its GLM needs
upstream's per-instruction difficulty, which ``glm_winrate._get_instructions_difficulty``
downloads from the Hugging Face dataset ``tatsu-lab/alpaca_eval`` at run time and which is
not part of the bundled data.

Usage: ``python alpaca_eval_peer.py ANNOTATIONS_DIR OUT.csv``.
"""

import gzip
import json
import sys
from pathlib import Path

import pandas as pd
from alpaca_eval.metrics import get_winrate

COLUMNS = ("win_rate", "standard_error", "discrete_win_rate", "n_wins", "n_wins_base",
           "n_draws", "n_total")


def main(folder, out_csv):
    rows = []
    for path in sorted(Path(folder).glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            records = json.load(handle)
        metrics = get_winrate(records)
        rows.append({"model": path.name.removesuffix(".json.gz"),
                     **{key: metrics[key] for key in COLUMNS}})
    pd.DataFrame(rows).to_csv(out_csv, index=False, float_format="%.12g", lineterminator="\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
