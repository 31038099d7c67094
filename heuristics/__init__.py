"""DepL's three stages, the ``depl`` and ``depl-plus`` methods and the ``best-exp`` baseline.

Stage 1: :mod:`~deplbench.heuristics.datasets` (dataset selection by submodular minimisation);
stage 2: :mod:`~deplbench.heuristics.models` (model selection on the expanded graph, eta);
stage 3: :mod:`~deplbench.heuristics.allocation` (node and resource allocation, eps).
``depl``, ``depl_plus`` and ``best_exp`` register the methods.

May import: the core, the registry and ``deplbench.instances``; never ``formulations`` or
``benchmarks``. Imported by: the registry (by module name), ``benchmarks``.
"""
