"""Pieces of a report computed from one set of results: counts, economics, verdicts, worst
cases, `--by` breakdowns and tool usage. Each piece is gathered a result at a time (`add`)
and keeps counts, sets and arrays of numbers, never the results, so a report of a million
results streams them from the document (`evalh.run_results`)."""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from evalh.core.results.aggregate import Aggregator, percentile, rate
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


class CaseIndex:
    """Case id → a small integer, in first-seen order: per-case figures live in arrays
    indexed by it."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def of(self, case_id: str) -> int:
        i = self.ids.get(case_id)
        if i is None:
            i = self.ids[case_id] = len(self.ids)
        return i

    def __len__(self) -> int:
        return len(self.ids)


def counts(agg: Aggregate) -> Counts:
    """Outcome counts with denominators, from the one aggregate the runner uses."""
    return Counts.of(agg)


class EconomicsParts:
    """Token and cost sums over the results that reported them; null when none did."""

    def __init__(self) -> None:
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.tokens_reported = 0
        self.cost_reported = 0

    def add(self, r: CaseResult) -> None:
        if r.tokens_in is not None:
            self.tokens_in = (self.tokens_in or 0) + r.tokens_in
        if r.tokens_out is not None:
            self.tokens_out = (self.tokens_out or 0) + r.tokens_out
        if r.tokens_in is not None or r.tokens_out is not None:
            self.tokens_reported += 1
        if r.cost_usd is not None:
            self.cost_reported += 1

    def result(self, agg: Aggregate, latencies: int) -> Economics:
        """`latencies`: how many latencies `agg`'s percentiles are over."""
        return Economics(
            tokens_in=self.tokens_in, tokens_out=self.tokens_out, tokens_reported=self.tokens_reported,
            cost_usd=agg.cost_usd, cost_reported=self.cost_reported, cost_unknown=agg.cost_unknown,
            cached=agg.cached, latency_ms_p50=agg.latency_ms_p50, latency_ms_p95=agg.latency_ms_p95,
            latency_denominator=latencies,
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


class VerdictParts:
    """Per scorer, the distribution of its verdicts; and of its paragraph verdicts."""

    def __init__(self) -> None:
        self.by_result: dict[str, Counter[str]] = defaultdict(Counter)
        self.by_para: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, r: CaseResult) -> None:
        for s in r.scores:
            if s.verdict is not None:
                self.by_result[s.scorer][s.verdict] += 1
            for verdict, _ in paragraphs(s):
                self.by_para[s.scorer][verdict] += 1

    def result(self) -> list[VerdictDistribution]:
        out = []
        for level, table in (("result", self.by_result), ("paragraph", self.by_para)):
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


class WorstParts:
    """Cases with the most failed or errored attempts, then the most bad paragraphs. Per
    case a few integers (indexed by `CaseIndex`) and the token of the result that says why:
    the reasons are read again for the cases shown only."""

    def __init__(self, cases: CaseIndex) -> None:
        self.cases = cases
        self.failed = array("q")
        self.errored = array("q")
        self.judge_error = array("q")
        self.attempts = array("q")
        self.bad = array("q")
        self.paragraphs = array("q")
        self.why_attempt: list[int | None] = []
        """Per case: the attempt of the result that says why (None: none does yet). A list,
        not an array: an attempt is any integer a document holds."""
        self.why_token = array("q")

    def add(self, r: CaseResult, i: int, token: int) -> None:
        """`i`: the case's index; `token`: what fetches `r` again."""
        if i == len(self.attempts):
            for column in (self.failed, self.errored, self.judge_error, self.attempts, self.bad,
                           self.paragraphs, self.why_token):
                column.append(0)
            self.why_attempt.append(None)
        self.attempts[i] += 1
        status = r.status
        if status == "failed":
            self.failed[i] += 1
        elif status == "errored":
            self.errored[i] += 1
        elif status == "judge_error":
            self.judge_error[i] += 1
        for s in r.scores:
            if s.details:
                for _, bad in paragraphs(s):
                    self.paragraphs[i] += 1
                    self.bad[i] += bad
        earliest = self.why_attempt[i]
        if (earliest is None or r.attempt < earliest) and _why(r):  # the earliest attempt that says why
            self.why_attempt[i], self.why_token[i] = r.attempt, token

    def result(self, fetch: Callable[[int], CaseResult], limit: int = 10) -> list[WorstCase]:
        """`fetch`: a result from its token."""
        failed, errored, bad = self.failed, self.errored, self.bad
        ranked = ((-(failed[i] + errored[i]), -bad[i], cid, i) for cid, i in self.cases.ids.items()
                  if failed[i] or errored[i] or bad[i])
        out = []
        for _, _, cid, i in heapq.nsmallest(limit, ranked):
            out.append(WorstCase(
                case_id=cid, attempts=self.attempts[i], failed=failed[i], errored=errored[i],
                judge_error=self.judge_error[i], bad_paragraphs=bad[i], paragraphs=self.paragraphs[i],
                why=_why(fetch(self.why_token[i])) if self.why_attempt[i] is not None else None,
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


class _Group:
    __slots__ = ("agg", "cases", "latencies")

    def __init__(self) -> None:
        self.agg = Aggregator()
        self.cases: set[int] = set()
        self.latencies = array("d")


class BreakdownParts:
    """Counts per value of one metadata field (`split`, `stratum`, `complexity`, …)."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.groups: dict[str, _Group] = {}
        self.listy = False

    def add(self, r: CaseResult, i: int) -> None:
        """`i`: the case's index."""
        self.listy = self.listy or isinstance(r.metadata.get(self.field), list)
        for v in metadata_values(r, self.field):
            g = self.groups.get(v)
            if g is None:
                g = self.groups[v] = _Group()
            g.agg.add(r.status, r.score, r.tokens_in, r.tokens_out, r.cached, r.latency_ms, r.cost_usd)
            g.cases.add(i)
            if r.latency_ms is not None and not r.cached:
                g.latencies.append(r.latency_ms)

    def result(self) -> Breakdown:
        field, groups = self.field, self.groups
        rows = []
        for value in sorted(groups, key=lambda v: (v == MISSING, v)):
            g = groups[value]
            rows.append(GroupRow(value=value, cases=len(g.cases), counts=counts(g.agg.result()),
                                 latency_ms_p50=percentile(g.latencies, 50)))
        note = (f"`{field}` holds lists: a case is counted once under each of its values, "
                "so the rows do not add up to the total") if self.listy else None
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


class _Tool:
    __slots__ = ("cases", "results", "decisive")

    def __init__(self) -> None:
        self.cases: set[int] = set()
        self.results = 0
        self.decisive: dict[int, bool] = {}
        """Case → went bad, over its attempts with an outcome."""


class ToolParts:
    """For each tool: the cases that used it (and their attempts), calls, and the share of
    those cases that went bad. None when no result carries a trace."""

    def __init__(self) -> None:
        self.tools: dict[str, _Tool] = {}
        self.calls: Counter[str] = Counter()
        self.with_trace = 0
        self.results = 0

    def add(self, r: CaseResult, i: int) -> None:
        """`i`: the case's index."""
        self.results += 1
        if r.trace is None:
            return
        self.with_trace += 1
        names = tool_names(r.trace)
        self.calls.update(names)
        for name in set(names):
            t = self.tools.get(name)
            if t is None:
                t = self.tools[name] = _Tool()
            t.cases.add(i)
            t.results += 1
            if r.status in DECISIVE:
                t.decisive[i] = t.decisive.get(i, False) or r.status in BAD

    def result(self) -> ToolUsage | None:
        if not self.with_trace:
            return None
        rows = []
        for tool, t in self.tools.items():
            bad = sum(t.decisive.values())
            rows.append(ToolRow(tool=tool, cases=len(t.cases), results=t.results, calls=self.calls[tool],
                                bad=bad, bad_share=rate(bad, len(t.decisive)), denominator=len(t.decisive)))
        rows.sort(key=lambda t: (-(t.bad_share or 0.0), -t.cases, t.tool))
        return ToolUsage(rows=rows, results_with_trace=self.with_trace,
                         results_without_trace=self.results - self.with_trace)
