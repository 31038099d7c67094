"""A prefix of a model sequence: what the ``exact`` bounds know of the sequences that extend it.

May import: nothing of the package. Imported by: :mod:`.bounds`, :mod:`.product`, :mod:`.search`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Prefix:
    """A partial sequence: positions ``1..k`` fixed, ``r[m]`` epochs of model m still to place.

    ``last`` is the model of position ``k`` (``-1`` for the empty prefix), ``s`` the per_run
    coefficient sums of the placed epochs (sum of a_m over them), ``switches`` the switch indices
    (into ``instance.switches``) made so far and ``epoch_models`` the model of each placed epoch.
    """

    k: int
    last: int
    r: tuple[int, ...]
    s: tuple[float, ...]
    switches: tuple[int, ...]
    epoch_models: tuple[int, ...]
