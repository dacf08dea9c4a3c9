"""Seeded, realistic run documents for the dashboard benchmark and screenshot.

    python bench/seed_runs.py DIR [--runs 12] [--big-cases 0]

Writes DIR/eval_runs/<run_id>.json: a deterministic `gate` suite (hand-picked cases by
stratum) and a stochastic `live` suite (held-out cases, 3 attempts, a citation judge with
a verdict vocabulary and per-paragraph verdicts, tool traces, tokens, cost, latency) whose
quality drifts across runs. With --big-cases N the newest run's `gate` suite has N cases.
Deterministic for given arguments.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalh.core.results.aggregate import aggregate
from evalh.models import (
    CaseResult,
    DatasetInfo,
    EnvironmentInfo,
    ErrorInfo,
    GitInfo,
    Run,
    Score,
    SuiteResult,
)
from evalh.store import RunStore

ENV = EnvironmentInfo(evalh="0.1.0", python="3.11", platform="linux-x86_64")
STRATA = ["money", "percent", "date", "quote", "range", "scaled", "no_claims", "citation_scope"]
TOOLS = ["search_talks", "fetch_talk", "lookup_speaker", "rerank"]
VERDICTS = ["supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"]
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def _suite(results: list[CaseResult], regime: str, path: str) -> SuiteResult:
    return SuiteResult(
        regime=regime,  # type: ignore[arg-type]
        dataset=DatasetInfo(path=path, sha256="5eed" * 16, cases=len({r.case_id for r in results})),
        aggregate=aggregate(results), arms={"default": aggregate(results)}, cases=results,
    )


def gate(rng: random.Random, n: int, broken: set[int]) -> SuiteResult:
    out = []
    for i in range(n):
        stratum = STRATA[i % len(STRATA)]
        kind = "truthful" if i % 2 == 0 else "planted"
        cid = f"gate.{stratum}.{i // len(STRATA)}.{kind}"
        expected = "accept" if kind == "truthful" else "reject"
        ok = i not in broken
        got = expected if ok else ("reject" if expected == "accept" else "accept")
        out.append(CaseResult(
            case_id=cid, case_digest=f"{i:064x}", status="passed" if ok else "failed",
            score=1.0 if ok else 0.0, input={"answer": f"Revenue was $2.{i}B [1].", "sources": {"1": "…"}},
            expected=expected, output={"verdict": got, "claims": [{"kind": stratum, "text": f"$2.{i}B"}]},
            scores=[Score(scorer="exact", value=1.0 if ok else 0.0, passed=ok, rationale=f"{got} == {expected}" if ok else f"{got} != {expected}")],
            metadata={"split": "gate", "stratum": stratum, "tags": [kind]},
            latency_ms=round(rng.uniform(6, 18), 2),
        ))
    return _suite(out, "deterministic", "datasets/gate.jsonl")


def live(rng: random.Random, quality: float, n: int = 20, repeats: int = 3) -> SuiteResult:
    out = []
    for i in range(n):
        complexity = ("low", "medium", "high")[i % 3]
        difficulty = {"low": 0.1, "medium": 0.0, "high": -0.15}[complexity]
        for a in range(repeats):
            if rng.random() < 0.02:
                out.append(CaseResult(
                    case_id=f"live.q{i:02d}", attempt=a, status="errored", metadata={"split": "heldout", "complexity": complexity},
                    error=ErrorInfo(type="TargetError", message="upstream 529 overloaded after 4 retries"),
                    latency_ms=round(rng.uniform(20000, 30000), 1)))
                continue
            paras = [rng.choices(VERDICTS, weights=[quality + difficulty, 0.15, 0.1, 0.08, 0.05])[0]
                     for _ in range(rng.randint(2, 5))]
            good = sum(p == "supported" for p in paras) / len(paras)
            passed = good >= 0.6
            tools = ["search_talks", "fetch_talk"] + rng.sample(TOOLS[2:], rng.randint(0, 2))
            tin, tout = rng.randint(2500, 9000), rng.randint(300, 1200)
            out.append(CaseResult(
                case_id=f"live.q{i:02d}", attempt=a, status="passed" if passed else "failed", score=round(good, 3),
                input={"question": f"What did the minister say about housing in debate {i}?"},
                output="Paragraph one cites [1].\n\nParagraph two cites [2].",
                scores=[Score(scorer="citations", value=round(good, 3), passed=passed,
                              verdict="supported" if passed else "unsupported", judge_model="claude-haiku-4-5",
                              rationale=f"{sum(p == 'supported' for p in paras)} of {len(paras)} paragraphs supported",
                              details={"paragraphs": [
                                  {"index": j, "text": f"Paragraph {j + 1} of the answer [{j + 1}].", "cited": [j + 1],
                                   "verdict": p, "passed": p == "supported",
                                   "rationale": "the cited debate says so" if p == "supported" else f"judged {p}"}
                                  for j, p in enumerate(paras)]})],
                metadata={"split": "heldout", "complexity": complexity},
                trace=[{"name": t, "args": {"q": "housing"}} for t in tools],
                latency_ms=round(rng.lognormvariate(8.3, 0.35), 1), tokens_in=tin, tokens_out=tout,
                cost_usd=round(tin * 1e-6 + tout * 5e-6, 6),
            ))
    return _suite(out, "stochastic", "datasets/live.jsonl")


def seed(root: Path, runs: int = 12, big_cases: int = 0, seed_value: int = 7) -> list[Run]:
    """Write `runs` run documents under root/eval_runs; return them, oldest first."""
    rng = random.Random(seed_value)
    store = RunStore(root / "eval_runs")
    made = []
    for k in range(runs):
        when = START + timedelta(hours=6 * k)
        n_gate = big_cases if (big_cases and k == runs - 1) else 40
        broken = {3, 17} if k in (4, 5) else ({11} if k == runs - 1 else set())
        run = Run(
            run_id=f"{when:%Y%m%dT%H%M%S}000Z-{k:06x}", label=f"prompt v{1 + k // 3}" if k % 3 == 0 else None,
            status="complete", started_at=when.isoformat().replace("+00:00", "Z"),
            finished_at=(when + timedelta(minutes=3)).isoformat().replace("+00:00", "Z"),
            git=GitInfo(sha=f"{rng.getrandbits(160):040x}", dirty=k == runs - 1, branch="main"), environment=ENV,
            suites={"gate": gate(rng, n_gate, broken), "live": live(rng, 0.55 + 0.02 * k)},
        )
        store.write(run)
        made.append(run)
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--big-cases", type=int, default=0)
    args = ap.parse_args()
    made = seed(args.dir, args.runs, args.big_cases)
    print(f"wrote {len(made)} runs to {args.dir / 'eval_runs'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
