"""``deplbench solve`` under signals: stop cleanly with the best plan, keep a checkpoint on disk.

The method runs in a watched child (:func:`deplbench.watch.call`). While it runs:

* every improvement of its incumbent (:mod:`deplbench.incumbent`) is written atomically to
  ``OUT.checkpoint`` beside the output, so that even a SIGKILL of everything leaves the best
  plan on disk (status ``interrupted``, not re-certified: ``deplbench evaluate`` it);
* the first SIGINT or SIGTERM asks the child to stop (SIGINT to its group): the method returns
  its incumbent as ``interrupted``, certified by the evaluator; a child that does not answer within
  :data:`deplbench.watch.STOP_GRACE_S` is killed and the checkpoint is certified instead;
* a second signal ends the command at once (exit status 130; the checkpoint stays);
* a time or memory limit that kills the child also falls back to the checkpoint.

The final plan file replaces the checkpoint, which is then removed.

May import anything of deplbench inside functions (a ``cli`` module).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path

#: suffix of the checkpoint file written beside ``--out``
CHECKPOINT_SUFFIX = ".checkpoint"


def checkpoint_path(out: str) -> Path:
    """The checkpoint file of output ``out``: ``OUT.checkpoint`` in the same folder."""
    return Path(str(out) + CHECKPOINT_SUFFIX)


class CheckpointWriter:
    """A listener of offered incumbents that writes each improvement to the checkpoint file.

    A write that fails (full disk, permissions) is reported once on stderr and never stops
    the method: the checkpoint is a safety net, the final plan file is the result.
    """

    def __init__(self, path: Path, instance, name: str, params: dict, problem: dict):
        self.path, self.instance, self.name = path, instance, name
        self.params, self.problem = params, problem
        self.failed = False

    def __call__(self, item) -> None:
        from deplbench.errors import InputError
        from deplbench.instances.io import save_plan

        plan = item.plan.annotate(instance=self.instance.name, solver=self.name, params=self.params,
                                  status="interrupted", objective=item.objective, **self.problem)
        try:
            save_plan(plan, self.path)
        except (InputError, OSError) as exc:
            if not self.failed:
                text = exc.one_line() if isinstance(exc, InputError) else str(exc)
                print(f"deplbench: warning: checkpoint not written: {text}", file=sys.stderr)
            self.failed = True


def solve_child(name: str, inst, params: dict, checkpoint: str | None, deadline: float | None = None):
    """In the watched child: the method and its certification, incumbents to ``checkpoint``.

    ``deadline``: the ``time.perf_counter()`` value by which the method must end (the command's
    start plus ``--time-limit`` less ``END_SHARE`` of it; :func:`deplbench.registry.solve`). An
    :class:`~deplbench.errors.InputError` comes back as a value (the parent raises it).
    """
    from deplbench.errors import InputError
    from deplbench.incumbent import Best, listening
    from deplbench.registry import get_solver, problem_of, solve

    spec = get_solver(name)
    parsed = spec.parse_params(params)
    writer = CheckpointWriter(Path(checkpoint), inst, name, parsed, problem_of(spec, parsed)) if checkpoint else None
    try:
        with listening(Best(writer) if writer else (lambda item: None)):
            return solve(name, inst, params, deadline=deadline)
    except InputError as exc:
        return exc


def solve_setup(name: str, *_) -> None:
    """In the watched child, before its memory limit: what method ``name`` declares it imports."""
    from deplbench.registry import load_declared

    load_declared(name)


@contextlib.contextmanager
def stop_on_signals(stop):
    """SIGINT and SIGTERM request ``stop`` (first) or end at once (second), inside the block."""

    def handler(signum, frame):
        if stop.at is None:
            stop.request(signum)
            print(f"deplbench: {signal.Signals(signum).name}: stopping, writing the best plan found "
                  "(again to quit at once)", file=sys.stderr)
            return
        raise KeyboardInterrupt

    from deplbench.watch import signals_handled

    with signals_handled(handler):
        yield stop


def from_checkpoint(res, path: Path, inst, name: str, params: dict):
    """``res`` (a stopped result without a plan) with the certified incumbent of the checkpoint, if any."""
    from deplbench.errors import InputError
    from deplbench.instances.io import load_plan
    from deplbench.registry import finish

    if res.plan is not None or not res.status.stopped or not path.is_file():
        return res
    try:
        plan = load_plan(path, inst)
    except (InputError, OSError):
        return res
    if not plan.segments:
        return res
    msg = f"{res.message}; " if res.message else ""
    raw = res.replace(plan=plan, objective=plan.objective, evaluation=None,
                      message=f"{msg}plan is the incumbent from the checkpoint")
    return finish(name, inst, params, raw, res.runtime_s)


def exit_status(stop) -> int:
    """0, or 128 + the signal number when a signal stopped the solve (the plan is written anyway)."""
    return 0 if stop.at is None else 128 + int(stop.signum or signal.SIGINT)
