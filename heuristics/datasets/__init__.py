"""Stage 1 of DepL: dataset selection (``selection``), submodular minimisation (``submodular``) and
the dataset search of ``depl-plus`` (``search``).

May import: the core and ``deplbench.instances``. Imported by: ``heuristics`` and ``benchmarks``.
"""
