"""Errors that are the user's input, not the program's fault.

Every :class:`InputError` is printed by the CLI as exactly one line
``FILE: JSON_PATH: problem`` and the process exits with status 2.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a malformed or invalid file, an unknown id, a wrong flag value.

    Parameters
    ----------
    message : str
        What is wrong, one line.
    source : str, optional
        The file (or flag) the input came from.
    path : str, optional
        JSON path inside the file, e.g. ``$.clusters[0].capacity``.
    """

    def __init__(self, message: str, source: str | None = None, path: str | None = None):
        self.message = " ".join(str(message).split())
        self.source = source
        self.path = path
        super().__init__(self.one_line())

    def with_source(self, source: str) -> InputError:
        """Return a copy that names ``source`` (kept if already set)."""
        return InputError(self.message, self.source or source, self.path)

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.path) if p]
        return ": ".join([*parts, self.message])


def json_path(loc: tuple | list) -> str:
    """Format a location tuple ``('clusters', 0, 'capacity')`` as ``$.clusters[0].capacity``."""
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
