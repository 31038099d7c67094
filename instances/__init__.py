"""The problem definition: instances, plans, files, semantics, scenarios, laws, the evaluator and families.

Flat modules: ``schema`` (the frozen :class:`Instance`), ``plan`` (:class:`Plan`), ``io`` (files),
``semantics`` (time, cost, data effect: MODEL.md sections 2-3), ``scenarios`` (SAA sampling).
Subpackages: ``laws`` (distributions), ``evaluator`` (the judge), ``families``, ``calibration``.

May import: the core (``errors``, ``files``, ``params``, ``results``, ``registry`` for registration).
Imported by: every other part. Names below are imported on first use (PEP 562).
"""

from __future__ import annotations

from deplbench.lazy import exports

_API: dict[str, str] = {
    **dict.fromkeys(("Evaluation", "certify", "evaluate"), "deplbench.instances.evaluator.evaluate"),
    **dict.fromkeys(("load_any", "load_instance", "load_plan", "save_instance", "save_plan"),
                    "deplbench.instances.io"),
    **dict.fromkeys(("Plan", "Segment"), "deplbench.instances.plan"),
    **dict.fromkeys(("ScenarioCheck", "Scenarios", "allowed_violations", "evaluate_on_scenarios",
                     "sample_scenarios", "scenario_losses"), "deplbench.instances.scenarios"),
    "Instance": "deplbench.instances.schema",
}


__getattr__, __dir__ = exports("deplbench.instances", _API)

__all__ = sorted(_API)
