"""One module holds the texts (issue 22, point 3): an AST walk of the package finds every
warning raised outside :mod:`winrate.notes` and every note built there, and fails on
either; the walk is also run on made-up modules with each fault, which it must catch.
Within ``winrate/notes.py`` every code of :data:`~winrate.notes.CODES` is given by some
text function and every text function is used by the package.

The merging of the eval statistics' per-model notes is checked against the texts written
out by hand here; the fallback code of a plain-text warning through every path.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from tests.note_codes import codes_of, notes_of, warns_code
from winrate import notes
from winrate.errors import WinrateWarning

PACKAGE = Path(__file__).resolve().parents[1] / "winrate"
NOTES = PACKAGE / "notes.py"


def _called(node: ast.Call) -> str:
    """The dotted name of what ``node`` calls (``warnings.warn``, ``Note``), or ''."""
    parts, func = [], node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _is_text(node: ast.AST) -> bool:
    """A string literal, an f-string, or text joined from them (``"a" + f"b"``, ``"a" % x``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right))


def prose_outside_notes(source: str) -> list[str]:
    """What in ``source`` (a module other than winrate/notes.py) raises or builds a warning
    itself: a ``Note(...)`` call, a ``warnings.warn`` / ``warn`` call, or a
    ``warn_explicit`` of literal text. Each as ``line: call``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        last = name.rsplit(".", 1)[-1]
        texts = any(_is_text(arg) for arg in [*node.args, *(k.value for k in node.keywords)])
        if (last == "Note" or name in ("warnings.warn", "warn")
                or (last == "warn_explicit" and texts)):
            found.append(f"{node.lineno}: {name}")
    return found


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != NOTES:
            yield path


def test_no_module_but_notes_holds_warning_prose():
    found = {str(path.relative_to(PACKAGE.parent)): calls for path in _modules()
             if (calls := prose_outside_notes(path.read_text()))}
    assert not found, ("warnings raised or notes built outside winrate/notes.py (add a text "
                       f"function there and emit it with notes.emit): {found}")


@pytest.mark.parametrize("source", [
    "import warnings\nwarnings.warn('x is rough', UserWarning)",
    "import warnings\nwarnings.warn(f'{n} rows dropped', WinrateWarning, stacklevel=2)",
    "from warnings import warn\nwarn('only ' + str(g) + ' clusters')",
    "import warnings\nwarnings.warn(message)",  # the text built a line above
    "from winrate.notes import Note, emit\nemit(Note('few-clusters', f'only {g} clusters'))",
    "from winrate import notes\nnotes.emit(notes.Note('reader', 'dropped'))",
    "import warnings\nwarnings.warn_explicit('text', UserWarning, 'f.py', 1)",
])
def test_the_walk_catches_each_kind_of_prose(source):
    assert prose_outside_notes(source)


def test_the_walk_passes_the_ways_to_give_a_note():
    ok = ("from winrate import notes\nnotes.emit(notes.few_clusters('judge', 4, 'sandwich', "
          "False))\nimport warnings\nwarnings.warn_explicit(item.message, item.category, "
          "item.filename, item.lineno)\nwarnings.simplefilter('ignore', WinrateWarning)")
    assert prose_outside_notes(ok) == []


def _notes_module() -> ast.Module:
    return ast.parse(NOTES.read_text())


def _defaults(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """A function's parameters that have defaults, with them."""
    named = [arg.arg for arg in function.args.args]
    return dict(zip(named[len(named) - len(function.args.defaults):], function.args.defaults,
                    strict=True))


def test_every_code_is_given_by_a_text_function_or_is_the_fallback():
    tree = _notes_module()
    given = {node.args[0].value for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _called(node) == "Note" and node.args
             and isinstance(node.args[0], ast.Constant)}
    fallback = {default.value for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                for name, default in _defaults(node).items() if name == "code"}
    assert fallback == {"uncoded"}
    assert given | fallback == set(notes.CODES), "codes no text gives, or texts of no code"


def test_every_text_function_is_used_by_the_package():
    """A function of winrate/notes.py returning a note or text is used by some module (by
    notes.py itself, for the shared pieces): no dead texts."""
    tree = _notes_module()
    texts = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
             and node.returns is not None
             and ast.unparse(node.returns) in ("Note", "list[Note]", "str")}
    used = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.alias):
                used.add(node.name)
    assert not texts - used, f"text functions nothing calls: {sorted(texts - used)}"


# ------------------------------------------------------------ the eval statistics' merge


def test_per_model_notes_merge_into_one_naming_the_models():
    """Three models with the same few-cluster note, two with a constant-scores note, one
    plain-text warning: one note per text, its models listed, the plain text ``uncoded``."""
    few = {m: notes.eval_few_clusters("topic", 8, f"model {m!r}", 30) for m in "ABC"}
    constant = {m: notes.constant_scores(20, f"model {m!r}", 1.0) for m in "AB"}
    merged = notes.per_model({m: [few[m], *([constant[m]] if m in constant else []),
                                  "a plain remark"] for m in "ABC"})
    assert [note.code for note in merged] == ["few-clusters", "constant-scores", "uncoded"]
    assert str(merged[0]) == str(few["A"]).replace("model 'A'", "all 3 models")
    assert str(merged[1]) == str(constant["A"]).replace("model 'A'", "2 models: 'A', 'B'")
    assert str(merged[2]) == "a plain remark"
    assert [note.models for note in merged] == [("A", "B", "C"), ("A", "B"), ("A", "B", "C")]
    assert merged[0].axis == "topic" and merged[0].severity == "warning"
    single = notes.per_model({"A": [few["A"]], "B": []})
    assert single == [few["A"]] and single[0].models == ("A",)


def test_notes_are_values_inside_a_block_and_warnings_outside():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with notes.gathered() as outer:
            with notes.gathered() as inner:
                notes.emit(notes.psd_repaired())
                notes.emit(notes.psd_repaired())  # once
                warnings.warn("a custom estimator's remark", WinrateWarning, stacklevel=1)
            notes.give(inner)
        assert inner.codes == ["psd-repaired"] and outer.codes == ["psd-repaired"]
        assert [str(w.message) for w in caught] == ["a custom estimator's remark"]
        notes.emit(notes.no_discordant())  # outside any block: a warning at once
    assert codes_of(caught) == {"uncoded", "no-discordant"}
    assert isinstance(caught[1].message.args[0], notes.Note)  # the note itself


def test_warns_code_fails_without_the_code():
    with pytest.raises(AssertionError, match="no 'few-clusters' warning"):
        with warns_code("few-clusters"):
            notes.emit(notes.psd_repaired())
    with pytest.raises(AssertionError, match="no 'few-clusters' warning"):
        with warns_code("few-clusters"):
            warnings.warn("only 3 clusters in 'topic'", WinrateWarning, stacklevel=1)
    with warns_code("psd-repaired") as found:
        notes.emit(notes.psd_repaired())
    assert found.codes == ["psd-repaired"] and notes_of([]) == []


def test_a_note_given_while_reading_reaches_the_analysis():
    """A reading note (model names that differ only in case) is emitted once, at the user's
    read_comparisons line, and kept on the log, so the analysis carries it in notes,
    summary() and the JSON, as the command line does."""
    import numpy as np
    import pandas as pd

    import winrate
    from winrate.report.leaderboard import to_dict

    rng = np.random.default_rng(0)
    pairs = [rng.choice(["GPT-4", "gpt-4", "claude", "llama"], 2, replace=False)
             for _ in range(300)]
    frame = pd.DataFrame({"prompt_id": np.arange(300) % 40, "model_a": [a for a, _ in pairs],
                          "model_b": [b for _, b in pairs],
                          "outcome": rng.choice(["a", "b", "tie"], 300)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        log = winrate.read_comparisons(frame)
    assert [w.message.args[0].code for w in caught] == ["case-only-names"]
    assert caught[0].filename == __file__
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always", WinrateWarning)
        result = winrate.analyze(log, cluster="prompt")
    assert "case-only-names" not in [w.message.args[0].code for w in again]
    assert "case-only-names" in result.notes.codes
    assert "case-only-names" in str(result.summary())
    assert "case-only-names" in [n["code"] for n in to_dict(result)["notes"]]
