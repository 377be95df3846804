"""AlpacaEval's length-controlled win rate (``model="lc"``) against the published
leaderboard, and its standard error against the one the leaderboard publishes.

The comparison itself is ``scripts/lc_compare.py`` (:func:`lc_compare.compare`, which also
writes the table of ``docs/length-controlled.md``): the default fit (instruction difficulty
joined by position, as upstream), the fit joined by instruction, the prompt-clustered
sandwich SE of the stacked M-estimator and a prompt-cluster bootstrap that refits every
stage (200 replicates, seed 0).

The published ``lc_standard_error`` (AlpacaEval's ``get_length_controlled_winrate``, read in
its installed source, ``paper/peers/``) is the standard error of the mean of the GLM's
per-instruction predicted preferences at equal length::

    SE_upstream = sd_q(p_hat_q) / sqrt(Q),

which treats the fitted GLM as known: the predictions vary across instructions only through
the fitted difficulty, and the uncertainty of the model's own fitted intercept and length
slope -- what the LC win rate estimates -- is left out. The sandwich and the refitting
bootstrap carry it.
"""

from __future__ import annotations

import pandas as pd
from common import Paper, fmt

BOOTSTRAP_REPS = 200
#: Leaderboard rows that are not language models: a submission that returns one constant
#: answer to every instruction (Zheng et al. 2024, "null models"); reported apart.
CONSTANT_OUTPUT = ("NullModel",)


def lc_fidelity(paper: Paper) -> None:
    """Numbers ``lc_*`` and table ``lc_standard_errors``."""
    from lc_compare import compare

    frame, summary = compare(BOOTSTRAP_REPS)
    paper.number("lc_models", summary["models"], "d")
    paper.number("lc_complete", summary["complete"], "d")
    paper.number("lc_spearman", summary["spearman"], ".4f")
    paper.number("lc_spearman_complete", summary["spearman_complete"], ".4f")
    paper.number("lc_spearman_instruction", summary["spearman_instruction"], ".4f")
    paper.number("lc_median_diff", summary["median"], ".2f")
    paper.number("lc_max_diff", summary["max"], ".2f")
    paper.number("lc_max_diff_model", str(summary["max_model"]))
    paper.number("lc_boot_reps", summary["replicates"])
    paper.number("lc_boot_ratio_median", summary["ratio_median"], ".3f")
    paper.number("lc_boot_ratio_low", summary["ratio_low"], ".2f")
    paper.number("lc_boot_ratio_high", summary["ratio_high"], ".2f")
    published = frame[frame["lc_standard_error"].notna()]
    ratio = published["se"] / published["lc_standard_error"]
    paper.number("lc_upstream_se_models", len(published), "d")
    paper.extremes("lc_upstream_se", published["lc_standard_error"], ".2f")
    paper.extremes("lc_se_over_upstream", ratio, ".2f")
    real = ~published.index.isin(CONSTANT_OUTPUT)
    paper.number("lc_upstream_se_real_models", int(real.sum()), "d")
    paper.extremes("lc_se_over_upstream_real", ratio[real], ".1f")
    paper.number("lc_null_model", ", ".join(CONSTANT_OUTPUT))
    paper.extremes("lc_se_over_upstream_null", ratio[~real], ".1f")
    table = pd.DataFrame({
        "model": published.index,
        "LC, published": [fmt(v) for v in published["length_controlled_winrate"]],
        "LC, winrate": [fmt(v) for v in published["lc"]],
        "LC SE, published": [fmt(v) for v in published["lc_standard_error"]],
        "LC SE, sandwich": [fmt(v) for v in published["se"]],
        "LC SE, bootstrap": [fmt(v) for v in published["se_boot"]],
        "raw win-rate SE, published": [fmt(v) for v in published["standard_error"]],
    })
    paper.table("lc_standard_errors", table,
                "AlpacaEval 2.0's length-controlled (LC) win rate, in points, for the models "
                "whose published leaderboard row carries an LC standard error. The published "
                "LC SE is the standard error of the mean of the fitted GLM's per-instruction "
                "predictions, which treats the fit as known; the sandwich is winrate's "
                "prompt-clustered sandwich of the stacked M-estimator of every stage, and the "
                "bootstrap resamples instructions and refits every stage "
                f"({BOOTSTRAP_REPS} replicates, seed 0). NullModel returns one constant "
                "answer to every instruction (a null model).")
