#!/usr/bin/env python
"""Exploratory report of a bundled dataset: how much clustering inflates the error bars.

Usage: ``python scripts/eda_our_data.py --dataset mmlu_pro [--models ...] [--json PATH]``.
A thin wrapper over :mod:`winrate.eda`; ``winrate eda`` prints the same report. The data
directory is ``$WINRATE_DATA`` (files are downloaded to the user cache if it is unset).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Python puts this script's folder first on sys.path, where a sibling script could shadow an
# installed module (numba imports ``coverage``): import the package without it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from winrate.eda import add_arguments, run  # noqa: E402
from winrate.errors import WinrateInputError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except WinrateInputError as error:
        print(f"eda_our_data: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
