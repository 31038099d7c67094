"""The problem definition: instances, plans, files, semantics, scenarios, laws, the evaluator and families.

Flat modules: ``schema`` (the frozen :class:`Instance`), ``plan`` (:class:`Plan`), ``io`` (files),
``semantics`` (time, cost, data effect: MODEL.md sections 2-3), ``scenarios`` (SAA sampling).
Subpackages: ``laws`` (distributions), ``evaluator`` (the judge), ``families``, ``calibration``.

May import: the core (``errors``, ``files``, ``params``, ``results``, ``registry`` for registration).
Imported by: every other part. Names below are imported on first use (PEP 562).
"""

from __future__ import annotations

import importlib

_API: dict[str, str] = {
    **dict.fromkeys(("Evaluation", "certify", "evaluate"), "deplbench.instances.evaluator.evaluate"),
    **dict.fromkeys(("load_any", "load_instance", "load_plan", "save_instance", "save_plan"),
                    "deplbench.instances.io"),
    **dict.fromkeys(("Plan", "Segment"), "deplbench.instances.plan"),
    **dict.fromkeys(("ScenarioCheck", "Scenarios", "allowed_violations", "evaluate_on_scenarios",
                     "sample_scenarios", "scenario_losses"), "deplbench.instances.scenarios"),
    "Instance": "deplbench.instances.schema",
}


def __getattr__(name: str):
    """Import a public name from its module on first use."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'deplbench.instances' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_API)
