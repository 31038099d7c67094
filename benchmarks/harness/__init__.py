"""The harness: TOML grids (``config``), one process per run (``process``, ``runner``), flat rows
(``rows``), the DuckDB store (``store``), the run frame (``frame``) and labels (``labels``).

May import: the core, the registry and ``deplbench.instances``; never ``report``, ``library`` or
``perf``. Imported by: ``benchmarks.api``, ``report``, ``library``, ``perf``, ``cli``.
"""
