"""Method labels ``name[k=v,...]`` for rows that do not carry one (stores of version 1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deplbench.params import variant_label


def label_of(solver: Any, params: Mapping[str, Any]) -> str:
    """The label of ``solver`` run with ``params``, from its declaration when it is registered.

    A method that is no longer registered shows every parameter it ran with (except limits,
    seeds and threads), so that two different variants never share a label.
    """
    from deplbench import registry

    name = str(solver)
    try:
        spec = registry.get_solver(name)
    except Exception:  # noqa: BLE001 - unknown or broken module: label without a declaration
        return variant_label(name, params, {})
    return spec.label(params)
