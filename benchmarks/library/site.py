"""The library's web pages (``site/`` in the library folder): a sortable, filterable table of every
instance, a page per instance (parameters, statistics, reference, files with their SHA-256, SAA
problems, and every method's results when a results folder of ``deplbench run library`` is given),
and the tiers and rules of grading. Written by ``deplbench library build`` and ``deplbench library site``.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from deplbench.benchmarks.library.folder import Library
from deplbench.benchmarks.site.pages import Site, cards, kv, rel
from deplbench.benchmarks.site.tables import html_table
from deplbench.errors import InputError

SITE_DIR = "site"
REF_WORDS = {"opt": "proven optimum", "best": "best known (not proven)", "inf": "proven infeasible",
             "unkn": "unknown"}
#: the columns of an instance page's results, the cost and its ratio first (read on a narrow screen)
RESULT_COLUMNS = ("method", "cost", "ratio", "status", "runtime_s", "feasible", "q_hi", "harness_status")


def _stats(root: Path, rec: dict) -> dict:
    """Size figures of an instance, read from its JSON file (empty when it cannot be read)."""
    try:
        data = json.loads((root / rec["file"]).read_text())
    except (OSError, ValueError):
        return {}
    levels = sum(len(c.get("levels", [])) for c in data.get("clusters", []))
    return {"models": len(data.get("models", [])), "clusters": len(data.get("clusters", [])), "options": levels,
            "datasets": len(data.get("datasets", [])), "epochs": data.get("max_epochs"),
            "noise_mode": data.get("noise_mode"), "target": data.get("loss", {}).get("target"),
            "quantile": data.get("loss", {}).get("quantile"), "time_budget": data.get("time_budget")}


def _results(results: Path | None) -> pd.DataFrame:
    """The library runs of a results folder (empty without one)."""
    if results is None:
        return pd.DataFrame()
    from deplbench.benchmarks.harness.frame import prepare
    from deplbench.benchmarks.harness.store import Store

    if not (Path(results) / "results.duckdb").is_file():
        raise InputError("not a results folder of 'deplbench run' (no results.duckdb)", str(results))
    with Store(Path(results), read_only=True) as st:
        runs = prepare(st.runs())
    return runs[runs["family"] == "library"] if "family" in runs else runs.iloc[0:0]


def build_library_site(root: str | Path, results: str | Path | None = None) -> Path:
    """Write ``root/site`` for the library in ``root`` (with the runs of ``results`` if given); its index."""
    lib = Library.open(root)
    root = Path(root)
    man = lib.manifest
    runs = _results(Path(results) if results else None)
    try:
        timings = json.loads((root / "timings.json").read_text()).get("instances", {})
    except (OSError, ValueError):
        timings = {}
    site = Site(root / SITE_DIR, f"DepL instance library {man.get('version', '')}",
                nav=[("Instances", "index.html"), ("Tiers and rules", "rules.html")],
                footer="depl-bench instance library: every file is local; click a header to sort a table.")
    site.start(plotly=False)
    recs = man["instances"]
    rows, pages = [], {}
    for rec in recs:
        st = _stats(root, rec)
        ref = rec["reference"]
        pages[rec["name"]] = f"instances/{rec['name']}.html"
        rows.append({"instance": rec["name"], "download": rec["file"], "family": rec["family"], "models": st.get("models"),
                     "clusters": st.get("clusters"), "epochs": st.get("epochs"), "tier": rec["tier"],
                     "ref_kind": REF_WORDS.get(ref["kind"], ref["kind"]), "ref_value": ref.get("value", math.nan),
                     "proving_method": rec.get("method") or "-", "proof_work": rec.get("proof_work"),
                     "proof_s": (timings.get(rec["name"], {}) or {}).get("proof_s")})
        _instance_page(site, root, rec, st, runs, timings.get(rec["name"], {}))
    table = pd.DataFrame(rows)
    tiers = table["tier"].value_counts() if len(table) else pd.Series(dtype=int)
    ran = (f" The results of {runs['method'].nunique()} methods on {runs['instance'].nunique()} "
           "instances are on the instances' pages." if len(runs) else "")
    body = [cards([(str(len(recs)), "instances"), *[(str(int(tiers.get(t, 0))), f"tier {t}")
                                                    for t in ("easy", "medium", "hard")],
                   (str(sum(1 + len(r["saa"]) for r in recs)), "problems with a reference")]),
            "<p>Every instance with its reference and tier; a click on its name opens its page (files, checksums, "
            f"SAA problems), <i>JSON</i> downloads it.{html.escape(ran)}</p>",
            html_table(table, "Instances (sizes from the instance files; work in units of about 1 ms of the "
                              "reference machine; time to prove measured by the build)",
                       table_id="instances", best=False,
                       links={"instance": lambda v: pages.get(v), "download": lambda v: rel("index.html", "../" + v)},
                       texts={"download": lambda v: "JSON"}, wrap=("instance",), filter_box=True),
            "<p>An instance's reference is the first proof of an exact method, in a fixed order, or else a family "
            "proof such as the knapsack reduction's; the deterministic work of its least-work proof grades the "
            "tier, and that proof's measured time is reported only. "
            f"Reference lines: <a href='{html.escape(rel('index.html', '../' + man['solu']))}'>library.solu</a>; "
            f"everything else: <a href='{html.escape(rel('index.html', '../manifest.json'))}'>manifest.json</a>. "
            "Tiers and the rules of grading: <a href='rules.html'>Tiers and rules</a>.</p>"]
    index = site.page("index.html", site.title, "".join(body))
    _rules_page(site, man, tiers)
    return index


def _instance_page(site: Site, root: Path, rec: dict, st: dict, runs: pd.DataFrame, timing: dict) -> None:
    page = f"instances/{rec['name']}.html"
    ref = rec["reference"]
    facts = [("family", rec["family"]), ("seed", str(rec.get("seed", "-"))), ("tier", rec["tier"]),
             ("reference", f"{REF_WORDS.get(ref['kind'], ref['kind'])}"
                           + (f": {ref['value']:.10g}" if ref.get("value") is not None else "")
                           + (f", lower bound {ref['bound']:.10g}" if ref.get("bound") is not None else "")),
             ("proving method", f"{rec.get('method') or '-'} {json.dumps(rec.get('method_params', {}))}"),
             ("work of the proof", f"{rec['proof_work']:,} units (grades the tier)"
              if rec.get("proof_work") is not None else "not proven" if rec["tier"] == "hard" else "not reported"),
             ("time to prove", f"{timing['proof_s']:.2f} s (this build's machine; reported only)"
              if timing.get("proof_s") is not None else "-"),
             ("budget", str(rec.get("entry", {}).get("budget", 1)))]
    params = [(f"parameter {k}", json.dumps(v)) for k, v in sorted(rec.get("params", {}).items())]
    stats = [(k.replace("_", " "), f"{v:g}" if isinstance(v, float) else str(v)) for k, v in st.items()]
    files = [("instance (JSON)", rec["file"], rec["sha256"])]
    if rec.get("solution"):
        files.append(("reference plan", rec["solution"], rec["solution_sha256"]))
    for s in rec["saa"]:
        files.append((f"SAA MPS, S={s['scenarios']}, {s['formulation']}", s["file"], s["sha256"]))
        if s.get("solution"):
            files.append((f"SAA solution, S={s['scenarios']}, {s['formulation']}", s["solution"], s["solution_sha256"]))
    e = html.escape
    file_rows = "".join(f"<tr><td class='what'>{e(k)}</td><td class='file'><a href='{e(rel(page, '../' + f))}'>"
                        f"{e(f)}</a><br><code class='sha'>{e(h)}</code></td></tr>" for k, f, h in files)
    saa = pd.DataFrame([{"problem": s["name"], "S": s["scenarios"], "seed": s["scenario_seed"],
                         "formulation": s["formulation"], "columns": s.get("columns"), "rows": s.get("rows"),
                         "ref_kind": REF_WORDS.get(s["reference"]["kind"], s["reference"]["kind"]),
                         "ref_value": s["reference"].get("value", math.nan)} for s in rec["saa"]])
    body = ["<h2>Facts</h2>", kv(facts + stats + params),
            "<h2>Files</h2><div class='tablebox'><div class='scroll'><table class='data'><thead><tr>"
            "<th class='txt'>What</th><th class='txt'>File and its SHA-256</th></tr></thead><tbody>"
            f"{file_rows}</tbody></table></div></div>"]
    if len(saa):
        body += ["<h2 id='saa-problems'>SAA problems (MPS files)</h2>", html_table(saa, "The SAA MILP of the instance on a sample of "
                                                                   "S scenarios; its own reference", table_id="saa",
                                                                 best=False, wrap=("problem",))]
    mine = runs[runs["instance"] == rec["name"]] if len(runs) else runs
    body.append("<h2 id='results'>Results of the methods</h2>")
    if len(mine):
        value = ref.get("value")
        tab = mine.assign(ratio=mine["cost"] / value if value else math.nan)
        tab = tab[[c for c in RESULT_COLUMNS if c in tab.columns]].sort_values("method")
        body.append(html_table(tab, "Every run of the results folder on this instance; cost / reference value",
                               table_id="runs"))
    else:
        body.append("<p class='note'>No results: rebuild the pages with <code>deplbench library site --results DIR"
                    "</code> after <code>deplbench run library --out DIR</code>.</p>")
    site.page(page, rec["name"], "".join(body), crumbs=[("Instances", "index.html")])


def _rules_page(site: Site, man: dict, tiers: pd.Series) -> None:
    r = man.get("rules", {})
    easy = r.get("easy_work", 60_000)
    body = ["<h2>Tiers</h2>", html_table(pd.DataFrame([
        {"tier": "easy", "instances": int(tiers.get("easy", 0)),
         "rule": f"reference proven by an exact method within {easy:,} work units (60 s of the reference machine)"},
        {"tier": "medium", "instances": int(tiers.get("medium", 0)),
         "rule": "proven with more work, within the deterministic limits, or by a family proof (knapsack-dp)"},
        {"tier": "hard", "instances": int(tiers.get("hard", 0)), "rule": "not proven within the limits (open)"}]),
        "Graded by the deterministic work of the least-work proof (the same on every machine and load; "
        "formulations/exact/work.py), not by the clock",
        table_id="tiers", best=False),
        "<h2>Rules of the build</h2>", kv([(k.replace("_", " "), json.dumps(v)) for k, v in sorted(r.items())]),
        "<h2>Reference kinds (library.solu)</h2>", kv([(f"={k}=", v) for k, v in REF_WORDS.items()]),
        "<p>An instance's reference is the first proof of the exact methods run in a fixed order (bruteforce, "
        "then exact), under deterministic limits (sequence cap, work limit), or else a family proof (the knapsack "
        "reduction's dynamic programs, checked against the searches where both prove); wall-clock limits are "
        "safety nets only. "
        "An MPS file's reference is HiGHS's proof on the same sample. Tiers are graded by deterministic work; "
        "every checksummed file and the manifest are byte-identical across builds unless a safety time limit "
        "fired (the build says so; docs/library.md).</p>"]
    if man.get("notes"):
        body += ["<h2>Notes of this build</h2>", "<ul>" + "".join(f"<li>{html.escape(n)}</li>"
                                                                  for n in man["notes"]) + "</ul>"]
    site.page("rules.html", "Tiers and rules", "".join(body), crumbs=[("Instances", "index.html")])
