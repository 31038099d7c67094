"""Temporary folders named after the process that made them, and the removal of those whose process is gone.

A folder ``PREFIX<pid>-...`` (or ``PREFIX<pid>``) belongs to process ``pid``. A SIGKILLed process cannot
remove its own: the next process that makes one with the same prefix removes every such folder
whose process no longer exists (:func:`owned_tempdir`, :func:`remove_stale`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove the folders ``parent/PREFIX<pid>[-...]`` whose process ``pid`` is gone; the removed ones."""
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for p in Path(parent).iterdir():
            if not p.name.startswith(prefix):
                continue
            pid = p.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)) and p.is_dir() \
                    and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
    return removed


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A temporary folder ``TMPDIR/PREFIX<pid>-XXXX``, removed at the end; stale ones of ``prefix`` first."""
    parent = Path(tempfile.gettempdir())
    remove_stale(parent, prefix)
    d = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
