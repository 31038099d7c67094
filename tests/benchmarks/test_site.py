"""The site's building blocks without a browser: readable tables, chart embedding, the library's pages."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from deplbench.benchmarks.site.charts import embed
from deplbench.benchmarks.site.labels import header, status_word
from deplbench.benchmarks.site.pages import rel, slug
from deplbench.benchmarks.site.tables import best_cells, decimals, html_table


def test_headers_in_words_with_units():
    assert header("depl_q_hi") == "depl loss quantile (upper bound)"
    assert header("bestexp_time_s") == "best-exp time (s)"
    assert header("max_oos_cp_upper") == "Max out-of-sample violation (95% upper bound)"
    assert header("build_wall_s") == "Build wall (s)"  # unknown names: words and the unit of the suffix
    assert status_word("timeout") == "time limit hit" and status_word("odd") == "odd"


def test_one_precision_per_column():
    assert decimals([0.5971, 0.07438]) == 4  # 0.5971 and 0.0744: the same number of decimals
    assert decimals([1420.0, 3.5]) == 0
    assert decimals([3.0, 4.0]) == 0
    assert decimals([0.001, 0.0002]) is None  # all tiny: scientific
    html = html_table(pd.DataFrame({"method": ["a", "b"], "ratio": [0.5971, 0.07438]}), table_id="x")
    assert ">0.5971<" in html and ">0.0744<" in html and "data-v='0.07438'" in html


def test_best_value_marked_per_row_and_per_column():
    df = pd.DataFrame({"instance": ["i1", "i2"], "optimum": [10.0, 20.0], "depl_cost": [12.0, 20.0],
                       "bestexp_cost": [11.0, math.nan], "mean_ratio": [1.0, 2.0], "max_ratio": [3.0, 0.5]})
    marks = best_cells(df)
    assert (0, "optimum") in marks and (0, "depl_cost") not in marks
    assert {(1, "optimum"), (1, "depl_cost")} <= marks  # ties are all marked
    assert not any(c in ("mean_ratio", "max_ratio") for _, c in marks)  # summaries of one series: no rivals
    t = pd.DataFrame({"method": ["a", "b", "c"], "sgm_time_s": [2.0, 1.0, 3.0], "solved": [3, 3, 1]})
    assert best_cells(t) == {(1, "sgm_time_s"), (0, "solved"), (1, "solved")}
    runs = pd.DataFrame({"method": ["a", "b", "c"], "feasible": [True, False, True], "cost": [12.0, 10.0, 11.0]})
    assert best_cells(runs) == {(2, "cost")}  # the infeasible plan's lower cost does not win


def test_table_html_statuses_links_and_missing():
    df = pd.DataFrame({"instance": ["x<1", "y"], "status": ["timeout", "optimal"], "feasible": [False, True],
                       "cost": [math.nan, math.inf]})
    html = html_table(df, "cap", links={"instance": lambda v: f"instances/{slug(v)}.html"}, table_id="t9")
    assert "time limit hit" in html and ">no<" in html and "–" in html and "∞" in html
    assert "href='instances/x_1.html'" in html and "x&lt;1" in html
    assert "<th scope='col'" in html and "aria-sort" not in html  # set by the script on a click


def test_chart_json_is_valid_and_cannot_close_its_script():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2], y=[1, float("nan")], text=["</script><b>"]))
    out = embed(fig, "c1", "caption", "../figures/a.png")
    spec = out.split("<script type='application/json' id='c1-spec'>")[1].split("</script>")[0]
    data = json.loads(spec)
    assert data["data"][0]["y"][1] is None and data["data"][0]["text"] == ["</script><b>"]
    assert "<noscript><img src='../figures/a.png'" in out


def test_report_charts_are_valid_plotly_figures():
    import plotly.graph_objects as go

    from deplbench.benchmarks.report import charts

    r = pd.DataFrame({"a": [1.0, 2.0, math.inf], "b": [1.5, 1.0, 1.0]}, index=["i1", "i2", "i3"])
    fig = go.Figure(charts.performance_profile(r, "t").to_dict())  # validated again by plotly
    a = next(t for t in fig.data if t.name == "a")
    assert list(a.y)[-1] == pytest.approx(2 / 3)  # one unsolved instance: the curve stays below 1
    assert "instance" in a.hovertemplate and a.customdata[1] == "i1"
    ratios = pd.DataFrame({"solver": "depl", "instance": ["i1", "i2"], "eta": [25.0, 200.0], "eps": [0.05, 0.05],
                           "feasible": True, "ratio_lo": [1.2, 1.0], "ratio_hi": [1.2, 1.0]})
    fig = charts.ratio_chart(ratios)
    assert fig.layout.yaxis.type != "log"  # the ratio axis is on the scale of the ratios
    assert all(min(t.y) >= 1.0 for t in fig.data if t.y is not None)  # the stated (1+eps)/eta is not drawn


def test_relative_links():
    assert rel("instances/a.html", "assets/site.css") == "../assets/site.css"
    assert rel("index.html", "methods/x.html") == "methods/x.html"
    assert slug("depl[eta=200, eps=0.05]") == "depl_eta_200_eps_0.05"
