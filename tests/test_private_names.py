"""No module imports another module's private names (issue 35): what crosses a module
boundary is public, named and documented."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "winrate"


def private_imports(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("winrate"):
                found += [f"{path.relative_to(package.parent)}: {node.module}.{alias.name}"
                          for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_private_name_crosses_a_module():
    assert private_imports() == []


def test_the_check_sees_a_private_import(tmp_path):
    fake = tmp_path / "winrate"
    fake.mkdir()
    (fake / "a.py").write_text("from winrate.b import _hidden, shown, __version__\n")
    assert private_imports(fake) == ["winrate/a.py: winrate.b._hidden"]
