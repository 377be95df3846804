"""arena-rank's Bradley-Terry ratings and sandwich intervals (runs in the arena-rank venv of
``run.py``; imports nothing from winrate).

Upstream code called: ``arena_rank.models.bradley_terry.BradleyTerry(n).
compute_ratings_and_cis(data, ci_method="sandwich")`` with its defaults (scale 400, base 10,
init 1000, ``hessian_reg`` 1e-5). The data are built by upstream's own loader,
``PairDataset.from_pandas`` (``model_a, model_b, winner`` battles), or, for aggregated counts
(``model_a, model_b, outcome, count``: Chatbot Arena), as a ``PairDataset`` of the count rows
with unit weights, which is what ``from_pandas`` builds after aggregating identical battles.

Usage: ``python arena_rank_peer.py battles|counts INPUT.csv OUT.csv``; writes model, rating,
SE (square root of its variance) and its 95% interval.
"""

import sys

import jax.numpy as jnp
import numpy as np
import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset


def counts_dataset(frame):
    models = sorted(set(frame.model_a) | set(frame.model_b))
    code = {m: i for i, m in enumerate(models)}
    pairs = np.column_stack([frame.model_a.map(code), frame.model_b.map(code)])
    counts = jnp.asarray(frame["count"].to_numpy(float))
    return PairDataset(competitors=models, pairs=jnp.asarray(pairs, dtype=jnp.int32),
                       outcomes=jnp.asarray(frame.outcome.to_numpy(float)), counts=counts,
                       weights=jnp.ones(len(frame)), opt_weights=counts)


def main(kind, path, out_csv):
    frame = pd.read_csv(path, keep_default_na=False)
    data = PairDataset.from_pandas(frame) if kind == "battles" else counts_dataset(frame)
    result = BradleyTerry(len(data.competitors)).compute_ratings_and_cis(data)
    out = pd.DataFrame({"model": list(data.competitors),
                        "rating": np.asarray(result["ratings"]),
                        "se": np.sqrt(np.asarray(result["variances"])),
                        "lower": np.asarray(result["rating_lower"]),
                        "upper": np.asarray(result["rating_upper"])})
    out.sort_values("model").to_csv(out_csv, index=False, float_format="%.10g",
                                    lineterminator="\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
