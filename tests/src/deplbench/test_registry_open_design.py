"""Open design: a new solver, parameter, output or report section is one registration.

Nothing outside this file changes for the toy solver or the toy section: the solver is a
module file the test writes (a config may name a ``.py`` file as a solver's module), the
section is registered here and removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import duckdb
import pytest

import deplbench as db
from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.parquet import read_parquet
from deplbench.benchmarks.harness.store import LEGACY_PARAM_COLUMNS, RUN_COLUMNS, SCHEMA, Store
from deplbench.benchmarks.report.sections import Section, register_section, unregister_section
from deplbench.errors import InputError
from deplbench.params import Param, variant_label
from deplbench.registry import get_solver
from deplbench.results import Status, map_status

TOY = textwrap.dedent('''
    from deplbench.benchmarks.harness.testing import reference_plan
    from deplbench.params import Param
    from deplbench.registry import register_solver
    from deplbench.results import SolveResult, Status

    @register_solver("toy", kind="heuristic",
                     params=(Param("new", int, 0, "a knob no other method has", low=0, high=5),),
                     outputs={"widgets": "how many widgets the toy made"})
    def toy(instance, *, new, time_limit, seed, threads):
        return SolveResult(Status.FEASIBLE, reference_plan(instance), extra={"widgets": 10.0 * new})
''')


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """A grid of the toy solver over two values of its new parameter, run by the harness."""
    tmp = tmp_path_factory.mktemp("toy")
    (tmp / "toy_solver.py").write_text(TOY)
    cfg = tmp / "toy.toml"
    cfg.write_text(textwrap.dedent(f'''
        [[experiments]]
        name = "toy"
        [[experiments.instances]]
        family = "random"
        params = {{ models = 2, epochs = 4 }}
        seeds = [0, 1]
        [[experiments.solvers]]
        name = "toy"
        module = "{tmp / 'toy_solver.py'}"
        params = {{ new = [1, 2] }}
    '''))
    res = db.run_config(cfg, tmp / "out", workers=1, progress=False)
    return tmp, res


@pytest.mark.slow
def test_toy_solver_gets_its_own_rows_and_columns(toy_run):
    tmp, res = toy_run
    assert res.counts == {"ok": 4}
    md = (res.report.parent / "report.md").read_text()
    table = md[md.index("*Experiment toy/toy*"):]
    assert "| toy[new=1] |" in table and "| toy[new=2] |" in table
    with Store(res.out, read_only=True) as st:
        paths = st.export("parquet", tmp / "export")
    runs = read_parquet(paths[0])
    assert {"p_new", "x_widgets", "p_time_limit"} <= set(runs.columns)
    assert sorted(runs["p_new"]) == [1, 1, 2, 2]
    assert (runs["x_widgets"] == 10.0 * runs["p_new"]).all()
    df = db.read_results(res.out)
    assert set(df["method"]) == {"toy[new=1]", "toy[new=2]"} and df["solved"].all()


def test_toy_parameter_range_is_checked_before_any_run(toy_run, tmp_path):
    tmp, _ = toy_run
    cfg = tmp_path / "bad.toml"
    cfg.write_text((tmp / "toy.toml").read_text().replace("new = [1, 2]", "new = [1, 9]"))
    with pytest.raises(InputError) as exc:
        load_config(cfg)
    assert "experiments[0].solvers[0].params.new" in exc.value.one_line() and "[0, 5]" in str(exc.value)


def test_registered_section_appears_and_missing_columns_are_noted(toy_run):
    from deplbench.benchmarks.report.write import build_report

    _, res = toy_run

    @register_section("toy-section", order=99, title="Toy section", needs=("cost",))
    def toy_section(ctx):
        return Section("Toy section").table("Widgets per method", ctx.runs.groupby("method")["x_widgets"].sum()
                                            .reset_index())

    @register_section("toy-needs", order=98, title="Toy needs", needs=("no_such_column",))
    def toy_needs(ctx):  # pragma: no cover - skipped for its missing column
        raise AssertionError("must not run")

    try:
        html = build_report(res.out).read_text()
    finally:
        unregister_section("toy-section")
        unregister_section("toy-needs")
    assert "Toy section" in html and "Widgets per method" in html
    assert "Skipped: the store has no values in column(s) no_such_column" in html


def test_labels_never_merge_variants():
    spec = get_solver("milp-highs-direct")
    a = spec.label(spec.parse_params({"mip_gap": "1e-3"}))
    b = spec.label(spec.parse_params({}))
    c = spec.label(spec.parse_params({"time_limit": "5", "seed": "3"}))  # limits and seeds are no variant
    assert a == "milp-highs-direct[mip_gap=0.001]" and b == c == "milp-highs-direct"
    bf = get_solver("bruteforce")
    assert bf.label(bf.parse_params({"max_sequences": "10"})) == "bruteforce[max_sequences=10]"
    assert variant_label("gone", {"k": 1, "seed": 4}, {}) == "gone[k=1]"


@pytest.mark.parametrize("module", ["deplbench.formulations.backends.milp_highs_direct", "deplbench.formulations.backends.milp_highs",
                                    "deplbench.formulations.backends.milp_cpsat", "deplbench.formulations.backends.milp_scip"])
def test_status_map_sends_unknown_codes_to_unknown(module):
    import importlib

    table = importlib.import_module(module).STATUS_MAP
    assert set(table.values()) <= set(Status)
    assert map_status(table, object()) is Status.UNKNOWN
    assert map_status(table, -12345) is Status.UNKNOWN
    assert map_status(table, []) is Status.UNKNOWN


def test_param_declaration_checks():
    p = Param("eta", int, 200, "buckets", low=1, high=1000)
    assert p.check("25") == 25 and p.check(7) == 7
    for bad in ("0", "x", 2.5, True, "1e9"):
        with pytest.raises(InputError):
            p.check(bad)
    q = Param("eps", float, 0.05, low=0.0, high=1.0, low_open=True)
    assert q.check(1) == 1.0
    for bad in (0.0, "nan", float("inf"), "2"):
        with pytest.raises(InputError):
            q.check(bad)
    with pytest.raises(InputError):
        Param("f", str, "a", choices=("a", "b")).check("c")


def _v1_store(root: Path) -> None:
    """A store as the version before generic rows wrote it (fixed parameter columns)."""
    root.mkdir(parents=True)
    cols = {k: v for k, v in RUN_COLUMNS.items() if k != "label"}
    cols.update({"eta": "DOUBLE", "eps": "DOUBLE", "scenarios": "INTEGER", "formulation": "VARCHAR",
                 "time_limit": "DOUBLE", "mip_gap": "DOUBLE", "threads": "INTEGER", "seed": "INTEGER"})
    con = duckdb.connect(str(root / "results.duckdb"))
    con.execute("CREATE TABLE runs (" + ", ".join(f'"{k}" {v}' for k, v in cols.items()) + ")")
    con.execute("CREATE TABLE instances (name VARCHAR PRIMARY KEY, family VARCHAR, params VARCHAR, json VARCHAR)")
    params = {"eta": 25, "eps": 0.05, "time_limit": 60.0, "seed": 0, "threads": 1}
    con.execute("INSERT INTO runs (run_key, solver, solver_kind, params, eta, eps, time_limit, harness_status, "
                "status, extra_json) VALUES ('k1', 'depl', 'heuristic', ?, 25, 0.05, 60, 'ok', 'feasible', ?)",
                [json.dumps(params), json.dumps({"t_stage2_s": 0.5, "note": "text"})])
    con.close()


def test_version1_store_is_read_and_migrated(tmp_path):
    root = tmp_path / "old"
    _v1_store(root)
    df = db.read_results(root)  # read-only: expanded, nothing written
    assert df.loc[0, "method"] == "depl[eta=25]" and df.loc[0, "p_eta"] == 25
    assert df.loc[0, "x_t_stage2_s"] == 0.5 and "x_note" not in df.columns
    with Store(root) as st:  # opened for writing: migrated
        cols = {r[0] for r in st.con.execute("SELECT column_name FROM information_schema.columns "
                                             "WHERE table_name = 'runs'").fetchall()}
        schema = st.con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]
        assert schema == SCHEMA and "label" in cols and not set(LEGACY_PARAM_COLUMNS) & cols
        assert st.runs().loc[0, "p_eps"] == 0.05


def test_foreign_database_is_refused_and_left_unchanged(tmp_path):
    root = tmp_path / "foreign"
    root.mkdir()
    con = duckdb.connect(str(root / "results.duckdb"))
    con.execute("CREATE TABLE invoices (id INTEGER, amount DOUBLE)")
    con.execute("INSERT INTO invoices VALUES (1, 9.5)")
    con.close()
    before = hashlib.sha256((root / "results.duckdb").read_bytes()).hexdigest()
    for read_only in (True, False):
        with pytest.raises(InputError, match="not a result store"):
            Store(root, read_only=read_only)
    assert hashlib.sha256((root / "results.duckdb").read_bytes()).hexdigest() == before
