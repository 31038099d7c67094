"""The ``library`` family: an instance of a built library, by name (``deplbench run library``).

``generate library --set name=NAME --set dir=DIR`` returns ``DIR/instances/NAME.json`` with the
library's tier and reference in its metadata, so that a run config can compare solvers on the
library's instances and the report can group them by tier.
"""

from __future__ import annotations

from deplbench.errors import InputError
from deplbench.params import Param
from deplbench.registry import register_family

PARAMS = (
    Param("name", str, "", "instance name in the library's manifest"),
    Param("dir", str, "deplbench-library", "library folder (written by 'deplbench library build')"),
    Param("benchmark", int, -1, "instead of name: the instance at this position of the manifest's benchmark set",
          low=-1, high=10_000),
    Param("tier", str, "", "with index, instead of name: a tier (easy, medium, hard) of the library"),
    Param("index", int, -1, "with tier: the instance at this position of the tier (names sorted)", low=-1,
          high=10_000),
)


@register_family("library", params=PARAMS, description="an instance of a built library (deplbench library build)")
def library_instance(seed: int = 0, name: str = "", dir: str = "deplbench-library",  # noqa: A002 - the parameter's name
                     benchmark: int = -1, tier: str = "", index: int = -1):
    """The library's instance ``name`` (or the ``benchmark``-th of its benchmark set, or the ``index``-th of
    ``tier``); tier and reference in the metadata."""
    from deplbench.benchmarks.library.catalog import Library
    from deplbench.instances.io import load_instance

    if sum((bool(name), benchmark >= 0, bool(tier) or index >= 0)) > 1:
        raise InputError("give one of name, benchmark, or tier with index", "--set", "name")
    if benchmark >= 0:
        name = _benchmark_name(Library.open(dir), benchmark)
    if tier or index >= 0:
        name = _tier_name(Library.open(dir), tier, index)
    if not name:
        raise InputError("set name=INSTANCE (an instance of the library)", "--set", "name")
    lib = Library.open(dir)
    rec, saa = lib.find(name)
    if saa is not None:
        raise InputError(f"'{name}' is an SAA file, not an instance", "--set", "name")
    inst = load_instance(lib.root / rec["file"])
    meta = dict(inst.metadata or {})
    meta.update(library_tier=rec["tier"], library_reference=rec["reference"], library_family=rec["family"])
    return inst.model_copy(update={"metadata": meta})


def _tier_name(lib, tier: str, i: int) -> str:
    """The ``i``-th instance (names sorted) of ``tier`` in the library."""
    where = str(lib.root / "manifest.json")
    if tier not in ("easy", "medium", "hard") or i < 0:
        raise InputError(f"tier must be easy, medium or hard and index >= 0 (got tier '{tier}', index {i})",
                         "--set", "tier")
    names = sorted(r["name"] for r in lib.manifest["instances"] if r["tier"] == tier)
    if i >= len(names):
        raise InputError(f"the {tier} tier has {len(names)} instances; position {i} is past its end", where)
    return names[i]


def _benchmark_name(lib, i: int) -> str:
    """The ``i``-th instance of the library's benchmark set (version 1.3 and later)."""
    where = str(lib.root / "manifest.json")
    names = lib.manifest.get("benchmark", {}).get("instances")
    if names is None:
        raise InputError("this library has no benchmark set (built before version 1.3: rebuild it)", where)
    if i >= len(names):
        raise InputError(f"the benchmark set has {len(names)} instances; position {i} is past its end", where)
    return names[i]
