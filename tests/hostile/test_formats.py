"""Property-based: any bytes or JSON value given as an instance, plan, config or curves file is
either accepted or refused with one line naming the file; never a traceback, never a write."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deplbench.cli import main
from hostile.kit import assert_one_line

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False),
              st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)
plan_like = st.fixed_dictionaries({"schema": st.just("depl-plan/1")}, optional={
    "status": st.sampled_from(["optimal", "feasible", "timeout", "x"]), "datasets": json_values,
    "segments": st.lists(st.dictionaries(st.sampled_from(["model", "cluster", "level", "epochs", "x"]),
                                         json_values, max_size=5), max_size=3),
    "problem": json_values, "scenarios": json_values, "certified": json_values})

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _check(capsys, argv, path: Path):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if rc == 0:
        assert err == "" or err.startswith("warning:")
        return
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("deplbench: error:"), err
    assert str(path) in err


@_SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_as_instance_or_plan(capsys, data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.json"
        p.write_bytes(data)
        _check(capsys, ["validate", p], p)


@_SETTINGS
@given(value=json_values)
def test_any_json_value_as_instance(capsys, value):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "i.json"
        p.write_text(json.dumps(value))
        assert_one_line(["solve", p, "--solver", "depl", "--out", Path(d) / "o.json"], capsys, str(p),
                        watch=(Path(d),))


@_SETTINGS
@given(value=plan_like)
def test_any_plan_like_object(capsys, value):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.json"
        p.write_text(json.dumps(value))
        _check(capsys, ["validate", p], p)


@_SETTINGS
@given(text=st.text(max_size=200))
def test_any_text_as_config(capsys, text):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.toml"
        p.write_text(text)
        rc = main(["run", str(p), "--out", str(Path(d) / "out"), "--dry-run"])
        out, err = capsys.readouterr()
        assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


@_SETTINGS
@given(text=st.text(max_size=200))
def test_any_text_as_curves(capsys, text):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.csv"
        p.write_text(text)
        assert_one_line(["calibrate", p, "--bootstrap", "0", "--out", Path(d) / "o.json"], capsys, str(p),
                        watch=(Path(d),))
