"""Files written whole or not at all: a temporary file in the same directory, fsync, rename,
fsync the directory; the permissions a new file gets under the umask; and the one-line
`WriteFailed` (exit 4, or 2 for a path that is wrong) for a write the OS refused."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from evalh.errors import WriteFailed

_BAD_PATH = frozenset({
    errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP,
    errno.EINVAL,
})
"""OS errors that say the path given is wrong (bad input, exit 2), not that the system
refused to store the data (disk full, read-only, quota, permission: exit 4)."""


def write_failed(path: Path | str, exc: OSError) -> WriteFailed:
    """The one-line error for a write the OS refused: the path and the OS's reason."""
    if isinstance(exc, WriteFailed):
        return exc
    reason = exc.strerror or str(exc)
    return WriteFailed(f"{path}: cannot write: {reason}", exit_code=2 if exc.errno in _BAD_PATH else 4)


def current_umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status); elsewhere
    read once by setting and restoring it."""
    global _UMASK
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: temp file, fsync, rename, fsync the directory.

    The file gets the permissions a newly created file has under the umask (mkstemp's
    0600 would hide a report from the web server or CI step meant to read it). An OS error
    is a `WriteFailed` naming `path`; the temporary file is removed."""
    atomic_write_chunks(path, [data])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], *, buffer: int = 1 << 20,
                        patches: list[tuple[int, bytes]] | None = None) -> None:
    """`atomic_write_bytes` for data made as it is written (the one writer of both): the chunks are gathered into
    writes of about `buffer` bytes, so memory holds one buffer, never the whole file. Then
    each (position, bytes) of `patches` (filled while the chunks were made) is written in
    place, before the file is synced and renamed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from None
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o666 & ~current_umask())
            pending: list[bytes] = []
            size = 0
            for chunk in chunks:
                pending.append(chunk)
                size += len(chunk)
                if size >= buffer:
                    write_all(fd, b"".join(pending))
                    pending, size = [], 0
            write_all(fd, b"".join(pending))
            for at, value in patches or ():
                os.pwrite(fd, value, at)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_failed(path, exc) from None
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
