"""What evalh leaves on disk, through the CLI: one process at a time per run (a lock), a
write the OS refuses (disk full, read-only) as one line and exit 4 with the journal kept,
leftovers of dead or finished runs cleaned (never a live one's), the umask respected, and a
damaged journal refused with its file and line."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from tests.runner_project import evalh_process, journal_results, load, write_project

runner = CliRunner()


def _calls(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        out[line] = out.get(line, 0) + 1
    return out


def _one_line(result: Result, *, stderr: bool = False) -> str:
    lines = (result.stderr if stderr else result.output).strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


def _stopped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, cases: int = 12) -> tuple[Path, Path, str]:
    """A run of `priced` (1 cent a case) stopped by --max-cost 0.04 after 4 cases: a partial
    document and its journal."""
    cfg = write_project(tmp_path, cases=cases, concurrency=1, target="priced")
    runs = tmp_path / "runs"
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--max-cost", "0.04"])
    assert result.exit_code == 1, result.output
    (doc,) = runs.glob("*.json")
    return cfg, runs, doc.name.removesuffix(".json")


# ------------------------------------------------------------------ faults injected at the OS


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """`fault(code, matches, after=0, on="write")`: from the (after+1)-th write (or open) of a
    file whose path `matches`, fail with OSError(code), as a full disk (ENOSPC) or a
    read-only filesystem (EROFS) would."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell which file a write goes to")

    def install(code: int, matches: Callable[[str], bool], *, after: int = 0, on: str = "write") -> None:
        seen = [0]

        def hit(path: str) -> bool:
            if not matches(path):
                return False
            seen[0] += 1
            return seen[0] > after

        if on == "write":
            real_write = os.write

            def write(fd: int, data: Any) -> int:
                if hit(_fd_path(fd)):
                    raise OSError(code, os.strerror(code))
                return real_write(fd, data)

            monkeypatch.setattr(os, "write", write)
        else:
            real_open = os.open

            def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
                if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and hit(os.fspath(path)):
                    raise OSError(code, os.strerror(code))
                return real_open(path, flags, *args, **kwargs)

            monkeypatch.setattr(os, "open", open_)

    return install


def test_disk_full_on_the_journal_is_exit_4_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Callable[..., None]
) -> None:
    cfg = write_project(tmp_path, cases=10, concurrency=1, target="priced")
    runs = tmp_path / "runs"
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    # the header and four results fit; then the disk is full, for the document too
    fault(errno.ENOSPC, lambda p: p.startswith(str(runs)) and not p.endswith(".lock"), after=5)
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 4, result.output
    line = _one_line(result)
    assert "No space left on device" in line and str(runs) in line
    (journal,) = runs.glob("*.journal.jsonl")
    run_id = journal.name.removesuffix(".journal.jsonl")
    assert f"evalh run --resume {run_id}" in line
    assert len(journal_results(journal)) == 4
    assert sorted(p.name for p in runs.iterdir()) == [journal.name], "no temporary file, no lock left"

    monkeypatch.undo()  # space freed
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--resume", run_id])
    assert result.exit_code == 1, result.output  # every fifth case fails by design
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 10
    calls = _calls(tmp_path / "calls.txt")
    # the case whose journal line did not fit ran again; nothing else did
    assert len(calls) == 10 and sum(calls.values()) == 11


def test_read_only_run_document_is_exit_4_and_the_journal_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Callable[..., None]
) -> None:
    cfg = write_project(tmp_path, cases=6, concurrency=1, target="priced")
    runs = tmp_path / "runs"
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    fault(errno.EROFS, lambda p: p.endswith(".tmp"), on="open")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 4, result.output
    line = _one_line(result)
    assert ".json: cannot write: Read-only file system" in line and "--resume" in line
    (journal,) = runs.glob("*.journal.jsonl")
    assert len(journal_results(journal)) == 6 and not list(runs.glob("*.json"))

    monkeypatch.undo()
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q",
                                 "--resume", journal.name.removesuffix(".journal.jsonl")])
    assert result.exit_code == 1, result.output
    (doc,) = runs.glob("*.json")
    assert load(doc)["status"] == "complete" and not journal.exists()
    assert sum(_calls(tmp_path / "calls.txt").values()) == 6, "nothing ran twice"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["ENOSPC", "EROFS"])
@pytest.mark.parametrize("command", ["report", "junit", "export-requests", "baseline"])
def test_reports_and_exports_that_cannot_be_written_are_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Callable[..., None], command: str, code: int
) -> None:
    cfg = write_project(tmp_path, cases=3, concurrency=1)
    runs = tmp_path / "runs"
    for _ in range(2):
        assert runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"]).exit_code == 0
    run_id, other = sorted(p.name.removesuffix(".json") for p in runs.glob("*.json"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "file"
    rubric = tmp_path / "rubric.md"
    rubric.write_text("label it\n")
    args = {
        "report": ["report", run_id, "--format", "html", "-o", str(target)],
        "junit": ["compare", run_id, other, "--junit-xml", str(target), "--format", "json"],
        "export-requests": ["export-requests", run_id, "--rubric", str(rubric), "-o", str(target)],
        "baseline": ["baseline", "set", run_id],
    }[command]
    if command == "baseline":
        monkeypatch.chdir(tmp_path)
        target = tmp_path / "BASELINE"
    inside = str(target.parent)
    fault(code, lambda p: p.startswith(inside + os.sep) and "runs" not in p,
          on="write" if code == errno.ENOSPC else "open")
    result = runner.invoke(app, [*args, "--runs-dir", str(runs), "--config", str(cfg)])
    assert result.exit_code == 4, result.output
    assert f"{target}: cannot write: {os.strerror(code)}" in _one_line(result, stderr=True)
    assert not target.exists()
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")], "no temporary file left"


# ------------------------------------------------------------------ one process per run


def test_a_second_resume_of_a_run_in_progress_is_refused_naming_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, runs, run_id = _stopped_run(tmp_path, monkeypatch, cases=24)
    gate = tmp_path / "gate"
    env = {"CALLS_FILE": str(tmp_path / "calls.txt"), "GATE_FILE": str(gate)}
    # The same target, held from now on until the test opens the gate: the first resume is
    # still in progress however long the second takes to start (a fixed sleep raced a loaded
    # machine, where the first finished before the second asked for the lock).
    module = tmp_path / "evalh_runner_target.py"
    module.write_text(module.read_text().replace(
        "def priced(inp):\n",
        "def priced(inp):\n"
        "    end = time.monotonic() + 60\n"
        "    while not os.path.exists(os.environ['GATE_FILE']) and time.monotonic() < end:\n"
        "        time.sleep(0.01)\n"))
    resume = ["run", "--resume", run_id, "--runs-dir", str(runs), "--max-cost", "1", "-q"]
    first = evalh_process(resume, tmp_path, env)
    lock = runs / f".{run_id}.lock"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and first.poll() is None:
        if lock.exists() and lock.read_text().strip() == str(first.pid):
            break
        time.sleep(0.01)
    second = evalh_process(resume, tmp_path, env)
    _, err2 = second.communicate(timeout=60)
    gate.touch()
    _, err1 = first.communicate(timeout=60)
    assert first.returncode == 1, err1
    assert second.returncode == 2, err2
    assert len(err2.strip().splitlines()) == 1
    assert f"run {run_id} is in use by another evalh process (pid {first.pid}" in err2
    calls = _calls(tmp_path / "calls.txt")
    assert len(calls) == 24 and set(calls.values()) == {1}, "a case ran twice"
    assert not lock.exists(), "the lock file goes with its holder"
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--resume", run_id])
    assert result.exit_code == 2 and "already complete" in _one_line(result)


# ------------------------------------------------------------------ leftovers


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """`holder(lock_path)`: another live process holding that run lock."""
    procs: list[subprocess.Popen[str]] = []

    def hold(path: Path) -> None:
        code = ("import fcntl, os, sys, time\n"
                "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                "os.write(fd, str(os.getpid()).encode())\n"
                "print('held', flush=True)\n"
                "time.sleep(60)\n")
        proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        procs.append(proc)

    yield hold
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


def test_the_next_run_cleans_what_dead_and_finished_runs_left_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holder: Callable[[Path], None]
) -> None:
    cfg, runs, partial = _stopped_run(tmp_path, monkeypatch)
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--max-cost", "1"])
    assert result.exit_code == 1, result.output
    complete = next(p.name.removesuffix(".json") for p in runs.glob("*.json") if partial not in p.name)
    document = (runs / f"{complete}.json").read_bytes()
    live = "20261201T000000000Z-live00"
    leftovers = {
        f".{complete}.json.k1ll3d_a.tmp": document[:100],   # a kill during the final write …
        f"{complete}.journal.jsonl": b"{}\n",              # … after which the journal stayed
        f".{partial}.json.dead_0.tmp": b"{",               # a dead resume of the partial run
        f".{partial}.lock": b"99999999\n",                  # the lock file a kill left
    }
    kept = {
        f".{live}.json.busy_00.tmp": b"{",                 # a live process is writing this
        f"{live}.journal.jsonl": b"{}\n",
        f".{live}.lock": b"",
        ".notes.json.mine_0.tmp": b"mine",                 # not beside any run: the user's
    }
    for name, data in {**leftovers, **kept}.items():
        (runs / name).write_bytes(data)
    holder(runs / f".{live}.lock")

    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--max-cost", "1"])
    assert result.exit_code == 1, result.output
    names = {p.name for p in runs.iterdir()}
    assert not names & set(leftovers), names & set(leftovers)
    assert set(kept) <= names
    assert f"{partial}.journal.jsonl" in names, "a partial run's journal is how it resumes"
    assert (runs / f"{complete}.json").read_bytes() == document


def test_resume_of_a_complete_run_removes_the_journal_a_kill_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, runs, run_id = _stopped_run(tmp_path, monkeypatch)
    journal = runs / f"{run_id}.journal.jsonl"
    kept = journal.read_bytes()
    base = ["run", "--config", str(cfg), "--runs-dir", str(runs), "--resume", run_id]
    assert runner.invoke(app, [*base, "-q", "--max-cost", "1"]).exit_code == 1
    assert not journal.exists()
    journal.write_bytes(kept)  # as if killed between writing the document and removing it
    (runs / f".{run_id}.json.x1y2z3.tmp").write_bytes(b"{")
    result = runner.invoke(app, base)
    assert result.exit_code == 2 and "already complete" in _one_line(result)
    assert sorted(p.name for p in runs.iterdir()) == [f"{run_id}.json"]


# ------------------------------------------------------------------ permissions


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_files_get_the_permissions_of_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int, mode: int
) -> None:
    cfg = write_project(tmp_path, cases=4, concurrency=1)
    runs = tmp_path / "runs"
    before = os.umask(umask)
    try:
        base = ["--config", str(cfg), "--runs-dir", str(runs)]
        assert runner.invoke(app, ["run", *base, "-q"]).exit_code == 0
        (doc,) = runs.glob("*.json")
        run_id = doc.name.removesuffix(".json")
        monkeypatch.chdir(tmp_path)
        assert runner.invoke(app, ["baseline", "set", run_id, *base]).exit_code == 0
        html, junit = tmp_path / "report.html", tmp_path / "junit.xml"
        assert runner.invoke(app, ["report", run_id, "--format", "html", "-o", str(html), *base]).exit_code == 0
        assert runner.invoke(app, ["compare", run_id, run_id, "--junit-xml", str(junit), *base]).exit_code == 0
    finally:
        os.umask(before)
    for path in (doc, tmp_path / "BASELINE", html, junit):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path.name


def test_a_kept_journal_gets_the_permissions_of_the_umask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = os.umask(0o022)
    try:
        _, runs, run_id = _stopped_run(tmp_path, monkeypatch)
    finally:
        os.umask(before)
    assert stat.S_IMODE((runs / f"{run_id}.journal.jsonl").stat().st_mode) == 0o644
    assert stat.S_IMODE((runs / f"{run_id}.json").stat().st_mode) == 0o644


# ------------------------------------------------------------------ damaged journals


def _journal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str, list[bytes]]:
    cfg, runs, run_id = _stopped_run(tmp_path, monkeypatch)
    (runs / f"{run_id}.json").unlink()  # as a kill -9 leaves it: the journal alone
    journal = runs / f"{run_id}.journal.jsonl"
    return cfg, journal, run_id, journal.read_bytes().splitlines(keepends=True)


def _resume(cfg: Path, journal: Path, run_id: str) -> Result:
    return runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(journal.parent),
                               "--resume", run_id, "--max-cost", "1"])


def test_a_journal_header_with_a_bad_field_is_one_line_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, journal, run_id, lines = _journal_only(tmp_path, monkeypatch)
    header = json.loads(lines[0])
    header["header"]["seed"] = "abc"
    journal.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    result = _resume(cfg, journal, run_id)
    assert result.exit_code == 2, result.output
    line = _one_line(result)
    assert f"{journal}:1: invalid journal header at seed:" in line and "integer" in line
    assert sorted(p.name for p in journal.parent.iterdir()) == [journal.name], "nothing written"


def test_a_journal_header_with_a_bad_run_option_is_one_line_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, journal, run_id, lines = _journal_only(tmp_path, monkeypatch)
    header = json.loads(lines[0])
    header["header"]["options"]["repeats"] = "x"
    journal.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    result = _resume(cfg, journal, run_id)
    assert result.exit_code == 2, result.output
    assert f"{journal}:1: invalid recorded run option at options.repeats:" in _one_line(result)


def test_an_invalid_journal_result_line_is_one_line_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, journal, run_id, lines = _journal_only(tmp_path, monkeypatch)
    bad = json.loads(lines[3])
    bad["result"]["status"] = "maybe"
    del bad["result"]["case_id"]
    journal.write_bytes(b"".join(lines[:3]) + json.dumps(bad).encode() + b"\n" + b"".join(lines[4:]))
    result = _resume(cfg, journal, run_id)
    assert result.exit_code == 2, result.output
    assert f"{journal}:4: invalid journal result at result." in _one_line(result)

    journal.write_bytes(b"".join(lines[:2]) + b"not json\n" + b"".join(lines[2:]))
    result = _resume(cfg, journal, run_id)
    assert result.exit_code == 2 and f"{journal}:3: not valid JSON" in _one_line(result)


def test_a_torn_last_line_is_dropped_and_the_next_line_starts_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, journal, run_id, lines = _journal_only(tmp_path, monkeypatch)
    journal.write_bytes(b"".join(lines) + lines[-1][:40])  # a kill in the middle of a line
    base = ["run", "--config", str(cfg), "--runs-dir", str(journal.parent), "--resume", run_id, "-q"]
    assert runner.invoke(app, [*base, "--max-cost", "0.08"]).exit_code == 1  # 4 more, partial again
    from evalh.journal import Journal

    _, results = Journal.read(journal)  # every line whole: the first new one did not join the torn one
    assert len(results) == 8
    assert runner.invoke(app, [*base, "--max-cost", "1"]).exit_code == 1
    doc = load(journal.parent / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 12
    calls = _calls(tmp_path / "calls.txt")
    assert len(calls) == 12 and set(calls.values()) == {1}, "a result lost to the torn line ran again"


def test_one_process_holds_a_run_however_its_directory_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.store import RunStore

    monkeypatch.chdir(tmp_path)
    run_id = "20261201T000000000Z-abcdef"
    held = RunStore(Path("runs")).lock(run_id)
    try:
        again = RunStore(tmp_path / "runs").lock(run_id)  # re-entrant, not a second holder
        again.release()
        assert (tmp_path / "runs" / f".{run_id}.lock").exists()
    finally:
        held.release()
    assert not (tmp_path / "runs" / f".{run_id}.lock").exists()
