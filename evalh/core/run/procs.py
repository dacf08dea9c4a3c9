"""One suite's cases over several worker processes (`processes = N`, `evalh run --procs N`).

An event loop uses one core, and a model target's client can cost more CPU per request than
that core has at the suite's concurrency (the `anthropic` SDK ~1.4 ms a request: 64 in flight
at 50 ms replies is 1,280 requests a second, 1.8 cores). With `processes = N` the runner
forks N workers when the suite starts — after its scorers' `prepare` hooks ran (a judge's
calibration is done once, by the run, and the workers inherit it) — each with its own loop,
its own provider clients and `concurrency / N` of the suite's cases in flight. The run's own
process stays the one that decides:

- it expands and shuffles the suite's (case, arm, attempt) items with the run's seed as for
  one process, and hands them out in that order, a few at a time, to the worker with room;
  a worker runs `Runner.run_item` for each (the same produce → score → status, the same
  per-attempt seed from `evalh.core.run.shuffle`) and sends the result back;
- every result is journaled, kept, counted and shown by the run's process, as it arrives
  (`Runner._record`), so the journal, `--resume` and the run document are a single process's:
  the same cases and statuses in the same document;
- the budget is the run's: a worker spends on an unlimited budget of its own and sends what
  it spent (cost, tokens, unpriced replies; its judges' calls too) with each result, which
  the run's budget books; no item is handed out once the budget is exhausted, so at most the
  suite's concurrency is in flight past it, as with one process;
- an endpoint's `max_in_flight`, `rpm` and `tpm` are shared out among the workers (each gets
  its share, at least 1), and their counters are summed into the run's `limits` at the end;
  a paced target (`pace_ms`) paces each worker at N × `pace_ms`, which keeps the suite's rate;
- a worker that dies (killed, a crash in native code) turns the items it was running into
  `errored` results (`WorkerDied`, naming the signal or exit status), never a pass; the other
  workers take the rest; when every worker is gone the run fails (`WorkersLost`) with the
  results it has, and `--resume` runs what is left;
- an error that stops a single-process run (a refusal raised by `run_item`) is sent back and
  raised by the run's process, as the same exception where it can be.

Ctrl-C or SIGTERM: the workers ignore SIGINT and are killed when the run's process stops;
what they had in flight is not journaled and a resume runs it again, as with one process.
A worker whose run's process dies sees its socket close and exits.

Needs `os.fork` (Linux, macOS): elsewhere `processes > 1` is refused before the suite starts.
A suite with a batched target (`batch = true`) or a stored run's outputs (rejudge) runs in
the run's process whatever `processes` says (`spreads`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import socket
import struct
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from evalh.errors import EvalhError
from evalh.models import CaseResult, ErrorInfo

if TYPE_CHECKING:
    from evalh.core.run.plan import ArmPlan, RunPlan, SuitePlan
    from evalh.models import Case


class WorkItem(Protocol):
    """A (case, arm, attempt) of the runner (`evalh.core.run.items.WorkItem`)."""

    @property
    def case(self) -> Case: ...
    @property
    def arm(self) -> ArmPlan: ...
    @property
    def attempt(self) -> int: ...


class Runner(Protocol):
    """What the worker processes need of `evalh.core.run.runner.Runner` (which imports this
    module: no import back)."""

    plan: RunPlan
    stop_reason: str | None

    async def run_item(self, suite: SuitePlan, item: Any) -> CaseResult: ...
    def ask_git(self) -> None: ...
    def _record(self, suite: SuitePlan, result: CaseResult) -> None: ...
    def _facts(self, case: Case) -> tuple[str, dict[str, Any]]: ...

_HEAD = struct.Struct("!I")


class WorkersLost(EvalhError):
    """Every worker process of a suite died: the run stops, failed, with the results it has."""

    exit_code = 1


def shares(total: int, n: int) -> list[int]:
    """`total` split into `n` shares as even as can be, each at least 1."""
    return [max(1, total // n + (k < total % n)) for k in range(n)]


def process_count(suite: SuitePlan, items: int) -> int:
    """How many workers a suite gets: its `processes`, at most one per case in flight."""
    return max(1, min(getattr(suite, "processes", 1), suite.concurrency, items))


def check_fork() -> None:
    if not hasattr(os, "fork"):
        raise EvalhError("processes > 1 needs os.fork (Linux, macOS): run with one process here")


# ---------------------------------------------------------------------------- frames


async def _read(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(_HEAD.size)
        return await reader.readexactly(_HEAD.unpack(head)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def _frame(payload: bytes) -> bytes:
    return _HEAD.pack(len(payload)) + payload


# ---------------------------------------------------------------------------- the worker side


class _SharedLimits(dict[str, Any]):
    """A worker's `services.limits`: an endpoint's limits, when made, get this worker's share
    of `max_in_flight`, `rpm` and `tpm`; the configured values are kept for the report."""

    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.k, self.n = k, n
        self.configured: dict[str, dict[str, Any]] = {}

    def _share(self, value: int) -> int:
        return shares(value, self.n)[self.k]

    def __setitem__(self, name: str, limits: Any) -> None:
        ceiling = getattr(limits, "ceiling", None)
        if isinstance(ceiling, int) and name not in self.configured:
            self.configured[name] = {"max_in_flight": ceiling, "rpm": limits.rpm, "tpm": limits.tpm}
            limits.ceiling = limits.current = limits.min_reached = self._share(ceiling)
            if limits.rpm:
                limits.rpm = self._share(limits.rpm)
            if limits.tpm:
                limits.tpm = self._share(limits.tpm)
        super().__setitem__(name, limits)

    def report(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, limits in self.items():
            describe = getattr(limits, "describe", None)
            if describe is not None and name in self.configured:
                out[name] = {**describe(), "configured": self.configured[name]}
        return out


def _worker_services(runner: Runner, suite: SuitePlan, k: int, n: int) -> tuple[_SharedLimits, list[Any]]:
    """The worker's copy of the run's services: its own budget (what it spends is sent back),
    provider clients, limits (its share) and pacers (N × pace_ms). The parent's clients are
    kept referenced, never used or closed: they belong to the parent's loop."""
    from evalh.services import Budget

    services = runner.plan.services
    kept = [services.providers, services.limits, services.pacers, services.budget]
    from evalh.mock import MockProvider

    mocks = {key: v for key, v in services.providers.items() if isinstance(v, MockProvider)}
    services.providers = dict(mocks)  # a mock server the run started keeps serving from its process
    limits = _SharedLimits(k, n)
    services.limits = limits
    services.pacers = {}
    services.budget = Budget()
    from evalh.targets.pacing import Pacer

    for arm in suite.arms:
        config = getattr(getattr(arm.source, "target", None), "config", None)
        pace_ms = getattr(config, "pace_ms", None)
        if config is not None and pace_ms:
            services.pacers[id(config)] = Pacer(pace_ms * n)
    return limits, kept


def _spent(budget: Any, sent: list[float]) -> list[float]:
    now = [budget.cost_usd, float(budget.tokens), float(budget.unpriced)]
    delta = [a - b for a, b in zip(now, sent, strict=True)]
    sent[:] = now
    return delta


async def _worker_loop(runner: Runner, suite: SuitePlan, items: Sequence[WorkItem], sock: socket.socket,
                       k: int, n: int) -> None:
    from evalh.core.run.workers import DaemonExecutor

    loop = asyncio.get_running_loop()
    loop.set_default_executor(DaemonExecutor("evalh-target"))
    limits, kept = _worker_services(runner, suite, k, n)
    reader, writer = await asyncio.open_connection(sock=sock)
    budget = runner.plan.services.budget
    sent = [0.0, 0.0, 0.0]
    running: set[asyncio.Task[None]] = set()

    async def one(i: int) -> None:
        try:
            result = await runner.run_item(suite, items[i])
        except BaseException as exc:  # what stops a one-process run stops the run
            try:
                blob = pickle.dumps(exc)
            except Exception:
                blob = pickle.dumps(EvalhError(f"{type(exc).__name__}: {exc}", exit_code=1))
            writer.write(_frame(b"F" + blob))
            return
        head = orjson.dumps({"i": i, "spent": _spent(budget, sent)})
        writer.write(_frame(b"R" + head + b"\n" + result.model_dump_json().encode()))

    while (frame := await _read(reader)) is not None:
        if frame[:1] == b"D":  # no more items: finish those in flight, report, end
            break
        for i in orjson.loads(frame[1:]):
            task = loop.create_task(one(i))
            running.add(task)
            task.add_done_callback(running.discard)
    else:  # the run's process is gone: nobody to send results to
        return
    if running:
        await asyncio.gather(*running, return_exceptions=True)
    writer.write(_frame(b"E" + orjson.dumps({"limits": limits.report(), "spent": _spent(budget, sent)})))
    await writer.drain()
    writer.close()
    del kept


def _worker_main(runner: Runner, suite: SuitePlan, items: Sequence[WorkItem], sock: socket.socket,
                 k: int, n: int) -> None:
    """In the forked child: its own loop on a new thread (the forking thread was inside the
    parent's loop, which the child must not run), then `os._exit` — nothing of the parent's
    state is torn down or flushed twice."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's process decides on Ctrl-C
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

        failed: list[BaseException] = []

        def main() -> None:
            try:
                asyncio.run(_worker_loop(runner, suite, items, sock, k, n))
            except BaseException as exc:  # the run's process sees this worker die: status 70
                failed.append(exc)

        thread = threading.Thread(target=main, name=f"evalh-proc-{k}")
        thread.start()
        thread.join()
        if failed:
            code = 70
    except BaseException:
        code = 70
    finally:
        os._exit(code)


# ---------------------------------------------------------------------------- the run's side


@dataclass
class _Worker:
    k: int
    pid: int
    room: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    in_flight: set[int] = field(default_factory=set)
    limits: dict[str, dict[str, Any]] = field(default_factory=dict)
    done: bool = False
    told: bool = False
    """Told there are no more items ("D")."""


def _fork(runner: Runner, suite: SuitePlan, items: Sequence[WorkItem], k: int, n: int,
          parent_ends: list[socket.socket]) -> tuple[int, socket.socket]:
    ours, theirs = socket.socketpair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork of a threaded process
        pid = os.fork()
    if pid == 0:  # the worker
        for other in [*parent_ends, ours]:
            other.close()
        _worker_main(runner, suite, items, theirs, k, n)
    theirs.close()
    return pid, ours


def _death(pid: int) -> str:
    try:
        done, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "exited"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(sig).name}"
        return f"was killed by signal {sig}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def _book(budget: Any, spent: list[float]) -> None:
    cost, tokens, unpriced = spent
    budget.cost_usd += cost
    budget.tokens += int(tokens)
    budget.unpriced += int(unpriced)


def _merge_limits(services: Any, workers: list[_Worker]) -> None:
    """Each worker's counters of an endpoint, summed into the run's limits."""
    from evalh.providers.resilience import EndpointLimits

    names = {name for w in workers for name in w.limits}
    for name in sorted(names):
        reports = [w.limits[name] for w in workers if name in w.limits]
        conf = reports[0]["configured"]
        lim = services.limits.get(name)
        if lim is None:
            lim = services.limits[name] = EndpointLimits(
                name, conf["max_in_flight"], conf["rpm"], conf["tpm"], max_wait_s=reports[0]["max_retry_wait_s"])
            lim.current = min(lim.ceiling, sum(r["in_flight_limit"] for r in reports))
            lim.min_reached = min(lim.ceiling, sum(r["in_flight_min"] for r in reports))
        lim.peak = max(lim.peak, sum(r["in_flight_peak"] for r in reports))
        for counter in ("requests", "rate_limited", "retries", "failures"):
            setattr(lim, counter, getattr(lim, counter) + sum(r[counter] for r in reports))


def warm_imports(suite: SuitePlan) -> None:
    """Import the model clients the suite's targets and judges will load on their first call
    (`import anthropic` alone takes ~1 s), once in the run's process rather than in each worker.
    `run_plan` calls it before the run starts: the import is not part of the cases phase, and
    the SDK's objects are among those the run keeps off the collector's books (evalh.gcpause).
    So are the modules a model target's first case imports (the provider layer, the pacing),
    and the certificate bundle of a client that speaks TLS."""
    import importlib

    configs = [getattr(getattr(arm.source, "target", None), "config", None) for arm in suite.arms]
    for scorer in suite.scorers:
        configs.extend(getattr(scorer, "judge_configs", []))
    kinds = {getattr(c, "kind", None) or getattr(c, "provider", None) for c in configs}
    modules = {"anthropic": ("aiohttp", "anthropic", "evalh.providers.anthropic"),
               "openai": ("aiohttp", "evalh.providers.openai")}
    for kind in sorted(k for k in kinds if isinstance(k, str)):
        for name in modules.get(kind, ()):
            with contextlib.suppress(Exception):
                module = importlib.import_module(name)
                if name == "anthropic":
                    getattr(module, "DefaultAioHttpClient", None)  # its aiohttp transport, imported lazily
    if not kinds & set(modules):
        return
    for name in ("evalh.providers.clients", "evalh.providers.cache", "evalh.targets.pacing"):
        importlib.import_module(name)
    # the certificate bundle loaded once, inherited by every worker
    with contextlib.suppress(Exception):
        from evalh.providers.openai import ssl_context

        if any(needs_bundle(c) for c in configs):
            ssl_context()


def needs_bundle(config: Any) -> bool:
    """Whether the client of a model target's or judge's `config` loads the certificate
    bundle: the anthropic SDK's client is made with it; an openai client needs it only for
    TLS (a local http:// server, the mock, needs none)."""
    from evalh.providers.openai import tls_needed

    kind = getattr(config, "kind", None) or getattr(config, "provider", None)
    return kind == "anthropic" or (kind == "openai" and tls_needed(config))


def spreads(suite: SuitePlan) -> bool:
    """Whether a suite's items can go to worker processes: live targets, called one case at a
    time. A batched target (its requests go in one batch, its ids into the run's journal) and
    a stored run's outputs (rejudge) run in the run's process."""
    from evalh.core.run.sources import LiveSource

    return all(type(arm.source) is LiveSource for arm in suite.arms)


async def run_in_processes(runner: Runner, suite: SuitePlan, items: Sequence[WorkItem]) -> bool:
    """Run `items` (shuffled already) over the suite's worker processes; see the module
    docstring. Returns when every item handed out has its result (or its worker died), the
    items run out, or the run's budget stops it (`runner.stop_reason`); False at once, having
    run nothing, for a suite that does not spread (`spreads`)."""
    n = process_count(suite, len(items))
    if n <= 1 or not spreads(suite):
        return False
    check_fork()
    warm_imports(suite)  # done by run_plan already; here for a caller that did not
    rooms = shares(suite.concurrency, n)
    services = runner.plan.services
    parent_ends: list[socket.socket] = []
    workers: list[_Worker] = []
    try:
        for k in range(n):
            pid, ours = _fork(runner, suite, items, k, n, parent_ends)
            parent_ends.append(ours)
            reader, writer = await asyncio.open_connection(sock=ours)
            workers.append(_Worker(k, pid, rooms[k], reader, writer))
        runner.ask_git()  # now that no fork is left to copy the pipes of git's subprocesses
        await _hand_out(runner, suite, items, workers)
    finally:
        for w in workers:
            if not w.done:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.pid, signal.SIGKILL)
            w.writer.close()
        for w in workers:
            with contextlib.suppress(ChildProcessError):
                await asyncio.to_thread(os.waitpid, w.pid, 0)
        _merge_limits(services, workers)
    return True


async def _hand_out(runner: Runner, suite: SuitePlan, items: Sequence[WorkItem], workers: list[_Worker]) -> None:
    services = runner.plan.services
    next_item = 0

    def give(w: _Worker) -> None:
        nonlocal next_item
        batch: list[int] = []
        while len(w.in_flight) + len(batch) < w.room and next_item < len(items):
            if runner.stop_reason:
                break
            reason = services.budget.exhausted()
            if reason:
                runner.stop_reason = reason
                break
            batch.append(next_item)
            next_item += 1
        if batch:
            w.in_flight.update(batch)
            w.writer.write(_frame(b"I" + orjson.dumps(batch)))

    def finished() -> bool:
        return next_item >= len(items) or runner.stop_reason is not None

    def more(w: _Worker) -> None:
        """Items for `w` while there are some, else, once it runs none, the word to end."""
        give(w)
        if finished() and not w.in_flight and not w.told:
            w.told = True
            w.writer.write(_frame(b"D"))

    async def serve(w: _Worker) -> None:
        more(w)
        ended = False
        while (frame := await _read(w.reader)) is not None:
            kind = frame[:1]
            if kind == b"R":
                head, _, body = frame[1:].partition(b"\n")
                meta = orjson.loads(head)
                _book(services.budget, meta["spent"])
                w.in_flight.discard(meta["i"])
                runner._record(suite, CaseResult.model_validate_json(body))
            elif kind == b"F":
                raise pickle.loads(frame[1:])
            elif kind == b"E":
                end = orjson.loads(frame[1:])
                _book(services.budget, end["spent"])
                w.limits = end["limits"]
                ended = True
                break
            more(w)
        if ended:
            w.done = True
            return
        # the worker died: what it was running is errored, never a pass
        how = await asyncio.to_thread(_death, w.pid)
        w.done = True
        for i in sorted(w.in_flight):
            runner._record(suite, _died(runner, suite, items[i], w.k, how))
        w.in_flight.clear()

    tasks = [asyncio.ensure_future(serve(w)) for w in workers]
    try:
        for task in asyncio.as_completed(tasks):
            await task
            alive = [w for w in workers if not w.done]
            if not alive and not finished():
                raise WorkersLost(
                    f"suite {suite.name!r}: every worker process died ({len(items) - next_item} of "
                    f"{len(items)} items not run); finish the run with evalh run --resume {runner.plan.run_id}")
            for w in alive:  # the items a dead worker would have run go to those left
                more(w)
    finally:
        for task in tasks:
            task.cancel()


def _died(runner: Runner, suite: SuitePlan, item: WorkItem, k: int, how: str) -> CaseResult:
    from evalh.core.run.shuffle import present

    digest, metadata = runner._facts(item.case)
    source = item.arm.source
    prior = source.recorded(item.case, item.arm.name, item.attempt) if source is not None else None
    shown = present(suite, item.case, item.attempt, runner.plan.seed, prior)
    return CaseResult(
        status="errored", case_id=shown.case.id, case_digest=digest, arm=item.arm.name,
        attempt=item.attempt, input=shown.case.input, expected=shown.case.expected, metadata=dict(metadata),
        shuffle=shown.permutation, seed=shown.seed,
        error=ErrorInfo(type="WorkerDied", message=f"worker process {k} {how} while running this case"),
    )
