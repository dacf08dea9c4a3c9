"""`demo_csv`: one line per case result, `suite,case,arm,attempt,status`."""

from __future__ import annotations

from evalh.models import Run

SUFFIX = ".csv"


def render(runs: list[Run]) -> str:
    lines = ["run,suite,case,arm,attempt,status"]
    for run in runs:
        for name, suite in sorted(run.suites.items()):
            for r in suite.cases:
                lines.append(f"{run.run_id},{name},{r.case_id},{r.arm},{r.attempt},{r.status}")
    return "\n".join(lines) + "\n"
