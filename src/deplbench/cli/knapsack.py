"""``deplbench reduce-knapsack KNAPSACK.json --out INSTANCE.json``: Property 1's reduction.

The knapsack file is ``{"values": [...], "weights": [...], "capacity": W, "threshold": V}``
(positive integers). The written instance is feasible iff some item counts reach value
>= V within weight W; its metadata stores the knapsack data, the answer and the DepL
optimum (fewest items). See :mod:`deplbench.formulations.knapsack` and docs/knapsack.md.
"""

from __future__ import annotations

from pathlib import Path


def cmd_reduce_knapsack(args) -> int:
    from deplbench.files import check_output_path
    from deplbench.formulations.knapsack import check_knapsack, reduce_knapsack
    from deplbench.instances.io import read_json, save_instance

    check_output_path(args.out)
    kp = check_knapsack(read_json(args.knapsack), str(args.knapsack))
    inst = reduce_knapsack(kp, args.name or f"knapsack-{Path(args.knapsack).stem}")
    save_instance(inst, args.out)
    md = inst.metadata
    answer = "yes" if md["knapsack_answer"] else "no"
    opt = f", DepL optimum {md['known_optimum']:g} (fewest items)" if md["knapsack_answer"] else ""
    print(f"wrote {args.out} ({inst.name}: {kp.n} items, knapsack answer {answer}{opt})")
    return 0


def register(subparsers) -> None:
    s = subparsers.add_parser("reduce-knapsack", help="reduce an unbounded knapsack instance to a DepL instance")
    s.add_argument("knapsack", help='JSON file {"values", "weights", "capacity", "threshold"}')
    s.add_argument("--out", required=True)
    s.add_argument("--name", default=None, help="instance name (default: knapsack-FILESTEM)")
    s.set_defaults(func=cmd_reduce_knapsack)
