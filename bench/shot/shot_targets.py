"""The products the screenshots' project evaluates (bench/shot/evalh.toml): deterministic
stand-ins, so every screenshot is the same run after run. `SHOT_VERSION` (set by
bench/dashboard_screenshot.py for each run) picks the product's version."""

from __future__ import annotations

import os
from typing import Any

LENSES = ("dates", "figures", "quotes", "scope")


def _version() -> int:
    return int(os.environ.get("SHOT_VERSION", "0"))


def gate(inp: dict[str, Any]) -> dict[str, str]:
    """A sourcing gate: accepts a truthful notation and rejects a planted lie, except the
    cases each version gets wrong (a regression at version 5, a fix at version 3)."""
    n, k = inp["n"], _version()
    wrong = {11} if k < 3 else set()
    wrong |= {5, 17} if k >= 5 else set()
    wrong |= {23} if k in (1, 2) else set()
    right = "reject" if inp["planted"] else "accept"
    return {"verdict": ("accept" if right == "reject" else "reject") if n in wrong else right}


def triage(inp: dict[str, Any]) -> dict[str, Any]:
    """A risk score per message (the stored model score) and the decision at 0.5."""
    return {"risk": inp["risk"], "flag": inp["risk"] >= 0.5}


def panel(inp: dict[str, Any]) -> dict[str, Any]:
    """A refuter panel of five lenses; the `provenance` lens's lookup times out on every
    call (a dead lens), the others miss now and then."""
    out: dict[str, Any] = {}
    for j, lens in enumerate(LENSES):
        miss = (inp["n"] * 7 + j * 3) % 11 == 0
        out[lens] = ("survived" if inp["bad"] else "refuted") if miss else ("refuted" if inp["bad"] else "survived")
    out["provenance"] = {"error": "provenance lookup timed out"}
    return {"lenses": out}
