"""The options around upstream HiGHS bugs: by version, set on every HiGHS object, and the crash they avoid.

The model of ``docs/history/highspy-1.16/`` (with its MIP start) made highspy 1.16.0 die with SIGSEGV
in ``Highs.run`` (the presolve of HiGHS' RENS sub-MIP); it is solved here in a child process, so a
crash fails this test instead of killing the run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deplbench.formulations.highs import highs_version, new_highs, workaround_options

REPRO = Path(__file__).resolve().parents[2] / "docs" / "history" / "highspy-1.16"


class _Version:
    def __init__(self, major, minor):
        self.major, self.minor = major, minor

    def versionMajor(self):  # noqa: N802 (highspy's name)
        return self.major

    def versionMinor(self):  # noqa: N802
        return self.minor


@pytest.mark.parametrize("version,rens_off", [((1, 14), False), ((1, 15), True), ((1, 16), True)])
def test_workaround_options_by_version(version, rens_off):
    opts = workaround_options(_Version(*version))
    assert opts == ({"mip_heuristic_run_rens": False} if rens_off else {})


def test_new_highs_sets_the_workarounds():
    h = new_highs(threads=1)
    assert highs_version(h) == highs_version()
    want = workaround_options(h).get("mip_heuristic_run_rens", True)
    got = h.getOptionValue("mip_heuristic_run_rens")
    assert (got[1] if isinstance(got, tuple) else got) is want


CHILD = """
import sys
from pathlib import Path
import highspy
from deplbench.formulations.saa.io import configure
d = Path(sys.argv[1])
h = highspy.Highs()
configure(h, time_limit=60.0, mip_gap=0.0, threads=1, seed=1)
h.readModel(str(d / "model.mps"))
sol = highspy.HighsSolution()
sol.col_value = [float(v) for v in (d / "start.txt").read_text().split()]
sol.value_valid = True
h.setSolution(sol)
h.run()
print(h.getModelStatus().name, h.getInfo().objective_function_value)
"""


def test_the_highspy_116_crash_model_solves():
    out = subprocess.run([sys.executable, "-c", CHILD, str(REPRO)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    status, obj = out.stdout.split()[-2:]
    assert status == "kOptimal" and float(obj) == pytest.approx(25.0, rel=1e-6)


def _child_stdout(code: str) -> str:
    """What a fresh interpreter running ``code`` writes to its standard output (a pipe, not a tty)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_silence_banner_keeps_the_first_highs_object_off_stdout():
    # the banner of highspy >= 1.16 is printed from C++ by the first Highs of a process; Python output around
    # it must still come through, in order
    out = _child_stdout("from deplbench.formulations.highs import new_highs, silence_banner\n"
                        "print('before', flush=True)\nsilence_banner()\nh = new_highs()\nimport highspy\n"
                        "h2 = highspy.Highs()\nprint('after')\n")
    assert out == "before\nafter\n"


def test_without_silence_banner_the_banner_is_printed_from_highspy_116():
    # the reason for silence_banner: if a HiGHS stops printing it, this test says so (and the workaround can go)
    out = _child_stdout("import highspy\nh = highspy.Highs()\n")
    if highs_version() >= (1, 16):
        assert "Running HiGHS" in out
    else:
        assert out == ""


def test_highs_version_without_highspys_metadata_asks_the_library(monkeypatch):
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    want = highs_version()
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert highs_version() == want  # the loaded library's own version, read from the process's kept first object
