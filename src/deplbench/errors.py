"""Errors that are the user's input, not the program's fault.

Every :class:`InputError` is printed by the CLI as exactly one line
``FILE: JSON_PATH: problem`` and the process exits with status 2 (:data:`INPUT_STATUS`); an
:class:`EnvironmentFailure` (the input is fine, what the command needs around it is not) the same
way with status 3 (:data:`ENVIRONMENT_STATUS`). docs/reliability.md lists both.
"""

from __future__ import annotations

import json

#: exit status of bad input (a file, a flag, a field)
INPUT_STATUS = 2
#: exit status of a failure of the environment (an unreachable or broken scheduler, no memory left)
ENVIRONMENT_STATUS = 3


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

    #: the command's exit status
    status = INPUT_STATUS

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
        text = ": ".join([*parts, self.message])
        # control characters (a newline in a key or file name) would break the one-line promise
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class EnvironmentFailure(InputError):
    """The environment failed the command (not its input): one line, exit status 3.

    An unreachable, silent or garbled Dask scheduler, no memory left for the command itself.
    """

    status = ENVIRONMENT_STATUS

    def with_source(self, source: str) -> EnvironmentFailure:
        return EnvironmentFailure(self.message, self.source or source, self.path)


def json_path(loc: tuple | list) -> str:
    """Format a location tuple ``('clusters', 0, 'capacity')`` as ``$.clusters[0].capacity``."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).replace("_", "a").replace("-", "a").isalnum():
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part))}]"
    return out
