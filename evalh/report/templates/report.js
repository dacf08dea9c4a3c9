// evalh report: sortable tables and the raw-attempts filter. Reads only the DOM; writes
// only text (textContent) and attributes, never HTML.
(function () {
  "use strict";

  function cellValue(td) {
    var t = (td && td.textContent || "").trim();
    var m = t.match(/^-?\$?(\d+(\.\d+)?)(%|\b)/);
    return m ? parseFloat(t.replace("$", "")) : t.toLowerCase();
  }

  function sortBy(table, th, index) {
    var body = table.tBodies[0];
    if (!body) return;
    var dir = th.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("data-dir"); });
    th.setAttribute("data-dir", dir);
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[index]), y = cellValue(b.cells[index]);
      var r = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
      return dir === "asc" ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) return;
    Array.prototype.forEach.call(head.cells, function (th, i) {
      th.addEventListener("click", function () { sortBy(table, th, i); });
    });
  });

  document.querySelectorAll("details.raw").forEach(function (box) {
    var input = box.querySelector("input.filter");
    var table = box.querySelector("table");
    if (!input || !table || !table.tBodies[0]) return;
    input.addEventListener("input", function () {
      var q = input.value.trim().toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  });

  // Two runs case by case: one view (regressed, improved, changed, …) and a search at a time.
  var pairs = document.getElementById("pairs");
  if (pairs) {
    var view = "changed";
    var search = pairs.querySelector("input.pairsearch");
    var apply = function () {
      var q = (search && search.value || "").trim().toLowerCase();
      pairs.querySelectorAll("details.pair").forEach(function (d) {
        var inView = (" " + d.getAttribute("data-views") + " ").indexOf(" " + view + " ") >= 0;
        d.hidden = !inView || (q !== "" && d.textContent.toLowerCase().indexOf(q) < 0);
      });
    };
    pairs.querySelectorAll("button[data-view]").forEach(function (b) {
      b.addEventListener("click", function () {
        view = b.getAttribute("data-view");
        pairs.querySelectorAll("button[data-view]").forEach(function (x) { x.className = x === b ? "on" : ""; });
        apply();
      });
    });
    if (search) search.addEventListener("input", apply);
    apply();
  }

  // The embedded data, parsed once, for anyone scripting against the page.
  var data = document.getElementById("evalh-report-data");
  if (data) {
    try { window.evalhReport = JSON.parse(data.textContent); } catch (e) { window.evalhReport = null; }
  }
})();
