"""A complete run's document made from its journal as the journal shrinks
(`evalh.core.run.finish`): the same document, byte for byte, as the one written beside the
journal, and no result lost whenever the process dies while making it.

The finish is used for journals of 64 MiB and more; here its thresholds are lowered
(`MIN_JOURNAL` 0, chunks and segments of a few KB) so a run of a few dozen cases goes
through dozens of its steps. The kill test runs `evalh run` in a child process that
dies (`os._exit`, no clean-up) just before its k-th file operation of the finish — a
write cut in half, a sync, a truncation, the rename — then resumes the run with
`evalh run --resume` and compares the document with an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_lean_path_golden import GOLDEN, normalize, run_document

TARGET = '''def instant(inp):
    return {"verdict": inp["verdict"], "note": inp["q"][::-1]}
'''

DRIVER = r'''
import os, sys
import evalh.core.run.finish as finish
finish.MIN_JOURNAL, finish.CHUNK, finish.SEGMENT_MIN, finish.SEGMENTS = 0, 3000, 2000, 64
kill_at = int(os.environ.get("KILL_AT", "0"))
count = [0]
active = [False]

def step(name, real):
    def wrapped(*args):
        if active[0]:
            count[0] += 1
            if count[0] == kill_at:
                if name in ("write", "pwrite"):  # a write cut in half
                    data = args[1]
                    real(*(args[:1] + (bytes(data[:len(data) // 2]),) + args[2:]))
                os._exit(137)
        return real(*args)
    return wrapped

for name in ("write", "pwrite", "fsync", "ftruncate", "replace", "unlink"):
    setattr(os, name, step(name, getattr(os, name)))

for name in ("finish_from_journal", "complete_pending"):
    real = getattr(finish, name)
    def counted(*args, _real=real):
        active[0] = True
        try:
            return _real(*args)
        finally:
            active[0] = False
            if kill_at:
                sys.stderr.write(f"steps: {count[0]}\n")
    setattr(finish, name, counted)
import evalh.core.run.runner as runner
import evalh.core.run.resume as resume
runner.finish_from_journal = finish.finish_from_journal
resume.complete_pending = finish.complete_pending

from evalh.cli.main import app
sys.argv = ["evalh", *sys.argv[1:]]
app()
'''


def _project(base: Path, n: int = 40) -> Path:
    """Two suites of `n` instant cases, one repeated; one case at a time, so the journal's
    order (shuffled with the seed) and the finish's steps are the same in every run."""
    base.mkdir(parents=True, exist_ok=True)
    with (base / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            v = "ok" if i % 7 else "bad"
            fh.write(json.dumps({"id": f"c{i:03d}", "input": {"q": f"question {i} " + "y" * (i * 13 % 90),
                                                               "verdict": v}, "expected": {"verdict": v}}) + "\n")
    (base / "finish_target.py").write_text(TARGET, encoding="utf-8")
    suite = 'dataset = "cases.jsonl"\ntarget = "finish_target:instant"\nscorers = [{ type = "exact", field = "verdict" }]\n'
    (base / "evalh.toml").write_text(f"[evalh]\nconcurrency = 1\n\n[suites.first]\n{suite}repeats = 2\n\n"
                                     f"[suites.second]\n{suite}", encoding="utf-8")
    (base / "driver.py").write_text(DRIVER, encoding="utf-8")
    return base


def _evalh(base: Path, *args: str, kill_at: int = 0, min_journal: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KILL_AT": str(kill_at), "EVALH_NO_PROGRESS": "1", "PYTHONPATH": str(base)}
    env.pop("EVAL_RUNS_DIR", None)
    argv = [sys.executable, str(base / "driver.py")] if min_journal else [sys.executable, "-m", "evalh.cli.main"]
    return subprocess.run([*argv, *args], cwd=base, env=env, capture_output=True, text=True, timeout=300)


def _only_document(runs: Path) -> bytes:
    names = sorted(p.name for p in runs.iterdir())
    docs = [n for n in names if n.endswith(".json")]
    assert len(docs) == 1 and names == docs, names  # no journal, staged file, plan or lock left
    return (runs / docs[0]).read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, int]:
    """The project, the document of an uninterrupted run written beside its journal (as
    before), and how many file operations the finish takes."""
    base = _project(tmp_path_factory.mktemp("finish"))
    done = _evalh(base, "run", "-q", "--seed", "5", "--runs-dir", "before", min_journal=False)
    assert done.returncode == 1, done.stderr  # a seventh of the cases fail: the verdict is red
    before = _only_document(base / "before")
    counted = _evalh(base, "run", "-q", "--seed", "5", "--runs-dir", "counted", kill_at=10**9)
    assert counted.returncode == 1, counted.stderr
    steps = int(counted.stderr.rsplit("steps: ", 1)[1].split()[0])
    assert normalize(_only_document(base / "counted")) == normalize(before)
    return base, before, steps


def test_the_document_made_from_the_journal_is_the_one_written_beside_it(reference: tuple[Path, bytes, int]) -> None:
    _, _, steps = reference
    assert steps > 40  # chunks and segments enough for the kills below to land everywhere


def test_the_golden_runs_document_is_made_the_same_from_its_journal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalh.core.run.finish as finish

    monkeypatch.setattr(finish, "MIN_JOURNAL", 0)
    monkeypatch.setattr(finish, "CHUNK", 5000)
    monkeypatch.setattr(finish, "SEGMENT_MIN", 4000)
    calls: list[bool] = []
    real = finish.finish_from_journal
    monkeypatch.setattr("evalh.core.run.runner.finish_from_journal",
                        lambda *a: calls.append(real(*a)) or calls[-1])
    assert normalize(run_document(tmp_path / "runs")) == GOLDEN.read_bytes()
    assert calls == [True]


def _kill_and_resume(reference: tuple[Path, bytes, int], tmp_path: Path, k: int) -> None:
    base, before, steps = reference
    runs = tmp_path / f"killed{k}"
    killed = _evalh(base, "run", "-q", "--seed", "5", "--runs-dir", str(runs), kill_at=k)
    assert killed.returncode == 137, (k, killed.stderr)
    journals = [p.name.removesuffix(".journal.jsonl") for p in runs.glob("*.journal.jsonl")]
    docs = [p.stem for p in runs.glob("*.json")]
    (run_id,) = set(journals + docs)
    assert journals or docs  # the journal stays until the document is in place
    pending = (runs / f".{run_id}.finish").exists()
    resumed = _evalh(base, "run", "--resume", run_id, "-q", "--runs-dir", str(runs))
    if pending or docs:
        # the finish had begun taking results from the journal, or was cleaning up after
        # the document: the resume completes it, or finds it complete
        assert resumed.returncode == 2 and "complete" in resumed.stderr, (k, resumed.stderr)
    else:
        assert resumed.returncode == 1, (k, resumed.stderr)  # resumed as usual: nothing left to run
    assert normalize(_only_document(runs)) == normalize(before), k


def test_a_kill_anywhere_in_the_finish_loses_nothing(reference: tuple[Path, bytes, int], tmp_path: Path) -> None:
    _, _, steps = reference
    for k in sorted({1, 2, 3, 5, 8, steps // 3, steps // 2, 2 * steps // 3, steps - 3, steps - 1, steps}):
        _kill_and_resume(reference, tmp_path, k)


@pytest.mark.slow
def test_a_kill_at_every_step_of_the_finish_loses_nothing(reference: tuple[Path, bytes, int], tmp_path: Path) -> None:
    _, _, steps = reference
    for k in range(1, steps + 1):
        _kill_and_resume(reference, tmp_path, k)


def test_a_secret_the_journal_holds_has_the_document_written_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The results are moved as the journal holds them: a secret registered after its lines
    were written (so the journal holds it) sends the run to the writer that scrubs each line."""
    from typer.testing import CliRunner

    import evalh.core.run.finish as finish
    import evalh.redact as redact
    from evalh.cli.main import app

    base = _project(tmp_path / "p")
    monkeypatch.setattr(finish, "MIN_JOURNAL", 0)
    monkeypatch.setattr(redact, "_REGISTERED", set())
    used: list[bool] = []
    real = finish.finish_from_journal

    def late(*args: object) -> bool:
        redact.register_secret("2 noitseuq")  # in the reversed question of c002, c020-c029
        used.append(real(*args))  # type: ignore[arg-type]
        return used[-1]

    monkeypatch.setattr("evalh.core.run.runner.finish_from_journal", late)
    monkeypatch.chdir(base)
    result = CliRunner().invoke(app, ["run", "-q", "--seed", "5", "--runs-dir", "runs"])
    assert result.exit_code == 1, result.output
    assert used == [False]
    doc = _only_document(base / "runs")
    assert b"2 noitseuq" not in doc and doc.count(redact.REDACTED.encode()) >= 11 * 3


def test_the_sweep_keeps_a_finishs_files_while_they_hold_results(tmp_path: Path) -> None:
    from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult
    from evalh.store import RunStore

    store = RunStore(tmp_path / "runs")
    run_id = "20260101T000000000Z-aaaaaa"
    plan, stage, doc = store.finish_paths(run_id)
    journal = store.journal_path(run_id)
    store.runs_dir.mkdir()
    for path in (journal, stage, doc, store.runs_dir / f"..{run_id}.finish.x1y2.tmp"):
        path.write_bytes(b"x")
    store.sweep()  # no plan: a finish killed before it took anything from the journal
    assert sorted(p.name for p in store.runs_dir.iterdir()) == [journal.name]
    for path in (stage, doc, plan):
        path.write_bytes(b"x")
    store.sweep()  # the plan and no complete document: they hold results
    assert sorted(p.name for p in store.runs_dir.iterdir()) == sorted(p.name for p in (journal, stage, doc, plan))
    store.write(Run(run_id=run_id, started_at="2026-01-01T00:00:00Z", status="complete",
                    environment=EnvironmentInfo(evalh="0", python="3", platform="test"),
                    suites={"s": SuiteResult(regime="deterministic", dataset=DatasetInfo(path="d", sha256="x", cases=1),
                                             cases=[CaseResult(case_id="a", status="passed", score=1.0)])}))
    store.sweep()  # killed after the rename: the document is complete, the rest goes
    assert [p.name for p in store.runs_dir.iterdir()] == [f"{run_id}.json"]
