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
)


@register_family("library", params=PARAMS, description="an instance of a built library (deplbench library build)")
def library_instance(seed: int = 0, name: str = "", dir: str = "deplbench-library",  # noqa: A002 - the parameter's name
                     benchmark: int = -1):
    """The library's instance ``name`` (or the ``benchmark``-th of its benchmark set); tier and reference in the metadata."""
    from deplbench.benchmarks.library.catalog import Library
    from deplbench.instances.io import load_instance

    if benchmark >= 0:
        if name:
            raise InputError("give name or benchmark, not both", "--set", "benchmark")
        name = _benchmark_name(Library.open(dir), benchmark)
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


def _benchmark_name(lib, i: int) -> str:
    """The ``i``-th instance of the library's benchmark set (version 1.3 and later)."""
    where = str(lib.root / "manifest.json")
    names = lib.manifest.get("benchmark", {}).get("instances")
    if names is None:
        raise InputError("this library has no benchmark set (built before version 1.3: rebuild it)", where)
    if i >= len(names):
        raise InputError(f"the benchmark set has {len(names)} instances; position {i} is past its end", where)
    return names[i]
