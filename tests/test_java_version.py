"""tests/conftest.py reads the Java runtime's major release (Spark 4 needs 17+) from what
``java -version`` prints, for each release-numbering scheme, from stand-in executables."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import MIN_JAVA, java_major_version  # noqa: E402


@pytest.mark.parametrize(("printed", "major"), [
    ('openjdk version "17.0.9" 2023-10-17', 17),
    ('openjdk version "21" 2023-09-19', 21),
    ('openjdk version "11.0.21" 2023-10-17', 11),
    ('java version "1.8.0_392"', 8),
    ("no version here", None),
])
def test_major_release_from_java_version(tmp_path, printed, major):
    java = tmp_path / "java"
    java.write_text(f"#!/bin/sh\necho '{printed}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    assert java_major_version(str(java)) == major
    assert MIN_JAVA == 17


def test_a_missing_executable_has_no_version(tmp_path):
    assert java_major_version(os.fspath(tmp_path / "absent")) is None
