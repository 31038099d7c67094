import subprocess
import sys


def test_highspy_and_ortools_import_in_one_process():
    code = ("import highspy, ortools; from ortools.sat.python import cp_model; "
            "from ortools.linear_solver import pywraplp; h = highspy.Highs(); "
            "s = pywraplp.Solver.CreateSolver('SCIP'); assert s is not None; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
