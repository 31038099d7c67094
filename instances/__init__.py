"""The problem definition: instances, plans, the evaluator, scenarios and the instance families."""

from deplbench.instances.evaluate import Evaluation, certify, evaluate
from deplbench.instances.io import load_any, load_instance, load_plan, save_instance, save_plan
from deplbench.instances.plan import Plan, Segment
from deplbench.instances.scenarios import (
    ScenarioCheck,
    Scenarios,
    allowed_violations,
    evaluate_on_scenarios,
    sample_scenarios,
    scenario_losses,
)
from deplbench.instances.schema import Instance

__all__ = [
    "Evaluation", "Instance", "Plan", "ScenarioCheck", "Scenarios", "Segment", "allowed_violations",
    "certify", "evaluate", "evaluate_on_scenarios", "load_any", "load_instance", "load_plan",
    "sample_scenarios", "save_instance", "save_plan", "scenario_losses",
]
