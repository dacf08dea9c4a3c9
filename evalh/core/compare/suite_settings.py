"""What a suite's snapshots in the two runs say about comparing it: the cluster field and the
scorers kept apart, the estimand, the gating rows and the suite's weight in the family. A
change cannot loosen its own gate."""

from __future__ import annotations

from evalh.config import DEFAULT_GATE
from evalh.core.compare.models import ComparePolicy, Estimand
from evalh.models import Run


def snapshot_options(name: str, base: Run, cand: Run) -> tuple[str | None, list[str]]:
    """The suite's cluster field and gated scorers. As with the allowances, a change cannot
    loosen its own gate: the cluster field is the base's (the candidate's when the base
    has no snapshot of the suite), and the gated scorers are those of either run."""
    snaps = [snap for run in (base, cand)
             if isinstance(snap := (run.config.get("suites") or {}).get(name), dict)]
    if not snaps:
        return "group", []
    cluster = snaps[0].get("cluster", "group")
    cluster_by = None if cluster in (None, "case") else str(cluster)
    gated: list[str] = []
    for snap in snaps:
        scores = snap.get("gate_scores") or []
        for x in scores if isinstance(scores, list) else []:
            if str(x) not in gated:
                gated.append(str(x))
    return cluster_by, gated


def suite_estimand(name: str, base: Run, cand: Run, policy: ComparePolicy) -> Estimand:
    """The estimand of a suite's pass-rate and score rows: the policy's (`--estimand`), else
    the suite's `estimand` key (the base's snapshot, then the candidate's), else
    `fixed-suite`."""
    if policy.estimand is not None:
        return policy.estimand
    for run in (base, cand):
        snap = (run.config.get("suites") or {}).get(name)
        if isinstance(snap, dict) and snap.get("estimand") in ("fixed-suite", "population"):
            return snap["estimand"]
    return "fixed-suite"


def suite_gate(name: str, base: Run, cand: Run) -> tuple[frozenset[str], float]:
    """The suite's gating rows and its weight in the family. A change cannot loosen its own
    gate: the rows are those either run's snapshot names (`DEFAULT_GATE` for a snapshot
    without the key), and the weight is the base's (the candidate's when the base has no
    snapshot of the suite; 1 when neither says)."""
    snaps = [snap for run in (base, cand)
             if isinstance(snap := (run.config.get("suites") or {}).get(name), dict)]
    rows: set[str] = set()
    for snap in snaps or [{}]:
        named = snap.get("gate")
        rows |= {str(x) for x in named} if isinstance(named, list) and named else DEFAULT_GATE
    weight = 1.0
    for snap in snaps:
        w = snap.get("gate_weight")
        if isinstance(w, int | float) and not isinstance(w, bool) and w > 0:
            weight = float(w)
            break
    return frozenset(rows), weight


def unmeasured_gate(name: str, base: Run, cand: Run, measured: set[str]) -> str | None:
    """A warning when the suite's `gate` names rows that no comparison row measured (a
    target that reports no cost, a pass/fail suite without a score): declared gating, never
    gated — said, not silent. Rows of `DEFAULT_GATE` a suite simply has not are not named."""
    named: set[str] = set()
    for run in (base, cand):
        snap = (run.config.get("suites") or {}).get(name)
        gate = snap.get("gate") if isinstance(snap, dict) else None
        if isinstance(gate, list):
            named |= {str(x) for x in gate}
    missing = sorted(named - measured)
    if not missing:
        return None
    return (f"suite {name}: gate names {', '.join(missing)}, which neither run measured "
            "(no comparison row): not gated")
