import subprocess
import sys

import pytest

#: SCIP through OR-Tools and through PySCIPOpt, each one solving
_SCIP = ("assert pywraplp.Solver.CreateSolver('SCIP') is not None; "
         "m = pyscipopt.Model(); m.hideOutput(); x = m.addVar(vtype='I', ub=3); m.setObjective(-x); "
         "m.optimize(); assert m.getObjVal() == -3; ")


def _ok_in_one_process(code: str) -> None:
    out = subprocess.run([sys.executable, "-c", code + "; print('ok')"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    # the last line: highspy 1.16 prints its banner to standard output when the first Highs is made
    assert out.stdout.strip().splitlines()[-1] == "ok", out.stdout


def test_highspy_and_ortools_import_in_one_process():
    _ok_in_one_process("import highspy, ortools; from ortools.sat.python import cp_model; "
                       "from ortools.linear_solver import pywraplp; h = highspy.Highs(); "
                       "s = pywraplp.Solver.CreateSolver('SCIP'); assert s is not None")


def test_pyscipopt_with_highspy_and_ortools_in_one_process():
    _ok_in_one_process("import highspy, pyscipopt; from ortools.sat.python import cp_model; "
                       "from ortools.linear_solver import pywraplp; h = highspy.Highs(); " + _SCIP
                       + "c = cp_model.CpModel(); y = c.new_int_var(0, 3, 'y'); c.maximize(y); "
                       "assert cp_model.CpSolver().solve(c) == cp_model.OPTIMAL")


@pytest.mark.slow
def test_numba_kernels_with_every_solver_library_in_one_process():
    """DepL's compiled stage-2 loops (numba, LLVM) beside HiGHS, OR-Tools and SCIP, each one used."""
    _ok_in_one_process(
        "import highspy, pyscipopt, numpy as np; from ortools.sat.python import cp_model; "
        "from ortools.linear_solver import pywraplp; import pyomo.environ; "
        "from deplbench.heuristics.models import kernels; h = highspy.Highs(); " + _SCIP
        + "P = np.arange(6, dtype=np.float32).reshape(3, 2); full = np.empty((4, 2), dtype=np.float32); "
        "kernels.apply_options(P, np.array([1, 2]), np.array([5, 1], dtype=np.float32), 2, 10, 2, full); "
        "assert full.tolist() == [[5, 6], [1, 2], [3, 4], [5, 6]], full.tolist()")


#: each library used for real once it is imported: a HiGHS MIP, a CP-SAT model, SCIP through PySCIPOpt
_USE = {
    "highspy": ("import highspy; h = highspy.Highs(); h.setOptionValue('output_flag', False); "
                "h.addVar(0, 3); h.changeColCost(0, -1); "
                "h.changeColIntegrality(0, highspy.HighsVarType.kInteger); h.run(); "
                "assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal; "),
    "ortools": ("from ortools.sat.python import cp_model; c = cp_model.CpModel(); y = c.new_int_var(0, 3, 'y'); "
                "c.maximize(y); assert cp_model.CpSolver().solve(c) == cp_model.OPTIMAL; "),
    "pyscipopt": ("import pyscipopt; m = pyscipopt.Model(); m.hideOutput(); x = m.addVar(vtype='I', ub=3); "
                  "m.setObjective(-x); m.optimize(); assert m.getObjVal() == -3; "),
}


@pytest.mark.parametrize("order", [("highspy", "ortools", "pyscipopt"), ("pyscipopt", "ortools", "highspy"),
                                   ("ortools", "highspy", "pyscipopt")], ids="-".join)
def test_the_three_solver_libraries_in_one_process_in_either_order(order):
    """Native libraries can clash by load order (highspy 1.15 beside OR-Tools 9.15 did): each order works."""
    _ok_in_one_process("\n".join(_USE[name].rstrip("; ") for name in order))
