"""JSON output with non-finite numbers as ``null``, so that every JSON a command prints stays valid.

``json.dumps`` writes ``NaN`` and ``Infinity``, which no JSON parser accepts (and ``allow_nan=False``
raises instead); the commands' figures can be non-finite (the quantile of an empty plan, an SAA
bound without a proof).
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (numpy's included), at any depth, replaced by ``None``."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        obj = obj.item()  # a numpy scalar
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, **kwargs) -> str:
    """``json.dumps`` of :func:`finite` ``(obj)``, strict (``allow_nan=False``)."""
    return json.dumps(finite(obj), allow_nan=False, **kwargs)
