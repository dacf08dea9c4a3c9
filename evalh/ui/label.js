/* evalh labelling page. Every text from the server (requests, rubric, labels) is set with
   textContent, never parsed as HTML. Ratings are saved one request at a time to
   /api/ratings, bound to the request digest and rubric digest the server sent. */
(function () {
  "use strict";
  var S = null, idx = 0, active = 0, answers = null, qs = [];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function $(id) { return document.getElementById(id); }
  function status(text, isError) { var s = $("status"); s.textContent = text; s.className = isError ? "error" : ""; }
  function show(v) { return v === null ? "cannot tell" : String(v); }
  function clone(v) { return JSON.parse(JSON.stringify(v)); }

  function questions(req) {
    var sch = S.rubric.scheme, names = Object.keys(sch.kinds);
    var kind = sch.kinds[req.kind || names[0]], out = [];
    kind.fields.forEach(function (f) { out.push({ section: "fields", key: f, label: f, spec: sch.fields[f] }); });
    if (kind.claims && sch.claims) {
      (req.claims || []).forEach(function (c) {
        Object.keys(sch.claims.fields).forEach(function (cf) {
          out.push({ section: "claims", key: c.id, sub: cf, label: "claim " + c.id + " · " + cf,
                     spec: sch.claims.fields[cf], claim: c.id });
        });
      });
    }
    kind.dimensions.forEach(function (d) { out.push({ section: "dimensions", key: d, label: d, spec: sch.dimensions[d] }); });
    return out;
  }
  function get(q) {
    var sec = answers[q.section] || {};
    if (q.section === "claims") return sec[q.key] ? sec[q.key][q.sub] : undefined;
    return sec[q.key];
  }
  function put(q, v) {
    answers[q.section] = answers[q.section] || {};
    if (q.section === "claims") {
      answers.claims[q.key] = answers.claims[q.key] || {};
      answers.claims[q.key][q.sub] = v;
    } else {
      answers[q.section][q.key] = v;
    }
  }
  function options(q) {
    var vals = q.spec.values ? q.spec.values.slice() : null;
    return vals;
  }
  function complete() { return qs.every(function (q) { return get(q) !== undefined; }); }
  function rated() { return Object.keys(S.ratings).length; }

  function renderOutput(req) {
    var box = el("div", "output"), out = req.output;
    box.id = "output";
    if (out && typeof out === "object" && typeof out.text === "string" && req.claims && req.claims.length) {
      var text = out.text, at = 0;
      req.claims.slice().sort(function (a, b) { return a.start - b.start; }).forEach(function (c) {
        if (c.start < at) return;
        box.appendChild(document.createTextNode(text.slice(at, c.start)));
        var m = el("mark", null, text.slice(c.start, c.end));
        m.setAttribute("data-claim", c.id);
        m.title = "claim " + c.id;
        box.appendChild(m);
        at = c.end;
      });
      box.appendChild(document.createTextNode(text.slice(at)));
    } else {
      box.textContent = typeof out === "string" ? out : JSON.stringify(out, null, 2);
    }
    return box;
  }

  function render() {
    var req = S.requests[idx];
    $("progress").textContent = "Request " + (idx + 1) + " of " + S.requests.length + " · " + rated() + " rated";
    var r = $("request");
    r.textContent = "";
    r.appendChild(el("h2", null, (req.kind ? req.kind + " · " : "") + req.request_id +
                     (S.ratings[req.request_id] ? " (rated)" : "")));
    r.appendChild(el("h3", null, "input"));
    r.appendChild(el("pre", null, JSON.stringify(req.input, null, 2)));
    r.appendChild(el("h3", null, "output"));
    r.appendChild(renderOutput(req));
    var box = $("questions");
    box.textContent = "";
    qs.forEach(function (q, i) {
      var row = el("div", "q" + (i === active ? " active" : ""));
      row.setAttribute("data-q", String(i));
      row.appendChild(el("span", "label", q.label));
      var vals = options(q);
      if (vals === null) {
        var inp = el("input");
        inp.type = "text";
        inp.value = get(q) === undefined || get(q) === null ? "" : String(get(q));
        inp.addEventListener("input", function () { put(q, inp.value); });
        row.appendChild(inp);
      } else {
        vals.forEach(function (v, k) {
          var b = el("button", "opt" + (get(q) === v ? " chosen" : ""), (k + 1) + " " + show(v));
          b.type = "button";
          b.addEventListener("click", function () { choose(i, v); });
          row.appendChild(b);
        });
      }
      if (q.spec.allow_null) {
        var n = el("button", "opt" + (get(q) === null ? " chosen" : ""), "0 cannot tell");
        n.type = "button";
        n.addEventListener("click", function () { choose(i, null); });
        row.appendChild(n);
      }
      box.appendChild(row);
    });
    document.querySelectorAll("mark").forEach(function (m) {
      var q = qs[active];
      if (q && q.claim === m.getAttribute("data-claim")) m.className = "current";
    });
  }

  function choose(i, v) {
    active = i;
    put(qs[i], v);
    var next = qs.findIndex(function (q, k) { return k > i && get(q) === undefined; });
    if (next >= 0) active = next;
    else if (i + 1 < qs.length) active = i + 1;
    render();
  }

  function open(i) {
    idx = Math.max(0, Math.min(S.requests.length - 1, i));
    var req = S.requests[idx];
    answers = clone(S.ratings[req.request_id] || {});
    qs = questions(req);
    active = Math.max(0, qs.findIndex(function (q) { return get(q) === undefined; }));
    status("");
    render();
  }

  function save() {
    var req = S.requests[idx];
    if (!complete()) { status("answer every question first (" + qs.filter(function (q) { return get(q) === undefined; }).length + " left)", true); return; }
    var body = { request_id: req.request_id, request_sha256: req.request_sha256, rubric_sha256: S.rubric.sha256 };
    ["fields", "claims", "dimensions"].forEach(function (k) { if (answers[k]) body[k] = answers[k]; });
    fetch("/api/ratings", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
      .then(function (r) { return r.json().then(function (j) { return [r.ok, j]; }); })
      .then(function (res) {
        if (!res[0]) { status(res[1].error || "not saved", true); return; }
        // the server's view: a rating bound to content is every identical request's too
        S.ratings = res[1].ratings || S.ratings;
        S.ratings[req.request_id] = S.ratings[req.request_id] || clone(answers);
        var next = S.requests.findIndex(function (q, k) { return k > idx && !S.ratings[q.request_id]; });
        if (next < 0) next = S.requests.findIndex(function (q) { return !S.ratings[q.request_id]; });
        if (next < 0) { render(); status("saved; every request is rated"); return; }
        open(next);
        status("saved");
      })
      .catch(function (e) { status("not saved: " + e, true); });
  }

  document.addEventListener("keydown", function (e) {
    if (!S || e.target && e.target.tagName === "INPUT" && e.key !== "Enter") return;
    var q = qs[active];
    if (/^[0-9]$/.test(e.key) && q) {
      var vals = options(q), k = Number(e.key);
      if (k === 0 && q.spec.allow_null) choose(active, null);
      else if (vals && k >= 1 && k <= vals.length) choose(active, vals[k - 1]);
      e.preventDefault();
    } else if (e.key === "ArrowDown") { active = Math.min(qs.length - 1, active + 1); render(); e.preventDefault(); }
    else if (e.key === "ArrowUp") { active = Math.max(0, active - 1); render(); e.preventDefault(); }
    else if (e.key === "Enter") { save(); e.preventDefault(); }
    else if (e.key === "ArrowRight") { open(idx + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { open(idx - 1); e.preventDefault(); }
  });
  $("save").addEventListener("click", save);

  fetch("/api/session").then(function (r) { return r.json(); }).then(function (s) {
    S = s;
    $("rater").textContent = "rater: " + s.rater;
    $("rubric-text").textContent = s.rubric.text;
    var first = s.requests.findIndex(function (q) { return !s.ratings[q.request_id]; });
    open(first < 0 ? 0 : first);
    if (first < 0) status("every request is rated");
  }).catch(function (e) { status("cannot load the session: " + e, true); });
})();
