"""Per-case timeouts enforced by one watchdog per worker task (`evalh.core.run.deadlines`),
not an `asyncio.timeout` per case: many cases with mixed timeouts in flight together, and
exactly the ones that never answer time out, with the reason text the runner has always
written; a cancellation from elsewhere is passed on, never recorded as a timeout.

No test depends on the machine's speed: a case either answers at once or never, and every
timeout is a second or more."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.run.deadlines import install
from evalh.core.run.sources import LiveSource
from evalh.models import Case
from evalh.targets.base import CallContext, TargetOutput
from tests.runner_project import load

runner = CliRunner()

TARGET = '''\
import asyncio


async def hangs_on_threes(inp):
    """Case n answers at once, except when n is a multiple of 3: then never."""
    if inp["n"] % 3 == 0:
        await asyncio.Event().wait()
    await asyncio.sleep(0)
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}


async def hangs_on_fives(inp):
    if inp["n"] % 5 == 0:
        await asyncio.Event().wait()
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}
'''


def _project(root: Path, cases: int) -> Path:
    (root / "data").mkdir(parents=True)
    rows = [json.dumps({"id": f"c{n:03d}", "input": {"n": n}, "expected": "even" if n % 2 == 0 else "odd"})
            for n in range(cases)]
    (root / "data" / "s.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "hangs.py").write_text(TARGET, encoding="utf-8")
    cfg = root / "evalh.toml"
    cfg.write_text("""\
[evalh]
concurrency = 8
timeout_s = 1

[suites.threes]
dataset = "data/s.jsonl"
target = "hangs:hangs_on_threes"
scorers = [{ type = "exact", field = "verdict" }]

[suites.fives]
dataset = "data/s.jsonl"
target = "hangs:hangs_on_fives"
timeout_s = 2
scorers = [{ type = "exact", field = "verdict" }]
""", encoding="utf-8")
    return cfg


def test_many_cases_with_mixed_timeouts_in_flight_only_the_hung_ones_time_out(tmp_path: Path) -> None:
    cfg = _project(tmp_path, cases=40)
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "-q",
                                 "--seed", "3"])
    assert result.exit_code == 1, result.output  # errored cases: a red gate
    [path] = (tmp_path / "runs").glob("*.json")
    doc = load(path)
    assert doc["status"] == "complete"
    for suite, every, timeout in (("threes", 3, "1"), ("fives", 5, "2")):
        cases = doc["suites"][suite]["cases"]
        assert len(cases) == 40
        for r in cases:
            n = int(r["case_id"][1:])
            if n % every == 0:
                assert r["status"] == "errored", (suite, r)
                assert r["error"] == {"type": "TimeoutError", "message": f"target did not answer within {timeout}s"}
                assert r["score"] is None
            else:
                assert (r["status"], r["error"]) == ("passed", None), (suite, r)
        agg = doc["suites"][suite]["aggregate"]
        hung = len(range(0, 40, every))
        assert (agg["errored"], agg["passed"]) == (hung, 40 - hung)


# ---------------------------------------------------------------------------- the watchdog itself


class _Target:
    """Answers at once, or never when the input says so; counts its calls."""

    config: Any = None

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput:
        self.calls += 1
        if case.input == "hang":
            await asyncio.Event().wait()
        return TargetOutput(output=case.input)

    async def aclose(self) -> None:
        return None


def _ctx() -> CallContext:
    return CallContext("r", "s", "default", 0, None)  # type: ignore[arg-type]


def test_a_shorter_timeout_after_a_longer_one_is_kept_by_the_same_worker() -> None:
    """One worker, cases under a 600 s timeout and then one under 1 s that never answers:
    it times out at its own deadline, not at the earlier case's (the timer is moved earlier)."""
    target = _Target()
    long, short = LiveSource(target, 600), LiveSource(target, 1)  # type: ignore[arg-type]

    async def worker() -> list[Any]:
        dog = install()
        try:
            out = [await long.produce(Case(id=f"a{i}", input="at once"), _ctx()) for i in range(5)]
            out.append(await short.produce(Case(id="b", input="hang"), _ctx()))
            out.append(await long.produce(Case(id="c", input="at once"), _ctx()))
            return out
        finally:
            dog.close()

    async def main() -> list[Any]:
        async with asyncio.timeout(300):  # a broken watchdog would wait 600 s: fail instead
            return await worker()

    produced = asyncio.run(main())
    assert [p.error for p in produced[:5]] == [None] * 5
    err = produced[5].error
    assert err is not None and (err.type, err.message) == ("TimeoutError", "target did not answer within 1s")
    assert produced[6].error is None and produced[6].output.output == "at once"


def test_one_worker_sets_one_timer_for_many_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the watchdog: 200 cases that answer at once under a 600 s timeout set
    the loop's timer once, not once per case."""
    target = _Target()
    source = LiveSource(target, 600)  # type: ignore[arg-type]

    async def main() -> int:
        loop = asyncio.get_running_loop()
        calls = []
        real = loop.call_at

        def call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            calls.append(callback)
            return real(when, callback, *args, **kwargs)

        monkeypatch.setattr(loop, "call_at", call_at)
        dog = install()
        try:
            for i in range(200):
                p = await source.produce(Case(id=f"c{i}", input="at once"), _ctx())
                assert p.error is None
        finally:
            dog.close()
        return len(calls)

    assert asyncio.run(main()) == 1
    assert target.calls == 200


def test_a_cancellation_from_elsewhere_is_passed_on_not_recorded_as_a_timeout() -> None:
    """An interrupt cancels the worker while its case waits: the cancellation reaches the
    worker (the run ends `partial`, interrupted), no result says TimeoutError."""
    target = _Target()
    source = LiveSource(target, 600)  # type: ignore[arg-type]
    produced: list[Any] = []

    async def worker() -> None:
        dog = install()
        try:
            produced.append(await source.produce(Case(id="c", input="hang"), _ctx()))
        finally:
            dog.close()

    async def main() -> None:
        task = asyncio.create_task(worker())
        while target.calls == 0:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert produced == []


def test_a_source_called_outside_a_worker_has_a_timeout_of_its_own() -> None:
    """A task without a watchdog installed (a worker process runs one task per case) gets
    one for its call alone: the same timeout, and no timer left behind."""
    source = LiveSource(_Target(), 1)  # type: ignore[arg-type]

    async def main() -> Any:
        async with asyncio.timeout(300):
            return await source.produce(Case(id="c", input="hang"), _ctx())

    err = asyncio.run(main()).error
    assert err is not None and err.type == "TimeoutError"
