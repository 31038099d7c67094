"""The machine record of a result store: the machine a grid ran on, written once per store, and its warm-ups.

Table ``meta`` of the store holds it as JSON under ``machine`` (CPU model, count, affinity,
frequency, RAM, OS and kernel, the thread variables, Python, every package and solver binary the
methods may use with its version, the suite's version and commit) and under ``warmups`` the
compile warm-ups of each grid (seconds, outside every run's clock). A store belongs to one
machine: :func:`claim` refuses, in one line, a grid of another host (docs/decisions.md,
"A store belongs to one machine").
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

#: the thread variables of BLAS, OpenMP and numba that decide how many threads a method may start
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES")


def _read(path: str) -> str | None:
    with contextlib.suppress(OSError):
        return Path(path).read_text()
    return None


def ram_mb() -> float | None:
    """Total RAM in MB (``/proc/meminfo``), or None where unreadable."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo") or "", re.M)
    return int(m.group(1)) / 1024.0 if m else None


def cpu_mhz() -> dict[str, float | None]:
    """The CPU's maximum frequency (cpufreq) and the current one (``/proc/cpuinfo``), in MHz, where readable."""
    top = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    now = re.search(r"^cpu MHz\s*:\s*([\d.]+)", _read("/proc/cpuinfo") or "", re.M)
    return {"max": int(top) / 1000.0 if top and top.strip().isdigit() else None,
            "current": float(now.group(1)) if now else None}


def _binary_version(argv: list[str], pattern: str, env: dict | None = None) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else None


def binaries() -> dict[str, dict[str, str | None]]:
    """The solver binaries of the ``mps`` method and the SCIP library of pyscipopt: {name: {path, version}}."""
    out: dict[str, dict[str, str | None]] = {}
    with contextlib.suppress(Exception):  # the paths the `mps` method uses (formulations/backends/mps.py)
        from pulp.apis import coin_api

        path = os.path.normpath(coin_api.pulp_cbc_path)
        out["cbc"] = {"path": path, "version": _binary_version([path, "-quit"], r"Version:\s*(\S+)")}
    with contextlib.suppress(Exception):
        import highsbox

        env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(
            p for p in (highsbox.highs_lib_dir(), os.environ.get("LD_LIBRARY_PATH", "")) if p)}
        path = highsbox.highs_bin_path()
        out["highs"] = {"path": path, "version": _binary_version([path, "--version"], r"version\s+(\S+)", env)}
    with contextlib.suppress(Exception):
        import pyscipopt

        out["scip"] = {"path": None, "version": str(pyscipopt.Model().version())}
    return out


def record() -> dict[str, Any]:
    """What this machine is and what the suite runs with (a JSON-able dict)."""

    from deplbench.benchmarks.harness.rows import cpu_model, git_commit, package_versions
    from deplbench.benchmarks.harness.timing import cores
    from deplbench.version import __version__

    rel: dict[str, str] = {}
    with contextlib.suppress(OSError):
        rel = platform.freedesktop_os_release()

    packages = package_versions()
    return {
        "host": socket.gethostname(), "cpu": cpu_model().rsplit(" x", 1)[0], "cpu_count": os.cpu_count(),
        "cores": cores(), "cpu_mhz": cpu_mhz(), "ram_mb": ram_mb(),
        "os": rel.get("PRETTY_NAME") or platform.platform(), "kernel": platform.release(),
        "machine": platform.machine(), "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": packages, "binaries": binaries(),
        "suite": {"version": __version__, "git_commit": git_commit()},
    }


def read(con, key: str = "machine") -> Any:
    """The JSON value ``key`` of the store's table ``meta`` (None when absent)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "meta" not in tables:
        return None
    row = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def _write(con, key: str, value: Any) -> None:
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, json.dumps(value, sort_keys=True, default=str)])


def claim(store) -> None:
    """Refuse (:class:`~deplbench.errors.InputError`, one line) a store that holds another host's runs.

    Their times are not comparable, and a resumed grid would skip runs this machine never made.
    """
    from deplbench.errors import InputError

    old, host = read(store.con), socket.gethostname()
    if old is not None and old.get("host") != host:
        raise InputError(f"result store of host '{old.get('host')}', this is '{host}': a store belongs "
                         "to one machine; choose another --out and put both side by side with `deplbench compare`",
                         str(store.path))


def note_grid(store, warmup_s: float, runs: int) -> dict[str, Any]:
    """Write this machine's record (refreshed: versions may have changed) and append the grid's warm-up.

    Called once the fork server has started, so the thread variables are those the runs see.
    """
    from deplbench.benchmarks.harness.rows import now
    from deplbench.benchmarks.harness.store import disk_errors

    mine = record()
    warmups = read(store.con, "warmups") or []
    warmups.append({"at": now().isoformat(timespec="seconds"), "warmup_s": round(warmup_s, 3), "runs": runs})
    with disk_errors(store.path):
        _write(store.con, "machine", mine)
        _write(store.con, "warmups", warmups[-50:])
    return mine
