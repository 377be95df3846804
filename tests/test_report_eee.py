"""The Every Eval Ever writer (winrate.report.eee): records valid against upstream's
eval.schema.json (tests/data/eee, verbatim, with its commit in the README there), checked
by jsonschema's validator of the Draft the schema declares, which fails on invalid
records; and their numbers equal to the analysis' own."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from tests import reader_fixtures as fx
from winrate import analyze
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.io.formats import read_log
from winrate.report.eee import to_eee, write_eee

SCHEMA = json.loads((Path(__file__).parent / "data" / "eee" / "eval.schema.json").read_text())
#: the validator of the Draft the schema's $schema names (draft-07)
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)
assert VALIDATOR is jsonschema.Draft7Validator
VALIDATOR.check_schema(SCHEMA)


def problems(record: dict) -> list[str]:
    """Every way ``record`` breaks the schema, as ``path: message`` lines."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in VALIDATOR(SCHEMA).iter_errors(record)]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("arena") / "140k.parquet"
    fx.arena_140k(path, n=150)
    with pytest.warns(Warning):
        return analyze(read_log(path, "arena"), cluster="prompt")


def test_records_validate_and_carry_the_clustered_numbers(result):
    records = to_eee(result, evaluation_name="arena-140k", retrieved="1767225600")
    assert len(records) == len(result.models)
    for k, record in enumerate(records):
        assert problems(record) == []
        details = record["evaluation_results"][0]["score_details"]
        assert record["model_info"]["id"] == result.models[k]
        assert details["score"] == pytest.approx(result.scores[k], abs=1e-15)
        uncertainty = details["uncertainty"]
        assert uncertainty["standard_error"]["value"] == pytest.approx(result.se[k], abs=1e-15)
        assert "clustered by prompt" in uncertainty["standard_error"]["method"]
        interval = uncertainty["confidence_interval"]
        assert interval["confidence_level"] == pytest.approx(0.95)
        assert interval["lower"] < details["score"] < interval["upper"]
        assert record["evaluation_id"] == f"arena-140k/{result.models[k]}/1767225600"


def test_the_check_fails_on_invalid_records(result):
    record = to_eee(result, evaluation_name="x", retrieved="1")[0]
    broken = copy.deepcopy(record)
    del broken["eval_library"]["version"]
    broken["source_metadata"]["evaluator_relationship"] = "self"
    broken["evaluation_results"][0]["score_details"]["uncertainty"]["num_samples"] = 3.5
    broken["evaluation_results"][0]["metric_config"].pop("max_score")
    broken["extra"] = 1
    found = problems(broken)
    assert set(found) == {
        "eval_library: 'version' is a required property",
        "source_metadata/evaluator_relationship: 'self' is not one of ['first_party', "
        "'third_party', 'collaborative', 'other']",
        "evaluation_results/0/score_details/uncertainty/num_samples: 3.5 is not of type "
        "'integer'",
        "evaluation_results/0/metric_config: 'max_score' is a required property",  # continuous
        ": Additional properties are not allowed ('extra' was unexpected)"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA, cls=VALIDATOR)
    with pytest.raises(WinrateInputError, match="relationship must be one of"):
        to_eee(result, evaluation_name="x", relationship="self")


def test_command_line_writes_one_record_per_model(tmp_path, capsys):
    path = tmp_path / "140k.parquet"
    fx.arena_140k(path, n=150)
    out = tmp_path / "eee"
    assert main(["leaderboard", str(path), "--format", "arena", "--cluster", "prompt",
                 "--eee", str(out), "--no-progress"]) == 0
    files = sorted(out.glob("*.json"))
    assert [f.stem for f in files] == sorted(fx.MODELS)
    for file in files:
        assert problems(json.loads(file.read_text())) == []
    written = write_eee(analyze(read_log(path, "arena"), cluster="prompt"), tmp_path / "api",
                        evaluation_name="arena")
    assert np.all([f.exists() for f in written])
