"""Library tasks on Dask: each task builds in a temporary folder of its worker and returns its files.

The workers of a cluster of several machines share no disk with the client, so
:func:`build_one_files` runs :func:`~deplbench.benchmarks.library.build.build_one` into a
temporary folder of the worker and returns its result with every file it wrote (bytes, by path
relative to the library); the client writes them into the build folder (:func:`write_files`).
The bytes are those a local build writes (the same function on the same inputs, whose outcomes
are decided by deterministic limits), so a Dask build is identical to a local one. A worker that
dies mid-task sent nothing: Dask runs the task again on another worker (up to
``distributed.scheduler.allowed-failures`` times), so nothing is lost or written twice.

May import: ``benchmarks.library.build``, ``deplbench.leftovers``. Imported by: ``benchmarks.library.catalog``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deplbench.benchmarks.library.build import build_one
from deplbench.leftovers import owned_tempdir


def build_one_files(*job) -> dict:
    """``build_one(*job)`` into a temporary folder: ``{"result": ..., "files": {relative path: bytes}}``."""
    entry, _out, *rest = job
    # named after the worker's process: a killed worker's folder is removed by the next task on that machine
    with owned_tempdir("deplbench-library-") as tmp:
        result = build_one(entry, tmp, *rest)
        root = Path(tmp)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return {"result": result, "files": files}


def write_files(out: Path, files: dict[str, bytes]) -> None:
    """Write a task's files under the build folder ``out``, readable by all (as a local build)."""
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o644)


def dask_tasks(client, jobs: list[tuple], order: list[int], done: Callable[[int, dict], None]) -> None:
    """Run every job on the Dask cluster of ``client`` (in ``order``); ``done(i, result)`` as each ends."""
    from distributed import as_completed

    futs = {client.submit(build_one_files, *jobs[i], key=f"depl-library-{i}", pure=False): i for i in order}
    try:
        for fut in as_completed(list(futs)):
            i = futs[fut]
            got = fut.result()
            write_files(Path(jobs[i][1]), got["files"])
            done(i, got["result"])
    finally:
        client.cancel(list(futs))
