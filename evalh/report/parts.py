"""Pieces of a report computed from one set of results: counts, economics, verdicts, worst
cases, `--by` breakdowns and tool usage. Pure functions over `CaseResult`s."""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from evalh.core.aggregate import aggregate, percentile, rate
from evalh.models import Aggregate, CaseResult, Score
from evalh.report.models import (
    Breakdown,
    Counts,
    Economics,
    GroupRow,
    ToolRow,
    ToolUsage,
    VerdictCount,
    VerdictDistribution,
    WorstCase,
)

BAD = ("failed", "errored")
"""Outcomes that count as the product going bad. `judge_error` is not one: the product
answered and a judge could not tell."""

DECISIVE = ("passed", "failed", "errored")
"""Outcomes that say something about the product (an errored result is never a pass)."""

GOOD_PARAGRAPH_VERDICTS = frozenset({"supported", "pass", "passed", "correct", "ok", "yes"})
"""Paragraph verdicts read as good when a paragraph carries neither `passed` nor its scorer
a `pass_verdicts` list."""

MISSING = "(none)"


def counts(results: Sequence[CaseResult], agg: Aggregate | None = None) -> Counts:
    """Outcome counts with denominators, from the one `aggregate` the runner uses
    (`agg`: that aggregate of `results`, when the caller already has it)."""
    return Counts.of(agg or aggregate(results))


def economics(results: Sequence[CaseResult], agg: Aggregate | None = None) -> Economics:
    """Token and cost sums over the results that reported them; null when none did."""
    agg = agg or aggregate(results)
    with_tokens = [r for r in results if r.tokens_in is not None or r.tokens_out is not None]
    tin = [r.tokens_in for r in results if r.tokens_in is not None]
    tout = [r.tokens_out for r in results if r.tokens_out is not None]
    latencies = [r.latency_ms for r in results
                 if not r.cached and r.latency_ms is not None and r.status != "skipped"]
    return Economics(
        tokens_in=sum(tin) if tin else None,
        tokens_out=sum(tout) if tout else None,
        tokens_reported=len(with_tokens),
        cost_usd=agg.cost_usd,
        cost_reported=sum(1 for r in results if r.cost_usd is not None),
        cost_unknown=agg.cost_unknown,
        cached=agg.cached,
        latency_ms_p50=agg.latency_ms_p50,
        latency_ms_p95=agg.latency_ms_p95,
        latency_denominator=len(latencies),
    )


# --------------------------------------------------------------------------- verdicts


def paragraphs(score: Score) -> list[tuple[str, bool]]:
    """(verdict, bad) of each paragraph in `score.details["paragraphs"]`, if any.

    A paragraph is bad when it says `passed: false`; else when its verdict is outside the
    scorer's `pass_verdicts` (details) or, lacking those, outside
    `GOOD_PARAGRAPH_VERDICTS`. A paragraph the judge could not judge (it carries `error`)
    is `(judge error)` and never bad: the product is not blamed for the judge.
    """
    items = score.details.get("paragraphs") if isinstance(score.details, dict) else None
    if not isinstance(items, list):
        return []
    good = score.details.get("pass_verdicts")
    good_set = frozenset(str(v) for v in good) if isinstance(good, list) else GOOD_PARAGRAPH_VERDICTS
    out: list[tuple[str, bool]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("error") is not None:
            out.append(("(judge error)", False))
            continue
        verdict = str(item.get("verdict")) if item.get("verdict") is not None else "(no verdict)"
        passed = item.get("passed")
        bad = (passed is False) if isinstance(passed, bool) else verdict not in good_set
        out.append((verdict, bad))
    return out


def verdicts(results: Sequence[CaseResult]) -> list[VerdictDistribution]:
    """Per scorer, the distribution of its verdicts; and of its paragraph verdicts."""
    by_result: dict[str, Counter[str]] = defaultdict(Counter)
    by_para: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        for s in r.scores:
            if s.verdict is not None:
                by_result[s.scorer][s.verdict] += 1
            for verdict, _ in paragraphs(s):
                by_para[s.scorer][verdict] += 1
    out = []
    for level, table in (("result", by_result), ("paragraph", by_para)):
        for scorer in sorted(table):
            c = table[scorer]
            total = sum(c.values())
            rows = [VerdictCount(verdict=v, count=n, share=rate(n, total), denominator=total)
                    for v, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]
            out.append(VerdictDistribution(scorer=scorer, level=level, total=total, verdicts=rows))  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------- worst cases


def _why(r: CaseResult) -> str | None:
    if r.error is not None:
        return f"{r.error.type}: {r.error.message}"
    for s in r.scores:
        if s.passed is False or s.error:
            return s.error or s.rationale
    return None


def worst_cases(results: Sequence[CaseResult], limit: int = 10) -> list[WorstCase]:
    """Cases with the most failed or errored attempts, then the most bad paragraphs."""
    by_case: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_case[r.case_id].append(r)
    ranked = []
    for cid, rs in by_case.items():
        failed = sum(r.status == "failed" for r in rs)
        errored = sum(r.status == "errored" for r in rs)
        paras = [p for r in rs for s in r.scores if s.details for p in paragraphs(s)]
        bad = sum(b for _, b in paras)
        if failed or errored or bad:
            ranked.append((-(failed + errored), -bad, cid, failed, errored, len(paras)))
    out = []
    for _, neg_bad, cid, failed, errored, n_paras in heapq.nsmallest(limit, ranked):
        rs = sorted(by_case[cid], key=lambda r: r.attempt)
        out.append(WorstCase(
            case_id=cid, attempts=len(rs), failed=failed, errored=errored,
            judge_error=sum(r.status == "judge_error" for r in rs),
            bad_paragraphs=-neg_bad, paragraphs=n_paras,
            why=next((w for w in map(_why, rs) if w), None),
        ))
    return out


# --------------------------------------------------------------------------- breakdowns


def metadata_values(r: CaseResult, field: str) -> list[str]:
    """The group(s) a result falls in for `field`; a list value puts it in each."""
    value: Any = r.metadata.get(field)
    if value is None or value == []:
        return [MISSING]
    if isinstance(value, list):
        return sorted({str(v) for v in value})
    return [str(value)]


def breakdown(results: Sequence[CaseResult], field: str) -> Breakdown:
    """Counts per value of one metadata field (`split`, `stratum`, `complexity`, …)."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    listy = False
    for r in results:
        listy = listy or isinstance(r.metadata.get(field), list)
        for v in metadata_values(r, field):
            groups[v].append(r)
    rows = []
    for value in sorted(groups, key=lambda v: (v == MISSING, v)):
        rs = groups[value]
        lat = [r.latency_ms for r in rs if r.latency_ms is not None and not r.cached]
        rows.append(GroupRow(value=value, cases=len({r.case_id for r in rs}), counts=counts(rs),
                             latency_ms_p50=percentile(lat, 50)))
    note = (f"`{field}` holds lists: a case is counted once under each of its values, "
            "so the rows do not add up to the total") if listy else None
    if groups and set(groups) == {MISSING}:
        note = f"no case carries metadata `{field}`"
    return Breakdown(field=field, rows=rows, note=note)


def tool_names(trace: Iterable[Any] | None) -> list[str]:
    """Tool names in a stored trace, in call order (`name`, else `tool`)."""
    names = []
    for step in trace or []:
        if isinstance(step, dict):
            name = step.get("name", step.get("tool"))
            if name is not None:
                names.append(str(name))
    return names


def tool_usage(results: Sequence[CaseResult]) -> ToolUsage | None:
    """For each tool: the cases that used it (and their attempts), calls, and the share of
    those cases that went bad. None when no result carries a trace."""
    used: dict[str, list[CaseResult]] = defaultdict(list)
    calls: Counter[str] = Counter()
    with_trace = 0
    for r in results:
        if r.trace is None:
            continue
        with_trace += 1
        names = tool_names(r.trace)
        calls.update(names)
        for name in set(names):
            used[name].append(r)
    if not with_trace:
        return None
    rows = []
    for tool, rs in used.items():
        decisive: dict[str, bool] = {}  # case id -> went bad, over its attempts with an outcome
        for r in rs:
            if r.status in DECISIVE:
                decisive[r.case_id] = decisive.get(r.case_id, False) or r.status in BAD
        bad = sum(decisive.values())
        rows.append(ToolRow(tool=tool, cases=len({r.case_id for r in rs}), results=len(rs),
                            calls=calls[tool], bad=bad, bad_share=rate(bad, len(decisive)),
                            denominator=len(decisive)))
    rows.sort(key=lambda t: (-(t.bad_share or 0.0), -t.cases, t.tool))
    return ToolUsage(rows=rows, results_with_trace=with_trace,
                     results_without_trace=len(results) - with_trace)
