"""Every memo the evaluator and the laws keep between calls, emptied in one call.

The evaluator memoises pure functions of their arguments (term lattices, whole brackets, the
laws' distribution objects and CDF tables), so one process that solves an instance twice, or
solves it with two methods, pays for them once. A benchmark that times methods against each
other in one process empties them before each timed solve (:func:`clear`), so every method
starts as it would in a fresh process and none reads what another computed.

May import: the evaluator's modules and ``instances.laws``.
"""

from __future__ import annotations

from deplbench.instances.evaluator import (
    evaluate,
    lattice,
    lattice_batch,
    plain_quantile,
    quantile,
    smooth,
)
from deplbench.instances.laws import distributions, noise


def clear() -> None:
    """Empty every memo of the evaluator and the laws (the results they give do not change)."""
    lattice.clear_tables()  # CDF tables and their cores
    lattice_batch.clear()  # term lattices
    for fn in (quantile._cached_bracket, quantile._cached_lattice, plain_quantile._core, plain_quantile.plain_step,
               smooth.irwin_hall, smooth.term_l1, evaluate._z, distributions._penalty_dist, noise.noise_dist):
        fn.cache_clear()
