"""The pinned environment (constraints.txt) against the ranges of pyproject.toml and the
environment the suite runs in."""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[1]
#: The extras make installs (dev always, spark for the Spark tests, inspect for the Inspect
#: logs); arena is kept out.
INSTALLED_EXTRAS = ("dev", "spark", "inspect")


def _pins() -> dict[str, Version]:
    """constraints.txt as {canonical name: version}; every line is a comment or name==version."""
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and name.strip() and version.strip(), f"constraints.txt:{number}: {line!r}"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [Requirement(text) for text in
            [*project["dependencies"], *(r for e in INSTALLED_EXTRAS for r in extras[e])]]


def test_every_requirement_is_pinned_inside_its_range():
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is required but not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {name}=={pins[name]} outside pyproject's {requirement}"


def test_no_package_is_pinned_twice():
    lines = [line.partition("==")[0] for line in
             (ROOT / "constraints.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    names = [canonicalize_name(n) for n in lines]
    assert len(names) == len(set(names))


@pytest.mark.skipif(os.environ.get("WINRATE_LATEST") == "1",
                    reason="make test-latest runs on the newest releases, not the pins")
def test_the_suite_runs_on_the_pinned_versions():
    """What this run imports is what constraints.txt says the suite passed with (make test
    installs from it), so a passing run vouches for the pins."""
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        try:
            installed = Version(metadata.version(requirement.name))
        except metadata.PackageNotFoundError:
            continue  # e.g. pyspark under WINRATE_SKIP_SPARK=1
        assert installed == pins[name], f"{name} {installed} installed, {pins[name]} pinned"


def test_the_pins_name_the_python_they_were_made_with():
    """The header says which Python and platform the pins come from (numpy's and numba's
    releases each support a range of Pythons, so the pins are for that one)."""
    header = (ROOT / "constraints.txt").read_text().splitlines()[:4]
    assert any(re.search(r"Python 3\.\d+\.\d+", line) for line in header), header
