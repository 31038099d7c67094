"""Stage 1 of DepL: dataset selection (``selection``), submodular minimisation (``submodular``) and
the dataset search of ``depl-plus`` (``search``).

May import: the core and ``deplbench.instances``. Imported by: ``heuristics`` and ``benchmarks``.
"""

#: how ``depl-plus`` chooses datasets: stage 1's ranking (the paper) or a search judged by the plans found
DATASET_MODES = ("stage1", "search")
