"""The evaluator: cost, time, feasibility and the certified loss quantile of a plan (MODEL.md sections 3-5).

``evaluate`` (the judge), ``loss`` (the loss as a sum of independent terms), ``quantile`` (the certified
bracket), ``lattice``, ``smooth`` and ``plain_quantile`` (its constructions), ``caches`` (every memo
emptied at once, for benchmarks that time methods side by side). See ``docs/evaluator.md``.

May import: the core, the instance definition (``schema``, ``plan``, ``semantics``, ``scenarios``) and
``instances.laws``. Imported by: everything that judges a plan (families, methods, harness).
"""
