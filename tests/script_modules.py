"""The project's scripts (``scripts/NAME.py``) loaded as modules for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str, module_name: str):
    """``scripts/NAME.py`` executed as a module called ``module_name``, with ``scripts/`` on
    the import path as when the script runs (its sibling modules import)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(module_name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
