"""The harness from a plain Python script: no main guard needed, compile caches warmed outside the clocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from harness_configs import config, solver

from deplbench.benchmarks.harness.store import Store


def test_run_config_works_from_a_script_without_a_main_guard(tmp_path):
    """The README's API saved as a file and run with ``python FILE``: the run processes never re-run it."""
    cfg = config(tmp_path, [solver("harness-ok")], seeds=(0, 1, 2))
    log = tmp_path / "executions.txt"
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent(f"""\
        import json
        import deplbench as db

        with open({str(log)!r}, "a") as f:
            f.write("ran\\n")
        out = db.run_config({str(cfg)!r}, out={str(tmp_path / "out")!r}, progress=False, report=False)
        df = db.read_results({str(tmp_path / "out")!r})
        print(json.dumps({{"counts": {{str(k): v for k, v in out.counts.items()}}, "rows": len(df)}}))
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert log.read_text().splitlines() == ["ran"]  # the script ran once, not once per run process
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"counts": {"ok": 3}, "rows": 3}
    with Store(tmp_path / "out") as st:
        df = st.runs()
    assert (df["harness_status"] == "ok").all() and df["error"].isna().all()


def test_the_grid_warms_its_methods_declared_imports_before_the_runs(tmp_path):
    """A throwaway process imports what the grid's methods declare before any run (numba compiles
    there, not inside a run's limits): the declared module is imported by one more process than runs.

    The grid runs in a command of its own: its fork server must start with the log variable set
    (a fork server this test process already runs would not see it).
    """
    log = tmp_path / "imports.txt"
    # with harness-ok beside it, harness-preloaded's declared module is not shared, so not preloaded
    path = config(tmp_path, [solver("harness-preloaded"), solver("harness-ok")], seeds=(0, 1))
    env = {**os.environ, "DEPLBENCH_TEST_IMPORT_LOG": str(log)}
    done = subprocess.run([sys.executable, "-m", "deplbench", "run", str(path), "--out", str(tmp_path / "out"),
                           "--workers", "1", "--quiet", "--no-report"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ran 4 (ok 4)" in done.stdout and "warm-up (compile caches" in done.stdout, done.stdout
    pids = log.read_text().split()
    assert len(set(pids)) == 3, pids  # the warm-up and the two harness-preloaded runs


def test_a_local_dask_cluster_from_an_unguarded_script_is_refused_before_anything_starts(tmp_path):
    """Dask's workers are spawned and re-run the script: the call is refused in one line naming it."""
    cfg = config(tmp_path, [solver("harness-ok")], seeds=(0,))
    script = tmp_path / "cluster.py"
    script.write_text(textwrap.dedent(f"""\
        import deplbench as db

        db.run_config({str(cfg)!r}, out={str(tmp_path / "out")!r}, cluster="local", workers=1,
                      progress=False, report=False)
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert f"{script}:3: cluster='local' from a script" in last and "__name__ ==" in last
    assert not (tmp_path / "out").exists()


def test_the_call_site_check_tells_a_guarded_call_from_an_unguarded_one(tmp_path):
    """A call under ``if __name__ == "__main__":`` (directly or through a function) is fine."""
    code = textwrap.dedent("""\
        from deplbench.benchmarks.harness.forkctx import unguarded_call_site

        def site():
            return unguarded_call_site()

        print("top", site())
        if "__main__" == __name__:
            print("guarded", site())
        """)
    script = tmp_path / "site.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60).stdout
    assert out.splitlines() == [f"top {script}:6", "guarded None"]
