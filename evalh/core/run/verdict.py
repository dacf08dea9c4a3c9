"""What `evalh run` exits with and why: a run's error gates, its gating contrasts and its
deterministic failures (`--compare-baseline` may only raise the code)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh.core.results.outcome import advisory_suites, error_gates
from evalh.models import Run


@dataclass(frozen=True)
class RunVerdict:
    """What `evalh run` exits with and why (`--compare-baseline` may only raise the code)."""

    code: int
    reasons: list[str] = field(default_factory=list)
    """One line per cause of a non-zero code that the results table does not state:
    a suite over its error rate, a run that did not finish."""


def run_verdict(run: Run) -> RunVerdict:
    """1 when a deterministic case failed or errored, a suite's error rate is over its
    `max_error_rate` (deterministic or stochastic), a gating contrast's rules do not hold,
    a configured suite was skipped for a missing key, or the run is not complete; else 0.
    An advisory suite changes the code only when it measured nothing (every result
    errored, got no judgment or was skipped)."""
    from evalh.core.analysis.contrasts import contrast_reasons

    advisory = advisory_suites(run)
    # advisory: its error rate never fails the run, but a suite that measured nothing does
    reasons = [g.line() + (": an advisory suite that measured nothing" if g.suite in advisory else "")
               for g in error_gates(run) if g.over and (g.suite not in advisory or g.measured_nothing)]
    reasons += contrast_reasons(run)  # a gating contrast (suites.S.contrasts) whose rules do not hold
    from evalh.core.results.skipped import skipped_for_keys

    reasons += skipped_for_keys(run.config)  # a configured suite its key was missing for
    code = 1 if reasons else 0
    if any(s.regime == "deterministic" and (s.aggregate.failed or s.aggregate.errored)
           for name, s in run.suites.items() if name not in advisory):
        code = 1
    if run.status != "complete":
        reasons.append(f"run {run.run_id} is {run.status}: {run.status_reason}; not every case ran")
        code = 1
    return RunVerdict(code=code, reasons=reasons)
