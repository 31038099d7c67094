"""Every translation of an SAA model out of Python: to a HiGHS LP in memory and to MPS/LP files.

The one MPS/LP writer (:func:`write_model`, used by ``deplbench export``, the ``mps`` method and
the library build; the MPS text is :mod:`~deplbench.formulations.saa.mps_text`'s), the one highspy
translation (:func:`to_highs_lp`) and the HiGHS options every HiGHS solve of the SAA shares (:func:`configure`). highspy is imported when a function runs.

May import: ``formulations.saa.model``, ``formulations.saa.mps_text`` and highspy. Imported by:
``saa.cuts``, ``saa.root``, the backends, ``benchmarks.library`` and ``deplbench.cli.export``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np

from deplbench.formulations.saa.model import FEAS_TOL, SaaModel


def to_highs_lp(model: SaaModel):
    """A :class:`highspy.HighsLp` (row-wise matrix, integrality, names if the model has them)."""
    import highspy

    A = model.A.tocsr()
    A.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_ = model.n_vars
    lp.num_row_ = model.n_cons
    inf = highspy.kHighsInf
    lp.col_cost_ = model.c
    lp.col_lower_ = np.clip(model.lb, -inf, inf)
    lp.col_upper_ = np.clip(model.ub, -inf, inf)
    lp.row_lower_ = np.clip(model.row_lb, -inf, inf)
    lp.row_upper_ = np.clip(model.row_ub, -inf, inf)
    lp.offset_ = model.offset
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = model.n_vars
    lp.a_matrix_.num_row_ = model.n_cons
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in model.integer]
    if model.names:
        lp.col_names_ = model.names
        lp.row_names_ = [f"r{i}" for i in range(model.n_cons)]
    return lp


def configure(h, *, time_limit: float, mip_gap: float, threads: int, seed: int) -> None:
    """Quiet output, limits and tight tolerances on a :class:`highspy.Highs` (shared with the library).

    The calling thread's HiGHS scheduler is matched to ``threads`` and the options around HiGHS bugs
    are set (:func:`deplbench.formulations.highs.apply_workarounds`: the SIGSEGV of highspy 1.16).
    """
    from deplbench.formulations.highs import apply_workarounds, match_scheduler

    match_scheduler(threads)
    apply_workarounds(h)  # highspy 1.16's SIGSEGV in the RENS sub-MIP's presolve: RENS off (deplbench.formulations.highs)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    h.setOptionValue("mip_abs_gap", 0.0 if mip_gap == 0 else 1e-6)
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("primal_feasibility_tolerance", FEAS_TOL)
    h.setOptionValue("mip_feasibility_tolerance", FEAS_TOL)


def set_start(h, x0) -> None:
    """Pass the column vector ``x0`` (a MIP start) to a :class:`highspy.Highs`; nothing when None."""
    import highspy

    if x0 is None:
        return
    sol = highspy.HighsSolution()
    sol.col_value = list(x0)
    sol.value_valid = True
    h.setSolution(sol)


def write_model(model: SaaModel, path: str | Path, *, name: str = "", fixed: bool = False):
    """The model as an MPS or LP file (by ``path``'s suffix), atomically; the MPS text's facts or None.

    MPS: :mod:`deplbench.formulations.saa.mps_text` (``fixed``: fixed format, else free format with
    exact numbers), ``name`` in its ``NAME`` line; returns its :class:`~.mps_text.MpsText` (whether
    the file is the model exactly). LP: written by HiGHS beside the target and renamed into place
    (None). No half-written file is left on a failure.
    """
    from deplbench.files import atomic_output, atomic_path

    path = Path(path)
    if path.suffix.lower() == ".mps":
        from deplbench.formulations.saa.mps_text import mps_text

        out = mps_text(model, name, fixed=fixed)
        with atomic_output(path) as fh:
            fh.write(out.text)
        return out
    import highspy

    from deplbench.formulations.highs import new_highs

    h = new_highs()
    h.passModel(to_highs_lp(model))
    with atomic_path(path) as tmp:
        if h.writeModel(str(tmp)) != highspy.HighsStatus.kOk:
            raise OSError(errno.EIO, "HiGHS could not write the model")
        _check_complete(tmp)
    return None


#: how HiGHS ends a complete file, by suffix
_LAST_LINE = {".mps": b"ENDATA", ".lp": b"end"}


def _check_complete(path: Path) -> None:
    """HiGHS writes with unchecked ``fprintf``: on a full disk it reports success for a cut file."""
    want = _LAST_LINE.get(path.suffix.lower())
    if want is None:
        return
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(fh.tell() - 64, 0))
        tail = fh.read().rstrip()
    if not tail.endswith(want):
        st = os.statvfs(path)
        code = errno.ENOSPC if st.f_bavail == 0 else errno.EIO
        raise OSError(code, os.strerror(code) if code == errno.ENOSPC else "HiGHS wrote an incomplete file")
