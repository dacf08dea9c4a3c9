"""A wait after a 429 is never shorter than its `retry-after`, however busy the machine is
(issue 27, item 13): every wait runs to a deadline on a monotonic clock, taken when the 429
arrived, and sleeps again until the deadline has passed. Tested with a fake clock whose
sleeps end early, never with timing."""

from __future__ import annotations

import asyncio

import pytest

from evalh.providers.base import ProviderError
from evalh.providers.resilience import (
    EndpointLimits,
    RetryPolicy,
    TransientError,
    call_with_retries,
)


class EarlyClock:
    """Monotonic seconds that move only when slept or when `busy` says so; the first
    `early` sleeps end at a third of what was asked (an early wake-up)."""

    def __init__(self, early: int = 1) -> None:
        self.now = 1000.0
        self.early = early
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds / 3 if len(self.sleeps) <= self.early else seconds
        await asyncio.sleep(0)


def _calls(clock: EarlyClock, failures: list[TransientError], busy_s: float = 0.0) -> tuple[list[float], object]:
    """When each attempt started, for an attempt failing with `failures` then succeeding;
    `busy_s` passes between a failure and its being handled (a loaded machine)."""
    started: list[float] = []

    async def attempt() -> str:
        started.append(clock())
        if len(started) <= len(failures):
            clock.now += busy_s
            raise failures[len(started) - 1]
        return "ok"

    limits = EndpointLimits("x", max_in_flight=4, clock=clock, sleep=clock.sleep)
    result = asyncio.run(call_with_retries(attempt, policy=RetryPolicy(max_retries=3, backoff_base_s=0.0),
                                           limits=limits, what="POST x"))
    return started, result


@pytest.mark.parametrize("early", [1, 3])
def test_a_retry_waits_its_whole_retry_after_when_sleeps_end_early(early: int) -> None:
    clock = EarlyClock(early)
    started, result = _calls(clock, [TransientError("429", status=429, retry_after=2.0),
                                     TransientError("429", status=429, retry_after=0.5)])
    assert result == "ok" and len(started) == 3
    assert started[1] - started[0] >= 2.0 and started[2] - started[1] >= 0.5, started
    assert len(clock.sleeps) > 2  # it did sleep again after waking early


def test_the_wait_counts_from_the_429_not_from_when_it_was_handled() -> None:
    """Busy for 0.75 s between the reply and its handling: still 2 s from the 429 to the
    retry, not less (nor 2.75 s)."""
    clock = EarlyClock(early=0)
    started, _ = _calls(clock, [TransientError("429", status=429, retry_after=2.0)], busy_s=0.75)
    assert started[1] - started[0] == pytest.approx(2.75)  # 0.75 s busy after it was sent + 2 s
    assert clock.sleeps == [pytest.approx(2.0)]


def test_requests_held_by_a_retry_after_pause_wait_it_out_when_sleeps_end_early() -> None:
    clock = EarlyClock(early=2)
    limits = EndpointLimits("x", max_in_flight=4, clock=clock, sleep=clock.sleep)
    limits.on_rate_limited(epoch=0, retry_after=3.0)
    paused_until = clock() + 3.0

    async def held() -> float:
        async with limits.slot():
            return clock()

    assert asyncio.run(held()) >= paused_until
    assert len(clock.sleeps) >= 3


def test_a_retry_after_beyond_the_limit_still_fails_at_once() -> None:
    clock = EarlyClock()
    with pytest.raises(ProviderError, match="asked to wait 500 s"):
        _calls(clock, [TransientError("429", status=429, retry_after=500.0)])
    assert clock.sleeps == []
