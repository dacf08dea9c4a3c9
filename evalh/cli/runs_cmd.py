"""`evalh runs` and `evalh show`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt
from evalh.cli.project import open_project, open_store

if TYPE_CHECKING:
    from evalh.store import RunStore

_JOURNAL_SUFFIX = ".journal.jsonl"
_HEADER_LIMIT = 1 << 20
"""A journal's first line is read up to this many bytes (its header holds the config snapshot)."""


def _journal_only_ids(store: RunStore, documents: set[str]) -> list[str]:
    """Runs with a journal and no document: killed outright (SIGKILL, a crash), or running."""
    from evalh.errors import InvalidRunId
    from evalh.store import SIDECAR_SUFFIXES, validate_run_id

    if not store.runs_dir.is_dir():
        return []
    ids = []
    for p in store.runs_dir.glob(f"*{_JOURNAL_SUFFIX}"):
        run_id = p.name[: -len(_JOURNAL_SUFFIX)]
        try:
            validate_run_id(run_id)
        except InvalidRunId:
            continue
        if run_id not in documents and not run_id.endswith(SIDECAR_SUFFIXES):
            ids.append(run_id)
    return ids


def _held_by_a_live_process(lock: Path) -> bool:
    """Whether the pid a run's lock file names is alive. Read only: taking the lock, even for
    a moment, could make a run starting at that instant refuse itself."""
    import os

    try:
        pid = int(lock.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, another user's
        return True
    return True


def _journal_row(store: RunStore, run_id: str, runs_dir: Path | None) -> dict[str, Any]:
    """A listing row from a journal's header line; `RunDocumentError` when it is unreadable."""
    import orjson

    from evalh.errors import RunDocumentError

    path = store.journal_path(run_id)
    try:
        with path.open("rb") as fh:
            first = fh.readline(_HEADER_LIMIT)
        header = orjson.loads(first).get("header")
        if not isinstance(header, dict):
            raise ValueError
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None
    except (ValueError, AttributeError):
        raise RunDocumentError(f"{path}: line 1: not a journal header") from None
    running = _held_by_a_live_process(store.lock_path(run_id))
    import shlex

    # the directory `evalh runs` was pointed at is where the resume must look too
    resume = f"evalh run --resume {run_id}" + (f" --runs-dir {shlex.quote(str(runs_dir))}" if runs_dir else "")
    label, started = header.get("label"), header.get("started_at")
    return {
        "run_id": run_id, "label": label if isinstance(label, str) else None,
        "status": "running" if running else "interrupted",
        "started_at": started if isinstance(started, str) else None,
        "git_sha": None, "dirty": None, "baseline": False, "suites": {},
        "resume": None if running else resume,
    }


@translate_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show the newest N runs.")] = 20,
    runs_dir: RunsDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List runs, newest last: id, label, status, git sha, and per-suite pass rates.

    The BASELINE run is marked. A run that has only a journal (killed outright, or a crash)
    is listed `interrupted` with the command that resumes it (`running` while its process
    lives). Exit 0 (also when there are no runs); 2 on bad input.

    Examples:

        evalh runs

        evalh runs -n 5 --json
    """

    from evalh.baseline import read_baseline_ids
    from evalh.console import out, warn
    from evalh.errors import RunDocumentError
    from evalh.run_header import read_run_header

    root, store = open_project(config, runs_dir)
    baseline = set(read_baseline_ids(root) or ())  # a pooled baseline marks each of its runs
    # newest first, header only, until `limit` are listed: memory is one header at a time
    # and the documents older than the newest `limit` readable ones are not opened
    documents = store.list_ids()
    journal_only = set(_journal_only_ids(store, set(documents)))
    newest: list[dict[str, Any]] = []
    for ref in sorted({*documents, *journal_only}, reverse=True):
        if len(newest) == limit:
            break
        try:
            if ref in journal_only:
                newest.append(_journal_row(store, ref, runs_dir))
                continue
            h = read_run_header(store.path_for(ref))
        except RunDocumentError as exc:  # named, not silently left out
            warn(f"left out: {exc.message}")
            continue
        newest.append({
            "run_id": h.run_id, "label": h.label, "status": h.status, "started_at": h.started_at,
            "git_sha": h.git_sha, "dirty": h.git_dirty, "baseline": h.run_id in baseline,
            "suites": h.pass_rates, "resume": None,
        })
    rows = list(reversed(newest))
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text(rows))
        return
    from evalh.report.terminal.runs import render_runs

    render_runs(rows, f"runs in {store.runs_dir}", out())


@translate_errors
def show(
    run_id: Annotated[str, typer.Argument(help="A run id (see `evalh runs`) or a path to a run document.")],
    runs_dir: RunsDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print one run: its results table, the cases that did not pass, and the figures its
    suites hold (verdicts, per-lens classification, judging, pairwise consistency) (--json:
    the whole document).

    Exit 0; 2 when the run is missing or its document unreadable.

    Examples:

        evalh show 20261129T201530123Z-3fa9c1

        evalh show eval_runs/20261129T201530123Z-3fa9c1.json --json
    """
    from evalh.console import out
    from evalh.report.terminal.run import render_run

    run = open_store(runs_dir, config).load(run_id)
    if json_out:
        out().file.write(run.to_json_bytes().decode() + "\n")
        return
    from evalh.console import safe_text

    git = run.git.sha[:10] + ("-dirty" if run.git.dirty else "") if run.git.sha else "not a git repo"
    # the run id is the table's title: this line stays within 80 columns
    out().print(safe_text(f"{run.status}  started {run.started_at}  git {git}  seed {run.seed}"))
    render_run(run, out(), max_failures=1000)
    from evalh.report import build_report
    from evalh.report.render import render_figures

    render_figures(build_report([run]), out())  # per-lens, judging, pairwise, verdicts: as evalh report
