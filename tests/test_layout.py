"""The package's layout shows the data flow: reading (``io``) -> estimators -> variance ->
inference -> report -> the applications (``analyze``, ``eda``, evals) -> the command line.

An AST walk of every module of ``winrate`` (imports inside functions and under ``if
TYPE_CHECKING:`` included; a package's face, its ``__init__``, hands names on and its
type-checking imports are left out) checks that no module imports
from a higher layer and that no modules import each other in a circle. Both checks are
also run on a made-up graph with each fault, which they must catch.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "winrate"

#: Layers from the ground up; a module belongs to the first prefix that matches its name.
LAYERS = (
    ("base", ("winrate._lazy", "winrate.constants", "winrate.errors", "winrate.notes",
              "winrate.settings", "winrate.parallel", "winrate.progress")),
    ("io", ("winrate.io",)),
    ("estimators", ("winrate.estimators",)),
    ("variance", ("winrate.variance",)),
    ("inference", ("winrate.inference",)),
    ("report", ("winrate.report",)),
    ("applications", ("winrate.analysis", "winrate.eda", "winrate.check", "winrate.examples",
                      "winrate.evals", "winrate.judges", "winrate.diff",
                      "winrate.by_category", "winrate.planning")),
    ("command line", ("winrate.commands", "winrate.cli", "winrate.evals.cli",
                      "winrate.evals.compare_cli", "winrate.builder_cli")),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int | None:
    """The layer of ``module`` (the longest matching prefix wins), None for the package's
    face (``winrate``), which only hands names on."""
    best, found = -1, None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Line numbers of the imports under ``if TYPE_CHECKING:``."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(path: Path, known: set[str]) -> set[str]:
    """The winrate modules ``path`` imports (``from winrate import x`` names module x when
    x is a module)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree) if path.name == "__init__.py" else set()
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("winrate"))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if not node.module.startswith("winrate"):
                continue
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: imports(path, known) - {name} for name, path in paths.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Imports from a lower layer to a higher one (the package face excepted)."""
    found = []
    for source, targets in edges.items():
        for target in targets:
            low, high = layer(source), layer(target)
            if low is not None and high is not None and high > low:
                found.append(f"{source} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
    return sorted(found)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    assert [m for m in graph() if m != "winrate" and layer(m) is None] == []


def test_no_import_runs_back_up():
    assert upward(graph()) == []


def test_no_import_circles():
    assert circles(graph()) == []


def test_the_checks_catch_a_circle_and_an_upward_import():
    edges = {"winrate.io.logs": {"winrate.report.tables"},
             "winrate.report.tables": {"winrate.io.logs"}}
    assert circles(edges) == [["winrate.io.logs", "winrate.report.tables"]]
    assert upward(edges) == ["winrate.io.logs (io) -> winrate.report.tables (report)"]


def test_no_library_module_imports_the_command_line():
    cli = {m for m in graph() if layer(m) == len(LAYERS) - 1}
    assert [m for m, targets in graph().items() if m not in cli and targets & cli] == []


def _flag_errors(path: Path) -> list[str]:
    """A ``WinrateInputError(...)`` (or a module's ``_fail(...)``, which raises one) whose
    text names a command-line flag (``--x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("WinrateInputError", "_fail")):
            continue
        texts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                 and isinstance(n.value, str)]
        if any(re.search(r"(?<![\w-])--[a-z]", text) for text in texts):
            found.append(f"{module_name(path)}:{node.lineno}")
    return found


def test_library_errors_name_options_not_command_line_flags():
    """An error of the library names the option (``baseline``, ``option 'prior'``), which
    reads for Python and command-line users alike; only the command line names flags."""
    cli = {prefix for prefix in LAYERS[-1][1]}
    library = [p for p in PACKAGE.rglob("*.py") if module_name(p) not in cli]
    assert [hit for path in library for hit in _flag_errors(path)] == []


def test_the_flag_rule_catches_a_flag(tmp_path):
    probe = PACKAGE / "_probe_flag_error.py"
    try:
        probe.write_text('def f():\n    raise WinrateInputError("give --prior VAR")\n')
        assert _flag_errors(probe) == ["winrate._probe_flag_error:2"]
    finally:
        probe.unlink()


def _estimator_words() -> set[str]:
    """The estimators' names and the names of their options (``anchor``, ``baseline``,
    ``weights``, ...)."""
    from winrate import estimators

    return set(estimators.REGISTRY) | set(estimators.all_options())


def _estimator_reads(path: Path, words: set[str]) -> list[str]:
    """Where ``path`` reads an estimator by name or one of its options by name: a string
    of ``words`` compared (``model == "bt"``, ``model in ("bt", "lc")``) or used as a key
    (``options["anchor"]``,
    ``options.get("baseline")``). Attributes and keywords of the same names are other
    things (a simulation's ``baseline``, numpy's ``weights=``) and are not read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        keys = []
        if isinstance(node, ast.Compare):
            keys = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop")):
            keys = node.args[:1]
        keys = [e for k in keys
                for e in (k.elts if isinstance(k, (ast.Tuple, ast.List, ast.Set)) else [k])]
        names = [k.value for k in keys if isinstance(k, ast.Constant)]
        found.extend(f"{module_name(path)}:{node.lineno} {name}" for name in names
                     if isinstance(name, str) and name in words)
    return found


def test_no_estimator_or_its_options_are_read_by_name_outside_the_estimators():
    """Everything outside ``winrate.estimators`` asks the estimator protocol
    (:mod:`winrate.estimators.base`: ``settings``, ``scale``, ``fixed_models``, ...), so a
    new estimator or option needs no change elsewhere. Checked above the estimators' layer
    (below it, a file format's ``baseline`` column or a sampler called ``prior`` are
    other things, and no module there can ask an estimator), the command line excepted:
    it builds its flags from the options' specs."""
    words = _estimator_words()
    estimators_layer = next(i for i, (name, _) in enumerate(LAYERS) if name == "estimators")
    above = [p for p in PACKAGE.rglob("*.py")
             if (layer(module_name(p)) or 0) > estimators_layer
             and layer(module_name(p)) != len(LAYERS) - 1]
    assert [hit for path in above for hit in _estimator_reads(path, words)] == []


def test_the_estimator_rule_catches_an_option_read_by_name():
    probe = PACKAGE / "_probe_estimator_read.py"
    try:
        probe.write_text('def f(board):\n    return board.options.get("anchor")\n\n\n'
                         'def g(board):\n    return board.estimator in ("bt", "x")\n')
        assert _estimator_reads(probe, {"anchor", "bt"}) == [
            "winrate._probe_estimator_read:2 anchor", "winrate._probe_estimator_read:6 bt"]
    finally:
        probe.unlink()
