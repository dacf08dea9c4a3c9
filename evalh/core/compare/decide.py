"""`compare_runs`: the one place that decides what "regressed" means.

Pure (no I/O): two `Run` documents and a `ComparePolicy` in, a `Comparison` out. The CLI
(`evalh compare`), `evalh run --compare-baseline`, the reports and the dashboard all call
it, so they cannot disagree. The method is described in `docs/methodology.md`.

Per suite, by regime:

- deterministic: zero tolerance, by case name. passed → failed/errored is a regression,
  failed/errored → passed an improvement, each named. A case whose content digest changed
  is `changed` and not compared.
- stochastic: metric rows (pass rate, mean score or named scorers, error rate, cost, p50
  latency), each with an allowance and an interval over the paired cases (clustered by the
  suite's cluster field); see `compare_metrics.decide`. Every gating row of every suite is
  one family of tests, held to one family-wise level (`compare_metrics.apply_family`).

Errored and `judge_error` results never count as failures of the product's answer: they
are counted apart. They still fail closed: a passed → errored case is a regression in a
deterministic suite, a passed → judge_error case blocks it (it could not be verified); in a
stochastic suite the error rate (errored + judge_error) is a row like the others, and a
candidate that produced nothing comparable blocks the gate.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping

from evalh.config import Thresholds
from evalh.core.compare.columns import row_range
from evalh.core.compare.config import config_differences, thresholds_for
from evalh.core.compare.corrected import CorrectedPair, add_corrected_rows
from evalh.core.compare.facts import (
    ERRORED,
    FAILED,
    JUDGE_ERROR,
    NO_DIGEST,
    PASSED,
    SKIPPED,
    Options,
    SuiteFacts,
    suite_facts,
)
from evalh.core.compare.metrics import (
    Key,
    Pairs,
    apply_family,
    deterministic_row,
    plan_row,
    stochastic_rows,
)
from evalh.core.compare.models import (
    CaseRef,
    ComparePolicy,
    Comparison,
    ErrorCounts,
    Family,
    MetricRow,
    NamedCases,
    RunRef,
    SuiteComparison,
    SuiteCounts,
    Verdict,
    worst,
)
from evalh.gcpause import gc_paused
from evalh.models import Run, SuiteResult

__all__ = ["ComparePolicy", "Comparison", "SuiteComparison", "compare_runs", "config_differences"]


Facts = dict[str, SuiteFacts]
"""Suite name → the facts of its results (`compare_facts`)."""


def compare_runs(
    base: Run, candidate: Run, policy: ComparePolicy | None = None, *,
    facts: tuple[Facts, Facts] | None = None,
    corrected: Mapping[tuple[str, str], CorrectedPair] | None = None,
) -> Comparison:
    """Compare `candidate` against `base`, suite by suite. Pure and deterministic.

    `facts`: the (base, candidate) facts of every suite, read from the documents with the
    options `suite_options` gives (`compare_facts.read_facts`); the runs are then only
    read for their headers (their `cases` may be empty). Without it they are taken from
    each suite's results in memory.

    `corrected`: (suite, arm) → a judge's rate corrected by human labels on both runs
    (`evalh.labels.corrected`); each is one more gating row of that stochastic suite."""
    with gc_paused():
        if facts is None:
            options = suite_options(base, candidate)
            facts = tuple(  # type: ignore[assignment]
                {name: suite_facts(s.cases, options[name]) for name, s in run.suites.items()}
                for run in (base, candidate)
            )
        assert facts is not None
        return _compare_runs(base, candidate, policy or ComparePolicy(), facts, corrected or {})


def suite_options(base: Run, candidate: Run) -> dict[str, Options]:
    """Per suite of either run: what its facts must keep to be compared (its cluster
    field and its gated scorers, `_suite_options`)."""
    out: dict[str, Options] = {}
    for name in _suite_names(base, candidate):
        cluster_by, gated = _suite_options(name, base, candidate)
        out[name] = (cluster_by, frozenset(gated))
    return out


def _suite_names(base: Run, candidate: Run) -> list[str]:
    """Every suite of either run: the candidate's in its order, then the base's own."""
    return list(candidate.suites) + [n for n in base.suites if n not in candidate.suites]


def _compare_runs(base: Run, candidate: Run, policy: ComparePolicy, facts: tuple[Facts, Facts],
                  corrected: Mapping[tuple[str, str], CorrectedPair]) -> Comparison:
    partial = [_partial_warning(side, run) for side, run in (("base", base), ("candidate", candidate))]
    warnings = [w for w in partial if w]
    suites: dict[str, SuiteComparison] = {}
    for name in _suite_names(base, candidate):
        th, source, warn = thresholds_for(name, base, candidate, policy)
        if warn:
            warnings.append(warn)
        fb, fc = (side.get(name) or SuiteFacts() for side in facts)
        suites[name] = _compare_suite(
            name, base.suites.get(name), candidate.suites.get(name), base, candidate, policy, th,
            source, fb, fc,
        )
    add_corrected_rows(suites, corrected, policy)
    from evalh.core.results.outcome import ADVISORY, advisory_suites

    for name in advisory_suites(base, candidate) & set(suites):  # reported, never gates
        suites[name].advisory = dict(ADVISORY)
        suites[name].reasons.append("advisory suite (judgeUse: advisory-only, releaseDecision: "
                                    "not-assessed): reported, never gates")
    family = [m for s in suites.values() if s.regime == "stochastic" and s.advisory is None
              for m in s.metrics if m.gating]
    alpha = apply_family(family, policy)
    tested = sum(1 for m in family if m.p_worse is not None)
    for s in suites.values():
        for m in s.metrics:
            plan_row(m, policy, tested)
        _finish(s)
    compared = [s.verdict for s in suites.values() if s.verdict not in ("added", "removed")]
    if not suites:
        warnings.append("neither run has any suite")
    verdict = worst(compared, default="incomparable")
    gate = [_gate_reason(s) for s in suites.values()
            if (s.verdict == "regressed" or s.blocking) and s.advisory is None]
    from evalh.core.analysis.suite_metrics import crossings

    for line, gates in crossings(base, candidate):  # a suite metric newly over its threshold
        warnings.append(line)
        if gates:
            gate.append(line)
    return Comparison(
        base=_ref(base),
        candidate=_ref(candidate),
        config_differences=config_differences(base, candidate, tuple(  # type: ignore[arg-type]
            {name: (f.max_attempt + 1 if f.max_attempt >= 0 else 1, sorted(f.judge_models))
             for name, f in side.items()} for side in facts
        )),
        warnings=warnings,
        suites=suites,
        verdict=verdict,
        regressed=any(s.verdict == "regressed" for s in suites.values()),
        fails_gate=bool(gate),
        gate_reasons=gate,
        family=Family(size=tested, alpha=alpha),
        inconclusive=any(
            s.verdict == "inconclusive"
            or any(m.gating and m.verdict == "inconclusive" for m in s.metrics)
            for s in suites.values()
        ),
        inconclusive_worse=any(
            m.gating and m.verdict == "inconclusive" and m.direction == "worse"
            for s in suites.values() if s.verdict not in ("added", "removed") and s.advisory is None
            for m in s.metrics
        ),
        policy=policy.model_dump(mode="json"),
    )


def _gate_reason(s: SuiteComparison) -> str:
    """One line: why this suite fails the gate (its regression, and what blocks it)."""
    parts = []
    if s.verdict == "regressed":
        why = next((r for r in s.reasons if "regressed" in r or "fail or error now" in r), None)
        parts.append("regressed" + (f": {why}" if why else ""))
    if s.blocking:
        parts.append("cannot pass: " + "; ".join(s.blocking))
    return f"suite {s.suite} " + "; ".join(parts)


# --------------------------------------------------------------------------- run level


def _ref(run: Run) -> RunRef:
    return RunRef(
        run_id=run.run_id, label=run.label, status=run.status, started_at=run.started_at,
        git_sha=run.git.sha, git_dirty=run.git.dirty,
    )


def _partial_warning(side: str, run: Run) -> str | None:
    if run.status == "complete":
        return None
    why = f" ({run.status_reason})" if run.status_reason else ""
    return (
        f"{side} run {run.run_id} is {run.status}{why}: cases it did not finish are reported "
        "as not run, and verdicts cover only the cases both runs finished"
    )


# --------------------------------------------------------------------------- suite level


def _case_ref(key: Key, fb: SuiteFacts, rb: int | None, fc: SuiteFacts, rc: int | None) -> CaseRef:
    return CaseRef(
        case_id=key[0], arm=key[1],
        base=fb.outcome(rb) if rb is not None else None,
        candidate=fc.outcome(rc) if rc is not None else None,
        base_score=fb.score(rb) if rb is not None else None,
        candidate_score=fc.score(rc) if rc is not None else None,
    )


def _errors(fb: SuiteFacts, fc: SuiteFacts) -> ErrorCounts:
    e = ErrorCounts(
        base_results=fb.results - fb.count("skipped"),
        candidate_results=fc.results - fc.count("skipped"),
        base_errored=fb.count("errored"), candidate_errored=fc.count("errored"),
        base_judge_error=fb.count("judge_error"), candidate_judge_error=fc.count("judge_error"),
    )

    def rose(b: int, nb: int, c: int, nc: int) -> bool:
        return c > 0 and (nb == 0 or c / max(nc, 1) > b / nb)

    e.errors_rose = rose(e.base_errored, e.base_results, e.candidate_errored, e.candidate_results)
    e.judge_errors_rose = rose(
        e.base_judge_error, e.base_results, e.candidate_judge_error, e.candidate_results
    )
    return e


def _one_sided(
    name: str, sr: SuiteResult, n: int, verdict: Verdict, partial: bool, th: Thresholds, source: str
) -> SuiteComparison:
    if verdict == "added":
        reason = f"suite {name} is only in the candidate ({n} case(s))"
        counts = SuiteCounts(candidate_cases=n, added=n)
    elif partial:
        reason = f"suite {name} was not run by the candidate (the candidate run is not complete)"
        counts = SuiteCounts(base_cases=n, not_run=n)
    else:
        reason = f"suite {name} is only in the base ({n} case(s))"
        counts = SuiteCounts(base_cases=n, removed=n)
    # A suite the candidate meant to run and did not reach measured nothing: it cannot pass.
    # Only a suite absent by design (a complete run without it) is merely named.
    blocking = [reason] if verdict == "removed" and partial else []
    return SuiteComparison(
        suite=name, regime=sr.regime, verdict=verdict, reasons=[reason], partial=partial,
        thresholds=th.model_dump(), thresholds_source=source, counts=counts, blocking=blocking,
    )


def _compare_suite(
    name: str, sb: SuiteResult | None, sc: SuiteResult | None, base: Run, cand: Run,
    policy: ComparePolicy, th: Thresholds, source: str, fb: SuiteFacts, fc: SuiteFacts,
) -> SuiteComparison:
    partial = base.status != "complete" or cand.status != "complete"
    if sb is None:
        assert sc is not None
        return _one_sided(name, sc, len(fc), "added", partial, th, source)
    if sc is None:
        return _one_sided(name, sb, len(fb), "removed", cand.status != "complete", th, source)
    out = SuiteComparison(
        suite=name, regime=sc.regime, verdict="flat", partial=partial,
        thresholds=th.model_dump(), thresholds_source=source, errors=_errors(fb, fc),
    )
    if sb.regime != sc.regime:
        out.regime = None
        out.verdict = "incomparable"
        out.reasons.append(f"regime changed: {sb.regime} in the base, {sc.regime} in the candidate")
        return out
    cluster_by, gate_scores = _suite_options(name, base, cand)
    out.counts.base_cases, out.counts.candidate_cases = len(fb), len(fc)
    pairs_by_arm: dict[str, Pairs] = {}
    named = out.cases
    base_done, cand_done = base.status == "complete", cand.status == "complete"
    # Every (case, arm) of either run, the candidate's in its order then the base's own:
    # paired, or named added, removed, not run or changed (digests differ).
    if fb.same_rows(fc):  # the same cases in the same order (the usual case): row for row
        _pair_aligned(fb, fc, pairs_by_arm, named)
    else:
        _pair_by_key(fb, fc, pairs_by_arm, named, base_done, cand_done)
    arms_b, arms_c = set(fb.arm_names), set(fc.arm_names)
    arms = sorted(arms_b | arms_c)
    arm_verdicts: dict[str, Verdict] = {}
    for arm in arms:
        keyed = pairs_by_arm.get(arm) or Pairs(fb, fc)
        if arm not in arms_b:
            arm_verdicts[arm] = "added"
        elif arm not in arms_c:
            arm_verdicts[arm] = "removed"
        elif sc.regime == "deterministic":
            arm_verdicts[arm] = _deterministic_arm(out, arm, keyed)
        else:
            arm_verdicts[arm] = _stochastic_arm(out, arm, keyed, policy, th, cluster_by, gate_scores)
    if arms != ["default"]:
        out.arms = arm_verdicts
    out._arm_verdicts = arm_verdicts
    out.blocking.extend(_nothing_measured(fb, fc, arms_b))
    return out


def _pair_aligned(fb: SuiteFacts, fc: SuiteFacts, pairs_by_arm: dict[str, Pairs], named: NamedCases) -> None:
    """Pairing of two suites that hold the same (case, arm) rows in the same order."""
    n = len(fc)
    changed = fb.digest_differs(fc)
    if len(fc.arm_names) == 1 and not changed:
        pairs_by_arm[fc.arm_names[0]] = Pairs(fb, fc, row_range(n), row_range(n))
        return
    for row, (case_id, a) in enumerate(zip(fc.case_ids, fc.arm_of, strict=False)):
        if row in changed:
            named.changed.append(_case_ref((case_id, fc.arm_names[a]), fb, row, fc, row))
            continue
        _paired(pairs_by_arm, fc.arm_names[a], fb, fc).append(row, row)


def _paired(pairs_by_arm: dict[str, Pairs], arm: str, fb: SuiteFacts, fc: SuiteFacts) -> Pairs:
    """The pairs of `arm` (made empty when it has none yet)."""
    pairs = pairs_by_arm.get(arm)
    if pairs is None:
        pairs = pairs_by_arm[arm] = Pairs(fb, fc)
    return pairs


def _pair_by_key(
    fb: SuiteFacts, fc: SuiteFacts, pairs_by_arm: dict[str, Pairs], named: NamedCases,
    base_done: bool, cand_done: bool,
) -> None:
    """Pairing by (case, arm), whatever the order and whichever cases each run holds."""
    b_maps = [fb.rows.get(arm) or {} for arm in fc.arm_names]
    db, dc = fb.digest, fc.digest
    for rc, (case_id, a) in enumerate(zip(fc.case_ids, fc.arm_of, strict=False)):  # arm_of has room past the rows
        rb = b_maps[a].get(case_id)
        if rb is None:
            ref = _case_ref((case_id, fc.arm_names[a]), fb, rb, fc, rc)
            (named.added if base_done else named.not_run).append(ref)
            continue
        x, y = db[rb], dc[rc]
        if x != y and x != NO_DIGEST and y != NO_DIGEST:
            named.changed.append(_case_ref((case_id, fc.arm_names[a]), fb, rb, fc, rc))
            continue
        _paired(pairs_by_arm, fc.arm_names[a], fb, fc).append(rb, rc)
    c_maps = [fc.rows.get(arm) or {} for arm in fb.arm_names]
    for rb, (case_id, a) in enumerate(zip(fb.case_ids, fb.arm_of, strict=False)):
        if case_id not in c_maps[a]:
            ref = _case_ref((case_id, fb.arm_names[a]), fb, rb, fc, None)
            (named.removed if cand_done else named.not_run).append(ref)


def _nothing_measured(fb: SuiteFacts, fc: SuiteFacts, arms_b: set[str]) -> list[str]:
    """Fail closed: per arm of the base, a candidate with no pass/fail result at all (every
    case errored, unjudged, skipped, or absent) measured nothing, whatever the base did."""
    out = []
    n = len(fc)
    for arm in sorted(arms_b):
        if arm not in fc.arm_names:
            rows: list[int] | range = []
        elif len(fc.arm_names) == 1:
            rows = range(n)
        else:
            a = fc.arm_names.index(arm)
            rows = [row for row in range(n) if fc.arm_of[row] == a]
        if any(fc.valid(r) for r in rows):
            continue
        where = f" [{arm}]" if arm != "default" else ""
        if not rows:
            out.append(f"the candidate{where} has no result in this suite")
            continue
        errored = sum(fc.errored(r) for r in rows)
        judge = sum(fc.judge_error(r) for r in rows)
        skipped = sum(fc.skipped(r) for r in rows)
        total = errored + judge + skipped
        out.append(
            f"the candidate{where} produced no scorable result: of {total} results, "
            f"{errored} errored, {judge} could not be judged, {skipped} skipped"
        )
    return out


def _suite_options(name: str, base: Run, cand: Run) -> tuple[str | None, list[str]]:
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


def _deterministic_arm(out: SuiteComparison, arm: str, keyed: Pairs) -> Verdict:
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
        ref = _case_ref((fc.case_ids[rc], arm), fb, rb, fc, rc)
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


def _stochastic_arm(
    out: SuiteComparison, arm: str, keyed: Pairs, policy: ComparePolicy,
    th: Thresholds, cluster_by: str | None, gate_scores: list[str],
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
            ref = _case_ref((fc.case_ids[rc], arm), fb, rb, fc, rc)
            for target in lists:
                target.append(ref)
    out._compared.append(pairs)
    rows = stochastic_rows(policy, arm, pairs, th, cluster_by=cluster_by, gate_scores=gate_scores)
    out.metrics.extend(rows)
    where = f" [{arm}]" if arm != "default" else ""
    for r in rows:
        if r.name == "score" and r.n == 0 and any(fb.scorer_mean(r.scorer or "", rb) is not None
                                                 for rb in pairs.b_rows):
            out.blocking.append(f"scorer {r.scorer}{where} gave no value in the candidate")
    return "flat"  # decided in _finish, once the family adjustment is known


def _arm_verdict(rows: list[MetricRow]) -> Verdict:
    """Worst gating row; `regressed` whenever one is (errors beyond the allowance regress a
    suite even when no answer could be scored), else `incomparable` without a pass rate or
    score row to compare."""
    gating = [r.verdict for r in rows if r.gating and r.verdict != "incomparable"]
    primary = [r for r in rows if r.gating and r.name in ("pass_rate", "mean_score", "score")
               and r.verdict != "incomparable"]
    if "regressed" in gating:
        return "regressed"
    if not primary:
        return "incomparable"
    return worst(gating)


def _finish(out: SuiteComparison) -> None:
    if out.verdict in ("added", "removed") or out.regime is None:
        return
    named = out.cases
    arm_verdicts: dict[str, Verdict] = dict(out._arm_verdicts)
    if out.regime == "stochastic":
        for arm in arm_verdicts:
            if arm_verdicts[arm] not in ("added", "removed"):
                arm_verdicts[arm] = _arm_verdict([m for m in out.metrics if m.arm == arm])
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
        r.append(
            f"no case could be compared ({c.changed} changed, {c.added} added, "
            f"{c.removed} removed, {c.not_run} not run, {c.skipped} skipped)"
        )
    r.extend(out.blocking)
    if named.regressed and out.regime == "deterministic":
        r.append(f"{len(named.regressed)} case(s) passed in the base and fail or error now")
    if named.improved and out.regime == "deterministic":
        r.append(f"{len(named.improved)} case(s) failed in the base and pass now")
    for m in out.metrics:  # a non-gating row is in the table, not among the reasons
        if m.gating and m.verdict in ("regressed", "improved", "inconclusive") and out.regime == "stochastic":
            r.append(_row_reason(m))
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


def _row_reason(m: MetricRow) -> str:
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
