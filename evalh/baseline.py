"""The BASELINE marker: a text file at the project root holding one run id.

`evalh compare` with no run named compares BASELINE with the newest run, and
`evalh run --compare-baseline` compares the run it just made with BASELINE. The file is
meant to be committed, so a pull request that moves the baseline shows it in the diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalh.errors import EvalhError, InvalidRunId
from evalh.store import atomic_write_bytes, validate_run_id

if TYPE_CHECKING:
    from evalh.core.compare_models import ComparePolicy, Comparison
    from evalh.models import Run
    from evalh.store import RunStore

BASELINE_FILE = "BASELINE"


class BaselineNotSet(EvalhError):
    """No BASELINE file at the project root."""


def baseline_path(root: Path) -> Path:
    return Path(root) / BASELINE_FILE


def read_baseline(root: Path) -> str | None:
    """The run id in `<root>/BASELINE`; None when there is no such file.

    Raises `InvalidRunId` when the file holds anything but one valid run id (blank lines
    and surrounding whitespace are ignored), and `EvalhError` when it cannot be read.
    """
    path = baseline_path(root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalhError(f"{path}: cannot read: {exc}") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise InvalidRunId(
            f"{path}: expected one run id, found {len(lines)} lines; "
            "set it with `evalh baseline set RUN_ID`"
        )
    try:
        return validate_run_id(lines[0])
    except InvalidRunId as exc:
        raise InvalidRunId(f"{path}: {exc.message}") from None


def write_baseline(root: Path, run_id: str) -> Path:
    """Write `run_id` to `<root>/BASELINE` atomically (temp file, fsync, rename)."""
    validate_run_id(run_id)
    path = baseline_path(root)
    try:
        atomic_write_bytes(path, f"{run_id}\n".encode())
    except OSError as exc:
        raise EvalhError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def require_baseline(root: Path) -> str:
    """The BASELINE run id, or `BaselineNotSet` with what to do about it."""
    run_id = read_baseline(root)
    if run_id is None:
        raise BaselineNotSet(
            f"no BASELINE in {root}: set one with `evalh baseline set RUN_ID`, "
            "or name the runs to compare"
        )
    return run_id


def compare_with_baseline(
    candidate: Run, *, root: Path, store: RunStore, policy: ComparePolicy | None = None
) -> Comparison:
    """Compare `candidate` with the BASELINE run: what `evalh run --compare-baseline` calls.

    Raises `BaselineNotSet`, `InvalidRunId`, `RunNotFound` or `RunDocumentError` (all
    `EvalhError`, exit code 2) when the baseline cannot be read.
    """
    from evalh.core.compare import compare_runs

    base = store.load(require_baseline(root))
    return compare_runs(base, candidate, policy)
