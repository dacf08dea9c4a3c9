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
from evalh.redact import scrub_file_bytes, secret_env_values

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


def atomic_write_bytes(path: Path, data: bytes, *, env: list[str] | None = None) -> None:
    """Write `data` to `path` atomically: temp file, fsync, rename, fsync the directory.

    Every secret (`evalh.redact`: credential-named variables, every registered value) is
    scrubbed first, whatever the file is (a report, JUnit, a dataset, an export): no file
    evalh writes holds one. The file gets the permissions a newly created file has under the
    umask (mkstemp's 0600 would hide a report from the web server or CI step meant to read
    it). An OS error is a `WriteFailed` naming `path`; the temporary file is removed. `env`
    is a precomputed `evalh.redact.secret_env_values()` (a writer of many files)."""
    atomic_write_chunks(path, [scrub_file_bytes(data, env=env)])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], *, buffer: int = 1 << 20,
                        patches: list[tuple[int, bytes]] | None = None) -> None:
    """`atomic_write_bytes` for data made as it is written (the one writer of both): the chunks are gathered into
    writes of about `buffer` bytes, so memory holds one buffer, never the whole file. Then
    each (position, bytes) of `patches` (filled while the chunks were made) is written in
    place, before the file is synced and renamed."""
    tmp = _staged(path, chunks, buffer=buffer, patches=patches)
    _commit([(tmp, path)])


def atomic_write_files(files: list[tuple[Path, bytes]]) -> None:
    """Write several files, all or none: each is written to a temporary file beside it and
    synced first, and only when every one of them could be is each renamed into place (in
    the order given), secrets scrubbed as `atomic_write_bytes` does. A file that cannot be written (a read-only folder, a full disk) is a
    `WriteFailed` naming it, and no file of the set is touched."""
    staged: list[tuple[str, Path]] = []
    env = secret_env_values()
    try:
        for path, data in files:
            staged.append((_staged(path, [scrub_file_bytes(data, env=env)]), path))
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _commit(staged)


def _staged(path: Path, chunks: Iterable[bytes], *, buffer: int = 1 << 20,
            patches: list[tuple[int, bytes]] | None = None) -> str:
    """The data written and synced to a temporary file beside `path`: its name."""
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
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_failed(path, exc) from None
        raise
    return tmp


def _commit(staged: list[tuple[str, Path]]) -> None:
    """Rename each staged temporary file onto its path, then sync the folders."""
    for i, (tmp, path) in enumerate(staged):
        try:
            os.replace(tmp, path)
        except BaseException as exc:
            for left, _ in staged[i:]:
                with contextlib.suppress(OSError):
                    os.unlink(left)
            if isinstance(exc, OSError):
                raise write_failed(path, exc) from None
            raise
    for directory in dict.fromkeys(path.parent for _, path in staged):
        fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
