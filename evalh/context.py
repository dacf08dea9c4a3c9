"""Who is running: the run and case a target call belongs to.

While a target runs, `evalh.context.current()` returns the run id, suite, case id, arm and
attempt (and the attempt's seed), so the product's own logs can be joined back to the run. The same ids are in the
environment as `EVALH_RUN_ID` and `EVALH_CASE_ID`; the environment is shared by the whole
process, so `EVALH_CASE_ID` is set only while a suite runs one case at a time
(`--concurrency 1`) and is absent otherwise. The context variable
is exact at any concurrency, including inside sync targets run in worker threads.
HTTP targets receive them as the headers `X-Evalh-Run-Id` and `X-Evalh-Case-Id`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class CaseContext:
    run_id: str
    suite: str
    case_id: str
    arm: str
    attempt: int
    seed: int | None = None
    """The attempt's own seed (reproducible from the run's seed; `evalh.core.run.shuffle`)."""


_current: ContextVar[CaseContext | None] = ContextVar("evalh_case", default=None)


def current() -> CaseContext | None:
    """The case being run in this context, or None outside a run."""
    return _current.get()


@contextmanager
def case_scope(ctx: CaseContext, *, alone: bool = True) -> Iterator[None]:
    """The case `ctx` is current; `alone`: no other case runs meanwhile, so the process
    environment can name it too."""
    token = _current.set(ctx)
    # Written only when it changes: a write is a putenv (~7 µs), and the run id is the same
    # for every case of a run; at any concurrency but 1 the case id is in the context only.
    environ = os.environ
    if environ.get("EVALH_RUN_ID") != ctx.run_id:
        environ["EVALH_RUN_ID"] = ctx.run_id
    if alone:
        environ["EVALH_CASE_ID"] = ctx.case_id
    elif "EVALH_CASE_ID" in environ:
        del environ["EVALH_CASE_ID"]
    try:
        yield
    finally:
        _current.reset(token)


_process_pid: int | None = None


def set_process_pid(pid: int) -> None:
    """This process runs the command for `pid`, the `evalh` process the user started
    (`evalh.cli.verdict_guard`): what a run's lock names as its holder."""
    global _process_pid
    _process_pid = pid


def process_pid() -> int:
    """The pid of the `evalh` process the user started: the guard's parent where there is
    one, else this process."""
    return _process_pid if _process_pid is not None else os.getpid()
