"""FastChat's Bradley-Terry ratings and row-bootstrap intervals on a battles CSV (runs in the
FastChat venv of ``run.py``; imports nothing from winrate).

Upstream code called: ``fastchat.serve.monitor.elo_analysis.compute_elo_mle_with_tie`` (the
MLE on the full log) and ``get_bootstrap_result`` (``num_round`` refits on
``battles.sample(frac=1, replace=True)``, i.e. battles resampled i.i.d.) with numpy's global
seed fixed first, as FastChat's leaderboard does it (``report_elo_analysis_results``).
``elo_analysis`` imports three FastChat modules at the top that the two functions never call
(``model_registry`` pulls in torch and transformers, GBs); they are replaced by empty
stand-ins so the module loads with numpy, pandas, scikit-learn, plotly and tqdm only.

Usage: ``python fastchat_peer.py BATTLES.csv OUT_PREFIX SEED ROUNDS``; writes
``OUT_PREFIX.csv`` (model, rating, bootstrap SD, 2.5% and 97.5% quantiles) and
``OUT_PREFIX_draws.csv`` (the bootstrap ratings, one row per round).
"""

import sys
import types

import numpy as np
import pandas as pd

for name, attr in (("fastchat.model.model_registry", "get_model_info"),
                   ("fastchat.serve.monitor.basic_stats", "get_log_files"),
                   ("fastchat.serve.monitor.clean_battle_data", "clean_battle_data")):
    stub = types.ModuleType(name)
    setattr(stub, attr, None)
    sys.modules[name] = stub

from fastchat.serve.monitor import elo_analysis  # noqa: E402


def main(battles_csv, prefix, seed, rounds):
    battles = pd.read_csv(battles_csv, dtype=str, keep_default_na=False)
    rating = elo_analysis.compute_elo_mle_with_tie(battles)
    np.random.seed(int(seed))  # noqa: NPY002 -- upstream samples from the global state
    draws = elo_analysis.get_bootstrap_result(battles, elo_analysis.compute_elo_mle_with_tie,
                                              num_round=int(rounds))
    models = sorted(rating.index)
    draws = draws[models]
    out = pd.DataFrame({"model": models, "rating": rating[models].to_numpy(),
                        "bootstrap_sd": draws.std(ddof=1).to_numpy(),
                        "q025": draws.quantile(0.025).to_numpy(),
                        "q975": draws.quantile(0.975).to_numpy()})
    out.to_csv(f"{prefix}.csv", index=False, float_format="%.10g", lineterminator="\n")
    draws.to_csv(f"{prefix}_draws.csv", index=False, float_format="%.7g", lineterminator="\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
