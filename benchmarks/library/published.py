"""The published references of a library version, and a build's agreement with them.

As MIPLIB publishes its ``.solu`` file beside the instances, the package carries the reference
lines of each library version that was built in full with the default settings
(``published/deplbench-library-VERSION.solu``; how each was built: ``docs/library.md``). A reader
can cite them without building, and a full default build of the same version is compared with
them line by line (:func:`compare`): the same problems, the same kind of reference, and values
equal within :data:`REL_TOL` relative (MIPLIB's objective tolerance). A build with other settings
(limits, sample sizes, tiers, the quick list, a calibration file) is not compared: its references
may legitimately differ.

May import: ``benchmarks.library.solu``, ``.spec``, ``.build``. Imported by: ``benchmarks.library.catalog``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from deplbench.benchmarks.library.build import EXACT_WORK, SAA_NODES
from deplbench.benchmarks.library.solu import Reference, read_solu
from deplbench.benchmarks.library.spec import SCENARIOS, TIERS

PUBLISHED_DIR = Path(__file__).with_name("published")
REL_TOL = 1e-6


def published_path(version: str) -> Path:
    """The published ``.solu`` file of ``version`` (it may not exist)."""
    return PUBLISHED_DIR / f"deplbench-library-{version}.solu"


def comparable(quick: bool, calibration: str | None, tiers: tuple[str, ...], saa_nodes: int,
               scenarios: tuple[int, ...], exact_work: int) -> bool:
    """A build whose references the published ones are: the default list, tiers and deterministic
    limits (the safety time limits decide nothing unless hit, which the build reports apart)."""
    return (not quick and calibration is None and tuple(tiers) == TIERS and saa_nodes == SAA_NODES
            and tuple(scenarios) == SCENARIOS and exact_work == EXACT_WORK)


def version_key(version: str) -> tuple[int, ...]:
    """``"2.10"`` -> ``(2, 10)``: library versions in numeric order."""
    return tuple(int(x) for x in version.split("."))


def published_versions() -> list[str]:
    """The library versions whose references are published, oldest first."""
    names = (p.name.removeprefix("deplbench-library-").removesuffix(".solu") for p in PUBLISHED_DIR.glob("*.solu"))
    return sorted(names, key=version_key)


@dataclass
class Agreement:
    """A build's references against the published ones of its version."""

    version: str
    agree: int = 0
    differ: list[str] = field(default_factory=list)  # "NAME: built X, published Y"
    missing: list[str] = field(default_factory=list)  # published, not built
    extra: list[str] = field(default_factory=list)  # built, not published

    @property
    def ok(self) -> bool:
        return not (self.differ or self.missing or self.extra)

    def line(self) -> str:
        """One line for the build's report."""
        if self.ok:
            return f"references agree with the published {self.version} ones ({self.agree} problems)"
        parts = [f"{len(v)} {k}" for k, v in (("differ", self.differ), ("not built", self.missing),
                                              ("not published", self.extra)) if v]
        first = (self.differ + self.missing + self.extra)[:3]
        return (f"references DIFFER from the published {self.version} ones: {self.agree} agree, "
                + ", ".join(parts) + "; e.g. " + "; ".join(first))


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=REL_TOL)


def _same(a: Reference, b: Reference) -> bool:
    return a.kind == b.kind and _close(a.value, b.value) and _close(a.bound, b.bound)


def _text(r: Reference) -> str:
    return " ".join([f"={r.kind}="] + [repr(v) for v in (r.value, r.bound) if v is not None])


def compare(refs: list[tuple[str, Reference]], version: str) -> Agreement | None:
    """The agreement of the references ``refs`` with the published ones of ``version`` (None: none published)."""
    path = published_path(version)
    if not path.is_file():
        return None
    pub = read_solu(path)
    out = Agreement(version)
    built = dict(refs)
    for name, ref in built.items():
        if name not in pub:
            out.extra.append(name)
        elif _same(ref, pub[name]):
            out.agree += 1
        else:
            out.differ.append(f"{name}: built {_text(ref)}, published {_text(pub[name])}")
    out.missing = sorted(set(pub) - set(built))
    return out
