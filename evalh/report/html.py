"""The self-contained HTML report: one file, inline CSS and JS, charts as inline SVG.

Rendered by Jinja2 with autoescaping on, so every string from a run is escaped by the
template engine. The report data is embedded for scripts as JSON inside
`<script type="application/json">` with `<`, `>` and `&` escaped, so no value can close
the script element. A Content-Security-Policy meta tag allows only the report's own
script (by hash) and inline styles: no network request of any kind, and an injected
script would not run even if escaping were ever missed.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources
from typing import Any

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from evalh.numbers import rate
from evalh.report import blocks
from evalh.report.models import ArmReport, Report, SuiteReport

OUTCOMES = ("passed", "failed", "errored", "judge_error", "skipped")


def json_for_script(value: Any) -> Markup:
    """JSON safe to place inside a `<script>` element: `<`, `>`, `&`, U+2028/9 escaped."""
    text = orjson.dumps(value).decode()
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return Markup(text)


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("evalh.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "svg"), default=True),
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(rate=blocks.rate, num=blocks.num, ms=blocks.ms, money=blocks.money,
                       ci=blocks.ci, tokens=blocks.tokens, cost=blocks.cost,
                       mean_score=blocks.mean_score, calibration=blocks.calibration,
                       cases_attempts=blocks.cases_attempts)
    return env


def _asset(name: str) -> str:
    return resources.files("evalh.report").joinpath("templates", name).read_text(encoding="utf-8")


def csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def _bar(arm: ArmReport, width: float = 420.0) -> list[dict[str, Any]]:
    """Segments of the outcome bar of one arm: x and width in SVG units, with counts."""
    c = arm.counts
    total = c.n or 1
    x, out = 0.0, []
    for name in OUTCOMES:
        count = getattr(c, name)
        if not count:
            continue
        w = width * count / total
        out.append({"outcome": name, "count": count, "x": round(x, 2), "w": round(w, 2)})
        x += w
    return out


def run_tick(run: Any) -> tuple[str, str]:
    """A run's name under an axis: its label or short id, and its date-time (MM-DD HH:MM),
    so two runs of one day are told apart."""
    name = run.label or run.run_id[-6:]
    if len(name) > 16:
        name = name[:15] + "…"
    return name, run.started_at[5:16].replace("T", " ")


def _ticks(report: Report) -> list[dict[str, Any]]:
    """Labels under the trend's x axis: every run when they fit (7), else evenly spaced
    ones, the first and the last always."""
    n = len(report.runs)
    if n < 2:
        return []
    step = (560.0 - 2 * 28.0) / (n - 1)
    every = max(1, -(-(n - 1) // 6))
    keep = [j for j in range(n) if j % every == 0 and (n - 1 - j >= every or j == 0)] + [n - 1]
    out = []
    for j in dict.fromkeys(keep):
        name, when = run_tick(report.runs[j])
        out.append({"x": round(28.0 + j * step, 1), "name": name, "when": when, "run": report.runs[j].run_id,
                    "anchor": "start" if j == 0 else ("end" if j == n - 1 else "middle")})
    return out


def _trend(report: Report) -> list[dict[str, Any]]:
    """Pass rate per (suite, arm) across the runs of the report, in the order given; one
    series per suite and arm, a gap where a run has no decisive result. A suite has its
    colour (`evalh.report.colors`, as on the dashboard); the arms of one suite share it and
    differ by marker shape and line dash, in the legend too; series are offset by a pixel
    or two so equal values stay visible."""
    from evalh.report.colors import DASHES, MARKERS, marker_path, suite_colors, suite_of

    if len(report.runs) < 2:
        return []
    ids = [r.run_id for r in report.runs]
    series: dict[str, list[Any]] = {}
    for s in report.suites:
        for arm in s.arms:
            key = s.suite if arm.arm == "default" else f"{s.suite} · {arm.arm}"
            c = arm.counts
            series.setdefault(key, [None] * len(ids))[ids.index(s.run_id)] = (
                None if c.pass_rate is None else (c.pass_rate, c.passed, c.pass_rate_denominator))
    colors = suite_colors(series)
    w, h, pad = 560.0, 160.0, 28.0
    step = (w - 2 * pad) / max(1, len(ids) - 1)
    out = []
    markers: dict[str, int] = {}
    for i, (name, values) in enumerate(series.items()):
        dx = (i - (len(series) - 1) / 2) * min(3.0, 12.0 / len(series))
        suite = suite_of(name)
        markers[suite] = markers.get(suite, -1) + 1
        shape = MARKERS[markers[suite] % len(MARKERS)]
        pts = [{"x": round(pad + j * step + dx, 1), "y": round(h - pad - v[0] * (h - 2 * pad), 1),
                "text": rate(v[0], v[1], v[2]), "run": ids[j]} for j, v in enumerate(values) if v is not None]
        for p in pts:
            p["d"] = marker_path(shape, p["x"], p["y"], 3.4)
        out.append({"name": name, "points": pts, "cls": f"s{colors[suite]}", "shape": shape,
                    "dash": DASHES[markers[suite] % len(DASHES)], "swatch": marker_path(shape, 9, 5, 3.2)})
    return out


def _suite_view(idx: int, s: SuiteReport) -> dict[str, Any]:
    return {"idx": idx, "suite": s, "bars": [(arm, _bar(arm)) for arm in s.arms]}


def to_html(report: Report, *, title: str | None = None, pairs: dict[str, Any] | None = None,
            matrices: list[dict[str, Any]] | None = None) -> str:
    """The report as one self-contained HTML document (works offline, from file://).
    `pairs`: two runs case by case (`evalh.report.pairs.case_pairs`), drawn side by side;
    `matrices`: each suite with several arms as its cases × arms grid
    (`evalh.report.matrix.arms_matrices`, the grid the dashboard draws)."""
    from evalh.report.pairs import VIEWS, view_tags

    script = _asset("report.js")
    page = environment().get_template("report.html.j2").render(
        report=report,
        title=title or ("evalh report · " + ", ".join(r.run_id for r in report.runs)),
        views=[_suite_view(i, s) for i, s in enumerate(report.suites, 1)],
        summary=blocks.summary_blocks(report)[1:],  # the heading is the section's own
        trend=_trend(report),
        ticks=_ticks(report),
        css=Markup(_asset("report.css")),
        script=Markup(script),
        csp=f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {csp_hash(script)}",
        data=json_for_script(report.to_dict()),
        outcomes=OUTCOMES,
        pairs=pairs, pair_views=list(VIEWS), view_tags=view_tags, matrices=matrices or [],
    )
    return page
