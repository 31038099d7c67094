"""Config expansion and validation: grids, deterministic keys, one-line errors with exit 2."""

from __future__ import annotations

import pytest
from harness_configs import config, solver

from deplbench.benchmarks.harness.config import load_config, shipped_configs
from deplbench.cli import main
from deplbench.errors import InputError


def test_grid_expands_to_the_cartesian_product(tmp_path):
    path = config(tmp_path, [solver("harness-busy", seconds=[0.1, 0.2, 0.3]), solver("harness-ok")],
                  seeds=(0, 1, 2), harness="repetitions = 2")
    runs = load_config(path).runs
    assert len(runs) == 3 * (3 + 1) * 2
    assert len({r.key for r in runs}) == len(runs)
    busy = [r for r in runs if r.solver == "harness-busy"]
    assert sorted({r.params["seconds"] for r in busy}) == [0.1, 0.2, 0.3]
    # repetition r runs with seed + r, and the full parameter set (defaults included)
    assert {(r.repetition, r.params["seed"]) for r in runs} == {(0, 0), (1, 1)}
    assert all(r.params["threads"] == 1 for r in runs)
    assert {r.instance_params["epochs"] for r in runs} == {4}


def test_keys_are_deterministic_and_ignore_limits(tmp_path):
    a = load_config(config(tmp_path, [solver("harness-ok")], harness="grace = 1.0", name="a")).runs
    b = load_config(config(tmp_path, [solver("harness-ok")], harness="grace = 7.0", name="b")).runs
    assert [r.key for r in a] == [r.key for r in b]
    c = load_config(config(tmp_path, [solver("harness-ok", time_limit=5)], name="c")).runs
    assert not {r.key for r in a} & {r.key for r in c}


@pytest.mark.parametrize("text, where", [
    ("[[experiments]]\nname = \"x\"\nbogus = 1\n", "experiments[0].bogus"),
    ("[harness]\ngrace = -1\n", "harness.grace"),
    ("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"nope\"\n"
     "[[experiments.solvers]]\nname = \"depl\"\n", "experiments[0].instances[0].family"),
    ("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"random\"\n"
     "[[experiments.solvers]]\nname = \"nope\"\n", "experiments[0].solvers[0].name"),
    ("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"random\"\nparams = { colour = 1 }\n"
     "[[experiments.solvers]]\nname = \"bruteforce\"\n", "experiments[0].instances[0].params.colour"),
    ("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"random\"\n"
     "[[experiments.solvers]]\nname = \"bruteforce\"\nparams = { time_limit = \"soon\" }\n",
     "experiments[0].solvers[0].params.time_limit"),
    ("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"random\"\nparams = { epochs = [] }\n"
     "[[experiments.solvers]]\nname = \"bruteforce\"\n", "experiments[0].instances[0].params.epochs"),
    ("[[experiments]\n", None),
])
def test_bad_config_is_one_input_error(tmp_path, text, where):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_config(path)
    assert exc.value.source == str(path)
    if where:
        assert exc.value.path == where


def test_bad_config_cli_one_line_exit_2_nothing_written(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text("[[experiments]]\nname = \"x\"\n[[experiments.instances]]\nfamily = \"random\"\n"
                    "[[experiments.solvers]]\nname = \"bruteforce\"\nparams = { eta = 3 }\n")
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "params.eta" in err[0] and "no parameter" in err[0]
    assert not out.exists()
    assert main(["run", "no-such-config", "--out", str(out)]) == 2
    assert main(["run", "smoke", "--workers", "0", "--out", str(out)]) == 2
    assert main(["run", "smoke", "--scheduler", "tcp://x:1", "--cluster", "local", "--out", str(out)]) == 2
    assert not out.exists()


@pytest.mark.parametrize("name", ["paper", "smoke"])
def test_shipped_configs_name_the_real_solvers(name, capsys, tmp_path):
    assert name in shipped_configs()
    runs = load_config(name).runs
    solvers = {r.solver for r in runs}
    assert {"bruteforce", "depl", "best-exp"} <= solvers
    if name == "paper":  # the 20 paper instances, depl at the paper's eta values
        assert len({r.instance_id for r in runs}) == 20
        assert {r.params["eta"] for r in runs if r.solver == "depl"} == {25, 50, 100, 200}
    assert main(["run", name, "--dry-run", "--out", str(tmp_path / name)]) == 0
    out = capsys.readouterr().out
    assert f"{len(runs)} runs, 0 done, {len(runs)} to run" in out
    assert not (tmp_path / name).exists()  # a dry run writes nothing


def test_every_shipped_config_expands():
    for name in shipped_configs():
        assert load_config(name).runs, name


def test_folder_named_like_a_shipped_config_does_not_hide_it(tmp_path, monkeypatch):
    from deplbench.benchmarks.harness.config import resolve

    monkeypatch.chdir(tmp_path)
    (tmp_path / "smoke").mkdir()  # e.g. an earlier `--out smoke`
    assert resolve("smoke").name == "smoke.toml"
