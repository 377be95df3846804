"""The order in which ``make test``'s two pytest-xdist workers take the test modules
(``--dist loadfile``; tests/conftest.py plugs this scheduler in when xdist runs).

* The modules that start Spark are one scope: one worker runs them all on one local session
  (the ``spark_engine`` fixture), so no second Java starts and warms up on the other worker
  (cold, a first Spark analysis of a 240-row log took about three times a warm one).
* The slowest scopes are handed out first, longest first, so that no long module is left
  to start last while the other worker idles; the rest follow in xdist's own order (most
  tests first). A stale list costs time, never a test: every module still runs once.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadFileScheduling

#: The scope of every test module that starts Spark.
SPARK_SCOPE = "spark"
SPARK_MODULES = frozenset({"tests/test_input_audit.py", "tests/test_spark_engine.py"})

#: Scopes by their time on one worker, slowest first (``--durations=0`` of the whole suite
#: on 2 workers, 2026-11-27: Spark's two modules 1040 s together, test_scores 245 s,
#: test_doc_examples 166 s, ... test_docs 78 s, under a load of 7 on 2 cores).
SLOWEST_FIRST = (
    SPARK_SCOPE,
    "tests/test_scores.py",
    "tests/test_doc_examples.py",
    "tests/test_scan.py",
    "tests/test_length_controlled.py",
    "tests/test_formats.py",
    "tests/test_check.py",
    "tests/test_inference.py",
    "tests/test_coverage.py",
    "tests/test_docs.py",
)


class SlowestFirstScheduling(LoadFileScheduling):
    """``--dist loadfile`` with the Spark modules as one scope and the scopes of
    :data:`SLOWEST_FIRST` assigned before all others, in that order."""

    def _split_scope(self, nodeid: str) -> str:
        module = super()._split_scope(nodeid)
        return SPARK_SCOPE if module in SPARK_MODULES else module

    def _assign_work_unit(self, node) -> None:
        slowest = next((scope for scope in SLOWEST_FIRST if scope in self.workqueue), None)
        if slowest is not None:
            self.workqueue.move_to_end(slowest, last=False)
        super()._assign_work_unit(node)


class SlowestFirst:
    """The plugin: :class:`SlowestFirstScheduling` for ``--dist loadfile``."""

    @staticmethod
    @pytest.hookimpl(tryfirst=True)  # before xdist's own (registered after conftest's)
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") != "loadfile":
            return None
        return SlowestFirstScheduling(config, log)
