"""Judge figures corrected by human labels (prediction-powered inference, PPI++).

Per suite, arm and judge scorer: the rate at which humans would give the label `positive`
(by default `pass`), estimated from the judge's verdict on every judged result and the
agreed human label on a random sample of them (`evalh.core.stats.ppi`), with its 95 %
interval, the labelled and judged counts and the labels gained over humans alone.

Valid only where every condition holds; otherwise null with every reason:

- the labelled results are a random sample **drawn by evalh** (`evalh export-requests
  --sample N --seed S`, recorded in the label sidecar): hand-picked labels can be biased
  in any direction, and no correction undoes that. Labels outside the draw are not used;
- the results are those the draw was made from (the frame's digest still matches);
- every drawn result has an agreed, non-null human label (a missing label is not missing
  at random: the hard ones are the ones left);
- the judge gave a verdict on every result of the frame;
- one attempt per case and no `metadata.group` (the items must be independent).

Strata (`by`, default `stratum`): each stratum has its own estimate and λ, combined by the
strata's shares of the judged results (stratified PPI). A simple draw whose strata are too
small to estimate apart (fewer than two labels, or none unlabelled) is estimated whole.

A rejudged run (`derived_from.how = "rejudge"`) has the same outputs: the draw of the run
it came from applies, and the figure under the earlier judge is given beside it
(`before_rejudge`), so a judge change shows as a figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalh.core.stats.ppi import (
    Difference,
    PPIEstimate,
    StratifiedEstimate,
    Stratum,
    labels_needed,
    ppi_difference,
    ppi_paired_difference,
    ppi_stratified,
)
from evalh.labels.export import blinded, request_sha256
from evalh.labels.models import SampleRecord, ScrubbedCase, label_key
from evalh.labels.rubric import ITEM_REQUEST, Rubric
from evalh.labels.sample import WHOLE, frame_of, frame_sha256, stratum_of
from evalh.labels.store import RatingsStore
from evalh.models import CaseResult, Run
from evalh.store import RunStore

if TYPE_CHECKING:
    from evalh.core.compare.corrected import CorrectedPair

NOT_DRAWN = ("the labelled results were not drawn at random by evalh (draw them with `evalh "
             "export-requests --sample N --seed S`): a hand-picked sample can be biased, and no "
             "correction undoes that")


@dataclass
class Labelled:
    """The frame of one suite and arm with its judge values and human labels."""

    results: list[CaseResult]
    judge: dict[int, float]
    """Frame index → 1.0 when the judge gave `positive`, else 0.0 (absent: no verdict)."""
    human: dict[int, float | None]
    """Frame index → 1.0 / 0.0 for a drawn result with an agreed label; None: no settled label."""


@dataclass
class CorrectedRate:
    suite: str
    arm: str
    scorer: str
    positive: str
    judge_models: list[str]
    by: list[str]
    """The metadata fields whose values are the strata."""
    judged: int
    judge_rate: float | None
    """The judge's own rate over every judged result (descriptive: biased by the judge)."""
    labelled: int
    human_rate: float | None
    """The labelled results' rate (humans alone)."""
    estimate: StratifiedEstimate | None = None
    strata: dict[str, PPIEstimate] = field(default_factory=dict)
    null_reasons: list[str] = field(default_factory=list)
    labels_outside_draw: int = 0
    notes: list[str] = field(default_factory=list)
    """What a reader of a valid figure must know (a stratum whose interval has zero width)."""
    labels_needed: dict[str, Any] | None = None
    before_rejudge: CorrectedRate | None = None
    items: dict[tuple[str, int], tuple[float | None, float]] = field(default_factory=dict, repr=False)
    """(case id, attempt) → (human 0/1 where drawn and labelled, else None; judge 0/1), for a
    paired difference with another run (not in `to_dict`)."""

    def to_dict(self) -> dict[str, Any]:
        est = self.estimate
        d: dict[str, Any] = {
            "suite": self.suite, "arm": self.arm, "scorer": self.scorer, "positive": self.positive,
            "judge_models": self.judge_models,
            "method": "PPI++ (power-tuned)" + (f", stratified by {', '.join(self.by)} ({len(self.strata)} strata)"
                                               if len(self.strata) > 1 else ""),
            "estimate": est.estimate if est else None,
            "interval_95": list(est.interval) if est else None,
            "se": est.se if est else None,
            "labelled": self.labelled, "judged": self.judged,
            "effective_labels": est.effective_labels if est else None,
            "labels_gained": est.labels_gained if est else None,
            "judge_rate": self.judge_rate, "human_rate": self.human_rate,
            "null_reasons": self.null_reasons, "notes": self.notes, "labels_outside_draw": self.labels_outside_draw,
            "strata": {k: v.as_dict() for k, v in self.strata.items()},
        }
        if self.labels_needed is not None:
            d["labels_needed"] = self.labels_needed
        if self.before_rejudge is not None:
            d["before_rejudge"] = self.before_rejudge.to_dict()
        return d


def human_labels(results: Sequence[CaseResult], scheme: Rubric, store: RatingsStore,
                 suite: str) -> list[str | None | bool]:
    """Per result (of `suite`): its agreed label of the rubric's first request field, None
    for an agreed abstention, False when it has no agreed label (unlabelled or disputed).
    Ratings are found by the request digest the export gave (`request_sha256`: the attempt's
    identity too under `bind = "attempt"`)."""
    from evalh.labels.report import Request, _fill_subjects

    current = store.by_request(scheme.sha256)
    fname = next(iter(scheme.fields), None)
    out: list[str | None | bool] = []
    for r in results:
        try:
            sha = request_sha256(r, scheme, suite, blinded(r, scheme))
        except ScrubbedCase:  # its claims quote scrubbed text: never exported, never labelled
            out.append(False)
            continue
        req = Request(suite=suite, result=r, sha=sha, claims=[])
        _fill_subjects(req, scheme, current.get(sha, []))
        sub = next((s for s in req.subjects if s.item == ITEM_REQUEST and s.field == fname), None)
        out.append(sub.label if sub is not None and sub.status == "agreed" else False)
    return out


def positive_problem(scheme: Rubric, positive: str) -> str | None:
    """Why `positive` cannot be a label of the rubric's first request field (a value outside
    its declared vocabulary), or None."""
    fname = next(iter(scheme.fields), None)
    values = scheme.fields[fname].values if fname is not None else None
    if values is None or positive in {label_key(v) for v in values}:
        return None
    return (f"{positive!r} is not a value of the rubric's field {fname!r} "
            f"({', '.join(str(label_key(v)) for v in values)})")


def judge_scorers(frame: Sequence[CaseResult]) -> list[str]:
    return sorted({s.scorer for r in frame for s in r.scores if s.judge_model is not None})


def corrected_rate(
    run: Run, samples: Sequence[SampleRecord], store: RatingsStore, scheme: Rubric, *, suite: str, arm: str,
    scorer: str, positive: str = "pass", by: Sequence[str] = ("stratum",), target_width: float | None = None,
) -> CorrectedRate:
    """The corrected rate of one suite, arm and judge scorer (see the module doc)."""
    frame = frame_of(run, suite, arm)
    mine = [s for s in samples if s.suite == suite and s.arm == arm]
    drawn = {tuple(k) for s in mine for k in s.drawn}
    # a stratified draw sampled each of its strata at its own rate: those strata, and no
    # others (`by` asked for), weight the estimate back to the judged results
    designs = sorted({tuple(s.by) for s in mine if s.method == "stratified"})
    if len(designs) == 1:
        by = list(designs[0])
    judge: dict[int, float] = {}
    models: set[str] = set()
    for i, r in enumerate(frame):
        score = next((s for s in r.scores if s.scorer == scorer), None)
        if score is not None and score.error is None and score.verdict is not None:
            judge[i] = 1.0 if label_key(score.verdict) == positive else 0.0
            models.update([score.judge_model] if score.judge_model else [])
    labels = human_labels(frame, scheme, store, suite)
    human: dict[int, float | None] = {}
    outside = 0
    for i, (r, lab) in enumerate(zip(frame, labels, strict=True)):
        if (r.case_id, r.attempt) in drawn:
            human[i] = None if lab is None or lab is False else (1.0 if lab == positive else 0.0)
        elif lab is not False and lab is not None:
            outside += 1
    settled = [v for v in human.values() if v is not None]
    out = CorrectedRate(
        suite=suite, arm=arm, scorer=scorer, positive=positive, judge_models=sorted(models), by=list(by),
        judged=len(frame),
        judge_rate=sum(judge.values()) / len(judge) if judge else None, labelled=len(settled),
        human_rate=sum(settled) / len(settled) if settled else None, labels_outside_draw=outside,
    )
    reasons = out.null_reasons
    if len(designs) > 1:
        reasons.append("stratified draws by different fields (" + "; ".join(", ".join(d) for d in designs)
                       + "): no one set of strata weights them all")
    problem = positive_problem(scheme, positive)
    if problem is not None:
        reasons.append(f"{problem}: give --positive one of them")
    if not mine:
        reasons.append(NOT_DRAWN)
    elif mine[0].frame_sha256 != frame_sha256(frame):
        reasons.append("the results changed since the labelled sample was drawn: it is no sample of these")
    missing = [v for v in human.values() if v is None]
    if missing:
        reasons.append(f"{len(missing)} drawn result(s) without an agreed label: labels missing from a random "
                       "sample are not missing at random")
    if len(judge) < len(frame):
        reasons.append(f"the judge gave no verdict on {len(frame) - len(judge)} result(s)")
    if any(r.attempt for r in frame):
        reasons.append("more than one attempt per case: the results are not independent items")
    if any(r.metadata.get("group") is not None for r in frame):
        reasons.append("cases grouped (metadata.group): the results are not independent items")
    if reasons:
        return out
    names = [stratum_of(r, by) for r in frame]
    strata: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for i, name in enumerate(names):
        y, yh, yu = strata.setdefault(name, ([], [], []))
        if i in human:
            y.append(human[i])  # type: ignore[arg-type]
            yh.append(judge[i])
        else:
            yu.append(judge[i])
    stratified = any(s.method == "stratified" for s in mine)
    small = [k for k, (y, _, yu) in strata.items() if len(y) < 2 or not yu]
    if small and stratified:
        reasons.append(f"stratum {', '.join(sorted(small))}: fewer than 2 labels or none unlabelled")
        return out
    if small or len(strata) == 1:
        every = [(human[i], judge[i]) for i in human]
        strata = {WHOLE: ([y for y, _ in every], [j for _, j in every],  # type: ignore[misc]
                            [judge[i] for i in range(len(frame)) if i not in human])}
    if any(len(y) < 2 or not yu for y, _, yu in strata.values()):
        reasons.append("fewer than 2 labelled or no unlabelled result")
        return out
    out.items = {(r.case_id, r.attempt): (human.get(i), judge[i]) for i, r in enumerate(frame)}
    keys = sorted(strata)
    est = ppi_stratified([Stratum(*strata[k]) for k in keys])
    out.estimate = est
    out.strata = dict(zip(keys, est.strata, strict=True))
    for k, e in out.strata.items():
        if e.se == 0.0:
            out.notes.append(f"stratum {k}: its {e.labelled} labels and their judge verdicts are each one value, "
                             "so its interval has zero width: the normal interval needs more labels there")
    if target_width is not None:
        plan = labels_needed(est, target_width).as_dict()
        plan["per_stratum"] = dict(zip(keys, plan["per_stratum"], strict=True))  # type: ignore[call-overload]
        out.labels_needed = plan
    return out


def corrected_rates(
    run: Run, samples: Sequence[SampleRecord], store: RatingsStore, scheme: Rubric, *,
    suites: Sequence[str] | None = None, arm: str | None = None, positive: str = "pass",
    by: Sequence[str] = ("stratum",), target_width: float | None = None, before: Run | None = None,
) -> list[CorrectedRate]:
    """Every judged suite, arm and judge scorer of `run` (of `suites`, of `arm`). `before`:
    the run a rejudge came from; its figure under its own judge goes beside each."""
    out = []
    for name in suites or list(run.suites):
        if name not in run.suites:
            continue
        arms = sorted({r.arm for r in run.suites[name].cases})
        for a in arms if arm is None else [arm]:
            frame = frame_of(run, name, a)
            for scorer in judge_scorers(frame):
                rate = corrected_rate(run, samples, store, scheme, suite=name, arm=a, scorer=scorer,
                                      positive=positive, by=by, target_width=target_width)
                if before is not None and name in before.suites:
                    rate.before_rejudge = corrected_rate(before, samples, store, scheme, suite=name, arm=a,
                                                         scorer=scorer, positive=positive, by=by)
                out.append(rate)
    return out


def corrected_difference(base: CorrectedRate, cand: CorrectedRate) -> Difference | None:
    """candidate − base of two valid corrected rates: paired PPI++ on the per-item
    differences when both runs labelled the same items of the same cases (one sample
    labelled on both), else the independent difference (each run its own sample)."""
    if base.estimate is None or cand.estimate is None:
        return None
    lb = {k for k, (y, _) in base.items.items() if y is not None}
    lc = {k for k, (y, _) in cand.items.items() if y is not None}
    if lb == lc and set(base.items) == set(cand.items) and len(lb) >= 2 and len(base.items) > len(lb):
        keys = sorted(lb)
        rest = sorted(set(base.items) - lb)
        return ppi_paired_difference(
            [base.items[k][0] or 0.0 for k in keys], [base.items[k][1] for k in keys],
            [cand.items[k][0] or 0.0 for k in keys], [cand.items[k][1] for k in keys],
            [base.items[k][1] for k in rest], [cand.items[k][1] for k in rest])
    return ppi_difference(base.estimate, cand.estimate)


def corrected_for_run(store: RunStore, ref: str, *, ratings: RatingsStore | None = None) -> list[CorrectedRate] | None:
    """The corrected rates of a stored run, or None when nobody has labelled it (no export
    in its sidecar, nor — for a rejudged run — in its source's). A rejudged run without
    draws of its own uses its source's draw and gives the source's figure beside its own."""
    from evalh.errors import EvalhError
    from evalh.labels.export import rubric_of
    from evalh.labels.models import load_labels, sidecar_path
    from evalh.labels.store import load_store

    header = store.load_header(ref)
    labels = load_labels(sidecar_path(store.resolve(ref), header.run_id), header.run_id)
    samples, before, source = labels.samples, None, labels
    if header.derived_from is not None and header.derived_from.how == "rejudge" and not labels.samples:
        try:
            origin = header.derived_from.run_id
            source = load_labels(sidecar_path(store.resolve(origin), origin), origin)
            before = store.load(origin)
            samples = source.samples
        except EvalhError:
            source = labels
    if not source.exports:
        return None
    run = store.load(ref)
    return corrected_rates(run, samples, ratings or load_store(store.runs_dir), rubric_of(source), before=before)


def corrected_pairs(store: RunStore, base_id: str, cand_id: str) -> tuple[dict[tuple[str, str], CorrectedPair], list[str]]:
    """(suite, arm) → both runs' corrected pass rates and their difference (`corrected_difference`),
    for `compare_runs(corrected=…)`, where both runs have a valid one; and a line for each
    (suite, arm) that has not, saying which side lacks it and why."""
    from evalh.core.compare.corrected import CorrectedPair
    from evalh.labels.store import load_store

    ratings = load_store(store.runs_dir)
    rates: list[dict[tuple[str, str], CorrectedRate]] = []
    for ref in (base_id, cand_id):
        # as `evalh report` reads it: a rejudged run rests on its source's draw and labels
        found = corrected_for_run(store, ref, ratings=ratings)
        if found is None:
            return {}, [f"run {store.load_header(ref).run_id} has no labelled sample (evalh export-requests --sample)"]
        rates.append({(r.suite, r.arm): r for r in found})
    out: dict[tuple[str, str], CorrectedPair] = {}
    warnings: list[str] = []
    for key, b in rates[0].items():
        c = rates[1].get(key)
        if c is None or c.scorer != b.scorer:
            continue
        diff = corrected_difference(b, c)
        if diff is None or b.estimate is None or c.estimate is None:
            why = "; ".join(f"{side}: {'; '.join(r.null_reasons)}" for side, r in (("base", b), ("candidate", c))
                            if r.null_reasons)
            warnings.append(f"suite {key[0]} arm {key[1]}: no corrected figure: {why}")
            continue
        out[key] = CorrectedPair(scorer=b.scorer, base=b.estimate.estimate, cand=c.estimate.estimate,
                                 value=diff.value, se=diff.se, paired=diff.paired, labelled=diff.labelled)
    return out, warnings
