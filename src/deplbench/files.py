"""Paths given by a user: inputs must be readable regular files, outputs writable, writes atomic.

Every problem is one :class:`~deplbench.errors.InputError` naming the path (exit status 2),
raised before any work where possible; every output is written to a temporary file beside its
target and renamed, so nothing is ever half-written (docs/reliability.md). The temporary file is
named after the process (``.NAME.<pid>...``): one that a SIGKILL left is removed by the next write
of the same file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from deplbench.errors import InputError
from deplbench.leftovers import remove_stale_files

#: Largest input file read (bytes): an instance of the largest family is far smaller.
MAX_INPUT_BYTES = 64 * 2**20


def check_input_file(path: str | os.PathLike, max_bytes: int = MAX_INPUT_BYTES) -> Path:
    """``path`` as a readable regular file of at most ``max_bytes``, else an :class:`InputError`.

    A directory, a FIFO or a device is refused before it is opened (reading a FIFO would block).
    """
    src = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", src) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read file ({exc.__class__.__name__})", src) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory, not a file", src)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is not a regular file", src)
    if st.st_size > max_bytes:
        raise InputError(f"file is {st.st_size} bytes, over the limit of {max_bytes}", src)
    return Path(path)


def check_output_path(path: str | os.PathLike, what: str | None = None) -> Path:
    """``path`` if a file can be written there (missing folders are created), else an :class:`InputError`.

    Refused: an existing directory or non-regular file, a path under a file, a folder that is
    not writable. Checked before any work, so that a long solve never ends in a traceback.
    """
    src = str(path)
    p = Path(path)
    if not src or src.endswith(os.sep):
        raise InputError("output path must name a file, not a folder", src or what)
    if p.exists():
        if p.is_dir():
            raise InputError("is a directory, not a file", src)
        if not p.is_file():
            raise InputError("is not a regular file (refusing to replace it)", src)
    _writable_ancestor(p.absolute().parent, src, "directory")
    return p


def _file_mode(path: Path) -> int:
    """The mode of the existing ``path``, else 0666 minus the umask (read without changing it)."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(path.stat().st_mode)
    umask = 0o022
    with contextlib.suppress(OSError, ValueError, StopIteration), open("/proc/self/status") as f:
        umask = int(next(line for line in f if line.startswith("Umask:")).split()[1], 8)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w"):
    """Yield a temporary file beside ``path``; renamed onto ``path`` only if the block succeeds.

    An :class:`OSError` (full disk, permissions) becomes one :class:`InputError` naming ``path``;
    nothing is half-written and no temporary file is left behind.
    """
    path = check_output_path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_files(path.parent, f".{path.name}.")  # what a SIGKILLed write of this file left
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, _file_mode(path))  # mkstemp makes 0600; keep the mode a plain open() would give
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or type(exc).__name__})", str(path)) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary *path* beside ``path`` for a library that writes by file name.

    As :func:`atomic_output` (matplotlib's ``savefig``, pandas' ``to_parquet``, a copy): the
    temporary file is renamed onto ``path`` only if the block succeeds; an :class:`OSError` (full
    disk, read-only disk, permissions) becomes one :class:`InputError` naming ``path``, and no
    partial or temporary file is left.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")  # the suffix picks the format
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_files(path.parent, f".{path.name}.")  # what a SIGKILLed write of this file left
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or type(exc).__name__})", str(path)) from None
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(data: bytes, path: str | os.PathLike) -> None:
    """Write ``data`` atomically to ``path`` (see :func:`atomic_output`)."""
    with atomic_output(path, "wb") as fh:
        fh.write(data)


def write_text_atomic(text: str, path: str | os.PathLike) -> None:
    """Write ``text`` atomically to ``path`` (see :func:`atomic_output`)."""
    with atomic_output(path) as fh:
        fh.write(text)


def check_output_dir(path: str | os.PathLike) -> Path:
    """``path`` if it is, or can be created as, a writable folder; else an :class:`InputError`."""
    src = str(path)
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError("exists and is not a folder", src)
    _writable_ancestor(p.absolute(), src, "folder")
    return p


def _writable_ancestor(start: Path, src: str, noun: str) -> None:
    """The nearest existing ancestor of ``start`` (itself included) must be a writable folder."""
    anc = start
    while not anc.exists() and anc != anc.parent:
        if anc.is_symlink():
            raise InputError(f"'{anc}' is a dangling link", src)
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"'{anc}' is not a {noun}", src)
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"folder '{anc}' is not writable", src)
