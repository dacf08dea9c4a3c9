"""promptfoo result files (`promptfoo eval -o results.json`) as an `ImportedRun`.

The file's `results.results` are one row per (test, prompt, provider). The eval is one
suite (named by the config's `description`); a test is a case (its `description` as id,
else `test<N>`; its `vars` the input, its assertions the `expected`, its `metadata`), a
prompt × provider pair an arm (`default` when there is one pair, so two files of one eval
with different providers compare), a repeat (`--repeat N`) an attempt. Each assertion's
component result is a pass/fail scorer named by its `metric`, else its `type` (promptfoo
gives every assertion a verdict and a score; the score is kept as the value). A row that
failed with an error (`failureReason` 2) is `errored`. Tokens are the response's
`tokenUsage`, cost the row's `cost`, latency its `latencyMs`; a response from promptfoo's
cache is marked cached (its cost and latency are not the model's). What does not map is
named in the notes.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from evalh.importers.base import (
    ForeignFileError,
    ImportedRun,
    ImportedSuite,
    ScorerKind,
    as_dict,
    count,
    load_json,
    number,
    safe_name,
    verdict_score,
)
from evalh.models import CaseResult, ErrorInfo, Score, sha256_of

_ERROR = 2
"""promptfoo's `ResultFailureReason.ERROR` (1 is ASSERT: a failed assertion)."""


def _scores(row: dict[str, Any], kinds: dict[str, ScorerKind]) -> list[Score]:
    if not isinstance(row.get("gradingResult"), dict):
        return []
    grading = as_dict(row.get("gradingResult"))
    components = [c for c in grading.get("componentResults") or [] if isinstance(c, dict)]
    if not components:
        components = [{**grading, "assertion": {"type": "promptfoo"}}]
    scores: list[Score] = []
    seen: dict[str, int] = defaultdict(int)
    for comp in components:
        assertion = as_dict(comp.get("assertion"))
        base = str(assertion.get("metric") or assertion.get("type") or "assertion")
        seen[base] += 1
        name = base if seen[base] == 1 else f"{base}#{seen[base]}"
        kinds.setdefault(name, "pass_fail")
        details: dict[str, Any] = {"assertion": {k: assertion[k] for k in ("type", "value", "threshold", "weight")
                                                 if k in assertion}}
        rendered = as_dict(comp.get("metadata")).get("renderedAssertionValue")
        if rendered is not None:
            details["rendered_value"] = rendered
        reason = comp.get("reason") if isinstance(comp.get("reason"), str) else None
        scores.append(verdict_score(name, comp.get("pass") is True, number(comp.get("score")), reason, details))
    return scores


def _expected(test: dict[str, Any], row: dict[str, Any]) -> Any:
    """The test's assertions, their values rendered where promptfoo recorded it."""
    grading = as_dict(row.get("gradingResult"))
    rendered = [as_dict(as_dict(c).get("metadata")).get("renderedAssertionValue")
                for c in grading.get("componentResults") or []]
    out = []
    for i, a in enumerate(test.get("assert") or []):
        if isinstance(a, dict):
            item = {k: a[k] for k in ("type", "value", "metric", "threshold") if k in a}
            if i < len(rendered) and rendered[i] is not None:
                item["value"] = rendered[i]
            out.append(item)
    return out or None


def _provider(row: dict[str, Any]) -> tuple[str, str | None]:
    p = row.get("provider")
    if isinstance(p, dict):
        pid = str(p.get("id") or "provider")
        return pid, (str(p["label"]) if p.get("label") else None)
    return (str(p) if p else "provider"), None


def read_promptfoo(path: Path, parsed: Any = None) -> ImportedRun:
    """`path` (`parsed`: its JSON when parsed already)."""
    doc = as_dict(parsed if parsed is not None else load_json(path))
    results = as_dict(doc.get("results"))
    rows = results.get("results")
    if not isinstance(rows, list):
        raise ForeignFileError(f"{path}: no results.results list: not a promptfoo result file")
    meta = as_dict(doc.get("metadata"))
    config = as_dict(doc.get("config"))
    version = meta.get("promptfooVersion")
    run = ImportedRun(source=path, format="promptfoo", tool_version=version if isinstance(version, str) else None,
                      suites={}, started_at=results.get("timestamp") if isinstance(results.get("timestamp"), str) else None)
    name = safe_name(str(config.get("description") or "promptfoo"), "promptfoo")
    run.label = f"promptfoo {name}"

    pairs: list[tuple[str, str]] = []
    for row in rows:
        pid, label = _provider(row)
        pair = (label or pid, str(as_dict(row.get("prompt")).get("label") or row.get("promptIdx", 0)))
        if pair not in pairs:
            pairs.append(pair)
    several_prompts = len({p for _, p in pairs}) > 1

    def arm_of(row: dict[str, Any]) -> str:
        if len(pairs) == 1:
            return "default"
        pid, label = _provider(row)
        prompt = str(as_dict(row.get("prompt")).get("label") or row.get("promptIdx", 0))
        return safe_name(f"{label or pid} | {prompt}" if several_prompts else (label or pid), "arm")

    kinds: dict[str, ScorerKind] = {}
    out: list[CaseResult] = []
    attempts: dict[tuple[str, str], int] = defaultdict(int)
    vars_of: dict[str, str] = {}
    for row in sorted((r for r in rows if isinstance(r, dict)), key=lambda r: (r.get("testIdx", 0), r.get("promptIdx", 0))):
        test = as_dict(row.get("testCase"))
        inputs = row.get("vars") if isinstance(row.get("vars"), dict) else test.get("vars")
        case_id = str(test.get("description") or f"test{row.get('testIdx', len(out))}")
        digest = sha256_of(inputs)
        if vars_of.setdefault(case_id, digest) != digest:  # one description, other vars
            case_id = f"{case_id}#{row.get('testIdx')}"
            run.note("tests that share a description but not their vars are told apart by their index (`#N`)")
        arm = arm_of(row)
        attempt = attempts[(case_id, arm)]
        attempts[(case_id, arm)] += 1
        response = as_dict(row.get("response"))
        usage = as_dict(response.get("tokenUsage") or row.get("tokenUsage"))
        error = row.get("error")
        err = None
        if row.get("failureReason") == _ERROR or (error and not isinstance(row.get("gradingResult"), dict)):
            message = str(error or response.get("error") or "error")
            head = message.split(":", 1)[0]
            err = ErrorInfo(type=head if head.isidentifier() else "ProviderError", message=message[:2000])
        metadata = {k: v for k, v in as_dict(test.get("metadata")).items() if not str(k).startswith("_")}
        scores = [] if err else _scores(row, kinds)
        if err is None and not scores:
            run.note("rows without assertions are kept, failed (an unjudged result is never a pass)")
        latency = number(row.get("latencyMs"))
        out.append(CaseResult(
            case_id=case_id, arm=arm, attempt=attempt, status="errored" if err else "failed",
            input=inputs, expected=_expected(test, row), metadata=metadata,
            output=None if err else response.get("output"), error=err, scores=scores,
            latency_ms=latency, tokens_in=count(usage.get("prompt")), tokens_out=count(usage.get("completion")),
            cost_usd=number(row.get("cost")), cached=response.get("cached") is True,
        ))
    providers = [p for p in config.get("providers") or [] if isinstance(p, dict)] if isinstance(config.get("providers"), list) else []
    first_pid, first_label = _provider(rows[0]) if rows else ("provider", None)
    target: dict[str, Any] = {"kind": "promptfoo", "model": first_pid}
    if first_label:
        target["label"] = first_label
    match = next((p for p in providers if p.get("id") == first_pid and p.get("label", first_label) == first_label), None)
    if match and match.get("config"):
        target["config"] = match["config"]
    if len(pairs) > 1:
        target["arms"] = [{"provider": p, "prompt": q} for p, q in pairs]
    suite_config = {k: config[k] for k in ("description", "prompts", "providers", "defaultTest", "evaluateOptions")
                    if config.get(k) not in (None, {}, [])}
    run.suites[name] = ImportedSuite(name=name, results=out, target=target, config=suite_config,
                                     scorers=kinds, dataset=f"promptfoo tests of {path.name}")
    if isinstance(results.get("stats"), dict):
        run.note("promptfoo's stats (pass counts, token totals) are not imported: evalh counts from the rows")
    if any(isinstance(r, dict) and r.get("namedScores") for r in rows):
        run.note("promptfoo's namedScores are the assertions' scores by metric: kept as those scorers' values")
    run.note("promptfoo records no git state: the run's git is empty")
    run.note("the rendered prompts are not kept per result: the prompt templates are in the config snapshot")
    return run
