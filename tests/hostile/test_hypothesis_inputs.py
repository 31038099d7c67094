"""Property-based: any malformed instance gives exactly one error line and exit status 2."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deplbench.cli import main

from builders import tiny_dict

BASE = tiny_dict()

junk = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                 st.text(max_size=8), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


PATHS = [p for p in _paths(BASE) if p and p[0] != "metadata"]


@st.composite
def corrupted(draw):
    d = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        obj = d
        try:
            for p in path[:-1]:
                obj = obj[p]
            action = draw(st.sampled_from(["replace", "delete", "add"]))
            if action == "delete" and isinstance(obj, dict):
                obj.pop(path[-1], None)
            elif action == "add" and isinstance(obj, dict):
                obj["zz_" + draw(st.text(min_size=1, max_size=4))] = draw(junk)
            else:
                obj[path[-1]] = draw(junk)
        except (KeyError, IndexError, TypeError):
            pass
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corrupted())
def test_malformed_instance_one_line_exit_2(tmp_path_factory, capsys, data):
    f = tmp_path_factory.mktemp("h") / "inst.json"
    f.write_text(json.dumps(data))
    rc = main(["validate", str(f)])
    out, err = capsys.readouterr()
    if rc == 0:  # the corruption happened to keep the instance valid
        assert out.strip() == "ok" and err == ""
        return
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"deplbench: error: {f}: ")
    assert "Traceback" not in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=64))
def test_garbage_bytes_one_line_exit_2(tmp_path_factory, capsys, blob):
    f = tmp_path_factory.mktemp("g") / "x.json"
    f.write_bytes(blob)
    rc = main(["validate", str(f)])
    _, err = capsys.readouterr()
    assert rc == 2 and len(err.strip().splitlines()) == 1
