"""Issue 37's seeded coverage test: 60 prompts whose sizes follow a Pareto law (a few
prompts carry most rows, G* about 15 of G = 60), analysed by ``winrate.analyze``'s
defaults; the truths come from the held-out generator's own quadrature and Newton solver
(``scripts/heldout``), which share no code with winrate's estimators.

What it checks, per estimator on the same 400 seeded logs: the issue's rule, marginal
coverage in [93, 97]% and simultaneous coverage at least 90% (MC SEs about 0.5 and 0.5-1),
and that ``auto`` took a t reference in every replication. It can fail: on these logs the
old default, CR1 with a normal reference, covers 89.9 / 83.3% (win rate) and 90.7 / 85.0%
(Bradley-Terry). Kept cheap: 8 models, the logs built from the generator's codes (no
labels to parse), 2,000 Monte-Carlo draws for the joint critical value; about 7 s of CPU
for the win rate and 8 s for Bradley-Terry (its default here is the delete-one-cluster
jackknife). The full check is the pre-registered study (``docs/coverage.md``, "Issue 37";
``paper/coverage/heldout-heavy/``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from heldout.design import Design, Sizes  # noqa: E402
from heldout.sample import truths  # noqa: E402
from heldout.thurstone import Thurstone  # noqa: E402

from winrate import notes  # noqa: E402
from winrate.analysis import analyze  # noqa: E402
from winrate.io.logs import ComparisonLog  # noqa: E402
from winrate.settings import Joint, MonteCarlo  # noqa: E402

PARETO_60 = Thurstone(Design(8, 60, Sizes("pareto", 1.5, 20.0), 1, distinct=False))
#: Seeds of this test: SeedSequence([TEST_SEED, r]), disjoint from the study's.
TEST_SEED = 37_400


MODELS = np.array([f"m{i:02d}" for i in range(8)])  # the generator's names, by code


def drawn(rep: int) -> tuple[ComparisonLog, dict, int]:
    """Replication ``rep``'s log, straight from the generator's codes (outcome code / 2 is
    the first model's score; no labels to parse), its truths and its seed."""
    seed = int(np.random.SeedSequence([TEST_SEED, rep]).generate_state(1)[0])
    rows, outcome = PARETO_60.draw_codes(seed)
    log = ComparisonLog.from_arrays(rows["first"], rows["second"], outcome / 2.0,
                                    models=MODELS, prompt=rows["prompt"])
    return log, truths(PARETO_60.psi, rows, MODELS), seed


def coverage(model: str, reps: int) -> dict[str, float]:
    """Over ``reps`` seeded logs, the default analysis' marginal and simultaneous
    coverage (percent), the share of replications whose reference was t, and the median
    over replications of the smallest G* (to show the design is the issue's)."""
    marginal, simultaneous, t_reference, g_star = [], [], [], []
    with notes.gathered():  # the replications' notes are kept, not given as warnings
        for rep in range(reps):
            log, truth, seed = drawn(rep)
            run = analyze(log, model=model, joint=Joint(simultaneous=True),
                          monte_carlo=MonteCarlo(n_draws=2000, seed=seed))
            target = truth[model].reindex(run.models.astype(str)).to_numpy(float)
            inside = (run.intervals.low <= target) & (target <= run.intervals.high)
            jointly = (run.joint.sim_low <= target) & (target <= run.joint.sim_high)
            marginal.append(inside.mean())
            simultaneous.append(jointly.all())
            t_reference.append(run.settings["reference"] == "t")
            g_star.append(np.nanmin(run.axes["prompt"].effective_clusters))
    return {"marginal": 100 * np.mean(marginal), "simultaneous": 100 * np.mean(simultaneous),
            "t_reference": 100 * np.mean(t_reference), "g_star": float(np.median(g_star))}


@pytest.mark.parametrize(("model", "reps"), [("winrate", 400), ("bt", 400)])
def test_default_intervals_cover_on_pareto_sized_prompts(model, reps):
    found = coverage(model, reps)
    # the design: G = 60 prompts but few effective ones, never a normal reference
    assert found["g_star"] < 20 and found["t_reference"] == 100
    assert 93 <= found["marginal"] <= 97 and found["simultaneous"] >= 90, found
