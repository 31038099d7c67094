"""Stop signals noted, not handled, while a process forks, and handled once the fork is over.

A SIGINT or SIGTERM that lands during ``fork`` has its Python handler run inside the interpreter's
after-fork hooks, where an exception is printed as "ignored" and lost; :func:`hold_stop_signals`
and :func:`release_stop_signals` go around the fork of :func:`deplbench.watch.call`.

May import: the standard library only.
"""

from __future__ import annotations

import signal
import threading

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def hold_stop_signals() -> tuple[dict, list] | None:
    """Record SIGINT and SIGTERM instead of handling them, for a fork; what :func:`release_stop_signals` needs.

    A stop signal that lands during ``fork`` has its Python handler run inside the interpreter's
    after-fork hooks (``logging``'s lock release), where an exception is printed as "ignored" and
    lost: a ``library build`` stopped at that moment went on to its end. Blocking the signal would not
    do (another thread takes it and the main thread still runs the handler in the hook), so the
    handlers only note it until the fork is over. Handlers live in the main thread: elsewhere, nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    pending: list = []
    old = {sig: signal.signal(sig, lambda signum, _frame: pending.append(signum)) for sig in _STOP_SIGNALS}
    return old, pending


def release_stop_signals(held: tuple[dict, list] | None) -> None:
    """Put the handlers back and send this process each stop signal that came meanwhile (handled now)."""
    if held is None:
        return
    old, pending = held
    for sig, handler in old.items():
        signal.signal(sig, handler)
    for sig in dict.fromkeys(pending):
        signal.raise_signal(sig)
