"""The BASELINE marker: a text file at the project root holding the baseline run id(s).

`evalh compare` with no run named compares BASELINE with the newest run, and
`evalh run --compare-baseline` compares the run it just made with BASELINE. The file is
meant to be committed, so a pull request that moves the baseline shows it in the diff.

Format: one run id a line (blank lines and surrounding whitespace ignored). A marker of one
line is the original format and means what it always meant. A marker of several lines
names several runs of one configuration: comparisons pool them per case (their attempts
together, `evalh.core.compare.pool.pool_runs`), and `evalh baseline noise` measures how far they
move against each other, stored beside the marker as `BASELINE.noise.json`. Where one run
is needed (the `(BASELINE)` mark of `evalh runs`, the dashboard) it is the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.atomic import atomic_write_bytes
from evalh.errors import EvalhError, InvalidRunId
from evalh.store import validate_run_id

if TYPE_CHECKING:
    from evalh.core.compare.models import ComparePolicy, Comparison
    from evalh.core.compare.notes import CompareNotes
    from evalh.models import Run
    from evalh.store import RunStore

BASELINE_FILE = "BASELINE"
NOISE_FILE = "BASELINE.noise.json"
"""Beside the marker at the project root, not in the runs directory: every `*.json` there
whose name is a valid run id is listed as a run."""


class BaselineNotSet(EvalhError):
    """No BASELINE file at the project root."""


def baseline_path(root: Path) -> Path:
    return Path(root) / BASELINE_FILE


def noise_path(root: Path) -> Path:
    return Path(root) / NOISE_FILE


def read_baseline_ids(root: Path) -> list[str] | None:
    """The run ids in `<root>/BASELINE`, in order; None when there is no such file.

    Raises `InvalidRunId` (naming the file and line) for an empty file, a line that is not
    a valid run id, or a run named twice, and `EvalhError` when it cannot be read.
    """
    path = baseline_path(root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalhError(f"{path}: cannot read: {exc}") from None
    ids: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            validate_run_id(line)
        except InvalidRunId as exc:
            raise InvalidRunId(f"{path}:{number}: {exc.message}") from None
        if line in ids:
            raise InvalidRunId(f"{path}:{number}: run {line} is named twice")
        ids.append(line)
    if not ids:
        raise InvalidRunId(f"{path}: holds no run id; set it with `evalh baseline set RUN_ID`")
    return ids


def read_baseline(root: Path) -> str | None:
    """The (first) run id in `<root>/BASELINE`; None when there is no such file. For
    callers that need one run; `read_baseline_ids` has them all."""
    ids = read_baseline_ids(root)
    return ids[0] if ids else None


def write_baseline(root: Path, run_ids: str | Sequence[str]) -> Path:
    """Write the run id(s) to `<root>/BASELINE` atomically (temp file, fsync, rename),
    one a line. One id writes exactly the original one-line marker."""
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not ids:
        raise EvalhError("no run id to write to BASELINE")
    for run_id in ids:
        validate_run_id(run_id)
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise EvalhError(f"run {dup} is named twice: name each baseline run once")
    path = baseline_path(root)
    atomic_write_bytes(path, "".join(f"{i}\n" for i in ids).encode())  # refused: one line, exit 4
    return path


def require_baseline_ids(root: Path) -> list[str]:
    """The BASELINE run ids, or `BaselineNotSet` with what to do about it."""
    ids = read_baseline_ids(root)
    if ids is None:
        raise BaselineNotSet(
            f"no BASELINE in {root}: set one with `evalh baseline set RUN_ID`, "
            "or name the runs to compare"
        )
    return ids


def require_baseline(root: Path) -> str:
    """The (first) BASELINE run id, or `BaselineNotSet` with what to do about it."""
    return require_baseline_ids(root)[0]


# --------------------------------------------------------------------------- noise file


def write_noise(root: Path, doc: dict[str, Any]) -> Path:
    """Write the noise-floor document beside the marker, atomically, scrubbed of secrets
    like every file evalh writes."""
    from evalh.jsonio import document_bytes
    from evalh.redact import scrub_secrets

    path = noise_path(root)
    atomic_write_bytes(path, scrub_secrets(document_bytes(doc)))
    return path


def read_noise(root: Path, ids: Sequence[str]) -> tuple[dict[str, Any] | None, str | None]:
    """(the noise document, None) when `BASELINE.noise.json` was measured on exactly
    `ids`; (None, why) when it is unreadable or stale; (None, None) when there is none."""
    import orjson

    from evalh.core.compare.noise import NOISE_SCHEMA

    path = noise_path(root)
    try:
        doc = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None, None
    except (OSError, orjson.JSONDecodeError) as exc:
        return None, f"{path}: unreadable ({exc}); measure it again with `evalh baseline noise`"
    if not isinstance(doc, dict) or doc.get("schema") != NOISE_SCHEMA:
        return None, f"{path}: not a {NOISE_SCHEMA} document; measure it again with `evalh baseline noise`"
    if doc.get("baseline_runs") != list(ids):
        return None, (f"{path} was measured on other runs than BASELINE names: not shown; "
                      "measure it again with `evalh baseline noise`")
    return doc, None


# --------------------------------------------------------------------------- loading


def check_poolable(runs: Sequence[Run]) -> None:
    """Refuse runs that did not run the same thing (`EvalhError`, exit 2, one line)."""
    from evalh.core.compare.pool import what_ran_differences

    diffs = what_ran_differences(runs)
    if diffs:
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise EvalhError(
            f"baseline runs must be runs of one configuration: {diffs[0].text()}{more}"
        )


def check_baseline_runs(store: RunStore, refs: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ids of the runs `refs` name, refused (`EvalhError`, exit 2) unless they make one
    baseline (each named once, runs of one configuration), and what to warn about: a run
    outside the runs directory, an unfinished run, a shard of a run, a suite missing from some
    of the runs."""
    from evalh.core.compare.pool import suite_coverage

    loaded = [store.load(ref) for ref in refs]
    ids = [r.run_id for r in loaded]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise EvalhError(f"run {dup} is named twice: name each baseline run once")
    check_poolable(loaded)
    warnings = []
    for ref, run in zip(refs, loaded, strict=True):
        if not store.path_for(run.run_id).is_file():
            warnings.append(f"{ref} is not in {store.runs_dir}: `evalh compare` will look for "
                            f"{run.run_id} there")
        if run.status != "complete":
            warnings.append(f"run {run.run_id} is {run.status}: comparisons against it say so")
        if run.shard:
            warnings.append(f"run {run.run_id} is shard {run.shard} of a run: a candidate is held only to its "
                            "cases; set the merged run (`evalh merge` of every shard) as the baseline")
    if len(loaded) > 1:
        for name, having in suite_coverage(loaded).items():
            if len(having) < len(loaded):
                warnings.append(f"suite {name} is in {len(having)} of the {len(loaded)} baseline "
                                "runs: its pool holds only those")
    return ids, warnings


@dataclass
class LoadedBaseline:
    """The marker's runs, loaded, and the one run a comparison uses as its base."""

    ids: list[str]
    runs: list[Run]
    run: Run
    """The pool of `runs` (`pool_runs`), or the run itself when the marker names one."""
    noise: dict[str, Any] | None = None
    """`BASELINE.noise.json` when it was measured on exactly these runs."""
    warnings: list[str] = field(default_factory=list)
    header_only: bool = False
    """`run` is one run's header, without its results (`load_baseline(header_only=True)`):
    it is compared with stored runs only (`compare_stored`), from the facts of both."""

    def notes(self, candidate: Run) -> CompareNotes:
        """What a comparison against this baseline adds to its output."""
        from evalh.core.compare.noise import noise_line
        from evalh.core.compare.notes import CompareNotes

        n = len(self.ids)
        notes = CompareNotes(extra={"baseline_runs": list(self.ids), "baseline_noise": None})
        if n > 1:
            notes.header.append(
                f"baseline: {n} runs pooled per case ({', '.join(self.ids)}), their attempts together"
            )
            if candidate.run_id in self.ids:
                notes.header.append(
                    f"warning: the candidate {candidate.run_id} is one of the baseline runs"
                )
        notes.header += [f"warning: {w}" for w in self.warnings]
        if self.noise is not None:
            summary: dict[str, Any] = {}
            for name, s in (self.noise.get("suites") or {}).items():
                line = noise_line(self.noise, name)
                if line:
                    notes.suites[name] = [line]
                summary[name] = {
                    "line": line, "runs": s.get("runs"), "pairs": s.get("pairs"),
                    "until_decided": s.get("until_decided"),
                    "cases": {k: (s.get("cases") or {}).get(k)
                              for k in ("compared", "flipped", "flip_rate")},
                    "rows": [{k: r.get(k) for k in ("arm", "name", "unit", "allowance", "pairs",
                                                     "change", "verdicts")}
                             for r in s.get("rows") or []],
                }
            notes.extra["baseline_noise"] = {
                "measured_at": self.noise.get("measured_at"), "suites": summary,
            }
        elif n > 1 and not self.warnings:
            notes.header.append("noise floor not measured: run `evalh baseline noise`")
        return notes

    def compare(
        self, candidate: Run, policy: ComparePolicy | None = None
    ) -> tuple[Comparison, CompareNotes]:
        from evalh.core.compare.decide import compare_runs

        if self.header_only:
            raise TypeError("a baseline loaded header_only compares with stored runs: compare_stored")
        return compare_runs(self.run, candidate, policy), self.notes(candidate)

    def compare_stored(
        self, store: RunStore, run_id: str, policy: ComparePolicy | None = None
    ) -> tuple[Comparison, CompareNotes]:
        """`compare` with the stored run `run_id`, read for its facts only: one baseline run
        and the candidate a chunk of result lines at a time (`compare_load`); a pool of
        baseline runs is compared from its results."""
        if len(self.ids) == 1:
            from evalh.core.compare.load import load_compared

            loaded = load_compared(store, self.ids[0], run_id)
            return loaded.compare(policy), self.notes(loaded.candidate)
        candidate = store.load_facts(run_id)
        return self.compare(candidate, policy)


def load_baseline(root: Path, store: RunStore, *, header_only: bool = False) -> LoadedBaseline:
    """Load every run BASELINE names and pool them (one run: used as it is). With
    `header_only`, a marker that names one run gives that run without its results (its
    facts are then read by `compare_load`); several runs are pooled from their results.

    Raises `BaselineNotSet`, `InvalidRunId`, `RunNotFound`, `RunDocumentError` or (runs of
    different configurations) `EvalhError`: all exit code 2.
    """
    from evalh.core.compare.pool import pool_runs

    ids = require_baseline_ids(root)
    if len(ids) == 1 and header_only:
        run = store.load_header(ids[0])
        return LoadedBaseline(ids, [run], run, header_only=True)
    runs = [store.load(i) for i in ids]
    if len(runs) == 1:
        return LoadedBaseline(ids, runs, runs[0])
    check_poolable(runs)
    noise, why = read_noise(root, ids)
    return LoadedBaseline(ids, runs, pool_runs(runs), noise, [why] if why else [])


def compare_with_baseline(
    candidate: Run, *, root: Path, store: RunStore, policy: ComparePolicy | None = None
) -> Comparison:
    """Compare `candidate` with the BASELINE run(s), pooled: what `evalh run
    --compare-baseline` calls.

    Raises `BaselineNotSet`, `InvalidRunId`, `RunNotFound` or `RunDocumentError` (all
    `EvalhError`, exit code 2) when the baseline cannot be read.
    """
    return load_baseline(root, store).compare(candidate, policy)[0]
