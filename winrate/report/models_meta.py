"""Model metadata for the leaderboard page: who made each model, its licence, a link, flags.

A metadata file is CSV (a header row, one row per model) or JSON (a list of objects, or an
object keyed by model name). The ``model`` column names the model as the leaderboard does;
``organisation``, ``licence`` and ``url`` are shown in their own columns (``organization``,
``license`` and ``link`` are read as the same); ``flags`` (a list in JSON, names separated
by ``;`` or ``,`` in CSV) gives badges shown next to the name, and so does a column named
after a known flag (``baseline``, ``null model``, ``deprecated``) holding a true value
(``1``, ``true``, ``yes``, ``x``). Every other column is shown too, in file order. Every
value is text; the page escapes it, and a link must be ``http://`` or ``https://``.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from winrate.errors import WinrateInputError

#: The shown columns every file may have, in page order, and the names read as them.
STANDARD = ("organisation", "licence")
ALIASES = {"organization": "organisation", "org": "organisation", "license": "licence",
           "link": "url"}
#: Flags that may also be given as a true/false column of their own name.
KNOWN_FLAGS = ("baseline", "null model", "deprecated")
_TRUE = {"1", "true", "yes", "y", "x"}
_FALSE = {"", "0", "false", "no", "n"}


@dataclass(frozen=True)
class ModelsMeta:
    """Per model: the shown columns' text, a link and badges (module docstring).

    ``columns`` are the shown columns (the standard ones first, then the file's others in
    its order); ``values[model][column]`` their text (absent: no value); ``urls[model]`` the
    link; ``flags[model]`` the badges, in the file's order; ``source`` names the file in
    notes."""

    columns: tuple[str, ...]
    values: dict
    urls: dict
    flags: dict
    source: str = "the model metadata"

    def unknown(self, models) -> list[str]:
        """The described models that are not in ``models``, in the file's order."""
        present = set(models)
        return [m for m in self.values if m not in present]

    def search_text(self, model: str) -> str:
        """What the page's search box matches for ``model``: its name, values and flags."""
        return " ".join([model, *self.values.get(model, {}).values(),
                         *self.flags.get(model, ())]).lower()


def read_models_meta(path) -> ModelsMeta:
    """The metadata file at ``path``: JSON when it ends in ``.json``, else CSV."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise WinrateInputError(f"cannot read the model metadata {path}: {error}") from None
    if path.suffix.lower() == ".json":
        return from_json(raw, path.name)
    return from_csv(raw, path.name)


def from_csv(raw: str, source: str = "the model metadata") -> ModelsMeta:
    """The metadata of a CSV text with a header row (module docstring)."""
    rows = list(csv.reader(io.StringIO(raw)))
    if not rows:
        raise WinrateInputError(f"{source}: empty, expected a header row with a 'model' column")
    header, body = rows[0], [r for r in rows[1:] if any(cell.strip() for cell in r)]
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise WinrateInputError(f"{source}: row {number} has {len(row)} fields, the "
                                    f"header {len(header)}")
    return from_records([dict(zip(header, row, strict=True)) for row in body], source,
                        first_row=2)


def from_json(raw: str, source: str = "the model metadata") -> ModelsMeta:
    """The metadata of a JSON text: a list of objects with ``model``, or an object keyed by
    model name whose values are objects."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise WinrateInputError(f"{source}: not JSON ({error})") from None
    if isinstance(data, dict):
        if not all(isinstance(v, dict) for v in data.values()):
            raise WinrateInputError(f"{source}: an object keyed by model must map each model "
                                    "to an object of its metadata")
        data = [{"model": name, **fields} for name, fields in data.items()]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise WinrateInputError(f"{source}: expected a list of objects, one per model")
    return from_records(data, source, first_row=1)


def from_records(records: list[dict], source: str = "the model metadata",
                 first_row: int = 1) -> ModelsMeta:
    """The metadata of one dict per model (module docstring); row numbers in errors count
    from ``first_row``."""
    names = _column_names(records, source)
    values, urls, flags = {}, {}, {}
    for number, record in enumerate(records, start=first_row):
        fields = {names[key]: value for key, value in record.items()}
        model = _text(fields.get("model"), source, number, "model")
        if not model:
            raise WinrateInputError(f"{source}: row {number} has no model name")
        if model in values:
            raise WinrateInputError(f"{source}: row {number} repeats model {model!r}")
        values[model] = {c: t for c, v in fields.items() if c not in ("model", "url", "flags")
                         and c not in KNOWN_FLAGS and (t := _text(v, source, number, c))}
        url = _text(fields.get("url"), source, number, "url")
        if url:
            urls[model] = _checked_url(url, source, number)
        flags[model] = _flags(fields, source, number)
    extra = [c for c in dict.fromkeys(names.values())
             if c not in (*STANDARD, "model", "url", "flags", *KNOWN_FLAGS)]
    shown = [c for c in STANDARD if any(c in v for v in values.values())]
    return ModelsMeta(tuple(shown + extra), values, urls,
                      {m: f for m, f in flags.items() if f}, source)


def _column_names(records: list[dict], source: str) -> dict:
    """Each key of the records -> its column name (lower case, aliases read as theirs,
    underscores as spaces for the flags); refuses a file without ``model``."""
    keys = dict.fromkeys(k for r in records for k in r)
    names = {}
    for key in keys:
        name = str(key).strip().lower()
        name = ALIASES.get(name, name)
        names[key] = name.replace("_", " ") if name.replace("_", " ") in KNOWN_FLAGS else name
    if records and "model" not in names.values():
        raise WinrateInputError(f"{source}: no 'model' column (the columns are "
                                f"{', '.join(map(str, keys))})")
    return names


def _text(value, source: str, number: int, column: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)) and column != "flags":
        raise WinrateInputError(f"{source}: row {number}, column {column!r} holds a "
                                f"{type(value).__name__}, expected text or a number")
    return str(value).strip()


def _checked_url(url: str, source: str, number: int) -> str:
    if not url.lower().startswith(("http://", "https://")):
        raise WinrateInputError(f"{source}: row {number}, column 'url' is {url!r}; a link "
                                "must start with http:// or https://")
    return url


def _flags(fields: dict, source: str, number: int) -> tuple[str, ...]:
    """The row's badges: the ``flags`` list, then each known flag column that is true."""
    given = fields.get("flags")
    if isinstance(given, list):
        found = [str(f).strip() for f in given]
    else:
        found = [f.strip() for f in _text(given, source, number, "flags").replace(
            ",", ";").split(";")]
    for flag in KNOWN_FLAGS:
        if flag in fields:
            value = str(fields[flag]).strip().lower() if fields[flag] is not None else ""
            if value not in _TRUE | _FALSE:
                raise WinrateInputError(f"{source}: row {number}, column {flag!r} is "
                                        f"{fields[flag]!r}; expected true or false")
            if value in _TRUE:
                found.append(flag)
    return tuple(dict.fromkeys(f for f in found if f))
