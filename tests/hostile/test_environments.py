"""Odd environments and numbers: an ASCII-only encoding, closed standard streams, huge seeds, non-finite values."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from deplbench.cli import main
from deplbench.jsonvalues import dumps, finite
from hostile.kit import assert_one_line, fixtures

CLI = [sys.executable, "-m", "deplbench.cli"]


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return fixtures(d)


@pytest.mark.parametrize("name", ["é.json", "日本.json", "ünïcødé-ß.json"])
def test_an_ascii_encoding_and_a_non_ascii_path(tmp_path, name):
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
    out = tmp_path / name
    done = subprocess.run([*CLI, "generate", "random", "--out", str(out)], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert out.exists() and b"wrote" in done.stdout
    missing = tmp_path / ("missing-" + name)
    done = subprocess.run([*CLI, "validate", str(missing)], env=env, capture_output=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"no such file" in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("closed", ["2>&-", ">&-", "<&-", ">&- 2>&-"])
def test_closed_standard_streams_during_run_still_store_the_runs(tmp_path, closed):
    from harness_configs import config, solver

    from deplbench.benchmarks.harness.store import Store

    cfg = config(tmp_path, [solver("harness-ok")], seeds=(0, 1), harness="grace = 5.0\neval_samples = 100")
    out = tmp_path / "out"
    cmd = " ".join([sys.executable, "-m", "deplbench.cli", "run", str(cfg), "--out", str(out), "--no-report",
                    "--workers", "1"])
    done = subprocess.run(["bash", "-c", f"{cmd} {closed}"], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Store(out, read_only=True) as st:
        rows = st.runs()
    assert len(rows) == 2 and (rows.harness_status == "ok").all()


@pytest.mark.parametrize("seeds", ["[2147483648]", "3000000000", "[0, 18446744073709551616]", "[-1]", "[1.5]",
                                   "[true]", "[]"])
def test_an_out_of_range_seed_is_one_line_naming_the_field(tmp_path, capsys, seeds, files):
    cfg = tmp_path / "seed.toml"
    cfg.write_text(files["cfg"].read_text().replace('family = "random"', f'family = "random"\nseeds = {seeds}'))
    for extra in (["--dry-run"], ["--quiet", "--no-report"]):
        assert_one_line(["run", cfg, "--out", tmp_path / "out", *extra], capsys, "seeds", watch=(tmp_path,))


def test_the_largest_seed_is_accepted(tmp_path, capsys, files):
    cfg = tmp_path / "seed.toml"
    cfg.write_text(files["cfg"].read_text().replace('family = "random"', 'family = "random"\nseeds = [2147483647]'))
    assert main(["run", str(cfg), "--out", str(tmp_path / "out"), "--dry-run"]) == 0


def _plan(files, tmp_path, change) -> str:
    p = json.loads(files["plan"].read_text())
    change(p)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(p))  # json.dumps writes NaN / Infinity as a careless tool would
    return str(path)


def _empty(p):
    p.update(segments=[], datasets=[], status="timeout")


def test_evaluate_json_of_an_empty_plan_is_valid_json(tmp_path, capsys, files):
    rc = main(["evaluate", str(files["inst"]), _plan(files, tmp_path, _empty), "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert d["feasible"] is False and d["loss_mean"] is None


@pytest.mark.parametrize("where", ["objective", "runtime_s", "level", "epochs"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_evaluate_of_a_plan_with_a_non_finite_number_is_one_line(tmp_path, capsys, files, where, value):
    def change(p):
        (p["segments"][0] if where in ("level", "epochs") else p)[where] = value

    plan = _plan(files, tmp_path, change)
    for extra in ([], ["--json"]):
        assert_one_line(["evaluate", files["inst"], plan, *extra], capsys, plan, watch=(tmp_path,))


def test_finite_replaces_every_non_finite_number():
    obj = {"a": math.nan, "b": [1.0, -math.inf, {"c": np.float64("inf")}], "d": (np.float32(2.0), "x"), "e": 3}
    assert finite(obj) == {"a": None, "b": [1.0, None, {"c": None}], "d": [2.0, "x"], "e": 3}
    assert json.loads(dumps(obj)) == finite(obj)


def _curves(path, loss):
    rows = ["run,model,epoch,loss"] + [f"r{r},m,{k},{loss(r, k)}" for r in range(3) for k in range(6)]
    path.write_text("\n".join(rows) + "\n")
    return path


CURVES = {"flat": lambda r, k: 5.0, "flat-per-run": lambda r, k: 5.0 + r, "rising": lambda r, k: 1 + 2.0 * k,
          "zero": lambda r, k: 0.0, "nan": lambda r, k: "nan" if k == 3 else 20 - k,
          "inf": lambda r, k: "inf" if k == 2 else 20 - k, "-inf": lambda r, k: "-inf" if k == 4 else 20 - k,
          "overflow": lambda r, k: f"{1e308 * (k + 1)!r}"}


@pytest.mark.parametrize("kind", sorted(CURVES))
def test_calibrate_on_flat_or_non_finite_curves_is_one_line(tmp_path, capsys, kind):
    curves = _curves(tmp_path / f"{kind}.csv", CURVES[kind])
    assert_one_line(["calibrate", curves, "--out", tmp_path / "p.json"], capsys, str(curves), watch=(tmp_path,))


@pytest.mark.parametrize("bad", ["missing", "dir"])
def test_library_build_refuses_a_missing_calibration_file(tmp_path, capsys, bad):
    cal = tmp_path / "cal.json"
    if bad == "dir":
        cal.mkdir()
    assert_one_line(["library", "build", "--quick", "--out", tmp_path / "lib", "--calibration", cal], capsys,
                    str(cal), watch=(tmp_path,))
