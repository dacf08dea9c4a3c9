"""`build_report`: run documents in, a `Report` out. Pure (no I/O, no terminal).

For each run, suite and arm: outcomes with denominators (errored and judge_error apart),
a Wilson interval or the reason there is none, tokens, cost and latency, verdict
distributions, the worst cases, `--by` breakdowns, tool usage from stored traces, and for
repeated runs the raw-attempts table, flakiness classes and pass@k / pass^k. There is no
headline blended across suites or arms: each is reported on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.core.results.aggregate import Aggregator, facts_of
from evalh.core.results.skipped import skipped_for_keys
from evalh.models import CaseResult, Run, SuiteResult
from evalh.report.models import (
    ArmReport,
    BaselineVerdict,
    Figure,
    Headline,
    RawRunRow,
    Report,
    RunHeader,
    SuiteReport,
)
from evalh.report.parts import (
    BreakdownParts,
    CaseIndex,
    EconomicsParts,
    ToolParts,
    VerdictParts,
    WorstParts,
    counts,
)
from evalh.report.raw_runs import raw_run_row, raw_runs
from evalh.report.repeats import IntervalParts, RepeatsParts
from evalh.run_results import RunResults

if TYPE_CHECKING:
    from evalh.store import RunStore

Visit = Callable[[int, str, str, CaseResult], None]
"""Called with (the run's position in the runs reported, its id, suite, result) for every
result a report reads, in document order (a run given twice is two positions)."""


def build_report(
    runs: Sequence[Run | RunResults], by: Sequence[str] = (), *, worst: int = 10,
    baseline: Sequence[BaselineVerdict] = (), visit: Visit | None = None,
) -> Report:
    """The report of `runs` (in the order given), grouped by each metadata field in `by`.
    `baseline`: each run's verdict against the BASELINE (see `baseline_verdict`), shown in
    the summary. A run is read a result at a time (`RunResults`: a document is streamed,
    once, and once more for a suite with repeated attempts); `visit` sees each result of
    the first reading."""
    report = Report(by=list(by), baseline=list(baseline))
    for at, source in enumerate(runs):
        results = source if isinstance(source, RunResults) else RunResults(source)
        run = results.header
        report.runs.append(RunHeader(
            run_id=run.run_id, label=run.label, status=run.status,
            status_reason=run.status_reason, started_at=run.started_at,
            finished_at=run.finished_at, stopped_at=run.stopped_at, git_sha=run.git.sha, git_dirty=run.git.dirty,
            derived_from=run.derived_from.model_dump(mode="json") if run.derived_from else None,
            not_run=skipped_for_keys(run.config),
        ))
        from evalh.core.results.outcome import advisory_scorers, advisory_suites

        advisory = advisory_suites(run)
        suites = read_suites(results, by, visit, at)
        labelled = labels_figure(results)
        for name, suite in run.suites.items():
            report.suites.append(suites[name].result(run.run_id, name, suite, partial(results.fetch, name), worst,
                                                     config=run.config, advisory=advisory_scorers(run, name)))
            if labelled is not None and name == (labelled.data.get("suites") or [None])[0]:
                report.suites[-1].figures.append(labelled)
            if name in advisory:  # reported as it is, and said to be advisory
                report.suites[-1].notes.append("advisory suite: judgeUse: advisory-only, "
                                               "releaseDecision: not-assessed (never changes an exit code)")
    report.summary = headlines(report)
    from evalh.report.figures import across_runs

    report.figures = across_runs(report)
    return scrubbed(report)


def labels_figure(results: RunResults) -> Figure | None:
    """The agreement of the human labels of a stored run (`evalh label report`'s), when it
    was exported and rated (its `<run_id>.labels.json` beside it); a figure flagged with why
    when they cannot be reported. None for a run never exported."""
    from evalh.errors import EvalhError
    from evalh.labels import label_report, load_labels, sidecar_path
    from evalh.labels.store import load_store
    from evalh.report.figures import labels_agreement
    from evalh.store import RunStore

    path = results.path
    if path is None:
        return None
    run_id = results.header.run_id
    sidecar = sidecar_path(Path(path), run_id)
    if not sidecar.is_file():
        return None
    try:
        labels = load_labels(sidecar, run_id)
        if not labels.requests:
            return None
        run = RunStore(Path(path).parent).load(str(path))
        return labels_agreement(label_report(run, labels, load_store(Path(path).parent)))
    except EvalhError as exc:
        return Figure(kind="labels", scorer="labels", title="labels: not reported",
                      flags=[f"labels: cannot report: {exc.message}"])


def scrubbed(report: Report) -> Report:
    """`report` with every secret in its text (the value of a credential-named environment
    variable, or one registered: `evalh.redact`) replaced by the marker, in place. A
    result's error or rationale may quote a key the product echoed; the run in memory is
    not scrubbed, only its document, and a report is output that CI keeps."""
    from pydantic import BaseModel

    from evalh.redact import scrub_text, secret_env_values

    secrets = secret_env_values()
    if not secrets:
        return report

    def clean(v: Any) -> Any:
        if isinstance(v, str):
            return scrub_text(v, env=secrets)
        if isinstance(v, BaseModel):
            for name in type(v).model_fields:
                old = getattr(v, name)
                new = clean(old)
                if new is not old:
                    object.__setattr__(v, name, new)  # as validated: only text changes
            return v
        if isinstance(v, list):
            items = [clean(x) for x in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        if isinstance(v, dict):
            pairs = [(clean(k), clean(x)) for k, x in v.items()]
            return v if all(k2 is k and x2 is x for (k2, x2), (k, x) in zip(pairs, v.items(), strict=True)) \
                else dict(pairs)
        return v

    clean(report)
    return report


def read_suites(results: RunResults, by: Sequence[str] = (), visit: Visit | None = None,
                at: int = 0) -> dict[str, SuiteParts]:
    """Every suite's parts, from one reading of `results` (and a second for the suites
    with repeated attempts, whose raw tables need every attempt of a case together);
    `at`: the run's position, for `visit`."""
    run = results.header
    suites = {name: SuiteParts(suite.regime, suite.target, by) for name, suite in run.suites.items()}
    for name, token, r in results:
        suites[name].add(r, token)
        if visit is not None:
            visit(at, run.run_id, name, r)
    if any(s.repeated for s in suites.values()):
        for name, _, r in results:
            suites[name].add_attempt(r)
    return suites


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


class ArmParts:
    """One arm's report, gathered a result at a time."""

    def __init__(self, regime: str, target: dict[str, Any] | None, by: Sequence[str]) -> None:
        self.cases = CaseIndex()
        self.agg = Aggregator()
        self.economics = EconomicsParts()
        self.verdicts = VerdictParts()
        self.worst = WorstParts(self.cases)
        self.breakdowns = [BreakdownParts(f) for f in by]
        self.tools = ToolParts()
        self.interval = IntervalParts(self.cases, regime, target)
        self.repeated = False
        """Some result is a repeated attempt: the repeats section and the raw table are
        read in a second pass (`add_attempt`)."""
        self.repeats = RepeatsParts()
        self.rows: list[RawRunRow] = []

    def add(self, r: CaseResult, token: int) -> None:
        i = self.cases.of(r.case_id)
        self.agg.add(*facts_of(r))
        self.economics.add(r)
        self.verdicts.add(r)
        self.worst.add(r, i, token)
        for b in self.breakdowns:
            b.add(r, i)
        self.tools.add(r, i)
        self.interval.add(r, i)
        self.repeated = self.repeated or r.attempt > 0

    def add_attempt(self, r: CaseResult) -> None:
        self.repeats.add(r)
        self.rows.append(raw_run_row(r))

    def result(self, arm: str, baseline: bool, fetch: Callable[[int], CaseResult], worst: int = 10) -> ArmReport:
        agg = self.agg.result()
        return ArmReport(
            arm=arm, baseline=baseline, cases=len(self.cases), counts=counts(agg),
            interval=self.interval.result(), economics=self.economics.result(agg, len(self.agg.latencies)),
            verdicts=self.verdicts.result(), worst=self.worst.result(fetch, worst),
            breakdowns=[b.result() for b in self.breakdowns], tools=self.tools.result(),
            repeats=self.repeats.result() if self.repeated else None,
            runs=raw_runs(self.rows) if self.repeated else None,
        )


class SuiteParts:
    """One suite's report, gathered a result at a time: an `ArmParts` per arm seen."""

    def __init__(self, regime: str, target: dict[str, Any], by: Sequence[str]) -> None:
        self.regime, self.target, self.by = regime, target, by
        self.arms: dict[str, ArmParts] = {}

    def add(self, r: CaseResult, token: int) -> None:
        arm = self.arms.get(r.arm)
        if arm is None:
            arm = self.arms[r.arm] = ArmParts(self.regime, self.target, self.by)
        arm.add(r, token)

    @property
    def repeated(self) -> bool:
        """Some arm holds repeated attempts: the suite is read a second time (`add_attempt`)."""
        return any(arm.repeated for arm in self.arms.values())

    def add_attempt(self, r: CaseResult) -> None:
        """A result of the second reading, for its arm's repeats section and raw table."""
        arm = self.arms[r.arm]
        if arm.repeated:
            arm.add_attempt(r)

    def result(self, run_id: str, name: str, suite: SuiteResult, fetch: Callable[[int], CaseResult],
               worst: int = 10, config: dict[str, Any] | None = None,
               advisory: set[str] | frozenset[str] = frozenset()) -> SuiteReport:
        """The report of `suite` (its header: aggregates, details, metrics) from its results'
        parts; `config`: the run's config snapshot (where a generating suite's record is);
        `advisory`: its advisory scorers, whose figures are labelled so."""
        out = SuiteReport(run_id=run_id, suite=name, regime=suite.regime,
                          dataset=suite.dataset.model_dump(mode="json"),
                          calibration=calibration(suite.details))
        seen = list(self.arms)
        declared = [a for a in suite.arms if a in seen or not seen]
        arms = declared + [a for a in seen if a not in declared]
        # one arm is no comparison: no arm of a one-arm suite is called its baseline
        baseline = (suite.baseline_arm or arms[0]) if len(arms) > 1 else None
        for arm in arms:
            parts = self.arms.get(arm) or ArmParts(self.regime, self.target, self.by)
            out.arms.append(parts.result(arm, arm == baseline, fetch, worst))
        if not seen:
            out.notes.append("no results in this suite")
        from evalh.core.results.bill import generation_usage, suite_bill
        from evalh.report.figures import suite_figures

        costs = suite_bill(suite.aggregate, suite.details, generation_usage(config or {}, name))
        out.figures = suite_figures(suite.details, out.arms, suite.metrics, suite.contrasts, suite.sweep, costs,
                                    advisory=advisory)
        return out


def suite_report(
    run_id: str, name: str, suite: SuiteResult, by: Sequence[str] = (), *, worst: int = 10
) -> SuiteReport:
    """One suite of one run in memory, an `ArmReport` per arm (the baseline arm marked)."""
    parts = SuiteParts(suite.regime, suite.target, by)
    for i, r in enumerate(suite.cases):
        parts.add(r, i)
    if parts.repeated:
        for r in suite.cases:
            parts.add_attempt(r)
    return parts.result(run_id, name, suite, suite.cases.__getitem__, worst)


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


def versus_baseline(runs: Sequence[Run | RunResults], root: Any, store: Any) -> list[BaselineVerdict]:
    """Each run compared with the BASELINE run(s) (pooled, as `evalh compare` does with
    the default policy), for the summary. No marker: no verdicts. A baseline that cannot
    be read, or a run that is one of the baseline runs, gets a note instead of a verdict:
    a report never fails because of the baseline. A run read from its document is compared
    from its facts, as `evalh compare` reads them (`compare_stored`)."""
    from evalh.baseline import load_baseline, read_baseline_ids
    from evalh.errors import EvalhError

    headers = [r.header if isinstance(r, RunResults) else r for r in runs]
    try:
        ids = read_baseline_ids(root)
    except EvalhError as exc:
        return [BaselineVerdict(run_id=r.run_id, base="BASELINE", verdict="none", note=f"cannot read BASELINE: {exc.message}")
                for r in headers]
    if not ids:
        return []
    base = ", ".join(ids)
    stored = all(isinstance(r, RunResults) and r.path is not None for r in runs)
    try:
        loaded = load_baseline(root, store, header_only=stored)
    except EvalhError as exc:
        return [BaselineVerdict(run_id=r.run_id, base=base, verdict="none", note=f"cannot load: {exc.message}") for r in headers]
    out = []
    for source, run in zip(runs, headers, strict=True):
        if run.run_id in ids:
            out.append(BaselineVerdict(run_id=run.run_id, base=base, verdict="none", note="this run is the baseline"))
            continue
        if isinstance(source, RunResults) and source.path is not None:
            try:
                cmp, _ = loaded.compare_stored(store, str(source.path))
            except EvalhError:
                # a damaged document: say what reading the whole runs said, as before — the
                # baseline's damage a note, the run's own its loader's error
                try:
                    whole = load_baseline(root, store)
                except EvalhError as exc:
                    out.append(BaselineVerdict(run_id=run.run_id, base=base, verdict="none",
                                               note=f"cannot load: {exc.message}"))
                    continue
                cmp, _ = whole.compare(store.load(str(source.path)))
        else:
            cmp, _ = loaded.compare(source if isinstance(source, Run) else run)
        out.append(baseline_verdict(run.run_id, base, cmp.to_dict()))
    return out


def with_corrected(rep: Report, store: RunStore, refs: Sequence[str]) -> Report:
    """`rep` (the report of the runs `refs` of `store`, in that order) with each labelled
    run's judge rates corrected by its human labels as figures of its suites
    (`evalh.labels.corrected`): only runs someone exported for labelling are read whole.
    `evalh report` and the dashboard both add them here. Labels that cannot be read (an
    edited ratings file) null the run's corrected figures and flag why: `label report`
    refuses them; the run's own report is still given."""
    from evalh.errors import EvalhError
    from evalh.labels.corrected import corrected_for_run
    from evalh.report.figures import corrected
    from evalh.report.models import Figure

    added = False
    seen: set[str] = set()
    for ref, header in zip(refs, rep.runs, strict=True):  # the report holds the runs in the order given
        run_id = header.run_id
        if run_id in seen:
            continue
        seen.add(run_id)
        try:
            found = corrected_for_run(store, ref) or []
        except EvalhError as exc:  # its labels cannot be read (an edited ratings file): said, not fatal
            for s in rep.suites:
                if s.run_id == run_id:
                    s.figures.append(Figure(kind="corrected", scorer="", title="judge rates corrected by human "
                                            "labels (PPI++)", notes=["null: the labels cannot be read"],
                                            flags=[f"corrected figures: {exc.message}"]))
                    added = True
            continue
        for c in found:
            for s in rep.suites:
                if s.run_id == run_id and s.suite == c.suite:
                    s.figures.append(corrected(c.to_dict()))
                    added = True
    return scrubbed(rep) if added else rep
