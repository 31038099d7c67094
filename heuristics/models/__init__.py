"""Stage 2 of DepL: model selection on the expanded graph (``selection``, ``graph``, ``layers``) and
the per-run surrogate of ``depl-plus`` (``perrun``).

May import: the core and ``deplbench.instances``. Imported by: ``heuristics``.
"""
