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
  suite's cluster field); see `compare.metrics.decide`. Pass-rate and score rows estimate
  the change over these fixed cases by default (`estimand`, `stats.sequential`). Every
  gating row of every suite is one family of tests, held to one family-wise level
  (`compare.family.apply_family`); a candidate run in rounds (`--until-decided`) has its
  fixed-suite rows decided by the rounds' confidence sequence (`compare.family.apply_rounds`).

Errored and `judge_error` results never count as failures of the product's answer: they
are counted apart. They still fail closed: a passed → errored case is a regression in a
deterministic suite, a passed → judge_error case blocks it (it could not be verified); in a
stochastic suite the error rate (errored + judge_error) is a row like the others, and a
candidate that produced nothing comparable blocks the gate.

A green gate means the work was measured (`compare.coverage`): every compared suite has
its coverage of the base's results, and blocks below its minimum; a suite the base ran and
the candidate did not blocks unless it was left out on purpose and the policy names it.
What is advisory is read from the base's config: a suite the candidate alone makes
advisory still gates, and a scorer the base gates on that the candidate alone makes
advisory (its statuses were decided without it) blocks its suite.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalh.config import Thresholds
from evalh.core.compare.arms import case_ref, deterministic_arm, finish_suite, stochastic_arm
from evalh.core.compare.columns import row_range
from evalh.core.compare.config import config_differences, thresholds_for
from evalh.core.compare.corrected import CorrectedPair, add_corrected_rows
from evalh.core.compare.coverage import absent_why, min_coverage_for, suite_coverage, why_not_run
from evalh.core.compare.facts import (
    NO_DIGEST,
    Options,
    SuiteFacts,
    suite_facts,
)
from evalh.core.compare.family import apply_family, apply_rounds, detect_row, plan_row
from evalh.core.compare.metrics import Pairs
from evalh.core.compare.models import (
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
    recorded_looks,
    worst,
)
from evalh.core.compare.suite_settings import (
    snapshot_options,
    suite_estimand,
    suite_gate,
    unmeasured_gate,
)
from evalh.gcpause import gc_paused
from evalh.models import Run, SuiteResult

__all__ = ["ComparePolicy", "Comparison", "SuiteComparison", "compare_runs", "config_differences"]


SELECT = 0.8
"""τ of the conditionalized family (`stats.weighted_holm`), used when the family spans two
suites or more: a row takes part only when its p_worse is at most τ (its estimate is not
clearly inside its allowance). A regressed row pays τ (its level is α·τ when it is alone
in the family); an unchanged row far from its allowance steps out. Chosen by measurement
(bench/gate_results.md): with 4 unchanged suites beside a regressed one, τ = 0.5 kept 77 %
of the regressed suite's own power and 0.8 keeps about 90 %."""

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
    field and its gated scorers, `snapshot_options`)."""
    out: dict[str, Options] = {}
    for name in _suite_names(base, candidate):
        cluster_by, gated = snapshot_options(name, base, candidate)
        out[name] = (cluster_by, frozenset(gated))
    return out


def _suite_names(base: Run, candidate: Run) -> list[str]:
    """Every suite of either run: the candidate's in its order, then the base's own."""
    return list(candidate.suites) + [n for n in base.suites if n not in candidate.suites]


def _compare_runs(
    base: Run, candidate: Run, policy: ComparePolicy, facts: tuple[Facts, Facts],
    corrected: Mapping[tuple[str, str], CorrectedPair],
) -> Comparison:
    if policy.rounds is None and candidate.rounds:  # a run made in rounds keeps its sequence
        policy = policy.model_copy(update={"rounds": recorded_looks(candidate.rounds)})
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
    from evalh.core.results.outcome import ADVISORY, advisory_suites, scorers_made_advisory

    # the base's config decides (as its thresholds do): a change cannot make its own gate advisory
    for name in advisory_suites(base) & set(suites):  # reported, never gates
        suites[name].advisory = dict(ADVISORY)
        suites[name].reasons.append("advisory suite (judgeUse: advisory-only, releaseDecision: "
                                    "not-assessed): reported, never gates")
    for s in suites.values():  # a declared gating row that nothing measured is said
        if s.regime == "stochastic" and s.verdict not in ("added", "removed"):
            line = unmeasured_gate(s.suite, base, candidate, {m.name for m in s.metrics})
            if line:
                warnings.append(line)
    for name in (advisory_suites(candidate) - advisory_suites(base)) & set(suites):
        suites[name].reasons.append("advisory in the candidate's config only: it gates until the "
                                    "baseline's config says so (a change cannot make its own gate advisory)")
    for s in suites.values():  # nor its own scorer: the candidate's statuses were decided without it
        if s.verdict in ("added", "removed") or s.regime is None:
            continue
        for scorer in scorers_made_advisory(base, candidate, s.suite):
            s.blocking.append(f"scorer {scorer} is advisory in the candidate's config only: a change "
                              "cannot make its own scorer advisory; set it in the baseline's config "
                              "(re-baseline) to stop it gating")
    family: list[MetricRow] = []
    weights: list[float] = []
    suite_weights: dict[str, float] = {}
    for s in suites.values():
        if s.regime != "stochastic" or s.advisory is not None:
            continue
        rows = [m for m in s.metrics if m.gating]
        k = sum(1 for m in rows if m.p_worse is not None)
        if k:  # the suite's weight, split evenly over its tested gating rows
            suite_weights[s.suite] = w = suite_gate(s.suite, base, candidate)[1]
            family += rows
            weights += [w / k] * len(rows)
    # Across two suites or more, rows far inside their allowance (unchanged ones) step
    # out of the family instead of diluting the rest (conditionalized Holm, SELECT).
    select = SELECT if len(suite_weights) >= 2 else None
    alpha = apply_family(family, policy, weights, select)
    tested = sum(1 for m in family if m.p_worse is not None)
    apply_rounds({name: s.metrics for name, s in suites.items()
                  if s.regime == "stochastic" and s.advisory is None}, policy, tested)
    for s in suites.values():
        for m in s.metrics:
            plan_row(m, policy, tested)
            detect_row(m, policy, tested)
        finish_suite(s)
    compared = [s.verdict for s in suites.values() if s.verdict not in ("added", "removed")]
    if not suites:
        warnings.append("neither run has any suite")
    verdict = worst(compared, default="incomparable")
    # an advisory suite never gates on what it measured, but one that measured nothing
    # still fails: a green gate means the work was measured
    gate = [_gate_reason(s) for s in suites.values()
            if ((s.verdict == "regressed" or s.blocking) and s.advisory is None) or s._measured_nothing]
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
        family=Family(size=tested, alpha=alpha, weights=suite_weights, select=select,
                      method=_family_method(suite_weights, select)),
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


def _family_method(weights: dict[str, float], select: float | None) -> str:
    text: str = Family.model_fields["method"].default
    if len(set(weights.values())) > 1:
        text = ("weighted Holm step-down over the gating rows' one-sided p-values (each "
                "suite's share of alpha: its gate_weight over their sum)")
    if select is not None:
        text += (f", conditionalized: only rows with p_worse <= {select:g} take part, each "
                 f"with p_worse / {select:g}")
    return text


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
    name: str, sr: SuiteResult, n: int, verdict: Verdict, cand: Run, policy: ComparePolicy,
    th: Thresholds, source: str,
) -> SuiteComparison:
    partial = cand.status != "complete"
    blocking: list[str] = []
    if verdict == "added":
        reason = f"suite {name} is only in the candidate ({n} case(s))"
        counts = SuiteCounts(candidate_cases=n, added=n)
    else:
        # A suite the base measured and the candidate did not: the candidate measured less
        # than the baseline did. It fails the gate unless it was left out on purpose (the
        # candidate's config removed it, or the run did not select it) and the operator
        # says so with --allow-removed-suite; a missing key or an unfinished run never.
        why, deliberate = why_not_run(name, cand)
        reason = f"suite {name} is in the base ({n} case(s)) and was not run by the candidate: {why}"
        allowed = name in policy.allow_removed_suites
        if deliberate and allowed:
            reason += " (allowed by --allow-removed-suite)"
        else:
            hint = (f"; --allow-removed-suite {name} accepts that" if deliberate
                    else "; --allow-removed-suite does not cover it" if allowed else "")
            blocking.append(reason + hint)
        counts = SuiteCounts(base_cases=n, not_run=n) if partial else SuiteCounts(base_cases=n, removed=n)
    out = SuiteComparison(
        suite=name, regime=sr.regime, verdict=verdict, reasons=[reason], partial=partial,
        thresholds=th.model_dump(), thresholds_source=source, counts=counts, blocking=blocking,
    )
    out._measured_nothing = bool(blocking)  # gates even an advisory suite
    return out


def _compare_suite(
    name: str, sb: SuiteResult | None, sc: SuiteResult | None, base: Run, cand: Run,
    policy: ComparePolicy, th: Thresholds, source: str, fb: SuiteFacts, fc: SuiteFacts,
) -> SuiteComparison:
    partial = base.status != "complete" or cand.status != "complete"
    if sb is None:
        assert sc is not None
        return _one_sided(name, sc, len(fc), "added", cand, policy, th, source)
    if sc is None:
        return _one_sided(name, sb, len(fb), "removed", cand, policy, th, source)
    out = SuiteComparison(
        suite=name, regime=sc.regime, verdict="flat", partial=partial,
        thresholds=th.model_dump(), thresholds_source=source, errors=_errors(fb, fc),
    )
    if sb.regime != sc.regime:
        out.regime = None
        out.verdict = "incomparable"
        out.reasons.append(f"regime changed: {sb.regime} in the base, {sc.regime} in the candidate")
        out.blocking.append("nothing comparable: the regime changed (move the baseline if that is the change)")
        out.reasons.extend(out.blocking)
        return out
    cluster_by, gate_scores = snapshot_options(name, base, cand)
    estimand = suite_estimand(name, base, cand, policy)
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
            arm_verdicts[arm] = deterministic_arm(out, arm, keyed)
        else:
            arm_verdicts[arm] = stochastic_arm(out, arm, keyed, policy, th, cluster_by, gate_scores,
                                                suite_gate(name, base, cand)[0], estimand)
    if arms != ["default"]:
        out.arms = arm_verdicts
    out._arm_verdicts = arm_verdicts
    nothing = _nothing_measured(fb, fc, arms_b)
    out.blocking.extend(nothing)
    out._measured_nothing = bool(nothing)
    out.coverage = suite_coverage(
        fb, fc, pairs_by_arm.values(), changed=named.changed, absent=[*named.removed, *named.not_run],
        pool=max(len(base.pooled_from), 1), minimum=min_coverage_for(name, base, cand, policy),
        per_case=bool(cand.rounds) or policy.rounds is not None,
    )
    if out.coverage.below and not nothing:
        why = absent_why(name, base, cand) if out.coverage.absent else None
        out.blocking.append(out.coverage.line() + (f"; {why}" if why else ""))
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
            named.changed.append(case_ref((case_id, fc.arm_names[a]), fb, row, fc, row))
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
            ref = case_ref((case_id, fc.arm_names[a]), fb, rb, fc, rc)
            (named.added if base_done else named.not_run).append(ref)
            continue
        x, y = db[rb], dc[rc]
        if x != y and x != NO_DIGEST and y != NO_DIGEST:
            named.changed.append(case_ref((case_id, fc.arm_names[a]), fb, rb, fc, rc))
            continue
        _paired(pairs_by_arm, fc.arm_names[a], fb, fc).append(rb, rc)
    c_maps = [fc.rows.get(arm) or {} for arm in fb.arm_names]
    for rb, (case_id, a) in enumerate(zip(fb.case_ids, fb.arm_of, strict=False)):
        if case_id not in c_maps[a]:
            ref = case_ref((case_id, fb.arm_names[a]), fb, rb, fc, None)
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


