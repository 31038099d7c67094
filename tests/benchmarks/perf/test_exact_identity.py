"""The identity script's comparison: equal files pass, a changed objective or a missing run is named."""

from __future__ import annotations

import json

from deplbench.benchmarks.perf.exact_identity import compare


def _write(path, lines):
    path.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in lines))
    return str(path)


def test_compare_tells_identical_runs_from_changed_ones(tmp_path, capsys):
    run = {"tier": "default", "mode": "per_run", "seed": 0, "objective": "10.5", "extra": {"work": 7}}
    a = _write(tmp_path / "a.jsonl", [run, {**run, "seed": 1}])
    assert compare(a, _write(tmp_path / "b.jsonl", [run, {**run, "seed": 1}])) == 0
    assert capsys.readouterr().out.strip() == "identical"
    assert compare(a, _write(tmp_path / "c.jsonl", [run, {**run, "seed": 1, "extra": {"work": 8}}])) == 1
    assert "run 2 (default per_run seed 1): differs in extra" in capsys.readouterr().out
    assert compare(a, _write(tmp_path / "d.jsonl", [run])) == 1
    assert "2 runs" in capsys.readouterr().out
