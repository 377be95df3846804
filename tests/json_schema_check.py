"""A small JSON Schema (draft-07) checker for the tests: the keywords the Every Eval Ever
schema uses (type, required, properties, additionalProperties, enum, const, items,
minItems, minimum, maximum, pattern, $ref to #/$defs, oneOf, anyOf, if/then/else).
``jsonschema`` is not a dependency; this is enough to say which field of a record breaks
which rule. ``problems(instance, schema)`` lists them (empty: valid)."""

from __future__ import annotations

import re

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def problems(instance, schema: dict, root: dict | None = None, where: str = "$") -> list[str]:
    """The rules of ``schema`` that ``instance`` breaks, each as ``path: rule``."""
    root = schema if root is None else root
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return problems(instance, root["$defs"][name], root, where)
    found = _scalar_problems(instance, schema, where)
    if found:
        return found
    found += _combined(instance, schema, root, where)
    if isinstance(instance, dict):
        found += _object_problems(instance, schema, root, where)
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            found.append(f"{where}: fewer than {schema['minItems']} items")
        for k, item in enumerate(instance):
            if "items" in schema:
                found += problems(item, schema["items"], root, f"{where}[{k}]")
    return found


def _scalar_problems(instance, schema: dict, where: str) -> list[str]:
    wanted = schema.get("type")
    if wanted is not None:
        kinds = wanted if isinstance(wanted, list) else [wanted]
        if not any(_TYPES[kind](instance) for kind in kinds):
            return [f"{where}: not of type {wanted}"]
    if "enum" in schema and instance not in schema["enum"]:
        return [f"{where}: {instance!r} not one of {schema['enum']}"]
    if "const" in schema and instance != schema["const"]:
        return [f"{where}: {instance!r} is not {schema['const']!r}"]
    if _TYPES["number"](instance):
        if "minimum" in schema and instance < schema["minimum"]:
            return [f"{where}: {instance} < minimum {schema['minimum']}"]
        if "maximum" in schema and instance > schema["maximum"]:
            return [f"{where}: {instance} > maximum {schema['maximum']}"]
    if isinstance(instance, str) and "pattern" in schema:
        if not re.search(schema["pattern"], instance):
            return [f"{where}: does not match {schema['pattern']!r}"]
    return []


def _combined(instance, schema: dict, root: dict, where: str) -> list[str]:
    found = []
    if "oneOf" in schema:
        fits = sum(not problems(instance, option, root, where) for option in schema["oneOf"])
        if fits != 1:
            found.append(f"{where}: fits {fits} of the oneOf schemas, not exactly one")
    if "anyOf" in schema:
        if all(problems(instance, option, root, where) for option in schema["anyOf"]):
            found.append(f"{where}: fits none of the anyOf schemas")
    if "if" in schema:
        branch = "then" if not problems(instance, schema["if"], root, where) else "else"
        if branch in schema:
            found += problems(instance, schema[branch], root, where)
    return found


def _object_problems(instance: dict, schema: dict, root: dict, where: str) -> list[str]:
    found = [f"{where}: required field {key!r} missing"
             for key in schema.get("required", ()) if key not in instance]
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if key in properties:
            found += problems(value, properties[key], root, f"{where}.{key}")
        elif extra is False:
            found.append(f"{where}: field {key!r} not allowed")
        elif isinstance(extra, dict):
            found += problems(value, extra, root, f"{where}.{key}")
    return found
