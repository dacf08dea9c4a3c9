"""The machinery every provider call goes through: retries and per-endpoint limits.

* `call_with_retries` retries a one-attempt coroutine on `TransientError` (429, 5xx, 529,
  timeouts, dropped connections, malformed replies) with exponential backoff and full
  jitter, honouring the server's `retry-after-ms` / `retry-after` (seconds or an HTTP date)
  when it sends one. `PermanentError` (400, 401, 404, …) fails at once. What still fails
  after `max_retries` retries raises `ProviderError` with the last error, its status and
  the number of attempts.
* `EndpointLimits` bounds the requests in flight to one endpoint (provider + base URL)
  and adapts the bound (AIMD): a 429 halves it (never below 1) and pauses new requests
  for the `retry-after` the server asked for; each success grows it back by one, up to
  the configured `max_in_flight`. Optional requests- and tokens-per-minute limits use
  `aiolimiter`. `describe()` is what the run document records under `limits`.
* Waiting is bounded: a `retry-after` longer than `max_wait_s` (`[evalh] max_retry_wait_s`)
  fails the request that got it at once, and so does every request that would have to
  wait out that pause: `ProviderError` saying so, never a case stuck until its timeout.
  Every wait is marked with `waits.waiting()`, so it is left out of the case's latency and
  does not consume its per-case timeout.

Model providers and the `http` target share both, so a flaky endpoint is handled the same
way whoever calls it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from evalh.providers.base import ProviderError
from evalh.providers.waits import waiting

T = TypeVar("T")

DEFAULT_MAX_WAIT_S = 120.0
"""The longest evalh waits for an endpoint's rate limit (`[evalh] max_retry_wait_s`)."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""Statuses worth another attempt; any other 5xx is retried too (see `is_retryable`)."""


class TransientError(Exception):
    """One attempt failed in a way another attempt may not (rate limit, overload, timeout)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class WaitTooLong(Exception):
    """The endpoint is paused for longer than its `max_wait_s`: the request is not sent."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(wait_s)
        self.wait_s = wait_s


class PermanentError(Exception):
    """One attempt failed in a way retrying cannot fix (bad request, bad key, unknown model)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait as the server asked: `retry-after-ms`, else `retry-after` as seconds
    or as an HTTP date. None when absent or unreadable; never negative."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random | None = None) -> float:
        """Wait before retry number `retry` (0-based): the server's `retry-after` when it
        gave one, else full jitter over `min(cap, base × 2^retry)`."""
        if retry_after is not None:
            return retry_after
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**retry))
        return (rng or random).uniform(0.0, ceiling)


class EndpointLimits:
    """Adaptive in-flight bound plus optional rpm/tpm limits for one endpoint.

    Shared by every client that reaches the same provider and base URL in a run. The first
    config to reach an endpoint sets its `max_in_flight`, `rpm` and `tpm`.
    """

    def __init__(
        self, name: str, max_in_flight: int, rpm: int | None = None, tpm: int | None = None,
        max_wait_s: float = DEFAULT_MAX_WAIT_S, *, clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.name = name
        self.clock = clock
        """Monotonic seconds: the clock of every deadline (`retry-after`, backoff)."""
        self.sleep = sleep
        """How a wait is slept; a wait re-sleeps until its deadline on `clock` has passed."""
        self.max_wait_s = max_wait_s
        """A pause longer than this fails the requests that meet it instead of holding them."""
        self.ceiling = max_in_flight
        self.current = max_in_flight
        self.min_reached = max_in_flight
        self.rpm = rpm
        self.tpm = tpm
        self.requests = 0
        self.rate_limited = 0
        """429 replies seen."""
        self.retries = 0
        self.failures = 0
        """Calls that still failed after their retries."""
        self.in_flight = 0
        self.peak = 0
        """Most requests ever in flight at once."""
        self._epoch = 0
        self._pause_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._rpm_limiter: Any = None
        self._tpm_limiter: Any = None

    async def _rate(self, tokens: int) -> None:
        if self.rpm is None and self.tpm is None:
            return
        from aiolimiter import AsyncLimiter

        if self.rpm is not None:
            if self._rpm_limiter is None:
                self._rpm_limiter = AsyncLimiter(self.rpm, 60)
            await self._rpm_limiter.acquire(1)
        if self.tpm is not None:
            if self._tpm_limiter is None:
                self._tpm_limiter = AsyncLimiter(self.tpm, 60)
            # A request larger than the whole minute's allowance still goes, alone.
            await self._tpm_limiter.acquire(max(1, min(tokens, self.tpm)))

    @asynccontextmanager
    async def slot(self, tokens: int = 1) -> AsyncIterator[int]:
        """Hold one in-flight slot (waiting out any retry-after pause). Yields the epoch the
        request started in, which `on_rate_limited` uses to halve once per burst."""
        if (self.rpm is not None or self.tpm is not None or self.in_flight >= self.current
                or self._pause_until > self.clock()):
            await self._wait_for_slot(tokens)
        # else a slot is free at once: no wait to mark (marking one stops the case's clock and
        # moves its timeout twice, for nothing)
        # No await between the check and the increment: the slot is ours.
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.requests += 1
        try:
            yield self._epoch
        finally:
            # Synchronous, so a cancelled request can never keep its slot.
            self.in_flight -= 1
            self._wake()

    async def _wait_for_slot(self, tokens: int) -> None:
        """Wait, marked as such, until a slot is free: the rate limits, any retry-after pause,
        then room under the in-flight bound."""
        with waiting():
            await self._rate(tokens)
            while True:
                pause = self._pause_until - self.clock()
                if pause > self.max_wait_s:
                    raise WaitTooLong(pause)
                if pause > 0:  # re-checked after the sleep: a sleep may end early
                    await self.sleep(pause)
                    continue
                if self.in_flight < self.current:
                    break
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                try:
                    await waiter
                finally:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)

    def _wake(self) -> None:
        """Wake as many waiters as there are free slots; they re-check on waking."""
        free = self.current - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def on_success(self) -> None:
        """Additive increase: one more in flight, up to the ceiling (waiters are woken when
        the successful request releases its slot)."""
        if self.current < self.ceiling:
            self.current += 1

    def on_rate_limited(self, epoch: int, retry_after: float | None) -> None:
        """A 429: halve the bound once per burst (requests started before the last halving
        do not halve it again) and pause new requests for `retry-after`."""
        self.rate_limited += 1
        if epoch == self._epoch:
            self._epoch += 1
            self.current = max(1, self.current // 2)
            self.min_reached = min(self.min_reached, self.current)
        if retry_after:
            self._pause_until = max(self._pause_until, self.clock() + retry_after)

    def describe(self) -> dict[str, Any]:
        """What the run document records under `limits[name]`."""
        return {
            "max_in_flight": self.ceiling,
            "in_flight_limit": self.current,
            "in_flight_min": self.min_reached,
            "in_flight_peak": self.peak,
            "rpm": self.rpm,
            "tpm": self.tpm,
            "max_retry_wait_s": self.max_wait_s,
            "requests": self.requests,
            "rate_limited": self.rate_limited,
            "retries": self.retries,
            "failures": self.failures,
        }


async def wait_until(deadline: float, clock: Callable[[], float],
                     sleep: Callable[[float], Awaitable[None]]) -> None:
    """Sleep until `deadline` on `clock` has passed, however early a sleep returns (a busy
    machine, a coarse timer): a wait after a 429 is never shorter than its `retry-after`."""
    while (left := deadline - clock()) > 0:
        await sleep(left)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    limits: EndpointLimits,
    what: str,
    tokens: int = 1,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    clock: Callable[[], float] | None = None,
) -> T:
    """Run `attempt` under `limits`, retrying transient failures per `policy`. The wait
    before a retry runs to a deadline taken when the failure arrived, on `clock`, slept
    with `sleep` (by default the limits' own) until it has passed.

    Raises `ProviderError` (with `status`, `attempts`, `retryable`) when a permanent error
    occurs or the last attempt fails; its message names `what` and the last error.
    """
    last: TransientError | None = None
    sleep = sleep or limits.sleep
    clock = clock or limits.clock
    failed_at = 0.0
    total = policy.max_retries + 1

    def too_long(wait_s: float, attempts: int) -> ProviderError:
        limits.failures += 1
        return ProviderError(
            f"{what}: rate limited: the server asked to wait {wait_s:.0f} s, longer than "
            f"max_retry_wait_s = {limits.max_wait_s:g} s ([evalh] in evalh.toml)",
            status=429, attempts=attempts, retryable=False,
        )

    for n in range(total):
        if n:
            limits.retries += 1
        try:
            async with limits.slot(tokens) as epoch:
                try:
                    result = await attempt()
                except TransientError as exc:
                    failed_at = clock()  # the wait counts from here, not from after the slot
                    last = exc
                    if exc.status == 429:
                        limits.on_rate_limited(epoch, exc.retry_after)
                    if exc.retry_after is not None and exc.retry_after > limits.max_wait_s:
                        raise too_long(exc.retry_after, n + 1) from None
                except PermanentError as exc:
                    limits.failures += 1
                    raise ProviderError(
                        f"{what}: {exc}", status=exc.status, attempts=n + 1, retryable=False
                    ) from None
                else:
                    limits.on_success()
                    return result
        except WaitTooLong as exc:  # not sent: the endpoint is paused past the limit
            raise too_long(exc.wait_s, n) from None
        if n + 1 < total:
            with waiting():
                await wait_until(failed_at + policy.delay(n, last.retry_after if last else None), clock, sleep)
    limits.failures += 1
    assert last is not None
    noun = "attempt" if total == 1 else "attempts"
    raise ProviderError(
        f"{what}: failed after {total} {noun}: {last}", status=last.status, attempts=total
    )
