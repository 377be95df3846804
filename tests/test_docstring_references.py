"""Every Sphinx cross-reference in winrate's docstrings and in ``docs/*.md`` (``:func:``,
``:mod:``, ``:class:``, ``:meth:``, ``:attr:``, ``:data:``, ``:exc:``, ``:obj:``) names
something that exists.

A reference is resolved as Sphinx's Python domain would look for it: a ``~`` prefix and a
trailing ``()`` are dropped, an explicit title (``text <target>``) gives way to its target,
and a target is tried, in order, inside the class whose docstring holds it, inside the
module that holds it, as written (``numpy.linalg.eigh``, ``winrate.diagnostics.X`` even
when ``X`` is re-exported there) and under ``winrate.`` (``io.logs``). Each candidate is
resolved by importing its longest importable module prefix and walking attributes; a
dataclass field without a default and an annotated attribute count as attributes.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import winrate

ROLE = re.compile(r":(func|mod|class|meth|attr|data|exc|obj):`([^`]+)`")
PACKAGE = Path(winrate.__file__).parent
DOCS = Path(__file__).resolve().parents[1] / "docs"


def _modules() -> list[str]:
    names = ["winrate"]
    for info in pkgutil.walk_packages([str(PACKAGE)], "winrate."):
        names.append(info.name)
    return sorted(names)


def _docstrings(module_name: str):
    """``(enclosing class path or (), docstring, line)`` of the module, its classes and
    functions (nested ones included)."""
    path = Path(importlib.util.find_spec(module_name).origin)
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def walk(node, classes):
        doc = ast.get_docstring(node, clean=False) if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if doc:
            yield classes, doc, getattr(node, "lineno", 1)
        for child in ast.iter_child_nodes(node):
            inner = (*classes, child.name) if isinstance(child, ast.ClassDef) else classes
            yield from walk(child, inner)

    yield from walk(tree, ())


def _has_attribute(owner, name: str) -> bool:
    if hasattr(owner, name):
        return True
    if isinstance(owner, type):
        if dataclasses.is_dataclass(owner) and name in {f.name for f in
                                                        dataclasses.fields(owner)}:
            return True
        return any(name in getattr(base, "__annotations__", {}) for base in owner.__mro__)
    return False


def _walk(owner, parts: list[str]) -> bool:
    for k, part in enumerate(parts):
        if not _has_attribute(owner, part):
            return False
        if not hasattr(owner, part):  # a field without a default: nothing below it to walk
            return k == len(parts) - 1
        owner = getattr(owner, part)
    return True


def _resolves_absolute(target: str) -> bool:
    """``target`` names a module, or an attribute path below an importable module."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception:  # a module that fails on import for another reason: not a name
            return False
        return _walk(module, parts[cut:])
    return False


def _target(text: str) -> str:
    inner = re.search(r"<([^>]+)>\s*$", text)
    target = (inner.group(1) if inner else text).strip().lstrip("~!").lstrip(".")
    return target[:-2] if target.endswith("()") else target


def resolves(target: str, module_name: str, classes: tuple[str, ...]) -> bool:
    module = importlib.import_module(module_name if module_name.startswith("winrate")
                                     else "winrate")
    parts = target.split(".")
    owners = []
    for depth in range(len(classes), 0, -1):  # the enclosing classes, innermost first
        owner = module
        if _walk(module, list(classes[:depth])):
            for name in classes[:depth]:
                owner = getattr(owner, name)
            owners.append(owner)
    owners.append(module)
    if any(_walk(owner, parts) for owner in owners):
        return True
    return (_resolves_absolute(target) or _resolves_absolute(f"winrate.{target}")
            or _walk(builtins, parts))


def references() -> list[tuple[str, int, str, str, tuple[str, ...]]]:
    """``(where, line, role as written, target, enclosing classes)`` of every reference;
    a reference in ``docs/*.md`` is resolved as if written in ``winrate/__init__.py``."""
    found = []
    for module_name in _modules():
        for classes, doc, line in _docstrings(module_name):
            for match in ROLE.finditer(doc):
                found.append((module_name, line, match.group(0), _target(match.group(2)),
                              classes))
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in ROLE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"docs/{page.name}", line, match.group(0),
                          _target(match.group(2)), ()))
    return found


def test_references_are_found():
    assert len(references()) > 500


def test_every_docstring_reference_resolves():
    broken = [f"{module}:{line} {role}" for module, line, role, target, classes
              in references() if not resolves(target, module, classes)]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("target, module, classes, expected", [
    ("winrate.analyze", "winrate.io.logs", (), True),
    ("io.logs.read_comparisons", "winrate.eda", (), True),
    ("numpy.linalg.eigh", "winrate.eda", (), True),
    ("summary", "winrate.eda", ("EdaReport",), True),
    ("EdaReport.conf_int", "winrate.eda", (), True),
    ("winrate.no_such_function", "winrate.eda", (), False),
    ("no_such_method", "winrate.eda", ("EdaReport",), False),
])
def test_resolution_rules(target, module, classes, expected):
    assert resolves(target, module, classes) is expected
