"""Static, offline web pages shared by the report and the library: page layout and navigation
(``pages``), readable sortable tables (``tables``, column words in ``labels``), interactive Plotly
charts with a static fallback (``charts``) and the shipped CSS/JavaScript (``assets``, ``static/``).

Nothing is fetched from the network: ``plotly.min.js`` (from the ``plotly`` package) is copied once
into each site's ``assets/`` folder and referenced relatively.

May import: the core (``deplbench.files``, ``deplbench.errors``), pandas, plotly. Imported by:
``benchmarks.report`` (the report site) and ``benchmarks.library`` (the library site).
"""
