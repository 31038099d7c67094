"""A stop signal that lands while :func:`deplbench.watch.call` forks is handled, not lost in the after-fork hooks."""

from __future__ import annotations

import subprocess
import sys

#: a watcher whose own after-fork hook sends it SIGINT: the signal lands exactly during the fork
_SCRIPT = """
import multiprocessing as mp, os, signal, time
from deplbench.watch import call

armed = [True]

def hook():
    if armed[0]:
        armed[0] = False
        os.kill(os.getpid(), signal.SIGINT)

os.register_at_fork(after_in_parent=hook)

def slow():
    time.sleep(60)

try:
    w = call(mp.get_context("fork"), slow, (), wall_limit_s=120)
    print("not stopped:", w.outcome)
except KeyboardInterrupt:
    print("stopped")
"""


def test_a_sigint_during_the_fork_stops_the_watcher():
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped", (done.stdout, done.stderr)  # before: "not stopped" after 60 s
    assert "Exception ignored" not in done.stderr, done.stderr
