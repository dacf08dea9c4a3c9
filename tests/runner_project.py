"""A throwaway project for the runner's tests: numbered cases and targets that can be slow,
crash, report tokens and cost, or say which run and case they are in.

Case `n` has input `{"n": n}`; the `parity` target answers `even`/`odd`; the expected
label is the parity except for every fifth case (n % 5 == 4), so some cases fail; with
`crash_every=k` the target raises on n % k == k - 1, so some are errored. When
`CALLS_FILE` is set, each call appends `case_id arm attempt` to it (from
`evalh.context.current()`), so tests can count calls per (case, arm, attempt).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

TARGET_MODULE = "evalh_runner_target"

TARGET_SOURCE = '''\
import asyncio
import os
import time

from evalh.context import current
from evalh.targets.base import TargetOutput


def _log():
    path = os.environ.get("CALLS_FILE")
    if path:
        ctx = current()
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{ctx.case_id} {ctx.arm} {ctx.attempt}\\n")


def _answer(inp):
    crash_every = int(os.environ.get("CRASH_EVERY", "0"))
    if crash_every and inp["n"] % crash_every == crash_every - 1:
        raise RuntimeError(f"the product fell over on case {inp['n']}")
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}


def parity(inp):
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    _log()
    return _answer(inp)


def wrong(inp):
    _log()
    return {"verdict": "even" if inp["n"] % 2 else "odd"}


def crash(inp):
    raise RuntimeError("the product fell over")


def hangs_on_zero(inp):
    """Case n=0 hangs (a sync call nothing can interrupt); the others answer at once."""
    if inp["n"] == 0:
        time.sleep(float(os.environ.get("HANG_S", "60")))
    return _answer(inp)


def sleepy(inp):
    time.sleep(0.3)
    return {"verdict": "even"}


async def sleepy_async(inp):
    await asyncio.sleep(30)
    return {"verdict": "even"}


_barrier = None


def together(inp):
    """Passes only if `BARRIER` calls are running at the same time (each waits for the rest)."""
    import threading

    global _barrier
    if _barrier is None:
        _barrier = threading.Barrier(int(os.environ["BARRIER"]), timeout=10)
    _barrier.wait()
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}


_calls = None


def _call_number():
    import itertools

    global _calls
    if _calls is None:
        _calls = itertools.count()
    return next(_calls)


def cheap_then_together(inp):
    """The first `CHEAP_FOR` calls answer at once; every later one waits until `BARRIER`
    of them are running at the same time (as `together`)."""
    if _call_number() >= int(os.environ["CHEAP_FOR"]):
        return together(inp)
    return _answer(inp)


def cheap_then_hangs(inp):
    """Call number `HANG_AT` sleeps `HANG_S` seconds; every other one answers at once."""
    if _call_number() == int(os.environ["HANG_AT"]):
        time.sleep(float(os.environ.get("HANG_S", "60")))
        return {"verdict": "late"}
    return _answer(inp)


def priced(inp):
    _log()
    return TargetOutput(output=_answer(inp), tokens_in=100, tokens_out=50, cost_usd=0.01,
                        model="fixture-model")


def unpriced(inp):
    _log()
    return TargetOutput(output=_answer(inp), tokens_in=100, tokens_out=50, model="no-price-model")


def who(inp):
    ctx = current()
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd",
            "env_run_id": os.environ.get("EVALH_RUN_ID"),
            "env_case_id": os.environ.get("EVALH_CASE_ID"),
            "ctx": [ctx.run_id, ctx.suite, ctx.case_id, ctx.arm, ctx.attempt]}


async def who_async(inp):
    await asyncio.sleep(0)
    return who(inp)
'''


def write_project(
    root: Path,
    *,
    cases: int = 12,
    target: str = "parity",
    concurrency: int = 2,
    timeout_s: float = 10,
    suite_extra: str = "",
    extra: str = "",
) -> Path:
    """Write `evalh.toml` (one suite, `s`), `data/s.jsonl` and the target module under
    `root`; returns the config path."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    lines = []
    for n in range(cases):
        parity = "even" if n % 2 == 0 else "odd"
        expected = parity if n % 5 != 4 else ("odd" if parity == "even" else "even")
        lines.append(json.dumps({"id": f"c{n:03d}", "input": {"n": n}, "expected": expected}))
    (root / "data" / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / f"{TARGET_MODULE}.py").write_text(TARGET_SOURCE, encoding="utf-8")
    toml = f"""\
[evalh]
concurrency = {concurrency}
timeout_s = {timeout_s}

[suites.s]
dataset = "data/s.jsonl"
target = "{TARGET_MODULE}:{target}"
scorers = [{{ type = "exact", field = "verdict" }}]
{suite_extra}
{extra}
"""
    path = root / "evalh.toml"
    path.write_text(toml, encoding="utf-8")
    return path


def write_model_project(path: Path, cases: int = 2) -> None:
    """A project whose one suite asks an `openai` target served by the offline mock (every
    reply "ok"), with an `exact` scorer: `cases` cases, each passing."""
    (path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{n}", "input": {"q": f"q{n}"}, "expected": "ok"}) + "\n" for n in range(cases)))
    (path / "mock.json").write_text(json.dumps({"rules": [{"text": "ok"}]}), encoding="utf-8")
    (path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "cases.jsonl"\nscorers = [{ type = "exact" }]\n\n[suites.s.target]\n'
        'kind = "openai"\nmodel = "m"\nbase_url = "mock:mock.json"\nprompt = "{{ input.q }}"\n', encoding="utf-8")


def default_sigint() -> None:
    """For a child the tests interrupt: SIGINT back to its default disposition. A shell
    running the suite in the background (`.ci/run &`) starts it with SIGINT ignored, a
    disposition children inherit, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def evalh_process(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`python -m evalh.cli.main ARGS` in `cwd`, stdout and stderr captured."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "evalh.cli.main", *args], cwd=cwd, env=full_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
    )


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def by_triple(doc: dict[str, Any], suite: str = "s") -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(r["case_id"], r["arm"], r["attempt"]): r for r in doc["suites"][suite]["cases"]}


def journal_results(path: Path) -> list[dict[str, Any]]:
    """Complete result lines of a journal (a torn last line is skipped, as the store does)."""
    out = []
    for line in path.read_bytes().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "result" in obj:
            out.append(obj["result"])
    return out
