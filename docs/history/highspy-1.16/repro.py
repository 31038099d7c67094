"""highspy 1.16.0 SIGSEGV in Highs.run: plain highspy, no deplbench (docs/history/highspy-1.16.md).

    python repro.py            # MIP start (start.txt) passed: SIGSEGV under highspy 1.16.0 (rc 139)
    python repro.py --no-start # no start: kOptimal 25 under 1.16.0; under 1.14.0 valgrind shows the
                               # same out-of-bounds access (one SIGSEGV in 51 plain runs)
    python repro.py --workaround   # mip_heuristic_run_rens = False (the suite's workaround): kOptimal 25

Native stack (gdb): Highs::run -> HighsMipSolver::run -> evaluateRootNode -> RENS -> solveSubMip ->
HighsMipSolver::run -> runMipPresolve -> HPresolve::presolve -> enumerateSolutions -> prepareProbing
-> HighsMipSolverData::setupDomainPropagation -> highsSparseTranspose.
"""
import sys
from pathlib import Path

import highspy

here = Path(__file__).resolve().parent
h = highspy.Highs()
h.setOptionValue("output_flag", "--log" in sys.argv)
h.readModel(str(here / "model.mps"))
for name, value in [("threads", 1), ("random_seed", 1), ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0),
                    ("primal_feasibility_tolerance", 1e-9), ("mip_feasibility_tolerance", 1e-9)]:
    h.setOptionValue(name, value)
if "--workaround" in sys.argv:
    h.setOptionValue("mip_heuristic_run_rens", False)
if "--no-start" not in sys.argv:
    sol = highspy.HighsSolution()
    sol.col_value = [float(v) for v in (here / "start.txt").read_text().split()]
    sol.value_valid = True
    h.setSolution(sol)
h.run()
print(h.getModelStatus(), h.getInfo().objective_function_value)
