"""Interactive charts: Plotly figures embedded as JSON and drawn by the shipped ``plotly.min.js``.

Each chart is a ``figure.chart`` holding a ``div.plot`` (drawn by ``static/site.js``), the figure's
JSON in a ``<script type="application/json">``, its caption, and its static fallback (the matplotlib
PNG of ``report.md``) inside ``<noscript>`` and as a link. :func:`style` gives every chart the
same layout: the legend below the plot area (never over the title), hover on the nearest point.
"""

from __future__ import annotations

import html
from typing import Any

#: the colours of series that are not methods (models, targets, fits); a method's colour is its own
#: (:mod:`deplbench.benchmarks.site.palette`, applied by :func:`embed` to every chart)
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")


def color(i: int) -> str:
    """The ``i``-th series colour."""
    return COLORS[i % len(COLORS)]


def style(fig: Any, title: str, *, height: int = 420, legend_title: str | None = None) -> Any:
    """Apply the site's layout to a ``plotly.graph_objects.Figure`` and return it.

    The title sits at the top left, the legend in a row below the plot (clear of the title and of
    the data; click an entry to hide or show its series), hover shows the nearest point.
    """
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        template="plotly_white", height=height, autosize=True, hovermode="closest",
        margin={"l": 60, "r": 20, "t": 70, "b": 40},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "xanchor": "left", "x": 0.0,
                "title": {"text": legend_title} if legend_title else None},
        font={"family": "system-ui, sans-serif", "size": 12},
    )
    fig.update_annotations(font_size=12)  # subplot titles
    return fig


def embed(fig: Any, chart_id: str, caption: str, fallback: str | None = None) -> str:
    """The HTML of one chart: the drawing area, the figure's JSON, the caption and the fallback.

    Parameters
    ----------
    fig
        A ``plotly.graph_objects.Figure``.
    chart_id
        Unique id in the page.
    caption
        Shown under the chart.
    fallback
        Relative URL of the static PNG of the same figure (shown without JavaScript; linked).
    """
    from deplbench.benchmarks.site.palette import apply

    e = html.escape
    spec = apply(fig).to_json().replace("</", "<\\/")
    img = ""
    link = ""
    if fallback:
        img = f"<noscript><img src='{e(fallback)}' alt='{e(caption)}'></noscript>"
        link = f" <a href='{e(fallback)}'>Static image (PNG)</a>."
    return (f"<figure class='chart' id='{e(chart_id)}'><div class='plot' data-spec='{e(chart_id)}-spec'></div>"
            f"<script type='application/json' id='{e(chart_id)}-spec'>{spec}</script>{img}"
            f"<figcaption>{e(caption)}{link} Hover a point for its values; click a legend entry to "
            f"hide or show its series.</figcaption></figure>")
