"""Reading and writing instance and plan files, with one-line errors and atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deplbench.errors import InputError, json_path
from deplbench.files import (  # noqa: F401 - re-exported: the file helpers of every reader/writer
    MAX_INPUT_BYTES,
    atomic_output,
    check_input_file,
    check_output_dir,
    check_output_path,
    write_text_atomic,
)
from deplbench.instances.plan import PLAN_SCHEMA, Plan
from deplbench.instances.schema import INSTANCE_SCHEMA, Instance

#: Deepest nesting of arrays and objects accepted in a JSON input (instances need 4).
MAX_DEPTH = 32


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key '{k}'")
        out[k] = v
    return out


def check_depth(obj: Any, source: str | None = None, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`InputError` naming the JSON path where nesting exceeds ``max_depth``."""
    stack: list[tuple[Any, tuple, int]] = [(obj, (), 0)]
    while stack:
        node, loc, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= max_depth:
                raise InputError(f"nesting deeper than {max_depth} levels", source, json_path(loc))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, (*loc, k), depth + 1) for k, v in items)


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file; any problem is an :class:`InputError` naming the file.

    Refused: anything but a regular file, a file over :data:`MAX_INPUT_BYTES`, ``NaN``/``Infinity``,
    duplicate keys and nesting deeper than :data:`MAX_DEPTH`.
    """
    src = str(path)
    check_input_file(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", src) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file ({exc.__class__.__name__})", src) from None
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", src) from None
    except RecursionError:
        raise InputError(f"malformed JSON: nesting deeper than {MAX_DEPTH} levels", src) from None
    except ValueError as exc:
        raise InputError(f"malformed JSON: {exc}", src) from None
    check_depth(data, src)
    return data


def _tuples(obj: Any) -> Any:
    """JSON arrays as tuples (strict pydantic accepts only tuples for tuple fields)."""
    if isinstance(obj, list):
        return tuple(_tuples(v) for v in obj)
    if isinstance(obj, dict):
        return {k: _tuples(v) for k, v in obj.items()}
    return obj


def instance_from_dict(data: Any, source: str | None = None) -> Instance:
    """Validate a parsed instance object (MODEL.md section 2)."""
    if isinstance(data, dict):
        data = {k: (v if k == "metadata" else _tuples(v)) for k, v in data.items()}
    if not isinstance(data, dict):
        raise InputError("an instance must be a JSON object", source, "$")
    if data.get("schema") != INSTANCE_SCHEMA:
        raise InputError(f"schema must be '{INSTANCE_SCHEMA}'", source, "$.schema")
    try:
        return Instance.model_validate(data)
    except InputError as exc:
        raise exc.with_source(source) if source else exc from None
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required field is missing"
        raise InputError(msg, source, json_path(e["loc"])) from None


def load_instance(path: str | os.PathLike) -> Instance:
    """Read and validate an instance file."""
    return instance_from_dict(read_json(path), str(path))


def load_plan(path: str | os.PathLike, instance: Instance | None = None) -> Plan:
    """Read a plan file; with ``instance``, also check that every id it names exists."""
    plan = Plan.from_json_dict(read_json(path), str(path))
    if instance is not None:
        plan.check_ids(instance, str(path))
    return plan


def load_any(path: str | os.PathLike) -> Instance | Plan:
    """Read an instance or a plan file, told apart by its ``schema``."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("an instance or plan must be a JSON object", str(path), "$")
    schema = data.get("schema")
    if schema == PLAN_SCHEMA:
        return Plan.from_json_dict(data, str(path))
    if schema == INSTANCE_SCHEMA:
        return instance_from_dict(data, str(path))
    raise InputError(f"schema must be '{INSTANCE_SCHEMA}' or '{PLAN_SCHEMA}'", str(path), "$.schema")


def write_json_atomic(obj: Any, path: str | os.PathLike) -> None:
    """Write JSON to a temporary file beside ``path`` and rename it: never a half-written file."""
    text = json.dumps(obj, indent=2, allow_nan=False) + "\n"  # serialise first: a bad value writes nothing
    with atomic_output(path) as fh:
        fh.write(text)


def save_instance(instance: Instance, path: str | os.PathLike) -> None:
    write_json_atomic(instance.to_json_dict(), path)


def save_plan(plan: Plan, path: str | os.PathLike) -> None:
    write_json_atomic(plan.to_json_dict(), path)
