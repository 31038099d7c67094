"""The library's benchmark set: a fixed subset chosen for diversity, as MIPLIB chooses its own.

MIPLIB 2017 selects its benchmark set from the collection so that instances of every kind are
represented and every instance has a proven status. The rule here, applied to the manifest's
records (so every build of the same library selects the same set):

1. only instances with a proven reference (``=opt=`` or ``=inf=``): a comparison needs the answer;
2. the candidates are grouped by (family, noise mode, tier); groups are visited in sorted order,
   and each visit takes the next instance of the group (by name), round after round, until
   :data:`SIZE` instances are taken or none is left. Every group is thus represented before any
   group is represented twice.

May import: nothing of deplbench. Imported by: ``benchmarks.library.catalog`` and the ``library``
family.
"""

from __future__ import annotations

from collections import defaultdict

#: instances in the benchmark set (fewer when the library has fewer proven instances)
SIZE = 24
RULE = ("proven references only; round-robin over (family, noise mode, tier) groups in sorted order, "
        f"names sorted within a group; at most {SIZE} instances")


def noise_mode(rec: dict) -> str:
    """The record's noise mode, read from its parameters or its name (``per_run`` / ``per_epoch``)."""
    mode = rec.get("params", {}).get("noise_mode")
    if mode:
        return str(mode)
    return "per_epoch" if "per_epoch" in rec["name"] else "per_run"


def select(records: list[dict], size: int = SIZE) -> list[str]:
    """Names of the benchmark set among the manifest's instance ``records``, in selection order."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for rec in records:
        if rec["reference"]["kind"] in ("opt", "inf"):
            groups[(rec["family"], noise_mode(rec), rec["tier"])].append(rec["name"])
    queues = [sorted(groups[k]) for k in sorted(groups)]
    chosen: list[str] = []
    while len(chosen) < size and any(queues):
        for q in queues:
            if q and len(chosen) < size:
                chosen.append(q.pop(0))
    return chosen
