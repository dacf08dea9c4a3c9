"""Two runs case by case, for the HTML report of two runs: each (suite, case, arm) whose
outcome, score, output or content differs (or that errored or was flaky on either side),
with both sides' output as a word diff (`evalh.report.textdiff`) and every scorer's
score, verdict and rationale on each side.

The tags are the dashboard's (`/api/compare/cases`): `regressed` (passed, now failed or
errored), `improved`, `errored_new`, `errored_fixed`, `content_changed` (the case's digest
differs: not compared), `outcome_changed`, `output_changed`, `flaky_base`,
`flaky_candidate`, `errored_base`, `errored_candidate`, `added`, `removed` — here from the
first attempt of each side. The verdict of a comparison is `evalh compare`'s; this names
cases, it decides nothing.
"""

from __future__ import annotations

from typing import Any

from evalh.models import CaseResult, Run
from evalh.report.repeats import flakiness_of
from evalh.report.textdiff import as_text, word_diff

MAX_PAIRS = 500
"""Pairs listed per report (regressions first); the rest are counted."""

SEVERITY = {"regressed": 0, "errored_new": 1, "improved": 2, "errored_fixed": 3, "content_changed": 4,
            "outcome_changed": 5, "output_changed": 6, "added": 7, "removed": 7}


def _side(rs: list[CaseResult]) -> dict[str, Any]:
    r = rs[0]
    return {
        "statuses": [x.status for x in rs], "status": r.status, "score": r.score, "latency_ms": r.latency_ms,
        "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "cached": r.cached,
        "error": f"{r.error.type}: {r.error.message}" if r.error else None,
        "scores": [{"scorer": s.scorer, "value": s.value, "passed": s.passed, "verdict": s.verdict,
                    "rationale": s.rationale, "error": s.error} for s in r.scores],
    }


def case_pairs(base: Run, candidate: Run, *, limit: int = MAX_PAIRS) -> dict[str, Any]:
    """`{"base", "candidate", "pairs", "total", "counts"}`: the differing pairs of two runs."""
    pairs: list[dict[str, Any]] = []
    for suite in dict.fromkeys([*base.suites, *candidate.suites]):
        sides: dict[tuple[str, str], dict[str, list[CaseResult]]] = {}
        for key, run in (("base", base), ("candidate", candidate)):
            s = run.suites.get(suite)
            for r in s.cases if s else []:
                sides.setdefault((r.case_id, r.arm), {"base": [], "candidate": []})[key].append(r)
        for (case_id, arm), both in sides.items():
            b = sorted(both["base"], key=lambda r: r.attempt)
            c = sorted(both["candidate"], key=lambda r: r.attempt)
            tags: list[str] = []
            for name, rs in (("base", b), ("candidate", c)):
                if rs and flakiness_of([r.status for r in rs]) == "flaky":
                    tags.append(f"flaky_{name}")
                if any(r.status == "errored" for r in rs):
                    tags.append(f"errored_{name}")
            if not b:
                tags.append("added")
            elif not c:
                tags.append("removed")
            else:
                b0, c0 = b[0], c[0]
                if b0.case_digest != c0.case_digest:
                    tags.append("content_changed")
                else:
                    if b0.status == "passed" and c0.status in ("failed", "errored"):
                        tags.append("regressed")
                    if b0.status in ("failed", "errored") and c0.status == "passed":
                        tags.append("improved")
                    if c0.status == "errored" and b0.status != "errored":
                        tags.append("errored_new")
                    if b0.status == "errored" and c0.status != "errored":
                        tags.append("errored_fixed")
                if (b0.status, b0.score) != (c0.status, c0.score):
                    tags.append("outcome_changed")
                if as_text(b0.output) != as_text(c0.output):
                    tags.append("output_changed")
            if not tags:
                continue
            pairs.append({
                "suite": suite, "case_id": case_id, "arm": arm, "tags": tags,
                "input": as_text((b or c)[0].input), "expected": as_text((b or c)[0].expected),
                "base": _side(b) if b else None, "candidate": _side(c) if c else None,
                "diff": word_diff(b[0].output if b else None, c[0].output if c else None),
            })
    pairs.sort(key=lambda p: min((SEVERITY.get(t, 9) for t in p["tags"]), default=9))
    counts: dict[str, int] = {}
    for p in pairs:
        tagged: set[str] = set(p["tags"])
        for view, wanted in VIEWS.items():
            if wanted is None or tagged & wanted:
                counts[view] = counts.get(view, 0) + 1
    return {"base": base.run_id, "candidate": candidate.run_id, "total": len(pairs),
            "counts": counts, "pairs": pairs[:limit]}


VIEWS: dict[str, set[str] | None] = {
    "regressed": {"regressed", "errored_new"},
    "improved": {"improved", "errored_fixed"},
    "changed": {"regressed", "improved", "errored_new", "errored_fixed", "content_changed",
                "outcome_changed", "output_changed", "added", "removed"},
    "errored": {"errored_base", "errored_candidate"},
    "flaky": {"flaky_base", "flaky_candidate"},
    "all": None,
}
"""The report's filter buttons (as the dashboard's views)."""


def view_tags(tags: list[str]) -> str:
    """The views a pair belongs to, space-separated (for the page's filter buttons)."""
    return " ".join(v for v, wanted in VIEWS.items() if wanted is None or set(tags) & wanted)
