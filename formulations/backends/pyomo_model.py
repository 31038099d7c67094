"""The SAA MILP written algebraically in Pyomo (the model of ``milp-highs``).

The same formulations as :mod:`deplbench.formulations.saa.model` (same variables, rows, big-M
and cuts; ``docs/formulations.md``), written as Pyomo components: the readable reference and the
yardstick of the direct build's speed. Imported by :mod:`~deplbench.formulations.backends.milp_highs`
when the method runs.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from deplbench.formulations.saa.data import ROWS_PER_CHECK, check_deadline
from deplbench.formulations.saa.model import SubsetData, decode_aggregated, decode_time_indexed


def build_pyomo(data: SubsetData, formulation: str, margin: float = 0.0,
                deadline: float = math.inf) -> pyo.ConcreteModel:
    """The SAA MILP of one dataset selection as a Pyomo model (``PastDeadline`` past ``deadline``;
    at S = 20,000 the scenario rows take about 15 s)."""
    S, M, K = data.imp.shape
    P, NO = len(data.switches), len(data.opts)
    cost, tm, ci = data.opts.cost, data.opts.time, data.opts.cluster_index
    plan = data.row_plan(margin)
    agg_runs = data.per_run
    mdl = pyo.ConcreteModel()
    mdl.K, mdl.M, mdl.NO, mdl.P, mdl.S = (pyo.RangeSet(0, n - 1) for n in (K, M, NO, P, S))
    mdl.K2 = pyo.RangeSet(1, K - 1)  # epochs 2..K (0-based 1..K-1): where switches happen
    mdl.z = pyo.Var(mdl.K, mdl.M, domain=pyo.Binary)
    mdl.w = pyo.Var(mdl.K2, mdl.P, bounds=(0, 1))
    mdl.v = pyo.Var(mdl.S, domain=pyo.Binary)
    for s in np.flatnonzero(plan.v_upper() == 0):
        mdl.v[int(s)].fix(0)
    clusters = [j for j in range(data.n_clusters) if data.transfer[j] > 0]
    mdl.used = pyo.Var(clusters, domain=pyo.Binary)
    if formulation == "aggregated":
        mdl.n = pyo.Var(mdl.M, mdl.NO, domain=pyo.NonNegativeIntegers, bounds=(0, K))
        count = {(m, o): mdl.n[m, o] for m in range(M) for o in range(NO)}
        compute = sum(cost[o] * mdl.n[m, o] for m in range(M) for o in range(NO))
    else:
        mdl.y = pyo.Var(mdl.K, mdl.M, mdl.NO, domain=pyo.Binary)
        count = {(m, o): sum(mdl.y[k, m, o] for k in range(K)) for m in range(M) for o in range(NO)}
        compute = sum(cost[o] * mdl.y[k, m, o] for k in range(K) for m in range(M) for o in range(NO))
    mdl.cost = pyo.Objective(expr=compute + sum(data.transfer[j] * mdl.used[j] for j in clusters))

    # model sequence: a unit flow through the time-expanded switch graph (saa_model._flow_rows)
    sw = data.switches
    mdl.stay = pyo.Var(mdl.K2, mdl.M, bounds=(0, 1))
    mdl.first = pyo.Constraint(expr=sum(mdl.z[0, m] for m in range(M)) == 1)
    mdl.inflow = pyo.Constraint(mdl.K2, mdl.M, rule=lambda b, k, m: b.z[k, m] == b.stay[k, m] + sum(
        b.w[k, p] for p in range(P) if sw[p][1] == m))
    mdl.outflow = pyo.Constraint(mdl.K2, mdl.M, rule=lambda b, k, m: b.stay[k, m] + sum(
        b.w[k, p] for p in range(P) if sw[p][0] == m) <= b.z[k - 1, m])
    if P and K > 1 and data.max_switches < K - 1:
        mdl.few_switches = pyo.Constraint(expr=pyo.quicksum(mdl.w.values()) <= data.max_switches)
    if formulation == "aggregated":
        mdl.link = pyo.Constraint(mdl.M, rule=lambda b, m: sum(b.n[m, o] for o in range(NO))
                                  == sum(b.z[k, m] for k in range(K)))
        mdl.cluster_used = pyo.Constraint(clusters, rule=lambda b, j: sum(
            b.n[m, o] for m in range(M) for o in range(NO) if ci[o] == j) <= K * b.used[j])
    else:
        mdl.link = pyo.Constraint(mdl.K, mdl.M, rule=lambda b, k, m: sum(b.y[k, m, o] for o in range(NO))
                                  == b.z[k, m])
        mdl.cluster_used = pyo.Constraint(mdl.K, clusters, rule=lambda b, k, j: sum(
            b.y[k, m, o] for m in range(M) for o in range(NO) if ci[o] == j) <= b.used[j])
    mdl.budget = pyo.Constraint(expr=sum(tm[m, o] * count[m, o] for m in range(M) for o in range(NO))
                                <= data.budget)
    if agg_runs:
        mdl.run = pyo.Var(mdl.M)
        mdl.run_def = pyo.Constraint(mdl.M, rule=lambda b, m: b.run[m] == sum(
            data.gain[m, k] * b.z[k, m] for k in range(K)))

    _loss_rows(mdl, data, plan, margin, deadline)
    return mdl


def _loss_rows(mdl: pyo.ConcreteModel, data: SubsetData, plan, margin: float, deadline: float) -> None:
    """The scenario rows, the quantile row, the quantile cuts and the objective / mixing rows.

    The scenario rows are written one by one rather than by a rule, so that the clock can be
    read between them (an exception inside a Pyomo rule is logged as an error).
    """
    S, M, K = data.imp.shape
    P = len(data.switches)
    agg_runs = data.per_run
    groups = data.penalty_groups()  # one penalty column per group of identical switches
    if len(groups) < P:
        mdl.G = pyo.RangeSet(0, len(groups) - 1)
        mdl.sw = pyo.Var(mdl.K2, mdl.G, bounds=(0, 1))
        mdl.sw_def = pyo.Constraint(mdl.K2, mdl.G, rule=lambda b, k, g: b.sw[k, g] == sum(
            b.w[k, p] for p in groups[g]))
        pcol = mdl.sw
    else:
        pcol = mdl.w
    pen_g = data.pen[:, [g[0] for g in groups], :]

    def scenario(b, s):
        if plan.drop[s]:
            return pyo.Constraint.Skip
        if agg_runs:
            gain = sum(data.x_run[s, m] * b.run[m] for m in range(M))
        else:
            gain = sum(data.imp[s, m, k] * b.z[k, m] for k in range(K) for m in range(M))
        pen = sum(pen_g[s, g, k] * pcol[k, g] for k in range(1, K) for g in range(len(groups)))
        if plan.hard[s]:  # fixed: the scenario holds for every SAA-feasible plan
            return data.l0 - gain + pen <= data.target - margin
        return data.l0 - gain + pen <= data.target - margin + plan.bigm[s] * b.v[s]

    mdl.scenario = pyo.Constraint(mdl.S)
    for s in range(S):
        if s % ROWS_PER_CHECK == 0:
            check_deadline(deadline)
        row = scenario(mdl, s)
        if row is not pyo.Constraint.Skip:
            mdl.scenario[s] = row
    mdl.quantile = pyo.Constraint(expr=sum(mdl.v[s] for s in range(S)) <= data.allowed)

    def quantile_cut(b, i):  # one scenario of T holds: so does the least coefficient over T
        T = data.cut_sets[i]
        if agg_runs:
            gain = sum(data.x_run[T, m].max() * b.run[m] for m in range(M))
        else:
            gain = sum(data.imp[T, m, k].max() * b.z[k, m] for k in range(K) for m in range(M))
        pen = sum(pen_g[T, g, k].min() * pcol[k, g] for k in range(1, K) for g in range(len(groups)))
        return data.l0 - gain + pen <= data.target - margin

    mdl.quantile_cut = pyo.Constraint(range(len(data.cut_sets)), rule=quantile_cut)
    # objective cut and mixing rows (saa_strength): cost + sum coef v >= rhs
    mdl.obj_row = pyo.Constraint(range(len(data.obj_rows)), rule=lambda b, i: mdl.cost.expr + sum(
        float(a) * b.v[int(s)] for s, a in zip(data.obj_rows[i].scen, data.obj_rows[i].coef, strict=True))
        >= data.obj_rows[i].rhs)


def decode_pyomo(data: SubsetData, mdl: pyo.ConcreteModel, formulation: str):
    """The plan of the values loaded into ``mdl``."""
    S, M, K = data.imp.shape
    z = np.array([[pyo.value(mdl.z[k, m]) for m in range(M)] for k in range(K)])
    NO = len(data.opts)
    if formulation == "aggregated":
        n = np.array([[pyo.value(mdl.n[m, o]) for o in range(NO)] for m in range(M)])
        return decode_aggregated(data, z, n)
    y = np.array([[[pyo.value(mdl.y[k, m, o]) for o in range(NO)] for m in range(M)] for k in range(K)])
    return decode_time_indexed(data, z, y)
