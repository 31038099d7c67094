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
    assert out.stdout.strip() == "ok"


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
