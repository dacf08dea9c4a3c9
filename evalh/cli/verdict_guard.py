"""No silent exit: the `evalh` process exits only with a verdict evalh reached.

Code evalh runs — the project's target module, a custom scorer, a plugin — can end the
process itself: `os._exit(0)` at import, or anywhere later, skips every `finally`,
`atexit` function and exit hook, so nothing inside the process can notice it. A command
would then exit 0 having printed, decided and written nothing: a green CI step that
measured nothing.

So `guard` splits the process in two before the command runs (`fork`: nothing is imported
twice, it costs about a millisecond). The child runs the command and, as its very last
step (`evalh.cli.process_exit`), writes its exit code down a pipe: its verdict. The parent
only waits. When the child ends without a verdict, the parent says so on stderr and exits
2 (or the child's own non-zero code); a verdict is passed through unchanged. Signals sent
to the parent (`kill`, a CI runner's SIGTERM or SIGINT) are forwarded to the child; a
Ctrl-C from the terminal reaches both and the parent leaves it to the child; if the parent
is killed outright, the child is killed with it (Linux's parent-death signal), as one
process would have been. The lock of a run records the parent's pid, the one the user
started (`evalh.context.process_pid`).

Only on Linux (fork, `sigwaitinfo`, the parent-death signal); elsewhere the command runs
in the one process, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_SI_USER = 0
"""`si_code` of a signal sent by `kill()`; one the terminal sends (Ctrl-C) has another."""

_verdict_fd: int | None = None
_child_pid: int | None = None


def report(code: int) -> None:
    """Tell the waiting parent the command's exit code (called once, as the guarded child
    ends; nothing when no guard is in place)."""
    global _verdict_fd
    fd = _verdict_fd
    if fd is None or os.getpid() != _child_pid:
        return
    _verdict_fd = None
    with contextlib.suppress(OSError):
        os.write(fd, bytes([code % 256]))
        os.close(fd)


def _supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(signal, "sigwaitinfo")


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when `parent` dies (PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the call took effect
        os._exit(1)


def guard() -> None:
    """Fork: return in the child, which runs the command; the parent waits for it and
    never returns (see the module docstring). Returns at once where unsupported."""
    global _verdict_fd, _child_pid
    if not _supported():
        return
    parent = os.getpid()
    watched = {*_FORWARDED, signal.SIGCHLD}
    read_fd, write_fd = os.pipe()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        pid = os.fork()
    except OSError:  # no fork (a process limit): run in this process
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(read_fd)
        os.close(write_fd)
        return
    if pid == 0:  # the child: run the command
        os.close(read_fd)
        os.set_inheritable(write_fd, False)
        _verdict_fd, _child_pid = write_fd, os.getpid()
        from evalh.context import set_process_pid

        set_process_pid(parent)
        _die_with_parent(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        return
    os.close(write_fd)
    _wait(pid, read_fd, watched)


def _wait(pid: int, read_fd: int, watched: set[signal.Signals]) -> None:
    """The parent: forward signals until the child ends, then exit as it did."""
    status = 0
    while True:
        info = signal.sigwaitinfo(watched)
        if info.si_signo == signal.SIGCHLD:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                break
            continue
        if info.si_signo != signal.SIGTERM and info.si_code != _SI_USER:
            continue  # from the terminal: the child, in the same process group, has it too
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, info.si_signo)
    os.set_blocking(read_fd, False)
    try:
        verdict = os.read(read_fd, 1)
    except (BlockingIOError, OSError):
        verdict = b""
    if verdict:
        os._exit(verdict[0])
    code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
    how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    with contextlib.suppress(OSError):
        os.write(2, (f"error: evalh ended before reaching a verdict ({how}): code it ran — the "
                     "project's target or scorer module, a plugin — ended the process (os._exit, "
                     "a crash); nothing was decided\n").encode())
    if code < 0:  # the child was killed: so is this process, the same way
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(code if code else 2)
