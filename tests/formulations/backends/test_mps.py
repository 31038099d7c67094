"""``mps``: external MIP solvers through files (CBC, standalone HiGHS, SCIP) and the solution-file reader."""

from __future__ import annotations

import math

import pytest
from test_saa_milp import small

from deplbench.errors import InputError
from deplbench.formulations.backends import mps as mps_solver
from deplbench.formulations.backends.solfile import read_solution
from deplbench.registry import solve
from deplbench.results import Status

P = {"scenarios": 30, "seed": 3, "time_limit": 60.0}


@pytest.fixture(scope="module")
def inst():
    return small(K=4, name="mps-small")


@pytest.fixture(scope="module")
def reference(inst):
    r = solve("milp-highs-direct", inst, {**P, "mip_gap": 0.0})
    assert r.status == Status.OPTIMAL
    return r


@pytest.mark.parametrize("preset", ["cbc", "highs", "scip"])
def test_preset_maps_back_to_the_saa_optimum(inst, reference, preset, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = solve("mps", inst, {**P, "preset": preset, "mip_gap": 0.0})
    assert not list(tmp_path.iterdir())  # the solver's own files stay in its temporary folder
    assert r.status == Status.OPTIMAL, r.message
    assert math.isclose(r.evaluation.cost, reference.evaluation.cost, rel_tol=1e-9)
    assert r.extra["tool"] == preset


def test_time_indexed_and_user_template(inst, reference):
    cmd = "{highs} --model_file {mps} --solution_file {sol} --time_limit {time_limit}"
    r = solve("mps", inst, {**P, "command": cmd, "formulation": "time_indexed", "mip_gap": 0.0})
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE), r.message
    assert r.evaluation.cost >= reference.evaluation.cost * (1 - 1e-9)


def test_bad_templates_are_input_errors(inst):
    with pytest.raises(InputError, match="sol"):
        solve("mps", inst, {**P, "command": "cbc {mps}"})
    with pytest.raises(InputError, match="unknown placeholder"):
        solve("mps", inst, {**P, "command": "cbc {mps} {sol} {nope}"})
    with pytest.raises(InputError, match="preset"):
        solve("mps", inst, {**P, "preset": "gurobi"})


def test_hanging_command_is_killed(inst, monkeypatch):
    monkeypatch.setattr(mps_solver, "GRACE_S", 0.2)
    cmd = "{python} -c 'import time; time.sleep(30)' {mps} {sol}"
    r = solve("mps", inst, {**P, "command": cmd, "time_limit": 1.0, "cuts": "none"})
    assert r.status == Status.TIMEOUT
    # no plan from the solver; at most the incumbent offered before it ran (DepL's, meeting the sample)
    assert r.plan is None or "plan is the incumbent" in r.message, r.message
    assert r.runtime_s < 10


def test_command_without_solution_is_an_error(inst):
    r = solve("mps", inst, {**P, "command": "{python} -c 'print(1)' {mps} {sol}", "cuts": "none"})
    assert r.status == Status.ERROR and "wrote no solution" in r.message


def test_read_the_three_formats(tmp_path):
    (tmp_path / "h.sol").write_text("Model status\nOptimal\n\n# Primal solution values\nFeasible\n"
                                    "Objective 12.5\n# Columns 2\nx 1\ny 0.5\n# Rows 1\nr0 1\n")
    (tmp_path / "c.sol").write_text("Optimal - objective value 12.50000000\n      0 x  1  0\n      3 y  0.5  0\n")
    (tmp_path / "s.sol").write_text("solution status: optimal solution found\nobjective value: 12.5\n"
                                    "x  1 \t(obj:10)\ny  0.5 \t(obj:5)\n")
    for name, fmt in (("h", "highs"), ("c", "cbc"), ("s", "scip")):
        sf = read_solution(tmp_path / f"{name}.sol")
        assert (sf.fmt, sf.status, sf.objective, sf.values) == (fmt, Status.OPTIMAL, 12.5, {"x": 1.0, "y": 0.5})
    (tmp_path / "i.sol").write_text("Infeasible - objective value 0.00000000\n")
    assert read_solution(tmp_path / "i.sol").status == Status.INFEASIBLE
    (tmp_path / "t.sol").write_text("solution status: time limit reached\nno solution available\n")
    sf = read_solution(tmp_path / "t.sol")
    assert sf.status == Status.TIMEOUT and not sf.has_solution
    (tmp_path / "bad.sol").write_text("x one\n")
    with pytest.raises(InputError, match="line 1"):
        read_solution(tmp_path / "bad.sol")


def test_cbc_head_with_gap_tolerance(tmp_path):
    from deplbench.formulations.backends.solfile import read_solution

    f = tmp_path / "c.sol"
    f.write_text("Optimal (within gap tolerance) - objective value 12.5\n      0 z_0_0   1   0\n")
    sol = read_solution(f)
    assert sol.fmt == "cbc" and sol.status.value == "optimal" and sol.objective == 12.5
    assert sol.values == {"z_0_0": 1.0}


def test_cbc_stopped_with_its_lp_point_has_no_solution(tmp_path):
    """CBC stopped before any integer solution writes its LP relaxation's point: not a solution."""
    f = tmp_path / "c.sol"
    f.write_text("Stopped on time (no integer solution - continuous used) - objective value 186.70581469\n"
                 "      0 z_0_0    1   -1.49\n     12 z_4_0   0.31233327   0\n")
    sol = read_solution(f)
    assert sol.status == Status.TIMEOUT and not sol.has_solution and sol.objective is None


def test_a_fractional_point_is_no_solution(inst):
    """A command whose 'solution' is off integrality: no plan from it, and no decode error."""
    script = ("import sys; open(sys.argv[2], 'w').write('Model status\\nTime limit reached\\n\\n"
              "# Primal solution values\\nFeasible\\nObjective 1\\n# Columns 1\\nz_0_0 0.5\\n')")
    r = solve("mps", inst, {**P, "command": f'{{python}} -c "{script}" {{mps}} {{sol}}', "cuts": "none"})
    assert "does not decode" not in r.message and "off integrality" in r.message
    assert r.status != Status.OPTIMAL


def test_cbc_start_point_after_a_stop_is_no_solution(inst):
    """CBC 'Stopped on iterations' in its preprocessing writes its start (objective 0): an integral
    point that breaks the rows. It is refused by the checker (old code: a decode error)."""
    script = ("import sys; open(sys.argv[2], 'w').write('Stopped on iterations - objective value 0.00000000\\n"
              "      0 z_0_0   1   0\\n')")
    r = solve("mps", inst, {**P, "command": f'{{python}} -c "{script}" {{mps}} {{sol}}', "cuts": "none"})
    assert "does not decode" not in r.message and "(not a solution)" in r.message and "row r" in r.message
    assert r.status == Status.TIMEOUT, r.message


def test_point_defect_is_the_checker_definition():
    """``point_defect`` against its definition on random models: integrality, bounds, rows (relative)."""
    import numpy as np
    import scipy.sparse as sp

    from deplbench.formulations.backends.mps import INT_TOL, ROW_TOL, point_defect

    rng = np.random.default_rng(0)
    for trial in range(300):
        n, m = rng.integers(1, 6), rng.integers(0, 5)
        A = sp.csr_matrix(rng.integers(-3, 4, (m, n)) * rng.choice([1.0, 1e3], (m, n)))
        x = rng.integers(-2, 3, n) + rng.choice([0.0, 1e-7, 1e-3], n)
        act = A @ x
        lb = np.where(rng.random(m) < 0.3, -np.inf, act - rng.choice([0.0, 1e-4, -1e-9, -0.5], m))
        ub = np.where(rng.random(m) < 0.3, np.inf, act + rng.choice([0.0, 1e-4, -1e-9, -0.5], m))
        model = type("M", (), dict(A=A, row_lb=lb, row_ub=ub, lb=np.full(n, -5.0), ub=np.full(n, 5.0),
                                   integer=rng.random(n) < 0.5, names=[f"c{j}" for j in range(n)]))()
        frac = np.abs(x - np.rint(x))[model.integer]
        size = np.maximum(np.maximum(abs(A) @ np.abs(x), 1.0),
                          np.maximum(np.abs(np.nan_to_num(lb, neginf=0)), np.abs(np.nan_to_num(ub, posinf=0))))
        rows = np.maximum(np.maximum(lb - act, act - ub), 0) / size
        want = (frac > INT_TOL).any() or (rows > ROW_TOL).any()
        assert bool(point_defect(model, x)) == want, trial
    assert trial == 299


def test_cbc_stopped_at_the_root_is_not_an_error():
    """The library comparison's failure (issue 29): CBC stopped in its root on this SAA wrote its LP
    point, which did not decode. Now the run ends on its limit with the certified incumbent."""
    from deplbench.registry import generate

    inst = generate("random", {"models": 3, "clusters": 3, "levels": 4, "datasets": 2, "epochs": 10,
                               "noise_mode": "per_run", "transfer": 5.0}, 1)
    r = solve("mps", inst, {"preset": "cbc", "scenarios": 200, "time_limit": 1.0})
    assert r.status != Status.ERROR, r.message
    assert "does not decode" not in r.message
