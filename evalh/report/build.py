"""`build_report`: run documents in, a `Report` out. Pure (no I/O, no terminal).

For each run, suite and arm: outcomes with denominators (errored and judge_error apart),
a Wilson interval or the reason there is none, tokens, cost and latency, verdict
distributions, the worst cases, `--by` breakdowns, tool usage from stored traces, and for
repeated runs the raw-attempts table, flakiness classes and pass@k / pass^k. There is no
headline blended across suites or arms: each is reported on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalh.core.aggregate import aggregate
from evalh.models import CaseResult, Run, SuiteResult
from evalh.report.models import ArmReport, BaselineVerdict, Headline, Report, RunHeader, SuiteReport
from evalh.report.parts import breakdown, counts, economics, tool_usage, verdicts, worst_cases
from evalh.report.raw_runs import raw_runs
from evalh.report.repeats import interval, repeats


def build_report(
    runs: Sequence[Run], by: Sequence[str] = (), *, worst: int = 10,
    baseline: Sequence[BaselineVerdict] = (),
) -> Report:
    """The report of `runs` (in the order given), grouped by each metadata field in `by`.
    `baseline`: each run's verdict against the BASELINE (see `baseline_verdict`), shown in
    the summary."""
    report = Report(by=list(by), baseline=list(baseline))
    for run in runs:
        report.runs.append(RunHeader(
            run_id=run.run_id, label=run.label, status=run.status,
            status_reason=run.status_reason, started_at=run.started_at,
            finished_at=run.finished_at, git_sha=run.git.sha, git_dirty=run.git.dirty,
            derived_from=run.derived_from.model_dump(mode="json") if run.derived_from else None,
        ))
        from evalh.core.outcome import advisory_suites

        advisory = advisory_suites(run)
        for name, suite in run.suites.items():
            report.suites.append(suite_report(run.run_id, name, suite, by, worst=worst))
            if name in advisory:  # reported as it is, and said to be advisory
                report.suites[-1].notes.append("advisory suite: judgeUse: advisory-only, "
                                               "releaseDecision: not-assessed (never changes an exit code)")
    report.summary = headlines(report)
    from evalh.report.figures import across_runs

    report.figures = across_runs(report)
    return report


def baseline_verdict(run_id: str, base: str, comparison: dict[str, Any]) -> BaselineVerdict:
    """The summary's view of `compare_runs(baseline, run).to_dict()`."""
    return BaselineVerdict(
        run_id=run_id, base=base, verdict=comparison["verdict"], fails_gate=bool(comparison.get("fails_gate")),
        gate_reasons=list(comparison.get("gate_reasons") or []),
        suites={n: s["verdict"] for n, s in (comparison.get("suites") or {}).items()},
    )


def headlines(report: Report) -> list[Headline]:
    """The summary lines of a report: one per suite and arm, with its flags."""
    status = {r.run_id: r for r in report.runs}
    versus = {b.run_id: b for b in report.baseline}
    out = []
    for s in report.suites:
        run = status[s.run_id]
        vs = versus.get(s.run_id)
        for arm in s.arms:
            c, e = arm.counts, arm.economics
            flags = []
            if run.status != "complete":
                flags.append(f"run {run.status}")
            if c.errored:
                flags.append(f"{c.errored} errored")
            if c.judge_error:
                flags.append(f"{c.judge_error} judge error{'s' if c.judge_error > 1 else ''}")
            if c.skipped:
                flags.append(f"{c.skipped} skipped")
            if arm.repeats is not None and arm.repeats.flaky:
                flags.append(f"{arm.repeats.flaky} flaky case{'s' if arm.repeats.flaky > 1 else ''}")
            if c.pass_rate is None:
                flags.append("no decisive result")
            if e.cost_unknown:
                flags.append(f"{e.cost_unknown} unpriced")
            if arm is s.arms[0]:  # suite-level figures: flagged once per suite
                flags += [f for fig in s.figures for f in fig.flags]
            out.append(Headline(
                run_id=s.run_id, suite=s.suite, arm=arm.arm, baseline_arm=arm.baseline, regime=s.regime,
                cases=arm.cases, results=c.n, passed=c.passed, pass_rate=c.pass_rate,
                pass_rate_denominator=c.pass_rate_denominator, errored=c.errored, judge_error=c.judge_error,
                skipped=c.skipped, mean_score=c.mean_score,
                flaky=arm.repeats.flaky if arm.repeats is not None else None,
                versus=vs.suites.get(s.suite) if vs is not None and vs.note is None else None,
                flags=flags,
            ))
    return out


def _arms(suite: SuiteResult) -> list[str]:
    seen = list(dict.fromkeys(r.arm for r in suite.cases))
    declared = [a for a in suite.arms if a in seen or not suite.cases]
    return declared + [a for a in seen if a not in declared]


def suite_report(
    run_id: str, name: str, suite: SuiteResult, by: Sequence[str] = (), *, worst: int = 10
) -> SuiteReport:
    """One suite of one run, an `ArmReport` per arm (the baseline arm marked)."""
    out = SuiteReport(run_id=run_id, suite=name, regime=suite.regime,
                      dataset=suite.dataset.model_dump(mode="json"),
                      calibration=calibration(suite.details))
    arms = _arms(suite)
    baseline = suite.baseline_arm or (arms[0] if len(arms) > 1 else None)
    for arm in arms:
        rs = [r for r in suite.cases if r.arm == arm]
        out.arms.append(arm_report(arm, rs, suite.regime, by, baseline=arm == baseline, worst=worst,
                                   target=suite.target))
    if not suite.cases:
        out.notes.append("no results in this suite")
    from evalh.report.figures import suite_figures

    out.figures = suite_figures(suite.details, out.arms, suite.metrics, suite.contrasts, suite.sweep)
    return out


def arm_report(
    arm: str, results: Sequence[CaseResult], regime: str, by: Sequence[str] = (),
    *, baseline: bool = False, worst: int = 10, target: dict[str, Any] | None = None,
) -> ArmReport:
    agg = aggregate(results)
    return ArmReport(
        arm=arm, baseline=baseline, cases=len({r.case_id for r in results}),
        counts=counts(results, agg), interval=interval(results, regime, target),
        economics=economics(results, agg), verdicts=verdicts(results),
        worst=worst_cases(results, worst), breakdowns=[breakdown(results, f) for f in by],
        tools=tool_usage(results), repeats=(rep := repeats(results)),
        runs=raw_runs(results) if rep is not None else None,
    )


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _one_calibration(name: str, fact: dict[str, Any]) -> dict[str, Any]:
    """A calibration fact with its accuracy beside its denominator (null over zero)."""
    correct = _num(fact.get("correct"))
    total = _num(fact.get("n", fact.get("total")))
    accuracy = _num(fact.get("accuracy"))
    if accuracy is None and correct is not None and total is not None:
        accuracy = correct / total if total else None
    return {"name": name, "accuracy": accuracy,
            "correct": int(correct) if correct is not None else None,
            "n": int(total) if total is not None else None,
            "facts": {k: v for k, v in fact.items() if isinstance(v, str | int | float | bool) or v is None}}


def calibration(details: dict[str, Any]) -> list[dict[str, Any]]:
    """Judge calibration entries from a suite's `details`: a scorer's table holding a
    `calibration` table (what the judge scorers record: `n`, `correct`, `accuracy`,
    `per_judge`), or any top-level key naming `calibration`. Each judge of a panel gets
    an entry of its own."""
    out = []
    for key in sorted(details):
        value = details[key]
        if not isinstance(value, dict):
            continue
        if "calibration" in key:
            fact, name = value, key
        elif isinstance(value.get("calibration"), dict):
            fact, name = value["calibration"], key
        else:
            continue
        out.append(_one_calibration(name, fact))
        per_judge = fact.get("per_judge")
        if isinstance(per_judge, list) and len(per_judge) > 1:
            for judge in per_judge:
                if isinstance(judge, dict):
                    out.append(_one_calibration(f"{name} · {judge.get('model', '?')}",
                                                {"n": fact.get("n"), **judge}))
    return out


def versus_baseline(runs: Sequence[Run], root: Any, store: Any) -> list[BaselineVerdict]:
    """Each run compared with the BASELINE run(s) (pooled, as `evalh compare` does with
    the default policy), for the summary. No marker: no verdicts. A baseline that cannot
    be read, or a run that is one of the baseline runs, gets a note instead of a verdict:
    a report never fails because of the baseline."""
    from evalh.baseline import load_baseline, read_baseline_ids
    from evalh.errors import EvalhError

    try:
        ids = read_baseline_ids(root)
    except EvalhError as exc:
        return [BaselineVerdict(run_id=r.run_id, base="BASELINE", verdict="none", note=f"cannot read BASELINE: {exc.message}")
                for r in runs]
    if not ids:
        return []
    base = ", ".join(ids)
    try:
        loaded = load_baseline(root, store)
    except EvalhError as exc:
        return [BaselineVerdict(run_id=r.run_id, base=base, verdict="none", note=f"cannot load: {exc.message}") for r in runs]
    out = []
    for run in runs:
        if run.run_id in ids:
            out.append(BaselineVerdict(run_id=run.run_id, base=base, verdict="none", note="this run is the baseline"))
            continue
        cmp, _ = loaded.compare(run)
        out.append(baseline_verdict(run.run_id, base, cmp.to_dict()))
    return out
