"""``deplbench report``: a report built from a synthetic, schema-true store has the right numbers."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks.harness.frame import prepare
from deplbench.benchmarks.harness.store import Store
from deplbench.benchmarks.report.comparison import comparison_table, performance_ratios
from deplbench.benchmarks.report.paper_figures import loss_paths
from deplbench.benchmarks.report.ratios import heuristic_ratios
from deplbench.benchmarks.report.references import references
from deplbench.benchmarks.report.write import build_report, fmt
from deplbench.cli import main
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.families.paper import load_paper
from deplbench.instances.plan import Plan, Segment

FU, IM, A = "fast-unsteady", "intermediate", "A-class"
MODEL_MD_PLAN = Plan(("cifar10",), (Segment(FU, A, 0.5, 5), Segment(FU, A, 0.6, 2), Segment(IM, A, 0.4, 18)))


def simple(model: str, level: float, k: int) -> Plan:
    return Plan.from_epochs(["cifar10"], [(model, A, level)] * k)


# instance -> (optimum plan, depl plan, best-exp plan); the evaluator decides their figures
PLANS = {
    "paper-alexnet-per_run-t9": (MODEL_MD_PLAN, simple(FU, 0.6, 22), simple(IM, 0.5, 32)),
    "paper-alexnet-per_run-t11": (simple(FU, 0.5, 16), simple(IM, 0.4, 23), simple(FU, 0.6, 16)),
    "paper-alexnet-per_epoch-t9": (simple(FU, 0.4, 14), simple(FU, 0.5, 14), simple(FU, 0.4, 10)),
    "paper-mobilenet-per_epoch-t9": (simple(FU, 0.4, 22), simple(FU, 0.5, 22), simple(IM, 0.4, 37)),
}
NO_PROOF = "paper-mobilenet-per_epoch-t9"  # bruteforce times out there: the optimum is an interval
BOUND = 500.0
# runtimes (s) of the paper experiment, per solver, in PLANS order
TIMES = {"bruteforce": [3.0, 12.0, 0.5, 40.0], "depl": [0.2, 0.3, 0.25, 0.4], "best-exp": [0.01, 0.02, 0.01, 0.03],
         "milp-highs": [30.0, 7.0, 2.0, 60.0]}
LIMIT = 60.0
ETAS = [10, 20, 50, 100, 200, 400]
PARAM_KEYS = ("eta", "eps", "scenarios", "formulation")


class Rows:
    """Builds schema-true rows: every certified column comes from the evaluator on a real plan."""

    def __init__(self, store: Store):
        self.store, self.n = store, 0

    def put(self, inst_name: str | None, solver: str, kind: str, plan: Plan | None = None, **kw) -> dict:
        self.n += 1
        params = {"time_limit": kw.pop("time_limit", LIMIT), "seed": 0, "threads": 1}
        params.update({k: kw.pop(k) for k in PARAM_KEYS if k in kw})  # store rows carry parameters as JSON
        row = {"run_key": f"k{self.n}", "config": "test", "solver": solver, "solver_kind": kind,
               "harness_status": "ok", "status": "optimal" if kind != "heuristic" else "feasible",
               "params": json.dumps(params), "repetition": 0}
        if inst_name is not None and inst_name.startswith("paper-"):
            inst = load_paper(inst_name)
            self.store.put_instance(inst, inst.metadata["family"])
            row.update({"family": inst.metadata["family"], "instance": inst.name, "noise_mode": inst.noise_mode,
                        "target": inst.loss.target, "n_models": 3, "n_clusters": 2, "n_datasets": 1,
                        "n_options": 20, "max_epochs": inst.max_epochs})
            if plan is not None:
                ev = evaluate(inst, plan, samples=0)
                row.update({"plan_json": json.dumps(plan.to_json_dict()), "feasible": ev.feasible,
                            "violations": ",".join(ev.violations), "cost": ev.cost, "time": ev.time,
                            "compute_cost": ev.compute_cost, "transfer_cost": ev.transfer_cost,
                            "epochs": ev.epochs, "loss_mean": ev.loss_mean, "q_lo": ev.quantile_bounds[0],
                            "q_hi": ev.quantile_bounds[1], "objective": ev.cost * 0.97})
        row.update(kw)
        self.store.put_run(row)
        return row


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("run")
    with Store(root) as st:
        r = Rows(st)
        for i, (name, (opt, dep, bex)) in enumerate(PLANS.items()):
            exp = {"experiment": "main"}
            if name == NO_PROOF:
                r.put(name, "bruteforce", "exact", dep, status="timeout", bound=BOUND, runtime_s=LIMIT, **exp)
            else:
                r.put(name, "bruteforce", "exact", opt, runtime_s=TIMES["bruteforce"][i], gap=0.0, **exp)
            extra = json.dumps({"submod_violation": 0.1 * (i + 1)}) if "alexnet" in name else None
            r.put(name, "depl", "heuristic", dep, eta=200.0, eps=0.05, runtime_s=TIMES["depl"][i],
                  extra_json=extra, **exp)
            r.put(name, "best-exp", "heuristic", bex, runtime_s=TIMES["best-exp"][i], **exp)
            timeout = i == 3
            r.put(name, "milp-highs", "saa", dep if timeout else opt, scenarios=100, formulation="compact",
                  status="timeout" if timeout else "optimal", runtime_s=TIMES["milp-highs"][i],
                  gap=0.2 if timeout else 1e-4, **exp)
            for eta, plan in ((10.0, bex), (50.0, dep)):  # the ratio study on the same instances
                r.put(name, "depl", "heuristic", plan, eta=eta, eps=0.05, runtime_s=0.01 * eta, experiment="ratio")
        rng = np.random.default_rng(1)  # scaling: runtime ~ eta^2 on a synthetic random family
        for eta in ETAS:
            stages = {"t_stage1_s": 0.01 * math.exp(rng.normal(0, 0.05)),  # per-stage outputs: one flat,
                      "t_stage2_s": 1e-5 * eta ** 2 * math.exp(rng.normal(0, 0.05))}  # one ~ eta^2
            r.put(None, "depl", "heuristic", None, eta=float(eta), eps=0.05, family="random", instance=f"rnd-{eta}",
                  n_models=4, n_clusters=3, n_datasets=2, max_epochs=20, experiment="scaling-eta",
                  runtime_s=2e-5 * eta ** 2 * math.exp(rng.normal(0, 0.1)), extra_json=json.dumps(stages))
        r.put(None, "depl", "heuristic", None, eta=800.0, eps=0.05, family="random", instance="rnd-800",
              n_models=4, n_clusters=3, n_datasets=2, max_epochs=20, experiment="scaling-eta",
              harness_status="timeout", status=None, runtime_s=None, time_limit=5.0)
    return root


@pytest.fixture(scope="module")
def report(store_dir) -> tuple[Path, str, pd.DataFrame]:
    html = build_report(store_dir)
    with Store(store_dir, read_only=True) as st:
        runs = st.runs()
    return html, (html.parent / "report.md").read_text(), runs


class _Row(dict):
    """A table row of ``report.md`` (keyed by its headers in words), read by raw column names too."""

    def __getitem__(self, key):
        from deplbench.benchmarks.site.labels import header

        return super().__getitem__(key if key in self else header(key))


def _md_row(md: str, first_cell: str, after: str) -> dict[str, str]:
    """Column -> cell of the first row starting with ``first_cell`` in the first table after ``after``."""
    lines = [ln for ln in md[md.index(after):].splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    head = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == first_cell:
            return _Row(zip(head, cells, strict=True))
    raise AssertionError(f"no row {first_cell!r} in the table after {after!r}")


@pytest.mark.slow
def test_files_exist_and_figures_embedded(report):
    html, md, _ = report
    out = html.parent
    assert html.exists() and (out / "report.md").exists()
    figs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)
    assert len(figs) >= 8  # profile, ratio, scaling, 4 paper figures per network
    for f in figs:
        assert (out / f).stat().st_size > 1000
        assert (out / f).with_suffix(".svg").exists()
    text = html.read_text()
    assert text.count("data:image/png;base64,") == len(figs)
    assert "could not be built" not in md
    assert md.index("## Paper reproduction: headline") < md.index("## Runs in this store")


@pytest.mark.slow
def test_headline_uses_certified_figures(report):
    _, md, runs = report
    evald = runs[runs["experiment"] == "main"]
    for name in PLANS:
        g = evald[evald["instance"] == name]
        opt = g[(g.solver == "bruteforce") & (g.status == "optimal")]["cost"]
        ref = opt.iloc[0] if len(opt) else g[g["feasible"]]["cost"].min()
        dep = g[g.solver == "depl"].iloc[0]
        bex = g[g.solver == "best-exp"].iloc[0]
        inst = load_paper(name)
        net = name.split("-")[1]
        row = [c for c in md.splitlines() if c.startswith(f"| {net} | {inst.noise_mode} | {inst.loss.target:g} |")]
        assert len(row) == 1
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        assert cells[3] == fmt(float(ref))
        assert cells[5] == fmt(float(dep["cost"])) and cells[6] == fmt(float(dep["cost"] / ref))
        assert cells[7] == fmt(float(dep["q_hi"]))
        assert cells[9] == fmt(float(bex["cost"])) and cells[10] == fmt(float(bex["cost"] / ref))
        assert ("best-exp infeasible" in cells[-1]) == (not bex["feasible"])
        assert ("optimum not proven" in cells[-1]) == (name == NO_PROOF)
    assert not runs.loc[(runs.instance == "paper-alexnet-per_epoch-t9") & (runs.solver == "best-exp"),
                        "feasible"].iloc[0]  # the fixture really has an infeasible plan to flag


def _sgm(x) -> float:
    return math.exp(sum(math.log(t + 10.0) for t in x) / len(x)) - 10.0


@pytest.mark.slow
def test_solver_comparison(report):
    _, md, runs = report
    bf = [t for t, n in zip(TIMES["bruteforce"], PLANS, strict=True) if n != NO_PROOF] + [LIMIT]
    cells = _md_row(md, "bruteforce", "*Experiment test/main*")
    assert cells["sgm_time_s"] == fmt(_sgm(bf))
    assert cells["solved"] == "3" and cells["timeouts"] == "1"
    highs = _md_row(md, "milp-highs[scenarios=100,formulation=compact]", "*Experiment test/main*")
    assert highs["sgm_time_s"] == fmt(_sgm(TIMES["milp-highs"][:3] + [LIMIT]))
    d = prepare(runs[runs.experiment == "main"])
    tab = comparison_table(d).set_index("method")
    assert tab.loc["bruteforce", "wins_cost"] == 4  # cheapest everywhere (its incumbent ties depl once)
    assert tab.loc["best-exp", "infeasible_plans"] == 1
    solved = d[d["solved"]]
    fastest = solved.loc[solved.groupby("instance")["runtime_s"].idxmin(), "method"]
    for m in tab.index:
        assert tab.loc[m, "wins_time"] == (fastest == m).sum()
    assert tab.loc["best-exp", "wins_time"] == 3  # its plan is infeasible on the 4th instance
    r = performance_ratios(d)
    assert np.isinf(r.loc[NO_PROOF, "bruteforce"]) and (r.min(axis=1)[np.isfinite(r.min(axis=1))] == 1).all()


@pytest.mark.slow
def test_ratio_and_stated_bound(report):
    _, md, runs = report
    feas = runs[runs["feasible"].fillna(False).astype(bool)]
    for eta in (10.0, 50.0, 200.0):
        ratios = []
        for name in PLANS:
            g = feas[feas.instance == name]
            dep = g[(g.solver == "depl") & (g.p_eta == eta)]
            if dep.empty:
                continue
            proven = g[(g.solver == "bruteforce") & (g.status == "optimal")]
            ref = proven["cost"].iloc[0] if len(proven) else g["cost"].min()
            ratios.append(dep["cost"].iloc[0] / ref)
        row = _md_row(md, f"{eta:g}", "*Measured ratio per (eta, eps): depl*")
        assert row["mean_ratio"] == fmt(float(np.mean(ratios))) and row["max_ratio"] == fmt(float(np.max(ratios)))
        assert row["stated_(1+eps)/eta"] == fmt((1 + 0.05) / eta)
        assert row["within_stated"] == "0"  # no measured ratio is within the impossible bound
    assert "impossible" in md


@pytest.mark.slow
def test_ratio_interval_without_proof(report):
    _, _, runs = report
    d = prepare(runs)
    refs = references(d)
    ref = refs.loc[NO_PROOF]
    assert not ref["proven"] and ref["ref_lo"] == BOUND
    assert ref["ref_hi"] == d[(d.instance == NO_PROOF) & d.feasible.fillna(False).astype(bool)]["cost"].min()
    rat = heuristic_ratios(d, refs)
    r = rat[(rat.instance == NO_PROOF) & (rat.solver == "depl") & (rat.eta == 200)].iloc[0]
    cost = d[(d.instance == NO_PROOF) & (d.solver == "depl") & (d.p_eta == 200)]["cost"].iloc[0]
    assert r["ratio_lo"] == pytest.approx(cost / ref["ref_hi"]) and r["ratio_hi"] == pytest.approx(cost / BOUND)


@pytest.mark.slow
def test_scaling_fit_excludes_censored(report):
    _, md, runs = report
    g = runs[(runs.experiment == "scaling-eta") & (runs.harness_status == "ok")]
    slope = np.polyfit(np.log(g["p_eta"]), np.log(g["runtime_s"]), 1)[0]
    cells = _md_row(md, "depl", "*Fitted exponents*")
    assert cells["variable"] == "eta" and cells["points"] == str(len(ETAS)) and cells["censored"] == "1"
    assert cells["exponent"] == fmt(float(slope))
    lo, hi = float(cells["ci95_lo"]), float(cells["ci95_hi"])
    assert lo < 2.0 < hi and hi - lo < 0.5
    assert cells["claimed_P2"] == "-4" and cells["corrected"] == "2"


@pytest.mark.slow
def test_claims_submodularity(report):
    _, md, _ = report
    at = "*Largest submodularity violation per family*"
    assert _md_row(md, "paper-alexnet", at)["max_violation"] == fmt(0.3)  # max of 0.1, 0.2, 0.3
    assert _md_row(md, "paper-alexnet", at)["instances_checked"] == "3"
    assert _md_row(md, "paper-mobilenet", at)["verdict"] == "not measured"


def test_loss_paths_match_evaluator():
    inst = load_paper("paper-alexnet-per_run-t9")
    ev = evaluate(inst, MODEL_MD_PLAN, samples=0)
    paths = loss_paths(inst, MODEL_MD_PLAN, 40000, seed=3)
    assert paths.shape == (40000, MODEL_MD_PLAN.n_epochs + 1) and (paths[:, 0] == 20.0).all()
    final = paths[:, -1]
    assert abs(final.mean() - ev.loss_mean) < 4 * final.std() / math.sqrt(len(final))
    lo, hi = ev.quantile_bounds
    assert lo - 0.05 < np.quantile(final, 0.99) < hi + 0.05


def test_missing_data_and_bad_folder(tmp_path, capsys):
    with Store(tmp_path / "few") as st:
        Rows(st).put(None, "depl", "heuristic", None, eta=200.0, eps=0.05, family="random", instance="x",
                     runtime_s=0.1)
    assert main(["report", str(tmp_path / "few"), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "No runs on the paper families" in md and "could not be built" not in md
    assert (tmp_path / "rep" / "report.html").exists()
    assert main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no result store" in err[0]


def test_submodularity_computed_when_runs_lack_it():
    from deplbench.benchmarks.report.claims import submodularity
    from deplbench.heuristics.datasets import selection as stage1
    from deplbench.registry import generate

    insts = {f"r{n}": generate("random", {"datasets": str(n)}, seed=n) for n in (3, 4)}
    d = pd.DataFrame([{"family": "random", "instance": name, "n_datasets": len(i.datasets), "extra_json": None}
                      for name, i in insts.items()])

    class Get(dict):
        def __call__(self, name):
            return self[name]

    tab, source = submodularity(d, Get(insts))
    want = max(stage1.submodularity_report(i) for i in insts.values())
    row = tab.set_index("family").loc["random"]
    assert "computed here" in source and row["instances_checked"] == 2
    assert row["max_violation"] == pytest.approx(want)
    assert row["verdict"] == ("violated" if want > 1e-9 else "submodular on every instance checked")


@pytest.mark.slow
def test_calibration_figures_included(store_dir, tmp_path, monkeypatch):
    import importlib.machinery
    import shutil
    import sys
    import types

    import matplotlib.pyplot as plt

    from deplbench.benchmarks.report import builtin as report_sections
    from deplbench.benchmarks.report import write as rep

    def make_figures(params_path, out_dir):  # writes one real PNG per parameter file
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        fig = plt.figure()
        fig.gca().set_title(json.loads(Path(params_path).read_text())["name"])
        fig.savefig(out_dir / "calibration-noise.png")
        plt.close(fig)
        return [out_dir / "calibration-noise.png"]

    mod = types.ModuleType("fake_calibration_plots")
    mod.__spec__ = importlib.machinery.ModuleSpec("fake_calibration_plots", None)
    mod.make_figures = make_figures
    monkeypatch.setitem(sys.modules, "fake_calibration_plots", mod)
    monkeypatch.setattr(report_sections, "CALIBRATION_MODULE", "fake_calibration_plots")
    root = tmp_path / "run"
    shutil.copytree(store_dir, root, ignore=shutil.ignore_patterns("report"))
    (root / "calibration").mkdir()
    (root / "calibration" / "alexnet.json").write_text(json.dumps({"name": "alexnet"}))
    md = (rep.build_report(root).parent / "report.md").read_text()
    assert "## Calibration" in md and "figures/calibration_alexnet/calibration-noise.png" in md
    assert (root / "report" / "figures" / "calibration_alexnet" / "calibration-noise.png").exists()


def _md_rows(md: str, after: str) -> list[dict[str, str]]:
    """Every row of the first table after ``after``, as column -> cell."""
    lines = md[md.index(after):].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    head = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        out.append(_Row(zip(head, [c.strip() for c in line.strip().strip("|").split("|")], strict=True)))
    return out


@pytest.mark.slow
def test_per_stage_exponents_beside_prediction(report):
    _, md, runs = report
    rows = {(r["stage"], r["variable"]): r for r in _md_rows(md, "*Fitted per-stage exponents*")}
    g = runs[(runs.experiment == "scaling-eta") & runs["x_t_stage2_s"].notna()]
    for stage, predicted in (("stage2", "2"), ("stage1", "0 (not driven)")):
        slope = np.polyfit(np.log(g["p_eta"]), np.log(g[f"x_t_{stage}_s"]), 1)[0]
        row = rows[(stage, "eta")]
        assert row["predicted"] == predicted and row["exponent"] == fmt(float(slope))
    assert abs(float(rows[("stage2", "eta")]["exponent"]) - 2) < 0.05 and float(rows[("stage2", "eta")]["r2"]) > 0.99
    assert abs(float(rows[("stage1", "eta")]["exponent"])) < 0.1


def test_dataset_choice_claim_counts_mismatches():
    from deplbench.benchmarks.report.claims import dataset_claims

    def row(inst, solver, kind, ds, cost):
        return {"instance": inst, "solver": solver, "method": solver, "solver_kind": kind, "family": "random",
                "n_datasets": 2, "feasible": True, "status": "optimal" if kind == "exact" else "feasible",
                "cost": cost, "plan_json": json.dumps({"datasets": ds, "segments": []})}

    d = pd.DataFrame([row("i1", "exact", "exact", ["a"], 100.0), row("i1", "depl", "heuristic", ["b"], 110.0),
                      row("i2", "exact", "exact", ["a", "b"], 50.0), row("i2", "depl", "heuristic", ["b", "a"], 50.0)])
    refs = references(d.assign(known_optimum=np.nan, bound=np.nan))
    r = dataset_claims(d, refs).iloc[0]
    assert r["measured"] == "differs on 1/2; cost ratio there mean 1.100, max 1.100" and r["verdict"] == "refuted"
