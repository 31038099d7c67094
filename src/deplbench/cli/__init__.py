"""The ``deplbench`` command line: one package, a static list of commands (as benchopt's ``cli``).

Each module of :data:`COMMANDS` defines ``register(subparsers)``; every subparser sets
``func(args) -> int``. Building the parser imports only these modules and ``deplbench.cli.args``;
a command imports what it uses when it runs, so ``deplbench --help`` starts fast.

May import: everything of deplbench (inside command functions). Imported by: the console script only
(:func:`console_main`).
Bad input (an :class:`~deplbench.errors.InputError`, a wrong flag) prints exactly one line on
stderr and exits with status 2; nothing is written.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys

from deplbench.cli.args import Parser, parse_sets  # noqa: F401 - parse_sets: the CLI's --set parser
from deplbench.errors import InputError
from deplbench.incumbent import is_interrupt

#: the command modules, in the order of ``deplbench --help``
COMMANDS: tuple[str, ...] = (
    "deplbench.cli.core",          # validate, evaluate, families, generate, solvers, solve
    "deplbench.cli.export",        # export
    "deplbench.cli.saa_bounds",    # saa-bounds
    "deplbench.cli.knapsack",      # reduce-knapsack
    "deplbench.cli.run",           # run, export-results
    "deplbench.cli.warmup",        # warmup
    "deplbench.cli.report",        # report
    "deplbench.cli.compare",       # compare
    "deplbench.cli.library",       # library build|check
    "deplbench.cli.calibrate",     # train-curves, calibrate
)


#: an OSError without a file name but with one of these is still one line (a full disk in a library)
_DISK_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EIO)


def build_parser() -> argparse.ArgumentParser:
    """The whole parser: the version flag and every command of :data:`COMMANDS`."""
    from deplbench.version import __version__

    p = Parser(prog="deplbench", description="Benchmark suite for dependable distributed training (DepL)")
    p.add_argument("--version", action="version", version=f"deplbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except InputError as exc:  # an EnvironmentFailure too, with its own status
        print(f"deplbench: error: {exc.one_line()}", file=sys.stderr)
        return exc.status
    except MemoryError:
        print("deplbench: error: out of memory (the command itself; a smaller input or more memory)",
              file=sys.stderr)
        return 3
    except RecursionError:
        print("deplbench: error: input nested too deeply", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout left (``| head``): not an error of ours
        return 0
    except OSError as exc:
        if exc.filename is None:
            if exc.errno not in _DISK_ERRNOS:
                raise
            target = _output_of(args)  # a write that failed deep in a library: name what was being written
            why = exc.strerror or str(exc)
            print(f"deplbench: error: {InputError(f'cannot write ({why})', target).one_line() if target else why}",
                  file=sys.stderr)
            return 2
        print(f"deplbench: error: {InputError(exc.strerror or type(exc).__name__, str(exc.filename)).one_line()}",
              file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemError, ImportError) as exc:  # also one that landed in a compiled call or an import
        if not is_interrupt(exc):
            raise
        print("deplbench: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """The ``deplbench`` command (and ``python -m deplbench.cli``): :func:`main`, then exit.

    Once the command has returned, its work is done and its files are written; a signal that
    lands while the interpreter shuts down (a second Ctrl-C just after a stop, say) would raise
    ``KeyboardInterrupt`` inside the interpreter's exit handlers and print their traceback. So
    SIGINT and SIGTERM then end the process at once, with the command's status (or 128 plus
    the signal's number when it was 0), after flushing stdout and stderr. After an interrupt the
    process skips the interpreter's shutdown altogether: a native module whose import the
    interrupt cut short can crash it ("Fatal Python error" while finalizing).
    """
    _sane_streams()
    code = main()
    if code == 130:
        _flush_and_exit(code)
    _end_at_once_on_signals(code)
    sys.exit(code)


def _sane_streams() -> None:
    """Closed standard streams read from and write to ``/dev/null``; output never fails on its encoding.

    A closed descriptor 0, 1 or 2 (``2>&-``) would be taken by the next file the command opens (the
    result store, a run's pipe), and what is then written to "stderr" would land in that file; a
    character the stream's encoding lacks (``PYTHONIOENCODING=ascii``, a non-ASCII path) is written
    as a backslash escape instead of raising after the work is done.
    """
    import io

    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: ``fd`` itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, io.TextIOWrapper(io.FileIO(fd, mode, closefd=False), encoding="utf-8",
                                                write_through=True))
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or file: nothing left to save
            pass
    from deplbench.leftovers import remove_multiprocessing_tempdir

    remove_multiprocessing_tempdir()  # os._exit skips the exit handler that would remove it
    os._exit(code)


def _end_at_once_on_signals(code: int) -> None:
    def handler(signum, frame):
        _flush_and_exit(code or 128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


def _output_of(args) -> str | None:
    """The file or folder a command writes (``--out``, or the folder of ``report``), if it has one."""
    for name in ("out", "dir"):
        value = getattr(args, name, None)
        if value:
            return str(value)
    return None
