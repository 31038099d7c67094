"""The report of a result store: a registry of sections (``sections``), the built-in ones
(``builtin``), their tables and figures, and the writer (``write``).

May import: ``benchmarks.harness``, the core, ``deplbench.instances``, ``heuristics`` and
``formulations.saa`` (for the claims and the SAA table). Imported by: ``api``, ``library.report``, ``cli``.
"""
