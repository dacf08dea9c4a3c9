"""`evalh report --stat PATH`: count, mean, max, p50 and p95 of any numeric field of the
results, overall and by any `--by` field.

A PATH is rooted: `output.num_iterations` (the product's output), `trace.search.count`
(`trace.N.key`, or the last trace entry of a tool, as in `sources_from`), `metadata.x`,
`input.x`, `expected.x`, or a result's own figure (`latency_ms`, `tokens_in`, `tokens_out`,
`cost_usd`, `score`). A number is taken as it is, a boolean as 0/1; anything else (and a path
a result does not have) is counted as `missing`, never as 0. Cached results have no latency.

A `--by` field is a metadata name (`complexity`, `strategy` — fields a generator carried
into the case's metadata are metadata like any other) or a rooted path (`output.route`); a
list value puts the result in each of its groups, as the report's breakdowns do.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalh.core.results.aggregate import percentile
from evalh.errors import EvalhError
from evalh.fields import MISSING, pick
from evalh.models import CaseResult, Run

RESULT_FIELDS = ("latency_ms", "tokens_in", "tokens_out", "cost_usd", "score")
ROOTS = ("output", "trace", "metadata", "input", "expected")
NONE = "(none)"


def check_path(path: str, what: str = "--stat") -> str:
    root = path.partition(".")[0]
    if path in RESULT_FIELDS or (root in ROOTS and "." in path):
        return path
    raise EvalhError(f"{what} {path}: give a rooted path ({', '.join(r + '.…' for r in ROOTS)}) "
                     f"or one of {', '.join(RESULT_FIELDS)}")


def is_rooted(name: str) -> bool:
    return name.partition(".")[0] in ROOTS and "." in name


def value_at(r: CaseResult, path: str) -> Any:
    """The value at a rooted path of one result (MISSING when there is none)."""
    if path in RESULT_FIELDS:
        if path == "latency_ms" and (r.cached or (r.error is not None and r.error.type == "GenerationFailed")):
            return MISSING  # a cached reply or a case never written took no time of the target's
        v = getattr(r, path)
        return MISSING if v is None else v
    root, _, rest = path.partition(".")
    if root == "trace":
        from evalh.scorers.citations_sources import in_trace

        return in_trace(r.trace, rest)
    base = {"output": r.output, "metadata": r.metadata, "input": r.input, "expected": r.expected}[root]
    return pick(base, rest)


def number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and v == v and v not in (float("inf"), float("-inf")):
        return float(v)
    return None


def groups_of(r: CaseResult, by: str) -> list[str]:
    v = value_at(r, by) if is_rooted(by) else r.metadata.get(by, MISSING)
    if v is MISSING or v is None or v == []:
        return [NONE]
    if isinstance(v, list):
        return sorted({str(x) for x in v})
    return [str(v)]


@dataclass
class StatRow:
    group: str | None
    """The `--by` field (None for the overall row)."""
    value: str | None
    """The group's value (None for the overall row)."""
    results: int
    count: int
    """Results with a number at the path."""
    missing: int
    mean: float | None
    min: float | None
    max: float | None
    p50: float | None
    p95: float | None


@dataclass
class FieldStats:
    run_id: str
    suite: str
    arm: str | None
    """The arm, when the suite has several (each is reported on its own)."""
    path: str
    rows: list[StatRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Values:
    """The numbers at a path over some results, and how many results there were."""

    __slots__ = ("results", "xs")

    def __init__(self) -> None:
        self.results = 0
        self.xs = array("d")

    def add(self, x: float | None) -> None:
        self.results += 1
        if x is not None:
            self.xs.append(x)

    def row(self, group: str | None, value: str | None) -> StatRow:
        xs = self.xs
        return StatRow(
            group=group, value=value, results=self.results, count=len(xs), missing=self.results - len(xs),
            mean=sum(xs) / len(xs) if xs else None, min=min(xs) if xs else None, max=max(xs) if xs else None,
            p50=percentile(xs, 50), p95=percentile(xs, 95),
        )


class _Cell:
    """One (run, suite, arm): per path, the overall values and the values per group of each `--by`."""

    def __init__(self, paths: Sequence[str], by: Sequence[str]) -> None:
        self.overall = {p: _Values() for p in paths}
        self.groups: dict[str, dict[str, dict[str, _Values]]] = {p: {b: {} for b in by} for p in paths}


class FieldStatsParts:
    """`field_stats` a result at a time: per (run, suite, arm) and path, arrays of numbers."""

    def __init__(self, paths: Sequence[str], by: Sequence[str]) -> None:
        self.paths, self.by = [check_path(p) for p in paths], list(by)
        self.suites: dict[tuple[int, str, str], dict[str, _Cell | None]] = {}
        """(run's position, run id, suite) → arm → its cell (None: the arm's results were all
        skipped). The position: a run given twice is reported twice, not merged."""

    def declare(self, run_id: str, suite: str, run: int = 0) -> None:
        """A suite of a run (`run`: its position among the reported runs), in report order
        (reported when it holds results)."""
        self.suites.setdefault((run, run_id, suite), {})

    def add(self, run_id: str, suite: str, r: CaseResult, run: int = 0) -> None:
        arms = self.suites.setdefault((run, run_id, suite), {})
        cell = arms.get(r.arm)
        if r.status == "skipped":
            arms.setdefault(r.arm, None)
            return
        if cell is None:
            cell = arms[r.arm] = _Cell(self.paths, self.by)
        groups = {b: groups_of(r, b) for b in self.by}
        for path in self.paths:
            x = number(value_at(r, path))
            cell.overall[path].add(x)
            for b, gs in groups.items():
                table = cell.groups[path][b]
                for g in gs:
                    values = table.get(g)
                    if values is None:
                        values = table[g] = _Values()
                    values.add(x)

    def result(self) -> list[FieldStats]:
        """One FieldStats per (run, suite, arm, path); a path that no result of the runs holds
        a number at is refused (a typo, not an empty table)."""
        out: list[FieldStats] = []
        for path in self.paths:
            seen = False
            for (_, run_id, name), arms in self.suites.items():
                for arm in sorted(arms):
                    cell = arms[arm]
                    overall = cell.overall[path] if cell is not None else _Values()
                    stats = FieldStats(run_id, name, arm if len(arms) > 1 else None, path,
                                       [overall.row(None, None)])
                    seen = seen or stats.rows[0].count > 0
                    for b in self.by:
                        table = cell.groups[path][b] if cell is not None else {}
                        for g in sorted(table, key=lambda v: (v == NONE, v)):
                            stats.rows.append(table[g].row(b, g))
                    out.append(stats)
            if not seen:
                raise EvalhError(f"--stat {path}: no result of the reported runs has a number there")
        return out


def field_stats(runs: Sequence[Run], paths: Sequence[str], by: Sequence[str]) -> list[FieldStats]:
    """`FieldStatsParts` over runs in memory."""
    parts = FieldStatsParts(paths, by)
    for at, run in enumerate(runs):
        for name, suite in run.suites.items():
            parts.declare(run.run_id, name, at)
            for r in suite.cases:
                parts.add(run.run_id, name, r, at)
    return parts.result()
