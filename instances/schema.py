"""The ``depl-instance/1`` file: a frozen, validated :class:`Instance` (MODEL.md section 2).

Field-level rules (types, ranges, unknown keys) are pydantic constraints in strict
mode (a JSON string or boolean is never a number); rules that relate several
fields raise :class:`~deplbench.errors.InputError` naming the JSON path.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from deplbench.errors import InputError

INSTANCE_SCHEMA = "depl-instance/1"

#: Resource caps (docs/reliability.md): every number's magnitude is at most MAX_ABS and every
#: positive number at least MIN_POS, so that no product or quotient of the semantics overflows
#: (the evaluator, bruteforce and the MILPs then compute the same finite figures); MAX_EPOCHS
#: bounds ``max_epochs`` and MAX_NODES ``nodes``.
MAX_ABS = 1e15
MIN_POS = 1e-12
MAX_EPOCHS = 100_000
MAX_NODES = 1_000_000

Num = Annotated[float, Field(ge=-MAX_ABS, le=MAX_ABS)]
def _at_least_min_pos(v: float) -> float:
    if v < MIN_POS:
        raise ValueError(f"must be at least {MIN_POS:g} (the smallest positive value an instance may hold)")
    return v


Pos = Annotated[float, Field(gt=0, le=MAX_ABS), AfterValidator(_at_least_min_pos)]
NonNeg = Annotated[float, Field(ge=0, le=MAX_ABS)]
PosInt = Annotated[int, Field(ge=1, le=MAX_NODES)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False,
                              populate_by_name=True)


class Loss(_Strict):
    initial: Pos
    target: Num
    quantile: Annotated[float, Field(gt=0, lt=1)]
    floor: Num | None = None  # the loss is max(floor, l(K)) (MODEL.md section 4); finite, below the target

    @model_validator(mode="after")
    def _target_below_initial(self) -> Loss:
        if not self.target < self.initial:
            raise ValueError(f"target ({self.target}) must be below initial ({self.initial})")
        if self.floor is not None and not self.floor < self.target:
            raise InputError(f"floor ({self.floor}) must be below target ({self.target})", path="$.loss.floor")
        return self


class DataEffect(_Strict):
    reference_samples: Pos
    alpha: NonNeg


class Cluster(_Strict):
    id: str
    nodes: PosInt
    capacity: Pos
    levels: tuple[Annotated[float, Field(gt=0, le=1)], ...]
    bandwidth: Pos
    unit_cost: NonNeg

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v:
            raise ValueError("levels must not be empty")
        if any(b <= a for a, b in zip(v, v[1:], strict=False)):
            raise ValueError("levels must be strictly increasing")
        return v


class Dataset(_Strict):
    id: str
    samples: Annotated[int, Field(ge=1, le=int(MAX_ABS))]
    quality: Annotated[float, Field(gt=0, le=1)]


class TransferCost(_Strict):
    dataset: str
    cluster: str
    cost: NonNeg


class Progress(_Strict):
    A: NonNeg
    B: Annotated[float, Field(gt=-1, le=MAX_ABS)]
    p: NonNeg


class Noise(_Strict):
    family: Literal["invgamma", "gamma", "lognormal", "normal", "constant"]
    mean: Pos
    var: NonNeg | None = None

    @model_validator(mode="after")
    def _var(self) -> Noise:
        if self.family == "constant":
            if self.var not in (None, 0, 0.0):
                raise ValueError("a constant noise has var 0 or no var")
        elif self.var is None or self.var <= 0:
            raise ValueError(f"noise family '{self.family}' needs var > 0")
        elif self.var < MIN_POS:  # the magnitude caps (docs/reliability.md): a law this narrow is 'constant'
            raise ValueError(f"var {self.var:g} is below {MIN_POS:g}, the smallest positive number an instance "
                             "may hold; use family 'constant' for a noise without variance")
        return self


_PENALTY_FIELDS = {"t": {"df", "loc", "scale"}, "normal": {"loc", "scale"}, "constant": {"value"}}


class Penalty(_Strict):
    family: Literal["t", "normal", "constant"]
    low: Num
    high: Num
    df: Pos | None = None
    loc: Num | None = None
    scale: Pos | None = None
    value: Num | None = None

    @model_validator(mode="after")
    def _family_fields(self) -> Penalty:
        need = _PENALTY_FIELDS[self.family]
        for name in ("df", "loc", "scale", "value"):
            given = getattr(self, name) is not None
            if name in need and not given:
                raise ValueError(f"penalty family '{self.family}' needs '{name}'")
            if name not in need and given:
                raise ValueError(f"'{name}' is not a parameter of penalty family '{self.family}'")
        if not self.low <= self.high:
            raise ValueError(f"low ({self.low}) must be <= high ({self.high})")
        if self.family == "constant":
            if not self.low <= self.value <= self.high:
                raise ValueError(f"value ({self.value}) must lie in [low, high]")
        else:
            from deplbench.instances.laws.distributions import penalty_base_mass

            if not penalty_base_mass(self) >= 1e-12:
                raise ValueError("less than 1e-12 of the penalty's probability lies inside [low, high]")
        return self


class Model(_Strict):
    id: str
    size: NonNeg
    work: Pos
    progress: Progress
    noise: Noise


class Switch(_Strict):
    from_: str = Field(alias="from")
    to: str
    penalty: Penalty


class Instance(_Strict):
    """A validated DepL instance (MODEL.md section 2). Immutable; lookups are cached."""

    schema_: Literal["depl-instance/1"] = Field(alias="schema")
    name: str
    loss: Loss
    time_budget: Pos
    max_epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)]
    noise_mode: Literal["per_epoch", "per_run"]
    data_effect: DataEffect
    clusters: tuple[Cluster, ...] = Field(min_length=1)
    datasets: tuple[Dataset, ...] = Field(min_length=1)
    transfer_costs: tuple[TransferCost, ...] = ()
    models: tuple[Model, ...] = Field(min_length=1)
    switches: tuple[Switch, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_object(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("metadata must be an object")
        return v

    @model_validator(mode="after")
    def _references(self) -> Instance:
        for key in ("clusters", "datasets", "models"):
            seen: set[str] = set()
            for i, item in enumerate(getattr(self, key)):
                if item.id in seen:
                    raise InputError(f"duplicate id '{item.id}'", path=f"$.{key}[{i}].id")
                seen.add(item.id)
        models = {m.id for m in self.models}
        clusters = {c.id for c in self.clusters}
        datasets = {d.id for d in self.datasets}
        pairs: set[tuple[str, str]] = set()
        for i, s in enumerate(self.switches):
            for fld, ref in (("from", s.from_), ("to", s.to)):
                if ref not in models:
                    raise InputError(f"unknown model '{ref}'", path=f"$.switches[{i}].{fld}")
            if s.from_ == s.to:
                raise InputError("a switch must change the model (staying is always allowed)",
                                 path=f"$.switches[{i}]")
            if (s.from_, s.to) in pairs:
                raise InputError(f"second switch entry for ('{s.from_}', '{s.to}')", path=f"$.switches[{i}]")
            pairs.add((s.from_, s.to))
        tpairs: set[tuple[str, str]] = set()
        for i, t in enumerate(self.transfer_costs):
            if t.dataset not in datasets:
                raise InputError(f"unknown dataset '{t.dataset}'", path=f"$.transfer_costs[{i}].dataset")
            if t.cluster not in clusters:
                raise InputError(f"unknown cluster '{t.cluster}'", path=f"$.transfer_costs[{i}].cluster")
            if (t.dataset, t.cluster) in tpairs:
                raise InputError(f"second transfer cost for ('{t.dataset}', '{t.cluster}')",
                                 path=f"$.transfer_costs[{i}]")
            tpairs.add((t.dataset, t.cluster))
        return self

    # ---- lookups (cached; the model is frozen) -------------------------------------------
    @cached_property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)

    @cached_property
    def cluster_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.clusters)

    @cached_property
    def dataset_ids(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.datasets)

    @cached_property
    def model_by_id(self) -> dict[str, Model]:
        return {m.id: m for m in self.models}

    @cached_property
    def cluster_by_id(self) -> dict[str, Cluster]:
        return {c.id: c for c in self.clusters}

    @cached_property
    def dataset_by_id(self) -> dict[str, Dataset]:
        return {d.id: d for d in self.datasets}

    @cached_property
    def switch_by_pair(self) -> dict[tuple[str, str], Switch]:
        return {(s.from_, s.to): s for s in self.switches}

    @cached_property
    def transfer_cost_by_pair(self) -> dict[tuple[str, str], float]:
        return {(t.dataset, t.cluster): t.cost for t in self.transfer_costs}

    def allowed(self, m_from: str, m_to: str) -> bool:
        """Whether epoch k may use ``m_to`` after ``m_from`` (staying is always allowed)."""
        return m_from == m_to or (m_from, m_to) in self.switch_by_pair

    def transfer_cost(self, dataset: str, cluster: str) -> float:
        """One-time cost of sending ``dataset`` to ``cluster`` (0 when not listed)."""
        return self.transfer_cost_by_pair.get((dataset, cluster), 0.0)

    def to_json_dict(self) -> dict[str, Any]:
        """The file form (aliases, no defaults left implicit)."""
        d = self.model_dump(by_alias=True, exclude_none=True)
        return d

