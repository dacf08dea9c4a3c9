"""One colour per suite, the same on every surface (dashboard, HTML report).

A suite's colour is a slot of `PALETTE` picked from a stable hash of its name (CRC-32), so
it does not depend on which runs a page shows; two suites of one page that hash to the same
slot are moved to the next free slot in name order. The dashboard gets the slots from the
server and the HTML report from its renderer, both from `suite_colors`; the stylesheets of
both (`dashboard.css`, `templates/report.css`) define `.s0` … `.s7` with these colours
(a test holds them equal).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

PALETTE = ("#3b5bdb", "#e8590c", "#2f9e44", "#9c36b5", "#0c8599", "#c2255c", "#495057", "#795548")


def suite_of(series: str) -> str:
    """The suite a series is about: `answers · haiku p50` is about `answers`."""
    return series.split(" · ", 1)[0]


def suite_colors(names: Iterable[str]) -> dict[str, int]:
    """Palette slot of each suite name (series names are reduced to their suite)."""
    suites = sorted({suite_of(n) for n in names})
    taken: dict[int, str] = {}
    out: dict[str, int] = {}
    for name in suites:
        slot = zlib.crc32(name.encode("utf-8")) % len(PALETTE)
        for step in range(len(PALETTE)):
            cand = (slot + step) % len(PALETTE)
            if cand not in taken:
                slot = cand
                break
        taken.setdefault(slot, name)
        out[name] = slot
    return out


MARKERS = ("circle", "square", "triangle", "diamond", "down", "cross")
"""The point shapes of a suite's arms, in order (the dashboard's `MARKERS`, drawn alike)."""

DASHES = ("", "5 3", "2 2", "8 3 2 3")
"""Line patterns of a suite's arms, in order: the arms of one suite share its colour, so
each arm differs by marker and by dash."""


def marker_path(shape: str, cx: float, cy: float, r: float) -> str:
    """An SVG path of a marker centred on (cx, cy), as the dashboard's `marker` draws it."""
    def f(v: float) -> str:
        return f"{v:.2f}".rstrip("0").rstrip(".")

    if shape == "circle":
        return (f"M{f(cx - r)},{f(cy)}a{f(r)},{f(r)} 0 1,0 {f(2 * r)},0a{f(r)},{f(r)} 0 1,0 {f(-2 * r)},0z")
    if shape == "square":
        return f"M{f(cx - r)},{f(cy - r)}h{f(2 * r)}v{f(2 * r)}h{f(-2 * r)}z"
    if shape == "triangle":
        return f"M{f(cx)},{f(cy - r * 1.2)}L{f(cx + r * 1.1)},{f(cy + r * 0.9)}L{f(cx - r * 1.1)},{f(cy + r * 0.9)}z"
    if shape == "down":
        return f"M{f(cx)},{f(cy + r * 1.2)}L{f(cx + r * 1.1)},{f(cy - r * 0.9)}L{f(cx - r * 1.1)},{f(cy - r * 0.9)}z"
    if shape == "diamond":
        return f"M{f(cx)},{f(cy - r * 1.3)}L{f(cx + r * 1.3)},{f(cy)}L{f(cx)},{f(cy + r * 1.3)}L{f(cx - r * 1.3)},{f(cy)}z"
    return f"M{f(cx - r)},{f(cy - r)}L{f(cx + r)},{f(cy + r)}M{f(cx + r)},{f(cy - r)}L{f(cx - r)},{f(cy + r)}"
