"""A report folder written aside and moved into place, so that a stopped report leaves no half-written folder.

The report is built in a sibling folder ``.NAME.partial-PID`` and moved to ``NAME`` when complete:
renamed whole when ``NAME`` does not exist, else entry by entry with ``report.md`` last. An
exception or Ctrl-C removes the partial folder; one left by a SIGKILL (or a SIGTERM, which ends the
process without clean-up) is removed by the next report into the same folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

PARTIAL = ".{name}.partial-"
#: moved last into an existing folder: its presence means the report is complete
LAST = "report.md"


def clean_partials(out: Path) -> list[Path]:
    """Remove the partial folders of reports into ``out`` whose process is gone; the removed ones."""
    from deplbench.leftovers import remove_stale

    return remove_stale(out.parent, PARTIAL.format(name=out.name))


@contextlib.contextmanager
def disk_errors_of(out: Path) -> Iterator[None]:
    """An OSError (full disk, permissions) inside the block is one InputError naming ``out``."""
    from deplbench.errors import InputError

    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or type(exc).__name__})", str(out)) from None


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A fresh folder to write the report of ``out`` into; moved to ``out`` when the block ends normally."""
    out = Path(out)
    clean_partials(out)
    stage = out.parent / (PARTIAL.format(name=out.name) + str(os.getpid()))
    shutil.rmtree(stage, ignore_errors=True)
    with disk_errors_of(out):
        stage.mkdir(parents=True)
    from deplbench.errors import InputError

    try:
        yield stage
        with disk_errors_of(out):
            _move_into(stage, out)
    except InputError as exc:  # a file of the partial folder is named as it would be in place
        if exc.source and exc.source.startswith(str(stage)):
            raise InputError(exc.message, str(out) + exc.source[len(str(stage)):], exc.path) from None
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _move_into(stage: Path, out: Path) -> None:
    if not out.exists():
        os.replace(stage, out)
        return
    names = sorted(p.name for p in stage.iterdir())
    for name in sorted(names, key=lambda n: n == LAST):
        src, dst = stage / name, out / name
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        os.replace(src, dst)
