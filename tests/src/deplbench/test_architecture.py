"""The layout holds: import rules, no cycles, every subpackage a part and installed, a current picture and tables."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from harness_configs import config

from deplbench import architecture as arch
from deplbench import architecture_tables as arch_tables
from deplbench.cli import main

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("scipy", "pandas", "pyomo", "ortools", "pyscipopt", "highspy", "duckdb", "dask", "matplotlib", "pydantic",
         "numba", "llvmlite")


@pytest.fixture(scope="module")
def found():
    return arch.modules()


@pytest.fixture(scope="module")
def edges(found):
    return arch.edges(found)


def test_the_scan_sees_every_module_and_function_level_imports(found, edges):
    assert "deplbench.formulations.exact.search" in found and "deplbench.cli.core" in found
    assert len(found) > 100
    # cli.core imports the evaluator inside cmd_evaluate: the scan must see such imports
    assert any(e.source == "deplbench.cli.core" and e.target == "deplbench.instances.evaluator.evaluate"
               and e.inner for e in edges)


def test_every_import_follows_the_rules(edges):
    assert arch.violations(edges) == []


def test_the_rules_catch_a_forbidden_import():
    bad = [arch.Edge("deplbench.instances.evaluator.loss", "deplbench.formulations.saa.model", 1, True),
           arch.Edge("deplbench.formulations.exact.search", "deplbench.formulations.backends.mps", 2, False)]
    assert len(arch.violations(bad)) == 2


def test_no_import_cycle(edges):
    assert arch.cycles(edges) == []


def test_cycles_are_found_through_function_level_imports():
    loop = [arch.Edge("deplbench.a", "deplbench.b", 1, False), arch.Edge("deplbench.b", "deplbench.c", 1, True),
            arch.Edge("deplbench.c", "deplbench.a", 9, True)]
    assert arch.cycles(loop) == [["deplbench.a", "deplbench.b", "deplbench.c"]]


def test_every_subpackage_is_a_part_with_a_docstring_and_in_pyproject(found):
    packages = sorted(m for m, p in found.items() if p.name == "__init__.py")
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert sorted(listed) == packages
    for pkg in packages:
        part = arch.part_of(pkg)
        if pkg not in ("deplbench", "deplbench.cli"):
            assert part == pkg.removeprefix("deplbench."), pkg
        doc = found[pkg].read_text()
        assert doc.startswith('"""'), pkg
        if pkg != "deplbench":
            assert "May import" in doc.split('"""')[1], f"{pkg}: its docstring says what it may import"


def test_no_flat_prefix_modules_left(found):
    flat = [m for m in found if re.match(r"deplbench\.(formulations\.(exact|saa)_|benchmarks\.(bench|library)_)", m)]
    assert flat == []
    too_long = [m for m, p in found.items() if len(p.read_text().splitlines()) > 400]
    assert too_long == []


def test_the_picture_is_current():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split(arch.BEGIN)[1].split(arch.END)[0].strip()
    assert block == arch.render().strip(), f"the picture is stale: run {arch.REDRAW}"
    for part in arch.PARTS:
        assert f'["{part}"]' in block


def test_the_module_tables_are_current_and_complete(found):
    """Every module has a row in its package's table (every package a table), and the tables are
    what the docstrings say now."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    assert arch_tables.BEGIN in doc and arch_tables.END in doc, f"markers missing: run {arch.REDRAW}"
    block = doc.split(arch_tables.BEGIN)[1].split(arch_tables.END)[0]
    missing = []
    for pkg in (m for m, p in found.items() if p.name == "__init__.py"):
        folder = arch_tables.folder_of(pkg, arch.TOP_PACKAGES)
        head = f"### `{folder}` (`{pkg}`)"
        if head not in block:
            missing.append(pkg)
            continue
        table = block.split(head)[1].split("\n### ")[0]
        for mod, path in found.items():
            parent, _, name = mod.rpartition(".")
            row = f"| `{name}/` |" if path.name == "__init__.py" else f"| `{name}.py` |"
            if parent == pkg and row not in table:
                missing.append(mod)
    assert missing == [], f"not in the module tables of docs/ARCHITECTURE.md: {missing}; run {arch.REDRAW}"
    assert block.strip() == arch.tables().strip(), f"the module tables are stale: run {arch.REDRAW}"


def test_the_tables_name_the_folders_pyproject_maps():
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for pkg, folder in dirs.items():
        assert arch_tables.folder_of(pkg, arch.TOP_PACKAGES) == folder + "/"
    assert arch_tables.folder_of("deplbench.formulations.exact", arch.TOP_PACKAGES) == "formulations/exact/"
    assert arch_tables.folder_of("deplbench.cli", arch.TOP_PACKAGES) == "src/deplbench/cli/"


def test_a_missing_module_makes_the_tables_stale(found, tmp_path):
    """The regeneration is what the check compares with: a new module changes the tables."""
    new = tmp_path / "knobs.py"
    new.write_text('"""The knobs of ``exact``: one place.\n\nMore.\n"""\n')
    grown = {**found, "deplbench.formulations.exact.knobs": new}
    text = arch_tables.render(grown, arch.TOP_PACKAGES)
    assert "| `knobs.py` | The knobs of `exact`: one place. |" in text
    assert text != arch.tables()


def _imported_by(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120)
    return {m.split(".")[0] for m in json.loads(out.stdout.splitlines()[-1])}


def test_listing_methods_and_families_imports_no_solver_library():
    loaded = _imported_by("from deplbench.registry import family_names, get_family, get_solver, solver_names\n"
                          "[get_solver(n).listing() for n in solver_names()]\n"
                          "[get_family(n).listing() for n in family_names()]")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_building_the_parser_imports_no_numerical_library():
    loaded = _imported_by("from deplbench.cli import build_parser\nbuild_parser()\nimport deplbench")
    assert not loaded & {*HEAVY, "numpy"}, loaded & {*HEAVY, "numpy"}


def test_a_config_naming_a_moved_module_gets_one_line(tmp_path, capsys):
    cfg = config(tmp_path, ['[[experiments.solvers]]\nname = "harness-sleep"\n'
                            'module = "deplbench.benchmarks.harness_testing"\n'])
    assert main(["run", str(cfg), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "moved to 'deplbench.benchmarks.harness.testing'" in err[0], err


@pytest.mark.slow
def test_a_wheel_holds_every_subpackage(tmp_path, found):
    """A non-editable install gets every module (the package list in pyproject is complete)."""
    src = tmp_path / "src"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                            "deplbench-results", ".pytest_cache", ".ruff_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for module, path in found.items():
        rel = module.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
        if rel not in names:
            missing.append(rel)
    assert missing == []
    assert any(n.startswith("deplbench/benchmarks/configs/") for n in names)
    assert any(n.startswith("deplbench/instances/data/") for n in names)
    assert any(n.startswith("deplbench/benchmarks/library/published/") and n.endswith(".solu") for n in names)
