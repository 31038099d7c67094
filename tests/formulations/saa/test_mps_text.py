"""The MPS writer: the free file reads back as the model's floats, the fixed file keeps every field at its columns."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
from fractions import Fraction

import highspy
import numpy as np
import pytest
from test_saa_milp import small

from deplbench.benchmarks.library.rational import read_mps
from deplbench.formulations.backends.mps import solution_vector
from deplbench.formulations.saa.io import to_highs_lp, write_model
from deplbench.formulations.saa.model import build, subset_data
from deplbench.formulations.saa.mps_text import _bounds, fixed_names, fixed_number, mps_text
from deplbench.instances.scenarios import sample_scenarios

GLPSOL = shutil.which("glpsol")


def _model(formulation: str = "aggregated", *, odd: bool = False, offset: float = 0.0, K: int = 4):
    inst = small(K=K, name="mps-text")
    model = build(subset_data(inst, inst.dataset_ids, sample_scenarios(inst, 12, 1)), formulation, names=True)
    if not odd:
        return model
    # the rows and bounds a reader may get wrong, each loose enough to keep the model feasible: a
    # ranged row, a free column, a general integer's explicit bounds, a fixed column (at 0, which
    # the optimum takes), an objective constant (``offset``: readers differ on its sign, see mps_text)
    lb, ub, rl, ru = model.lb.copy(), model.ub.copy(), model.row_lb.copy(), model.row_ub.copy()
    lb[model.w[0, 1]], ub[model.w[0, 1]] = -np.inf, np.inf
    lb[model.w[0, 0]] = ub[model.w[0, 0]] = 0.0
    k = int(np.flatnonzero(model.integer)[-1])
    ub[k] = 7.0
    i = int(np.flatnonzero(np.isinf(rl) & np.isfinite(ru))[0])
    rl[i] = ru[i] - 1e6 - 0.1
    return dataclasses.replace(model, lb=lb, ub=ub, row_lb=rl, row_ub=ru, offset=offset)


def _highs(path=None, model=None):
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    if path is not None:
        assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    else:
        h.passModel(to_highs_lp(model))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("odd", [False, True])
def test_the_free_file_is_the_model_to_the_bit(tmp_path, odd):
    model = _model(odd=odd, offset=3.0000000000000004 if odd else 0.0)
    path = tmp_path / "m.mps"
    facts = write_model(model, path, name="mps-text", fixed=False)
    assert facts.exact and path.read_text().startswith("NAME mps-text\n")
    m = read_mps(path)
    A = model.A.tocsc()
    for j, name in enumerate(model.names):
        col = m.columns[name]
        lo, hi = A.indptr[j], A.indptr[j + 1]
        want = {f"r{i}": float(v) for i, v in zip(A.indices[lo:hi], A.data[lo:hi], strict=True)}
        if model.c[j]:
            want["OBJ"] = float(model.c[j])
        assert {r: float(v) for r, v in col.items() if v} == want, name  # each decimal reads as the float
        assert (name in m.integer) == bool(model.integer[j])
        for got, val in ((m.lower.get(name, Fraction(0)), model.lb[j]), (m.upper.get(name), model.ub[j])):
            assert (got is None) if math.isinf(val) else float(got) == val, name
    for i in range(model.n_cons):
        r, lo, hi = f"r{i}", model.row_lb[i], model.row_ub[i]
        rhs = float(m.rhs.get(r, Fraction(0)))
        if r in m.ranges:  # an L row: [rhs - |R|, rhs], as a reader computes it in floats
            assert m.senses[r] == "L" and rhs == hi and rhs - abs(float(m.ranges[r])) == lo
        else:
            assert rhs == (lo if m.senses[r] == "G" or lo == hi else hi)
    assert float(m.rhs.get("OBJ", Fraction(0))) == -model.offset
    assert _highs(path) == pytest.approx(_highs(model=model), rel=1e-12)


def _fields_at_their_columns(line: str) -> bool:
    """MPS fixed format: fields 1-6 at columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61, the rest blank."""
    pad = line.ljust(61)
    return all(pad[c - 1] == " " for c in (1, 4, 13, 14, 23, 24, 37, 38, 39, 48, 49)) and len(line) <= 61


@pytest.mark.parametrize("formulation", ["aggregated", "time_indexed"])
@pytest.mark.parametrize("odd", [False, True])
def test_the_fixed_file_keeps_the_columns_and_solves_the_same(tmp_path, formulation, odd):
    model = _model(formulation, odd=odd)
    path = tmp_path / "m.mps"
    facts = write_model(model, path, name="a-long-instance-name", fixed=True)
    lines = path.read_text().splitlines()
    assert lines[0] == "NAME          a-long-instance-name"
    data = [ln for ln in lines if ln.startswith(" ")]
    assert data and all(_fields_at_their_columns(ln) for ln in data)
    assert all(len(n) <= 8 for n in fixed_names(model)) and len(set(fixed_names(model))) == model.n_vars
    assert facts.rounded > 0 and not facts.exact and 0 < facts.max_rel_change < 1e-6
    assert _highs(path) == pytest.approx(_highs(model=model), rel=1e-9)
    if GLPSOL:
        out = tmp_path / "glpk.txt"
        r = subprocess.run([GLPSOL, "--mps", str(path), "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "INTEGER OPTIMAL SOLUTION FOUND" in r.stdout, r.stdout[-500:]
        obj = next(ln for ln in out.read_text().splitlines() if ln.startswith("Objective:"))
        assert float(obj.split("=")[1].split()[0]) == pytest.approx(_highs(model=model), rel=1e-6)


def test_bounds_are_explicit_where_readers_differ():
    assert _bounds(0.0, 1.0, True) == [("BV", None)] and _bounds(0.0, 1.0, False) == [("UP", 1.0)]
    assert _bounds(0.0, 5.0, True) == [("LO", 0.0), ("UP", 5.0)]  # no reader's default for integers
    assert _bounds(0.0, np.inf, True) == [("LO", 0.0), ("PL", None)]
    assert _bounds(0.0, -2.0, False) == [("LO", 0.0), ("UP", -2.0)]  # UP < 0 alone: free below in MPS
    assert _bounds(-np.inf, 4.0, False) == [("MI", None), ("UP", 4.0)]
    assert _bounds(-np.inf, np.inf, True) == [("FR", None)] and _bounds(2.5, 2.5, False) == [("FX", 2.5)]


def test_twelve_character_numbers():
    assert fixed_number(0.1) == ("0.1", True) and fixed_number(-3.0) == ("-3", True)
    assert fixed_number(1e-300) == ("1e-300", True)
    s, exact = fixed_number(-1.7869336507276123)
    assert not exact and len(s) <= 12 and abs(float(s) + 1.7869336507276123) < 1e-9
    s, exact = fixed_number(1.2345678901234567e-13)  # the %e layout with a short exponent wins here
    assert s == "1.234568e-13" and not exact
    for v in np.random.default_rng(0).standard_normal(500) * 10.0 ** np.random.default_rng(1).integers(-8, 9, 500):
        s, exact = fixed_number(float(v))
        assert len(s) <= 12 and (float(s) == v) == exact and abs(float(s) - v) <= 1e-6 * abs(v)


def test_a_solution_of_the_fixed_file_maps_back_by_its_names():
    model = _model(K=12)
    assert any(len(n) > 8 for n in model.names)  # stay_10_0: twelve epochs have names past 8 characters
    x = np.arange(model.n_vars, dtype=float)
    short = dict(zip(fixed_names(model), x.tolist(), strict=True))
    assert np.array_equal(solution_vector(model, short), x)
    assert mps_text(model, fixed=True).renamed
