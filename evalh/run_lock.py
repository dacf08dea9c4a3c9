"""The exclusive lock of a run in flight (`.<run_id>.lock`): a process running or resuming a
run holds it, so two processes never do the same run's work, and what a dead run left
behind can be told from what a live one is writing."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from pathlib import Path

from evalh.atomic import write_failed
from evalh.errors import RunInUse


class RunLock:
    """An exclusive `flock` on `.<run_id>.lock` in the runs directory, held by this process.

    Re-entrant within a process (taking it again counts up); released when the last holder
    releases it (or the object is collected), which removes the lock file. The file holds
    the holder's pid, for the message another process gets."""

    _held: weakref.WeakValueDictionary[str, RunLock] = weakref.WeakValueDictionary()
    _guard = threading.Lock()

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._key = os.path.abspath(path)
        self._fd: int | None = fd
        self._depth = 1

    @classmethod
    def acquire(cls, path: Path, run_id: str, *, wait_s: float = 0.0) -> RunLock:
        """The lock, or `RunInUse` naming the holder's pid once `wait_s` has passed."""
        lock = cls.try_acquire(path, reenter=True)
        deadline = time.monotonic() + wait_s
        while lock is None and time.monotonic() < deadline:
            time.sleep(0.05)
            lock = cls.try_acquire(path, reenter=True)
        if lock is None:
            pid = _holder_pid(path)
            who = f"pid {pid}" if pid else "another process"
            raise RunInUse(
                f"run {run_id} is in use by another evalh process ({who}, lock {path}): "
                "wait for it to finish, or stop it first"
            )
        return lock

    @classmethod
    def try_acquire(cls, path: Path, *, reenter: bool = False) -> RunLock | None:
        """The lock if no live process holds it; None otherwise (also when this process
        holds it, unless `reenter`)."""
        key = os.path.abspath(path)  # one process, one lock, however the directory was named
        with cls._guard:
            held = cls._held.get(key)
            if held is not None and held._fd is not None:
                if not reenter:
                    return None
                held._depth += 1
                return held
            fd = _lock_file(path)
            if fd is None:
                return None
            lock = cls._held[key] = RunLock(path, fd)
            return lock

    def release(self) -> None:
        with self._guard:
            self._depth -= 1
            if self._depth <= 0:
                self._drop()

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                os.unlink(self.path)  # still ours: no one can be waiting on a file we remove
        with contextlib.suppress(OSError):
            os.close(fd)
        if self._held.get(self._key) is self:
            del self._held[self._key]

    def __del__(self) -> None:  # a plan built but never run (dry run, an error) lets go
        with contextlib.suppress(Exception):
            self._drop()


def _lock_file(path: Path) -> int | None:
    """An fd holding the exclusive lock on `path` (created if need be), or None if another
    process holds it. Raises `WriteFailed` when the lock file cannot be created. Where
    `flock` does not exist (Windows) the file is created but nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None  # type: ignore[assignment]

    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise write_failed(path, exc) from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise write_failed(path, exc) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                from evalh.context import process_pid

                os.write(fd, f"{process_pid()}\n".encode())
            return fd
        os.close(fd)  # its holder removed that file as we took it: lock the new one


def _holder_pid(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip() or 0) or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
