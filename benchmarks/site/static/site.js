/* depl-bench site: sortable and filterable tables, and the Plotly charts of the page.
   Tables: click a header to sort (aria-sort marks the column); type in the box to filter rows.
   Charts: each <div class="plot" data-spec="ID"> is drawn from the JSON in <script id="ID">. */
(function () {
  "use strict";
  function cellValue(td) {
    var v = td.getAttribute("data-v");
    return v === null ? td.textContent.trim() : v;
  }
  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    var xn = a !== "" && !isNaN(x), yn = b !== "" && !isNaN(y);
    if (xn && yn) return x - y;
    if (xn) return -1;          /* numbers before words and blanks */
    if (yn) return 1;
    return a.localeCompare(b);
  }
  function sortTable(table, th) {
    var idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var c = compare(cellValue(r1.cells[idx]), cellValue(r2.cells[idx]));
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  }
  function setupTable(box) {
    var table = box.querySelector("table.data");
    if (!table || !table.tHead) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.classList.add("sortable");
      th.setAttribute("tabindex", "0");
      th.addEventListener("click", function () { sortTable(table, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortTable(table, th); });
    });
    var input = box.querySelector("input.filter");
    var count = box.querySelector(".count");
    if (!input) return;
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase(), shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        var hit = r.textContent.toLowerCase().indexOf(q) >= 0;
        r.style.display = hit ? "" : "none";
        shown += hit ? 1 : 0;
      });
      if (count) count.textContent = shown + " of " + table.tBodies[0].rows.length + " rows";
    });
  }
  /* On a narrow screen (< NARROW px) a grid of panels becomes one column, the title wraps, the
     legend goes below the panels and the tool bar hides (hover, zoom and pan still work). */
  var NARROW = 640, PANEL = 280;
  function wrapText(t, n) {
    var out = [], line = "";
    String(t).split(" ").forEach(function (w) {
      if (line && (line + " " + w).length > n) { out.push(line); line = w; } else { line = line ? line + " " + w : w; }
    });
    if (line) out.push(line);
    return out.join("<br>");
  }
  function narrowLayout(layout, data) {
    var axes = Object.keys(layout).filter(function (k) { return /^xaxis\d*$/.test(k) && layout[k].domain; });
    var cells = [];
    axes.forEach(function (xk) {
      var yk = "y" + xk.slice(1), xa = layout[xk], ya = layout[yk] || {};
      if (ya.domain) cells.push({x: xa, y: ya, xd: xa.domain.slice(), yd: ya.domain.slice()});
    });
    if (cells.length > 1) {
      cells.sort(function (a, b) { return (b.yd[1] - a.yd[1]) || (a.xd[0] - b.xd[0]); });
      var n = cells.length, gap = 0.35 / n;
      var h = (1 - gap * (n - 1)) / n;
      (layout.annotations || []).forEach(function (an) {  /* subplot titles follow their panel */
        if (an.xref !== "paper" || an.yref !== "paper") return;
        cells.forEach(function (c, i) {
          if (an.x >= c.xd[0] - 1e-6 && an.x <= c.xd[1] + 1e-6 && Math.abs(an.y - c.yd[1]) < 0.02) {
            an._cell = i;
          }
        });
      });
      cells.forEach(function (c, i) {
        var top = 1 - i * (h + gap);
        c.x.domain = [0, 1];
        c.y.domain = [Math.max(0, top - h), top];
        (layout.annotations || []).forEach(function (an) {
          if (an._cell === i) { an.x = 0.5; an.y = top; }
        });
      });
      (layout.annotations || []).forEach(function (an) { delete an._cell; });
      layout.height = n * PANEL + 200;
    }
    if (layout.title && layout.title.text) {
      layout.title.text = wrapText(layout.title.text, 42);
      layout.title.font = Object.assign({}, layout.title.font || {}, {size: 13});
    }
    /* the legend at the foot of the figure, one entry a line at most: the bottom margin grows by its lines so
       that it stays clear of the x axis' ticks and title (a legend just under the panels covered them) */
    var extra = 0;  /* x axis titles wrap to the screen, each added line below the panels */
    Object.keys(layout).filter(function (k) { return /^xaxis\d*$/.test(k); }).forEach(function (k) {
      var t = layout[k].title;
      if (t && t.text && String(t.text).length > 44) { t.text = wrapText(t.text, 44); extra = 16; }
    });
    var rows = legendRows(data, layout), foot = (rows ? 64 + 20 * rows : 60) + extra;
    layout.legend = Object.assign({}, layout.legend || {}, {orientation: "h", x: 0, xanchor: "left", y: 0,
                                                            yref: "container", yanchor: "bottom"});
    layout.margin = Object.assign({}, layout.margin || {}, {l: 50, r: 10, t: 90, b: foot});
    layout.height = (layout.height || 450) + Math.max(foot - 80, 0);
    return layout;
  }
  function legendRows(data, layout) {
    /* the lines a horizontal legend takes at this width: its entries (about 40 px and 7 px a letter each)
       packed greedily after its title */
    if (layout.showlegend === false) return 0;
    var names = [], seen = {};
    (data || []).forEach(function (t, i) {
      var key = t.legendgroup || ("#" + i);
      if (t.showlegend !== false && !seen[key]) { seen[key] = 1; names.push(String(t.name || "")); }
    });
    if (names.length < 2 && layout.showlegend !== true) return 0;
    var room = window.innerWidth - 40, title = layout.legend && layout.legend.title && layout.legend.title.text;
    var rows = 1, used = title ? 7 * String(title).length + 10 : 0;
    names.forEach(function (n) {
      var w = 40 + 7 * n.length;
      if (used && used + w > room) { rows += 1; used = title ? 7 * String(title).length + 10 : 0; }
      used += w;
    });
    return rows;
  }
  function drawCharts() {
    if (typeof Plotly === "undefined") return;
    var narrow = window.innerWidth < NARROW;
    document.querySelectorAll("div.plot[data-spec]").forEach(function (div) {
      var spec = JSON.parse(document.getElementById(div.getAttribute("data-spec")).textContent);
      var cfg = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"]};
      if (narrow) { spec.layout = narrowLayout(spec.layout, spec.data); cfg.displayModeBar = false; }
      Plotly.newPlot(div, spec.data, spec.layout, cfg);
      var fallback = div.parentNode.querySelector("img.fallback");
      if (fallback) fallback.style.display = "none";
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("div.tablebox").forEach(setupTable);
    drawCharts();
  });
})();
