"""The verdict of one arm of a suite (deterministic: by case name; stochastic: its rows), and
of the suite from its arms' verdicts and rows (`finish`)."""

from __future__ import annotations

import re
from array import array

from evalh.config import Thresholds
from evalh.core.compare.facts import ERRORED, FAILED, JUDGE_ERROR, PASSED, SKIPPED, SuiteFacts
from evalh.core.compare.metrics import Key, Pairs, deterministic_row, stochastic_rows
from evalh.core.compare.models import (
    CaseRef,
    ComparePolicy,
    Estimand,
    MetricRow,
    SuiteComparison,
    Verdict,
    worst,
)


def case_ref(key: Key, fb: SuiteFacts, rb: int | None, fc: SuiteFacts, rc: int | None) -> CaseRef:
    return CaseRef(
        case_id=key[0], arm=key[1],
        base=fb.outcome(rb) if rb is not None else None,
        candidate=fc.outcome(rc) if rc is not None else None,
        base_score=fb.score(rb) if rb is not None else None,
        candidate_score=fc.score(rc) if rc is not None else None,
    )


def deterministic_arm(out: SuiteComparison, arm: str, keyed: Pairs) -> Verdict:
    named = out.cases
    fb, fc = keyed.base, keyed.cand
    pb, pc = fb.outcomes_of(keyed.b_rows), fc.outcomes_of(keyed.c_rows)  # one byte a pair
    skip = SKIPPED.to_bytes(1, "little")
    if skip in pb or skip in pc:  # a pair with a skipped side is not compared
        kept = [i for i, (x, y) in enumerate(zip(pb, pc, strict=True)) if x != SKIPPED and y != SKIPPED]
        out.counts.skipped += len(pb) - len(kept)
        compared = Pairs(fb, fc, array("q", map(keyed.b_rows.__getitem__, kept)),
                         array("q", map(keyed.c_rows.__getitem__, kept)))
        pb, pc = bytes(map(pb.__getitem__, kept)), bytes(map(pc.__getitem__, kept))
    else:
        compared = keyed
    out._compared.append(compared)
    regressed = improved = unverified = 0
    # Only the pairs whose outcomes differ, or that a judge could not score, are looked at
    # one by one (found in C: the bytes that differ, and the judge errors).
    differ = (int.from_bytes(pb, "little") ^ int.from_bytes(pc, "little")).to_bytes(len(pb), "little")
    looked = sorted({m.start() for m in _NONZERO.finditer(differ)}
                    | {m.start() for side in (pb, pc) for m in _UNJUDGED.finditer(side)})
    judged = len(pb) - sum(1 for i in looked if pb[i] == JUDGE_ERROR or pc[i] == JUDGE_ERROR)
    for i in looked:
        bo, co = pb[i], pc[i]
        rb, rc = compared.b_rows[i], compared.c_rows[i]
        ref = case_ref((fc.case_ids[rc], arm), fb, rb, fc, rc)
        if co == ERRORED:
            named.errored_new.append(ref)
        if bo == ERRORED:
            named.errored_fixed.append(ref)
        if bo == PASSED and co <= FAILED:
            named.regressed.append(ref)
            regressed += 1
        elif bo <= FAILED and co == PASSED:
            named.improved.append(ref)
            improved += 1
        elif JUDGE_ERROR in (bo, co):
            named.judge_error.append(ref)
            if bo == PASSED and co == JUDGE_ERROR:
                unverified += 1
    rates = ((pb.count(PASSED), pb.count(PASSED) + pb.count(FAILED)),
             (pc.count(PASSED), pc.count(PASSED) + pc.count(FAILED)))
    out.metrics.append(deterministic_row(arm, len(compared), rates[0], rates[1], regressed, improved))
    if unverified:
        where = f" [{arm}]" if arm != "default" else ""
        out.blocking.append(
            f"{unverified} case(s){where} passed in the base and could not be judged now "
            "(judge_error): zero tolerance cannot vouch for them"
        )
    if not judged:  # judge_error cases are not compared: none left means nothing was
        return "incomparable"
    return "regressed" if regressed else ("improved" if improved else "flat")


_NONZERO = re.compile(rb"[^\x00]")


_UNJUDGED = re.compile(re.escape(JUDGE_ERROR.to_bytes(1, "little")))


def stochastic_arm(
    out: SuiteComparison, arm: str, keyed: Pairs, policy: ComparePolicy,
    th: Thresholds, cluster_by: str | None, gate_scores: list[str], gate: frozenset[str],
    estimand: Estimand = "fixed-suite",
) -> Verdict:
    named = out.cases
    fb, fc = keyed.base, keyed.cand
    pairs = Pairs(fb, fc)
    for rb, rc in keyed:
        b_err, c_err = fb.errored(rb), fc.errored(rc)
        b_judge, c_judge = fb.judge_error(rb), fc.judge_error(rc)
        b_valid, c_valid = fb.valid(rb), fc.valid(rc)
        if not (b_valid or b_err or b_judge) or not (c_valid or c_err or c_judge):
            out.counts.skipped += 1
            continue
        pairs.append(rb, rc)
        lists = []
        if c_err and not b_err:
            lists.append(named.errored_new)
        if b_err and not c_err:
            lists.append(named.errored_fixed)
        if b_judge or c_judge:
            lists.append(named.judge_error)
        if b_valid and c_valid:
            if fb.failed(rb) == 0 and fc.passed(rc) == 0:
                lists.append(named.regressed)
            elif fb.passed(rb) == 0 and fc.failed(rc) == 0:
                lists.append(named.improved)
        if lists:
            ref = case_ref((fc.case_ids[rc], arm), fb, rb, fc, rc)
            for target in lists:
                target.append(ref)
    out._compared.append(pairs)
    rows = stochastic_rows(policy, arm, pairs, th, cluster_by=cluster_by, gate_scores=gate_scores,
                           gate=gate, estimand=estimand)
    out.metrics.extend(rows)
    where = f" [{arm}]" if arm != "default" else ""
    for r in rows:
        if r.name == "score" and r.n == 0 and any(fb.scorer_mean(r.scorer or "", rb) is not None
                                                 for rb in pairs.b_rows):
            out.blocking.append(f"scorer {r.scorer}{where} gave no value in the candidate")
    return "flat"  # decided in finish_suite, once the family adjustment is known


def arm_verdict(rows: list[MetricRow]) -> Verdict:
    """Worst gating row; `regressed` whenever one is (errors beyond the allowance regress a
    suite even when no answer could be scored), else `incomparable` without a pass rate or
    score row to compare."""
    gating = [r.verdict for r in rows if r.gating and r.verdict != "incomparable"]
    primary = [r for r in rows if r.name in ("pass_rate", "mean_score", "score")
               and r.verdict != "incomparable"]
    if "regressed" in gating:
        return "regressed"
    if not primary:
        return "incomparable"
    return worst(gating)


def finish_suite(out: SuiteComparison) -> None:
    if out.verdict in ("added", "removed") or out.regime is None:
        return
    named = out.cases
    arm_verdicts: dict[str, Verdict] = dict(out._arm_verdicts)
    if out.regime == "stochastic":
        for arm in arm_verdicts:
            if arm_verdicts[arm] not in ("added", "removed"):
                arm_verdicts[arm] = arm_verdict([m for m in out.metrics if m.arm == arm])
        if out.arms:
            out.arms = arm_verdicts
    c = out.counts
    c.compared = sum(len(p) for p in out._compared)
    c.changed, c.added, c.removed, c.not_run = (
        len(named.changed), len(named.added), len(named.removed), len(named.not_run)
    )
    compared = [v for v in arm_verdicts.values() if v not in ("added", "removed")]
    out.verdict = worst(compared, default="incomparable")
    r = out.reasons
    if out.verdict == "incomparable":
        nothing = (f"no case could be compared ({c.changed} changed, {c.added} added, "
                   f"{c.removed} removed, {c.not_run} not run, {c.skipped} skipped)")
        if out.coverage is not None and out.coverage.of == 0:  # the base measured nothing either
            r.append(nothing)
        else:  # a suite with nothing comparable fails
            out.blocking.insert(0, f"nothing comparable: {nothing}")
    r.extend(out.blocking)
    if named.regressed and out.regime == "deterministic":
        r.append(f"{len(named.regressed)} case(s) passed in the base and fail or error now")
    if named.improved and out.regime == "deterministic":
        r.append(f"{len(named.improved)} case(s) failed in the base and pass now")
    for m in out.metrics:  # a non-gating row is in the table, not among the reasons
        if m.gating and m.verdict in ("regressed", "improved", "inconclusive") and out.regime == "stochastic":
            r.append(row_reason(m))
    if c.changed:
        r.append(f"{c.changed} case(s) changed content (digest differs): not compared")
    e = out.errors
    if e.errors_rose:
        r.append(
            f"errors rose: {e.base_errored} of {e.base_results} → "
            f"{e.candidate_errored} of {e.candidate_results} results"
        )
    if e.judge_errors_rose:
        r.append(
            f"judge errors rose: {e.base_judge_error} of {e.base_results} → "
            f"{e.candidate_judge_error} of {e.candidate_results} results"
        )
    if out.partial:
        r.append("partial: a run is not complete; the verdict covers the cases both finished")
    needed = [m.cases_needed for m in out.metrics if m.gating and m.cases_needed is not None]
    out.cases_needed = max(needed) if needed else None


def row_reason(m: MetricRow) -> str:
    arm = f" [{m.arm}]" if m.arm != "default" else ""
    rate = m.name in ("pass_rate", "error_rate", "corrected_pass_rate")
    unit = " %" if m.unit == "pct" else (" pp" if rate else "")
    scale = 100.0 if rate else 1.0
    change = f"{(m.change or 0) * scale:+.3g}{unit}"
    iv = (
        f" (interval {m.interval[0] * scale:+.3g} to {m.interval[1] * scale:+.3g})"
        if m.interval else ""
    )
    name = f"{m.name}[{m.scorer}]" if m.name in ("score", "corrected_pass_rate") else m.name
    text = f"{name}{arm} {m.verdict}: {change}{iv}, allowance {m.allowance * scale:.3g}{unit}"
    if m.verdict == "inconclusive" and m.direction:
        text += f", estimate on the {m.direction} side" if m.direction != "none" else ""
    if m.cases_needed and m.cases_needed_for is not None:
        text += (
            f"; about {m.cases_needed} cases would settle a change of "
            f"{m.cases_needed_for * scale:+.3g}{unit}"
        )
        if m.repeats_needed:
            text += f" (or {m.repeats_needed} repeats a case at these cases)"
    return text
