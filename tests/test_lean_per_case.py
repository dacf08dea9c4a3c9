"""Per-case costs cut on the lean path (issue 33) without changing what is written or how a
case behaves: the time stamp every result gets, the dataset digest every run records, and
the hand-off of a sync call to its thread (`evalh.handoff.in_thread`)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from evalh import store
from evalh.datasets import Dataset, load_dataset


def _reference(ns: int) -> str:
    """`now_iso` as it was written before: datetime's ISO text, to the millisecond."""
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)  # exact, no float
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize("ns", [
    1_796_000_000_000_000_000,  # a whole second
    1_796_000_000_123_456_789,
    1_796_000_059_999_000_000,  # the last millisecond of a minute
    1_796_000_060_000_000_000,  # and the next second: the cached text is replaced
    1_796_000_060_001_000_000,
    1_796_086_399_999_999_000,  # a day's last microsecond
    1_796_086_400_000_000_000,
])
def test_now_iso_writes_the_text_datetime_wrote(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr(store.time, "time_ns", lambda: ns)
    assert store.now_iso() == _reference(ns)
    assert store.now_iso() == _reference(ns)  # from the cached second too


def test_seconds_in_turn_each_get_their_own_text(monkeypatch: pytest.MonkeyPatch) -> None:
    stamps = []
    for ns in (1_796_000_000_999_000_000, 1_796_000_001_000_000_000, 1_796_000_000_500_000_000):
        monkeypatch.setattr(store.time, "time_ns", lambda ns=ns: ns)
        stamps.append(store.now_iso())
    assert stamps == [_reference(1_796_000_000_999_000_000), _reference(1_796_000_001_000_000_000),
                      _reference(1_796_000_000_500_000_000)]


def test_the_digest_loading_computes_is_the_one_the_cases_give(tmp_path: Path) -> None:
    """A loaded dataset's digest comes from the models its loading validated: the SHA-256
    over every case's digest in file order, as it is computed from the cases themselves."""
    rows = [{"id": "a", "input": {"q": 1}, "expected": "x"},
            {"id": "b", "input": "two", "metadata": {"split": "dev", "tags": ["t"], "extra": 3}},
            {"id": "c", "input": [1, 2.5, None], "expected": {"k": "é"}}]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_dataset(path)
    expected = hashlib.sha256()
    for case in loaded.cases:
        expected.update(case.digest.encode() + b"\n")
    assert loaded.sha256 == expected.hexdigest()
    assert Dataset(loaded.path, loaded.cases).sha256 == loaded.sha256  # computed again, the same


# ---------------------------------------------------------------------------- evalh.handoff.in_thread


def _on_loop(main: Any) -> Any:
    """`main()` on a loop whose default executor is the runner's (as `Runner.run` sets it)."""
    from evalh.core.run.workers import DaemonExecutor

    async def wrapped() -> Any:
        asyncio.get_running_loop().set_default_executor(DaemonExecutor("evalh-target"))
        return await main()

    return asyncio.run(wrapped())


def test_in_thread_runs_on_a_worker_thread_in_the_callers_context() -> None:
    from evalh.context import CaseContext, case_scope, current
    from evalh.handoff import in_thread

    def probe(x: int) -> tuple[int, str, str | None]:
        ctx = current()
        return x * 2, threading.current_thread().name, ctx.case_id if ctx else None

    async def main() -> Any:
        with case_scope(CaseContext("r", "s", "c7", "default", 0), alone=False):
            return await in_thread(probe, 21)

    doubled, thread, case_id = _on_loop(main)
    assert (doubled, case_id) == (42, "c7")
    assert thread.startswith("evalh-target")


@pytest.mark.parametrize(("exc", "raised"), [(ValueError("bad"), ValueError), (SystemExit(0), SystemExit),
                                               (StopIteration(), RuntimeError)])
def test_in_thread_raises_what_the_call_raised(exc: BaseException, raised: type[BaseException]) -> None:
    """Raised to the caller, where the runner makes it the case's error (a StopIteration,
    which a future cannot hold, as a RuntimeError naming it)."""
    from evalh.handoff import in_thread

    def fails() -> None:
        raise exc

    async def main() -> None:
        await in_thread(fails)

    with pytest.raises(raised):
        _on_loop(main)


def test_a_call_abandoned_by_its_caller_finishes_quietly_after_the_loop_closed() -> None:
    """A timed-out case leaves its sync call running; when it returns the run may be over
    and its loop closed: nothing is raised on the thread, nothing waits for it."""
    from evalh.handoff import in_thread

    release = threading.Event()
    threads: list[threading.Thread] = []
    errors: list[Any] = []
    hook = threading.excepthook
    threading.excepthook = errors.append

    def hangs() -> str:
        threads.append(threading.current_thread())
        release.wait(30)
        return "late"

    async def main() -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.01):
                await in_thread(hangs)

    try:
        _on_loop(main)  # the loop is closed when this returns, its executor shut down
        release.set()
        [thread] = threads
        thread.join(30)  # a shut-down pool's thread ends after its call, outcome handed back
        assert not thread.is_alive()
    finally:
        threading.excepthook = hook
    assert errors == []


def test_in_thread_with_another_executor_is_to_thread() -> None:
    from evalh.handoff import in_thread

    async def main() -> str:
        return await in_thread(lambda: threading.current_thread().name)

    assert asyncio.run(main()).startswith("asyncio")


def test_calls_returning_together_each_get_their_own_outcome() -> None:
    """Outcomes queued while the loop is busy are settled together: each to its own caller,
    results and errors alike."""
    from evalh.handoff import in_thread

    def answer(i: int) -> int:
        if i % 7 == 3:
            raise ValueError(f"case {i}")
        return i * i

    async def one(i: int) -> Any:
        try:
            return await in_thread(answer, i)
        except ValueError as exc:
            return str(exc)

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(one(i) for i in range(300))))

    assert _on_loop(main) == [f"case {i}" if i % 7 == 3 else i * i for i in range(300)]


def test_a_loop_that_handed_calls_off_is_freed_when_it_is_done() -> None:
    """What `in_thread` keeps per loop (queued outcomes, the functions' paces) must not keep
    the loop alive: a process running many runs (`evalh.api`, a test suite) would keep
    every loop it ever ran, with its executor and the functions it called."""
    import gc
    import weakref

    from evalh.handoff import in_thread

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> int:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return int(await in_thread(lambda: 1))

    for _ in range(3):
        assert _on_loop(main) == 1
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]
