"""The deterministic work that grades the library: the model, the grade, the fit, the SAA size rule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deplbench.benchmarks.library.build import EASY_WORK, grade, saa_files, true_reference
from deplbench.formulations.exact.work import FEATURES, WORK_MODEL, work_units
from deplbench.registry import generate, solve


def test_work_is_the_model_of_the_counters():
    inst = generate("random", {"models": 3, "epochs": 8}, 1)
    r = solve("exact", inst, {"time_limit": 120.0})
    assert r.extra["work"] == pytest.approx(work_units("exact", r.extra)) and r.extra["work"] > 0
    assert set(WORK_MODEL["exact"]) - {"intercept"} <= set(FEATURES["exact"])
    b = solve("bruteforce", inst, {"time_limit": 120.0})
    assert b.extra["work"] == pytest.approx(work_units("bruteforce", b.extra)) and b.extra["work"] > 0


def test_grade_by_work_not_time():
    assert grade(EASY_WORK, True) == "easy" and grade(EASY_WORK + 1, True) == "medium"
    assert grade(None, True) == "medium" and grade(0, False) == "hard"


def test_least_work_of_a_proof_grades(monkeypatch):
    """With the easy line below the first proof's work, the next method runs and the least work counts."""
    import deplbench.benchmarks.library.build as b

    inst = generate("random", {"models": 3, "epochs": 8}, 1)
    first = true_reference(inst, 120.0)
    assert first["method"] == "bruteforce" and list(first["runs"]) == ["bruteforce"]  # easy at once
    monkeypatch.setattr(b, "EASY_WORK", -1)
    both = true_reference(inst, 120.0)
    assert list(both["runs"]) == ["bruteforce", "exact"] and both["method"] == "bruteforce"
    assert both["proof_work"] == min(r["work"] for r in both["runs"].values())
    assert both["ref"] == first["ref"]
    assert all(set(r) >= {"status", "wall_s", "cpu_s", "work", "counters"} for r in both["runs"].values())


def test_fit_recovers_known_weights(tmp_path, capsys):
    """perf/work_model's NNLS fit on rows made from a known linear model gives that model back."""
    from deplbench.benchmarks.perf.work_model import main

    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        c = {k: float(rng.integers(0, 5000)) for k in FEATURES["bruteforce"]}
        cpu = 0.05 + 2e-4 * c["sequences"] + 1e-3 * c["certified"]
        rows.append({"instance": f"i{i}", "method": "bruteforce", "cpu_s": cpu, "counters": c})
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["fit", str(f)]) == 0
    out = capsys.readouterr().out
    model = json.loads(out[out.index("WORK_MODEL = ") + 13: out.index("\ncommitted model")])["bruteforce"]
    assert model["sequences"] == pytest.approx(0.2, rel=1e-3) and model["certified"] == pytest.approx(1.0, rel=1e-3)
    assert model["intercept"] == pytest.approx(50.0, rel=1e-3)


def test_no_saa_file_above_the_size_rule(tmp_path):
    from deplbench.benchmarks.library.spec import SAA_MAX_MK

    inst = generate("random", {"models": 5, "epochs": 60, "clusters": 2, "levels": 3}, 0)
    assert 5 * 60 > SAA_MAX_MK
    recs, times = saa_files(inst, tmp_path, 300.0, 10)
    assert recs == [] and "SAA_MAX_MK" in times["note"] and not any(tmp_path.iterdir())
