"""A leaderboard in the Every Eval Ever aggregate schema, one record per model.

Every Eval Ever (github.com/evaleval/every_eval_ever, ``eval.schema.json``, schema
version 0.2.1 at commit 0666632d306990936cf3ec08706ce1c310733883) collects evaluation
results from many sources, one JSON record per model and evaluation run. A record's
``evaluation_results[].score_details`` carries the score and its ``uncertainty``:
``standard_error{value, method}``, ``confidence_interval{lower, upper,
confidence_level, method}`` and ``num_samples``. :func:`to_eee` fills them from a
:func:`winrate.analyze` result: the score on the estimator's own scale (a win rate as a
probability in [0, 1]), its clustered SE, the interval the report prints, and ``method``
naming the variance method, the correction, the clustering and the reference
distribution, so that an aggregator sees that the SE is cluster-robust and over what.
``num_samples`` is the model's number of comparisons (rounded where weights are
fractional) and the clusters of each axis are in ``details``. A model whose uncertainty
cannot be estimated gets its score and, in ``details``, the reason, but no
``uncertainty``. :func:`write_eee` writes the records to a folder, one
``<model>.json`` each.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

from winrate.errors import WinrateInputError
from winrate.report.leaderboard import to_dict
from winrate.report.output import write_text

__all__ = ["EEE_SCHEMA_VERSION", "to_eee", "write_eee"]

#: The version of the Every Eval Ever aggregate schema written.
EEE_SCHEMA_VERSION = "0.2.1"
_RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


def to_eee(result, *, evaluation_name: str, organization: str = "unknown",
           relationship: str = "third_party", retrieved: str | None = None) -> list[dict]:
    """One Every Eval Ever record per model of ``result`` (module docstring).

    ``evaluation_name`` names the evaluation (and the dataset); ``organization`` and
    ``relationship`` fill ``source_metadata``; ``retrieved`` is the record's Unix time
    (default: now)."""
    if relationship not in _RELATIONSHIPS:
        raise WinrateInputError(f"relationship must be one of {list(_RELATIONSHIPS)}, got "
                                f"{relationship!r}")
    doc = to_dict(result)
    retrieved = retrieved or str(int(time.time()))
    common = _common(doc, evaluation_name, organization, relationship, retrieved)
    return [_record(doc, k, str(model), common, evaluation_name, retrieved)
            for k, model in enumerate(doc["models"])]


def write_eee(result, folder, **options) -> list[Path]:
    """:func:`to_eee`'s records written to ``folder`` (created), one ``<model>.json``
    each (characters other than letters, digits, ``.``, ``_`` and ``-`` as ``_``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for record in to_eee(result, **options):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", record["model_info"]["id"]) + ".json"
        write_text(folder / name, json.dumps(record, indent=2))
        written.append(folder / name)
    return written


def _common(doc: dict, evaluation_name: str, organization: str, relationship: str,
            retrieved: str) -> dict:
    """The parts every model's record shares."""
    from importlib.metadata import version

    settings = doc["settings"]
    return {
        "schema_version": EEE_SCHEMA_VERSION,
        "retrieved_timestamp": retrieved,
        "source_metadata": {"source_name": evaluation_name, "source_type": "evaluation_run",
                            "source_organization_name": organization,
                            "evaluator_relationship": relationship},
        "eval_library": {"name": "winrate", "version": version("winrate"),
                         "additional_details": {
                             "estimator": str(settings["estimator"]),
                             "clustering": "+".join(settings["cluster"]) or "none",
                             "n_comparisons": f"{doc['n_comparisons']:g}"}},
    }


def _methods(doc: dict) -> tuple[str, str]:
    """The ``method`` of the SE and of the interval: variance method, correction,
    clustering (with each axis' clusters) and reference distribution."""
    settings = doc["settings"]
    axes = ", ".join(f"{name} ({axis['n_clusters']} clusters)"
                     for name, axis in doc["axes"].items()) or "none (rows independent)"
    se = (f"winrate {doc['method']} ({settings['correction']}), cluster-robust, clustered "
          f"by {axes}")
    reference = "t" if settings["reference"] == "t" else "normal"
    link = settings["scale"].get("link")
    scale = f" on the {link} scale, mapped back" if link and link != "identity" else ""
    return se, f"Wald interval with the {reference} reference{scale}; SE: {se}"


def _record(doc: dict, k: int, model: str, common: dict, evaluation_name: str,
            retrieved: str) -> dict:
    """The record of model ``k``."""
    scale = doc["settings"]["scale"]
    bounded = all(isinstance(scale.get(end), (int, float)) and math.isfinite(scale[end])
                  for end in ("low", "high"))
    metric = {"evaluation_description": doc["estimator_description"],
              "lower_is_better": False}
    if bounded:
        metric.update(score_type="continuous", min_score=scale["low"], max_score=scale["high"])
    details = {"n_comparisons_of_model": f"{doc['n'][k]:g}"}
    score = {"score": doc["score"][k], "details": details}
    reason = doc.get("not_estimable", {}).get(model)
    if reason or doc["se"][k] is None:
        details["not_estimable"] = str(reason or "no standard error")
    else:
        se_method, ci_method = _methods(doc)
        score["uncertainty"] = {
            "standard_error": {"value": doc["se"][k], "method": se_method},
            "confidence_interval": {"lower": doc["ci_low"][k], "upper": doc["ci_high"][k],
                                    "confidence_level": 1 - doc["settings"]["alpha"],
                                    "method": ci_method},
            "num_samples": int(round(doc["n"][k]))}
    return {**common,
            "evaluation_id": f"{evaluation_name}/{model}/{retrieved}",
            "model_info": {"name": model, "id": model},
            "evaluation_results": [{
                "evaluation_name": evaluation_name,
                "source_data": {"dataset_name": evaluation_name, "source_type": "other"},
                "metric_config": metric,
                "score_details": score}]}
