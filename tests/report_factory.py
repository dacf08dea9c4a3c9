"""Builders of run documents for the report and dashboard tests (not a test module)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from evalh.core.results.aggregate import aggregate
from evalh.models import (
    CaseResult,
    DatasetInfo,
    EnvironmentInfo,
    ErrorInfo,
    GitInfo,
    Run,
    Score,
    SuiteResult,
)
from evalh.store import RunStore

ENV = EnvironmentInfo(evalh="0.1.0", python="3.11", platform="test")

HOSTILE_SCRIPT = "<script>window.__evalh_pwned_script = 1</script>"
HOSTILE_IMG = "<img src=x onerror=\"window.__evalh_pwned = 1\">"


def res(
    case_id: str,
    status: str = "passed",
    *,
    score: float | None = None,
    attempt: int = 0,
    arm: str = "default",
    metadata: dict[str, Any] | None = None,
    trace: list[dict[str, Any]] | None = None,
    latency_ms: float | None = 100.0,
    tokens: tuple[int, int] | None = None,
    cost_usd: float | None = None,
    scores: list[Score] | None = None,
    output: Any = None,
    error: tuple[str, str] | None = None,
    input: Any = None,
) -> CaseResult:
    """One result; a passed/failed result without a score gets 1.0/0.0."""
    if score is None and status in ("passed", "failed"):
        score = 1.0 if status == "passed" else 0.0
    if error is None and status == "errored":
        error = ("TargetError", f"{case_id} fell over")
    return CaseResult(
        case_id=case_id, case_digest=f"d-{case_id}", arm=arm, attempt=attempt, status=status,  # type: ignore[arg-type]
        score=score, metadata=metadata or {}, trace=trace, latency_ms=latency_ms,
        tokens_in=tokens[0] if tokens else None, tokens_out=tokens[1] if tokens else None,
        cost_usd=cost_usd, scores=scores or [], output=output,
        input=input if input is not None else {"q": case_id}, expected="accept",
        error=ErrorInfo(type=error[0], message=error[1]) if error else None,
    )


def suite(
    results: list[CaseResult],
    regime: str = "deterministic",
    *,
    details: dict[str, Any] | None = None,
    baseline_arm: str | None = None,
) -> SuiteResult:
    """A suite with its aggregates computed the way the runner computes them."""
    by_arm: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_arm[r.arm].append(r)
    return SuiteResult(
        regime=regime,  # type: ignore[arg-type]
        dataset=DatasetInfo(path="data/cases.jsonl", sha256="0" * 64, cases=len({r.case_id for r in results})),
        aggregate=aggregate(results),
        arms={a: aggregate(rs) for a, rs in by_arm.items()} or {"default": aggregate([])},
        baseline_arm=baseline_arm,
        details=details or {},
        cases=results,
    )


def make_run(
    run_id: str,
    suites: dict[str, SuiteResult],
    *,
    label: str | None = None,
    started_at: str = "2026-01-01T00:00:00.000Z",
    status: str = "complete",
    sha: str | None = "a1b2c3d4e5f6",
) -> Run:
    return Run(
        run_id=run_id, label=label, status=status, started_at=started_at,  # type: ignore[arg-type]
        finished_at=started_at, git=GitInfo(sha=sha, dirty=False, branch="main"),
        environment=ENV, suites=suites,
    )


def write_runs(runs_dir: Path, runs: list[Run]) -> list[Path]:
    store = RunStore(runs_dir)
    return [store.write(r) for r in runs]


def series(runs_dir: Path, outcomes: list[dict[str, str]], *, suite_name: str = "gate",
           hostile_in: int | None = None) -> list[Run]:
    """Runs of one deterministic suite, one per {case_id: status} dict, ids sortable by
    time; run `hostile_in` carries a hostile output, case id and label."""
    runs = []
    for k, outs in enumerate(outcomes):
        rs = [res(cid, st, latency_ms=10.0 * (k + 1) + i, output={"verdict": st})
              for i, (cid, st) in enumerate(outs.items())]
        label = f"run {k}"
        if hostile_in == k:
            rs.append(res("hostile.case", "failed", output=HOSTILE_IMG + " " + HOSTILE_SCRIPT,
                          scores=[Score(scorer="exact", value=0.0, passed=False, rationale=HOSTILE_IMG)]))
            label = HOSTILE_IMG
        runs.append(make_run(f"20260101T0000{k:02d}000Z-{k:06x}", {suite_name: suite(rs)},
                             label=label, started_at=f"2026-01-01T00:00:{k:02d}.000Z"))
    write_runs(runs_dir, runs)
    return runs
