"""A results folder as one archive (store, exports, machine record, report site) that ``deplbench compare`` opens.

:func:`write_bundle` packs the folder's ``results.duckdb`` (with its write-ahead log, if any), the
exported tables, ``machine.json`` and the report folder into ``NAME.tar.gz``; :func:`open_bundle`
unpacks one into a temporary folder ``TMPDIR/deplbench-bundle-PID-XXXX`` (the caller removes it), refusing members that would land outside it.
"""

from __future__ import annotations

import shutil
import tarfile
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
    from deplbench.leftovers import make_owned_tempdir

    # named after this process: a SIGKILLed compare's copy is removed by the next one that unpacks
    dest = make_owned_tempdir("deplbench-bundle-")
    try:
        with tarfile.open(path, "r:gz") as tar:
            tar.extractall(dest, filter="data")  # no absolute paths, no escapes, no devices
        if not (dest / DB_NAME).is_file():
            raise InputError(f"the archive holds no result store {DB_NAME}", str(path))
    except (tarfile.TarError, OSError, EOFError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise InputError(f"not a results archive ({type(exc).__name__}: {exc})", str(path)) from None
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest
