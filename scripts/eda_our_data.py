#!/usr/bin/env python
"""Exploratory report of a bundled dataset: how much clustering inflates the error bars.

Usage: ``python scripts/eda_our_data.py --dataset mmlu_pro [--models ...] [--json PATH]``.
The same as ``winrate eda ...`` (this script only forwards its arguments), including the
one-line errors and exit code 2 for bad input or missing data. The data directory is
``$WINRATE_DATA``, then the user cache (missing files are downloaded there).
"""

import sys

from winrate.cli import main

if __name__ == "__main__":
    sys.exit(main(["eda", *sys.argv[1:]]))
