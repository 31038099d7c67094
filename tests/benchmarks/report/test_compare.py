"""``deplbench compare``: two stores of one config side by side, a planted difference marked, nothing else."""

from __future__ import annotations

import json
import shutil

import duckdb
import pandas as pd
import pytest
from harness_configs import config, solver

from deplbench.benchmarks.api import run_config
from deplbench.benchmarks.report.compare import load_set, side_by_side, time_changed
from deplbench.cli import main


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory):
    """A grid run once (machine A), its store copied as machine B with a planted cost and status change."""
    tmp = tmp_path_factory.mktemp("cmp")
    path = config(tmp, [solver("harness-ok"), solver("harness-sleep", seconds=0.01)], seeds=(0, 1),
                  harness="grace = 5.0\neval_samples = 100")
    run_config(path, tmp / "a", workers=2, progress=False, report=False)
    (tmp / "b").mkdir()
    shutil.copy(tmp / "a" / "results.duckdb", tmp / "b" / "results.duckdb")
    con = duckdb.connect(str(tmp / "b" / "results.duckdb"))
    inst = sorted(r[0] for r in con.execute("SELECT DISTINCT instance FROM runs").fetchall())
    con.execute("UPDATE runs SET cost = cost * 1.05 WHERE solver = 'harness-ok' AND instance = ?", [inst[0]])
    con.execute("UPDATE runs SET status = 'timeout', harness_status = 'timeout', feasible = NULL, cost = NULL "
                "WHERE solver = 'harness-sleep' AND instance = ?", [inst[1]])
    rec = json.loads(con.execute("SELECT value FROM meta WHERE key = 'machine'").fetchone()[0])
    rec["host"] = "machine-b"
    con.execute("UPDATE meta SET value = ? WHERE key = 'machine'", [json.dumps(rec)])
    con.close()
    return tmp, inst


def test_planted_differences_are_marked(two_stores):
    tmp, inst = two_stores
    table = side_by_side([load_set(tmp / "a"), load_set(tmp / "b")])
    table["label"] = table["label"].str.split("[").str[0]  # harness-sleep[seconds=0.01]
    table = table.set_index(["instance", "label"])
    assert table.loc[(inst[0], "harness-ok"), "differences"] == "cost"
    assert table.loc[(inst[1], "harness-sleep"), "differences"].startswith("status")
    assert table.loc[(inst[1], "harness-sleep"), "status_1"] == "timeout"
    marked = table[table["differences"] != ""]
    assert len(marked) == 2  # the other rows agree
    assert table.loc[(inst[0], "harness-ok"), "cost_1"] == pytest.approx(table.loc[(inst[0], "harness-ok"), "cost_0"] * 1.05)


def test_cli_writes_page_and_markdown(two_stores, capsys):
    tmp, inst = two_stores
    assert main(["compare", str(tmp / "a"), str(tmp / "b"), "--out", str(tmp / "cmp")]) == 0
    assert "2 rows differ" in capsys.readouterr().out
    md = (tmp / "cmp" / "compare.md").read_text()
    assert "machine-b" in md  # the sets are told apart by host
    row = next(line for line in md.splitlines() if inst[0] in line and "harness-ok" in line)
    assert row.endswith("| **cost** |")
    page = (tmp / "cmp" / "index.html").read_text()
    assert "Differences against set 0" in page and "machine-b" in page


def test_one_folder_or_no_store_is_refused(two_stores, tmp_path, capsys):
    tmp, _ = two_stores
    assert main(["compare", str(tmp / "a"), "--out", str(tmp_path / "o")]) == 2
    assert main(["compare", str(tmp / "a"), str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no result store" in err[1]
    assert not (tmp_path / "o").exists()


def _r(t, lo, hi):
    return pd.Series({"time": t, "time_lo": lo, "time_hi": hi})


def test_time_change_beyond_the_spread_only():
    assert time_changed(_r(1.0, 0.9, 1.1), _r(1.2, 1.1, 1.3)) is None  # the ranges meet
    assert time_changed(_r(1.0, 0.9, 1.1), _r(3.0, 2.8, 3.2)) == pytest.approx(3.0)
    assert time_changed(_r(1.0, 0.5, 2.5), _r(3.0, 2.8, 3.2)) is None  # a wide spread absorbs it
    assert time_changed(_r(0.01, 0.01, 0.01), _r(0.04, 0.04, 0.04)) is None  # below the timer floor


def test_an_exported_bundle_opens_in_compare(two_stores, tmp_path, capsys):
    """``export-results --bundle`` packs a folder into one archive that another user compares as it is."""
    tmp, _ = two_stores
    assert main(["export-results", str(tmp / "b"), "--format", "parquet", "--bundle", "--out", str(tmp_path)]) == 0
    archive = tmp_path / "b.tar.gz"
    import tarfile

    names = set(tarfile.open(archive).getnames())
    assert {"results.duckdb", "runs.parquet", "instances.parquet", "machine.json"} <= names
    assert main(["compare", str(tmp / "a"), str(archive), "--out", str(tmp_path / "cmp")]) == 0
    assert "2 rows differ" in capsys.readouterr().out
    assert "b.tar.gz" in (tmp_path / "cmp" / "compare.md").read_text()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not an archive")
    assert main(["compare", str(tmp / "a"), str(bad), "--out", str(tmp_path / "cmp2")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
