"""The certified branch-and-bound ``exact`` and the enumeration ``bruteforce`` (the true problem).

``exact.py`` registers the method; ``search`` (best-first sequence search), ``bounds``, ``conditions``,
``cover``, ``lifted``, ``laws`` and ``region`` (lower bounds and their certificates), ``incumbent``
(certified plans). Proofs: ``docs/exact-proofs.md``.

May import: the core, ``deplbench.instances`` and ``formulations.allocation`` / ``formulations.sequences``;
never ``formulations.saa`` or ``formulations.backends``. Imported by: the registry, ``benchmarks``.
"""
