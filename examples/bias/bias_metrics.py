"""A custom suite metric: verdict skew, the share of results a suite passes. A pass rate
above 90 % on bias fixtures says the judging is over-permissive (the reference harness's
"verdict skew"), whatever each case says."""

from __future__ import annotations

from typing import Any


def verdict_skew(results: list[Any], suite: dict[str, Any]) -> dict[str, Any]:
    decided = [r for r in results if r.status in ("passed", "failed")]
    passed = sum(r.status == "passed" for r in decided)
    return {"pass_share": {"numerator": passed, "denominator": len(decided),
                           "value": passed / len(decided) if decided else None,
                           "threshold": 0.9, "direction": "above",
                           "note": f"passed ÷ decided results of suite {suite['name']}"}}
