"""``deplbench solve`` honours ``--time-limit`` (build, solve, certification) and ``--memory-limit``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

import deplbench.benchmarks.harness.testing  # noqa: F401 - registers harness-hog
from deplbench.cli import main
from deplbench.registry import solver_names

#: every registered method, each in a forked child of one prepared interpreter, four at once
_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    from deplbench.cli import build_parser, main
    from deplbench.registry import get_solver, solver_names
    build_parser()
    inst, out = sys.argv[1], sys.argv[2]
    pids = {}
    for i, m in enumerate(solver_names()):
        get_solver(m)
        if i % 4 == 0:  # four at a time: the machine has two cores
            for pid in pids:
                os.waitpid(pid, 0)
            pids = {}
        pid = os.fork()
        if pid == 0:
            t = time.perf_counter()
            rc = main(["solve", inst, "--solver", m, "--time-limit", "5", "--out", f"{out}/{m}.json"])
            with open(f"{out}/{m}.time", "w") as f:
                json.dump({"rc": rc, "s": time.perf_counter() - t}, f)
            os._exit(0)
        pids[pid] = m
    for pid in pids:
        os.waitpid(pid, 0)
""")


@pytest.mark.slow
def test_time_limit_holds_for_every_method(tmp_path):
    inst = tmp_path / "big.json"
    assert main(["generate", "random", "--set", "models=50", "--set", "clusters=50", "--set", "levels=100",
                 "--set", "epochs=1000", "--set", "datasets=4", "--out", str(inst)]) == 0
    subprocess.run([sys.executable, "-c", _SCRIPT, str(inst), str(tmp_path)], check=True, timeout=120,
                   capture_output=True)
    for m in solver_names():
        t = json.loads((tmp_path / f"{m}.time").read_text())
        plan = json.loads((tmp_path / f"{m}.json").read_text())
        assert t["rc"] == 0 and t["s"] < 8.0, (m, t)
        assert plan["status"] == "timeout", (m, plan["status"])  # the instance takes each far longer


def test_memory_limit_gives_memout(tmp_path, capsys):
    from deplbench.instances.families.random import random_instance
    from deplbench.instances.io import save_instance

    save_instance(random_instance(0, models=2, epochs=4), tmp_path / "i.json")
    t = time.perf_counter()
    rc = main(["solve", str(tmp_path / "i.json"), "--solver", "harness-hog", "--set", "mb=2000",
               "--memory-limit", "300", "--out", str(tmp_path / "p.json")])
    assert rc == 0 and time.perf_counter() - t < 30
    assert json.loads((tmp_path / "p.json").read_text())["status"] == "memout"
    assert capsys.readouterr().out.startswith("harness-hog: memout")


@pytest.mark.parametrize("limit", ["0", "-1", "inf", "nan", "x"])
def test_bad_memory_limit_is_one_line(tmp_path, capsys, limit):
    rc = main(["solve", str(tmp_path / "i.json"), "--solver", "depl", "--memory-limit", limit,
               "--out", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--memory-limit" in err
    assert not (tmp_path / "p.json").exists()


def _clock(instance, *, path, time_limit, seed, threads):
    """A method that writes when it started and the ``time_limit`` it was given."""
    from deplbench.results import SolveResult, Status

    with open(path, "w") as f:
        json.dump({"start": time.perf_counter(), "time_limit": time_limit}, f)
    return SolveResult(Status.ERROR, message="a clock, no plan")


@pytest.fixture
def clock(monkeypatch):
    from deplbench import registry

    for method in registry.solver_names():  # loaded before the table is swapped for a copy
        registry.get_solver(method)
    monkeypatch.setitem(registry.SOLVER_MODULES, "_clock", __name__)
    monkeypatch.setattr(registry, "_SOLVERS", dict(registry._SOLVERS))
    registry.register_solver("_clock", kind="heuristic", defaults={"path": ""})(_clock)
    return registry


def test_a_deadline_cuts_the_methods_time_limit_and_keeps_the_given_one(clock, tmp_path):
    from deplbench.instances.families.random import random_instance

    out = tmp_path / "clock.json"
    end = time.perf_counter() + 2.0
    res = clock.solve("_clock", random_instance(0, models=2, epochs=4), {"time_limit": 60, "path": str(out)},
                      deadline=end)
    got = json.loads(out.read_text())
    assert 1.0 < got["time_limit"] <= 2.0 and abs(got["start"] + got["time_limit"] - end) < 1e-3
    assert res.params["time_limit"] == 60.0  # the result records the limit asked for
    clock.solve("_clock", random_instance(0, models=2, epochs=4), {"time_limit": 60, "path": str(out)},
                deadline=time.perf_counter() - 5.0)
    assert json.loads(out.read_text())["time_limit"] == pytest.approx(1e-3)  # past: no time, not a negative one


def test_solve_gives_the_method_the_commands_clock(clock, tmp_path):
    """The method's limit ends at the command's start plus ``--time-limit`` less ``END_SHARE``
    of it (the fork and the loading count), so the watcher's grace is left for the certification."""
    from deplbench.instances.families.random import random_instance
    from deplbench.instances.io import save_instance

    save_instance(random_instance(0, models=2, epochs=4), tmp_path / "i.json")
    before = time.perf_counter()
    main(["solve", str(tmp_path / "i.json"), "--solver", "_clock", "--set", f"path={tmp_path / 'c.json'}",
          "--time-limit", "4", "--out", str(tmp_path / "p.json")])
    from deplbench.cli.core import END_SHARE

    got = json.loads((tmp_path / "c.json").read_text())
    assert got["time_limit"] < 4.0
    assert before + 4.0 * (1 - END_SHARE) <= got["start"] + got["time_limit"] < before + 4.5


def test_a_missing_declared_import_is_an_error_result_not_a_crash(clock):
    """``solve`` imports the declared modules before the clock; one that is missing is the run's
    error (as it was when the method imported it itself), never an exception of ``solve``."""
    from deplbench.instances.families.random import random_instance

    clock.register_solver("_missing", kind="heuristic", entry="deplbench_no_such_module:solve",
                          imports=("deplbench_no_such_library",), description="declares what is not installed")
    res = clock.solve("_missing", random_instance(0, models=2, epochs=4), {"time_limit": 5})
    assert res.status.value == "error" and "deplbench_no_such_module" in res.message
    assert res.plan is None
