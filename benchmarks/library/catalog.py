"""The instance library: build it (:func:`build`) and read it back (:class:`Library`).

Layout of a library folder (``docs/library.md``)::

    manifest.json          family, parameters, seed, tier, reference, method, checksums per problem
    library.solu           MIPLIB reference lines, one per problem (instance and SAA file)
    timings.json           measured times of the build (not part of the reproducible content)
    site/index.html        the library's web pages (``library.site``; not checksummed)
    instances/NAME.json    depl-instance/1 files
    mps/NAME-sS-seedN-FORMULATION.mps   SAA MILPs (one dataset selection: all datasets)
    solutions/NAME.plan.json, solutions/NAME-...sol      reference solutions
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from deplbench.benchmarks.library import benchmark_set
from deplbench.benchmarks.library.build import (
    EASY_WORK,
    EXACT_WORK,
    SAA_NODES,
    SAA_SAFETY_S,
    SAFETY_FACTOR,
    build_one,
    entry_dict,
    sha256,
    work_model,
)
from deplbench.benchmarks.library.checkpoint import Checkpoint, job_key
from deplbench.benchmarks.library.folder import (  # noqa: F401 - Library: re-exported
    DEFAULT_DIR,
    MANIFEST_SCHEMA,
    Library,
)
from deplbench.benchmarks.library.published import comparable, compare
from deplbench.benchmarks.library.solu import Reference, read_solu, write_solu
from deplbench.benchmarks.library.spec import (
    FORMULATIONS,
    LIBRARY_VERSION,
    SCENARIO_SEED,
    SCENARIOS,
    TIERS,
    entries,
)
from deplbench.errors import InputError
from deplbench.leftovers import remove_stale


def _tasks(workers: int, jobs: dict[int, tuple], finished, client=None) -> None:
    """Run ``build_one(*job)`` for every job (in worker processes when ``workers > 1``, on the Dask
    cluster of ``client`` if given); ``finished(i, result)`` as each ends."""
    # the largest budgets first, so that the long proofs do not trail at the end of the build
    order = sorted(jobs, key=lambda i: -jobs[i][0].budget)
    if client is not None:
        from deplbench.benchmarks.library.remote import dask_tasks

        dask_tasks(client, jobs, order, finished)
        return
    if workers <= 1:
        for i in order:
            finished(i, build_one(*jobs[i]))
        return
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futs = {pool.submit(build_one, *jobs[i]): i for i in order}
        for fut in as_completed(futs):
            finished(futs[fut], fut.result())
    except BaseException:  # Ctrl-C, SIGTERM, a failed task: no worker outlives the build
        _stop_pool(pool)
        raise
    pool.shutdown()


def _show(r: dict, count: int, total: int, log, kept: bool = False) -> None:
    t = r["timing"]
    proof = "not proven" if r["tier"] == "hard" else (
        f"proven, work {t['proof_work']:,} units" if t["proof_work"] is not None else "proven")
    log(f"[{count}/{total}] {r['name']}: {r['tier']} ({proof}){' - kept from the checkpoint' if kept else ''}")


def _run_entries(ents: list, settings: tuple, ck: Checkpoint, workers: int, log, client) -> tuple[list[dict], int]:
    """Every entry's result (finished ones from the checkpoint ``ck``, the others built into it) and
    how many came from the checkpoint."""
    keys = [job_key(e, settings, LIBRARY_VERSION) for e in ents]
    results: list[dict | None] = [ck.result(k) for k in keys]
    count = 0
    for r in results:
        if r is not None:
            count += 1
            _show(r, count, len(ents), log, kept=True)
    kept = count
    jobs = {i: (e, ck.fresh(keys[i]), *settings) for i, e in enumerate(ents) if results[i] is None}

    def finished(i: int, r: dict) -> None:
        nonlocal count
        ck.finish(keys[i], r)
        results[i] = r
        count += 1
        _show(r, count, len(ents), log)

    _tasks(workers, jobs, finished, client)
    return results, kept  # type: ignore[return-value]


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and end the workers now (a running task is lost: the build failed)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(5)


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists())):
        raise InputError("exists and is not a library folder (no manifest.json); choose another", str(out))


def build(out: str | Path = DEFAULT_DIR, *, tiers: tuple[str, ...] = TIERS, quick: bool = False,
          calibration: str | None = None, time_limit: float | None = None, saa_time_limit: float = SAA_SAFETY_S,
          saa_nodes: int = SAA_NODES,
          exact_work: int = EXACT_WORK, scenarios: tuple[int, ...] = SCENARIOS, workers: int = 1, log=None,
          scheduler: str | None = None, cluster: str | None = None) -> dict:
    """Build the library into ``out`` (replaced as a whole when the build succeeds); a summary.

    ``exact_work`` and ``saa_nodes`` are the deterministic limits of the reference runs,
    ``time_limit`` and ``saa_time_limit`` their wall-clock safety limits (per run; ``time_limit``
    None: :data:`~deplbench.benchmarks.library.build.SAFETY_FACTOR` times the work limit). With
    ``scheduler`` (an address) or ``cluster='local'`` (``workers`` Dask workers) the entries are
    built on Dask (:mod:`~deplbench.benchmarks.library.remote`), with the same files.
    """
    if scheduler and cluster:
        raise InputError("give either --scheduler or --cluster, not both", "--scheduler")
    out = Path(out)
    log = log or (lambda msg: print(msg, flush=True))
    for t in tiers:
        if t not in TIERS:
            raise InputError(f"unknown tier '{t}' (known: {', '.join(TIERS)})", "--tiers")
    _check_out(out)
    t0 = time.perf_counter()
    ents, notes = entries(calibration, quick)
    ents = list(dict.fromkeys(ents))
    settings = (tuple(tiers), time_limit, saa_time_limit, saa_nodes, tuple(scenarios), exact_work)
    tmp = out.parent / f".{out.name}.building-{os.getpid()}"
    dask = None
    with Checkpoint(out) as ck:
        try:
            if scheduler or cluster:  # connecting fails before any work (one line)
                from deplbench.benchmarks.harness.runner import dask_client

                dask = dask_client(workers, scheduler, cluster)
            results, kept = _run_entries(ents, settings, ck, workers, log, dask[0] if dask else None)
        except BaseException:
            kept = ck.prune([job_key(e, settings, LIBRARY_VERSION) for e in ents])
            if kept:
                log(f"build stopped: {kept} of {len(ents)} entries are kept in {ck.root}; the same command "
                    "continues from them")
            raise
        finally:
            if dask is not None:
                dask[0].close()
                if dask[1] is not None:
                    dask[1].close()
        shutil.rmtree(tmp, ignore_errors=True)
        remove_stale(out.parent, f".{out.name}.building-")  # what a SIGKILLed build of the same library left
        tmp.mkdir(parents=True)
        try:
            summary = _write_library(out, tmp, ents, results, ck, settings, quick, notes,
                                     {"workers": workers, "engine": scheduler or (
                                         "dask LocalCluster" if cluster else "local processes"),
                                      "kept_from_checkpoint": kept}, t0)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        ck.remove()
    # the published references hold for the default list and limits only (published.py)
    if comparable(quick, calibration, tiers, saa_nodes, scenarios, exact_work):
        summary["published"] = compare(list(read_solu(out / "library.solu").items()), LIBRARY_VERSION)
    return summary


def _write_library(out: Path, tmp: Path, ents: list, results: list[dict], ck: Checkpoint, settings: tuple,
                   quick: bool, notes: list, engine: dict, t0: float) -> dict:
    """Assemble the entries' files in ``tmp``, write manifest, .solu, timings and site; replace ``out``."""
    tiers, time_limit, saa_time_limit, saa_nodes, scenarios, exact_work = settings
    ck.assemble([job_key(e, settings, LIBRARY_VERSION) for e in ents], tmp)
    names = Counter(r["name"] for r in results)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise RuntimeError(f"two library entries generate the same instance name: {dup[:3]}")
    recs = [dict(r["record"], entry=entry_dict(e)) for r, e in zip(results, ents, strict=True) if r["record"]]
    refs = [(r["name"], Reference(**r["reference"])) for r in recs]
    refs += [(s["name"], Reference(**s["reference"])) for r in recs for s in r["saa"]]
    write_solu(refs, tmp / "library.solu")
    manifest = {
        "schema": MANIFEST_SCHEMA, "version": LIBRARY_VERSION, "quick": quick, "tiers": list(tiers),
        "rules": {"easy_work": EASY_WORK, "work_model": work_model(), "time_limit": time_limit,
                  "safety_factor": SAFETY_FACTOR, "exact_work": exact_work,
                  "saa_time_limit": saa_time_limit, "saa_nodes": saa_nodes,
                  "scenarios": list(scenarios), "scenario_seed": SCENARIO_SEED, "formulations": list(FORMULATIONS)},
        "notes": notes, "solu": "library.solu", "solu_sha256": sha256(tmp / "library.solu"),
        "benchmark": {"rule": benchmark_set.RULE, "instances": benchmark_set.select(recs)}, "instances": recs}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    build_s = time.perf_counter() - t0
    from deplbench.version import __version__

    timings = {"deplbench": __version__, "python": sys.version.split()[0], "build_s": round(build_s, 1),
               **engine, "load_avg": [round(x, 2) for x in os.getloadavg()],
               "instances": {r["name"]: r["timing"] for r in results}}
    (tmp / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    from deplbench.benchmarks.library.site import build_library_site

    build_library_site(tmp)  # site/: the library's pages (not checksummed)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return {"out": str(out), "build_s": build_s, "kept": engine["kept_from_checkpoint"], "instances": len(recs), "problems": len(refs),
            "tiers": dict(Counter(r["tier"] for r in recs)), "families": dict(Counter(r["family"] for r in recs)),
            "references": dict(Counter(ref.kind for _, ref in refs)), "left_out": dict(Counter(
                r["tier"] for r in results if r["record"] is None)), "notes": notes,
            "safety_hits": [h for r in results for h in r["timing"].get("safety_hits", [])]}
