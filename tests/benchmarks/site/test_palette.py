"""One colour and marker per method, whatever the order in which a chart draws its series."""

from __future__ import annotations

import plotly.graph_objects as go

from deplbench.benchmarks.site.palette import FAMILIES, apply, display_name, look


def _fig(names):
    fig = go.Figure()
    for n in names:
        fig.add_trace(go.Scatter(x=[1], y=[1], name=n, mode="markers", marker={"color": "#000000"}))
    return fig


def test_colours_follow_the_method_not_the_position():
    a = apply(_fig(["depl", "best-exp", "depl[eta=25]", "fit"]))
    b = apply(_fig(["depl[eta=25]", "fit", "best-exp", "depl"]))
    colours = [{t.name: t.marker.color for t in f.data} for f in (a, b)]
    assert colours[0] == colours[1]
    assert colours[0]["depl"] == FAMILIES["depl"][0] and colours[0]["fit"] == "#000000"  # not a method: kept
    assert len({colours[0]["depl"], colours[0]["best-exp"], colours[0]["depl[eta=25]"]}) == 3
    assert a.data[0].marker.symbol == FAMILIES["depl"][1]


def test_a_variant_is_a_shade_of_its_family_and_keeps_its_name():
    assert look("depl[eta=25]").marker == look("depl").marker
    assert look("depl[eta=25]").color != look("depl").color
    assert display_name("depl[eta=25]") == "depl[eta=25]" and look("no such thing!") is None
    assert look("new-method").color == look("new-method").color  # an unlisted family: fixed by its name
