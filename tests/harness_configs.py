"""Config builders shared by the harness tests (import as ``harness_configs``)."""

from __future__ import annotations

from pathlib import Path

MODULE = "deplbench.benchmarks.harness.testing"


def library_config(path: Path, library: Path, names) -> Path:
    """Write at ``path`` a config running ``milp-highs-direct`` and ``mps[preset=cbc]`` (20 scenarios, 30 s)
    on the instances ``names`` of the library folder ``library``; returns ``path``."""
    listed = ", ".join(f'"{n}"' for n in names)
    path.write_text(f"""
[[experiments]]
name = "lib"
[[experiments.instances]]
family = "library"
params = {{ dir = "{library}", name = [{listed}] }}
[[experiments.solvers]]
name = "milp-highs-direct"
params = {{ scenarios = 20, time_limit = 30 }}
[[experiments.solvers]]
name = "mps"
params = {{ preset = "cbc", scenarios = 20, time_limit = 30 }}
""")
    return path


def solver(name: str, **params) -> str:
    body = ", ".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in params.items())
    return (f'[[experiments.solvers]]\nname = "{name}"\nmodule = "{MODULE}"\n'
            + (f"params = {{ {body} }}\n" if body else ""))


def config(tmp: Path, solvers: list[str], seeds=(0, 1), epochs: int = 4, harness: str = "grace = 1.0",
           name: str = "grid") -> Path:
    """A config over small random instances and the given solver tables."""
    text = (f"[harness]\n{harness}\n\n[[experiments]]\nname = \"t\"\n\n"
            f"[[experiments.instances]]\nfamily = \"random\"\nseeds = {list(seeds)}\n"
            f"params = {{ epochs = {epochs}, models = 2 }}\n\n" + "\n".join(solvers))
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


def alive(procs) -> list:
    """The processes of ``procs`` still running (zombies and vanished ones are not)."""
    import psutil

    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def wait_gone(procs, timeout: float) -> list:
    """Wait up to ``timeout`` seconds for every process of ``procs`` to end; the ones still running then.

    A test that gives a killed tree a grace to go polls instead of sleeping the whole grace.
    """
    import time

    deadline = time.monotonic() + timeout
    left = alive(procs)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = alive(left)
    return left
