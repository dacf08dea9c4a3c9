"""Policy sweep: which decision policy do a run's stored findings support, if any?

A *policy* turns one per-case number into a decision through ordered thresholds:

- binary (`positive = "refuted"`): `decision = positive if x >= threshold`;
- tiers (`tiers = ["structural", "sharpen", "note"]`, `otherwise = "none"`): the first tier
  whose threshold `x` reaches, else `otherwise` — the refuter-panel `3/2/1` kind of rule.

The per-case number (`measure`) comes from the stored run, never from a new target call:
`score` (the case's mean score), `scorer:NAME` (one scorer's value), `output:PATH` (a
number in the output) or `count:PATH` (how many verdicts under PATH equal `count_value`).
Each candidate is scored against the case's *policy-free* label (`label`, a dotted path into
`expected`) — a label is a judgment about the case, never the output of a threshold, or the
sweep would grade the incumbent against its own answer key.

Ranking is a total, deterministic order: by the objective (`accuracy` or
`balanced_accuracy`), then by fewer under-calls (a decision milder than the label: the
guardrail error). There is no tie-break toward the current policy, which is only marked.
Equal keys are ties; they are listed by parameter value for display, and that order is not
a win. `recommended` is set only when the top candidate strictly beats the runner-up;
otherwise every tied candidate is in `tied_top` and the verdict says the data does not
discriminate. Candidates are bounded by what was observed: a policy with a threshold no
observed value reaches can never change an outcome and is not a candidate.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evalh.core.sweep_spec import (
    MAX_CANDIDATES,
    SweepConfig,
    SweepError,
    _name,
    _plain,
    grid_values,
    parse_current_option,
    parse_grid_option,
    resolve_spec,
)
from evalh.models import CaseResult, Run
from evalh.scorers._util import _MISSING, pick

__all__ = [
    "SWEEP_SCHEMA", "Observation", "SweepConfig", "SweepError", "candidates", "decide",
    "evaluate", "grid_values", "observe", "parse_current_option", "parse_grid_option",
    "resolve_spec", "sweep", "sweep_run",
]

SWEEP_SCHEMA = "evalh.sweep/1"


# --------------------------------------------------------------------------- observations


@dataclass(frozen=True)
class Observation:
    """One (case, attempt) of the swept arm: its number (None: undecided) and its label."""

    case_id: str
    attempt: int
    value: float | None
    label: str | None


def measure_of(spec: SweepConfig, result: CaseResult) -> float | None:
    """The per-case number a policy decides on; None when the result cannot give one."""
    if result.status in ("errored", "skipped"):
        return None
    kind, _, arg = spec.measure.partition(":")
    if kind == "score":
        # a judge error leaves the mean of the other scorers: not the case's score
        return None if result.status == "judge_error" else result.score
    if kind == "scorer":
        score = next((s for s in result.scores if s.scorer == arg), None)
        return None if score is None or score.error else score.value
    raw = pick(result.output, arg or None)
    if raw is _MISSING:
        return None
    if kind == "output":
        return float(raw) if isinstance(raw, int | float) else None
    from evalh.core.classify import ERRORED, verdict_of

    items = raw.values() if isinstance(raw, Mapping) else raw if isinstance(raw, list) else None
    if items is None:
        return None
    verdicts = [verdict_of(v, spec.verdict_key)[0] for v in items]
    # compared as text, so `--count-value true` counts JSON `true` verdicts
    want = _name(spec.count_value)
    return float(sum(v is not ERRORED and _name(v) == want for v in verdicts))


def observe(spec: SweepConfig, results: Sequence[CaseResult], where: str) -> list[Observation]:
    """Observations from stored results; a label outside the decision vocabulary is an error."""
    decisions = spec.decisions
    out = []
    for r in results:
        raw = pick(r.expected, spec.label)
        label: str | None = None
        if raw is not _MISSING and raw is not None:
            if spec.tiers:
                label = _name(raw)
                if label not in decisions:
                    raise SweepError(
                        f"{where}: case {r.case_id}: label {label!r} at expected"
                        f"{'.' + spec.label if spec.label else ''} is not one of {', '.join(decisions)}"
                    )
            else:
                label = decisions[0] if _name(raw) == _name(spec.positive) else decisions[1]
        out.append(Observation(r.case_id, r.attempt, measure_of(spec, r), label))
    return out


# --------------------------------------------------------------------------- policies


Params = tuple[float, ...]
"""Thresholds in parameter order (most severe first)."""


def decide(params: Params, decisions: Sequence[str], x: float) -> str:
    """The first decision whose threshold `x` reaches, else the last decision."""
    for threshold, decision in zip(params, decisions, strict=False):
        if x >= threshold:
            return decision
    return decisions[-1]


def evaluate(params: Params, decisions: Sequence[str], obs: Sequence[Observation]) -> dict[str, Any]:
    """Counts of one policy over the decided, labelled observations."""
    rank = {d: i for i, d in enumerate(decisions)}
    confusion: dict[str, dict[str, int]] = {d: dict.fromkeys(decisions, 0) for d in decisions}
    for o in obs:
        assert o.value is not None and o.label is not None
        confusion[o.label][decide(params, decisions, o.value)] += 1
    n = sum(sum(row.values()) for row in confusion.values())
    correct = sum(confusion[d][d] for d in decisions)
    under = sum(c for lab, row in confusion.items() for dec, c in row.items() if rank[dec] > rank[lab])
    recalls = [Fraction(row[lab], sum(row.values())) for lab, row in confusion.items() if sum(row.values())]
    return {
        "n": n, "correct": correct, "under_calls": under, "over_calls": n - correct - under,
        "accuracy": Fraction(correct, n) if n else None,
        "balanced_accuracy": sum(recalls, Fraction(0)) / len(recalls) if recalls else None,
        "confusion": {lab: {d: c for d, c in row.items() if c} for lab, row in confusion.items() if sum(row.values())},
    }


def _params_dict(names: Sequence[str], params: Params) -> dict[str, float | int]:
    return {n: _plain(v) for n, v in zip(names, params, strict=True)}


def candidates(spec: SweepConfig, max_observed: float) -> tuple[list[Params], dict[str, Any]]:
    """The grid's candidates, and what was left out and why.

    Left out: tier thresholds not strictly decreasing (a tier that could never fire before
    the next), and any policy with a threshold above the greatest observed value (that tier
    can never fire on this data, so the policy changes no outcome the data can show).
    """
    axes = []
    for name in spec.params:
        if name in spec.grid:
            axes.append(grid_values(name, spec.grid[name]))
        elif name in spec.current:
            axes.append([_plain(spec.current[name])])
        else:
            raise SweepError(f"sweep: no grid for parameter {name!r} (give --grid {name}=… or a current value)")
    total = 1
    for axis in axes:
        total *= len(axis)
    if total > MAX_CANDIDATES:
        raise SweepError(f"sweep: the grid has {total} candidates (at most {MAX_CANDIDATES}); narrow it")
    kept, unordered, unreachable = [], 0, 0
    for combo in itertools.product(*axes):
        params = tuple(float(v) for v in combo)
        if any(a <= b for a, b in itertools.pairwise(params)):
            unordered += 1
        elif any(v > max_observed for v in params):
            unreachable += 1
        else:
            kept.append(params)
    return kept, {"grid": total, "not_decreasing": unordered, "above_observed": unreachable,
                  "max_observed": _plain(max_observed)}


# --------------------------------------------------------------------------- ranking


def _key(row: dict[str, Any], objective: str) -> tuple[Fraction, int]:
    """Larger is better: the objective, then fewer under-calls. Nothing else is a win."""
    return row[objective], -row["under_calls"]


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def sweep(spec: SweepConfig, obs: Sequence[Observation]) -> dict[str, Any]:
    """Rank every candidate policy on the observations; pure (no I/O)."""
    names, decisions = spec.params, spec.decisions
    scored_obs = [o for o in obs if o.value is not None and o.label is not None]
    labels: dict[str, int] = {}
    for o in scored_obs:
        labels[o.label] = labels.get(o.label, 0) + 1  # type: ignore[index]
    observed = {
        "total": len(obs),
        "scored": len(scored_obs),
        "undecided": sum(o.value is None for o in obs),
        "unlabelled": sum(o.label is None and o.value is not None for o in obs),
        "labels": {d: labels[d] for d in decisions if d in labels},
        "min": _plain(min(o.value for o in scored_obs)) if scored_obs else None,  # type: ignore[type-var]
        "max": _plain(max(o.value for o in scored_obs)) if scored_obs else None,  # type: ignore[type-var]
    }
    if not scored_obs:
        raise SweepError("sweep: no result has both a measure and a label: nothing to rank")
    pool, left_out = candidates(spec, float(observed["max"]))  # type: ignore[arg-type]
    current = tuple(float(spec.current[n]) for n in names) if set(spec.current) >= set(names) else None
    current_note = None
    if current is not None and current not in pool:
        if any(a <= b for a, b in itertools.pairwise(current)):
            current_note = "the current policy's thresholds are not strictly decreasing"
        elif any(v > float(observed["max"]) for v in current):  # type: ignore[arg-type]
            current_note = "the current policy has a threshold no observed value reaches"
        else:
            pool.append(current)  # outside the grid: scored like any other candidate
    if not pool:
        raise SweepError(
            f"sweep: no candidate left: every grid policy has a threshold above the greatest "
            f"observed value ({observed['max']}) or tiers that are not strictly decreasing"
        )
    rows = []
    for params in pool:
        row = evaluate(params, decisions, scored_obs)
        row["params"] = params
        rows.append(row)
    # Total order: the key, then the parameter values — the latter only orders ties for display.
    rows.sort(key=lambda r: (tuple(-k for k in _key(r, spec.objective)), r["params"]))
    rank, prev = 0, None
    for i, row in enumerate(rows):
        k = _key(row, spec.objective)
        if k != prev:
            rank, prev = i + 1, k
        row["rank"] = rank
    top = [r for r in rows if r["rank"] == 1]
    strict = len(top) == 1 and len(rows) > 1
    out_rows = [
        {
            "rank": r["rank"], "params": _params_dict(names, r["params"]),
            "current": r["params"] == current, "objective": _float(r[spec.objective]),
            "accuracy": _float(r["accuracy"]), "balanced_accuracy": _float(r["balanced_accuracy"]),
            "correct": r["correct"], "n": r["n"], "under_calls": r["under_calls"],
            "over_calls": r["over_calls"], "confusion": r["confusion"],
        }
        for r in rows
    ]
    current_row = next((r for r in out_rows if r["current"]), None)
    result: dict[str, Any] = {
        "schema": SWEEP_SCHEMA,
        "measure": spec.measure, "label": spec.label, "objective": spec.objective,
        "ranking": f"{spec.objective}, then fewer under-calls; equal keys tie (shown by parameter value)",
        "params": names, "decisions": decisions, "observations": observed,
        "left_out": left_out,
        "current": None if current is None else {
            "params": _params_dict(names, current),
            "rank": current_row["rank"] if current_row else None,
            "note": current_note,
        },
        "recommended": _params_dict(names, top[0]["params"]) if strict else None,
        "tied_top": [] if strict else [_params_dict(names, r["params"]) for r in top],
        "candidates": out_rows,
    }
    result.update(_pinning(names, top))
    result["verdict"] = _verdict(result, rows, spec, strict)
    return result


def _pinning(names: Sequence[str], top: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Which parameters every top candidate agrees on (pinned) and which the data leaves open."""
    pinned, open_ = {}, {}
    for i, name in enumerate(names):
        values = sorted({r["params"][i] for r in top})
        if len(values) == 1:
            pinned[name] = _plain(values[0])
        else:
            open_[name] = [_plain(v) for v in values]
    return {"pinned": pinned, "undetermined": open_}


def _fmt(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _verdict(result: dict[str, Any], rows: Sequence[dict[str, Any]], spec: SweepConfig, strict: bool) -> str:
    obj = spec.objective.replace("_", " ")
    if strict:
        a, b = rows[0], rows[1]
        text = (
            f"strict win: {_fmt(result['recommended'])} ({obj} {float(a[spec.objective]):.3f}, "
            f"{a['under_calls']} under-calls) beats the runner-up ({obj} "
            f"{float(b[spec.objective]):.3f}, {b['under_calls']} under-calls)"
        )
    elif len(rows) == 1:
        text = "only one candidate: nothing to compare it with, so no recommendation"
    else:
        n = len(result["tied_top"])
        text = f"the data does not discriminate: {n} candidates tie at the top ({obj} and under-calls); no recommendation"
        if result["pinned"]:
            text += f"; pinned: {_fmt(result['pinned'])}"
        if result["undetermined"]:
            text += f"; under-determined: {', '.join(result['undetermined'])}"
    cur = result["current"]
    if cur is not None:
        text += (
            f". The current policy ({_fmt(cur['params'])}) "
            + (f"ranks {cur['rank']} of {len(rows)}" if cur["rank"] else f"is not a candidate: {cur['note']}")
        )
    return text + ". Advisory only: a person edits the policy; evalh never writes it."


def sweep_run(run: Run, suite: str, spec: SweepConfig) -> dict[str, Any]:
    """Sweep the stored results of one suite and arm of a run (no target is called)."""
    if suite not in run.suites:
        known = ", ".join(sorted(run.suites)) or "none"
        raise SweepError(f"run {run.run_id} has no suite {suite!r} (it has: {known})")
    sr = run.suites[suite]
    arms = sorted({r.arm for r in sr.cases})
    arm = spec.arm or sr.baseline_arm or (arms[0] if arms else "default")
    if arms and arm not in arms:
        raise SweepError(f"run {run.run_id}: suite {suite!r} has no arm {arm!r} (it has: {', '.join(arms)})")
    results = [r for r in sr.cases if r.arm == arm]
    obs = observe(spec, results, f"run {run.run_id}: suite {suite}")
    out = sweep(spec, obs)
    return {"run_id": run.run_id, "suite": suite, "arm": arm, **out}
