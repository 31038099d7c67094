"""Limits that mean what they say: saa-bounds ends within its time limit and grace; counts are capped before
any allocation; the memory limit is the resident memory of the process tree."""

from __future__ import annotations

import json
import time

import pytest

import deplbench.benchmarks.harness.testing  # noqa: F401 - registers the harness-* methods
from deplbench.cli import main
from deplbench.cli.saa_bounds import MAX_REPLICATIONS, SAA_GRACE_S
from hostile.kit import assert_one_line, fixtures


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return fixtures(d)


@pytest.mark.parametrize("option,value,largest", [
    ("--replications", "100000000000", MAX_REPLICATIONS), ("--replications", str(MAX_REPLICATIONS + 1), MAX_REPLICATIONS),
    ("--scenarios", "100000000000", 100_000), ("--lb-scenarios", "10000000", 100_000),
    ("--eval-samples", "100000000000", 10_000_000), ("--eval-samples", "1e12", None),
    ("--time-limit", "nan", None), ("--time-limit", "-1", None), ("--time-limit", "inf", None)])
def test_absurd_saa_bounds_counts_are_refused_naming_the_option(tmp_path, capsys, files, option, value, largest):
    line = assert_one_line(["saa-bounds", files["inst"], option, value], capsys, option, watch=(tmp_path,))
    if largest is not None:
        assert str(largest) in line, line


@pytest.mark.slow
@pytest.mark.parametrize("replications", [1, 3])
def test_saa_bounds_ends_within_its_time_limit_and_grace(tmp_path, capsys, replications):
    inst = tmp_path / "p.json"
    assert main(["generate", "paper-alexnet", "--out", str(inst)]) == 0
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(["saa-bounds", str(inst), "--time-limit", "2", "--replications", str(replications), "--json"])
    took = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert rc == 0
    assert took <= 2 + SAA_GRACE_S, took
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert len(d["replication_values"]) == replications


def _solve(files, tmp_path, capsys, solver, limit, *sets):
    args = ["solve", str(files["inst"]), "--solver", solver, "--memory-limit", str(limit), "--time-limit", "60",
            "--out", str(tmp_path / "p.json")]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_reserved_address_space_is_not_resident_memory(tmp_path, capsys, files):
    """3 GB reserved, 50 MB touched, under a 2000 MB limit: the run is not a memout (it was, under RLIMIT_AS)."""
    out = _solve(files, tmp_path, capsys, "harness-reserve", 2000, "mb=3000", "touch=50")
    assert out.startswith("harness-reserve: feasible"), out


@pytest.mark.slow
@pytest.mark.parametrize("solver,sets", [("harness-hog", ("mb=600",)),
                                          ("harness-hog-child", ("mb=200", "children=2"))])
def test_resident_memory_of_the_tree_over_the_limit_is_memout(tmp_path, capsys, files, solver, sets):
    out = _solve(files, tmp_path, capsys, solver, 300, *sets)
    assert out.startswith(f"{solver}: memout"), out
    assert "resident memory of its process tree (limit 300 MB)" in out or "MemoryError" in out, out


@pytest.mark.slow
def test_a_grid_stores_the_tree_peak_under_a_memory_limit(tmp_path):
    from harness_configs import config, solver

    from deplbench.benchmarks.api import run_config
    from deplbench.benchmarks.harness.store import Store

    cfg = config(tmp_path, [solver("harness-reserve", mb=3000.0, touch=200.0), solver("harness-hog-child", mb=150.0,
                                                                                         children=2, hold=5.0)],
                 seeds=(0,), harness="grace = 5.0\nmemory_limit_mb = 1000\neval_samples = 100")
    run_config(cfg, tmp_path / "out", workers=1, progress=False, report=False)
    with Store(tmp_path / "out", read_only=True) as st:
        rows = st.runs().set_index("solver")
    assert rows.loc["harness-reserve", "harness_status"] == "ok", rows.loc["harness-reserve", "error"]
    assert 200 <= rows.loc["harness-reserve", "peak_mem_mb"] < 1000  # touched, not reserved
    assert rows.loc["harness-hog-child", "harness_status"] == "ok"
    assert rows.loc["harness-hog-child", "peak_mem_mb"] >= 300  # two grandchildren of 150 MB: the tree's sum


#: one library entry whose proofs take far longer than a second: 4 models, 30 epochs (SAA files: 120 pairs)
SLOW_ENTRY = {"models": 4, "clusters": 3, "levels": 6, "datasets": 2, "epochs": 30, "noise_mode": "per_run",
              "transfer": 5.0}


def _build_one_entry(tmp_path, monkeypatch, limit: float) -> tuple[dict, float]:
    """``library build`` of :data:`SLOW_ENTRY` alone, both safety limits ``limit`` s, deterministic limits
    out of reach: (its timings.json entry, the build's wall seconds)."""
    from deplbench.benchmarks.library import catalog
    from deplbench.benchmarks.library.spec import Entry

    entry = Entry("random", tuple(sorted(SLOW_ENTRY.items())), 1, True)
    monkeypatch.setattr(catalog, "entries", lambda *_a: ([entry], []))
    t0 = time.perf_counter()
    s = catalog.build(tmp_path / "lib", quick=True, scenarios=(200,), time_limit=limit, saa_time_limit=limit,
                      exact_work=10**12, saa_nodes=10**9, workers=1, log=lambda _m: None)
    took = time.perf_counter() - t0
    timing = json.loads((tmp_path / "lib" / "timings.json").read_text())["instances"]
    assert s["instances"] == 1 and len(timing) == 1
    return next(iter(timing.values())), took


@pytest.mark.slow
def test_library_reference_runs_end_within_their_safety_limits_and_grace(tmp_path, monkeypatch):
    from deplbench.benchmarks.library.runs import EXACT_GRACE_S, SAA_SOLVE_GRACE_S

    t, _ = _build_one_entry(tmp_path, monkeypatch, 0.5)
    assert t["exact"]["exact"]["status"] == "timeout", t["exact"]  # stopped by the clock, not by its work
    assert all(run["wall_s"] <= 0.5 + EXACT_GRACE_S for run in t["exact"].values()), t["exact"]
    solves = {k: v for k, v in t["saa"].items() if k.endswith("-aggregated")}
    assert len(solves) == 1 and all(v <= 0.5 + SAA_SOLVE_GRACE_S for v in solves.values()), t["saa"]
    assert any("S=200" in h for h in t["safety_hits"]) and any(h.endswith(" exact") for h in t["safety_hits"]), t


@pytest.mark.slow
def test_library_runs_that_ignore_their_limit_are_killed_at_limit_and_grace(tmp_path, monkeypatch):
    """A method and an SAA solve that never look at the clock: the build's watcher kills each at its
    limit plus grace, records it as a safety hit, and the build ends."""
    from deplbench import registry
    from deplbench.benchmarks.library import runs
    from deplbench.benchmarks.library.runs import EXACT_GRACE_S, SAA_SOLVE_GRACE_S

    def stuck(*_a, **_k):
        time.sleep(600)

    monkeypatch.setattr(registry, "solve", stuck)
    monkeypatch.setattr(runs, "solve_saa_file", stuck)
    t, took = _build_one_entry(tmp_path, monkeypatch, 1.0)
    assert {m: r["status"] for m, r in t["exact"].items()} == {"bruteforce": "timeout", "exact": "timeout"}
    assert all(1.0 <= r["wall_s"] <= 1.0 + EXACT_GRACE_S + 1.0 for r in t["exact"].values()), t["exact"]
    solve_s = [v for k, v in t["saa"].items() if k.endswith("-aggregated")]
    assert len(solve_s) == 1 and 1.0 <= solve_s[0] <= 1.0 + SAA_SOLVE_GRACE_S + 1.0, t["saa"]
    assert len(t["safety_hits"]) == 3, t["safety_hits"]
    assert took < 60, took  # three kills, not three sleeps of 600 s
