"""The process that imported this module (``harness-preloaded`` in :mod:`deplbench.benchmarks.harness.testing`
tells from it whether the fork server preloaded the method's declared imports). Standard library only."""

import os

IMPORTED_IN = os.getpid()
