"""The exit code of a comparison: what `evalh compare` and `evalh run --compare-baseline`
exit with for a gate's flags."""

from __future__ import annotations

from evalh.core.compare.models import Comparison


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
