"""The graded MIPLIB-style instance library: what it holds (``spec``), its build (``build``), reading
it back (``catalog``), its ``.solu`` file (``solu``), the checker (``check``), the ``library`` family
(``family``) and its report section (``report``).

May import: ``benchmarks.harness``, ``benchmarks.report``, ``formulations``, the core and
``deplbench.instances``. Imported by: ``cli``, the registry (the ``library`` family).
"""
