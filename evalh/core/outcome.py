"""What results mean: a case's status from its scores, a run's headline numbers and the
exit codes of a run and of a comparison.

Pure functions, shared by the runner and anything that rebuilds a run (resume, rejudge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalh.models import Aggregate, CaseStatus, DerivedFrom, GitInfo, Regime, Run, Score
from evalh.numbers import pct

if TYPE_CHECKING:
    from evalh.core.compare_models import Comparison


def decide_status(
    scores: list[Score], judge_names: set[str], advisory: frozenset[str] | set[str] = frozenset()
) -> tuple[CaseStatus, float | None]:
    """Case status from its scores.

    A deterministic scorer that crashed → `errored`; any verdict `passed=False` → `failed`;
    a judge that failed → `judge_error` (not a failure of the product); every scorer
    abstaining (or none configured) → `failed`: an abstention is never a pass.
    """
    if advisory and any(s.scorer not in advisory for s in scores):
        scores = [s for s in scores if s.scorer not in advisory]  # recorded, never deciding
    values = [s.value for s in scores if s.value is not None and s.error is None]
    score = sum(values) / len(values) if values else None
    if any(s.error and s.scorer not in judge_names for s in scores):
        return "errored", score
    if any(s.passed is False for s in scores):
        return "failed", score
    if any(s.error and s.scorer in judge_names for s in scores):
        return "judge_error", score
    if any(s.passed is True for s in scores):
        return "passed", score
    return "failed", score


@dataclass(frozen=True)
class ErrorGate:
    """One suite's error rate against its limit: (errored + judge_error) over the results
    that ran (skipped ones left out)."""

    suite: str
    errored: int
    judge_error: int
    of: int
    """Results that ran: every result but the skipped ones (the denominator)."""
    results: int
    """Every result, skipped ones included."""
    max_error_rate: float

    @property
    def errors(self) -> int:
        return self.errored + self.judge_error

    @property
    def rate(self) -> float | None:
        return self.errors / self.of if self.of else None

    @property
    def over(self) -> bool:
        """Over the limit: strictly more than `max_error_rate`, or every result that ran
        errored (whatever the limit, even 1), or results exist and none ran."""
        if not self.of:
            return self.results > 0
        return self.errors == self.of or self.errors / self.of > self.max_error_rate

    @property
    def measured_nothing(self) -> bool:
        """No result that ran passed or failed: every one errored or got no judgment, or
        none ran."""
        return self.results > 0 and (not self.of or self.errors == self.of)

    def line(self) -> str:
        if self.judge_error and self.errored:
            what = f"errored or judge_error ({self.errored} errored, {self.judge_error} judge_error)"
        elif self.judge_error:
            what = f"errored or judge_error (0 errored, {self.judge_error} judge_error)"
        else:
            what = "errored"
        if not self.of:
            return (f"suite {self.suite}: none of its {self.results} results ran (all skipped), "
                    f"over max_error_rate {pct(self.max_error_rate)}")
        return (f"suite {self.suite}: {self.errors} of {self.of} results {what} ({pct(self.errors / self.of)}), "
                f"over max_error_rate {pct(self.max_error_rate)}")

    def to_dict(self) -> dict[str, Any]:
        return {"errors": self.errors, "errored": self.errored, "judge_error": self.judge_error,
                "of": self.of, "rate": self.rate, "max_error_rate": self.max_error_rate, "over": self.over}


def __getattr__(name: str) -> Any:
    """`DEFAULT_MAX_ERROR_RATE` (evalh.config's), still importable from here, imported
    when asked for: reading a run needs no config models."""
    if name == "DEFAULT_MAX_ERROR_RATE":
        from evalh.config import DEFAULT_MAX_ERROR_RATE

        return DEFAULT_MAX_ERROR_RATE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def max_error_rate_for(config: dict[str, Any], suite: str) -> float:
    """The limit recorded in a run's config snapshot: `--max-error-rate` (`run_options`),
    else the suite's `max_error_rate`, else the default."""
    flag = (config.get("run_options") or {}).get("max_error_rate")
    if isinstance(flag, int | float) and not isinstance(flag, bool):
        return float(flag)
    key = ((config.get("suites") or {}).get(suite) or {}).get("max_error_rate")
    if isinstance(key, int | float) and not isinstance(key, bool):
        return float(key)
    from evalh.config import DEFAULT_MAX_ERROR_RATE  # here: reading a run needs no config models

    return DEFAULT_MAX_ERROR_RATE


def error_gates(run: Run) -> list[ErrorGate]:
    """Every suite with results, against its limit (a suite that has none — a partial run
    stopped before it — is not rated: the run's status already fails it)."""
    gates = []
    for name, s in run.suites.items():
        a = s.aggregate
        if not a.n:
            continue
        gates.append(ErrorGate(suite=name, errored=a.errored, judge_error=a.judge_error,
                               of=a.n - a.skipped, results=a.n,
                               max_error_rate=max_error_rate_for(run.config, name)))
    return gates


@dataclass(frozen=True)
class RunVerdict:
    """What `evalh run` exits with and why (`--compare-baseline` may only raise the code)."""

    code: int
    reasons: list[str] = field(default_factory=list)
    """One line per cause of a non-zero code that the results table does not state:
    a suite over its error rate, a run that did not finish."""


ADVISORY = {"judgeUse": "advisory-only", "releaseDecision": "not-assessed"}
"""What an advisory suite's figures say wherever they are reported."""


def advisory_suites(*runs: Run) -> set[str]:
    """Suites declared `advisory = true` in any of the runs' config snapshots, or whose every
    scorer is: they never change an exit code of `run` or `compare`."""
    out = set()
    for run in runs:
        for name, cfg in ((run.config or {}).get("suites") or {}).items():
            if not isinstance(cfg, dict):
                continue
            scorers = [x for x in cfg.get("scorers") or [] if isinstance(x, dict)]
            if cfg.get("advisory") is True or (scorers and all(x.get("advisory") is True for x in scorers)):
                out.add(name)
    return out


def run_verdict(run: Run) -> RunVerdict:
    """1 when a deterministic case failed or errored, a suite's error rate is over its
    `max_error_rate` (deterministic or stochastic), a gating contrast's rules do not hold,
    a configured suite was skipped for a missing key, or the run is not complete; else 0.
    An advisory suite changes the code only when it measured nothing (every result
    errored, got no judgment or was skipped)."""
    from evalh.core.contrasts import contrast_reasons

    advisory = advisory_suites(run)
    # advisory: its error rate never fails the run, but a suite that measured nothing does
    reasons = [g.line() + (": an advisory suite that measured nothing" if g.suite in advisory else "")
               for g in error_gates(run) if g.over and (g.suite not in advisory or g.measured_nothing)]
    reasons += contrast_reasons(run)  # a gating contrast (suites.S.contrasts) whose rules do not hold
    from evalh.core.run_skipped import skipped_for_keys

    reasons += skipped_for_keys(run.config)  # a configured suite its key was missing for
    code = 1 if reasons else 0
    if any(s.regime == "deterministic" and (s.aggregate.failed or s.aggregate.errored)
           for name, s in run.suites.items() if name not in advisory):
        code = 1
    if run.status != "complete":
        reasons.append(f"run {run.run_id} is {run.status}: {run.status_reason}; not every case ran")
        code = 1
    return RunVerdict(code=code, reasons=reasons)


def gate_exit_code(cmp: Comparison, *, fail_on_regression: bool, fail_on_inconclusive: bool) -> int:
    """What a comparison exits with (`evalh compare`, `evalh run --compare-baseline`): 0 the
    gate passes; 1 it fails (a suite regressed, or could not be compared because the
    candidate produced nothing comparable), with `fail_on_regression`; 3 nothing failed but
    a gating row is inconclusive with its estimate on the worse side (with
    `fail_on_inconclusive`)."""
    if cmp.fails_gate:
        return 1 if fail_on_regression else 0
    if cmp.inconclusive_worse and fail_on_inconclusive:
        return 3
    return 0


@dataclass(frozen=True)
class SuiteSummary:
    """One suite of a run, as its summaries show it."""

    regime: Regime
    cases: int
    """The dataset's cases (not results: repeats and arms multiply those)."""
    aggregate: Aggregate
    arms: dict[str, Aggregate]
    baseline_arm: str | None
    error_gate: ErrorGate | None
    """None for a suite without results (a partial run stopped before it)."""


@dataclass(frozen=True)
class RunSummary:
    """The one summary of a run: its identity and, per suite, the stored aggregates and the
    error gate. The run document's `summary` (`document`) and the dashboard's history row
    (`history_row`) are its two forms; `evalh runs` lists the pass rates the document's
    summary stores (`evalh.run_header`)."""

    run_id: str
    label: str | None
    status: str
    status_reason: str | None
    started_at: str
    finished_at: str | None
    git: GitInfo
    derived_from: DerivedFrom | None
    suites: dict[str, SuiteSummary]

    @property
    def cost_usd(self) -> float | None:
        """The known cost of the suites that have one; None when none has."""
        costs = [s.aggregate.cost_usd for s in self.suites.values() if s.aggregate.cost_usd is not None]
        return sum(costs, 0.0) if costs else None

    @property
    def deterministic_ok(self) -> bool:
        return all(
            s.aggregate.failed == 0 and s.aggregate.errored == 0
            and not (s.error_gate is not None and s.error_gate.over)
            for s in self.suites.values() if s.regime == "deterministic"
        )

    def document(self) -> dict[str, Any]:
        """Headline numbers, as the run document stores them (`Run.summary`). Per-suite
        figures, never one blended pass rate across suites."""
        totals = dict.fromkeys(("cases", "passed", "failed", "errored", "judge_error", "skipped"), 0)
        per_suite: dict[str, dict[str, Any]] = {}
        for name, s in self.suites.items():
            a = s.aggregate
            totals["cases"] += a.n
            for k in ("passed", "failed", "errored", "judge_error", "skipped"):
                totals[k] += getattr(a, k)
            per_suite[name] = {
                "regime": s.regime, "n": a.n, "passed": a.passed, "failed": a.failed,
                "errored": a.errored, "judge_error": a.judge_error, "pass_rate": a.pass_rate,
                "mean_score": a.mean_score,
            }
            if s.error_gate is not None:
                per_suite[name]["error_gate"] = s.error_gate.to_dict()
        return {
            **totals,
            "tokens_in": sum(s.aggregate.tokens_in for s in self.suites.values()),
            "tokens_out": sum(s.aggregate.tokens_out for s in self.suites.values()),
            "cost_usd": self.cost_usd, "deterministic_ok": self.deterministic_ok,
            "error_rate_ok": not any(s.error_gate.over for s in self.suites.values() if s.error_gate),
            "suites": per_suite,
        }

    def history_row(self) -> dict[str, Any]:
        """The dashboard's history row: identity, status, git, and per suite and arm the
        stored aggregates (counts with denominators, rates null over zero)."""
        return {
            "run_id": self.run_id, "label": self.label, "status": self.status,
            "status_reason": self.status_reason, "started_at": self.started_at,
            "finished_at": self.finished_at, "git": self.git.model_dump(mode="json"),
            "derived_from": self.derived_from.model_dump(mode="json") if self.derived_from else None,
            "suites": {
                name: {
                    "regime": s.regime, "cases": s.cases, "aggregate": s.aggregate.model_dump(mode="json"),
                    "arms": {a: v.model_dump(mode="json") for a, v in s.arms.items()} if len(s.arms) > 1 else {},
                    "baseline_arm": s.baseline_arm,
                }
                for name, s in self.suites.items()
            },
            "cost_usd": self.cost_usd,
            "cost_suites": sum(s.aggregate.cost_usd is not None for s in self.suites.values()),
        }


def run_summary(run: Run) -> RunSummary:
    """The summary of `run`, from its suites' aggregates (its cases are not read)."""
    gates = {g.suite: g for g in error_gates(run)}
    return RunSummary(
        run_id=run.run_id, label=run.label, status=run.status, status_reason=run.status_reason,
        started_at=run.started_at, finished_at=run.finished_at, git=run.git,
        derived_from=run.derived_from,
        suites={
            name: SuiteSummary(regime=s.regime, cases=s.dataset.cases, aggregate=s.aggregate,
                               arms=dict(s.arms), baseline_arm=s.baseline_arm,
                               error_gate=gates.get(name))
            for name, s in run.suites.items()
        },
    )


def summarize(run: Run) -> dict[str, Any]:
    """`Run.summary`: the document form of `run_summary(run)`."""
    return run_summary(run).document()
