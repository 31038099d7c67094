"""Solve an MPS file with SCIP (pyscipopt) and write SCIP's solution file: the ``scip`` preset of ``mps``.

``python -m deplbench.formulations.backends.scip_file MODEL.mps OUT.sol [--time-limit T] [--gap G]
[--threads N] [--seed S]`` behaves like ``scip -c "read MODEL.mps optimize write solution OUT.sol
quit"``: the file starts with ``solution status: ...`` (SCIP's own status text), then
``objective value:`` and the nonzero columns, or ``no solution available``. It runs in its own
process, so pyscipopt never shares one with highspy or OR-Tools.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

#: pyscipopt's getStatus() -> the status text SCIP's interactive shell writes
STATUS_TEXT = {
    "optimal": "optimal solution found", "infeasible": "infeasible", "timelimit": "time limit reached",
    "memlimit": "memory limit reached", "gaplimit": "gap limit reached", "nodelimit": "node limit reached",
    "userinterrupt": "user interrupt", "unbounded": "unbounded", "inforunbd": "infeasible or unbounded",
}


def main(argv: list[str] | None = None) -> int:
    import pyscipopt

    ap = argparse.ArgumentParser(prog="scip_file")
    ap.add_argument("mps")
    ap.add_argument("sol")
    ap.add_argument("--time-limit", type=float, default=1e20)
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(a.mps)
    m.setParam("limits/time", max(a.time_limit, 0.01))
    m.setParam("limits/gap", a.gap)
    m.setParam("randomization/randomseedshift", a.seed)
    m.setParam("numerics/feastol", 1e-9)
    m.optimize()
    st = m.getStatus()
    if st != "infeasible":  # the dual bound, in SCIP's own statistics format (read back by solfile.dual_bound)
        print(f"Dual Bound         : {m.getDualbound():+.16e}", flush=True)
    fd, tmp = tempfile.mkstemp(suffix=".sol", dir=os.path.dirname(os.path.abspath(a.sol)))
    os.close(fd)
    if m.getNSols() > 0:
        m.writeBestSol(tmp)
        with open(tmp) as f:
            body = f.read()
    else:
        body = "no solution available\n"
    with open(tmp, "w") as f:
        f.write(f"solution status: {STATUS_TEXT.get(st, st)}\n" + body)
    os.replace(tmp, a.sol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
