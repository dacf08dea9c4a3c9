"""Random draws of judged results for human labelling (`evalh export-requests --sample`).

A corrected (prediction-powered) figure is valid only when the labelled results are a
random sample of the judged ones, so evalh draws the sample itself and records it in the
label sidecar (`SampleRecord`): the frame (every result of one suite and arm with an
output), its digest, the seed and what was drawn. The draw is reproducible: the same
frame and seed draw the same results. A later draw for the same suite and arm draws only
from what earlier draws left, so the union stays a random sample (within each stratum,
for a stratified draw).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from evalh.labels.models import LabelError, LabelStore, SampleRecord
from evalh.models import CaseResult, Run, sha256_of
from evalh.store import now_iso

Key = tuple[str, int]
"""(case id, attempt)"""

WHOLE = "(all)"
"""The one stratum of an estimate made without strata."""


def frame_of(run: Run, suite: str, arm: str) -> list[CaseResult]:
    """The results a draw is made from: every result of the suite and arm with an output,
    in (case id, attempt) order."""
    out = [r for r in run.suites[suite].cases
           if r.arm == arm and r.status not in ("errored", "skipped") and r.output is not None]
    return sorted(out, key=lambda r: (r.case_id, r.attempt))


def frame_sha256(frame: Sequence[CaseResult]) -> str:
    return sha256_of([[r.case_id, r.attempt, sha256_of({"input": r.input, "output": r.output})] for r in frame])


def stratum_of(r: CaseResult, by: Sequence[str]) -> str:
    """The stratum name of a result: its values of the `by` fields, crossed."""
    return " × ".join(str(r.metadata.get(f)) if r.metadata.get(f) is not None else "(none)" for f in by)


def samples_of(labels: LabelStore, suite: str, arm: str) -> list[SampleRecord]:
    return [s for s in labels.samples if s.suite == suite and s.arm == arm]


def draw(
    run: Run, labels: LabelStore, *, suite: str, arm: str, seed: int, n: int | None = None,
    per_stratum: dict[str, int] | None = None, by: Sequence[str] = (),
) -> SampleRecord:
    """Draw `n` results uniformly (or `per_stratum[s]` in each stratum `s` of `by`) from
    what earlier draws of this suite and arm left, record the draw in `labels` (mutated;
    the caller saves) and return it."""
    frame = frame_of(run, suite, arm)
    digest = frame_sha256(frame)
    earlier = samples_of(labels, suite, arm)
    if earlier and earlier[0].frame_sha256 != digest:
        raise LabelError(f"suite {suite} arm {arm}: the results changed since the first draw "
                         f"({earlier[0].drawn_at}); a new draw would not be one sample with it")
    taken = {tuple(k) for s in earlier for k in s.drawn}
    left = [r for r in frame if (r.case_id, r.attempt) not in taken]
    rng = random.Random(f"{seed}:{suite}:{arm}:{len(earlier)}")
    if per_stratum is None:
        if n is None or n < 1:
            raise LabelError("--sample must be at least 1")
        if n > len(left):
            raise LabelError(f"suite {suite} arm {arm}: cannot draw {n} of {len(left)} results left undrawn")
        chosen = rng.sample(left, n)
        method = "simple"
    else:
        chosen = []
        for name, k in sorted(per_stratum.items()):
            pool = [r for r in left if stratum_of(r, by) == name]
            if k > len(pool):
                raise LabelError(f"suite {suite} arm {arm}: cannot draw {k} of {len(pool)} results "
                                 f"left undrawn in stratum {name!r}")
            chosen += rng.sample(pool, k)
        method = "stratified"
    record = SampleRecord(
        drawn_at=now_iso(), suite=suite, arm=arm, seed=seed, method=method, by=list(by),
        per_stratum=dict(sorted((per_stratum or {}).items())), frame_size=len(frame), frame_sha256=digest,
        drawn=[(r.case_id, r.attempt) for r in chosen],
    )
    labels.samples.append(record)
    return record


def draw_for_export(
    run: Run, labels: LabelStore, runs_dir: Path, *, rubric: Path, suites: Sequence[str] | None,
    arms: Sequence[str] | None, sample: int | None, seed: int | None, target_width: float | None,
    positive: str, by: Sequence[str],
) -> set[tuple[str, str, str, int]]:
    """`export-requests --sample N` / `--target-width W`: draw (recorded in `labels`) in
    each chosen suite and arm, and return what to export (this draw only)."""
    if seed is None:
        raise LabelError("--sample and --target-width need --seed S (the draw must be reproducible)")
    if sample is not None and target_width is not None:
        raise LabelError("give --sample N (a first draw) or --target-width W (more labels), not both")
    only: set[tuple[str, str, str, int]] = set()
    for suite in suites or list(run.suites):
        if suite not in run.suites:
            known = ", ".join(sorted(run.suites)) or "none"
            raise LabelError(f"run {run.run_id} has no suite {suite!r} (it has: {known})")
        for arm in arms or sorted({r.arm for r in run.suites[suite].cases}):
            if target_width is None:
                record = draw(run, labels, suite=suite, arm=arm, seed=seed, n=sample)
            else:
                plan, strata_by = _more_for_width(run, labels, runs_dir, rubric, suite, arm, target_width, positive,
                                                  by)
                if not any(plan.values()):
                    continue
                if set(plan) == {WHOLE}:  # estimated unstratified: more of the same simple draw
                    record = draw(run, labels, suite=suite, arm=arm, seed=seed, n=plan[WHOLE])
                else:  # by the strata the figure is estimated by (an earlier stratified draw's)
                    record = draw(run, labels, suite=suite, arm=arm, seed=seed, per_stratum=plan, by=strata_by)
            only.update((suite, c, arm, a) for c, a in record.drawn)
    if not only:
        raise LabelError(f"the interval is already at most {target_width} wide: nothing more to draw")
    return only


def _more_for_width(
    run: Run, labels: LabelStore, runs_dir: Path, rubric: Path, suite: str, arm: str, width: float,
    positive: str, by: Sequence[str],
) -> tuple[dict[str, int], list[str]]:
    from evalh.labels.corrected import corrected_rate, judge_scorers
    from evalh.labels.rubric import parse_rubric
    from evalh.labels.store import load_store

    scheme = parse_rubric(rubric.read_bytes(), rubric.name)
    scorers = judge_scorers(frame_of(run, suite, arm))
    if not scorers:
        raise LabelError(f"suite {suite} arm {arm}: no judge scorer to correct")
    rate = corrected_rate(run, samples_of(labels, suite, arm), load_store(runs_dir), scheme, suite=suite, arm=arm,
                          scorer=scorers[0], positive=positive, by=by, target_width=width)
    if rate.labels_needed is None:
        raise LabelError(f"suite {suite} arm {arm}: no corrected figure to plan from: " + "; ".join(rate.null_reasons))
    if rate.labels_needed["labels_needed"] is None:
        raise LabelError(f"suite {suite} arm {arm}: {rate.labels_needed['reason']}")
    per: dict[str, int] = rate.labels_needed["per_stratum"]
    return {k: v for k, v in per.items() if v}, list(rate.by)
