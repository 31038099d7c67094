"""The certified branch-and-bound ``exact`` and the enumeration ``bruteforce`` (the true problem).

:mod:`.methods` declares both methods (parameters, outputs, entries; light, so that listing them
imports no search); :mod:`.exact` is the outer search of ``exact``, :mod:`.bruteforce` the
enumeration. Every module of the package, one line each: the generated table of
``docs/ARCHITECTURE.md`` ("Modules"). Guide: ``docs/exact.md``; proofs: ``docs/exact-proofs.md``.

May import: the core, ``deplbench.instances`` and ``formulations.allocation`` / ``formulations.sequences``;
never ``formulations.saa`` or ``formulations.backends``. Imported by: the registry, ``benchmarks``.
"""
