"""A results folder as one archive (store, exports, machine record, report site) that ``deplbench compare`` opens.

:func:`write_bundle` packs the folder's ``results.duckdb`` (with its write-ahead log, if any), the
exported tables, ``machine.json`` and the report folder into ``NAME.tar.gz``; :func:`open_bundle`
unpacks one into a temporary folder, refusing members that would land outside it.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

from deplbench.benchmarks.harness.store import DB_NAME

SUFFIX = ".tar.gz"


def write_bundle(root: Path, exported: Iterable[Path], out: Path) -> Path:
    """Write ``out`` (a ``.tar.gz``) holding the store of ``root``, the ``exported`` files and ``root/report``."""
    from deplbench.files import atomic_path

    members = [root / DB_NAME, root / (DB_NAME + ".wal"), *exported, root / "report"]
    with atomic_path(out) as tmp, tarfile.open(tmp, "w:gz") as tar:
        for p in dict.fromkeys(members):
            if p.exists():
                tar.add(p, arcname=p.name)
    return out


def is_bundle(path: str | Path) -> bool:
    return str(path).endswith(SUFFIX) and Path(path).is_file()


def open_bundle(path: str | Path) -> Path:
    """Unpack the archive ``path`` into a new temporary folder; that folder (a results folder)."""
    from deplbench.errors import InputError

    dest = Path(tempfile.mkdtemp(prefix="deplbench-bundle-"))
    try:
        with tarfile.open(path, "r:gz") as tar:
            tar.extractall(dest, filter="data")  # no absolute paths, no escapes, no devices
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"not a results archive ({type(exc).__name__}: {exc})", str(path)) from None
    if not (dest / DB_NAME).is_file():
        raise InputError(f"the archive holds no result store {DB_NAME}", str(path))
    return dest
