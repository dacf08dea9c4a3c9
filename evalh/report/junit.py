"""JUnit XML of a run (`evalh run --junit-xml`) and of a comparison (`evalh compare
--junit-xml`): a CI test reporter lists every case.

One `<testsuite>` per suite, one `<testcase>` per result: per case, and per arm and attempt
where the suite has several (`case [arm B] #2`). `time` is the target call's latency in
seconds (0 for a cached reply). A failed case carries a `<failure>` whose message names the
scorers that failed it and whose body says why, scorer by scorer; an errored case an
`<error>` with the exception; a judge error an `<error type="judge_error">` (the product
answered, the judge could not); a skipped one `<skipped>`. Text XML 1.0 cannot carry is
replaced, and everything is escaped by ElementTree.

A comparison's document (`compare_to_junit_xml`) has one `<testsuite>` per suite of either
run (a suite one side lacks is one testcase naming the side: skipped, or a failure when the
base ran it and the candidate did not), a testcase per compared case whose `time` is the
candidate's latency for it, and failure bodies that say what regressed: base and candidate
status and score, each scorer's say on both sides (rationales cut to `MAX_RATIONALE`
characters), the candidate's output or error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh.core.compare.models import Comparison, SuiteComparison
    from evalh.models import CaseResult, Run, Score

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MAX_BODY = 4000
"""Characters of output quoted in a failure body."""
MAX_RATIONALE = 600
"""Characters of one scorer's rationale quoted in a comparison's failure body."""


def _x(text: str) -> str:
    return _XML_BAD.sub("\ufffd", text)



def case_name(result: CaseResult, *, arms: bool, attempts: bool) -> str:
    name = result.case_id
    if arms:
        name += f" [arm {result.arm}]"
    if attempts:
        name += f" #{result.attempt}"
    return name


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _score_line(s: Score, limit: int | None = None) -> str:
    if s.error:
        return f"{s.scorer}: error: {_cut(s.error, limit) if limit else s.error}"
    state = "abstained" if s.abstained or s.passed is None else ("passed" if s.passed else "failed")
    value = "" if s.value is None else f" ({s.value:.3g})"
    why = (_cut(s.rationale, limit) if limit else s.rationale) if s.rationale else ""
    return f"{s.scorer}: {state}{value}" + (f": {why}" if why else "")


def _output_text(result: CaseResult) -> str:
    import orjson

    try:
        text = result.output if isinstance(result.output, str) else orjson.dumps(result.output).decode()
    except TypeError:
        text = repr(result.output)
    return text if len(text) <= MAX_BODY else text[: MAX_BODY - 1] + "…"


def failure_detail(result: CaseResult) -> tuple[str, str]:
    """(message, body) of a failed result: the scorers that failed it, then every
    scorer's say and the output."""
    failing = [s for s in result.scores if s.passed is False]
    if failing:
        message = "; ".join(f"{s.scorer}: {s.rationale or 'failed'}" for s in failing)
    elif result.scores:
        message = "no scorer passed it (" + ", ".join(_score_line(s) for s in result.scores) + ")"
    else:
        message = "the suite has no scorers: a case passes only when one passes it"
    body = "\n".join(_score_line(s) for s in result.scores)
    body += f"\noutput: {_output_text(result)}"
    return message, body


def run_to_junit_xml(run: Run) -> str:
    """The JUnit XML document of `run` (see the module docstring)."""
    root = ET.Element("testsuites", name=_x(f"evalh run {run.run_id}"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for name in sorted(run.suites):
        suite = run.suites[name]
        results = suite.cases
        arms = len({r.arm for r in results}) > 1
        attempts = any(r.attempt for r in results)
        counts = {"tests": len(results), "failures": 0, "errors": 0, "skipped": 0}
        el = ET.SubElement(root, "testsuite", name=_x(name))
        props = ET.SubElement(el, "properties")
        for key, value in (("regime", suite.regime), ("run_id", run.run_id),
                           ("status", run.status), ("dataset_sha256", suite.dataset.sha256)):
            ET.SubElement(props, "property", name=key, value=_x(str(value)))
        suite_time = 0.0
        for r in sorted(results, key=lambda r: (r.case_id, r.arm, r.attempt)):
            seconds = 0.0 if r.cached else (r.latency_ms or 0.0) / 1000
            suite_time += seconds
            tc = ET.SubElement(el, "testcase", classname=_x(f"evalh.{name}"),
                               name=_x(case_name(r, arms=arms, attempts=attempts)),
                               time=f"{seconds:.3f}")
            if r.status == "failed":
                counts["failures"] += 1
                message, body = failure_detail(r)
                ET.SubElement(tc, "failure", message=_x(message), type="failed").text = _x(body)
            elif r.status == "errored":
                counts["errors"] += 1
                kind = r.error.type if r.error else "error"
                text = r.error.message if r.error else "the target failed"
                ET.SubElement(tc, "error", message=_x(f"{kind}: {text}"), type=_x(kind)).text = _x(text)
            elif r.status == "judge_error":
                counts["errors"] += 1
                bad = [s for s in r.scores if s.error]
                message = "; ".join(f"{s.scorer}: {s.error}" for s in bad) or "a judge could not judge"
                ET.SubElement(tc, "error", message=_x(f"judge error: {message}"),
                              type="judge_error").text = _x("\n".join(_score_line(s) for s in r.scores))
            elif r.status == "skipped":
                counts["skipped"] += 1
                ET.SubElement(tc, "skipped", message=_x(r.error.message if r.error else "skipped"))
        for key, count in counts.items():
            el.set(key, str(count))
            totals[key] += count
        el.set("time", f"{suite_time:.3f}")
        if run.started_at:
            el.set("timestamp", run.started_at[:19])
        total_time += suite_time
    for key, count in totals.items():
        root.set(key, str(count))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --------------------------------------------------------------------------- comparisons

Results = dict[tuple[str, str, str], list["CaseResult"]]
"""(suite, case id, arm) → its results (every attempt), of one run."""


def _results(run: Run | None) -> Results:
    out: Results = {}
    if run is None:
        return out
    for name, suite in run.suites.items():
        for r in suite.cases:
            out.setdefault((name, r.case_id, r.arm), []).append(r)
    return out


def _seconds(results: list[CaseResult]) -> float:
    """The time a case took in a run: its attempts' latency (0 for cached replies)."""
    return sum(0.0 if r.cached else (r.latency_ms or 0.0) / 1000 for r in results)


def _score_text(score: float | None) -> str:
    return "" if score is None else f", score {score:.3g}"


def _side(label: str, outcome: str, score: float | None, results: list[CaseResult]) -> list[str]:
    """What one side says about a case: its outcome and score, then per attempt every
    scorer's say (rationale cut) or the error."""
    attempts = f" over {len(results)} attempts" if len(results) > 1 else ""
    lines = [f"{label}: {outcome}{_score_text(score)}{attempts}"]
    for r in sorted(results, key=lambda r: r.attempt):
        prefix = f"  #{r.attempt} " if len(results) > 1 else "  "
        if r.error is not None:
            lines.append(f"{prefix}{r.status}: {r.error.type}: {_cut(r.error.message, MAX_RATIONALE)}")
        lines += [f"{prefix}{_score_line(sc, MAX_RATIONALE)}" for sc in r.scores]
        if not r.scores and r.error is None:
            lines.append(f"{prefix}{r.status} (no scores)")
    return lines


def _regression_detail(
    suite: str, case_id: str, arm: str, base: str, cand: str,
    scores: tuple[float | None, float | None], before: Results, after: Results,
) -> tuple[str, str]:
    """(message, body) of a case that regressed (or errored) in the candidate."""
    key = (suite, case_id, arm)
    b_res, c_res = before.get(key, []), after.get(key, [])
    failing = sorted({sc.scorer for r in c_res for sc in r.scores if sc.passed is False or sc.error})
    errors = sorted({r.error.type for r in c_res if r.error is not None})
    why = ", ".join(failing) if failing else ", ".join(errors)
    message = f"{base} → {cand}" + (f" ({why})" if why else "")
    lines = _side("base", base, scores[0], b_res) + _side("candidate", cand, scores[1], c_res)
    outputs = [r for r in c_res if r.error is None]
    if outputs:
        lines.append(f"candidate output: {_output_text(outputs[0])}")
    return message, "\n".join(lines)


def compare_to_junit_xml(cmp: Comparison, runs: tuple[Run, Run] | None = None) -> str:
    """JUnit XML of a comparison: one <testsuite> per compared suite.

    Deterministic suites: each compared case is a testcase, each regressed case a
    <failure>; a case errored in the candidate is an <error> and a judge error <skipped>
    in every regime, never a pass. Stochastic suites: each metric row is a testcase (a
    regressed row fails, an inconclusive one is <skipped>), and each compared case a
    passing testcase. Changed cases are <skipped> testcases ("not compared"). With `runs`
    (base, candidate), every case carries the candidate's `time` and failures and errors
    a body from both runs' results (see the module docstring).
    """
    before, after = _results(runs[0] if runs else None), _results(runs[1] if runs else None)
    root = ET.Element("testsuites", name="evalh compare")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for s in cmp.suites.values():
        suite_el = ET.SubElement(root, "testsuite", name=_x(s.suite))
        if s.verdict in ("added", "removed"):  # one testcase: skipped, or failed when it blocks
            side = "base" if s.verdict == "added" else "candidate"
            tc = ET.SubElement(suite_el, "testcase", classname=_x(f"evalh.{s.suite}"),
                               name=_x(f"suite {s.verdict}"), time="0.000")
            message = _x(f"{s.verdict} (the {side} run has no suite {s.suite}): {'; '.join(s.reasons)}")
            if s.blocking:  # the base measured it and the candidate did not: cannot pass
                ET.SubElement(tc, "failure", message=message, type="cannot-pass")
                counts = {"tests": 1, "failures": 1, "errors": 0, "skipped": 0}
            else:
                ET.SubElement(tc, "skipped", message=message)
                counts = {"tests": 1, "failures": 0, "errors": 0, "skipped": 1}
            seconds = 0.0
        else:
            props = ET.SubElement(suite_el, "properties")
            for key, value in (("verdict", s.verdict), ("regime", s.regime or ""),
                               ("base_run", cmp.base.run_id), ("candidate_run", cmp.candidate.run_id)):
                ET.SubElement(props, "property", name=key, value=_x(value))
            counts, seconds = _compared_suite(suite_el, s, before, after)
        for key, count in counts.items():
            suite_el.set(key, str(count))
            totals[key] += count
        suite_el.set("time", f"{seconds:.3f}")
        total_time += seconds
    for key, count in totals.items():
        root.set(key, str(count))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _compared_suite(
    el: ET.Element, s: SuiteComparison, before: Results, after: Results,
) -> tuple[dict[str, int], float]:
    from evalh.report.compare_cells import allowance, delta, detail, interval, metric_label, value

    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    cls = _x(f"evalh.{s.suite}")

    def testcase(name: str, time: float = 0.0) -> ET.Element:
        counts["tests"] += 1
        return ET.SubElement(el, "testcase", classname=cls, name=_x(name), time=f"{time:.3f}")

    for why in s.blocking:  # the suite cannot pass: a failure, whatever the rows say
        ET.SubElement(testcase(f"suite cannot pass: {why}"), "failure", message=_x(why), type="cannot-pass")
        counts["failures"] += 1
    regressed = {(r.case_id, r.arm): r for r in s.cases.regressed} if s.regime == "deterministic" else {}
    refs = {(r.case_id, r.arm): r for lst in (s.cases.regressed, s.cases.errored_new) for r in lst}
    if s.regime == "stochastic":
        for m in s.metrics:
            tc = testcase(f"metric: {metric_label(m)}")
            text = (f"{m.name}: base {value(m, m.base)}, candidate {value(m, m.candidate)}, "
                    f"change {delta(m)}, allowance {allowance(m)}, interval {interval(m)}; {detail(m)}")
            if not m.gating:  # shown for information: neither a failure nor a pass
                ET.SubElement(tc, "skipped", message=_x(f"not gating ({m.verdict}): {text}"))
                counts["skipped"] += 1
            elif m.verdict == "regressed":
                ET.SubElement(tc, "failure", message=_x(f"{metric_label(m)} regressed"), type="regression").text = _x(text)
                counts["failures"] += 1
            elif m.verdict == "inconclusive":
                ET.SubElement(tc, "skipped", message=_x(f"inconclusive: {text}"))
                counts["skipped"] += 1
    for case_id, arm, bo, co in s.compared_cases():
        name = case_id if arm == "default" else f"{case_id} [{arm}]"
        time = _seconds(after.get((s.suite, case_id, arm), []))
        seconds += time
        tc = testcase(name, time)
        ref = refs.get((case_id, arm))
        scores = (ref.base_score, ref.candidate_score) if ref is not None else (None, None)
        if (case_id, arm) in regressed:
            message, body = _regression_detail(s.suite, case_id, arm, bo, co, scores, before, after)
            ET.SubElement(tc, "failure", message=_x(f"regressed: {message}"), type="regression").text = _x(body)
            counts["failures"] += 1
        elif co == "errored":  # not a regression (it was not passing), but never a pass
            _, body = _regression_detail(s.suite, case_id, arm, bo, co, scores, before, after)
            ET.SubElement(tc, "error", message=_x(f"errored in the candidate ({bo} → {co})"),
                          type="errored").text = _x(body)
            counts["errors"] += 1
        elif co == "judge_error":  # the judge failed: no verdict on the product either way
            bad = sorted({f"{sc.scorer}: {_cut(sc.error, MAX_RATIONALE)}" for r in after.get((s.suite, case_id, arm), [])
                          for sc in r.scores if sc.error})
            why = f"; {'; '.join(bad)}" if bad else ""
            ET.SubElement(tc, "skipped", message=_x(f"judge error in the candidate ({bo} → {co}): not compared{why}"))
            counts["skipped"] += 1
    for ref in s.cases.changed:
        name = ref.case_id if ref.arm == "default" else f"{ref.case_id} [{ref.arm}]"
        ET.SubElement(testcase(name), "skipped", message="content changed (digest differs): not compared")
        counts["skipped"] += 1
    return counts, seconds
