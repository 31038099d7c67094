"""The sample average approximation (SAA) MILP: data, model, strengthening, cuts, starts and bounds.

``data`` (one dataset selection on a sample), ``model`` (sparse matrices of both formulations),
``strength``/``blocks``/``dag``/``cuts``/``root`` (strengthening), ``start`` (enumerated MIP starts),
``common`` (what every SAA method shares), ``contract`` (what a backend's per-selection solve
takes and returns), ``method`` (what every SAA method declares), ``bounds`` (statistical bounds),
``io`` (every model-to-file and model-to-HiGHS translation: the one MPS writer).

May import: the core, ``deplbench.instances``, ``formulations.allocation`` / ``formulations.sequences``
and highspy (in ``io``, inside functions); never ``formulations.backends``.
Imported by: ``formulations.backends``, ``benchmarks``, ``cli``.
"""
