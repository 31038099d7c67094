"""``instances.evaluator.caches.clear`` empties every memo of the evaluator and the laws, results unchanged.

The speed benchmarks clear them before each timed solve so that no method reads the lattices
another method computed on the same instance (docs/depl.md, "Measured cold").
"""

from __future__ import annotations

import importlib
import pkgutil

import deplbench.instances.evaluator as evaluator_pkg
import deplbench.instances.laws as laws_pkg
from deplbench.instances.evaluator import caches, lattice, lattice_batch
from deplbench.instances.evaluator.evaluate import certify
from deplbench.instances.families.paper import load_paper
from deplbench.instances.plan import Plan, Segment


def _memos():
    """(name, lru-cached function) of every module of the evaluator and the laws."""
    for pkg in (evaluator_pkg, laws_pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for name, obj in vars(mod).items():
                if callable(obj) and hasattr(obj, "cache_info") and getattr(obj, "__module__", "") == mod.__name__:
                    yield f"{mod.__name__}.{name}", obj


def test_clear_empties_every_memo_and_keeps_the_brackets():
    inst = load_paper("paper-alexnet-per_epoch-t9")
    plan = Plan(inst.dataset_ids, (Segment(inst.models[0].id, inst.clusters[0].id, inst.clusters[0].levels[-1], 30),))
    first = certify(inst, plan, 1e-3)
    memos = dict(_memos())
    assert any(f.cache_info().currsize for f in memos.values())  # the certification filled some
    assert lattice._TABLES and lattice_batch._PMFS
    caches.clear()
    full = [name for name, f in memos.items() if f.cache_info().currsize]
    assert full == []  # a memo added to the evaluator or the laws must be cleared too
    assert not lattice._TABLES and not lattice_batch._PMFS
    again = certify(inst, plan, 1e-3)
    assert (again.lo, again.hi) == (first.lo, first.hi)
