"""A grid under signals: the first SIGINT or SIGTERM stops it with the incumbents of its live runs.

``deplbench run`` is stopped by a user's Ctrl-C or by a cluster scheduler's SIGTERM (SLURM,
Kubernetes). While the grid's runs execute (:func:`stop_on_signals`):

* the first signal starts no new run and asks every live run to stop
  (:func:`deplbench.watch.stop_all`, on the harness and, through ``client.run``, on every Dask
  worker): each run's method returns its certified incumbent as ``interrupted`` within
  :data:`deplbench.watch.STOP_GRACE_S` (or is killed then), and its row is stored with
  ``harness_status = interrupted``; the next ``deplbench run`` re-runs exactly those runs and
  the ones never started, replacing the interrupted rows (one row per run key);
* a second signal ends at once (``KeyboardInterrupt``): the live runs are killed, their rows lost,
  every finished row kept.

Before the runs start (instance generation) a signal ends at once too: nothing is lost but the
generation in flight.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time

from deplbench import watch


class GridStop:
    """The stop request of one grid: which signal asked, and whether the runs have started."""

    def __init__(self, client=None):
        self.client = client  # a Dask client whose workers are told too
        self.signum: int | None = None
        self.at: float | None = None  # time.monotonic() of the request
        self.armed = False  # only the running phase stops gracefully

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def request(self, signum: int) -> None:
        """Start no new run; ask every live run (here and on the Dask workers) to stop."""
        self.signum, self.at = signum, time.monotonic()
        watch.stop_all(signum)
        if self.client is not None:  # not from the signal handler: a client call may block
            threading.Thread(target=_stop_workers, args=(self.client, signum), daemon=True).start()

    def exit_status(self) -> int:
        """128 + the signal number, as a shell reports a process stopped by it."""
        return 128 + int(self.signum or signal.SIGINT)


def _stop_workers(client, signum: int) -> None:
    with contextlib.suppress(Exception):  # a worker that is gone has no run to stop
        client.run(watch.stop_all, signum)


@contextlib.contextmanager
def stop_on_signals(stop: GridStop):
    """Inside the block SIGINT and SIGTERM request ``stop`` (first, once armed) or end at once.

    Outside the main thread (a grid started by a notebook's thread) signals cannot be caught:
    the block runs without handlers.
    """

    def handler(signum, frame):
        if not stop.armed or stop.requested:
            raise KeyboardInterrupt
        print(f"\ndeplbench: {signal.Signals(signum).name}: stopping the runs in flight, keeping their "
              "best plans (again to quit at once)", file=sys.stderr)
        stop.request(signum)

    with watch.signals_handled(handler):
        yield stop
