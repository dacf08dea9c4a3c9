"""JUnit XML of a run (`evalh run --junit-xml`): a CI test reporter lists every case.

One `<testsuite>` per suite, one `<testcase>` per result: per case, and per arm and attempt
where the suite has several (`case [arm B] #2`). `time` is the target call's latency in
seconds (0 for a cached reply). A failed case carries a `<failure>` whose message names the
scorers that failed it and whose body says why, scorer by scorer; an errored case an
`<error>` with the exception; a judge error an `<error type="judge_error">` (the product
answered, the judge could not); a skipped one `<skipped>`. Text XML 1.0 cannot carry is
replaced, and everything is escaped by ElementTree.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh.models import CaseResult, Run, Score

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MAX_BODY = 4000
"""Characters of output quoted in a failure body."""


def _x(text: str) -> str:
    return _XML_BAD.sub("\ufffd", text)



def case_name(result: CaseResult, *, arms: bool, attempts: bool) -> str:
    name = result.case_id
    if arms:
        name += f" [arm {result.arm}]"
    if attempts:
        name += f" #{result.attempt}"
    return name


def _score_line(s: Score) -> str:
    if s.error:
        return f"{s.scorer}: error: {s.error}"
    state = "abstained" if s.abstained or s.passed is None else ("passed" if s.passed else "failed")
    value = "" if s.value is None else f" ({s.value:.3g})"
    return f"{s.scorer}: {state}{value}" + (f": {s.rationale}" if s.rationale else "")


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
