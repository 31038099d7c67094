"""A built library folder read back: its manifest, references and problem lookup (:class:`Library`).

May import: ``benchmarks.library.solu``, the core. Imported by: ``catalog`` (which builds the folder),
``check``, ``family``, ``report``, ``site`` and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from deplbench.benchmarks.library.solu import Reference, read_solu
from deplbench.errors import InputError

MANIFEST_SCHEMA = "depl-library/1"
DEFAULT_DIR = "deplbench-library"


@dataclass
class Library:
    """A built library folder: its manifest, references and problem lookup."""

    root: Path
    manifest: dict
    refs: dict[str, Reference]

    @classmethod
    def open(cls, root: str | Path = DEFAULT_DIR) -> Library:
        root = Path(root)
        man = root / "manifest.json"
        if not man.is_file():
            raise InputError("not a library folder (no manifest.json; build one with 'deplbench library build')",
                             str(root))
        data = json.loads(man.read_text())
        if data.get("schema") != MANIFEST_SCHEMA:
            raise InputError(f"schema must be '{MANIFEST_SCHEMA}'", str(man), "$.schema")
        return cls(root, data, read_solu(root / data["solu"]))

    def find(self, name: str) -> tuple[dict, dict | None]:
        """(instance record, SAA record or None) of the problem ``name``."""
        for rec in self.manifest["instances"]:
            if rec["name"] == name:
                return rec, None
            for s in rec["saa"]:
                if s["name"] == name:
                    return rec, s
        raise InputError(f"no problem '{name}' in the library", str(self.root / "manifest.json"))

    def files(self) -> dict[str, str]:
        """Relative path -> sha256 of every file the manifest lists (instances, MPS of both formats, solutions, solu)."""
        out = {self.manifest["solu"]: self.manifest["solu_sha256"]}
        for rec in self.manifest["instances"]:
            for r in (rec, *rec["saa"]):
                out[r["file"]] = r["sha256"]
                if "free" in r:
                    out[r["free"]] = r["free_sha256"]
                if "solution" in r:
                    out[r["solution"]] = r["solution_sha256"]
        return out
