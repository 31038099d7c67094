"""Exact methods and SAA MILPs of DepL: the ``exact`` branch-and-bound, the SAA model and its solver backends.

Subpackages: :mod:`~deplbench.formulations.exact` (certified branch-and-bound and ``bruteforce``),
:mod:`~deplbench.formulations.saa` (the SAA MILP, its data, strengthening and file translations),
:mod:`~deplbench.formulations.backends` (one module per solver interface, each with its ``STATUS_MAP``).
Flat modules: ``allocation`` and ``sequences`` (shared by ``exact`` and ``saa``), ``knapsack`` (Property 1).

May import: the core (``errors``, ``results``, ``params``, ``registry``) and ``deplbench.instances``.
Imported by: ``deplbench.benchmarks``, ``deplbench.cli`` and the registry (by module name).
"""
