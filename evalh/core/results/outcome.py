"""What results mean: a case's status from its scores, the error gates and advisory suites,
and a run's headline numbers (the exit codes: `core.run.verdict`, `core.compare.gate`).

Pure functions, shared by the runner and anything that rebuilds a run (resume, rejudge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalh.models import Aggregate, CaseStatus, DerivedFrom, GitInfo, Regime, Run, Score
from evalh.numbers import pct


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


def advisory_scorers(run: Run, suite: str) -> set[str]:
    """The scorers of `suite` declared `advisory = true` in the run's config snapshot (by
    display name: `name`, else `type`), or every scorer of an advisory suite: recorded,
    never deciding a case's status."""
    cfg = ((run.config or {}).get("suites") or {}).get(suite)
    if not isinstance(cfg, dict):
        return set()
    scorers = [x for x in cfg.get("scorers") or [] if isinstance(x, dict)]
    whole = cfg.get("advisory") is True
    return {str(x.get("name") or x.get("type")) for x in scorers if whole or x.get("advisory") is True}


def scorers_made_advisory(base: Run, candidate: Run, suite: str) -> list[str]:
    """The scorers of `suite` the base's config gates on and the candidate's alone declares
    advisory, while the candidate's suite keeps a gating scorer: its cases' statuses were
    decided without them (`decide_status`), so what they check could break unseen. (A suite
    advisory as a whole drops no scorer from its statuses: `advisory_suites` covers it.)"""
    if suite in advisory_suites(candidate):
        return []
    cfg = ((base.config or {}).get("suites") or {}).get(suite)
    if not isinstance(cfg, dict):
        return []
    names = {str(x.get("name") or x.get("type")) for x in cfg.get("scorers") or [] if isinstance(x, dict)}
    return sorted((names - advisory_scorers(base, suite)) & advisory_scorers(candidate, suite))


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
    bill: dict[str, Any] = field(default_factory=dict)
    """What its target, judge and generator calls cost, apart and in `total`
    (`evalh.core.results.bill`: part → `Part`)."""


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
    stopped_at: str | None = None

    @property
    def bill(self) -> dict[str, Any]:
        """The run's bill: the suites' target, judge and generator spend, apart and in total."""
        from evalh.core.results.bill import total_bill

        return total_bill(s.bill for s in self.suites.values())

    @property
    def cost_usd(self) -> float | None:
        """Everything the run's calls cost (target, judge and generator: what the budget
        counts), known costs only; None when no call had a known cost."""
        return self.bill["total"].cost_usd

    @property
    def deterministic_ok(self) -> bool:
        return all(
            s.aggregate.failed == 0 and s.aggregate.errored == 0
            and not (s.error_gate is not None and s.error_gate.over)
            for s in self.suites.values() if s.regime == "deterministic"
        )

    def document(self) -> dict[str, Any]:
        """Headline numbers, as the run document stores them (`Run.summary`). Per-suite
        figures, never one blended pass rate across suites. `cost_usd` and the token sums
        are the whole bill (target, judge and generator calls); `bill` gives each apart."""
        from evalh.core.results.bill import bill_document

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
            if s.bill:
                per_suite[name]["bill"] = bill_document(s.bill)
        bill = self.bill
        return {
            **totals,
            "tokens_in": bill["total"].tokens_in,
            "tokens_out": bill["total"].tokens_out,
            "cost_usd": self.cost_usd, "bill": bill_document(bill), "deterministic_ok": self.deterministic_ok,
            "error_rate_ok": not any(s.error_gate.over for s in self.suites.values() if s.error_gate),
            "suites": per_suite,
        }

    def history_row(self) -> dict[str, Any]:
        """The dashboard's history row: identity, status, git, and per suite and arm the
        stored aggregates (counts with denominators, rates null over zero), and the bill."""
        from evalh.core.results.bill import bill_document, bill_text

        return {
            "run_id": self.run_id, "label": self.label, "status": self.status,
            "status_reason": self.status_reason, "started_at": self.started_at,
            "finished_at": self.finished_at, "stopped_at": self.stopped_at, "git": self.git.model_dump(mode="json"),
            "derived_from": self.derived_from.model_dump(mode="json") if self.derived_from else None,
            "suites": {
                name: {
                    "regime": s.regime, "cases": s.cases, "aggregate": s.aggregate.model_dump(mode="json"),
                    "arms": {a: v.model_dump(mode="json") for a, v in s.arms.items()} if len(s.arms) > 1 else {},
                    "baseline_arm": s.baseline_arm,
                    "bill": bill_document(s.bill) if s.bill else None,
                }
                for name, s in self.suites.items()
            },
            "cost_usd": self.cost_usd,
            "bill": bill_document(self.bill),
            "bill_text": bill_text(self.bill),
            "cost_suites": sum(bool(s.bill) and s.bill["total"].cost_usd is not None for s in self.suites.values()),
        }


def run_summary(run: Run) -> RunSummary:
    """The summary of `run`, from its suites' aggregates and details (its cases are not read)."""
    from evalh.core.results.bill import run_bill

    gates = {g.suite: g for g in error_gates(run)}
    bills = run_bill(run)
    return RunSummary(
        run_id=run.run_id, label=run.label, status=run.status, status_reason=run.status_reason,
        started_at=run.started_at, finished_at=run.finished_at, stopped_at=run.stopped_at, git=run.git,
        derived_from=run.derived_from,
        suites={
            name: SuiteSummary(regime=s.regime, cases=s.dataset.cases, aggregate=s.aggregate,
                               arms=dict(s.arms), baseline_arm=s.baseline_arm,
                               error_gate=gates.get(name), bill=bills[name])
            for name, s in run.suites.items()
        },
    )


def summarize(run: Run) -> dict[str, Any]:
    """`Run.summary`: the document form of `run_summary(run)`."""
    return run_summary(run).document()
