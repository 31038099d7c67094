"""A Dask preload for the workers and nannies of ``--cluster local``: they ignore SIGINT and SIGTERM.

They also log only errors, and not the failed heartbeat of a worker whose scheduler the harness
closes: that is noise.

A terminal's Ctrl-C (or a scheduler's SIGTERM to the whole job) reaches every process of the
job, and a Dask worker that gets it shuts down at once, losing its runs. The harness owns the
stop instead (:mod:`deplbench.benchmarks.harness.stopping`): it asks every worker's runs to stop
and return their incumbents (``client.run``), stores their rows, then closes the cluster. The
workers still die with the harness (Dask's processes exit when their parent does).

Imports nothing of deplbench.
"""

from __future__ import annotations

import signal


def closing_heartbeat(record) -> bool:
    """A logging filter: False for a worker's "failed to communicate with scheduler during
    heartbeat" (the scheduler closing under it), True for every other record."""
    return "during heartbeat" not in record.getMessage()


def dask_setup(server) -> None:
    """Called by Dask in each worker and nanny process at its start."""
    import logging
    import threading

    # the harness closes the cluster when the grid ends or stops: a worker's failed heartbeat to
    # the closing scheduler is not news (it printed a traceback on the user's terminal); distributed
    # logs it as a warning or, in some versions, with ``logger.exception`` (an error), so that one
    # message is dropped whatever its level, and every other error still shows
    for name in ("distributed.worker", "distributed.nanny", "distributed.core", "distributed.comm"):
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger("distributed.worker").addFilter(closing_heartbeat)
    if threading.current_thread() is not threading.main_thread():
        return  # the worker's setup runs in a thread; its process's main thread (the nanny's) has it
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
