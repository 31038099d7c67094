"""``deplbench export``: write the SAA MILP of an instance as an MPS (free or fixed format) or LP file.

One file holds the MILP of one dataset selection (g and Q are fixed per selection):
``--datasets a,b`` chooses it; by default every dataset is selected. Solving the file
with any MILP solver gives the optimum of the SAA restricted to that selection, on the
scenarios ``sample_scenarios(instance, S, seed)`` that every ``milp-*`` method uses.
"""

from __future__ import annotations

from pathlib import Path

from deplbench.errors import InputError


def export_model(instance, out: str | Path, *, formulation: str = "aggregated", scenarios: int = 200,
                 seed: int = 0, datasets: tuple[str, ...] | None = None, fixed: bool = False):
    """Write the SAA MILP to ``out`` (``.mps`` or ``.lp``); return (columns, rows, the MPS text's facts or None).

    ``fixed``: fixed-format MPS (:mod:`deplbench.formulations.saa.mps_text`), else free format
    with exact numbers; the file's ``NAME`` is the instance's name.
    """
    from deplbench.formulations.saa.io import write_model
    from deplbench.formulations.saa.model import FORMULATIONS, build, subset_data
    from deplbench.instances.scenarios import sample_scenarios
    from deplbench.instances.semantics import data_effect

    out = Path(out)
    if out.suffix.lower() not in (".mps", ".lp"):
        raise InputError("the output file must end in .mps or .lp", "--out")
    if formulation not in FORMULATIONS:
        raise InputError(f"formulation must be one of {', '.join(FORMULATIONS)}", "--formulation")
    if fixed and out.suffix.lower() != ".mps":
        raise InputError("--format fixed needs an .mps output file", "--format")
    if scenarios < 1:
        raise InputError("scenarios must be >= 1", "--scenarios")
    ds = tuple(datasets) if datasets else instance.dataset_ids
    for d in ds:
        if d not in instance.dataset_by_id:
            raise InputError(f"unknown dataset '{d}'", "--datasets")
    if len(set(ds)) != len(ds):
        raise InputError("a dataset is listed twice", "--datasets")
    if not data_effect(instance, ds).g > 0:
        raise InputError(f"the selection {','.join(ds)} has g <= 0 (no plan can use it)", "--datasets")
    data = subset_data(instance, ds, sample_scenarios(instance, scenarios, seed))
    model = build(data, formulation, names=True)
    facts = write_model(model, out, name=instance.name, fixed=fixed)
    return model.n_vars, model.n_cons, facts


def cmd_export(args) -> int:
    from deplbench.files import check_output_path
    from deplbench.instances.io import load_instance

    check_output_path(args.out)
    inst = load_instance(args.instance)
    ds = tuple(d.strip() for d in args.datasets.split(",")) if args.datasets else None
    n, m, facts = export_model(inst, args.out, formulation=args.formulation, scenarios=args.scenarios,
                               seed=args.seed, datasets=ds, fixed=args.format == "fixed")
    note = ""
    if facts is not None and args.format == "fixed":
        note = ("; every number exact" if facts.exact else
                f"; {facts.rounded} numbers rounded to 12 characters (largest relative change "
                f"{facts.max_rel_change:.1e}){', long names as C<index>' if facts.renamed else ''}: "
                f"--format free writes them exactly")
    print(f"wrote {args.out} ({n} columns, {m} rows{note})")
    return 0


def register(subparsers) -> None:
    """Add the ``export`` command."""
    from deplbench.cli.args import MAX_SCENARIOS, int_in, nonneg_int

    s = subparsers.add_parser("export", help="write the SAA MILP of an instance as .mps or .lp")
    s.add_argument("instance")
    s.add_argument("--formulation", default="aggregated", choices=["aggregated", "time_indexed"])
    s.add_argument("--scenarios", type=int_in(1, MAX_SCENARIOS), default=200)
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--datasets", default=None, help="comma-separated selection (default: all)")
    s.add_argument("--format", default="free", choices=["free", "fixed"],
                   help="MPS layout: free (exact numbers) or fixed (any MPS reader, numbers within 12 characters)")
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_export)
