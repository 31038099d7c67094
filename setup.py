"""Build hook: writes the checkout's git commit into the built package as ``deplbench/_build_info.py``.

Everything else of the build is in pyproject.toml. A wheel installed from this checkout then
knows its commit without git (:func:`deplbench.benchmarks.harness.rows.git_commit`); an
editable install writes nothing into the source tree and asks git at runtime.
"""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def _commit() -> str | None:
    """HEAD of the checkout being built (``+dirty`` if tracked files changed), or None outside git."""
    here = str(Path(__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


class BuildPyWithCommit(build_py):
    """``build_py`` that also writes ``_build_info.py`` (the commit) into the build folder."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install: git answers at runtime
            return
        target = Path(self.build_lib) / "deplbench" / "_build_info.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text('"""The git commit this package was built from (written by setup.py)."""\n\n'
                          f"GIT_COMMIT = {_commit()!r}\n")


setup(cmdclass={"build_py": BuildPyWithCommit})
