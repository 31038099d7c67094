"""The installed version of depl-bench (imports nothing of deplbench)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("depl-bench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
