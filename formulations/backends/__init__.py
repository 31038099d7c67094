"""Solver interfaces of the SAA MILP: one module per registered method, named after it.

``milp_highs`` (Pyomo + HiGHS), ``milp_highs_direct`` (highspy), ``milp_cpsat`` (OR-Tools),
``milp_scip`` and ``milp_scip_bc`` (PySCIPOpt), ``mps`` (any MIP solver through MPS files, with its
helpers ``solfile`` and ``scip_file``). Each maps its solver's codes through its own ``STATUS_MAP``
beside the call; the solver library is imported when the method runs, never when it is listed.

May import: the core, ``deplbench.instances``, ``formulations.saa``. Imported by: the registry (by
module name), ``benchmarks``.
"""
