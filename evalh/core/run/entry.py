"""The one entry that executes a plan (`run_plan`): the run's lock, what dead runs left
behind swept, SIGTERM turned into a stop that keeps the journal, and the run's one
`asyncio.run`."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

from evalh.core.run.items import Observer
from evalh.core.run.plan import RunPlan
from evalh.core.run.runner import Runner
from evalh.errors import EvalhError, WriteFailed
from evalh.gcpause import kept_off_the_books
from evalh.models import Run
from evalh.run_lock import RunLock
from evalh.store import RunStore


class RunInterrupted(EvalhError):
    """Ctrl-C or SIGTERM stopped the run; its partial document and journal were kept."""

    exit_code = 130


@contextlib.contextmanager
def _cancel_on_sigterm() -> Iterator[None]:
    """SIGTERM cancels the run like Ctrl-C does, so the partial document gets written."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    try:
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread; Windows
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def run_plan(plan: RunPlan, store: RunStore, observer: Observer | None = None, *,
             lock: RunLock | None = None, results: bool = True) -> Run:
    """Execute a plan to completion (or to its budget) and return the written run: the one
    entry of the runner, for `evalh run`, `--resume` and `evalh rejudge` alike.

    The runner keeps no result model (`evalh.core.run.retained`): the run it returns is read
    back from its document (`RunStore.load`, every result a model); `results=False` returns
    it without its results (every suite's `cases` empty, the aggregates, metrics and summary
    there) — what `evalh run` takes, so a run's memory does not grow with its size.

    The run's lock is held throughout (`lock`, when preparing took it already — a resume
    reads its record under it —, else taken here): a second process resuming the run is
    refused. What finished or dead runs left in the runs directory is removed first. Ctrl-C
    or SIGTERM writes the run as `partial` (reason `interrupted`), keeps its journal and
    raises `RunInterrupted` (exit 130) saying how to resume. A write the OS refuses
    (`WriteFailed`, exit 4) says how to finish the run once the disk has room again.
    """
    lock = lock or store.lock(plan.run_id)
    try:
        store.sweep(own=plan.run_id)
        try:
            run = _run_to_the_end(plan, store, observer)
        except WriteFailed as exc:
            journal = store.journal_path(plan.run_id)
            if not journal.is_file() or plan.derived_from is not None:  # only `evalh run` resumes
                raise
            raise WriteFailed(
                f"{exc.message}; the journal {journal} is kept: free space, then finish the run "
                f"with: evalh run --resume {plan.run_id}", exit_code=exc.exit_code,
            ) from None
        return store.load(run.run_id) if results else run
    finally:
        lock.release()


def _run_to_the_end(plan: RunPlan, store: RunStore, observer: Observer | None) -> Run:
    from evalh.core.run.procs import warm_imports

    for suite in plan.suites:  # the model clients imported before the run's clock starts
        warm_imports(suite)
    runner = Runner(plan, store, observer)
    done: list[Run] = []

    async def main() -> None:
        # Returns nothing on purpose: on Python 3.11 asyncio.run reprs the finished main
        # task when it restores the SIGINT handler, and a Run of 10,000 results takes
        # seconds to repr.
        with _cancel_on_sigterm():
            done.append(await runner.run())

    # Imports, config and plan, then the results as they come: full collections during the
    # run skip them (evalh.gcpause; not when a host froze its own objects already).
    try:
        with kept_off_the_books() as runner.gc_window:
            asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        kept = runner.kept_total
        raise RunInterrupted(
            f"interrupted: run {plan.run_id} written as partial ({kept} of {plan.total} "
            f"results kept); finish it with: evalh run --resume {plan.run_id}"
        ) from None
    return done[0]
