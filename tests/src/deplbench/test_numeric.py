"""Fixed-order products (``deplbench.numeric``): the same values as numpy's, and no BLAS in the judge.

OpenBLAS picks its kernels from the CPU at run time, so a product through it (``@``, ``np.dot``,
``np.convolve``, ``np.linalg``) can differ in its last bits from one machine to another; ``exact``'s
work moved by 5.6 % on one library instance with the kernel alone (docs/library.md, "Work that
depended on the CPU"). The evaluator, ``exact`` and the allocation bounds must not call it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deplbench.numeric import convolve, dot, irfft, matvec, rfft, thin_matmul

ROOT = Path(__file__).resolve().parents[3]
#: the code whose decisions grade the library and certify plans
JUDGED = [*sorted((ROOT / "instances" / "evaluator").glob("*.py")), *sorted((ROOT / "formulations" / "exact").glob("*.py")),
          ROOT / "formulations" / "allocation.py", ROOT / "instances" / "semantics.py"]
BLAS_CALLS = {"dot", "vdot", "inner", "matmul", "tensordot", "einsum", "convolve", "correlate"}


def _blas_uses(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            out.append(f"{path.name}:{node.lineno}: @")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            base = f.value.id if isinstance(f.value, ast.Name) else getattr(f.value, "attr", "")
            if (base == "np" and f.attr in BLAS_CALLS) or base == "linalg" or f.attr == "dot":
                out.append(f"{path.name}:{node.lineno}: {base}.{f.attr}")
    return out


def test_the_judge_calls_no_blas(tmp_path):
    """No ``@``, ``np.dot``, ``np.convolve``, ``np.linalg`` or ``.dot`` in the evaluator, ``exact`` or
    the allocation (the check finds them: it is run on a snippet that has each)."""
    found = [u for p in JUDGED for u in _blas_uses(p)]
    assert found == []
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy as np\na = np.ones(3)\nb = a @ a\nc = np.dot(a, a)\nd = np.convolve(a, a)\n"
                     "e = np.linalg.norm(a)\nf = a.dot(a)\n")
    assert len(_blas_uses(probe)) == 5


@pytest.mark.parametrize("la,lb", [(1, 1), (1, 7), (9, 3), (8, 500), (65, 300), (5000, 2)])
def test_convolve_is_numpys_convolution(la, lb):
    rng = np.random.default_rng(la * 1000 + lb)
    a, b = rng.random(la), rng.random(lb)
    got, ref = convolve(a, b), np.convolve(a, b)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(convolve(b, a), got)  # the same order whichever factor comes first


def test_products_are_numpys_products():
    rng = np.random.default_rng(1)
    A, B, x = rng.random((6, 4)), rng.random((4, 3)), rng.random(4)
    np.testing.assert_allclose(thin_matmul(A, B.T), A @ B, rtol=1e-13)
    np.testing.assert_allclose(matvec(A, B), A @ B, rtol=1e-13)
    np.testing.assert_allclose(matvec(x, B), x @ B, rtol=1e-13)
    assert matvec(x, B).shape == (3,)
    np.testing.assert_allclose(matvec(A, x), A @ x, rtol=1e-13)
    assert matvec(A, x).shape == (6,) and float(matvec(x, x)) == pytest.approx(float(x @ x), rel=1e-14)
    assert dot(x, x) == pytest.approx(float(x @ x), rel=1e-14)
    assert dot(np.array([1e16, 1.0, -1e16]), np.ones(3)) == float(np.add.reduce(np.array([1e16, 1.0, -1e16])))


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


PROBE = """
import hashlib, numpy as np
from deplbench.numeric import convolve, dot, matvec
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.registry import generate
rng = np.random.default_rng(7)
a, b, c, M = rng.random(999), rng.random(37), rng.random(301), rng.random((37, 5))
ours, blas = hashlib.sha256(), hashlib.sha256()
for v in (convolve(a, b), convolve(a, c), matvec(b, M), np.array([dot(a[:37], b)])):
    ours.update(np.ascontiguousarray(v).tobytes())
for v in (np.convolve(a, b), np.convolve(a, c), b @ M, np.array([a[:37] @ b])):
    blas.update(np.ascontiguousarray(v).tobytes())
for mode in ("per_run", "per_epoch"):
    inst = generate("random", {"noise_mode": mode}, 3)
    terms = loss_terms(inst, [m.id for m in inst.models] * 7, 0.9)
    for w in (0.05, 0.004, 0.0005):
        br = quantile_bracket(terms, inst.loss.quantile, w * inst.loss.initial)
        ours.update(np.array([br.lo, br.hi]).tobytes())
print(ours.hexdigest(), blas.hexdigest())
"""


@pytest.mark.slow
def test_the_same_bits_under_every_openblas_kernel():
    """The helpers' products and the evaluator's brackets hash the same under OpenBLAS's kernels of
    three CPU generations (a fresh process each, ``OPENBLAS_CORETYPE``; only kernels this CPU can
    run), while numpy's own products of the same vectors differ: the kernels really differ here."""
    flags = _cpu_flags()
    kernels = ["Prescott"] + (["Haswell"] if "avx2" in flags else []) + (["SkylakeX"] if "avx512f" in flags else [])
    if len(kernels) < 2:
        pytest.skip("this CPU runs one OpenBLAS kernel family only: nothing to compare")
    ours, blas = set(), set()
    for k in kernels:
        env = {**os.environ, "OPENBLAS_CORETYPE": k}
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
        o, b = out.stdout.split()
        ours.add(o)
        blas.add(b)
    if len(blas) == 1:
        pytest.skip("numpy's products are the same under every kernel here (no OpenBLAS, or its kernel is fixed)")
    assert len(ours) == 1, (kernels, ours)


@pytest.mark.parametrize("N", [2, 7, 64, 500, 501, 1200, 2401])
def test_transforms_are_numpys(N):
    """``numeric.rfft`` / ``irfft`` (numpy's transforms called directly) give ``numpy.fft``'s bits, 1-D and 2-D."""
    rng = np.random.default_rng(N)
    a = rng.random(max(1, N - 3))
    assert np.array_equal(rfft(a, N), np.fft.rfft(a, N))
    F = np.fft.rfft(a, N) * np.fft.rfft(a[::-1].copy(), N)
    assert np.array_equal(irfft(F, N), np.fft.irfft(F, N))
    A = rng.random((3, N))
    assert np.array_equal(rfft(A, N), np.fft.rfft(A, axis=1))
    assert np.array_equal(irfft(rfft(A, N), N), np.fft.irfft(np.fft.rfft(A, axis=1), N, axis=1))
