"""The label report: agreement before adjudication, judge–human confusion, strata apart.

Pure: it reads a run, its label sidecar and the ratings store and returns a
`LabelReport` (`evalh.labels.report_models`; `to_dict` is the `--json` document).

- **One rubric.** The report is for one rubric (the latest export's, or the one asked
  for). Ratings under other rubric versions are counted apart (`other_rubrics`), never
  pooled. Stored ratings are re-verified against the run: a rating applies to a result
  only when the result's blinded request has the rated digest; ratings of the same case
  made on other content are **stale** — counted and listed, never used.
- **Subjects.** A request's fields, each claim's fields and each quality dimension of the
  rubric are rated subjects. A subject is `agreed` (every rating equal, or adjudicated),
  `disputed`, or `unlabelled`; an agreed null is an abstention ("cannot tell").
- **Counts** per request: failed captures, withheld and not reviewed
  (`metadata.review_state`), agreed, abstained, disputed, missing (rated in part),
  unlabelled, adjudicated, single-rated; selected-claim counts and unresolved claim ids.
- **Inter-rater**, before adjudication, per rated field: every pair's raw agreement and
  Cohen's kappa, and Fleiss' kappa and Krippendorff's alpha (nominal; ordinal for ordinal
  fields) across all raters. Null is a category of its own (`evalh.labels.agreement`).
- **Judge–human**: for each judge scorer, confusion counts and agreement of its verdicts
  against the agreed human label of the request's first field, and whether its rubric
  digest is this report's rubric.
- **Strata** (`--by`, one or several metadata fields, crossed) apart, never blended. Rates
  are over **work items** (`metadata.group`, else the case): the rubric's `[[rates]]` (for
  example any false claim) and `--positive` on the request field. Intervals follow the one
  rule of `evalh.labels.intervals`. A work item crossing splits or sampling methods is
  refused.

Every report carries `releaseDecision: not-assessed` and `judgeUse: advisory-only`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.core.stats.intervals import cohens_kappa, raw_agreement
from evalh.labels.agreement import fleiss_kappa, krippendorff_alpha
from evalh.labels.corrected import corrected_rates, positive_problem
from evalh.labels.export import blinded, request_sha256, rubric_of
from evalh.labels.intervals import WorkItem, interval_where_valid, work_item_key
from evalh.labels.models import LabelError, LabelStore, SampleRecord, ScrubbedCase, label_key
from evalh.labels.report_models import (
    Agreement,
    ClaimCounts,
    DimensionRate,
    FieldAgreement,
    InterRater,
    JudgeAgreement,
    KrippendorffAlpha,
    LabelCounts,
    LabelReport,
    OtherRubrics,
    Rate,
    RaterPair,
    Stale,
    StaleResult,
    Stratum,
)
from evalh.labels.rubric import ITEM_REQUEST, RateSpec, Rubric
from evalh.labels.store import RatingsStore
from evalh.models import CaseResult, Run

REPORT_SCHEMA = "evalh.label-report/2"
RELEASE_DECISION = "not-assessed"
JUDGE_USE = "advisory-only"
NOT_REVIEWED = {"withheld": "withheld", "not-reviewed": "not_reviewed", "not_reviewed": "not_reviewed",
                "not reviewed": "not_reviewed"}


def _agreement(a: list[str | None], b: list[str | None]) -> Agreement:
    """Raw agreement and kappa with their overlap, and why kappa is null when it is."""
    kappa = cohens_kappa(a, b)
    reason = None
    if not a:
        reason = "no overlap: no request has both labels"
    elif kappa is None:
        reason = "constant labels: both gave one and the same label throughout, so chance agreement is 1 and kappa is undefined (not perfect)"
    return Agreement(overlap=len(a), raw_agreement=raw_agreement(a, b), kappa=kappa, kappa_null_reason=reason)



@dataclass
class Subject:
    item: str
    field: str
    ratings: dict[str, str | None]
    adjudicated: bool
    status: str
    label: str | None


@dataclass
class Request:
    suite: str
    result: CaseResult
    sha: str
    claims: list[dict[str, Any]]
    subjects: list[Subject] = field(default_factory=list)
    review: str | None = None
    """`withheld` or `not_reviewed` (then it has no subjects), else None."""

    @property
    def raters(self) -> set[str]:
        return {r for s in self.subjects for r in s.ratings}

    def status(self) -> str:
        if self.review:
            return self.review
        st = {s.status for s in self.subjects}
        if not any(s.ratings or s.adjudicated for s in self.subjects):
            return "unlabelled"
        if "disputed" in st:
            return "disputed"
        if "unlabelled" in st:
            return "missing"
        return "abstained" if any(s.label is None for s in self.subjects) else "agreed"


def _subject(item: str, fname: str, ratings: dict[str, str | None], adj: tuple[bool, str | None]) -> Subject:
    if adj[0]:
        return Subject(item, fname, ratings, True, "agreed", adj[1])
    if not ratings:
        return Subject(item, fname, ratings, False, "unlabelled", None)
    values = set(ratings.values())
    if len(values) == 1:
        return Subject(item, fname, ratings, False, "agreed", next(iter(values)))
    return Subject(item, fname, ratings, False, "disputed", None)


def _by_key(r: CaseResult, by: Sequence[str]) -> tuple[str, ...]:
    return tuple(str(r.metadata.get(f)) if r.metadata.get(f) is not None else "(none)" for f in by)


def _check_groups(results: Sequence[tuple[str, CaseResult]]) -> None:
    """A work item (group) never crosses splits or sampling methods."""
    seen: dict[tuple[str, str], dict[str, set[str]]] = {}
    for name, r in results:
        g = r.metadata.get("group")
        if g is None:
            continue
        entry = seen.setdefault((name, str(g)), {"split": set(), "sampling": set()})
        for k in ("split", "sampling"):
            entry[k].add(str(r.metadata.get(k)))
    for (name, g), entry in sorted(seen.items()):
        for k, what in (("split", "splits"), ("sampling", "sampling methods")):
            if len(entry[k]) > 1:
                raise LabelError(f"suite {name}: group {g!r} crosses {what} ({', '.join(sorted(entry[k]))}): "
                                 "a work item belongs to one split and one sampling method")


def label_report(
    run: Run,
    labels: LabelStore,
    store: RatingsStore,
    *,
    suites: list[str] | None = None,
    arm: str | None = None,
    positive: str | None = None,
    random_sample: bool = False,
    by: Sequence[str] | None = None,
    rubric: str | None = None,
    scheme: Rubric | None = None,
    samples: Sequence[SampleRecord] | None = None,
    before: Run | None = None,
    target_width: float | None = None,
) -> LabelReport:
    """The report (see the module doc). `positive` is compared as text. The
    rubric is `scheme` when given (a rubric file: the run need not have been exported —
    ratings of byte-identical requests of other runs apply), else the export's of digest
    `rubric` (default: the latest).

    `samples` are the random draws the corrected rates rest on (default: the sidecar's;
    a rejudged run passes those of the run it came from, and that run as `before`);
    `target_width` asks each corrected rate how many more labels reach that width."""
    scheme = scheme or rubric_of(labels, rubric)
    problem = positive_problem(scheme, positive) if positive is not None else None
    if problem is not None:
        raise LabelError(f"--positive: {problem}")
    by = list(by or ["stratum"])
    chosen = suites or sorted({ref.suite for ref in labels.requests.values()}) or sorted(run.suites)
    for name in chosen:
        if name not in run.suites:
            raise LabelError(f"run {run.run_id} has no suite {name!r}")
    results = [(name, r) for name in chosen for r in run.suites[name].cases if arm is None or r.arm == arm]
    if arm is not None and not results:
        raise LabelError(f"run {run.run_id}: no results of arm {arm!r} in {', '.join(chosen)}")
    _check_groups(results)
    current = store.by_request(scheme.sha256)
    requests: list[Request] = []
    stale: dict[tuple[str, str, str, int], set[str]] = {}
    other_rubrics: Counter[str] = Counter()
    shas_by_origin: dict[tuple[str, str, str, int], str] = {}
    for name, r in results:
        if r.status in ("errored", "skipped") or r.output is None:
            continue
        try:
            view = blinded(r, scheme)
        except ScrubbedCase:  # left out of every export: never a request to rate
            continue
        sha = request_sha256(r, scheme, name, view)
        shas_by_origin[(name, r.case_id, r.arm, r.attempt)] = sha
        req = Request(suite=name, result=r, sha=sha, claims=view.get("claims", []))
        review = r.metadata.get("review_state")
        req.review = NOT_REVIEWED.get(str(review).lower()) if review is not None else None
        if req.review is None:
            _fill_subjects(req, scheme, current.get(sha, []))
        requests.append(req)
    for rec in store.current.values():
        o = rec.origin
        if o is None:
            continue
        key = (o.suite, o.case_id, o.arm, o.attempt)
        if key in shas_by_origin and rec.request_sha256 != shas_by_origin[key] and rec.rubric_sha256 == scheme.sha256:
            stale.setdefault(key, set()).add(rec.rater)
    shas = set(shas_by_origin.values())
    for rec in store.current.values():
        if rec.request_sha256 in shas and rec.rubric_sha256 != scheme.sha256:
            other_rubrics[rec.rubric_sha256] += 1
    reviewed = [q for q in requests if q.review is None]
    raters = sorted({rt for q in reviewed for rt in q.raters})
    positive_rate = RateSpec(name="positive", positive=str(positive), field=next(iter(scheme.fields), None)) \
        if positive is not None else None
    return LabelReport(
        schema=REPORT_SCHEMA, run_id=run.run_id, suites=chosen, arm=arm, by=by, release_decision=RELEASE_DECISION,
        judge_use=JUDGE_USE, rubric_sha256=scheme.sha256, other_rubrics=OtherRubrics(dict(sorted(other_rubrics.items()))),
        stale=Stale([StaleResult(suite=k[0], case_id=k[1], arm=k[2], attempt=k[3], raters=sorted(v))
                     for k, v in sorted(stale.items())]),
        raters=raters, positive=positive, random_sample_attested=random_sample,
        counts=_counts(results, requests), claims=_claims(requests, scheme),
        inter_rater=_inter_rater(reviewed, scheme), judges=_judges(reviewed, scheme),
        strata=_strata(results, requests, scheme, by=by, positive=positive_rate, random_sample=random_sample,
                       targets={n: run.suites[n].target for n in chosen}),
        corrected=corrected_rates(run, labels.samples if samples is None else samples, store, scheme,
                                  suites=chosen, arm=arm, positive=positive or "pass", by=by,
                                  target_width=target_width, before=before),
        ratings_store=store.summary(),
    )


def _fill_subjects(req: Request, scheme: Rubric, recs: list[Any]) -> None:
    kind = scheme.kind_of(req.result.metadata)
    wanted: list[tuple[str, str]] = [(ITEM_REQUEST, f) for f in kind.fields]
    if kind.claims:
        wanted += [(f"claim:{c['id']}", cf) for c in req.claims for cf in scheme.claim_fields]
    wanted += [(f"dimension:{d}", d) for d in kind.dimensions]
    ratings: dict[tuple[str, str], dict[str, str | None]] = {}
    adjudicated: dict[tuple[str, str], tuple[bool, str | None]] = {}
    for rec in recs:
        k = (rec.item, rec.field)
        if rec.kind == "adjudication":
            adjudicated[k] = (True, label_key(rec.value))
        else:
            ratings.setdefault(k, {})[rec.rater] = label_key(rec.value)
    req.subjects = [_subject(i, f, ratings.get((i, f), {}), adjudicated.get((i, f), (False, None)))
                    for i, f in wanted]


def _counts(results: list[tuple[str, CaseResult]], requests: list[Request]) -> LabelCounts:
    st = Counter(q.status() for q in requests)
    return LabelCounts(
        results=len(results),
        failed_captures=sum(r.status in ("errored", "skipped") or r.output is None for _, r in results),
        withheld=st["withheld"],
        not_reviewed=st["not_reviewed"],
        labelled_requests=sum(st[s] for s in ("agreed", "abstained", "disputed", "missing")),
        agreed=st["agreed"],
        abstained=st["abstained"],
        disputed=st["disputed"],
        missing=st["missing"],
        unlabelled=st["unlabelled"],
        adjudicated=sum(any(s.adjudicated for s in q.subjects) for q in requests),
        single_rated=sum(len(q.raters) == 1 and not any(s.adjudicated for s in q.subjects) for q in requests),
    )


def _claim_name(q: Request, cid: str) -> str:
    r = q.result
    return f"{q.suite}/{r.case_id}" + (f"@{r.arm}" if r.arm != "default" else "") + \
        (f"#{r.attempt}" if r.attempt else "") + f":{cid}"


def _unsettled_values(scheme: Rubric, cf: str) -> set[str]:
    return {u for rate in scheme.rates if rate.claim_field == cf for u in rate.unsettled}


def _claims(requests: list[Request], scheme: Rubric) -> ClaimCounts:
    """Claim counts by coverage, and the claims that are not resolved, by name."""
    coverage: Counter[str] = Counter()
    unresolved: list[str] = []
    for q in requests:
        if not q.claims:
            continue
        coverage[str(q.result.metadata.get("claim_coverage") or "unattested")] += len(q.claims)
        for c in q.claims:
            subs = [s for s in q.subjects if s.item == f"claim:{c['id']}"]
            if q.review is not None or any(
                s.status != "agreed" or s.label is None or s.label in _unsettled_values(scheme, s.field) for s in subs
            ):
                unresolved.append(_claim_name(q, c["id"]))
    return ClaimCounts(total=sum(coverage.values()), selected=coverage["selected"], exhaustive=coverage["exhaustive"],
                       unattested=coverage["unattested"], unresolved=len(unresolved), unresolved_ids=sorted(unresolved))


def _field_key(item: str, fname: str) -> str:
    if item == ITEM_REQUEST:
        return f"fields.{fname}"
    return f"claims.{fname}" if item.startswith("claim:") else f"dimensions.{fname}"


def _inter_rater(reviewed: list[Request], scheme: Rubric) -> InterRater:
    """Per rated field, on distinct content (a byte-identical attempt is one subject)."""
    units: dict[str, dict[tuple[str, str], dict[str, str | None]]] = {}
    for q in reviewed:
        for s in q.subjects:
            if s.ratings:
                units.setdefault(_field_key(s.item, s.field), {})[(q.sha, s.item)] = s.ratings
    fields: dict[str, FieldAgreement] = {}
    for key, us in sorted(units.items()):
        raters = sorted({r for u in us.values() for r in u})
        pairs = []
        for a, b in itertools.combinations(raters, 2):
            both = [u for _, u in sorted(us.items()) if a in u and b in u]
            pairs.append(RaterPair(raters=(a, b), agreement=_agreement([u[a] for u in both], [u[b] for u in both])))
        section, fname = key.split(".", 1)
        spec = (scheme.fields if section == "fields" else scheme.claim_fields if section == "claims"
                else scheme.dimensions).get(fname)
        alphas: dict[str, KrippendorffAlpha] = {"nominal": krippendorff_alpha(us)}
        if spec is not None and spec.scale == "ordinal" and spec.values is not None:
            order = [str(label_key(v)) for v in spec.values]
            alphas["ordinal"] = krippendorff_alpha(us, level="ordinal", order=order)
        fields[key] = FieldAgreement(subjects=len(us), raters=raters, pairs=pairs, fleiss_kappa=fleiss_kappa(us),
                                     krippendorff_alpha=alphas)
    first = next(iter(fields.values()), None) if len(fields) == 1 else fields.get(f"fields.{next(iter(scheme.fields), '')}")
    return InterRater(pairs=first.pairs if first else [], fields=fields)


def _judges(reviewed: list[Request], scheme: Rubric) -> list[JudgeAgreement]:
    """Judge–human confusion and agreement per judge scorer, on the agreed, non-null overlap
    of the request's first field."""
    fname = next(iter(scheme.fields), None)
    names = sorted({s.scorer for q in reviewed for s in q.result.scores if s.judge_model is not None})
    out = []
    for name in names:
        human: list[str | None] = []
        judge: list[str | None] = []
        rubrics: set[str] = set()
        prompts: set[str] = set()
        models: set[str] = set()
        for q in reviewed:
            score = next((s for s in q.result.scores if s.scorer == name), None)
            if score is None or score.error or score.verdict is None:
                continue
            rubrics.update([score.rubric_sha256] if score.rubric_sha256 else [])
            if isinstance(score.details.get("judge_prompt_sha256"), str):
                prompts.add(score.details["judge_prompt_sha256"])
            models.update([score.judge_model] if score.judge_model else [])
            sub = next((s for s in q.subjects if s.item == ITEM_REQUEST and s.field == fname), None)
            if sub is not None and sub.status == "agreed" and sub.label is not None:
                human.append(sub.label)
                judge.append(score.verdict)
        confusion: dict[str, dict[str, int]] = {}
        for h, j in zip(human, judge, strict=True):
            row = confusion.setdefault(str(h), {})
            row[str(j)] = row.get(str(j), 0) + 1
        out.append(JudgeAgreement(
            scorer=name, rated_field=fname, judge_models=sorted(models), judge_rubric_sha256=sorted(rubrics),
            judge_prompt_sha256=sorted(prompts), same_rubric_as_humans=None if not rubrics else rubrics == {scheme.sha256},
            judge_use=JUDGE_USE, interval_null_reasons=["judge-only figure: a judge is advisory; no inferential interval"],
            confusion=confusion, agreement=_agreement(human, judge),
        ))
    return out


def _rate_status(q: Request, rate: RateSpec) -> tuple[bool, str | None]:
    """(positive on this request, why it is not settled or None)."""
    if q.review is not None:
        return False, q.review.replace("_", " ")
    if rate.claim_field is not None:
        subs = [s for s in q.subjects if s.item.startswith("claim:") and s.field == rate.claim_field]
    elif rate.dimension is not None:
        subs = [s for s in q.subjects if s.item == f"dimension:{rate.dimension}"]
    else:
        subs = [s for s in q.subjects if s.item == ITEM_REQUEST and s.field == rate.field]
    hit = any(s.status == "agreed" and s.label == rate.positive for s in subs)
    why = None
    for s in subs:
        if s.status != "agreed":
            why = s.status
            break
        if s.label is None:
            why = "abstained"
            break
        if s.label in rate.unsettled:
            why = "unsettled"
            break
    if not subs and rate.claim_field is None:
        why = "unlabelled"
    return hit, why


def _rate(
    name: str, rate: RateSpec, mine: list[Request], failed: list[CaseResult], *, arms: set[str],
    random_sample: bool, target: dict[str, Any] | None,
) -> Rate:
    items: dict[str, list[Request]] = {}
    for q in mine:
        items.setdefault(f"{q.suite}/{work_item_key(q.result)}", []).append(q)
    work: list[WorkItem] = []
    incomplete: Counter[str] = Counter()
    for _, qs in sorted(items.items()):
        hits, whys = [], []
        for q in qs:
            hit, why = _rate_status(q, rate)
            hits.append(hit)
            if why:
                whys.append(why)
        outcome = True if any(hits) else (None if whys else False)
        if outcome is None:  # an error on any attempt settles the item; else every gap counts
            incomplete.update(whys)
        work.append(WorkItem(key=qs[0].result.case_id, results=[q.result for q in qs], outcome=outcome))
    verdict = interval_where_valid(
        work, source="human", arms=arms, attested_random=random_sample, claim_rate=rate.claim_field is not None,
        target=target, incomplete=[f"{n} {w}" for w, n in sorted(incomplete.items())],
    )
    unit = (f"work items with any claim whose {rate.claim_field} is {rate.positive!r}, across attempts"
            if rate.claim_field else f"work items with {rate.field or rate.dimension} {rate.positive!r} on any attempt")
    return Rate(name=name, unit=unit, work_items=len(work), rate=verdict.rate, numerator=verdict.successes,
                denominator=verdict.n,
                interval_95=(verdict.low, verdict.high) if verdict.low is not None and verdict.high is not None else None,
                interval_null_reasons=list(verdict.reasons))


def _dimension_rates(mine: list[Request], scheme: Rubric) -> dict[str, DimensionRate]:
    """Quality measures: the share of `true` labels per dimension among agreed non-null
    labels (descriptive), with missing and disputed counts and the polarity."""
    out = {}
    for d, spec in scheme.dimensions.items():
        subs = [s for q in mine for s in q.subjects if s.item == f"dimension:{d}"]
        agreed = [s for s in subs if s.status == "agreed" and s.label is not None]
        true = sum(s.label == "true" for s in agreed)
        out[d] = DimensionRate(polarity=spec.polarity, true=true, labelled=len(agreed),
                               missing=sum(s.status == "unlabelled" for s in subs),
                               disputed=sum(s.status == "disputed" for s in subs),
                               abstained=sum(s.status == "agreed" and s.label is None for s in subs))
    return out


def _strata(
    results: list[tuple[str, CaseResult]], requests: list[Request], scheme: Rubric, *, by: list[str],
    positive: RateSpec | None, random_sample: bool, targets: dict[str, dict[str, Any]],
) -> list[Stratum]:
    arms = {r.arm for _, r in results}
    groups: dict[tuple[str, ...], list[tuple[str, CaseResult]]] = {}
    for name, r in results:
        groups.setdefault(_by_key(r, by), []).append((name, r))
    suites_in = {n for n, _ in results}
    target = targets[next(iter(suites_in))] if len(suites_in) == 1 else None
    rows: list[Stratum] = []
    for key, rs in sorted(groups.items()):
        mine = [q for q in requests if _by_key(q.result, by) == key]
        failed = [r for _, r in rs if r.status in ("errored", "skipped") or r.output is None]
        cases = {(n, r.case_id) for n, r in rs}
        specs = [(rate.name, rate) for rate in scheme.rates] + ([("positive", positive)] if positive is not None else [])
        rates = [_rate(n, spec, mine, failed, arms=arms, random_sample=random_sample, target=target)
                 for n, spec in specs]
        rows.append(Stratum(
            stratum=" × ".join(key), by=dict(zip(by, key, strict=True)), cases=len(cases),
            work_items=len({(n, work_item_key(r)) for n, r in rs}), counts=_counts(rs, mine),
            labels=dict(sorted(Counter(
                str(s.label) for q in mine for s in q.subjects
                if s.item == ITEM_REQUEST and s.status == "agreed" and s.label is not None).items())),
            dimensions=_dimension_rates(mine, scheme),
            rates=rates[:len(scheme.rates)],
            positive=rates[len(scheme.rates)] if positive is not None else None,
        ))
    return rows
