"""The layout holds: import rules, no cycles, every subpackage a part and installed, a current picture."""

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
    assert block == arch.render().strip(), "run: python -m deplbench.architecture docs/ARCHITECTURE.md"
    for part in arch.PARTS:
        assert f'["{part}"]' in block


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
