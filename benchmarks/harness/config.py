"""Grids as data: a TOML config expands to a list of :class:`RunSpec` (see ``docs/harness.md``).

A config names experiments; each crosses instance grids (a family, parameter grids and
seeds) with solver grids (a method and parameter grids) and repetitions. A list value
is a grid axis, a scalar is fixed. Every run has a deterministic key (a hash of what
defines it), which is how the store knows what is done.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from deplbench.errors import InputError
from deplbench.params import infer, parse, variant_label
from deplbench.registry import COMMON_DEFAULTS, COMMON_PARAMS, FAMILY_MODULES, SOLVER_MODULES

#: Harness settings, their defaults and types (table ``[harness]``, overridable per experiment).
HARNESS_DEFAULTS: dict[str, Any] = {
    "grace": 10.0,  # s after the solver's time_limit before the run is killed
    "memory_limit_mb": 0.0,  # 0: no limit
    "eval_samples": 20_000,  # Monte-Carlo samples of the re-evaluation
    "oos_samples": 100_000,  # out-of-sample check of SAA plans
    "repetitions": 1,
    "timings": 1,  # repeated timings of each run, same seed, each its own row (column ``timing``)
}
TOP_KEYS = {"description", "harness", "experiments"}
EXPERIMENT_KEYS = {"name", "description", "instances", "solvers", *HARNESS_DEFAULTS}
INSTANCE_KEYS = {"family", "module", "params", "seeds"}
#: the largest instance seed (the store's ``instance_seed`` is a 32-bit INTEGER)
MAX_SEED = 2**31 - 1
SOLVER_KEYS = {"name", "module", "params"}
SCALAR = (str, int, float, bool)


@dataclass(frozen=True)
class RunSpec:
    """One run: an instance (family, parameters, seed), a method with parameters, limits."""

    key: str
    config: str
    experiment: str
    family: str
    family_module: str
    instance_params: dict[str, Any]
    instance_seed: int
    solver: str
    solver_module: str
    params: dict[str, Any]
    repetition: int
    grace: float
    memory_limit_mb: float
    eval_samples: int
    oos_samples: int
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``solver[k=v,...]`` from the declared variant parameters (the report's method name)
    label: str = ""
    #: which repeated timing of the same run (harness ``timings``; 0: the first)
    timing: int = 0

    @property
    def instance_id(self) -> str:
        """Identifies the instance (family, parameters, seed) within a harness run."""
        return _canon({"family": self.family, "params": self.instance_params, "seed": self.instance_seed})

    @property
    def wall_limit_s(self) -> float:
        """Hard wall-clock limit of the run process: the solver's limit plus the grace period."""
        return float(self.params.get("time_limit", COMMON_DEFAULTS["time_limit"])) + self.grace


@dataclass(frozen=True)
class Config:
    name: str
    source: str
    description: str
    runs: list[RunSpec]


def shipped_configs() -> list[str]:
    """Names of the configs shipped with the package."""
    folder = resources.files("deplbench.benchmarks") / "configs"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def resolve(config: str) -> Path:
    """A config path, or the name of a shipped config (``paper``, ``smoke``, ...)."""
    p = Path(config)
    if p.is_file() or (p.exists() and not p.is_dir()) or p.is_symlink():
        return p  # a FIFO, a device, a link loop: refused by load_config with one line
    if p.suffix == ".toml":
        raise InputError("no such config file", config)
    # a folder of the same name (e.g. an earlier --out) must not hide a shipped config
    folder = resources.files("deplbench.benchmarks") / "configs"
    shipped = folder / f"{config}.toml"
    if not shipped.is_file():
        raise InputError(f"no such config file or shipped config (shipped: {', '.join(shipped_configs())})",
                         config)
    return Path(str(shipped))


def load_config(config: str | Path) -> Config:
    """Read, validate and expand a config; any problem is one :class:`InputError`."""
    from deplbench.files import check_input_file

    path = resolve(str(config))
    src = str(config)
    check_input_file(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"malformed TOML: {exc}", src) from None
    except RecursionError:
        raise InputError("malformed TOML: nested too deeply", src) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read config ({type(exc).__name__})", src) from None
    return expand(data, path.stem, src)


def expand(data: Mapping[str, Any], name: str, src: str = "<config>") -> Config:
    """Validate a parsed config and expand it to runs (in a stable order)."""
    _keys(data, TOP_KEYS, src, "")
    harness = _harness(data.get("harness", {}), dict(HARNESS_DEFAULTS), src, "harness")
    exps = data.get("experiments")
    if not isinstance(exps, list) or not exps:
        raise InputError("needs at least one [[experiments]] table", src, "experiments")
    runs: list[RunSpec] = []
    names: set[str] = set()
    for i, exp in enumerate(exps):
        at = f"experiments[{i}]"
        if not isinstance(exp, dict):
            raise InputError("must be a table", src, at)
        _keys(exp, EXPERIMENT_KEYS, src, at)
        ename = exp.get("name")
        if not isinstance(ename, str) or not ename:
            raise InputError("needs a non-empty string 'name'", src, f"{at}.name")
        if ename in names:
            raise InputError(f"experiment name '{ename}' is used twice", src, f"{at}.name")
        names.add(ename)
        h = _harness({k: v for k, v in exp.items() if k in HARNESS_DEFAULTS}, dict(harness), src, at)
        insts = _instance_grid(exp.get("instances"), src, f"{at}.instances")
        solvers = _solver_grid(exp.get("solvers"), src, f"{at}.solvers")
        for (fam, fmod, ip, igiven, seed), (sol, smod, sp, sgiven, label), rep, timing in itertools.product(
                insts, solvers, range(h["repetitions"]), range(h["timings"])):
            params = dict(sp)
            params["seed"] = int(params.get("seed", COMMON_DEFAULTS["seed"])) + rep
            # the key hashes what the config gives, so that it survives a change of defaults
            key = run_key(ename, fam, igiven, seed, sol, {**sgiven, "seed": params["seed"]}, rep, timing)
            runs.append(RunSpec(key, name, ename, fam, fmod, ip, seed, sol, smod, params, rep,
                                float(h["grace"]), float(h["memory_limit_mb"]), int(h["eval_samples"]),
                                int(h["oos_samples"]), label=label, timing=timing))
    seen: set[str] = set()
    unique = [r for r in runs if not (r.key in seen or seen.add(r.key))]
    return Config(name, src, str(data.get("description", "")), unique)


def run_key(experiment: str, family: str, instance_params: Mapping[str, Any], seed: int, solver: str,
            params: Mapping[str, Any], repetition: int, timing: int = 0) -> str:
    """Deterministic key of a run: a hash of everything that defines it (not of the limits).

    A repeated timing (``timing`` > 0) adds its index; the first keeps the key it always had.
    """
    what = {"experiment": experiment, "family": family, "instance_params": instance_params,
            "instance_seed": seed, "solver": solver, "params": params, "repetition": repetition}
    text = _canon({**what, "timing": timing} if timing else what)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---- validation helpers ------------------------------------------------------------------------

def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _keys(table: Mapping[str, Any], allowed: set[str], src: str, at: str) -> None:
    for k in table:
        if k not in allowed:
            where = f"{at}.{k}" if at else k
            raise InputError(f"unknown key (allowed: {', '.join(sorted(allowed))})", src, where)


#: Valid range of each harness setting (docs/reliability.md): a value outside is one line, before any run.
HARNESS_RANGES: dict[str, tuple[float, float]] = {
    "grace": (0.0, 3600.0), "memory_limit_mb": (0.0, 1e7), "eval_samples": (0, 10_000_000),
    "oos_samples": (0, 10_000_000), "repetitions": (1, 1000), "timings": (1, 100),
}


def _harness(table: Any, out: dict[str, Any], src: str, at: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise InputError("must be a table", src, at)
    _keys(table, set(HARNESS_DEFAULTS), src, at)
    for k, v in table.items():
        default = HARNESS_DEFAULTS[k]
        lo, hi = HARNESS_RANGES[k]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi  # False for NaN
        if isinstance(default, int) and not isinstance(v, int):
            ok = False
        if not ok:
            kind = "an integer" if isinstance(default, int) else "a number"
            raise InputError(f"must be {kind} in [{lo:g}, {hi:g}], not {v!r}", src, f"{at}.{k}")
        out[k] = v
    return out


def _grid(params: Any, src: str, at: str) -> list[dict[str, Any]]:
    """``{a: [1, 2], b: 3}`` -> ``[{a: 1, b: 3}, {a: 2, b: 3}]``."""
    if params is None:
        return [{}]
    if not isinstance(params, dict):
        raise InputError("must be a table of parameter = value or [values]", src, at)
    axes = []
    for k, v in params.items():
        vals = v if isinstance(v, list) else [v]
        if not vals:
            raise InputError("an empty list gives no runs", src, f"{at}.{k}")
        for x in vals:
            if not isinstance(x, SCALAR):
                raise InputError(f"values must be strings, numbers or booleans, not {type(x).__name__}",
                                 src, f"{at}.{k}")
        axes.append([(k, x) for x in vals])
    return [dict(combo) for combo in itertools.product(*axes)]


def _declared(kind: str, name: str, module: str, src: str, at: str):
    """The registered spec of a solver or family, or None when its module cannot be imported.

    A missing or broken module is not a config error: the run records it as an ``error`` row,
    so one bad entry never stops the other runs.
    """
    from deplbench import registry

    table = registry._SOLVERS if kind == "solver" else registry._FAMILIES
    if name not in table:
        if not registry.importable(module):
            return None
        try:
            registry.import_module(module)
        except Exception:  # noqa: BLE001 - recorded per run, see above
            return None
    if name not in table:
        raise InputError(f"module '{module}' does not register {kind} '{name}'", src, at)
    return table[name]


def _check_params(point: dict[str, Any], spec, what: str, src: str, at: str) -> tuple[dict, dict]:
    """``(full parameters, given parameters)``, both checked against the declaration.

    The run key hashes the given ones (so that it survives a change of defaults). Without a
    spec (module not importable) only the common parameters are checked.
    """
    if spec is None:
        declared = {p.name: p for p in COMMON_PARAMS} if what.startswith("solver") else {}
        declared.update({k: infer(k, v) for k, v in point.items() if k not in declared})
        full = parse(declared, point, what, src, at)
        return full, {k: full[k] for k in point}
    full = spec.parse_params(point, source=src, at=at)
    return full, {k: full[k] for k in point}


def _entries(value: Any, src: str, at: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value or not all(isinstance(e, dict) for e in value):
        raise InputError("needs a non-empty list of tables", src, at)
    return value


#: registering modules of the former flat layout -> where they are (a config naming one gets one line)
MOVED: dict[str, str] = {
    "deplbench.formulations.exact": "deplbench.formulations.exact.methods",
    "deplbench.formulations.bruteforce": "deplbench.formulations.exact.methods",
    "deplbench.formulations.highs_pyomo": "deplbench.formulations.backends.milp_highs",
    "deplbench.formulations.highs_direct": "deplbench.formulations.backends.milp_highs_direct",
    "deplbench.formulations.cpsat": "deplbench.formulations.backends.milp_cpsat",
    "deplbench.formulations.scip": "deplbench.formulations.backends.milp_scip",
    "deplbench.formulations.scip_bc": "deplbench.formulations.backends.milp_scip_bc",
    "deplbench.formulations.mps_solver": "deplbench.formulations.backends.mps",
    "deplbench.instances.paper": "deplbench.instances.families.paper",
    "deplbench.instances.random_family": "deplbench.instances.families.random",
    "deplbench.instances.calibrated": "deplbench.instances.families.calibrated",
    "deplbench.instances.study_families": "deplbench.instances.families.studies",
    "deplbench.benchmarks.library_family": "deplbench.benchmarks.library.family",
    "deplbench.benchmarks.harness_testing": "deplbench.benchmarks.harness.testing",
}


def _module(entry: dict, name: str, known: Mapping[str, str], kind: str, src: str, at: str) -> str:
    module = entry.get("module")
    if module is not None:
        if not isinstance(module, str) or not module:
            raise InputError("must be a module name", src, f"{at}.module")
        if module in MOVED:
            raise InputError(f"module '{module}' moved to '{MOVED[module]}' (docs/ARCHITECTURE.md)", src,
                             f"{at}.module")
        return module
    if name not in known:
        raise InputError(f"unknown {kind} '{name}' (known: {', '.join(sorted(known))})", src,
                         f"{at}.{'family' if kind == 'family' else 'name'}")
    return known[name]


def _named_entries(value: Any, keys: set[str], field: str, src: str, at: str):
    """Check a list of family (``field='family'``) or solver (``field='name'``) tables.

    Yields ``(json path, table, name, module, registered spec or None)`` for each entry.
    """
    kind, known = ("family", FAMILY_MODULES) if field == "family" else ("solver", SOLVER_MODULES)
    for j, e in enumerate(_entries(value, src, at)):
        here = f"{at}[{j}]"
        _keys(e, keys, src, here)
        name = e.get(field)
        if not isinstance(name, str):
            raise InputError(f"needs a string '{field}'", src, f"{here}.{field}")
        module = _module(e, name, known, kind, src, here)
        yield here, e, name, module, _declared(kind, name, module, src, here)


def _instance_grid(value: Any, src: str, at: str) -> list[tuple[str, str, dict, dict, int]]:
    out = []
    for here, e, fam, module, spec in _named_entries(value, INSTANCE_KEYS, "family", src, at):
        seeds = e.get("seeds", [0])
        seeds = seeds if isinstance(seeds, list) else [seeds]
        if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds):
            raise InputError(f"seeds must be an integer in [0, {MAX_SEED}] or a non-empty list of them", src,
                             f"{here}.seeds")
        for point in _grid(e.get("params"), src, f"{here}.params"):
            params, given = _check_params(point, spec, f"family '{fam}'", src, f"{here}.params")
            out.extend((fam, module, params, given, s) for s in seeds)
    return out


def _solver_grid(value: Any, src: str, at: str) -> list[tuple[str, str, dict, dict, str]]:
    out = []
    for here, e, name, module, spec in _named_entries(value, SOLVER_KEYS, "name", src, at):
        for point in _grid(e.get("params"), src, f"{here}.params"):
            full, given = _check_params(point, spec, f"solver '{name}'", src, f"{here}.params")
            label = spec.label(full) if spec is not None else variant_label(name, given, {})
            out.append((name, module, full, given, label))
    return out
