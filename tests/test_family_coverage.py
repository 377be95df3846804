"""Issue 33's seeded coverage test of ``--by``'s family intervals
(``analyze_by(..., family=True)``): on 400 seeded logs of 5 categories x 3 models, 40
prompts per category (``scripts/family_coverage.py``, whose defaults these are), the
family intervals cover all 15 true win rates at once in at least 93% of the replications
(nominal 95%), and the run reproduces the coverage the docs quote
(``scripts/family_coverage.json``, docs/formats.md "One board per category"). About two
minutes of CPU."""

from __future__ import annotations

import json

from tests.script_modules import SCRIPTS, load_script


def test_family_intervals_cover_jointly_over_400_replications():
    script = load_script("family_coverage", "family_coverage_script")
    stored = json.loads((SCRIPTS / "family_coverage.json").read_text())
    assert (stored["reps"], stored["categories"]) == (400, 5)
    share = script.coverage(stored["reps"], stored["seed"], stored["categories"],
                            stored["prompts"], stored["per_prompt"], stored["effect_sd"],
                            progress=False)
    assert share >= 0.93
    assert share == stored["coverage"]
