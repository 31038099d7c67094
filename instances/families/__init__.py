"""Instance families, each registered with :func:`deplbench.registry.register_family`.

``paper`` (the paper's AlexNet/MobileNet families), ``random`` (random scalable instances),
``calibrated`` (fitted from measured curves), ``studies`` (families where eta, eps, datasets or
per_epoch noise matter). ``knapsack`` lives in ``formulations.knapsack``; ``library`` in
``benchmarks.library.family``.

May import: the core, the registry, the rest of ``deplbench.instances``. Imported by: the registry
(by module name) and the facade (``load_paper``).
"""
