// evalh dashboard. Everything from a run is untrusted text: it reaches the page only as
// text nodes (textContent) or attribute values (setAttribute), never as HTML.
(function () {
  "use strict";

  var app = document.getElementById("app");
  var SVGNS = "http://www.w3.org/2000/svg";
  var STATUSES = ["passed", "failed", "errored", "judge_error", "skipped"];
  var PAGE = 100;
  var generation = 0; // bumped on every navigation; late answers of old views are dropped

  // ------------------------------------------------------------------ DOM helpers

  function attrs(node, a) {
    if (!a) return node;
    Object.keys(a).forEach(function (k) {
      var v = a[k];
      if (v === null || v === undefined || v === false) return;
      if (k.slice(0, 2) === "on" && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, String(v));
    });
    return node;
  }

  function add(node, kids) {
    if (kids === null || kids === undefined || kids === false) return node;
    if (Array.isArray(kids)) { kids.forEach(function (k) { add(node, k); }); return node; }
    node.appendChild(kids instanceof Node ? kids : document.createTextNode(String(kids)));
    return node;
  }

  function el(tag, a, kids) { return add(attrs(document.createElement(tag), a), kids); }
  function svg(tag, a, kids) { return add(attrs(document.createElementNS(SVGNS, tag), a), kids); }
  function breakable(text) {
    // an id as text, with a <wbr> after each . _ - / so a narrow column wraps it between its
    // parts rather than mid-word (its textContent is the id unchanged)
    var parts = String(text).split(/(?<=[._\-\/])/), out = [];
    parts.forEach(function (part, i) { out.push(part); if (i < parts.length - 1) out.push(el("wbr")); });
    return out;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  // ------------------------------------------------------------------ formatting

  // a share as `evalh compare` prints it (Python's `:g`): 0.025000000000000022 → "2.5 %"
  function pctG(v) { return Number((v * 100).toPrecision(6)) + " %"; }
  function pct(v) { return v === null || v === undefined ? "n/a" : (v * 100).toFixed(1) + "%"; }
  function rate(v, num, den) { return pct(v) + " (" + num + "/" + den + ")"; }
  function num(v, d) { return v === null || v === undefined ? "–" : Number(v).toFixed(d === undefined ? 3 : d); }
  function ms(v) { return v === null || v === undefined ? "–" : Math.round(v) + " ms"; }
  function money(v) { return v === null || v === undefined ? "unknown" : "$" + Number(v).toFixed(4); }
  function when(iso) { return iso ? String(iso).replace("T", " ").slice(0, 19) : "–"; }
  function short(sha) { return sha ? String(sha).slice(0, 8) : "–"; }
  function pretty(v) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "string") return v;
    return JSON.stringify(v, null, 2);
  }
  function casesAttempts(cases, results) {
    // as evalh.report.blocks.cases_attempts: "20 × 3" for 20 cases of 3 attempts each
    if (!cases || results === cases) return String(cases);
    return cases + " × " + Number((results / cases).toPrecision(3));
  }
  function badge(text, cls) { return el("span", { "class": "badge " + (cls || "") }, text); }

  // ------------------------------------------------------------------ data

  function getJSON(url) {
    return fetch(url, { headers: { "Accept": "application/json" } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
        return body;
      });
    });
  }

  function qs(params) {
    var p = new URLSearchParams();
    Object.keys(params).forEach(function (k) {
      if (params[k] !== "" && params[k] !== null && params[k] !== undefined) p.set(k, params[k]);
    });
    var s = p.toString();
    return s ? "?" + s : "";
  }

  function route() {
    var h = location.hash.replace(/^#/, "") || "/";
    var q = h.indexOf("?");
    var path = q < 0 ? h : h.slice(0, q);
    var params = {};
    new URLSearchParams(q < 0 ? "" : h.slice(q + 1)).forEach(function (v, k) { params[k] = v; });
    return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: params };
  }

  function runHref(id, params) { return "#/run/" + encodeURIComponent(id) + qs(params || {}); }

  function fail(err) {
    clear(app);
    add(app, el("div", { "class": "card err", "data-testid": "error" }, "Could not load: " + err.message));
  }

  function setNav(which) {
    document.querySelectorAll("header nav a").forEach(function (a) {
      a.className = a.getAttribute("data-nav") === which ? "on" : "";
    });
  }

  // ------------------------------------------------------------------ charts

  var DENSE = 150;
  var MARKERS = ["circle", "square", "triangle", "diamond", "down", "cross"];

  function marker(shape, cx, cy, r, a) {
    var d;
    if (shape === "circle") return svg("circle", Object.assign({ cx: cx.toFixed(1), cy: cy.toFixed(1), r: r }, a));
    if (shape === "square") d = "M" + (cx - r) + "," + (cy - r) + "h" + 2 * r + "v" + 2 * r + "h" + -2 * r + "z";
    else if (shape === "triangle") d = "M" + cx + "," + (cy - r * 1.2) + "L" + (cx + r * 1.1) + "," + (cy + r * 0.9) + "L" + (cx - r * 1.1) + "," + (cy + r * 0.9) + "z";
    else if (shape === "down") d = "M" + cx + "," + (cy + r * 1.2) + "L" + (cx + r * 1.1) + "," + (cy - r * 0.9) + "L" + (cx - r * 1.1) + "," + (cy - r * 0.9) + "z";
    else if (shape === "diamond") d = "M" + cx + "," + (cy - r * 1.3) + "L" + (cx + r * 1.3) + "," + cy + "L" + cx + "," + (cy + r * 1.3) + "L" + (cx - r * 1.3) + "," + cy + "z";
    else d = "M" + (cx - r) + "," + (cy - r) + "L" + (cx + r) + "," + (cy + r) + "M" + (cx + r) + "," + (cy - r) + "L" + (cx - r) + "," + (cy + r);
    return svg("path", Object.assign({ d: d }, a));
  }

  function runTick(run) {
    // a run's name on an axis: its label or short id, and its date-time (distinct per run)
    var name = run.label || String(run.run_id).slice(-6);
    if (name.length > 16) name = name.slice(0, 15) + "…";
    return [name, when(run.started_at).slice(5, 16)];
  }

  function chart(id, title, runs, series, opts) {
    var W = 560, H = 236, L = 52, R = 16, T = 14, B = 48;
    var n = runs.length;
    var values = [];
    series.forEach(function (s) { s.values.forEach(function (v) { if (v !== null) values.push(v); }); });
    var lo = 0, hi = opts.max !== undefined ? opts.max : Math.max.apply(null, values.concat([0])) * 1.1;
    if (!(hi > lo)) hi = 1;
    var x = function (j) { return n === 1 ? L + (W - L - R) / 2 : L + j * (W - L - R) / (n - 1); };
    var y = function (v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); };
    var box = svg("svg", { "class": "chart", viewBox: "0 0 " + W + " " + H, role: "img",
                           "aria-label": title, id: "chart-" + id, "data-testid": "chart-" + id });
    [0, 0.5, 1].forEach(function (f) {
      var v = lo + f * (hi - lo);
      add(box, svg("line", { "class": "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      add(box, svg("text", { "class": "tick", x: 4, y: y(v) + 3 }, opts.fmt(v)));
    });
    // x labels: every run when they fit, else evenly spaced ones (first and last always)
    var room = Math.max(1, Math.floor((W - L - R) / 72));
    var step = Math.max(1, Math.ceil((n - 1) / Math.max(1, room - 1)));
    for (var j = 0; j < n; j++) {
      if (j % step !== 0 && j !== n - 1) continue;
      if (j !== n - 1 && n - 1 - j < step && j !== 0) continue; // keep the last label clear of its neighbour
      var t = runTick(runs[j]);
      var anchor = n === 1 ? "middle" : j === 0 ? "start" : j === n - 1 ? "end" : "middle";
      add(box, svg("text", { "class": "tick xlabel", x: x(j).toFixed(1), y: H - B + 16, "text-anchor": anchor, "data-run": runs[j].run_id },
        [svg("tspan", { x: x(j).toFixed(1) }, t[0]), svg("tspan", { x: x(j).toFixed(1), dy: 12 }, t[1])]));
    }
    var legend = el("div", { "class": "legend" });
    var S = series.length;
    var dense = n > DENSE; // many runs: lines only, and one overlay names the run under the pointer
    series.forEach(function (s, i) {
      var color = "s" + (s.color || 0);
      var shape = MARKERS[(s.marker === undefined ? i : s.marker) % MARKERS.length];
      var dx = S > 1 ? (i - (S - 1) / 2) * Math.min(3, 12 / S) : 0; // a small offset keeps equal values apart
      var seg = [];
      var flush = function () {
        if (seg.length > 1) add(box, svg("polyline", { "class": color + (s.dash ? " dash" : ""), points: seg.join(" ") }));
        seg = [];
      };
      s.values.forEach(function (v, j) {
        if (v === null) { flush(); return; }
        seg.push((x(j) + dx).toFixed(1) + "," + y(v).toFixed(1));
      });
      flush();
      s.values.forEach(function (v, j) {
        if (v === null || dense) return;
        var run = runs[j];
        var tip = s.name + " · " + (run.label ? run.label + " (" + run.run_id + ")" : run.run_id) + " · " + when(run.started_at) + "\n" +
          opts.tip(v, s.num ? s.num[j] : null, s.den ? s.den[j] : null);
        add(box, marker(shape, x(j) + dx, y(v), 3.4, { "class": "pt " + color + (shape === "cross" ? " cross" : ""),
          "data-run": run.run_id, "data-series": s.name, onclick: function () { location.hash = runHref(run.run_id); } }))
          .lastChild.appendChild(svg("title", null, tip));
      });
      var sw = svg("svg", { "class": "sw", viewBox: "0 0 16 10", width: 16, height: 10, "aria-hidden": "true" },
        [svg("line", { "class": color + (s.dash ? " dash" : ""), x1: 0, x2: 16, y1: 5, y2: 5 }), marker(shape, 8, 5, 3, { "class": color + (shape === "cross" ? " cross" : "") })]);
      add(legend, el("span", { "data-series": s.name }, [sw, " ", s.name]));
    });
    if (!values.length) add(box, svg("text", { "class": "tick", x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data"));
    var card = el("div", { "class": "card chartcard" }, [el("h2", null, title), box, legend]);
    if (dense && n) {
      var guide = svg("line", { "class": "guide", x1: 0, x2: 0, y1: T, y2: H - B, visibility: "hidden" });
      var tipBox = el("div", { "class": "tip", hidden: "hidden", "data-testid": "chart-tip-" + id });
      var at = function (ev) {
        var r = box.getBoundingClientRect();
        var sx = (ev.clientX - r.left) * W / r.width;
        return Math.max(0, Math.min(n - 1, Math.round((sx - L) / (W - L - R) * (n - 1))));
      };
      var overlay = svg("rect", { "class": "overlay", x: L, y: T, width: W - L - R, height: H - T - B, "data-testid": "chart-overlay-" + id,
        onmousemove: function (ev) {
          var j = at(ev), run = runs[j];
          guide.setAttribute("x1", x(j)); guide.setAttribute("x2", x(j)); guide.setAttribute("visibility", "visible");
          clear(tipBox);
          add(tipBox, el("div", { "class": "mono" }, (run.label ? run.label + " · " : "") + run.run_id + " · " + when(run.started_at)));
          series.forEach(function (s) {
            var v = s.values[j];
            if (v === null || v === undefined) return;
            add(tipBox, el("div", null, [el("i", { "class": "sw" + (s.color || 0) }), s.name + ": " + opts.tip(v, s.num ? s.num[j] : null, s.den ? s.den[j] : null)]));
          });
          tipBox.removeAttribute("hidden");
          var r = box.getBoundingClientRect(), c = card.getBoundingClientRect();
          tipBox.style.left = Math.min(ev.clientX - c.left + 12, c.width - 240) + "px";
          tipBox.style.top = (ev.clientY - c.top + 12) + "px";
          void r;
        },
        onmouseleave: function () { tipBox.setAttribute("hidden", "hidden"); guide.setAttribute("visibility", "hidden"); },
        onclick: function (ev) { location.hash = runHref(runs[at(ev)].run_id); } });
      add(box, [guide, overlay]);
      add(card, tipBox);
    }
    return card;
  }

  // ------------------------------------------------------------------ home: trends + history

  var HISTORY_PAGE = 100;
  var FILTER_KEYS = ["label", "branch", "sha", "status", "from", "to"];

  function matches(r, f) {
    // a run passes the history filters (label and sha: substring / prefix, case-insensitive; dates inclusive)
    var g = r.git || {};
    if (f.label && String(r.label || "").toLowerCase().indexOf(f.label.toLowerCase()) < 0) return false;
    if (f.branch && (g.branch || "") !== f.branch) return false;
    if (f.sha && String(g.sha || "").toLowerCase().indexOf(f.sha.toLowerCase()) !== 0) return false;
    if (f.status && r.status !== f.status) return false;
    var day = String(r.started_at || "").slice(0, 10);
    if (f.from && day < f.from) return false;
    if (f.to && day > f.to) return false;
    return true;
  }

  function pickSeries(list, keep) {
    return list.map(function (s) {
      var out = { name: s.name, values: keep.map(function (j) { return s.values[j]; }) };
      if (s.num) out.num = keep.map(function (j) { return s.num[j]; });
      if (s.den) out.den = keep.map(function (j) { return s.den[j]; });
      return out;
    }).filter(function (s) { return s.values.some(function (v) { return v !== null; }); });
  }

  function home(gen, params) {
    setNav("home");
    getJSON("/api/runs").then(function (data) {
      if (gen !== generation) return;
      var tr = data.trends;
      document.getElementById("where").textContent = data.runs_dir;
      clear(app);
      add(app, el("h1", null, "Runs"));
      if (!data.runs.length) {
        add(app, el("p", { "class": "dim" }, "No runs yet in " + data.runs_dir + ". Run `evalh run` first."));
        return;
      }
      var f = {};
      FILTER_KEYS.forEach(function (k) { f[k] = params[k] || ""; });
      var page = parseInt(params.page || "0", 10) || 0;
      var bar = el("div", { "class": "card filters", "data-testid": "history-filters" });
      var charts = el("div");
      var table = el("div");
      add(app, [bar, charts, table]);
      var timer = null;
      var branches = {}, statuses = {};
      data.runs.forEach(function (r) { if (r.git && r.git.branch) branches[r.git.branch] = 1; statuses[r.status] = 1; });
      var input = function (k, placeholder, type) {
        var i = el("input", { type: type || "search", placeholder: placeholder, value: f[k], "aria-label": placeholder, "data-filter": k });
        i.addEventListener(type === "date" ? "change" : "input", function () {
          clearTimeout(timer);
          timer = setTimeout(function () { f[k] = i.value; page = 0; draw(); }, type === "date" ? 0 : 150);
        });
        return i;
      };
      var select = function (k, label, values) {
        var sel = el("select", { "aria-label": label, "data-filter": k, onchange: function () { f[k] = sel.value; page = 0; draw(); } },
          [el("option", { value: "" }, "any " + label)].concat(values.map(function (v) {
            return el("option", { value: v, selected: v === f[k] ? "selected" : null }, v); })));
        return sel;
      };
      add(bar, ["Filter runs:", input("label", "label contains…"), select("branch", "branch", Object.keys(branches).sort()),
        input("sha", "git sha starts with…"), select("status", "status", Object.keys(statuses).sort()),
        "from", input("from", "from date", "date"), "to", input("to", "to date", "date"),
        el("button", { onclick: function () { location.hash = "#/"; } }, "clear")]);

      function draw() {
        history.replaceState(null, "", "#/" + qs(Object.assign({}, f, { page: page || "" })));
        var keep = [];
        data.runs.forEach(function (r, j) { if (matches(r, f)) keep.push(j); });
        clear(charts); clear(table);
        var runs = keep.map(function (j) { return tr.runs[j]; });
        var S = {};
        Object.keys(tr.series).forEach(function (k) { S[k] = pickSeries(tr.series[k], keep); });
        drawCharts(charts, tr, runs, S);
        add(table, historyTable(data, keep, page, function (p) { page = p; draw(); }));
      }
      draw();
    }).catch(fail);
  }

  function drawCharts(holder, tr, runs, S) {
    var colorOf = function (name) { return tr.colors[name.split(" · ")[0]] || 0; };
    var withColor = function (list) {
      // one colour per suite; the arms of a suite share it and differ by marker
      var seen = {};
      return list.map(function (s) {
        var suite = s.name.split(" · ")[0];
        seen[suite] = (seen[suite] || 0) + 1;
        return Object.assign({}, s, { color: colorOf(s.name), marker: seen[suite] - 1 });
      });
    };
    var latency = withColor(S.latency_ms_p50).map(function (s) { return Object.assign(s, { name: s.name + " p50" }); }).concat(
      withColor(S.latency_ms_p95).map(function (s) { return Object.assign(s, { name: s.name + " p95", dash: true }); }));
    var frac = function (fmt) {
      return function (v, a, b) { return fmt(v) + (b === null || b === undefined ? "" : a === null || a === undefined ? " (n=" + b + ")" : " (" + a + "/" + b + ")"); };
    };
    var costTip = function (v) { return "$" + num(v, 4); };
    add(holder, el("div", { "class": "charts" }, [
      chart("pass_rate", "Pass rate per suite (passed / (passed + failed))", runs, withColor(S.pass_rate), { max: 1, fmt: pct, tip: frac(pct) }),
      chart("mean_score", "Mean score per suite", runs, withColor(S.mean_score), { max: 1, fmt: function (v) { return num(v, 2); }, tip: frac(function (v) { return num(v, 3); }) }),
      chart("cost", "Cost per suite per run (USD: target, judge and generator calls, known costs only; a fully cached run is a gap)", runs, withColor(S.cost_usd), { fmt: function (v) { return "$" + num(v, 3); }, tip: costTip }),
      chart("latency", "Latency p50 (solid) / p95 (dashed) per suite (ms)", runs, latency, { fmt: function (v) { return Math.round(v) + ""; }, tip: function (v) { return Math.round(v) + " ms"; } })
    ]));
  }

  function historyTable(data, keep, page, go) {
    var suites = [];
    keep.forEach(function (j) { Object.keys(data.runs[j].suites).forEach(function (s) { if (suites.indexOf(s) < 0) suites.push(s); }); });
    var head = el("tr", null, [el("th", null, "run"), el("th", null, "label"), el("th", null, "started"),
      el("th", null, "git"), el("th", null, "status")].concat(
      suites.map(function (s) { return el("th", { "class": "n" }, s); }),
      [el("th", { "class": "n" }, "cost"), el("th", null, "")]));
    var body = el("tbody");
    var newest = keep.slice().reverse();
    var pages = Math.max(1, Math.ceil(newest.length / HISTORY_PAGE));
    page = Math.min(page, pages - 1);
    newest.slice(page * HISTORY_PAGE, (page + 1) * HISTORY_PAGE).forEach(function (j) {
      var r = data.runs[j];
      var prev = j > 0 ? data.runs[j - 1] : null; // the previous run of the whole history, filtered or not
      var isBase = r.run_id === data.baseline;
      var cells = [
        // the id never wraps; the BASELINE badge goes under it when the column is narrow
        el("td", { "class": "id" }, [el("a", { "class": "nowrap", href: runHref(r.run_id) }, r.run_id), isBase ? [" ", badge("BASELINE", "base")] : null]),
        el("td", { "class": "label" }, r.label || ""),
        el("td", { "class": "mono nowrap", title: when(r.started_at) }, when(r.started_at).slice(0, 16)),
        el("td", { "class": "mono nowrap", title: r.git && r.git.branch ? "branch " + r.git.branch : "" }, short(r.git && r.git.sha) + (r.git && r.git.dirty ? "*" : "")),
        el("td", null, badge(r.status, "st-" + r.status))
      ];
      suites.forEach(function (s) {
        var a = r.suites[s] && r.suites[s].aggregate;
        cells.push(el("td", { "class": "n" }, a ? rate(a.pass_rate, a.passed, a.pass_rate_denominator) : "–"));
      });
      cells.push(el("td", { "class": "n", title: r.bill_text || "" }, money(r.cost_usd)));
      var base = data.baseline && data.baseline !== r.run_id ? data.baseline : (prev ? prev.run_id : null);
      cells.push(el("td", { "class": "nowrap" }, base ? el("a", { href: "#/compare" + qs({ base: base, candidate: r.run_id }) },
        data.baseline && data.baseline !== r.run_id ? "vs baseline" : "vs previous") : ""));
      add(body, el("tr", { "data-run": r.run_id }, cells));
    });
    var shown = keep.length === data.runs.length ? data.runs.length + " runs" : keep.length + " of " + data.runs.length + " runs";
    return el("div", { "class": "card" }, [
      el("h2", { "data-testid": "history-title" }, "History (" + shown + ", newest first)"),
      el("div", { "class": "scroll" }, el("table", { "class": "data compact", "data-testid": "history" }, [el("thead", null, head), body])),
      pages > 1 ? el("div", { "class": "pager" }, [
        el("button", { disabled: page <= 0 ? "disabled" : null, onclick: function () { go(page - 1); } }, "‹ newer"),
        el("span", { "data-testid": "history-pager" }, "page " + (page + 1) + " of " + pages),
        el("button", { disabled: page >= pages - 1 ? "disabled" : null, onclick: function () { go(page + 1); } }, "older ›")]) : null,
      !keep.length ? el("p", { "class": "dim" }, "No run matches the filters.") : null
    ]);
  }

  // ------------------------------------------------------------------ one run

  function summaryTable(report) {
    var head = el("tr", null, ["suite / arm", "cases × attempts", "passed", "failed", "errored", "judge err", "skipped",
      "pass rate", "95% CI", "mean score", "p50", "p95", "tokens", "cost"].map(function (c, i) {
      return el("th", { "class": i ? "n" : "" }, c);
    }));
    var body = el("tbody");
    var notes = el("ul", { "class": "notes" });
    var why = el("ul", { "class": "notes" }), whyCount = 0; // why an arm has no interval: folded, one line each
    report.suites.forEach(function (s) {
      s.arms.forEach(function (a) {
        var c = a.counts, e = a.economics;
        var name = s.suite + (s.arms.length > 1 || a.arm !== "default" ? " · " + a.arm : "");
        var iv = a.interval;
        add(body, el("tr", null, [
          el("td", null, [name, " ", el("span", { "class": "dim" }, "(" + s.regime + ")"), a.baseline ? [" ", badge("baseline arm")] : null]),
          el("td", { "class": "n", title: a.cases + " cases, " + c.n + " results (attempts)" }, casesAttempts(a.cases, c.n)), el("td", { "class": "n o-passed" }, c.passed),
          el("td", { "class": "n o-failed" }, c.failed), el("td", { "class": "n o-errored" }, c.errored),
          el("td", { "class": "n o-judge_error" }, c.judge_error), el("td", { "class": "n" }, c.skipped),
          el("td", { "class": "n" }, rate(c.pass_rate, c.passed, c.pass_rate_denominator)),
          el("td", { "class": "n wrap", title: iv.reason || "" }, iv.low === null ? "none" : pct(iv.low) + "–" + pct(iv.high) +
            (iv.of === "pass rate over cases" ? "" : " (" + iv.successes + "/" + iv.n + " all attempts)")),
          el("td", { "class": "n" }, c.mean_score === null ? "–" : num(c.mean_score) + " (n=" + c.mean_score_denominator + ")"),
          el("td", { "class": "n" }, ms(e.latency_ms_p50)), el("td", { "class": "n" }, ms(e.latency_ms_p95)),
          el("td", { "class": "n wrap" }, e.tokens_in === null && e.tokens_out === null ? "unknown" : (e.tokens_in || 0) + " in / " + (e.tokens_out || 0) + " out"),
          el("td", { "class": "n wrap" }, money(e.cost_usd) + (e.cost_unknown ? " (+" + e.cost_unknown + " unpriced)" : "") +
            (e.cached ? " (" + e.cached + " cached: $0, no latency)" : ""))
        ]));
        if (iv.reason) { whyCount++; add(why, el("li", null, name + ": " + iv.reason)); }
        else add(notes, el("li", null, name + ": Wilson 95% interval of " + iv.of + ", " + iv.successes + "/" + iv.n));
        if (a.repeats) {
          var r = a.repeats;
          add(notes, el("li", null, name + ": " + r.stable_pass + " stable pass, " + r.flaky + " flaky, " + r.stable_fail +
            " stable fail over " + r.attempts_min + (r.equal_attempts ? "" : "–" + r.attempts_max) + " attempts; " +
            r.pass_at_k.map(function (p) { return "pass@" + p.k + " " + num(p.pass_at_k) + ", pass^" + p.k + " " + num(p.pass_hat_k); }).join("; ")));
        }
      });
      (s.calibration || []).forEach(function (c) {
        add(notes, el("li", null, s.suite + ": judge calibration " + c.name + " accuracy " +
          (c.n === null ? pct(c.accuracy) : rate(c.accuracy, c.correct, c.n))));
      });
    });
    var figures = [];
    report.suites.forEach(function (s) { (s.figures || []).forEach(function (f) { figures.push(figureBox(s.suite, f)); }); });
    return el("div", { "class": "card", "data-testid": "suites-card" }, [el("h2", null, "Suites"),
      el("div", { "class": "scroll" }, el("table", { "class": "data", "data-testid": "suites" }, [el("thead", null, head), body])),
      whyCount ? el("details", { "class": "why", "data-testid": "no-interval" }, [
        el("summary", { "class": "dim" }, "no 95% interval for " + whyCount + " of the rows above — why (the assumptions that fail)"), why]) : null,
      notes,
      figures.length ? [el("h3", null, "Figures the suites hold")].concat(figures) : null]);
  }

  function figureBox(suite, f) {
    // a suite-level figure as evalh.report.figures laid it out: the same table on every surface.
    // A sweep's first note is its headline (the winner, or why there is none), shown above its table,
    // and its rows marked recommended, tied top or current are set off.
    var sweep = f.kind === "sweep", notes = f.notes.slice(), headline = sweep && notes.length ? notes.shift() : null;
    function rowClass(r) {
      if (!sweep) return null;
      var mark = r[r.length - 1] || "";
      return (/recommended/.test(mark) ? "win " : /tied top/.test(mark) ? "tied " : "") + (/current/.test(mark) ? "cur" : "");
    }
    return el("div", { "class": "figure" + (sweep ? " sweep" : ""), "data-testid": "figure", "data-kind": f.kind, "data-suite": suite }, [
      el("div", { "class": "dim" }, suite + ": " + f.title),
      headline ? el("div", { "class": "headline", "data-testid": "sweep-headline" }, headline) : null,
      f.rows.length ? el("div", { "class": "scroll" }, el("table", { "class": "data" }, [
        el("thead", null, el("tr", null, f.columns.map(function (c, i) { return el("th", { "class": i ? "n" : "" }, c); }))),
        el("tbody", null, f.rows.map(function (r) {
          return el("tr", { "class": rowClass(r) }, r.map(function (c, i) { return el("td", { "class": i ? "n" : "" }, c); }));
        }))])) : null,
      notes.length ? el("ul", { "class": "notes" }, notes.map(function (n) { return el("li", null, n); })) : null,
      f.flags.map(function (x) { return el("div", { "class": "warnbox", "data-testid": "figure-flag" }, x); })]);
  }

  function runView(gen, runId, params) {
    setNav("");
    getJSON("/api/runs/" + encodeURIComponent(runId)).then(function (data) {
      if (gen !== generation) return;
      var s = data.summary;
      clear(app);
      var git = s.git && s.git.sha ? short(s.git.sha) + (s.git.dirty ? "-dirty" : "") + (s.git.branch ? " (" + s.git.branch + ")" : "") : "no git";
      add(app, el("div", { "class": "row" }, [el("h1", { "class": "mono" }, s.run_id), badge(s.status, "st-" + s.status),
        data.baseline ? badge("BASELINE", "base") : null, s.label ? el("span", null, s.label) : null]));
      add(app, el("div", { "class": "dim" }, "started " + when(s.started_at) + (s.finished_at ? " · finished " + when(s.finished_at) : s.stopped_at ? " · stopped " + when(s.stopped_at) : "") + " · git " + git));
      if (s.bill_text) add(app, el("div", { "class": "dim", "data-testid": "run-bill" }, s.bill_text));
      if (s.status !== "complete") add(app, el("div", { "class": "warnbox" }, "run is " + s.status + ": " + (s.status_reason || "no reason recorded")));
      var verdict = el("div", { "data-testid": "run-verdict" });
      add(app, verdict);
      var suitesCard = el("div", { "class": "card", "data-testid": "suites-card" }, [el("h2", null, "Suites"), el("p", { "class": "dim" }, "computing the report…")]);
      add(app, suitesCard);
      var names = Object.keys(data.suites);
      var state = { run: runId, suite: params.suite && names.indexOf(params.suite) >= 0 ? params.suite : names[0],
                    status: params.status || "", q: params.q || "", arm: params.arm || "",
                    offset: parseInt(params.offset || "0", 10) || 0, i: params.i };
      var report = function () {
        getJSON("/api/runs/" + encodeURIComponent(runId) + "/report").then(function (rep) {
          if (gen !== generation) return;
          (rep.verdict || []).forEach(function (v) {  // against the BASELINE: first, as in the report
            add(verdict, el("div", { "class": v.warn ? "warnbox" : "headline" }, v.text));
          });
          (rep.runs || []).forEach(function (r) {  // a configured suite skipped for its key: not measured
            (r.not_run || []).forEach(function (line) { add(verdict, el("div", { "class": "warnbox" }, line)); });
          });
          suitesCard.replaceWith(summaryTable(rep));
        }).catch(function (e) { clear(suitesCard); add(suitesCard, el("p", { "class": "err" }, "Could not build the report: " + e.message)); });
      };
      if (!names.length) { add(app, el("p", { "class": "dim" }, "This run has no suites.")); report(); return; }
      // The first page of cases first, then the report: both need the run, the list needs less.
      caseBrowser(gen, state, names, function () { report(); gridCard(gen, runId, names, params); });
    }).catch(fail);
  }

  function caseBrowser(gen, state, names, then) {
    var list = el("div", { "class": "card" });
    var detail = el("div", { "class": "card detail", id: "case-detail", "data-testid": "case-detail" },
                    el("p", { "class": "dim" }, "Click a case to see its input, output, scores and trace."));
    add(app, el("div", { "class": "split" }, [list, detail]));
    var timer = null;

    function sync() {
      history.replaceState(null, "", runHref(state.run, { suite: state.suite, status: state.status, q: state.q,
        arm: state.arm, offset: state.offset || "", i: state.i === undefined ? "" : state.i }));
    }

    function load() {
      sync();
      getJSON("/api/runs/" + encodeURIComponent(state.run) + "/cases" + qs({ suite: state.suite, status: state.status,
        q: state.q, arm: state.arm, offset: state.offset, limit: PAGE })).then(function (page) {
        if (gen !== generation) return;
        draw(page);
        if (then) { var next = then; then = null; next(); }
      }).catch(fail);
    }

    function draw(page) {
      clear(list);
      var suiteSel = el("select", { "aria-label": "suite", onchange: function () {
        state.suite = suiteSel.value; state.offset = 0; state.arm = ""; state.i = undefined; load(); } });
      names.forEach(function (n) { add(suiteSel, el("option", { value: n, selected: n === state.suite ? "selected" : null }, n)); });
      var filters = el("div", { "class": "filters" }, [suiteSel]);
      var all = STATUSES.reduce(function (t, s) { return t + (page.counts[s] || 0); }, 0);
      [["", "all", all]].concat(STATUSES.map(function (s) { return [s, s.replace("_", " "), page.counts[s] || 0]; }))
        .forEach(function (b) {
          if (b[0] && !b[2]) return;
          add(filters, el("button", { "class": state.status === b[0] ? "on" : "", "data-status": b[0] || "all",
            onclick: function () { state.status = b[0]; state.offset = 0; load(); } }, b[1] + " " + b[2]));
        });
      if (page.arms.length > 1) {
        var armSel = el("select", { "aria-label": "arm", onchange: function () { state.arm = armSel.value; state.offset = 0; load(); } });
        add(armSel, el("option", { value: "" }, "all arms"));
        page.arms.forEach(function (a) { add(armSel, el("option", { value: a, selected: a === state.arm ? "selected" : null }, a)); });
        add(filters, armSel);
      }
      var search = el("input", { type: "search", placeholder: "filter by case id…", value: state.q, "aria-label": "filter by case id" });
      search.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () { state.q = search.value; state.offset = 0; load(); }, 200);
      });
      add(filters, search);
      add(list, filters);
      var body = el("tbody");
      page.rows.forEach(function (r) {
        var tr = el("tr", { "class": "click" + (String(r.i) === String(state.i) ? " sel" : ""), "data-case": r.case_id, "data-i": r.i,
          tabindex: 0, onkeydown: function (ev) { if (ev.key === "Enter") tr.click(); },
          onclick: function () {
            list.querySelectorAll("tr.sel").forEach(function (x) { x.className = "click"; });
            tr.className = "click sel";
            state.i = r.i; sync(); openCase(gen, state, detail);
          } }, [
          el("td", { "class": "id" }, breakable(r.case_id)),
          el("td", null, r.arm === "default" ? "" : r.arm),
          el("td", { "class": "n" }, r.attempt),
          el("td", { "class": "o-" + r.status }, r.status),
          el("td", { "class": "n" }, num(r.score, 2)),
          el("td", { "class": "n" }, r.cached ? "cached" : ms(r.latency_ms)),
          el("td", { "class": "err" }, r.error || "")
        ]);
        add(body, tr);
      });
      add(list, el("div", { "class": "scroll" }, el("table", { "class": "data", "data-testid": "cases" }, [
        el("thead", null, el("tr", null, [el("th", null, "case"), el("th", null, "arm"), el("th", { "class": "n" }, "#"),
          el("th", null, "status"), el("th", { "class": "n" }, "score"), el("th", { "class": "n" }, "latency"), el("th", null, "error")])),
        body])));
      var end = Math.min(page.offset + page.rows.length, page.total);
      add(list, el("div", { "class": "pager" }, [
        el("button", { disabled: page.offset <= 0 ? "disabled" : null, onclick: function () { state.offset = Math.max(0, page.offset - PAGE); load(); } }, "‹ prev"),
        el("span", { "data-testid": "pager" }, (page.total ? page.offset + 1 : 0) + "–" + end + " of " + page.total),
        el("button", { disabled: end >= page.total ? "disabled" : null, onclick: function () { state.offset = page.offset + PAGE; load(); } }, "next ›")
      ]));
      if (!page.rows.length) add(list, el("p", { "class": "dim" }, "No case matches."));
    }

    load();
    if (state.i !== undefined && state.i !== "") openCase(gen, state, detail);
  }

  function section(title, value) {
    return [el("h3", null, title), el("pre", { "class": "val" }, pretty(value))];
  }

  function voteTable(title, rows, keys) {
    var used = keys.filter(function (k) { return rows.some(function (r) { return r && r[k] !== undefined && r[k] !== null; }); });
    return [el("div", { "class": "dim" }, title + " (" + rows.length + ")"),
      el("div", { "class": "scroll" }, el("table", { "class": "data" }, [
        el("thead", null, el("tr", null, used.map(function (k) { return el("th", null, k.replace("_", " ")); }))),
        el("tbody", null, rows.map(function (r) {
          return el("tr", null, used.map(function (k) {
            var v = r ? r[k] : null;
            var bad = k === "verdict" && r && r.passed === false;
            return el("td", { "class": k === "verdict" ? (bad ? "o-failed" : r && r.passed ? "o-passed" : "") : (k === "error" ? "err" : "") },
              v === null || v === undefined ? "" : (typeof v === "object" ? JSON.stringify(v) : String(v)));
          }));
        }))]))];
  }

  function openCase(gen, state, detail) {
    clear(detail);
    add(detail, el("p", { "class": "dim" }, "loading…"));
    getJSON("/api/runs/" + encodeURIComponent(state.run) + "/case" + qs({ suite: state.suite, i: state.i })).then(function (d) {
      if (gen !== generation) return;
      var r = d.result;
      clear(detail);
      add(detail, el("div", { "class": "row" }, [el("h2", { "class": "mono", "data-testid": "case-title" }, r.case_id),
        el("span", { "class": "o-" + r.status }, r.status)]));
      var meta = el("dl", { "class": "meta" });
      [["suite", d.suite], ["arm", r.arm], ["attempt", r.attempt], ["score", num(r.score)], ["latency", r.cached ? "cached" : ms(r.latency_ms)],
       ["tokens", r.tokens_in === null && r.tokens_out === null ? "unknown" : (r.tokens_in === null ? "?" : r.tokens_in) + " in / " + (r.tokens_out === null ? "?" : r.tokens_out) + " out"],
       ["cost", money(r.cost_usd) + (r.cached ? " (cached)" : "")], ["cached", r.cached ? "yes" : "no"], ["started", when(r.started_at)],
       ["case digest", short(r.case_digest)]].forEach(function (m) {
        add(meta, [el("dt", null, m[0]), el("dd", null, String(m[1]))]);
      });
      add(detail, meta);
      if (r.error) add(detail, [el("h3", { "class": "err" }, "Error"), el("pre", { "class": "val err", "data-testid": "case-error" }, r.error.type + ": " + r.error.message)]);
      add(detail, section("Input", r.input));
      add(detail, section("Expected", r.expected));
      var out = el("pre", { "class": "val", "data-testid": "case-output" }, pretty(r.output));
      add(detail, [el("h3", null, "Output" + (r.truncated ? " (truncated)" : "")), out]);
      add(detail, el("h3", null, "Scores"));
      if (!r.scores.length) add(detail, el("p", { "class": "dim" }, "No scores."));
      r.scores.forEach(function (s) {
        var head = [el("strong", null, s.scorer), " ", s.passed === true ? badge("pass", "v-improved") : s.passed === false ? badge("fail", "v-regressed") : badge(s.abstained ? "abstained" : "no verdict"),
          " value " + num(s.value), s.verdict ? [" · verdict ", el("strong", null, s.verdict)] : null,
          s.judge_model ? " · judge " + s.judge_model : null];
        var box = el("div", { "class": "card", "data-testid": "score" }, [el("div", null, head)]);
        if (s.rationale) add(box, el("pre", { "class": "val" }, s.rationale));
        if (s.error) add(box, el("pre", { "class": "val err" }, s.error));
        var d = s.details || {};
        if (Array.isArray(d.judges) && d.judges.length) add(box, voteTable("Judge votes", d.judges, ["model", "verdict", "value", "rationale", "error"]));
        if (Array.isArray(d.paragraphs) && d.paragraphs.length) add(box, voteTable("Paragraphs", d.paragraphs, ["index", "verdict", "text", "rationale", "metadata_mismatch", "error"]));
        if (Object.keys(d).length) add(box, el("details", null, [el("summary", { "class": "dim" }, "all details (JSON)"), el("pre", { "class": "val" }, pretty(d))]));
        add(detail, box);
      });
      add(detail, el("h3", null, "Trace"));
      if (!r.trace || !r.trace.length) add(detail, el("p", { "class": "dim" }, r.trace ? "Empty trace." : "No trace recorded."));
      else add(detail, el("ol", null, r.trace.map(function (t) {
        var rest = {};
        Object.keys(t).forEach(function (k) { if (k !== "name") rest[k] = t[k]; });
        return el("li", null, [el("strong", null, String(t.name === undefined ? t.tool : t.name)), el("pre", { "class": "val" }, pretty(rest))]);
      })));
      if (r.metadata && Object.keys(r.metadata).length) add(detail, section("Metadata", r.metadata));
    }).catch(function (e) { clear(detail); add(detail, el("p", { "class": "err" }, "Could not load the case: " + e.message)); });
  }

  // ------------------------------------------------------------------ compare

  var NAMED = [["regressed", "Regressed"], ["improved", "Improved"], ["errored_new", "Newly errored"],
    ["errored_fixed", "No longer errored"], ["judge_error", "Judge errors (not compared)"],
    ["changed", "Changed content (not compared)"], ["added", "Added"], ["removed", "Removed"], ["not_run", "Not run"]];

  function change(m) {
    if (m.change === null) return "–";
    var sign = m.change > 0 ? "+" : "";
    return m.unit === "pct" ? sign + m.change.toFixed(1) + "%" : sign + m.change.toFixed(3);
  }

  function metricVal(m, v) {
    if (v === null) return "–";
    if (m.name === "cost_usd") return money(v);
    if (m.name === "latency_ms" || m.name === "latency_ms_p50") return ms(v);
    return m.name === "mean_score" ? num(v) : pct(v);
  }

  function compareView(gen, params) {
    setNav("compare");
    getJSON("/api/runs").then(function (data) {
      if (gen !== generation) return;
      clear(app);
      add(app, el("h1", null, "Run vs run"));
      add(app, el("p", { "class": "dim" }, "The verdict below is computed by compare_runs, the same function behind `evalh compare`."));
      if (data.runs.length < 2) { add(app, el("p", { "class": "dim" }, "Compare needs two runs.")); return; }
      var holder = el("div");
      var pick = function (label, chosen) {
        var sel = el("select", { "aria-label": label });
        data.runs.slice().reverse().forEach(function (r) {
          add(sel, el("option", { value: r.run_id, selected: r.run_id === chosen ? "selected" : null },
            r.run_id + (r.label ? " · " + r.label : "") + (r.run_id === data.baseline ? " (BASELINE)" : "")));
        });
        return sel;
      };
      getJSON("/api/compare" + qs({ base: params.base, candidate: params.candidate })).then(function (c) {
        if (gen !== generation) return;
        var bsel = pick("base run", c.base.run_id), csel = pick("candidate run", c.candidate.run_id);
        add(app, el("div", { "class": "row card" }, ["base", bsel, "candidate", csel,
          el("button", { onclick: function () { location.hash = "#/compare" + qs({ base: bsel.value, candidate: csel.value }); } }, "compare")]));
        add(app, holder);
        drawComparison(holder, c);
        pairBrowser(gen, holder, c, params);
      }).catch(fail);
    }).catch(fail);
  }

  function drawComparison(holder, c) {
    add(holder, el("div", { "class": "card" }, [
      el("div", { "class": "row" }, [el("span", { "class": "verdict v-" + c.verdict, "data-testid": "verdict" }, c.verdict),
        el("span", { "data-testid": "gate" }, c.fails_gate ? "the gate fails: `evalh compare --fail-on-regression` exits 1" : "the gate passes"),
        c.inconclusive ? badge("inconclusive rows", "v-inconclusive") : null]),
      (c.gate_reasons || []).length ? el("ul", { "class": "notes" }, c.gate_reasons.map(function (r) { return el("li", null, r); })) : null,
      c.family ? el("div", { "class": "dim" }, c.family.size ? c.family.size + " gating row(s) tested as one family (Holm): the chance that any is falsely called regressed is at most " + pctG(c.family.alpha) : "no statistical test (deterministic suites are by case name)") : null,
      el("div", { "class": "dim" }, ["base ", el("a", { href: runHref(c.base.run_id) }, c.base.run_id), c.base.label ? " (" + c.base.label + ")" : "",
        " → candidate ", el("a", { href: runHref(c.candidate.run_id) }, c.candidate.run_id), c.candidate.label ? " (" + c.candidate.label + ")" : ""])
    ]));
    c.warnings.forEach(function (w) { add(holder, el("div", { "class": "warnbox" }, w)); });
    if (c.config_differences.length) {
      add(holder, el("div", { "class": "card" }, [el("h2", null, "Config differences"),
        el("table", { "class": "data" }, [el("thead", null, el("tr", null, [el("th", null, "suite"), el("th", null, "key"), el("th", null, "base"), el("th", null, "candidate")])),
          el("tbody", null, c.config_differences.map(function (d) {
            return el("tr", null, [el("td", null, d.suite || "(run)"), el("td", { "class": "mono" }, d.key),
              el("td", { "class": "mono" }, pretty(d.base)), el("td", { "class": "mono" }, pretty(d.candidate))]);
          }))])]));
    }
    Object.keys(c.suites).forEach(function (name) {
      var s = c.suites[name];
      var card = el("div", { "class": "card", "data-suite": name }, [
        el("div", { "class": "row" }, [el("h2", null, name), badge(s.verdict, "v-" + s.verdict), s.regime ? el("span", { "class": "dim" }, s.regime) : null,
          s.partial ? badge("partial", "v-inconclusive") : null]),
        el("ul", { "class": "notes" }, s.reasons.map(function (r) { return el("li", null, r); })),
        el("div", { "class": "dim" }, s.counts.compared + " compared · " + s.counts.changed + " with changed content (not compared) · " + s.counts.added + " added · " +
          s.counts.removed + " removed · errored " + s.errors.base_errored + " → " + s.errors.candidate_errored +
          (s.coverage && s.coverage.share !== null ? " · coverage " + s.coverage.measured + "/" + s.coverage.of + " (" +
            (100 * s.coverage.share).toFixed(1) + " %, minimum " + (100 * s.coverage.minimum).toFixed(0) + " %)" : ""))
      ]);
      if (s.metrics.length) {
        add(card, el("div", { "class": "scroll" }, el("table", { "class": "data" }, [
          el("thead", null, el("tr", null, ["arm", "metric", "base", "candidate", "change", "allowed", "interval", "n", "method", "verdict"].map(function (h, i) {
            return el("th", { "class": i > 1 && i < 8 ? "n" : "" }, h); }))),
          el("tbody", null, s.metrics.map(function (m) {
            var iv = m.interval ? (m.unit === "pct" ? m.interval[0].toFixed(1) + "% … " + m.interval[1].toFixed(1) + "%" : m.interval[0].toFixed(3) + " … " + m.interval[1].toFixed(3)) : "–";
            var label = m.name === "score" ? "score " + m.scorer : (m.gating === false ? m.name + " (blended, not gating)" : m.name);
            return el("tr", null, [el("td", null, m.arm), el("td", null, label), el("td", { "class": "n" }, metricVal(m, m.base)),
              el("td", { "class": "n" }, metricVal(m, m.candidate)), el("td", { "class": "n" }, change(m)),
              el("td", { "class": "n" }, (m.unit === "pct" ? m.allowance + "%" : String(m.allowance))), el("td", { "class": "n" }, iv),
              el("td", { "class": "n" }, m.n), el("td", { "class": "dim" }, (m.estimand ? "estimand: " + m.estimand + "; " : "") + m.method + (m.note ? " — " + m.note : "")),
              el("td", null, [badge(m.verdict, "v-" + m.verdict), m.cases_needed ? el("span", { "class": "dim" }, " ~" + m.cases_needed + " cases to settle") : null])]);
          }))])));
      }
      NAMED.forEach(function (pair) {
        var items = s.cases[pair[0]] || [];
        if (!items.length) return;
        add(card, el("h3", null, pair[1] + " (" + items.length + ")"));
        add(card, el("ul", { "class": "plain", "data-testid": pair[0] + "-cases" }, items.map(function (ref) {
          return el("li", null, [el("a", { "class": "mono", href: "#/compare" + qs({ base: c.base.run_id, candidate: c.candidate.run_id,
              suite: name, filter: "all", q: ref.case_id, "case": ref.case_id, arm: ref.arm }) }, ref.case_id),
            ref.arm !== "default" ? " [" + ref.arm + "]" : "",
            el("span", { "class": "dim" }, "  " + (ref.base || "absent") + " → " + (ref.candidate || "absent"))]);
        })));
      });
      add(holder, card);
    });
  }


  // ------------------------------------------------------------------ grids: cases x arms, cases x attempts

  var FLAKY_TEXT = { stable_pass: "stable pass", flaky: "flaky", stable_fail: "stable fail", unknown: "unknown" };
  var FLAKY_CLASS = { stable_pass: "v-improved", flaky: "v-inconclusive", stable_fail: "v-regressed", unknown: "" };

  function gridCard(gen, runId, names, params) {
    var state = { suite: params.gsuite || names[0], by: params.by || "", arm: params.garm || "", sort: params.sort || "disagreement", offset: 0 };
    var card = el("div", { "class": "card", id: "grid", "data-testid": "grid-card" });
    add(app, card);

    function load() {
      getJSON("/api/runs/" + encodeURIComponent(runId) + "/matrix" + qs({ suite: state.suite, by: state.by, arm: state.by === "attempt" ? state.arm : "",
        sort: state.sort, offset: state.offset, limit: PAGE })).then(function (g) {
        if (gen !== generation) return;
        state.by = g.by; if (g.arm) state.arm = g.arm;
        draw(g);
      }).catch(function (e) { clear(card); add(card, el("p", { "class": "err" }, "Could not build the grid: " + e.message)); });
    }

    function draw(g) {
      clear(card);
      add(card, el("h2", null, g.by === "arm" ? "Cases × arms" : "Cases × attempts" + (g.arms.length > 1 ? " (arm " + g.arm + ")" : "")));
      add(card, el("p", { "class": "dim" }, g.by === "arm"
        ? "One cell per case and arm (its first attempt; passes over attempts when repeated), coloured by status. Sorted by how much the arms disagree. Click a cell for its whole output."
        : "One column per attempt, with each case's flakiness class. " + Object.keys(g.flakiness).map(function (k) { return g.flakiness[k] + " " + FLAKY_TEXT[k]; }).join(", ") + "."));
      var filters = el("div", { "class": "filters" });
      if (names.length > 1) {
        var sel = el("select", { "aria-label": "grid suite", onchange: function () { state.suite = sel.value; state.by = ""; state.arm = ""; state.offset = 0; load(); } });
        names.forEach(function (n) { add(sel, el("option", { value: n, selected: n === g.suite ? "selected" : null }, n)); });
        add(filters, sel);
      }
      if (g.arms.length > 1) add(filters, el("button", { "class": g.by === "arm" ? "on" : "", "data-by": "arm", onclick: function () { state.by = "arm"; state.offset = 0; load(); } }, "arms"));
      add(filters, el("button", { "class": g.by === "attempt" ? "on" : "", "data-by": "attempt", onclick: function () { state.by = "attempt"; state.offset = 0; load(); } }, "attempts"));
      if (g.by === "attempt" && g.arms.length > 1) {
        var asel = el("select", { "aria-label": "grid arm", onchange: function () { state.arm = asel.value; state.offset = 0; load(); } });
        g.arms.forEach(function (a) { add(asel, el("option", { value: a, selected: a === g.arm ? "selected" : null }, a)); });
        add(filters, asel);
      }
      add(filters, el("button", { "class": g.sort === "disagreement" ? "on" : "", "data-sort": "disagreement",
        onclick: function () { state.sort = "disagreement"; load(); } }, "most disagreement first"));
      add(filters, el("button", { "class": g.sort === "case" ? "on" : "", "data-sort": "case",
        onclick: function () { state.sort = "case"; load(); } }, "case order"));
      add(card, filters);
      if (g.arms.length < 2 && g.columns.length < 2) {
        add(card, el("p", { "class": "dim", "data-testid": "grid-none" }, "Suite " + g.suite + " has one arm and one attempt per case: nothing to lay side by side."));
        return;
      }
      var head = [el("th", null, "case")].concat(g.by === "attempt" ? [el("th", null, "class")] : [],
        g.columns.map(function (col) {
          return el("th", null, g.by === "arm" ? [col, col === g.baseline_arm ? [" ", badge("baseline")] : null] : "#" + col);
        }));
      var body = el("tbody");
      g.rows.forEach(function (row) {
        var cells = [el("td", { "class": "id" }, breakable(row.case_id))];
        if (g.by === "attempt") cells.push(el("td", null, badge(FLAKY_TEXT[row.flakiness], FLAKY_CLASS[row.flakiness])));
        g.columns.forEach(function (col) {
          var c = row.cells[col];
          if (!c) { cells.push(el("td", { "class": "cell missing", "data-case": row.case_id, "data-col": col }, el("span", { "class": "dim" }, "no result"))); return; }
          var out = el("pre", { "class": "preview" }, c.preview + (c.truncated ? "…" : ""));
          var td = el("td", { "class": "cell c-" + c.status, "data-case": row.case_id, "data-col": col, "data-status": c.status, title: "click for the whole output" }, [
            el("div", { "class": "cellhead" }, [el("strong", { "class": "o-" + c.status }, c.status),
              c.attempts > 1 ? " " + c.passes + "/" + c.attempts + " passed" : null,
              " · score " + num(c.score, 2)]),
            el("div", { "class": "dim" }, tokensText(c) + " · " + (c.cached ? "cached" : ms(c.latency_ms))), out]);
          td.addEventListener("click", function () {
            if (td.getAttribute("data-open")) { td.removeAttribute("data-open"); out.className = "preview"; clear(out); add(out, c.preview + (c.truncated ? "…" : "")); return; }
            td.setAttribute("data-open", "1");
            out.className = "preview open";
            if (!c.truncated) return;
            getJSON("/api/runs/" + encodeURIComponent(runId) + "/case" + qs({ suite: g.suite, i: c.i })).then(function (d) {
              if (td.getAttribute("data-open")) { clear(out); add(out, pretty(d.result.output)); }
            });
          });
          cells.push(td);
        });
        add(body, el("tr", { "data-case": row.case_id }, cells));
      });
      add(card, el("div", { "class": "scroll" }, el("table", { "class": "data grid", "data-testid": "grid" }, [el("thead", null, el("tr", null, head)), body])));
      var end = Math.min(g.offset + g.rows.length, g.total);
      add(card, el("div", { "class": "pager" }, [
        el("button", { disabled: g.offset <= 0 ? "disabled" : null, onclick: function () { state.offset = Math.max(0, g.offset - PAGE); load(); } }, "‹ prev"),
        el("span", { "data-testid": "grid-pager" }, (g.total ? g.offset + 1 : 0) + "–" + end + " of " + g.total + " cases"),
        el("button", { disabled: end >= g.total ? "disabled" : null, onclick: function () { state.offset = g.offset + PAGE; load(); } }, "next ›")
      ]));
    }

    load();
  }

  // ------------------------------------------------------------------ compare, case by case

  var PAIR_FILTERS = [["regressed", "regressed"], ["improved", "improved"], ["changed", "any change"],
    ["errored", "errored"], ["flaky", "flaky"], ["all", "all"]];
  var TAG_TEXT = { regressed: "regressed", improved: "improved", errored_new: "newly errored", errored_fixed: "no longer errored",
    content_changed: "case content changed", outcome_changed: "outcome changed", output_changed: "output changed",
    flaky_base: "flaky in base", flaky_candidate: "flaky in candidate", errored_base: "errored in base",
    errored_candidate: "errored in candidate", added: "added", removed: "removed" };
  var TAG_CLASS = { regressed: "v-regressed", errored_new: "v-regressed", improved: "v-improved", errored_fixed: "v-improved",
    added: "v-added", removed: "v-removed", content_changed: "v-incomparable" };

  function sideCell(side) {
    if (!side) return el("span", { "class": "dim" }, "absent");
    return side.statuses.map(function (st, k) {
      return [k ? " " : null, el("span", { "class": "o-" + st }, st)];
    });
  }

  function pairBrowser(gen, holder, c, params) {
    var state = { base: c.base.run_id, candidate: c.candidate.run_id, suite: params.suite || "",
                  filter: params.filter || "changed", q: params.q || "", offset: parseInt(params.offset || "0", 10) || 0,
                  "case": params["case"] || "", arm: params.arm || "" };
    var list = el("div");
    var detail = el("div", { "data-testid": "pair-detail" });
    var card = el("div", { "class": "card", id: "pairs", "data-testid": "pairs-card" }, [
      el("h2", null, "Cases, side by side"),
      el("p", { "class": "dim" }, "Every case of both runs, paired by case id and arm. Open one to see base and candidate side by side, with the words that changed."),
      list, detail]);
    add(holder, card);
    var timer = null;

    function sync() {
      history.replaceState(null, "", "#/compare" + qs({ base: state.base, candidate: state.candidate, suite: state.suite,
        filter: state.filter, q: state.q, offset: state.offset || "", "case": state["case"], arm: state["case"] ? state.arm : "" }));
    }

    function load() {
      sync();
      getJSON("/api/compare/cases" + qs({ base: state.base, candidate: state.candidate, suite: state.suite, filter: state.filter,
        q: state.q, offset: state.offset, limit: PAGE })).then(function (page) {
        if (gen !== generation) return;
        state.suite = page.suite;
        draw(page);
      }).catch(function (e) { clear(list); add(list, el("p", { "class": "err" }, "Could not list the cases: " + e.message)); });
    }

    function draw(page) {
      clear(list);
      var filters = el("div", { "class": "filters" });
      if (page.suites.length > 1) {
        var suiteSel = el("select", { "aria-label": "suite", onchange: function () {
          state.suite = suiteSel.value; state.offset = 0; state["case"] = ""; clear(detail); load(); } });
        page.suites.forEach(function (n) { add(suiteSel, el("option", { value: n, selected: n === page.suite ? "selected" : null }, n)); });
        add(filters, suiteSel);
      }
      PAIR_FILTERS.forEach(function (f) {
        add(filters, el("button", { "class": state.filter === f[0] ? "on" : "", "data-filter": f[0],
          onclick: function () { state.filter = f[0]; state.offset = 0; load(); } }, f[1] + " " + page.counts[f[0]]));
      });
      var search = el("input", { type: "search", placeholder: "search case ids and outputs…", value: state.q,
                                 "aria-label": "search case ids and outputs", "data-testid": "pair-search" });
      search.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () { state.q = search.value; state.offset = 0; load(); }, 200);
      });
      add(filters, search);
      add(list, filters);
      var body = el("tbody");
      page.rows.forEach(function (p) {
        var selected = p.case_id === state["case"] && (p.arm === (state.arm || "default"));
        var tr = el("tr", { "class": "click" + (selected ? " sel" : ""), "data-case": p.case_id, "data-arm": p.arm, tabindex: 0,
          onkeydown: function (ev) { if (ev.key === "Enter") tr.click(); },
          onclick: function () {
            list.querySelectorAll("tr.sel").forEach(function (x) { x.className = "click"; });
            tr.className = "click sel";
            state["case"] = p.case_id; state.arm = p.arm; sync(); openPair(gen, state, detail);
          } }, [
          el("td", { "class": "id" }, breakable(p.case_id)),
          el("td", null, p.arm === "default" ? "" : p.arm),
          el("td", null, sideCell(p.base)),
          el("td", null, sideCell(p.candidate)),
          el("td", { "class": "n" }, (p.base ? num(p.base.score, 2) : "–") + " → " + (p.candidate ? num(p.candidate.score, 2) : "–")),
          el("td", null, p.tags.map(function (t) { return [badge(TAG_TEXT[t] || t, TAG_CLASS[t] || ""), " "]; }))
        ]);
        add(body, tr);
      });
      add(list, el("div", { "class": "scroll" }, el("table", { "class": "data", "data-testid": "pairs" }, [
        el("thead", null, el("tr", null, [el("th", null, "case"), el("th", null, "arm"), el("th", null, "base"),
          el("th", null, "candidate"), el("th", { "class": "n" }, "score"), el("th", null, "what differs")])), body])));
      var end = Math.min(page.offset + page.rows.length, page.total);
      add(list, el("div", { "class": "pager" }, [
        el("button", { disabled: page.offset <= 0 ? "disabled" : null, onclick: function () { state.offset = Math.max(0, page.offset - PAGE); load(); } }, "‹ prev"),
        el("span", { "data-testid": "pairs-pager" }, (page.total ? page.offset + 1 : 0) + "–" + end + " of " + page.total),
        el("button", { disabled: end >= page.total ? "disabled" : null, onclick: function () { state.offset = page.offset + PAGE; load(); } }, "next ›")
      ]));
      if (!page.rows.length) add(list, el("p", { "class": "dim" }, "No case matches."));
    }

    load();
    if (state["case"]) openPair(gen, state, detail);
  }

  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

  function diffPre(ops, side) {
    var pre = el("pre", { "class": "val diff", "data-testid": "diff-" + side });
    ops.forEach(function (op) {
      if (op[0] === "eq") add(pre, op[1]);
      else if (op[0] === "del" && side === "base") add(pre, el("del", null, op[1]));
      else if (op[0] === "ins" && side === "candidate") add(pre, el("ins", null, op[1]));
    });
    return pre;
  }

  function tokensText(r) {
    return r.tokens_in === null && r.tokens_out === null ? "unknown" :
      (r.tokens_in === null ? "?" : r.tokens_in) + " in / " + (r.tokens_out === null ? "?" : r.tokens_out) + " out";
  }

  function scoreBox(s) {
    if (!s) return el("p", { "class": "dim" }, "not scored by this scorer");
    var box = el("div", { "data-testid": "pair-score" }, [el("div", null, [
      s.passed === true ? badge("pass", "v-improved") : s.passed === false ? badge("fail", "v-regressed") : badge(s.abstained ? "abstained" : "no verdict"),
      " value " + num(s.value), s.verdict ? [" · verdict ", el("strong", null, s.verdict)] : null, s.judge_model ? " · judge " + s.judge_model : null])]);
    if (s.rationale) add(box, el("pre", { "class": "val" }, s.rationale));
    if (s.error) add(box, el("pre", { "class": "val err" }, s.error));
    var d = s.details || {};
    if (Array.isArray(d.judges) && d.judges.length) add(box, voteTable("Judge votes", d.judges, ["model", "verdict", "value", "rationale", "error"]));
    if (Array.isArray(d.paragraphs) && d.paragraphs.length) add(box, voteTable("Paragraphs", d.paragraphs, ["index", "verdict", "text", "rationale", "error"]));
    return box;
  }

  function traceList(r) {
    if (!r || !r.trace || !r.trace.length) return el("p", { "class": "dim" }, r && r.trace ? "Empty trace." : "No trace recorded.");
    return el("ol", null, r.trace.map(function (t) {
      var rest = {};
      Object.keys(t).forEach(function (k) { if (k !== "name") rest[k] = t[k]; });
      return el("li", null, [el("strong", null, String(t.name === undefined ? t.tool : t.name)), el("pre", { "class": "val" }, pretty(rest))]);
    }));
  }

  function openPair(gen, state, detail) {
    clear(detail);
    add(detail, el("p", { "class": "dim" }, "loading…"));
    getJSON("/api/compare/case" + qs({ base: state.base, candidate: state.candidate, suite: state.suite,
      "case": state["case"], arm: state.arm })).then(function (d) {
      if (gen !== generation) return;
      var attempt = 0;
      var n = Math.max(d.base.length, d.candidate.length);
      function drawAttempt() {
        clear(detail);
        var b = d.base[attempt] || null, c = d.candidate[attempt] || null;
        var dd = d.diffs[attempt];
        add(detail, el("div", { "class": "row" }, [el("h2", { "class": "mono", "data-testid": "pair-title" }, d.case_id),
          d.arm !== "default" ? badge("arm " + d.arm) : null,
          b ? el("span", { "class": "o-" + b.status }, b.status) : el("span", { "class": "dim" }, "absent"), "→",
          c ? el("span", { "class": "o-" + c.status }, c.status) : el("span", { "class": "dim" }, "absent"),
          dd ? el("span", { "class": "dim", "data-testid": "changed-words" }, dd.same ? "outputs identical" : dd.changed_words + " word(s) changed" + (dd.by === "line" ? " (compared by line)" : "")) : null]));
        if (n > 1) {
          add(detail, el("div", { "class": "filters" }, ["attempt"].concat(Array.apply(null, Array(n)).map(function (_, k) {
            return el("button", { "class": k === attempt ? "on" : "", "data-attempt": k, onclick: function () { attempt = k; drawAttempt(); } },
              "#" + k + " " + (d.base[k] ? d.base[k].status : "–") + " → " + (d.candidate[k] ? d.candidate[k].status : "–"));
          }))));
        }
        var grid = el("div", { "class": "pair" });
        function both(title, fb, fc) {
          add(grid, [el("h3", { "class": "span2" }, title), el("div", { "class": "side" }, fb), el("div", { "class": "side" }, fc)]);
        }
        add(grid, [el("div", { "class": "side head" }, ["base ", el("span", { "class": "mono" }, d.base_run)]),
                   el("div", { "class": "side head" }, ["candidate ", el("span", { "class": "mono" }, d.candidate_run)])]);
        var meta = function (r) {
          if (!r) return el("p", { "class": "dim" }, "no result on this side");
          var m = el("dl", { "class": "meta" });
          [["status", r.status], ["score", num(r.score)], ["latency", r.cached ? "cached" : ms(r.latency_ms)], ["tokens", tokensText(r)],
           ["cost", money(r.cost_usd) + (r.cached ? " (cached)" : "")], ["cached", r.cached ? "yes" : "no"], ["case digest", short(r.case_digest)]].forEach(function (x) {
            add(m, [el("dt", null, x[0]), el("dd", { "class": x[0] === "status" ? "o-" + r.status : "" }, String(x[1]))]);
          });
          if (r.error) add(m, [el("dt", { "class": "err" }, "error"), el("dd", { "class": "err" }, r.error.type + ": " + r.error.message)]);
          return m;
        };
        if (dd) both("Output (struck: only in base; underlined: only in candidate)", diffPre(dd.ops, "base"), diffPre(dd.ops, "candidate"));
        else both("Output", b ? el("pre", { "class": "val", "data-testid": "diff-base" }, pretty(b.output)) : el("p", { "class": "dim" }, "absent"),
                  c ? el("pre", { "class": "val", "data-testid": "diff-candidate" }, pretty(c.output)) : el("p", { "class": "dim" }, "absent"));
        both("Outcome", meta(b), meta(c));
        if (b && c && same(b.input, c.input)) {
          add(grid, [el("h3", { "class": "span2" }, "Input (the same on both sides)"), el("pre", { "class": "val span2", "data-testid": "pair-input" }, pretty(b.input))]);
        } else {
          both("Input", b ? el("pre", { "class": "val" }, pretty(b.input)) : "", c ? el("pre", { "class": "val" }, pretty(c.input)) : "");
        }
        if (b && c && same(b.expected, c.expected)) {
          add(grid, [el("h3", { "class": "span2" }, "Expected"), el("pre", { "class": "val span2" }, pretty(b.expected))]);
        } else {
          both("Expected", b ? el("pre", { "class": "val" }, pretty(b.expected)) : "", c ? el("pre", { "class": "val" }, pretty(c.expected)) : "");
        }
        var scorers = [];
        [b, c].forEach(function (r) { (r ? r.scores : []).forEach(function (s) { if (scorers.indexOf(s.scorer) < 0) scorers.push(s.scorer); }); });
        if (!scorers.length) add(grid, el("p", { "class": "dim span2" }, "No scores on either side."));
        scorers.forEach(function (name) {
          var find = function (r) { return r ? r.scores.filter(function (s) { return s.scorer === name; })[0] : null; };
          both("Scorer " + name, scoreBox(find(b)), scoreBox(find(c)));
        });
        both("Trace", traceList(b), traceList(c));
        add(detail, grid);
      }
      drawAttempt();
    }).catch(function (e) { clear(detail); add(detail, el("p", { "class": "err" }, "Could not load the case: " + e.message)); });
  }

  // ------------------------------------------------------------------ router

  function render() {
    generation += 1;
    var gen = generation;
    var r = route();
    if (r.parts[0] === "run" && r.parts[1]) runView(gen, r.parts[1], r.params);
    else if (r.parts[0] === "compare") compareView(gen, r.params);
    else home(gen, r.params);
  }

  window.addEventListener("hashchange", render);
  render();
})();
