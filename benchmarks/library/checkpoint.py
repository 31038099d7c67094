"""A library build's checkpoint: finished entries survive a crash, Ctrl-C or a killed session.

A build of the full library takes hours. Each entry is built into its own folder of the
checkpoint, ``.NAME.partial/entries/KEY/`` beside the library ``NAME``; when the entry is
done, its result and the checksums of its files are written last, atomically, as
``done.json``. A build that stops for any reason keeps the checkpoint, and the same command
run again takes every finished entry from it and builds only the others. A successful build
assembles the library from the entries' folders and removes the checkpoint.

``KEY`` is a digest of everything the entry's files depend on: the entry, the build's limits
and sample sizes, the library version and the installed package (every ``.py``, ``.json`` and
``.toml`` file of the ``deplbench`` folders). Entries of another code or other limits are never
reused; a folder without ``done.json`` (an entry cut off mid-way) is rebuilt from scratch. A lock
file keeps two builds from writing the same checkpoint.

May import: ``benchmarks.library.build``, ``errors``. Imported by: ``benchmarks.library.catalog``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import shutil
from dataclasses import asdict
from functools import cache
from pathlib import Path

from deplbench.benchmarks.library.build import sha256
from deplbench.errors import InputError

#: the folders mapped into the ``deplbench`` namespace (pyproject's package-dir)
CODE_PACKAGES = ("deplbench", "deplbench.instances", "deplbench.formulations", "deplbench.heuristics",
                 "deplbench.benchmarks")
DONE = "done.json"


#: the files of the package that decide an entry's outcome: code and package data (paper families)
CODE_SUFFIXES = (".py", ".json", ".toml")


@cache
def code_fingerprint() -> str:
    """sha256 of the installed package's source and data (relative paths and bytes, in order)."""
    h = hashlib.sha256()
    for name in CODE_PACKAGES:
        for root in map(Path, importlib.import_module(name).__path__):
            for path in sorted(p for p in root.rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file()):
                h.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def job_key(entry, settings: tuple, version: str) -> str:
    """The digest naming an entry's folder: entry, build ``settings``, library ``version``, code."""
    text = json.dumps([asdict(entry), list(settings), version, code_fingerprint()], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Checkpoint:
    """The checkpoint folder of the library ``out`` (opened and locked in a ``with`` block)."""

    def __init__(self, out: Path):
        self.root = out.parent / f".{out.name}.partial"
        self._lock = None
        self._read: dict[str, dict] = {}

    def __enter__(self) -> Checkpoint:
        (self.root / "entries").mkdir(parents=True, exist_ok=True)
        self._lock = open(self.root / "lock", "w")  # noqa: SIM115 - held for the whole build
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise InputError("another build is writing this library's checkpoint", str(self.root)) from None
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(OSError):
            self._lock.close()

    def folder(self, key: str) -> Path:
        return self.root / "entries" / key

    def _done(self, key: str) -> dict | None:
        """The entry's parsed ``done.json`` (read once per build), or None when there is none."""
        if key not in self._read:
            try:
                self._read[key] = json.loads((self.folder(key) / DONE).read_text())
            except (OSError, ValueError):
                return None
        return self._read[key]

    def result(self, key: str) -> dict | None:
        """The finished entry's result, or None (not finished, or its files no longer match)."""
        done = self._done(key)
        if done is None:
            return None
        files = ((self.folder(key) / rel, digest) for rel, digest in done["files"].items())
        return done["result"] if all(f.is_file() and sha256(f) == digest for f, digest in files) else None

    def fresh(self, key: str) -> str:
        """An empty folder for the entry (whatever an interrupted build left there is removed)."""
        shutil.rmtree(self.folder(key), ignore_errors=True)
        self.folder(key).mkdir(parents=True)
        return str(self.folder(key))

    def finish(self, key: str, result: dict) -> None:
        """Record the entry as done: its result and its files' checksums, written last and atomically."""
        root = self.folder(key)
        files = {p.relative_to(root).as_posix(): sha256(p) for p in sorted(root.rglob("*"))
                 if p.is_file() and p.name != DONE}
        tmp = root / f".{DONE}.tmp"
        done = {"key": key, "result": result, "files": files}
        tmp.write_text(json.dumps(done) + "\n")
        os.replace(tmp, root / DONE)
        self._read[key] = done

    def assemble(self, keys: list[str], dest: Path) -> None:
        """Link (else copy) the files of the entries ``keys`` into the library folder ``dest``: links
        take no space, so a library that fills the disk can still be assembled."""
        for key in keys:
            for rel in self._done(key)["files"]:
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(self.folder(key) / rel, target)
                except OSError:
                    shutil.copy2(self.folder(key) / rel, target)

    def prune(self, keys: list[str]) -> int:
        """After a stop: remove the entries cut off mid-way, and the whole checkpoint when no entry
        is finished (nothing worth keeping); how many of this build's entries ``keys`` are kept."""
        finished = set()
        for folder in sorted((self.root / "entries").iterdir()):
            if (folder / DONE).is_file():
                finished.add(folder.name)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        if not finished:
            self.remove()
        return len(finished.intersection(keys))

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
