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

Ranking is by the objective (`accuracy` or `balanced_accuracy`) alone, unless the spec
declares a secondary criterion (`tie_break = "fewer_under_calls"`: fewer decisions milder
than the label, the guardrail error), and then the verdict names it as the reason for a win
it decides. There is no tie-break toward the current policy, which is only marked. Equal
keys are ties; they are listed by parameter value for display, and that order is not a win.
`recommended` is set only when the top candidate strictly beats the runner-up; otherwise
every tied candidate is in `tied_top` and the verdict says the data does not discriminate.
Candidates are bounded by what was observed: a policy with a threshold no observed value
reaches can never change an outcome and is not a candidate.

A failed call is never a silent survive: a result whose measure rests on one (an errored
lens verdict under `count:PATH`, a judge error, a failed target) is *errored*. By default
(`errored = "exclude"`) it is left out of every candidate's score and counted; with
`errored = "miss"` it is a wrong decision for every candidate.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from evalh.core.analysis.sweep_models import (
    Candidate,
    CurrentPolicy,
    LeftOut,
    Margin,
    Observed,
    SweepResult,
)
from evalh.fields import MISSING, pick
from evalh.models import CaseResult, Run
from evalh.sweep_spec import (
    MAX_CANDIDATES,
    SweepConfig,
    SweepError,
    grid_values,
    parse_current_option,
    parse_grid_option,
    plain_number,
    resolve_spec,
    value_name,
)

if TYPE_CHECKING:
    from evalh.config import Config, SuiteConfig

__all__ = [
    "SWEEP_SCHEMA", "Observation", "SweepConfig", "SweepError", "SweepResult", "candidates", "decide",
    "evaluate", "grid_values", "observe", "parse_current_option", "parse_grid_option",
    "resolve_spec", "stored_sweep", "suite_sweep", "sweep", "sweep_request", "sweep_results", "sweep_run",
]

SWEEP_SCHEMA = "evalh.sweep/1"


# --------------------------------------------------------------------------- observations


@dataclass(frozen=True)
class Observation:
    """One (case, attempt) of the swept arm: its number (None: undecided) and its label.

    `errored`: the number would rest on a failed call; `value` is then None.
    """

    case_id: str
    attempt: int
    value: float | None
    label: str | None
    errored: bool = False


ERRORED_MEASURE = "errored"
"""`measure_of`'s answer when the number would rest on a failed call."""


def measure_of(spec: SweepConfig, result: CaseResult) -> float | str | None:
    """The per-case number a policy decides on; None when the result cannot give one (a
    NaN or infinity too: the run document stores null), `ERRORED_MEASURE` when it would rest
    on a failed call (never read as a survive)."""
    value = _measure_of(spec, result)
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _measure_of(spec: SweepConfig, result: CaseResult) -> float | str | None:
    if result.status == "skipped":
        return None
    if result.status == "errored":  # the target failed: nothing was decided
        return ERRORED_MEASURE
    kind, _, arg = spec.measure.partition(":")
    if kind == "score":
        # a judge error leaves the mean of the other scorers: not the case's score
        return ERRORED_MEASURE if result.status == "judge_error" else result.score
    if kind == "scorer":
        score = next((s for s in result.scores if s.scorer == arg), None)
        if score is not None and score.error:
            return ERRORED_MEASURE
        return None if score is None else score.value
    raw = pick(result.output, arg or None)
    if raw is MISSING:
        return None
    if kind == "output":
        return float(raw) if isinstance(raw, int | float) else None
    from evalh.core.analysis.classify import ERRORED, verdict_of

    items = raw.values() if isinstance(raw, Mapping) else raw if isinstance(raw, list) else None
    if items is None:
        return None
    verdicts = [verdict_of(v, spec.verdict_key)[0] for v in items]
    if any(v is ERRORED for v in verdicts):
        # a lens that did not answer might have refuted: the count is not known
        return ERRORED_MEASURE
    # compared as text, so `--count-value true` counts JSON `true` verdicts
    want = value_name(spec.count_value)
    return float(sum(value_name(v) == want for v in verdicts))


def observe(spec: SweepConfig, results: Iterable[CaseResult], where: str) -> list[Observation]:
    """Observations from stored results; a label outside the decision vocabulary is an error."""
    decisions = spec.decisions
    out = []
    for r in results:
        raw = pick(r.expected, spec.label)
        label: str | None = None
        if raw is not MISSING and raw is not None:
            if spec.tiers:
                label = value_name(raw)
                if label not in decisions:
                    raise SweepError(
                        f"{where}: case {r.case_id}: label {label!r} at expected"
                        f"{'.' + spec.label if spec.label else ''} is not one of {', '.join(decisions)}"
                    )
            else:
                label = decisions[0] if value_name(raw) == value_name(spec.positive) else decisions[1]
        value = measure_of(spec, r)
        if value == ERRORED_MEASURE:
            out.append(Observation(r.case_id, r.attempt, None, label, errored=True))
        else:
            out.append(Observation(r.case_id, r.attempt, value, label))  # type: ignore[arg-type]
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


class ObservedValues:
    """The labelled observations a sweep scores, indexed once for every candidate: each
    label's decided values sorted (a candidate's counts are then bisections, not a pass
    over every result) and its errored observations counted."""

    def __init__(self, decisions: Sequence[str], obs: Sequence[Observation]) -> None:
        self.decisions = list(decisions)
        values: dict[str, list[float]] = {d: [] for d in decisions}
        self.missed: dict[str, int] = dict.fromkeys(decisions, 0)
        for o in obs:
            assert o.label is not None
            if o.errored:
                self.missed[o.label] += 1
            else:
                assert o.value is not None
                values[o.label].append(o.value)
        self.values = {d: sorted(v) for d, v in values.items()}

    def confusion(self, params: Params) -> dict[str, dict[str, int]]:
        """Label → decision → results, for thresholds in parameter order."""
        decisions = self.decisions
        if any(a <= b for a, b in itertools.pairwise(params)):  # not a tier order: decide one by one
            out = {d: dict.fromkeys(decisions, 0) for d in decisions}
            for lab, vals in self.values.items():
                for x in vals:
                    out[lab][decide(params, decisions, x)] += 1
            return out
        out = {}
        for lab, vals in self.values.items():
            n = len(vals)
            # at or above each threshold, most severe first: tier i takes those between p[i] and p[i-1]
            at_least = [n - bisect.bisect_left(vals, t) for t in params]
            row = dict.fromkeys(decisions, 0)
            prev = 0
            for d, k in zip(decisions, at_least, strict=False):
                row[d] = k - prev
                prev = k
            row[decisions[-1]] += n - prev
            out[lab] = row
        return out


def evaluate(
    params: Params, decisions: Sequence[str], obs: Sequence[Observation] | ObservedValues, *, excluded: int = 0
) -> dict[str, Any]:
    """Counts of one policy over the labelled observations it is scored on.

    An errored observation among them (the `miss` rule) is a wrong decision: in `n`, never
    `correct`, counted in `errored` (and in `errored_by_label`), neither an under- nor an
    over-call. `excluded` errored observations (the `exclude` rule) are only reported.
    """
    index = obs if isinstance(obs, ObservedValues) else ObservedValues(decisions, obs)
    rank = {d: i for i, d in enumerate(decisions)}
    confusion = index.confusion(params)
    missed = index.missed
    decided = sum(sum(row.values()) for row in confusion.values())
    errored = sum(missed.values())
    n = decided + errored
    correct = sum(confusion[d][d] for d in decisions)
    under = sum(c for lab, row in confusion.items() for dec, c in row.items() if rank[dec] > rank[lab])
    per_label = {lab: sum(row.values()) + missed[lab] for lab, row in confusion.items()}
    recalls = [Fraction(confusion[lab][lab], total) for lab, total in per_label.items() if total]
    return {
        "n": n, "correct": correct, "under_calls": under, "over_calls": decided - correct - under,
        "errored": errored if errored else excluded,
        "errored_by_label": {lab: c for lab, c in missed.items() if c},
        "accuracy": Fraction(correct, n) if n else None,
        "balanced_accuracy": sum(recalls, Fraction(0)) / len(recalls) if recalls else None,
        "confusion": {lab: {d: c for d, c in row.items() if c} for lab, row in confusion.items() if sum(row.values())},
    }


def _params_dict(names: Sequence[str], params: Params) -> dict[str, float | int]:
    return {n: plain_number(v) for n, v in zip(names, params, strict=True)}


def candidates(spec: SweepConfig, max_observed: float) -> tuple[list[Params], LeftOut]:
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
            axes.append([plain_number(spec.current[name])])
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
    return kept, LeftOut(grid=total, not_decreasing=unordered, above_observed=unreachable,
                         max_observed=plain_number(max_observed))


# --------------------------------------------------------------------------- ranking


def _key(row: dict[str, Any], spec: SweepConfig) -> tuple[Fraction, ...]:
    """Larger is better: the objective, then a declared tie-break. Nothing else is a win."""
    if spec.tie_break == "fewer_under_calls":
        return row[spec.objective], Fraction(-row["under_calls"])
    return (row[spec.objective],)


def _ranking_text(spec: SweepConfig) -> str:
    then = ", then fewer under-calls (the declared tie-break)" if spec.tie_break else ""
    return f"{spec.objective}{then}; equal keys tie (shown by parameter value)"


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def nothing_scored(o: Observed) -> str:
    """Why no result was scored, counted: `all 5 results errored`, or each reason of the
    results apart (an errored lens verdict, a failed target or judge among them)."""
    if not o.total:
        return "the suite has no results"
    if o.errored == o.total:
        return f"all {o.total} results errored" if o.total > 1 else "its one result errored"
    parts = [f"{n} {what}" for n, what in ((o.errored, "errored"), (o.undecided, "without a measure"),
                                          (o.unlabelled, "unlabelled")) if n]
    return f"of {o.total} results: " + ", ".join(parts) if parts else f"{o.total} results"


def sweep(spec: SweepConfig, obs: Sequence[Observation]) -> SweepResult:
    """Rank every candidate policy on the observations; pure (no I/O)."""
    names, decisions = spec.params, spec.decisions
    decided_obs = [o for o in obs if o.value is not None and o.label is not None]
    errored_obs = [o for o in obs if o.errored and o.label is not None]
    scored_obs = decided_obs + errored_obs if spec.errored == "miss" else decided_obs
    labels: dict[str, int] = {}
    for o in scored_obs:
        labels[o.label] = labels.get(o.label, 0) + 1  # type: ignore[index, arg-type]
    values = [o.value for o in decided_obs if o.value is not None]
    observed = Observed(
        total=len(obs),
        scored=len(scored_obs),
        undecided=sum(o.value is None and not o.errored for o in obs),
        errored=len(errored_obs),
        unlabelled=sum(o.label is None and (o.value is not None or o.errored) for o in obs),
        labels={d: labels[d] for d in decisions if d in labels},
        min=plain_number(min(values)) if values else None,
        max=plain_number(max(values)) if values else None,
    )
    if observed.max is None:
        raise SweepError(f"sweep: no result has both a measure and a label: nothing to rank ({nothing_scored(observed)})")
    max_observed = float(observed.max)
    pool, left_out = candidates(spec, max_observed)
    current = tuple(float(spec.current[n]) for n in names) if set(spec.current) >= set(names) else None
    current_note = None
    if current is not None and current not in pool:
        if any(a <= b for a, b in itertools.pairwise(current)):
            current_note = "the current policy's thresholds are not strictly decreasing"
        elif any(v > max_observed for v in current):
            current_note = "the current policy has a threshold no observed value reaches"
        else:
            pool.append(current)  # outside the grid: scored like any other candidate
    if not pool:
        raise SweepError(
            f"sweep: no candidate left: every grid policy has a threshold above the greatest "
            f"observed value ({observed.max}) or tiers that are not strictly decreasing"
        )
    rows = []
    index = ObservedValues(decisions, scored_obs)
    for params in pool:
        row = evaluate(params, decisions, index,
                       excluded=len(errored_obs) if spec.errored == "exclude" else 0)
        row["params"] = params
        rows.append(row)
    # Total order: the key, then the parameter values — the latter only orders ties for display.
    rows.sort(key=lambda r: (tuple(-k for k in _key(r, spec)), r["params"]))
    rank, prev = 0, None
    for i, row in enumerate(rows):
        k = _key(row, spec)
        if k != prev:
            rank, prev = i + 1, k
        row["rank"] = rank
    top = [r for r in rows if r["rank"] == 1]
    strict = len(top) == 1 and len(rows) > 1
    out_rows = [
        Candidate(
            rank=r["rank"], params=_params_dict(names, r["params"]),
            current=r["params"] == current, objective=_float(r[spec.objective]),
            accuracy=_float(r["accuracy"]), balanced_accuracy=_float(r["balanced_accuracy"]),
            correct=r["correct"], n=r["n"], under_calls=r["under_calls"],
            over_calls=r["over_calls"], errored=r["errored"],
            errored_by_label=r["errored_by_label"], confusion=r["confusion"],
        )
        for r in rows
    ]
    current_row = next((r for r in out_rows if r.current), None)
    pinned, undetermined = _pinning(names, top)
    margins = _margins(spec, scored_obs, rows, strict, current)
    result = SweepResult(
        schema=SWEEP_SCHEMA,
        measure=spec.measure, label=spec.label, objective=spec.objective,
        ranking=_ranking_text(spec), tie_break=spec.tie_break, errored=spec.errored,
        params=names, decisions=decisions, observations=observed,
        left_out=left_out,
        current=None if current is None else CurrentPolicy(
            params=_params_dict(names, current),
            rank=current_row.rank if current_row else None,
            note=current_note,
        ),
        recommended=_params_dict(names, top[0]["params"]) if strict else None,
        won_on=_won_on(rows, spec) if strict else None,
        tied_top=[] if strict else [_params_dict(names, r["params"]) for r in top],
        candidates=out_rows,
        pinned=pinned, undetermined=undetermined, margins=margins,
        within_noise=next((m.within_noise for m in margins if m.against == "runner-up"), None)
        if strict and _won_on(rows, spec) == spec.objective else None,
    )
    return replace(result, verdict=_verdict(result, rows, spec, strict))


def _margins(spec: SweepConfig, obs: Sequence[Observation], rows: Sequence[dict[str, Any]],
             strict: bool, current: Params | None) -> list[Margin]:
    """The top against the runner-up (a strict win) and the current policy (below the top)."""
    from evalh.core.analysis.sweep_noise import margin

    labels, case_ids = [str(o.label) for o in obs], [o.case_id for o in obs]

    def rights(params: Params) -> list[bool]:
        return [not o.errored and o.value is not None and decide(params, spec.decisions, o.value) == o.label
                for o in obs]

    def versus(other: dict[str, Any], against: str) -> Margin:
        return margin(spec.objective, labels, case_ids, rights(rows[0]["params"]), rights(other["params"]),
                      top=_params_dict(spec.params, rows[0]["params"]),
                      other=_params_dict(spec.params, other["params"]),
                      against=against, other_current=other["params"] == current)

    out = [versus(rows[1], "runner-up")] if strict else []
    cur = next((r for r in rows if r["params"] == current), None)
    if cur is not None and cur["rank"] != 1 and not (strict and rows[1] is cur):
        out.append(versus(cur, "current"))
    return out


def _pinning(
    names: Sequence[str], top: Sequence[dict[str, Any]]
) -> tuple[dict[str, float | int], dict[str, list[float | int]]]:
    """Which parameters every top candidate agrees on (pinned) and which the data leaves open."""
    pinned, open_ = {}, {}
    for i, name in enumerate(names):
        values = sorted({r["params"][i] for r in top})
        if len(values) == 1:
            pinned[name] = plain_number(values[0])
        else:
            open_[name] = [plain_number(v) for v in values]
    return pinned, open_


def _fmt(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _won_on(rows: Sequence[dict[str, Any]], spec: SweepConfig) -> str:
    """What decided a strict win: the objective, or the declared tie-break."""
    objective = spec.objective
    return objective if rows[0][objective] != rows[1][objective] else str(spec.tie_break)


def _verdict(result: SweepResult, rows: Sequence[dict[str, Any]], spec: SweepConfig, strict: bool) -> str:
    obj = spec.objective.replace("_", " ")
    if strict:
        a, b = rows[0], rows[1]
        recommended = result.recommended or {}
        if result.won_on == spec.objective:
            text = (
                f"strict win on {obj}: {_fmt(recommended)} ({obj} "
                f"{float(a[spec.objective]):.3f}) beats the runner-up ({obj} {float(b[spec.objective]):.3f})"
            )
        else:
            text = (
                f"win on the declared tie-break (fewer under-calls), not on {obj}: "
                f"{_fmt(recommended)} ties the runner-up on {obj} {float(a[spec.objective]):.3f} "
                f"and has {a['under_calls']} under-calls against {b['under_calls']}"
            )
    elif len(rows) == 1:
        text = "only one candidate: nothing to compare it with, so no recommendation"
    else:
        n = len(result.tied_top)
        on = f"{obj} and under-calls" if spec.tie_break else obj
        text = f"the data does not discriminate: {n} candidates tie at the top on {on}; no recommendation"
        if result.pinned:
            text += f"; pinned: {_fmt(result.pinned)}"
        if result.undetermined:
            text += f"; under-determined: {', '.join(result.undetermined)}"
    from evalh.core.analysis.sweep_noise import noise_phrase

    runner_up = next((m for m in result.margins if m.against == "runner-up"), None)
    if runner_up is not None and result.won_on == spec.objective:
        text += f"; the win is {noise_phrase(runner_up)}"
    cur = result.current
    if cur is not None:
        text += (
            f". The current policy ({_fmt(cur.params)}) "
            + (f"ranks {cur.rank} of {len(rows)}" if cur.rank else f"is not a candidate: {cur.note}")
        )
        against = next((m for m in result.margins if m.other_current), None)
        if against is not None:
            lead = "the top candidate" if strict else "the first of the tied top"
            text += f"; {lead} beats it by {against.difference:+.3f} {obj}, {noise_phrase(against)}"
    return text + ". Advisory only: a person edits the policy; evalh never writes it."


def sweep_run(run: Run, suite: str, spec: SweepConfig) -> SweepResult:
    """Sweep the stored results of one suite and arm of a run (no target is called)."""
    if suite not in run.suites:
        known = ", ".join(sorted(run.suites)) or "none"
        raise SweepError(f"run {run.run_id} has no suite {suite!r} (it has: {known})")
    sr = run.suites[suite]
    result = sweep_results(spec, sr.cases, sr.baseline_arm, f"run {run.run_id}: suite {suite}", suite=suite)
    return replace(result, run_id=run.run_id)


def _swept_arm(spec: SweepConfig, results: Sequence[CaseResult], baseline_arm: str | None, where: str) -> str:
    arms = sorted({r.arm for r in results})
    arm = spec.arm or baseline_arm or (arms[0] if arms else "default")
    if arms and arm not in arms:
        raise SweepError(f"{where} has no arm {arm!r} (it has: {', '.join(arms)})")
    return arm


def sweep_results(spec: SweepConfig, results: Sequence[CaseResult], baseline_arm: str | None,
                  where: str, *, suite: str | None = None) -> SweepResult:
    """Sweep one arm (the spec's, else the baseline arm) of a suite's results."""
    arm = _swept_arm(spec, results, baseline_arm, where)
    obs = observe(spec, (r for r in results if r.arm == arm), where)  # no list of the models
    return replace(sweep(spec, obs), suite=suite, arm=arm)


STORED_CANDIDATES = 100
"""Ranked candidates a run document keeps of its sweep (the current policy's row too)."""


def stored_sweep(result: SweepResult, keep: int = STORED_CANDIDATES) -> dict[str, Any]:
    """The `evalh.sweep/1` document as a run keeps it (`suites.S.sweep`): the first `keep`
    candidates and the current policy's row (after them when it ranks lower), with
    `candidates_total` saying how many ranked and `candidates_kept` the `keep`."""
    doc = result.to_dict()
    rows = doc["candidates"]
    doc["candidates_total"] = len(rows)
    doc["candidates_kept"] = keep
    doc["candidates"] = [r for i, r in enumerate(rows) if i < keep or r["current"]]
    return doc


def suite_sweep(name: str, config: SuiteConfig | None, results: Sequence[CaseResult],
                baseline_arm: str | None) -> dict[str, Any] | None:
    """What `evalh run` stores in `suites.S.sweep` for a suite with a `[suites.S.sweep]`
    table: the ranking of its configured sweep (`stored_sweep`), or, when the stored
    results cannot be ranked, `{"schema", "suite", "error"}` — never a failed run."""
    spec = config.sweep if config is not None else None
    if spec is None:
        return None
    try:
        return stored_sweep(sweep_results(spec, results, baseline_arm, f"suite {name}", suite=name))
    except SweepError as exc:
        return {"schema": SWEEP_SCHEMA, "suite": name, "error": str(exc)}


def _base_spec(config: Config | None, run_config: dict[str, Any], suite: str) -> dict[str, Any] | None:
    """`[suites.S.sweep]` from evalh.toml, else from the run's config snapshot."""
    if config is not None and suite in config.suites:
        configured = config.suites[suite].sweep
        if configured is not None:
            return configured.model_dump(exclude_defaults=True)
    snap = run_config.get("suites", {}).get(suite, {}).get("sweep")
    return snap if isinstance(snap, dict) else None


def sweep_request(
    run: Run, suite: str | None, config: Config | None, options: Mapping[str, Any],
    *, grid: Sequence[str] = (), current: Sequence[str] = (),
) -> SweepResult:
    """`evalh sweep`: the suite (the run's only one by default), the spec of
    `[suites.S.sweep]` in `config` (or the run's snapshot) with `options` over it (None: not
    given; `tiers` comma-separated), `--grid NAME=RANGE` replacing NAME's configured grid
    and `--current NAME=V[,NAME=V]`; then `sweep_run`."""
    if suite is None:
        if len(run.suites) != 1:
            raise SweepError(f"run {run.run_id} has {len(run.suites)} suites: choose one with --suite")
        suite = next(iter(run.suites))
    base = _base_spec(config, run.config, suite)
    overrides = dict(options)
    tiers = overrides.get("tiers")
    overrides["tiers"] = [t.strip() for t in tiers.split(",") if t.strip()] if tiers else None
    if grid:
        overrides["grid"] = {**(base or {}).get("grid", {}), **dict(parse_grid_option(g) for g in grid)}
    if current:
        overrides["current"] = parse_current_option(current)
    if base is None and not any(v is not None for v in overrides.values()):
        raise SweepError(
            f"suite {suite!r} has no [suites.{suite}.sweep] table: give --measure, --label, "
            f"--positive or --tiers/--otherwise, and --grid"
        )
    return sweep_run(run, suite, resolve_spec(base, overrides))
