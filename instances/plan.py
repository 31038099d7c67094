"""The ``depl-plan/1`` file: a :class:`Plan` is datasets plus run-length-encoded epochs (MODEL.md section 3)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from deplbench.errors import InputError

PLAN_SCHEMA = "depl-plan/1"
#: Most epochs (and segments) a plan file may hold: above the largest ``max_epochs`` an instance
#: may declare, so no valid plan is refused, and small enough to evaluate in memory.
MAX_PLAN_EPOCHS = 100_000
PLAN_STATUSES = ("optimal", "feasible", "infeasible", "timeout", "memout", "interrupted", "unknown",
                 "error")
#: which problem a status is proven for (MODEL.md section 3)
PLAN_PROBLEMS = ("true", "saa")
#: the evaluator's verdict on the plan for the true problem
PLAN_VERDICTS = ("feasible", "infeasible")


@dataclass(frozen=True)
class Segment:
    """``epochs`` consecutive epochs with the same model, cluster and resource level."""

    model: str
    cluster: str
    level: float
    epochs: int

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "cluster": self.cluster, "level": self.level, "epochs": self.epochs}


@dataclass(frozen=True)
class Plan:
    """A training plan. Only ``datasets`` and ``segments`` matter to the evaluator;
    the rest is informational."""

    datasets: tuple[str, ...]
    segments: tuple[Segment, ...]
    instance: str | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    status: str = "feasible"
    objective: float | None = None
    runtime_s: float | None = None
    #: ``"true"`` or ``"saa"``: the problem ``status`` is proven for (with the SAA sample's size and seed)
    problem: str | None = None
    scenarios: int | None = None
    scenario_seed: int | None = None
    #: the evaluator's verdict for the true problem: ``"feasible"`` or ``"infeasible"``
    certified: str | None = None
    #: the method's proven lower bound on the optimum (a dual bound; none when it has none) and
    #: ``(objective - bound) / objective``
    bound: float | None = None
    gap: float | None = None

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_epochs(cls, datasets, epochs, **info: Any) -> Plan:
        """Build a plan from a per-epoch list of ``(model, cluster, level)``, run-length encoding it."""
        runs: list[list] = []  # [model, cluster, level, epochs], counted before the segments are made
        for m, c, f in epochs:
            f = float(f)
            if runs and runs[-1][0] == m and runs[-1][1] == c and runs[-1][2] == f:
                runs[-1][3] += 1
            else:
                runs.append([m, c, f, 1])
        return cls(tuple(datasets), tuple(Segment(*r) for r in runs), **info)

    @property
    def n_epochs(self) -> int:
        return sum(s.epochs for s in self.segments)

    def epochs(self) -> list[tuple[str, str, float]]:
        """The per-epoch sequence ``[(model, cluster, level), ...]`` (length K)."""
        return [(s.model, s.cluster, s.level) for s in self.segments for _ in range(s.epochs)]

    def models(self) -> list[str]:
        return [s.model for s in self.segments for _ in range(s.epochs)]

    def annotate(self, **info: Any) -> Plan:
        """A copy with informational fields set: instance, solver name/params, status, objective, runtime."""
        solver = dict(self.solver)
        if "solver" in info:
            solver["name"] = info.pop("solver")
        if "params" in info:
            solver["params"] = {k: v for k, v in info.pop("params").items()}
        return replace(self, solver=solver, **info)

    def check_ids(self, instance, source: str | None = None) -> None:
        """Raise :class:`InputError` if the plan names an id or level the instance cannot resolve."""
        for i, d in enumerate(self.datasets):
            if d not in instance.dataset_by_id:
                raise InputError(f"unknown dataset '{d}'", source, f"$.datasets[{i}]")
        if len(set(self.datasets)) != len(self.datasets):
            raise InputError("a dataset is listed twice", source, "$.datasets")
        for i, s in enumerate(self.segments):
            if s.model not in instance.model_by_id:
                raise InputError(f"unknown model '{s.model}'", source, f"$.segments[{i}].model")
            if s.cluster not in instance.cluster_by_id:
                raise InputError(f"unknown cluster '{s.cluster}'", source, f"$.segments[{i}].cluster")

    # ---- file form ------------------------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": PLAN_SCHEMA, "instance": self.instance,
                               "solver": self.solver or {"name": "unknown", "params": {}},
                               "status": self.status, "datasets": list(self.datasets),
                               "segments": [s.to_dict() for s in self.segments]}
        if self.objective is not None and math.isfinite(self.objective):
            out["objective"] = self.objective
        if self.runtime_s is not None:
            out["runtime_s"] = self.runtime_s
        if out["instance"] is None:
            del out["instance"]
        for k in ("problem", "scenarios", "scenario_seed", "certified"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        for k in ("bound", "gap"):
            v = getattr(self, k)
            if v is not None and math.isfinite(v):
                out[k] = v
        return out

    @classmethod
    def from_json_dict(cls, data: Any, source: str | None = None) -> Plan:
        """Parse and structurally validate a plan object (ids are checked by :meth:`check_ids`)."""

        def err(msg: str, path: str = "$") -> InputError:
            return InputError(msg, source, path)

        if not isinstance(data, dict):
            raise err("a plan must be a JSON object")
        allowed = {"schema", "instance", "solver", "status", "datasets", "segments", "objective", "runtime_s",
                   "problem", "scenarios", "scenario_seed", "certified", "bound", "gap"}
        for k in data:
            if k not in allowed:
                raise err(f"unknown key '{k}'", f"$.{k}")
        if data.get("schema") != PLAN_SCHEMA:
            raise err(f"schema must be '{PLAN_SCHEMA}'", "$.schema")
        status = data.get("status", "feasible")
        if status not in PLAN_STATUSES:
            raise err(f"status must be one of {', '.join(PLAN_STATUSES)}", "$.status")
        inst = data.get("instance")
        if inst is not None and not isinstance(inst, str):
            raise err("instance must be a string", "$.instance")
        solver = data.get("solver", {})
        if not isinstance(solver, dict):
            raise err("solver must be an object", "$.solver")
        ds = data.get("datasets")
        if not isinstance(ds, list) or not all(isinstance(d, str) for d in ds):
            raise err("datasets must be a list of dataset ids", "$.datasets")
        segs_raw = data.get("segments")
        if not isinstance(segs_raw, list):
            raise err("segments must be a list", "$.segments")
        segs, total = [], 0
        for i, s in enumerate(segs_raw):
            p = f"$.segments[{i}]"
            if not isinstance(s, dict):
                raise err("a segment must be an object", p)
            for k in s:
                if k not in ("model", "cluster", "level", "epochs"):
                    raise err(f"unknown key '{k}'", f"{p}.{k}")
            for k in ("model", "cluster"):
                if not isinstance(s.get(k), str):
                    raise err(f"{k} must be a string id", f"{p}.{k}")
            lv = s.get("level")
            if isinstance(lv, bool) or not isinstance(lv, (int, float)) or not math.isfinite(lv):
                raise err("level must be a finite number", f"{p}.level")
            ep = s.get("epochs")
            if isinstance(ep, bool) or not isinstance(ep, int) or ep < 1:
                raise err("epochs must be an integer >= 1", f"{p}.epochs")
            if ep > MAX_PLAN_EPOCHS or total + ep > MAX_PLAN_EPOCHS:
                raise err(f"the plan holds more than {MAX_PLAN_EPOCHS} epochs (the limit)", f"{p}.epochs")
            total += ep
            segs.append(Segment(s["model"], s["cluster"], float(lv), ep))
        if not segs and status in ("optimal", "feasible"):
            raise err("segments may be empty only when status is infeasible, timeout or error", "$.segments")
        for k in ("objective", "runtime_s", "bound", "gap"):
            v = data.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise err(f"{k} must be a number", f"$.{k}")
        problem = _problem_fields(data, err)
        return cls(tuple(ds), tuple(segs), inst, solver, status, data.get("objective"), data.get("runtime_s"),
                   **problem, bound=data.get("bound"), gap=data.get("gap"))


def _problem_fields(data: dict, err) -> dict[str, Any]:
    """``problem``, ``scenarios``, ``scenario_seed`` and ``certified``, checked (MODEL.md section 3)."""
    out = {k: data.get(k) for k in ("problem", "scenarios", "scenario_seed", "certified")}
    if out["problem"] is not None and out["problem"] not in PLAN_PROBLEMS:
        raise err(f"problem must be one of {', '.join(PLAN_PROBLEMS)}", "$.problem")
    if out["certified"] is not None and out["certified"] not in PLAN_VERDICTS:
        raise err(f"certified must be one of {', '.join(PLAN_VERDICTS)}", "$.certified")
    for k in ("scenarios", "scenario_seed"):
        v = out[k]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise err(f"{k} must be an integer >= 0", f"$.{k}")
        if v is not None and out["problem"] != "saa":
            raise err(f"{k} is allowed only with problem 'saa'", f"$.{k}")
    return out
