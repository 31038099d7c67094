"""The process that imported this module (``harness-preloaded`` in :mod:`deplbench.benchmarks.harness.testing`
tells from it whether the fork server preloaded the method's declared imports). Standard library only.

With ``DEPLBENCH_TEST_IMPORT_LOG`` set, each import appends its process id to that file (the
tests count the processes that imported a method's declared modules: the warm-up and the runs).
"""

import os

IMPORTED_IN = os.getpid()

if os.environ.get("DEPLBENCH_TEST_IMPORT_LOG"):
    with open(os.environ["DEPLBENCH_TEST_IMPORT_LOG"], "a") as _log:
        _log.write(f"{IMPORTED_IN}\n")
