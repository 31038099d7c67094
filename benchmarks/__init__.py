"""The harness, the report, the instance library and the hand-run performance scripts.

:mod:`~deplbench.benchmarks.harness` (configs, runs, the DuckDB store), :mod:`~deplbench.benchmarks.report`
(sections, tables, figures), :mod:`~deplbench.benchmarks.library` (the graded instance library),
:mod:`~deplbench.benchmarks.perf` (``python -m deplbench.benchmarks.perf.NAME``), ``api`` (``run_config``,
``read_results``).

May import: everything but ``deplbench.cli`` and the facade. Imported by: ``deplbench.cli``, the facade.
"""
