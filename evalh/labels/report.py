"""The label report: agreement before adjudication, judge–human confusion, strata apart.

Pure: it reads a run and its label sidecar and returns a dict. What it says:

- **Per request** a status: `unlabelled`, `agreed` (every rating equal, or adjudicated),
  `disputed` (ratings differ, not adjudicated). An agreed null label is `abstained`.
- **Inter-rater**: for every pair of raters, raw agreement and Cohen's kappa over the
  requests both rated, *before* adjudication. Null is a label of its own (an abstention
  against a value is a disagreement). A null kappa says why: no overlap, or both raters
  used one and the same label throughout (kappa is undefined, not perfect).
- **Judge–human**: for each judge scorer in the run, confusion counts and agreement of its
  `Score.verdict` against the agreed human label, on the requests that have both.
- **Strata** (`metadata.stratum`) apart, never blended: counts, label distribution and,
  with a `positive` label, the share of work items (cases) with that label on any
  attempt. A Wilson 95 % interval is given only where its assumptions hold — a random
  held-out sample (attested), complete agreed labels, equal attempts per case, one arm —
  otherwise it is null and `interval_null_reasons` says why.

Every report carries `releaseDecision: not-assessed` and `judgeUse: advisory-only`: labels
describe; a person decides.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from evalh.core.stats import cohens_kappa, raw_agreement, wilson_interval
from evalh.labels.models import LabelError, LabelStore, label_key
from evalh.models import CaseResult, Run

REPORT_SCHEMA = "evalh.label-report/1"
RELEASE_DECISION = "not-assessed"
JUDGE_USE = "advisory-only"


def _agreement(a: list[str | None], b: list[str | None]) -> dict[str, Any]:
    """Raw agreement and kappa with their overlap, and why kappa is null when it is."""
    kappa = cohens_kappa(a, b)
    reason = None
    if not a:
        reason = "no overlap: no request has both labels"
    elif kappa is None:
        reason = "constant labels: both gave one and the same label throughout, so chance agreement is 1 and kappa is undefined (not perfect)"
    return {"overlap": len(a), "raw_agreement": raw_agreement(a, b), "kappa": kappa, "kappa_null_reason": reason}


def _status(ratings: dict[str, str | None], adjudicated: tuple[bool, str | None]) -> tuple[str, str | None]:
    if adjudicated[0]:
        return "agreed", adjudicated[1]
    if not ratings:
        return "unlabelled", None
    values = set(ratings.values())
    return ("agreed", next(iter(values))) if len(values) == 1 else ("disputed", None)


def _interval_reasons(
    *, random_sample: bool, cases: list[list[CaseResult]], items: list[dict[str, Any]], arms: set[str]
) -> list[str]:
    reasons = []
    if not random_sample and not all(
        all(r.metadata.get("sampling") == "random" for r in rs) for rs in cases
    ):
        reasons.append(
            "not attested as a random held-out sample: hand-picked cases do not represent a "
            "population (pass --random-sample, or set metadata.sampling = \"random\")"
        )
    missing = Counter(i["status"] for i in items if i["status"] != "agreed" or i["label"] is None)
    if missing:
        parts = ", ".join(f"{n} {'abstained' if s == 'agreed' else s}" for s, n in sorted(missing.items()))
        reasons.append(f"labels incomplete: {parts}")
    attempts = {sum(r.status not in ("errored", "skipped") for r in rs) for rs in cases}
    if len(attempts) > 1:
        reasons.append(f"unequal attempts per case ({min(attempts)} to {max(attempts)} captured)")
    if len(arms) > 1:
        reasons.append(f"more than one arm ({', '.join(sorted(arms))}): report one arm (--arm)")
    return reasons


def label_report(
    run: Run,
    labels: LabelStore,
    *,
    suites: list[str] | None = None,
    arm: str | None = None,
    positive: str | None = None,
    random_sample: bool = False,
) -> dict[str, Any]:
    """The report as a dict (see the module doc). `positive` is compared as text."""
    chosen = suites or sorted({ref.suite for ref in labels.requests.values()}) or sorted(run.suites)
    for name in chosen:
        if name not in run.suites:
            raise LabelError(f"run {run.run_id} has no suite {name!r}")
    rid_of = {(ref.suite, ref.case_id, ref.arm, ref.attempt): rid for rid, ref in labels.requests.items()}
    by_request: dict[str, dict[str, str | None]] = {}
    adjudication: dict[str, tuple[bool, str | None]] = {}
    for rating in labels.ratings:
        if rating.kind == "adjudication":
            adjudication[rating.request_id] = (True, label_key(rating.label))
        else:
            by_request.setdefault(rating.request_id, {})[rating.rater] = label_key(rating.label)
    results = [
        (name, r) for name in chosen for r in run.suites[name].cases if arm is None or r.arm == arm
    ]
    if arm is not None and not results:
        raise LabelError(f"run {run.run_id}: no results of arm {arm!r} in {', '.join(chosen)}")
    items: list[dict[str, Any]] = []
    for name, r in results:
        if r.status in ("errored", "skipped"):
            continue
        rid = rid_of.get((name, r.case_id, r.arm, r.attempt))
        ratings = by_request.get(rid, {}) if rid else {}
        status, agreed = _status(ratings, adjudication.get(rid or "", (False, None)))
        items.append({"suite": name, "result": r, "rid": rid, "ratings": ratings, "status": status,
                      "label": agreed, "adjudicated": (rid or "") in adjudication})
    raters = sorted({rater for ratings in by_request.values() for rater in ratings})
    in_scope = {i["rid"] for i in items if i["rid"]}
    pairs = []
    for a, b in itertools.combinations(raters, 2):
        both = [r for r in sorted(in_scope) if a in by_request.get(r, {}) and b in by_request.get(r, {})]
        pairs.append({"raters": [a, b], **_agreement(
            [by_request[r][a] for r in both], [by_request[r][b] for r in both])})
    return {
        "schema": REPORT_SCHEMA,
        "run_id": run.run_id,
        "suites": chosen,
        "arm": arm,
        "releaseDecision": RELEASE_DECISION,
        "judgeUse": JUDGE_USE,
        "rubric_sha256": labels.current_rubric(),
        "raters": raters,
        "positive": positive,
        "random_sample_attested": random_sample,
        "counts": _counts(results, items),
        "inter_rater": {"before_adjudication": True, "pairs": pairs},
        "judges": _judges(items, labels.current_rubric()),
        "strata": _strata(results, items, positive=positive, random_sample=random_sample),
    }


def _counts(results: list[tuple[str, CaseResult]], items: list[dict[str, Any]]) -> dict[str, int]:
    status = Counter(i["status"] for i in items)
    return {
        "results": len(results),
        "failed_captures": sum(r.status in ("errored", "skipped") for _, r in results),
        "labelled_requests": sum(bool(i["ratings"]) or i["adjudicated"] for i in items),
        "unlabelled": status["unlabelled"],
        "agreed": sum(i["status"] == "agreed" and i["label"] is not None for i in items),
        "abstained": sum(i["status"] == "agreed" and i["label"] is None for i in items),
        "disputed": status["disputed"],
        "adjudicated": sum(i["adjudicated"] for i in items),
        "single_rated": sum(len(i["ratings"]) == 1 and not i["adjudicated"] for i in items),
    }


def _judges(items: list[dict[str, Any]], human_rubric: str | None) -> list[dict[str, Any]]:
    """Judge–human confusion and agreement per judge scorer, on the agreed, non-null overlap."""
    names = sorted({s.scorer for i in items for s in i["result"].scores if s.judge_model is not None})
    out = []
    for name in names:
        human: list[str | None] = []
        judge: list[str | None] = []
        rubrics: set[str] = set()
        models: set[str] = set()
        for i in items:
            score = next((s for s in i["result"].scores if s.scorer == name), None)
            if score is None or score.error or score.verdict is None:
                continue
            rubrics.update([score.rubric_sha256] if score.rubric_sha256 else [])
            models.update([score.judge_model] if score.judge_model else [])
            if i["status"] == "agreed" and i["label"] is not None:
                human.append(i["label"])
                judge.append(score.verdict)
        confusion: dict[str, dict[str, int]] = {}
        for h, j in zip(human, judge, strict=True):
            row = confusion.setdefault(str(h), {})
            row[str(j)] = row.get(str(j), 0) + 1
        out.append({
            "scorer": name, "judge_models": sorted(models), "judge_rubric_sha256": sorted(rubrics),
            "same_rubric_as_humans": None if not rubrics or human_rubric is None else rubrics == {human_rubric},
            "confusion": confusion, **_agreement(human, judge),
        })
    return out


def _strata(
    results: list[tuple[str, CaseResult]], items: list[dict[str, Any]], *, positive: str | None, random_sample: bool
) -> list[dict[str, Any]]:
    """One row per stratum; rates over work items (cases), intervals only where they hold."""
    arms = {r.arm for _, r in results}
    groups: dict[str, list[tuple[str, CaseResult]]] = {}
    for name, r in results:
        groups.setdefault(str(r.metadata.get("stratum") or "(none)"), []).append((name, r))
    rows = []
    for stratum, rs in sorted(groups.items()):
        mine = [i for i in items if str(i["result"].metadata.get("stratum") or "(none)") == stratum]
        cases: dict[tuple[str, str], list[CaseResult]] = {}
        for name, r in rs:
            cases.setdefault((name, r.case_id), []).append(r)
        row: dict[str, Any] = {
            "stratum": stratum, "cases": len(cases), **_counts(rs, mine),
            "labels": dict(sorted(Counter(str(i["label"]) for i in mine
                                          if i["status"] == "agreed" and i["label"] is not None).items())),
        }
        reasons = _interval_reasons(random_sample=random_sample, cases=list(cases.values()), items=mine, arms=arms)
        if positive is None:
            row.update(rate=None, rate_numerator=0, rate_denominator=0, interval_95=None,
                       interval_null_reasons=["no positive label given (--positive): nothing to count"])
            rows.append(row)
            continue
        by_case: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for i in mine:
            by_case.setdefault((i["suite"], i["result"].case_id), []).append(i)
        complete = [
            its for its in by_case.values()
            if all(i["status"] == "agreed" and i["label"] is not None for i in its)
        ]
        k = sum(any(i["label"] == positive for i in its) for its in complete)
        n = len(complete)
        interval = wilson_interval(k, n) if n and not reasons else None
        if not n:
            reasons = [*reasons, "no case has complete agreed labels"]
        row.update(
            rate=k / n if n else None, rate_numerator=k, rate_denominator=n,
            rate_unit="cases with the positive label on any attempt",
            interval_95=list(interval) if interval else None,
            interval_null_reasons=[] if interval else reasons,
        )
        rows.append(row)
    return rows
