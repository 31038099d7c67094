"""``deplbench warmup [CONFIG]``: fill the compile caches of a config's methods now, outside any run's clock.

``deplbench run`` does the same before its first run (``process.warm_caches``); this command does it
ahead of time, e.g. right after an install, and prints how long it took (a cold numba cache: about a
minute on a 2-core machine; warm: a few seconds).
"""

from __future__ import annotations

DEFAULT_CONFIG = "paper"


def cmd_warmup(args) -> int:
    from deplbench.benchmarks.harness.config import load_config
    from deplbench.benchmarks.harness.process import grid_preload, warm_caches, warm_up

    cfg = load_config(args.config)
    preload = grid_preload(cfg.runs)
    warm_up(preload)
    seconds = warm_caches(cfg.runs, preload)
    methods = sorted({r.solver for r in cfg.runs})
    print(f"{cfg.name}: compile caches of {len(methods)} methods ({', '.join(methods)}) ready in {seconds:.1f} s")
    return 0


def register(subparsers) -> None:
    """Add the ``warmup`` command."""
    s = subparsers.add_parser("warmup", help="fill the compile caches of a config's methods (before `run`)")
    s.add_argument("config", nargs="?", default=DEFAULT_CONFIG,
                   help=f"config file or shipped config name (default: {DEFAULT_CONFIG})")
    s.set_defaults(func=cmd_warmup)
