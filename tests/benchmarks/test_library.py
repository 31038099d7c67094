"""The library: quick build (small samples for speed), reproducibility, references recomputed, the checker."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from pathlib import Path

import highspy
import pytest
from harness_configs import library_config

from deplbench.benchmarks.library.catalog import Library, build
from deplbench.benchmarks.library.check import check, report_json
from deplbench.cli import main
from deplbench.errors import InputError
from deplbench.instances.io import load_instance
from deplbench.registry import solve

#: the quick subset with small samples, so that two builds fit in the test budget; the wall-clock
#: limits are safety nets only (a few seconds are needed unloaded), the deterministic limits decide
KW = {"quick": True, "scenarios": (20, 40), "saa_nodes": 200, "time_limit": 300.0, "saa_time_limit": 300.0,
      "workers": 2, "log": lambda _m: None}  # two local worker processes, as `--workers 2`
SUMMARY: dict = {}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("lib") / "quick"
    SUMMARY["first"] = build(out, **KW)
    return Library.open(out)


def _hit_problems(summaries) -> set[str]:
    """Problems stopped by a safety time limit in any of the builds ('NAME S=40' or 'NAME method')."""
    out = set()
    for s in summaries:
        for hit in s["safety_hits"]:
            name, what = hit.rsplit(" ", 1)
            out.add(name if not what.startswith("S=") else f"{name}-s{what[2:]}-")
    return out


@pytest.mark.slow
def test_quick_library_has_references_and_tiers(lib):
    recs = lib.manifest["instances"]
    assert 10 <= len(recs) <= 20
    tiers = {r["tier"] for r in recs}
    assert "easy" in tiers and tiers <= {"easy", "medium", "hard"}  # measured: depends on the exact methods
    names = [r["name"] for r in recs] + [s["name"] for r in recs for s in r["saa"]]
    assert set(names) == set(lib.refs)  # one reference per problem, nothing else
    assert "published" not in SUMMARY["first"]  # the quick list is not the published library
    assert all(len(r["saa"]) == 4 for r in recs)  # 2 sample sizes x 2 formulations
    assert {ref.kind for ref in lib.refs.values()} >= {"opt", "inf"}
    for rec in recs:  # a known optimum (knapsack reduction) agrees with the proof
        if "known_optimum" in rec and rec["reference"]["kind"] == "opt":
            assert math.isclose(rec["reference"]["value"], rec["known_optimum"], rel_tol=1e-9)


@pytest.mark.slow
def test_two_builds_are_identical(lib, tmp_path):
    """A second build, on a Dask LocalCluster of two workers, writes the same files."""
    out = tmp_path / "again"
    second = build(out, **{**KW, "workers": 2, "cluster": "local"})
    again = Library.open(out)
    # byte-identical except the problems a wall-clock safety limit stopped (reported by the build;
    # with these limits only under extreme load): everything else depends on deterministic limits
    hits = _hit_problems([SUMMARY["first"], second])
    free = {rel for rel in lib.files() if rel != "library.solu" and not any(h in rel for h in hits)}
    assert {r: again.files().get(r) for r in free} == {r: lib.files()[r] for r in free}
    assert set(again.files()) == set(lib.files()) or hits
    if not hits:
        assert again.files() == lib.files()
        # tiers and their work are deterministic: the manifests are the same to the byte
        assert (out / "manifest.json").read_bytes() == (lib.root / "manifest.json").read_bytes()
    for rel, digest in lib.files().items():  # and the checksums are those of the files
        from deplbench.benchmarks.library.build import sha256

        assert sha256(lib.root / rel) == digest


@pytest.mark.slow
def test_a_stopped_build_continues_from_its_checkpoint(lib, tmp_path):
    """Stopped (KeyboardInterrupt) after three finished entries: no library, three entries kept; one of
    them is then damaged. The same call builds all but the two intact ones, and its library is the
    uninterrupted build's, to the byte (outside safety-limit hits)."""
    out, seen = tmp_path / "resumed", []

    def stop_after_three(msg: str) -> None:
        seen.append(msg)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build(out, **{**KW, "workers": 1, "log": stop_after_three})
    assert not out.exists() and "3 of" in seen[-1] and "entries are kept" in seen[-1]
    done = sorted((tmp_path / ".resumed.partial" / "entries").glob("*/done.json"))
    assert len(done) == 3 and len(list((tmp_path / ".resumed.partial" / "entries").iterdir())) == 3
    damaged = next(p for p in done[0].parent.rglob("*.json") if p.name != "done.json")
    damaged.write_text(damaged.read_text() + " ")
    log: list[str] = []
    second = build(out, **{**KW, "log": log.append})
    assert second["kept"] == 2 and sum("kept from the checkpoint" in m for m in log) == 2
    assert not (tmp_path / ".resumed.partial").exists()  # a finished build removes its checkpoint
    again = Library.open(out)
    hits = _hit_problems([SUMMARY["first"], second])
    free = {rel for rel in lib.files() if rel != "library.solu" and not any(h in rel for h in hits)}
    assert {r: again.files().get(r) for r in free} == {r: lib.files()[r] for r in free}
    if not hits:
        assert (out / "manifest.json").read_bytes() == (lib.root / "manifest.json").read_bytes()


def test_an_interrupted_reference_run_stops_the_build(tmp_path, monkeypatch):
    """A solver that catches Ctrl-C returns its best plan as 'interrupted': the build stops at the first
    entry that needs ``exact`` and records nothing of it (it used to grade it 'hard' and go on)."""
    import deplbench.registry as registry
    from deplbench.results import SolveResult, Status

    real = registry.solve

    def interrupted_exact(name, inst, params, **kw):
        if name == "exact":
            return SolveResult(status=Status.INTERRUPTED, plan=None, objective=None, solver=name)
        return real(name, inst, params, **kw)

    monkeypatch.setattr(registry, "solve", interrupted_exact)
    msgs: list[str] = []
    with pytest.raises(KeyboardInterrupt, match="exact was interrupted"):
        build(tmp_path / "lib", **{**KW, "workers": 1, "log": msgs.append})
    finished = [m for m in msgs if m.startswith("[")]  # entries that bruteforce proved before it
    assert not (tmp_path / "lib").exists() and finished and f"{len(finished)} of" in msgs[-1]
    done = [json.loads(p.read_text())["result"] for p in (tmp_path / ".lib.partial").glob("entries/*/done.json")]
    assert len(done) == len(finished)  # the interrupted entry is not among them
    assert all(run["status"] != "interrupted" for r in done for run in r["timing"]["exact"].values())


def test_checkpoint_keys_name_everything_an_entry_depends_on():
    from deplbench.benchmarks.library.checkpoint import code_fingerprint, job_key
    from deplbench.benchmarks.library.spec import entries

    e, f = entries(None, True)[0][:2]
    base = (("easy",), None, 300.0, 200, (20, 40), 100)
    key = job_key(e, base, "2.2")
    assert job_key(e, base, "2.2") == key and len(code_fingerprint()) == 64
    others = [job_key(f, base, "2.2"), job_key(e, base, "2.3"), job_key(e, base[:3] + (201,) + base[4:], "2.2"),
              job_key(e, base[:4] + ((20, 41),) + base[5:], "2.2"), job_key(e, base[:5] + (101,), "2.2")]
    assert len({key, *others}) == 6


def test_a_stop_keeps_finished_entries_and_counts_only_this_builds(tmp_path):
    from deplbench.benchmarks.library.checkpoint import Checkpoint

    with Checkpoint(tmp_path / "lib") as ck:
        for key in ("mine", "cut", "stale"):
            (Path(ck.fresh(key)) / "a.mps").write_text(key)
        ck.finish("mine", {"tier": "easy"})
        ck.finish("stale", {"tier": "hard"})
        (ck.folder("mine") / "a.mps").write_text("damaged")
        assert ck.prune(["mine", "cut"]) == 1  # "stale" (another build's) is kept, not counted
        assert not ck.folder("cut").exists() and ck.folder("stale").is_dir()
        assert ck.result("stale") == {"tier": "hard"} and ck.result("mine") is None  # checksums differ
    with Checkpoint(tmp_path / "lib") as ck:
        assert ck.prune(["cut"]) == 0 and ck.root.exists()  # finished entries remain: kept
        shutil.rmtree(ck.folder("mine"))
        shutil.rmtree(ck.folder("stale"))
        assert ck.prune([]) == 0 and not ck.root.exists()  # nothing finished: the checkpoint goes


def _solve_file(path) -> tuple[str, float | None]:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    st = h.modelStatusToString(h.getModelStatus())
    return st, (h.getInfo().objective_function_value if st == "Optimal" else None)


@pytest.mark.slow
def test_every_opt_and_inf_line_is_recomputed(lib):
    for rec in lib.manifest["instances"]:
        ref = lib.refs[rec["name"]]
        if ref.kind in ("opt", "inf"):  # the proving method again, on the stored instance file
            r = solve(rec["method"], load_instance(lib.root / rec["file"]), rec["method_params"])
            assert r.status.value == ("optimal" if ref.kind == "opt" else "infeasible")
            if ref.kind == "opt":
                assert math.isclose(r.evaluation.cost, ref.value, rel_tol=1e-9)
        for s in rec["saa"]:  # each MPS file itself, both formulations, solved from the file
            sref = lib.refs[s["name"]]
            if sref.kind == "opt":
                st, obj = _solve_file(lib.root / s["file"])
                assert st == "Optimal" and math.isclose(obj, sref.value, rel_tol=1e-7), s["name"]
            elif sref.kind == "inf":
                assert _solve_file(lib.root / s["file"])[0] == "Infeasible", s["name"]


def _solutions(lib):
    for rec in lib.manifest["instances"]:
        for r in (rec, *rec["saa"]):
            if "solution" in r:
                yield r["name"], lib.root / r["solution"]


@pytest.mark.slow
def test_checker_accepts_every_reference_solution(lib):
    sols = list(_solutions(lib))
    assert len(sols) >= 20
    for name, path in sols:
        res = check(lib, path, name)
        assert res.consistent, (name, res.lines())


def _forbidden(inst):
    ids = inst.model_ids
    return next(((a, b) for a in ids for b in ids if a != b and not inst.allowed(a, b)), None)


def _tamper(lib, tmp_path, edit, need_forbidden=False):
    rec = next(r for r in lib.manifest["instances"] if r["reference"]["kind"] == "opt" and
               (not need_forbidden or _forbidden(load_instance(lib.root / r["file"]))))
    plan = json.loads((lib.root / rec["solution"]).read_text())
    edit(plan, load_instance(lib.root / rec["file"]))
    out = tmp_path / "tampered.json"
    out.write_text(json.dumps(plan))
    return check(lib, out, rec["name"])


@pytest.mark.slow
def test_checker_flags_a_lowered_cost(lib, tmp_path):
    res = _tamper(lib, tmp_path, lambda p, _i: p.update(objective=p["objective"] * 0.9))
    assert not res.consistent and "stated objective" in res.contradictions[0]


@pytest.mark.slow
def test_checker_flags_a_level_that_does_not_exist(lib, tmp_path):
    def edit(p, inst):
        seg = p["segments"][0]
        levels = inst.cluster_by_id[seg["cluster"]].levels
        bad = levels[0] / 2
        if seg["epochs"] > 1:
            seg["epochs"] -= 1
            p["segments"].insert(0, dict(seg, epochs=1, level=bad))
        else:
            seg["level"] = bad
        p.pop("objective")

    res = _tamper(lib, tmp_path, edit)
    assert not res.feasible and not res.consistent and "level" in " ".join(res.notes)


@pytest.mark.slow
def test_checker_flags_a_forbidden_switch(lib, tmp_path):
    def edit(p, inst):
        a, b = _forbidden(inst)
        seg = p["segments"][0]
        p["segments"] = [dict(seg, model=a, epochs=1), dict(seg, model=b, epochs=1)]
        p.pop("objective")

    res = _tamper(lib, tmp_path, edit, need_forbidden=True)
    assert not res.consistent and "switch" in " ".join(res.notes)


@pytest.mark.slow
def test_checker_flags_a_solution_of_an_infeasible_problem(lib, tmp_path):
    inf = next(r for r in lib.manifest["instances"] if r["reference"]["kind"] == "inf")
    inst = load_instance(lib.root / inf["file"])
    res = solve("depl", inst)  # any plan; if it certifies feasible, that contradicts =inf=
    plan = {"schema": "depl-plan/1", "datasets": list(inst.dataset_ids),
            "segments": [{"model": inst.model_ids[0], "cluster": inst.cluster_ids[0],
                          "level": inst.clusters[0].levels[-1], "epochs": 1}]}
    if res.plan is not None:
        plan = res.plan.to_json_dict()
    (tmp_path / "p.json").write_text(json.dumps(plan))
    out = check(lib, tmp_path / "p.json", inf["name"])
    assert not out.consistent


@pytest.mark.slow
def test_cli_check_exit_status_and_sol_files(lib, tmp_path, capsys):
    name, path = next((n, p) for n, p in _solutions(lib) if p.suffix == ".sol")
    assert main(["library", "check", str(path), "--instance", name, "--library", str(lib.root)]) == 0
    # a CBC-style file whose stated objective is lowered: a contradiction, exit 1
    text = path.read_text().splitlines()
    obj = float(next(t for t in text if t.startswith("Objective")).split()[1])
    cols = [t.split() for t in text[text.index(next(t for t in text if t.startswith("# Columns"))) + 1:]]
    body = "".join(f"{i} {n} {v} 0\n" for i, (n, v) in enumerate(cols) if float(v) != 0)
    (tmp_path / "c.sol").write_text(f"Optimal - objective value {obj - 1.0}\n" + body)
    assert main(["library", "check", str(tmp_path / "c.sol"), "--instance", name, "--library", str(lib.root)]) == 1
    assert "contradiction" in capsys.readouterr().out
    assert main(["library", "check", str(path), "--instance", "nope", "--library", str(lib.root)]) == 2


def test_build_refuses_a_folder_that_is_not_a_library(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    assert main(["library", "build", "--quick", "--out", str(tmp_path / "x")]) == 2
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    shutil.rmtree(tmp_path / "x")


@pytest.mark.slow
def test_run_and_report_on_the_library(lib, tmp_path):
    from deplbench.benchmarks.api import read_results, run_config

    easy = [r["name"] for r in lib.manifest["instances"] if r["tier"] == "easy" and r["family"] == "random"][:2]
    cfg = library_config(tmp_path / "lib.toml", lib.root, easy)
    out = tmp_path / "res"
    run_config(cfg, out, workers=1, progress=False)
    df = read_results(out)
    assert len(df) == 4 and set(df["instance"]) == set(easy)
    report = (out / "report" / "report.md").read_text()
    assert "Tier easy: 2 instances" in report and "Shifted geo. mean time (s)" in report
    # the library's instance pages with every method's results of that folder (a copy: the fixture is shared)
    copy = tmp_path / "lib"
    shutil.copytree(lib.root, copy, ignore=shutil.ignore_patterns("site"))
    assert main(["library", "site", "--library", str(copy), "--results", str(out)]) == 0
    for rec in lib.manifest["instances"]:
        page = (copy / "site" / "instances" / f"{rec['name']}.html").read_text()
        if rec["name"] in easy:
            runs = page[page.index("Results of the methods"):]
            assert "id='runs'" in runs or 'id="runs"' in runs
            assert "milp-highs-direct" in runs and "mps" in runs and "No results" not in runs
        else:
            assert "No results" in page
    assert main(["library", "site", "--library", str(copy), "--results", str(tmp_path / "nothing")]) == 2


@pytest.mark.slow
def test_reference_is_the_first_proof_in_a_fixed_order(lib):
    from deplbench.benchmarks.library.build import exact_methods

    assert exact_methods()[:2] == ["bruteforce", "exact"]  # not the fastest: timing must not choose
    for rec in lib.manifest["instances"]:
        if rec["reference"]["kind"] in ("opt", "inf") and rec["method"] != "bruteforce":
            r = solve("bruteforce", load_instance(lib.root / rec["file"]), {"time_limit": 30.0})
            assert r.status.value not in ("optimal", "infeasible"), rec["name"]


def test_exact_work_limit_is_deterministic():
    from deplbench.registry import generate

    inst = generate("knapsack", {"items": 6, "capacity": 30, "max_weight": 10, "max_value": 20}, 1)
    need = solve("exact", inst, {"time_limit": 120.0}).extra["work"]
    runs = [solve("exact", inst, {"max_work": int(need / 3), "time_limit": 120.0}) for _ in range(2)]
    assert all(r.status.value == "timeout" and "work limit" in r.message for r in runs)
    assert runs[0].bound == runs[1].bound and runs[0].extra == {**runs[1].extra, "peak_mem_mb": runs[0].extra[
        "peak_mem_mb"]}  # every counter and the work itself, the same twice
    assert int(need / 3) < runs[0].extra["work"] < need


@pytest.mark.slow
def test_proven_infeasibility_counts_as_solved_on_inf_instances(lib):
    import pandas as pd

    from deplbench.benchmarks.library.report import with_infeasibility

    inf = next(r["name"] for r in lib.manifest["instances"] if r["reference"]["kind"] == "inf")
    opt = next(r["name"] for r in lib.manifest["instances"] if r["reference"]["kind"] == "opt")
    params = json.dumps({"dir": str(lib.root)})
    d = pd.DataFrame({"instance": [inf, opt], "instance_params": [params] * 2, "status": ["infeasible"] * 2,
                      "harness_status": ["ok"] * 2, "solved": [False, False], "runtime_s": [1.0, 2.0],
                      "p_time_limit": [10.0, 10.0]})
    out = with_infeasibility(d)
    assert out["solved"].tolist() == [True, False] and out["ttime"].tolist() == [1.0, 10.0]
    assert out["wrong_inf"].tolist() == [False, True]


def test_budget_scales_the_exact_limits():
    import dataclasses

    from deplbench.benchmarks.library.build import SAFETY_FACTOR, entry_limits
    from deplbench.benchmarks.library.spec import (
        MEDIUM_BUDGET,
        MEDIUM_BUDGETS,
        MEDIUM_SHAPE,
        RANDOM_BUDGETS,
        entries,
    )
    from deplbench.formulations.exact.work import UNITS_PER_S
    from deplbench.registry import generate

    ents = entries()[0]
    medium = [e for e in ents if MEDIUM_SHAPE.items() <= e.param_dict.items()]
    own = {(e.param_dict["epochs"], e.seed): e.budget for e in medium if e.budget != MEDIUM_BUDGET}
    assert len(medium) >= 20 and own == MEDIUM_BUDGETS  # MEDIUM_BUDGET, or a candidate's own budget
    others = {e.budget for e in ents if e not in medium}  # 1, or a shape's own budget
    assert others == {1, *RANDOM_BUDGETS.values()}
    one = next(e for e in medium if e.budget == MEDIUM_BUDGET)
    base = dataclasses.replace(one, budget=1)
    assert entry_limits(base, 10.0, 1000) == (10.0, 1000)
    assert entry_limits(one, 10.0, 1000) == (10.0 * MEDIUM_BUDGET, 1000 * MEDIUM_BUDGET)
    # no time limit given: the safety net is SAFETY_FACTOR times the work limit in reference seconds
    assert entry_limits(one, None, 1000) == (SAFETY_FACTOR * 1000 * MEDIUM_BUDGET / UNITS_PER_S,
                                             1000 * MEDIUM_BUDGET)
    # a work limit that leaves an instance open at budget 1 proves it at a larger budget
    inst = generate("knapsack", {"items": 6, "capacity": 30, "max_weight": 10, "max_value": 20}, 1)
    unit = int(solve("exact", inst, {"time_limit": 120.0}).extra["work"] / 3)
    small, large = (solve("exact", inst, {"max_work": entry_limits(dataclasses.replace(base, budget=b), 60.0, unit)[1],
                                          "time_limit": 120.0}) for b in (1, 5))
    assert small.status.value == "timeout" and "work limit" in small.message
    assert large.status.value == "optimal"


def _cbc(mps, tmp_path):
    """Solve an MPS file with CBC (PuLP's binary) at gap 0: (Status, objective), a second MIP solver."""
    import subprocess

    from deplbench.formulations.backends.mps import cbc_path
    from deplbench.formulations.backends.solfile import read_solution

    sol = tmp_path / (mps.stem + ".sol")
    subprocess.run([cbc_path(), str(mps), "ratio", "0", "allow", "0", "solve", "solu", str(sol)],
                   capture_output=True, timeout=600, check=False)
    sf = read_solution(sol)
    return sf.status, sf.objective


@pytest.mark.slow
def test_proven_references_agree_with_an_independent_method(lib, tmp_path):
    """Every =opt= / =inf= line is reproduced by another method: the other exact method on the
    instance, and CBC (not HiGHS, which proved them) on the SAA files."""
    from deplbench.results import Status

    other = {"bruteforce": "exact", "exact": "bruteforce"}
    true_checked = saa_checked = 0
    for rec in lib.manifest["instances"]:
        ref = lib.refs[rec["name"]]
        if ref.kind in ("opt", "inf"):
            r = solve(other[rec["method"]], load_instance(lib.root / rec["file"]), {"time_limit": 300.0})
            if not (r.status == Status.ERROR and "refused" in r.message):  # bruteforce refuses large ones
                assert r.status == (Status.OPTIMAL if ref.kind == "opt" else Status.INFEASIBLE), (rec["name"], r.status)
                if ref.kind == "opt":
                    assert math.isclose(r.evaluation.cost, ref.value, rel_tol=1e-9), rec["name"]
                true_checked += 1
        for s in rec["saa"]:
            sref = lib.refs[s["name"]]
            if sref.kind in ("opt", "inf") and s["formulation"] == "aggregated":
                st, obj = _cbc(lib.root / s["file"], tmp_path)
                if sref.kind == "inf":
                    assert st == Status.INFEASIBLE, s["name"]
                else:
                    assert st == Status.OPTIMAL and math.isclose(obj, sref.value, rel_tol=1e-6), (s["name"], obj)
                saa_checked += 1
    assert true_checked >= 5 and saa_checked >= 5, (true_checked, saa_checked)


def _glpsol(path, *, free: bool = False, solve: bool = False) -> tuple[int, str, float | None]:
    """GLPK's glpsol on an MPS file: (exit code, its status line, objective); ``solve`` False: read only."""
    import subprocess

    out = path.parent / f".{path.stem}.glpk.txt"
    args = ["glpsol", "--freemps" if free else "--mps", str(path)]
    args += ["--tmlim", "120", "-o", str(out)] if solve else ["--check"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    status = " | ".join(ln for ln in r.stdout.splitlines() if "SOLUTION" in ln or "TIME LIMIT" in ln)
    obj = None
    if solve and "INTEGER OPTIMAL" in status:
        obj = float(next(ln for ln in out.read_text().splitlines() if ln.startswith("Objective:")).split()[3])
    out.unlink(missing_ok=True)
    return r.returncode, status or r.stdout[-300:], obj


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("glpsol") is None, reason="glpsol not installed (Debian: apt-get install glpk-utils)")
def test_glpk_reads_every_mps_file_and_agrees(lib):
    """``glpsol --mps`` (fixed format) reads every MPS file of the library, ``--freemps`` every free twin; GLPK,
    a third MIP solver, reproduces every aggregated =opt= / =inf= line from the fixed files, and HiGHS the
    =opt= lines from the free (exact) files."""
    files = [s for rec in lib.manifest["instances"] for s in rec["saa"]]
    named = {s["name"]: rec["name"] for rec in lib.manifest["instances"] for s in rec["saa"]}
    assert len(files) == len(list((lib.root / "mps").glob("*.mps"))) >= 20
    assert any("free" in s for s in files) and any(s["exact"] for s in files)  # both kinds occur
    for s in files:
        code, msg, _ = _glpsol(lib.root / s["file"])
        assert code == 0, (s["file"], msg)
        assert (lib.root / s["file"]).read_text().startswith(f"NAME          {named[s['name']]}\n")
        if "free" in s:
            assert not s["exact"] and s["max_rel_change"] < 1e-6
            code, msg, _ = _glpsol(lib.root / s["free"], free=True)
            assert code == 0, (s["free"], msg)
            if lib.refs[s["name"]].kind == "opt":
                st, obj = _solve_file(lib.root / s["free"])
                assert st == "Optimal" and math.isclose(obj, lib.refs[s["name"]].value, rel_tol=1e-7), s["name"]
    checked = 0
    for s in files:
        ref = lib.refs[s["name"]]
        if s["formulation"] == "aggregated" and ref.kind in ("opt", "inf"):
            code, status, obj = _glpsol(lib.root / s["file"], solve=True)
            if ref.kind == "inf":
                assert "INTEGER OPTIMAL" not in status and "NO" in status and "FEASIBLE" in status, (s["name"], status)
            else:
                assert obj is not None and math.isclose(obj, ref.value, rel_tol=1e-7), (s["name"], status)
            checked += 1
    assert checked >= 10, checked


@pytest.mark.slow
def test_checker_reads_a_solution_of_a_fixed_file_with_its_short_names(lib, tmp_path):
    """A solver of a fixed file names the long columns C<index>: the checker maps them back."""
    from deplbench.benchmarks.library.build import write_sol
    from deplbench.benchmarks.library.check import _saa_model
    from deplbench.formulations.backends.solfile import read_solution
    from deplbench.formulations.saa.mps_text import fixed_names

    rec, s = next((r, s) for r in lib.manifest["instances"] for s in r["saa"] if s.get("renamed") and "solution" in s)
    model = _saa_model(lib, load_instance(lib.root / rec["file"]), s)[0]
    sf = read_solution(lib.root / s["solution"])
    short = tmp_path / "short.sol"
    write_sol(short, fixed_names(model), [sf.values.get(n, 0.0) for n in model.names], "Optimal", sf.objective)
    assert any(n.startswith("C") for n in fixed_names(model))
    res = check(lib, short, s["name"])
    assert res.consistent and res.feasible, res.lines()
    assert any("exact (rational) check of free/" in n for n in res.notes)


@pytest.mark.slow
def test_checker_rejects_a_sol_off_a_row_by_1e5_relative(lib, tmp_path):
    """MIPLIB's checker, exactly: a .sol whose equality row is off by 1e-5 relative is rejected (the
    reference .sol passes), in rational arithmetic against the library's own MPS file."""
    from fractions import Fraction

    from deplbench.benchmarks.library.rational import read_mps

    name, path = next((n, p) for n, p in _solutions(lib) if p.suffix == ".sol")
    assert check(lib, path, name).consistent
    rec = next(s for r in lib.manifest["instances"] for s in r["saa"] if s["name"] == name)
    m = read_mps(lib.root / rec["file"])
    lines = path.read_text().splitlines()
    values = {ln.split()[0]: ln.split()[1] for ln in lines[lines.index(next(x for x in lines if x.startswith("# Columns"))) + 1:]
              if len(ln.split()) == 2}
    col, row, a = next((c, r, a) for c, rows in m.columns.items() if c not in m.integer
                       for r, a in rows.items() if m.senses.get(r) == "E" and a != 0)
    side = max(Fraction(1), abs(m.rhs.get(row, Fraction(0))))
    new = Fraction(values[col]) + side * Fraction(1, 10**5) / abs(a)
    bad = tmp_path / path.name
    bad.write_text("\n".join(f"{col} {float(new)!r}" if ln.split()[:1] == [col] and len(ln.split()) == 2 else ln
                             for ln in lines) + "\n")
    res = check(lib, bad, name)
    assert not res.consistent and any("violates its MPS file" in n for n in res.notes), res.lines()


@pytest.fixture
def dask_processes(tmp_path):
    """A Dask scheduler and two workers started by hand, as on a cluster of machines: (address, processes)."""
    import json
    import signal
    import subprocess
    import sys
    import time

    info = tmp_path / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--scheduler-file", str(info), "--port", "0",
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert info.exists(), "the scheduler did not start"
        for _ in range(2):  # two machines' workers, each its own process group
            procs.append(subprocess.Popen([str(bin_dir / "dask"), "worker", "--scheduler-file", str(info),
                                           "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        yield json.loads(info.read_text())["address"], procs
    finally:
        for p in reversed(procs):
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.mark.slow
def test_build_on_a_scheduler_and_workers_started_by_hand(lib, tmp_path, dask_processes):
    """`library build --scheduler ADDRESS`: the files of a local build, to the byte, although one of
    the two workers is killed (SIGKILL) after the first task finishes: its tasks are run again."""
    import signal

    from distributed import Client

    address, procs = dask_processes
    with Client(address, timeout="30s") as c:  # both workers have joined
        c.wait_for_workers(2, timeout=60)
    killed = []

    def kill_a_worker(_msg: str) -> None:
        if not killed:
            os.killpg(procs[1].pid, signal.SIGKILL)
            killed.append(procs[1].wait(timeout=20))

    out = tmp_path / "remote"
    third = build(out, **{**KW, "scheduler": address, "log": kill_a_worker})
    assert killed and procs[2].poll() is None  # the other worker finished the build
    again = Library.open(out)
    hits = _hit_problems([SUMMARY["first"], third])
    free = {rel for rel in lib.files() if rel != "library.solu" and not any(h in rel for h in hits)}
    assert {r: again.files().get(r) for r in free} == {r: lib.files()[r] for r in free}
    if not hits:
        assert again.files() == lib.files()
        # tiers and their work are deterministic: the manifests are the same to the byte
        assert (out / "manifest.json").read_bytes() == (lib.root / "manifest.json").read_bytes()
        for name in ("library.solu", "manifest.json"):
            assert (out / name).read_bytes() == (lib.root / name).read_bytes()
    from deplbench.benchmarks.library.build import sha256

    assert all(sha256(out / rel) == digest for rel, digest in again.files().items())  # the files written
    assert json.loads((out / "timings.json").read_text())["engine"] == address


@pytest.mark.slow
def test_benchmark_set_is_diverse_proven_and_reachable(lib):
    """The manifest's benchmark set: proven instances, every (family, mode, tier) group before repeats."""
    from deplbench.benchmarks.library import benchmark_set
    from deplbench.registry import generate

    chosen = lib.manifest["benchmark"]["instances"]
    recs = {r["name"]: r for r in lib.manifest["instances"]}
    assert chosen and len(chosen) == len(set(chosen)) <= benchmark_set.SIZE
    assert all(recs[n]["reference"]["kind"] in ("opt", "inf") for n in chosen)
    groups = {(r["family"], benchmark_set.noise_mode(r), r["tier"]) for r in recs.values()
              if r["reference"]["kind"] in ("opt", "inf")}
    first = {(recs[n]["family"], benchmark_set.noise_mode(recs[n]), recs[n]["tier"]) for n in chosen[:len(groups)]}
    assert first == groups  # each group once before any twice
    assert len({recs[n]["family"] for n in chosen}) >= 3
    inst = generate("library", {"dir": str(lib.root), "benchmark": 1})
    assert inst.name == chosen[1] and inst.metadata["library_tier"] == recs[chosen[1]]["tier"]
    with pytest.raises(InputError, match="past its end"):
        generate("library", {"dir": str(lib.root), "benchmark": len(chosen)})


@pytest.mark.slow
def test_library_family_by_tier_and_index(lib):
    """``tier=T, index=i``: the i-th instance of tier T by name (what library.toml's medium experiment uses)."""
    from deplbench.registry import generate

    easy = sorted(r["name"] for r in lib.manifest["instances"] if r["tier"] == "easy")
    inst = generate("library", {"dir": str(lib.root), "tier": "easy", "index": 1})
    assert inst.name == easy[1] and inst.metadata["library_tier"] == "easy"
    with pytest.raises(InputError, match="past its end"):
        generate("library", {"dir": str(lib.root), "tier": "easy", "index": len(easy)})
    with pytest.raises(InputError, match="one of name"):
        generate("library", {"dir": str(lib.root), "tier": "easy", "index": 0, "name": easy[0]})
    with pytest.raises(InputError, match="tier must be"):
        generate("library", {"dir": str(lib.root), "tier": "tough", "index": 0})


@pytest.mark.slow
def test_manifest_grades_by_recorded_work(lib):
    """Each tier follows from the proof work in the manifest; timings.json keeps every reference run's
    counters and work (the model's input, for a refit), and that work is the model of those counters."""
    from deplbench.benchmarks.library.build import EASY_WORK, grade
    from deplbench.formulations.exact.work import work_units

    rules = lib.manifest["rules"]
    assert rules["easy_work"] == EASY_WORK and rules["work_model"]["weights"]["exact"]
    timings = json.loads((lib.root / "timings.json").read_text())["instances"]
    for rec in lib.manifest["instances"]:
        assert rec["tier"] == grade(rec["proof_work"], rec["reference"]["kind"] in ("opt", "inf"))
        runs = timings[rec["name"]]["exact"]
        assert runs and all(r["work"] is None or r["work"] == round(work_units(m, r["counters"]))
                            for m, r in runs.items())
        proofs = [r["work"] for r in runs.values() if r["status"] in ("optimal", "infeasible")]
        if rec["tier"] != "hard":
            assert rec["proof_work"] == min(w for w in proofs if w is not None)


def test_published_references_are_well_formed_and_current():
    """Each published .solu parses, pairs every =bestdual= with a =best= below it, names an instance
    line for every SAA file; the code's version is published or newer than every published one, and
    a version with the current list (2.1 on) has one instance line per entry of the list."""
    from deplbench.benchmarks.library.published import (
        published_path,
        published_versions,
        version_key,
    )
    from deplbench.benchmarks.library.solu import read_solu
    from deplbench.benchmarks.library.spec import (
        FORMULATIONS,
        LIBRARY_VERSION,
        SCENARIO_SEED,
        SCENARIOS,
        entries,
    )

    versions = published_versions()
    assert versions and "2.1" in versions
    assert LIBRARY_VERSION in versions or version_key(LIBRARY_VERSION) > version_key(versions[-1])
    for v in versions:
        refs = read_solu(published_path(v))
        saa = {n for n in refs if n.endswith(FORMULATIONS)}
        insts = set(refs) - saa
        suffixes = {f"-s{s}-seed{SCENARIO_SEED}-{f}" for s in SCENARIOS for f in FORMULATIONS}
        assert all(any(n.endswith(x) and n[: -len(x)] in insts for x in suffixes) for n in saa), v
        assert all(r.bound is None or (r.kind == "best" and r.bound <= r.value * (1 + 1e-9)) for r in refs.values())
        assert all((r.value is not None) == (r.kind in ("opt", "best")) for r in refs.values())
        if version_key(v) >= version_key("2.1"):  # 2.1 to the code's version: the same list of instances (spec.py)
            assert len(insts) == len(entries()[0]), v


def test_a_build_is_compared_with_the_published_references():
    from deplbench.benchmarks.library.build import EXACT_WORK, SAA_NODES
    from deplbench.benchmarks.library.published import comparable, compare, published_path
    from deplbench.benchmarks.library.solu import Reference, read_solu
    from deplbench.benchmarks.library.spec import SCENARIOS, TIERS

    refs = list(read_solu(published_path("2.1")).items())
    same = compare(refs, "2.1")
    assert same.ok and same.agree == len(refs) and "agree" in same.line()
    assert compare(refs, "0.9") is None  # nothing published: nothing to compare
    (a, ra), (b, _), *rest = refs
    opt = next(i for i, (_, r) in enumerate(rest) if r.kind == "opt")
    n, r = rest[opt]
    nudged = Reference("opt", r.value * (1 + 1e-3))
    tiny = Reference("opt", r.value * (1 + 1e-9))  # within MIPLIB's 1e-6: agrees
    changed = [(a, ra), ("not-a-problem", Reference("inf"))] + rest[:opt] + [(n, nudged)] + rest[opt + 1:]
    out = compare(changed, "2.1")
    assert not out.ok and out.missing == [b] and out.extra == ["not-a-problem"] and len(out.differ) == 1
    assert out.differ[0].startswith(f"{n}: built =opt= ") and out.agree == len(refs) - 2
    assert "DIFFER" in out.line() and "1 differ, 1 not built, 1 not published" in out.line()
    assert compare([(a, ra), (n, tiny)] + rest[:opt] + rest[opt + 1:] + [(b, dict(refs)[b])], "2.1").ok
    default = (False, None, TIERS, SAA_NODES, SCENARIOS, EXACT_WORK)
    assert comparable(*default)
    for i, other in enumerate((True, "cal.json", ("easy",), SAA_NODES + 1, (200,), EXACT_WORK // 2)):
        assert not comparable(*default[:i], other, *default[i + 1:])


@pytest.mark.slow
def test_checker_gives_the_solu_lines_to_submit_for_an_improvement(lib):
    """A consistent solution below the best known value (or of a problem without one) gets the new
    ``library.solu`` lines and a certificate; a solution that is no news gets none."""
    import hashlib

    from deplbench.benchmarks.library.solu import Reference

    def weakened(name: str, ref: Reference) -> Library:
        return Library(lib.root, lib.manifest, {**lib.refs, name: ref})

    rec = next(r for r in lib.manifest["instances"] if r["reference"]["kind"] == "opt" and "solution" in r)
    name, opt, sol = rec["name"], lib.refs[rec["name"]].value, lib.root / rec["solution"]
    res = check(weakened(name, Reference("best", opt * 1.25, opt * 0.5)), sol, name)
    assert res.consistent and res.submit == [f"=best= {name} {res.cost!r}", f"=bestdual= {name} {opt * 0.5!r}"]
    assert res.certificate["solution_sha256"] == hashlib.sha256(sol.read_bytes()).hexdigest()
    assert res.certificate["library"] == lib.manifest["version"] and res.certificate["certified_cost"] == res.cost
    lo, hi = res.certificate["quantile_bracket"]
    assert lo <= hi <= res.certificate["target"]  # the certified quantile meets the target
    text = res.lines()
    assert f"    =best= {name} {res.cost!r}" in text and any(t.startswith("    certificate: {") for t in text)
    assert json.loads(report_json(res))["submit"] == res.submit
    assert check(weakened(name, Reference("unkn")), sol, name).submit == [f"=best= {name} {res.cost!r}"]
    assert check(lib, sol, name).submit == []  # the proven optimum: nothing to submit
    assert check(weakened(name, Reference("best", res.cost, None)), sol, name).submit == []  # equal: no news
    saa = next(s for r in lib.manifest["instances"] for s in r["saa"]
               if "solution" in s and lib.refs[s["name"]].kind == "opt")
    sres = check(weakened(saa["name"], Reference("unkn")), lib.root / saa["solution"], saa["name"])
    assert sres.consistent and sres.submit == [f"=best= {saa['name']} {sres.cost!r}"]
    assert sres.certificate["scenarios_violated"] <= sres.certificate["allowed"] < sres.certificate["scenarios"]
