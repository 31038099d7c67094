"""Shared pieces of the hostile tests: valid fixture files, bad paths, and the one assertion."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import duckdb

from deplbench.cli import main

KNAPSACK = {"values": [3, 5], "weights": [2, 3], "capacity": 7, "threshold": 10}


def fixtures(d: Path) -> dict[str, Path]:
    """Valid input files of every kind in folder ``d``."""
    from deplbench.instances.families.random import random_instance
    from deplbench.instances.io import save_instance, save_plan
    from deplbench.instances.plan import Plan, Segment

    inst = random_instance(0, models=2, epochs=4)
    save_instance(inst, d / "inst.json")
    meta = inst.metadata
    save_plan(Plan(tuple(meta["reference_datasets"]), tuple(Segment(**s) for s in meta["reference_plan"])),
              d / "plan.json")
    (d / "knap.json").write_text(json.dumps(KNAPSACK))
    (d / "cfg.toml").write_text('[[experiments]]\nname = "t"\n[[experiments.instances]]\nfamily = "random"\n'
                                'params = { epochs = 4, models = 2 }\n[[experiments.solvers]]\nname = "depl"\n')
    rows = ["run,model,epoch,loss"] + [f"r{r},m,{k},{20 - k * (1 + r / 10):.3f}" for r in range(3) for k in range(6)]
    (d / "curves.csv").write_text("\n".join(rows) + "\n")
    return {p.stem: p for p in d.iterdir()}


def make_bad(kind: str, d: Path, suffix: str = ".json") -> Path:
    """A hostile input path of ``kind`` inside ``d``."""
    p = d / f"bad-{kind}{suffix}"
    if kind == "missing":
        return p
    if kind == "dir":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "devnull":
        return Path("/dev/null")
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "garbage":
        p.write_bytes(bytes(range(256)) * 4)
    elif kind == "nonutf8":
        p.write_bytes(b'{"schema": "\xff\xfe"}')
    elif kind == "huge":
        with open(p, "wb") as f:
            f.truncate(65 * 2**20)  # sparse: over the input size limit without writing it
    elif kind == "deep":
        p.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "deep-valid":
        p.write_text('{"schema": "depl-instance/1", "metadata": ' + "[" * 40 + "]" * 40 + "}")
    elif kind == "dup":
        p.write_text('{"schema": "depl-plan/1", "schema": "depl-plan/1", "datasets": [], "segments": []}')
    elif kind == "symlink-loop":
        os.symlink(p, p)
    else:
        raise ValueError(kind)
    return p


def snapshot(*dirs: Path) -> dict[str, str]:
    """sha256 of every regular file under ``dirs`` (FIFOs and devices are skipped, never opened)."""
    out = {}
    for d in dirs:
        for root, dnames, fnames in os.walk(d):
            for n in fnames + dnames:
                p = Path(root) / n
                if p.is_symlink() or not p.is_file():
                    out[str(p)] = "-"
                    continue
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def assert_one_line(argv: list[str], capsys, names: str | tuple[str, ...], *, watch: tuple[Path, ...],
                    status: int = 2) -> str:
    """Run ``deplbench argv`` in-process: exit ``status``, one stderr line naming ``names``, nothing written."""
    before = snapshot(*watch)
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == status, (argv, rc, out[-500:], err[-2000:])
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("deplbench: error:"), err
    assert "Traceback" not in err
    names = (names,) if isinstance(names, str) else names
    assert any(str(n) in lines[0] for n in names), (names, lines[0])
    assert snapshot(*watch) == before, "a file was written or changed"
    return lines[0]


def foreign_duckdb(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE accounts (id INTEGER, owner VARCHAR)")
    con.execute("INSERT INTO accounts VALUES (1, 'someone else')")
    con.close()
