"""Ending the `evalh` process without tearing down what it loaded.

A command that loaded or wrote a large run holds millions of objects when it returns, and
the interpreter's normal exit frees every one of them (module by module, then a last
collection): 8 % of a 100,000-case `compare`, seconds for nothing, since the OS takes the
memory back at once. `run_and_exit` runs the command, then does what the interpreter's exit
does that matters to anyone — waits for the non-daemon threads and runs their exit hooks
as `threading` does, runs the `atexit` functions (a product's own, logging's flush), and
flushes stdout and stderr (a failed flush of stdout exits 120, as Python does) — and ends
the process with `os._exit`, skipping only the freeing. Every file evalh writes is closed
(and fsynced, for run documents) by the command itself before it returns.

`EVALH_FULL_EXIT=1` keeps the interpreter's normal exit (for tools that hook its teardown).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any


def exit_code_of(code: Any) -> int:
    """What `sys.exit(code)` would make the process exit with (a message is printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code % 256
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{code}\n")
    return 1


def _status_of(code: Any) -> int:
    """`exit_code_of` without the message."""
    if code is None:
        return 0
    return code % 256 if isinstance(code, int) else 1


def run_and_exit(command: Callable[[], Any]) -> None:
    """Run `command` (which ends by raising SystemExit, as typer's app does, or returns) and
    end the process as described in the module docstring."""
    from evalh.cli.verdict_guard import report

    try:
        command()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # the interpreter prints it and exits 1: a verdict all the same
        report(1)
        raise
    if os.environ.get("EVALH_FULL_EXIT") == "1":
        report(_status_of(code))
        raise SystemExit(code)
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None or threading.current_thread() is not threading.main_thread():
        report(_status_of(code))
        raise SystemExit(code)  # no way to do the interpreter's thread shutdown: its own exit
    status = exit_code_of(code)
    shutdown()  # joins non-daemon threads, after the hooks threading registered (executors)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout and status == 0:
                status = 120  # as the interpreter does when stdout cannot be flushed at exit
    report(status)  # the guarded process's verdict (evalh.cli.verdict_guard)
    os._exit(status)
