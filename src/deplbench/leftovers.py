"""Temporary folders named after the process that made them, and the removal of those whose process is gone.

A folder ``PREFIX<pid>-...`` (or ``PREFIX<pid>``) belongs to process ``pid``. A SIGKILLed process cannot
remove its own: the next process that makes one with the same prefix removes every such folder
whose process no longer exists (:func:`owned_tempdir`, :func:`remove_stale`). The same holds for
``multiprocessing``'s own temporary folder (the fork server's socket), which would otherwise be a
``pymp-XXXX`` left by every process that ends without its exit handlers (:func:`own_multiprocessing_tempdir`).
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


def _stale(parent: Path, prefix: str) -> Iterator[Path]:
    """The entries ``parent/PREFIX<pid>[-.]...`` (not symlinks) whose process ``pid`` is gone."""
    with contextlib.suppress(OSError):
        for p in Path(parent).iterdir():
            if not p.name.startswith(prefix):
                continue
            pid = p.name[len(prefix):].replace("-", ".").split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)) and not p.is_symlink():
                yield p


def remove_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove the folders ``parent/PREFIX<pid>[-...]`` whose process ``pid`` is gone; the removed ones."""
    removed = [p for p in _stale(parent, prefix) if p.is_dir()]
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return removed


def make_owned_tempdir(prefix: str, parent: str | os.PathLike | None = None) -> Path:
    """A new temporary folder ``PARENT/PREFIX<pid>-XXXX`` (the caller removes it); stale ones of ``prefix`` first.

    ``parent`` defaults to ``TMPDIR``.
    """
    parent = Path(parent or tempfile.gettempdir())
    remove_stale(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def remove_stale_files(parent: Path, prefix: str) -> list[Path]:
    """Remove the files ``parent/PREFIX<pid>[-.]...`` whose process ``pid`` is gone; the removed ones.

    The temporary files of an atomic write (``.NAME.<pid>...`` beside ``NAME``) that a SIGKILL cut
    short are removed so by the next write of the same file.
    """
    removed: list[Path] = []
    for p in _stale(parent, prefix):
        if p.is_file():
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A temporary folder ``TMPDIR/PREFIX<pid>-XXXX``, removed at the end; stale ones of ``prefix`` first."""
    d = make_owned_tempdir(prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


#: the prefix of ``multiprocessing``'s temporary folder once :func:`own_multiprocessing_tempdir` has named it
MP_PREFIX = "deplbench-mp-"


def _mp_config() -> dict | None:
    from multiprocessing import process

    # ``multiprocessing.util.get_temp_dir`` reads and caches its folder here (CPython 3.8-3.14)
    return getattr(process.current_process(), "_config", None)


def own_multiprocessing_tempdir() -> Path | None:
    """Make ``multiprocessing``'s temporary folder ``TMPDIR/deplbench-mp-<pid>-XXXX``; that folder.

    ``multiprocessing`` puts its fork server's socket into a ``pymp-XXXX`` folder that only its exit
    handler removes, so a SIGKILLed process (or one that ends with ``os._exit``) leaves it behind
    for good. Named after the process, the next process removes it (:func:`remove_stale`). A folder
    that ``multiprocessing`` already made is kept (its socket may be in use); ``None`` when there is
    no such configuration to set.
    """
    from multiprocessing import util

    cfg = _mp_config()
    if cfg is None:
        return None
    if cfg.get("tempdir"):
        return Path(cfg["tempdir"])
    d = str(make_owned_tempdir(MP_PREFIX, _socket_parent()))
    # removed at a normal exit as multiprocessing removes its own (the same priority: after the children)
    util.Finalize(None, shutil.rmtree, args=(d,), kwargs={"ignore_errors": True}, exitpriority=-100)
    cfg["tempdir"] = d
    return Path(d)


#: the longest path of a Unix socket (``sun_path`` is 108 bytes on Linux, with its final NUL)
_SUN_PATH_MAX = 107
#: what the folder adds to its parent: ``/deplbench-mp-<pid>-XXXXXXXX/listener-XXXXXXXX``
_SOCKET_TAIL = len(f"/{MP_PREFIX}4194304-xxxxxxxx/listener-xxxxxxxx")


def _socket_parent() -> str:
    """``TMPDIR``, or ``/tmp`` when a socket under ``TMPDIR`` would have too long a path.

    A long ``TMPDIR`` (a deep home or build folder) would make the fork server fail to start
    (``OSError: AF_UNIX path too long``) before any run.
    """
    parent = tempfile.gettempdir()
    if len(os.fsencode(parent)) + _SOCKET_TAIL > _SUN_PATH_MAX and os.access("/tmp", os.W_OK | os.X_OK):
        return "/tmp"
    return parent


def remove_multiprocessing_tempdir() -> None:
    """Remove ``multiprocessing``'s temporary folder now (before an ``os._exit``, which skips its exit handler)."""
    cfg = _mp_config()
    d = cfg.get("tempdir") if cfg else None
    if d:
        shutil.rmtree(d, ignore_errors=True)
