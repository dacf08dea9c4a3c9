"""Runs that exercise every piece of a report (for the streamed-report tests): arms, repeats, judges and paragraphs,
traces, metadata for breakdowns and for the interval's conditions, errors, costs, tokens,
cached results, shuffled orders and measured sizes; seeded, so a run is made again equal."""

from __future__ import annotations

import random
from typing import Any

from compare_factory import ENV

from evalh.models import CaseResult, DatasetInfo, ErrorInfo, Run, Score, SuiteResult

STATUSES = ["passed", "passed", "passed", "failed", "errored", "judge_error", "skipped"]


def _metadata(rng: random.Random, cid: str, mess: float) -> dict[str, Any]:
    """`mess`: how often a field breaks one of the interval's conditions."""
    meta: dict[str, Any] = {"split": "test", "sampling": "random", "producer_model": "m", "prompt_sha256": "p1"}
    if rng.random() < mess:
        meta["split"] = rng.choice(["dev", None, "heldout"])
    if rng.random() < mess:
        meta["sampling"] = rng.choice(["hand-picked", None])
    if rng.random() < mess:
        meta["prompt_sha256"] = rng.choice(["p2", None])
    if rng.random() < 0.7:
        meta["complexity"] = rng.choice(["low", "high"])
    if rng.random() < 0.4:
        meta["tags"] = rng.sample(["a", "b", "c"], rng.randrange(0, 3))
    if mess and rng.random() < 0.3:
        meta["group"] = f"g{int(cid[1:]) % 5}"
    return {k: v for k, v in meta.items() if v is not None}


def _scores(rng: random.Random, status: str) -> list[Score]:
    scores = [Score(scorer="exact", value=1.0 if status == "passed" else 0.0, passed=status == "passed",
                    rationale=rng.choice([None, "", "off by one", "wrong [bold]unit[/bold]"]))]
    if rng.random() < 0.5:
        paras = [{"verdict": rng.choice(["supported", "unsupported", "pass", None]),
                  **({"passed": rng.random() < 0.5} if rng.random() < 0.3 else {}),
                  **({"error": "timeout"} if rng.random() < 0.1 else {})} for _ in range(rng.randrange(0, 4))]
        judges = [{"model": f"j{k}", "criteria": [{"name": "clarity", "value": rng.choice([rng.random(), None, True])}]}
                  for k in range(rng.randrange(0, 3))]
        scores.append(Score(
            scorer="judge", value=rng.choice([None, rng.random()]), passed=rng.choice([None, True, False]),
            verdict=rng.choice([None, "good", "bad", "meh"]), judge_model=rng.choice([None, "j0"]),
            error=rng.choice([None, None, None, "refused"]), abstained=rng.random() < 0.1,
            details={"paragraphs": paras, "judges": judges, **({"pass_verdicts": ["supported"]} if rng.random() < 0.3 else {})},
        ))
    return scores


def _result(rng: random.Random, cid: str, arm: str, attempt: int, mess: float) -> CaseResult:
    status = rng.choice(STATUSES if mess else STATUSES[:4])
    error = ErrorInfo(type=rng.choice(["TimeoutError", "GenerationFailed"]), message="took too long") \
        if status == "errored" else None
    trace = None
    if rng.random() < 0.4:
        trace = [{"name": rng.choice(["search", "fetch"])} if rng.random() < 0.8 else {"tool": "calc"}
                 for _ in range(rng.randrange(0, 4))]
    tokens_in = rng.choice([None, rng.randrange(1, 500)])
    return CaseResult(
        case_id=cid, case_digest="d-" + cid, arm=arm, attempt=attempt, status=status,  # type: ignore[arg-type]
        score=rng.choice([None, rng.random(), 1.0]) if status in ("passed", "failed") else None,
        scores=_scores(rng, status) if status != "skipped" else [], error=error,
        metadata=_metadata(rng, cid, mess), latency_ms=rng.choice([None, rng.uniform(1, 900)]),
        tokens_in=tokens_in, tokens_out=rng.choice([None, rng.randrange(1, 300)]),
        cost_usd=rng.choice([None, rng.uniform(0, 0.01)]) if tokens_in is not None else None,
        cached=rng.random() < 0.1, input={"q": cid}, output={"a": rng.random(), "route": rng.choice(["x", "y"])},
        trace=trace, measured={"chars": rng.randrange(0, 90), "words": rng.randrange(0, 20)} if rng.random() < 0.5 else None,
        shuffle={"input.options": [2, 0, 1]} if rng.random() < 0.2 else None,
    )


def report_run(run_id: str, seed: int, *, arms: tuple[str, ...] = ("default",), repeats: int = 1,
               cases: int = 40, shuffled: bool = True, regime: str = "stochastic",
               target: dict[str, Any] | None = None, mess: float = 0.1) -> Run:
    """A run of two suites (one empty of results); `shuffled`: results out of dataset order."""
    rng = random.Random(seed)
    results = [_result(rng, f"c{i:03d}", arm, attempt, mess)
               for i in range(cases) for arm in arms for attempt in range(repeats) if not mess or rng.random() < 0.97]
    if shuffled:
        rng.shuffle(results)
    suites = {
        "s": SuiteResult(regime=regime, target=target or {}, cases=results,  # type: ignore[arg-type]
                         dataset=DatasetInfo(path="d.jsonl", sha256="ds", cases=cases)),
        "empty": SuiteResult(dataset=DatasetInfo(path="e.jsonl", sha256="de", cases=0)),
    }
    return Run(run_id=run_id, status="complete", started_at="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
               environment=ENV, config={}, suites=suites)


KINDS: list[dict[str, Any]] = [
    dict(),
    dict(repeats=3),
    dict(arms=("a", "b"), repeats=2),
    dict(arms=("a", "b")),
    dict(regime="deterministic", shuffled=False),
    dict(repeats=2, shuffled=False, target={"kind": "anthropic", "model": "claude", "prompt": "hi"}),
    dict(cases=0),
    dict(mess=0.0),
    dict(mess=0.0, repeats=2),
    dict(mess=0.01),
    dict(mess=0.02, repeats=2, target={"kind": "openai", "model": "gpt", "system": "be brief"}),
]
