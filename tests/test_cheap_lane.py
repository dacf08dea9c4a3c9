"""Sync calls of a function proven cheap share one thread, the lane (`evalh.handoff`,
`evalh.core.run.workers.DaemonExecutor.post_serial`), and stay as safe as a thread per call:
a function that starts blocking after a thousand cheap calls stalls no other call, a call
that hangs on the lane is recorded `errored` at its timeout and holds neither the calls
behind it nor the loop's end, and a lane call sees its case's context and raises as a
threaded one does.

No test depends on the machine's speed: where a test needs a function to be proven cheap it
sets `CHEAP_S` and `STUCK_S` far beyond what an instant call takes on any machine (a quarter
of a second), so the proof and the spill happen whatever the load; concurrency is asserted
by a barrier that only opens when every call is running at once."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh import handoff
from evalh.cli.main import app
from evalh.core.run.workers import DaemonExecutor
from tests.runner_project import load, write_project

runner = CliRunner()


@pytest.fixture
def generous(monkeypatch: pytest.MonkeyPatch) -> None:
    """An instant call is cheap, and a lane call is stuck, only past a quarter second."""
    monkeypatch.setattr(handoff, "CHEAP_S", 0.25)
    monkeypatch.setattr(handoff, "STUCK_S", 0.25)


def _on_loop(main: Any) -> Any:
    """`main()` on a loop whose default executor is the runner's (as `Runner.run` sets it)."""

    async def wrapped() -> Any:
        asyncio.get_running_loop().set_default_executor(DaemonExecutor("evalh-target"))
        return await main()

    return asyncio.run(wrapped())


async def _in_turns(calls: list[Any], at_once: int) -> list[Any]:
    """The awaitables `calls`, `at_once` of them in flight at a time, as the runner's workers do."""
    out: list[Any] = []
    for start in range(0, len(calls), at_once):
        out.extend(await asyncio.gather(*calls[start:start + at_once]))
    return out


def _pace(fn: Any) -> handoff._Pace:
    loop = asyncio.get_running_loop()
    return handoff._returns(loop, loop._default_executor).pace(fn)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- the pace of a function


def test_a_function_is_cheap_after_a_window_of_quick_calls_and_not_before() -> None:
    pace = handoff._Pace()
    for _ in range(handoff.WINDOW - 1):
        pace.took(0.0)
    assert not pace.cheap
    pace.took(0.0)
    assert pace.cheap


def test_a_window_with_too_many_slow_calls_does_not_make_it_cheap() -> None:
    pace = handoff._Pace()
    slow = handoff.WINDOW // 16 + 1
    for i in range(handoff.WINDOW):
        pace.took(handoff.CHEAP_S * 2 if i < slow else 0.0)
    assert not pace.cheap


def test_a_stuck_call_sends_a_cheap_function_back_for_a_window_four_times_as_long() -> None:
    pace = handoff._Pace()
    for _ in range(handoff.WINDOW):
        pace.took(0.0)
    assert pace.cheap
    pace.took(handoff.STUCK_S * 2)
    assert not pace.cheap
    assert pace.window == handoff.WINDOW * 4
    for _ in range(handoff.WINDOW * 4 - 1):
        pace.took(0.0)
    assert not pace.cheap
    pace.took(0.0)
    assert pace.cheap


def test_the_window_stops_growing() -> None:
    pace = handoff._Pace()
    for _ in range(20):
        pace.demote()
    assert pace.window == handoff.MAX_WINDOW


def test_an_unhashable_callable_always_gets_a_thread_of_its_own(generous: None) -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, i: int) -> str:
            return threading.current_thread().name

    fn = Unhashable()

    async def main() -> list[Any]:
        return await _in_turns([handoff.in_thread(fn, i) for i in range(200)], 8)

    names = _on_loop(main)
    assert all(name.startswith("evalh-target") for name in names)
    assert len(set(names)) > 1  # never one lane


# ---------------------------------------------------------------------------- the lane


def test_calls_of_a_cheap_function_run_in_turn_on_one_thread(generous: None) -> None:
    def name(i: int) -> str:
        return threading.current_thread().name

    async def main() -> tuple[list[str], bool]:
        names = await _in_turns([handoff.in_thread(name, i) for i in range(handoff.WINDOW + 300)], 32)
        return names, _pace(name).cheap

    names, cheap = _on_loop(main)
    assert cheap
    assert len(set(names[-300:])) == 1  # once proven cheap: the lane, nothing else
    assert names[-1].startswith("evalh-target")


def test_a_function_cheap_for_a_thousand_calls_that_starts_blocking_blocks_no_one(generous: None) -> None:
    """Eight calls that each wait until all eight are running: on one thread they never
    would (the barrier breaks after 30 s and the call raises)."""
    n = 8
    barrier = threading.Barrier(n, timeout=30)
    names: list[str] = []

    def answer(i: int) -> int:
        if i >= 1000:
            barrier.wait()
            names.append(threading.current_thread().name)
        return i

    async def main() -> tuple[list[int], bool, bool]:
        cheap = await _in_turns([handoff.in_thread(answer, i) for i in range(1000)], n)
        was_cheap = _pace(answer).cheap
        blocking = await asyncio.gather(*(handoff.in_thread(answer, 1000 + i) for i in range(n)))
        return cheap + list(blocking), was_cheap, _pace(answer).cheap

    out, was_cheap, still_cheap = _on_loop(main)
    assert was_cheap  # the blocking calls started on the lane...
    assert out == list(range(1000 + n))
    assert len(set(names)) == n  # ...and each ended on a thread of its own
    assert not still_cheap  # the function is back on a thread per call


def test_with_the_real_thresholds_blocking_calls_after_cheap_ones_still_run_together() -> None:
    """The same as above with evalh's own thresholds: whether or not this machine finds the
    first thousand calls cheap, the eight that block all run at once."""
    n = 8
    barrier = threading.Barrier(n, timeout=30)

    def answer(i: int) -> int:
        if i >= 1000:
            barrier.wait()
        return i

    async def main() -> list[int]:
        cheap = await _in_turns([handoff.in_thread(answer, i) for i in range(1000)], n)
        return cheap + list(await asyncio.gather(*(handoff.in_thread(answer, 1000 + i) for i in range(n))))

    assert _on_loop(main) == list(range(1000 + n))


def test_a_function_that_always_blocks_is_never_found_cheap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call sleeps 10 ms, longer than `STUCK_S` on any machine: no window proves it,
    and no call goes to the lane."""
    import time

    serial: list[Any] = []
    monkeypatch.setattr(DaemonExecutor, "post_serial", lambda self, *args: serial.append(args))

    def naps(i: int) -> int:
        time.sleep(0.01)
        return i

    async def main() -> tuple[list[int], bool]:
        out = await _in_turns([handoff.in_thread(naps, i) for i in range(3 * handoff.WINDOW)], 32)
        return out, _pace(naps).cheap

    out, cheap = _on_loop(main)
    assert out == list(range(3 * handoff.WINDOW))
    assert not cheap
    assert serial == []


def test_a_hung_lane_call_holds_neither_the_calls_behind_it_nor_the_loops_end(generous: None) -> None:
    release = threading.Event()
    hung: list[threading.Thread] = []

    def answer(i: int) -> int:
        if i == -1:
            hung.append(threading.current_thread())
            release.wait(60)
        return i

    async def one(i: int) -> Any:
        try:
            async with asyncio.timeout(1):
                return await handoff.in_thread(answer, i)
        except TimeoutError:
            return "timed out"

    async def main() -> list[Any]:
        await _in_turns([handoff.in_thread(answer, i) for i in range(handoff.WINDOW)], 8)
        assert _pace(answer).cheap
        return list(await asyncio.gather(one(-1), *(one(i) for i in range(20))))

    try:
        out = _on_loop(main)  # returns with the hung call still running: nothing joined it
        assert out == ["timed out", *range(20)]
        [thread] = hung
        assert thread.is_alive()
    finally:
        release.set()
    thread.join(30)
    assert not thread.is_alive()  # a retired lane's thread ends after its call


def test_a_lane_call_runs_in_the_callers_context(generous: None) -> None:
    from evalh.context import CaseContext, case_scope, current

    def probe(i: int) -> tuple[str | None, str]:
        ctx = current()
        return (ctx.case_id if ctx else None), threading.current_thread().name

    async def one(i: int) -> tuple[str | None, str]:
        with case_scope(CaseContext("r", "s", f"c{i}", "default", 0), alone=False):
            return await handoff.in_thread(probe, i)

    async def main() -> list[tuple[str | None, str]]:
        return await _in_turns([one(i) for i in range(handoff.WINDOW + 100)], 16)

    out = _on_loop(main)
    assert [case for case, _ in out] == [f"c{i}" for i in range(handoff.WINDOW + 100)]
    assert len({name for _, name in out[-100:]}) == 1  # those ran on the lane


@pytest.mark.parametrize(("exc", "raised"), [(ValueError("bad"), ValueError), (SystemExit(0), SystemExit),
                                               (StopIteration(), RuntimeError)])
def test_a_lane_call_raises_what_the_call_raised(generous: None, exc: BaseException,
                                                 raised: type[BaseException]) -> None:
    def call(i: int) -> int:
        if i < 0:
            raise exc
        return i

    async def main() -> None:
        await _in_turns([handoff.in_thread(call, i) for i in range(handoff.WINDOW)], 8)
        assert _pace(call).cheap
        await handoff.in_thread(call, -1)

    with pytest.raises(raised):
        _on_loop(main)


def test_a_cheap_function_whose_calls_turn_slow_but_never_stuck_gets_threads_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls that each take a little longer than cheap but never long enough to be spilled
    (a cache that starts missing) would otherwise queue every other call behind them on the
    lane until the window ends (`concurrency` calls waiting each call's time in turn). Once
    more than a window's tolerance of them are slow, the function goes back to threads and
    the calls queued behind go with it: the last eight wait until all eight run at once."""
    monkeypatch.setattr(handoff, "CHEAP_S", 0.25)
    monkeypatch.setattr(handoff, "STUCK_S", 3600.0)  # the watch never spills here
    slow = handoff.WINDOW // 16 + 1
    n = 8
    barrier = threading.Barrier(n, timeout=20)

    def answer(i: int) -> int:
        if i >= 1000 + slow:
            barrier.wait()
        elif i >= 1000:
            time.sleep(0.3)  # slower than cheap, far from stuck
        return i

    async def main() -> tuple[list[int], bool, bool]:
        quick = await _in_turns([handoff.in_thread(answer, i) for i in range(handoff.WINDOW)], 8)
        was_cheap = _pace(answer).cheap
        later = await asyncio.gather(*(handoff.in_thread(answer, 1000 + i) for i in range(slow + n)))
        return quick + list(later), was_cheap, _pace(answer).cheap

    out, was_cheap, still_cheap = _on_loop(main)
    assert was_cheap
    assert out == [*range(handoff.WINDOW), *range(1000, 1000 + slow + n)]
    assert not still_cheap


def test_spill_gives_each_waiting_call_its_own_thread_and_retires_the_lane() -> None:
    pool = DaemonExecutor("t")
    started, release = threading.Event(), threading.Event()
    ran: list[tuple[int, str]] = []

    def first() -> None:
        started.set()
        release.wait(30)

    def later(i: int) -> None:
        ran.append((i, threading.current_thread().name))

    pool.post_serial("tag", first)
    assert started.wait(30)
    for i in range(5):
        pool.post_serial("tag", later, i)
    running = pool.lane_call()
    assert running is not None and running[1] == "tag"
    lane = pool._lane
    assert pool.spill() == 5
    assert pool._lane is None and pool.lane_call() is None
    for _ in range(300):
        if len(ran) == 5:
            break
        threading.Event().wait(0.1)
    assert sorted(i for i, _ in ran) == list(range(5))
    assert lane is not None and lane.name not in {name for _, name in ran}
    release.set()
    lane.join(30)
    assert not lane.is_alive()
    pool.shutdown()


def test_shutdown_never_waits_for_a_lane_call_that_hangs() -> None:
    pool = DaemonExecutor("t")
    started, release = threading.Event(), threading.Event()

    def hangs() -> None:
        started.set()
        release.wait(60)

    pool.post_serial(None, hangs)
    assert started.wait(30)
    pool.shutdown(wait=True)  # returns at once: the lane is told to stop, not joined
    with pytest.raises(RuntimeError):
        pool.post_serial(None, hangs)
    release.set()


def test_a_spill_that_meets_shutdown_leaves_its_calls_on_the_lane_and_raises_nothing() -> None:
    """The loop's watch may spill while asyncio's end shuts the executor down on another
    thread: the calls it has not moved yet stay on the retired lane, which runs them and
    stops (as `shutdown` says of a lane's queue), and the watch's callback raises nothing."""
    pool = DaemonExecutor("t")
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def first() -> None:
        started.set()
        release.wait(30)

    pool.post_serial("tag", first)
    assert started.wait(30)
    for i in range(3):
        pool.post_serial("tag", ran.append, i)
    lane = pool._lane
    real_post = pool.post

    def post_after_shutdown(fn: Any, /, *args: Any) -> None:  # shutdown lands mid-spill
        pool.shutdown(wait=False)
        real_post(fn, *args)

    pool.post = post_after_shutdown  # type: ignore[method-assign]
    pool.spill()
    release.set()
    assert lane is not None
    lane.join(30)
    assert not lane.is_alive()
    assert ran == [0, 1, 2]


def test_a_lane_whose_thread_cannot_start_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the process's thread limit (hung calls keep their threads) the lane's thread may
    fail to start: that call fails as a thread per call would, and the next serial call
    gets a lane that runs, rather than joining the queue of a thread that never ran."""
    from evalh.core.run import workers

    pool = DaemonExecutor("t")
    real_start = workers._Lane.start

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(workers._Lane, "start", refuse)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        pool.post_serial("tag", print)
    monkeypatch.setattr(workers._Lane, "start", real_start)
    done = threading.Event()
    pool.post_serial("tag", done.set)
    assert done.wait(30)
    pool.shutdown()


# ---------------------------------------------------------------------------- through a real run


def _run(cfg: Path, runs: Path, *args: str) -> tuple[Any, dict[str, Any] | None]:
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    docs = sorted(runs.glob("*.json"))
    return result, load(docs[0]) if docs else None


def test_a_run_whose_target_starts_blocking_after_a_thousand_cases_keeps_them_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generous: None,
) -> None:
    """The last 8 calls wait until all 8 run at once (the barrier breaks, and the case
    errors, if they ran one after another on the lane)."""
    monkeypatch.setenv("CHEAP_FOR", "1000")
    monkeypatch.setenv("BARRIER", "8")
    cfg = write_project(tmp_path, cases=1008, target="cheap_then_together", concurrency=8, timeout_s=60)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1")
    assert doc is not None, result.output
    cases = doc["suites"]["s"]["cases"]
    assert len(cases) == 1008
    assert [r for r in cases if r["error"]] == []


def test_a_run_whose_target_hangs_once_records_that_case_errored_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generous: None,
) -> None:
    monkeypatch.setenv("HANG_AT", "500")
    monkeypatch.setenv("HANG_S", "30")
    cfg = write_project(tmp_path, cases=600, target="cheap_then_hangs", concurrency=8, timeout_s=2)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1")
    assert doc is not None, result.output
    assert result.exit_code == 1  # an errored case: a red gate
    errored = [r for r in doc["suites"]["s"]["cases"] if r["status"] == "errored"]
    assert [r["error"] for r in errored] == [{"type": "TimeoutError", "message": "target did not answer within 2s"}]
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 600


# ---------------------------------------------------------------------------- the loop's end


@pytest.mark.parametrize("lane", [False, True], ids=["thread", "lane"])
def test_a_call_that_returns_after_its_loop_closed_lets_the_loop_be_collected(
    generous: None, lane: bool,
) -> None:
    """Its outcome is dropped, and nothing keeps the closed loop alive: a test suite (or a
    notebook) that runs many loops in one process must not keep one per late call."""
    import gc
    import weakref

    release = threading.Event()
    late: list[threading.Thread] = []

    def answer(i: int) -> int:
        if i == -1:
            late.append(threading.current_thread())
            release.wait(60)
        return i

    async def main() -> weakref.ref[asyncio.AbstractEventLoop]:
        if lane:
            await _in_turns([handoff.in_thread(answer, i) for i in range(handoff.WINDOW)], 8)
            assert _pace(answer).cheap
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await handoff.in_thread(answer, -1)
        return weakref.ref(asyncio.get_running_loop())

    try:
        loop = _on_loop(main)
    finally:
        release.set()
    [thread] = late
    thread.join(30)
    assert not thread.is_alive()
    gc.collect()
    assert loop() is None


def test_a_function_that_holds_its_loop_lets_the_loop_be_collected(generous: None) -> None:
    """A bound method of an object that keeps its loop (a client made on it): the pace kept
    for the function must not keep that loop, and all it holds, for the rest of the process
    (a test suite runs hundreds of loops in one process)."""
    import gc
    import weakref

    class Client:
        def __init__(self) -> None:
            self.loop = asyncio.get_running_loop()

        def answer(self, i: int) -> int:
            return i

    async def main() -> weakref.ref[asyncio.AbstractEventLoop]:
        client = Client()
        await _in_turns([handoff.in_thread(client.answer, i) for i in range(handoff.WINDOW + 8)], 8)
        assert _pace(client.answer).cheap
        return weakref.ref(asyncio.get_running_loop())

    loop = _on_loop(main)
    gc.collect()
    assert loop() is None
