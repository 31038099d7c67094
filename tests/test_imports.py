import subprocess
import sys


def test_highspy_and_ortools_import_in_one_process():
    code = ("import highspy, ortools; from ortools.sat.python import cp_model; "
            "from ortools.linear_solver import pywraplp; h = highspy.Highs(); "
            "s = pywraplp.Solver.CreateSolver('SCIP'); assert s is not None; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_pyscipopt_with_highspy_and_ortools_in_one_process():
    code = ("import highspy, pyscipopt; from ortools.sat.python import cp_model; "
            "from ortools.linear_solver import pywraplp; h = highspy.Highs(); "
            "s = pywraplp.Solver.CreateSolver('SCIP'); assert s is not None; "
            "m = pyscipopt.Model(); m.hideOutput(); x = m.addVar(vtype='I', ub=3); m.setObjective(-x); "
            "m.optimize(); assert m.getObjVal() == -3; "
            "c = cp_model.CpModel(); y = c.new_int_var(0, 3, 'y'); c.maximize(y); "
            "assert cp_model.CpSolver().solve(c) == cp_model.OPTIMAL; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
