"""Lazy public names of a package (PEP 562: module ``__getattr__`` and ``__dir__``).

A package lists its public names by the module that defines each; a name's module is
imported on first access and the value is then kept in the package, so ``import winrate``
loads no numerical library until a function is used.
"""

from __future__ import annotations

import importlib
import sys


def public_names(exports: dict[str, tuple[str, ...]]) -> list[str]:
    """Every name of ``exports`` (module -> names), in order: the package's ``__all__``."""
    return [name for names in exports.values() for name in names]


def lazy_attributes(package: str, exports: dict[str, tuple[str, ...]]):
    """``(__getattr__, __dir__)`` for ``package``, whose public names ``exports`` maps from
    the module that defines them."""
    namespace = sys.modules[package].__dict__
    home = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *home, *namespace.get("__all__", ())})

    return __getattr__, __dir__

