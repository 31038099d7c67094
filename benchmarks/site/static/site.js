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
  function drawCharts() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("div.plot[data-spec]").forEach(function (div) {
      var spec = JSON.parse(document.getElementById(div.getAttribute("data-spec")).textContent);
      var cfg = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"]};
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
