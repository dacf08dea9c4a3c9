"""`evalh run --resume`: a run killed midway finishes without running a finished case twice,
and its document equals an uninterrupted run's; interrupted runs keep their journal;
resuming refuses a changed config or dataset."""

from __future__ import annotations

import collections
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.runner_project import by_triple, evalh_process, journal_results, load, write_project

runner = CliRunner()


def _wait_for_journal(runs: Path, proc: Any, at_least: int) -> Path | None:
    """The run's journal once it holds `at_least` results (None if the run ended first)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        if found and len(journal_results(found[0])) >= at_least:
            return found[0]
        time.sleep(0.005)
    return None


def _calls(path: Path) -> collections.Counter[tuple[str, str, int]]:
    out: collections.Counter[tuple[str, str, int]] = collections.Counter()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            case_id, arm, attempt = line.split()
            out[(case_id, arm, int(attempt))] += 1
    return out


def _essence(result: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between a resumed and an uninterrupted run (timings aside)."""
    return {
        "status": result["status"], "score": result["score"], "output": result["output"],
        "scores": [(s["scorer"], s["value"], s["passed"]) for s in result["scores"]],
        "error": result["error"], "case_digest": result["case_digest"],
    }


def _reference(cfg: Path, runs: Path, args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """An uninterrupted run of the same config and seed, in-process, fast."""
    monkeypatch.setenv("SLOW_S", "0")
    monkeypatch.delenv("CALLS_FILE", raising=False)
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    assert result.exit_code in (0, 1), result.output
    (path,) = runs.glob("*.json")
    return load(path)


def test_killed_run_resumes_without_running_a_finished_case_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_project(tmp_path, cases=40, concurrency=4, suite_extra="repeats = 2")
    runs = tmp_path / "runs"
    calls_file = tmp_path / "calls.txt"
    env = {"CALLS_FILE": str(calls_file), "SLOW_S": "0.03", "CRASH_EVERY": "7"}
    monkeypatch.setenv("CRASH_EVERY", "7")

    proc = evalh_process(["run", "--seed", "11", "-q", "--runs-dir", str(runs)], tmp_path, env)
    journal = _wait_for_journal(runs, proc, at_least=15)
    proc.kill()
    proc.wait(timeout=10)
    assert journal is not None, "the run ended before it could be killed"
    assert not list(runs.glob("*.json")), "SIGKILL leaves no document, only the journal"
    finished = {(r["case_id"], r["arm"], r["attempt"]) for r in journal_results(journal)}
    assert 15 <= len(finished) < 80
    run_id = journal.name.removesuffix(".journal.jsonl")

    resumed = evalh_process(["run", "--resume", run_id, "--runs-dir", str(runs), "-q"], tmp_path, env)
    _, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 1, stderr  # deterministic suite with failed and errored cases

    calls = _calls(calls_file)
    assert all(calls[t] == 1 for t in finished), "a case that had finished ran again"
    everything = {(f"c{n:03d}", "default", a) for n in range(40) for a in range(2)}
    assert set(calls) == everything
    # besides the finished ones, only the cases in flight at the kill (at most 4) ran twice
    assert sum(calls.values()) <= 80 + 4

    doc = load(runs / f"{run_id}.json")
    assert not journal.exists(), "a complete run's journal is removed"
    assert doc["status"] == "complete" and doc["status_reason"] is None
    assert doc["run_id"] == run_id and doc["seed"] == 11 and doc["derived_from"] is None

    reference = _reference(cfg, tmp_path / "ref", ["--seed", "11"], monkeypatch)
    got, want = by_triple(doc), by_triple(reference)
    assert set(got) == set(want) == everything
    assert {t: _essence(r) for t, r in got.items()} == {t: _essence(r) for t, r in want.items()}
    assert [r["case_id"] for r in doc["suites"]["s"]["cases"]] == [
        r["case_id"] for r in reference["suites"]["s"]["cases"]
    ]
    agg, ref_agg = doc["suites"]["s"]["aggregate"], reference["suites"]["s"]["aggregate"]
    for key in ("n", "passed", "failed", "errored", "pass_rate", "mean_score"):
        assert agg[key] == ref_agg[key], key
    assert agg["errored"] > 0 and agg["failed"] > 0 and agg["passed"] > 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_interrupted_run_is_written_partial_and_keeps_its_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
) -> None:
    cfg = write_project(tmp_path, cases=60, concurrency=2)
    runs = tmp_path / "runs"
    proc = evalh_process(["run", "-q", "--runs-dir", str(runs)], tmp_path, {"SLOW_S": "0.05"})
    journal = _wait_for_journal(runs, proc, at_least=4)
    assert journal is not None, "the run ended before it could be interrupted"
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    run_id = journal.name.removesuffix(".journal.jsonl")
    assert f"evalh run --resume {run_id}" in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert journal.exists()
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "partial" and doc["status_reason"] == "interrupted"
    # finished_at means "completed" (issue 29): a stopped run keeps its stop time apart
    assert doc["finished_at"] is None and doc["stopped_at"] >= doc["started_at"]
    kept = {(r["case_id"], r["arm"], r["attempt"]) for r in journal_results(journal)}
    assert set(by_triple(doc)) == kept and 4 <= len(kept) < 60

    monkeypatch.setenv("SLOW_S", "0")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--resume", run_id])
    assert result.exit_code == 1, result.output  # every fifth case fails by design
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 60
    assert doc["finished_at"] and doc["stopped_at"] is None
    assert not journal.exists()


def _budget_stopped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A run of `priced` (1 cent a case) stopped by --max-cost 0.05 after 5 of 12 cases."""
    cfg = write_project(tmp_path, cases=12, concurrency=1, target="priced")
    runs = tmp_path / "runs"
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    result = runner.invoke(
        app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--seed", "5",
              "--max-cost", "0.05"],
    )
    assert result.exit_code in (0, 1), result.output
    (path,) = runs.glob("*.json")
    doc = load(path)
    assert doc["status"] == "partial" and "cost budget reached" in doc["status_reason"]
    assert len(doc["suites"]["s"]["cases"]) == 5
    return cfg, runs, doc["run_id"]


def test_budget_stopped_run_resumes_with_a_larger_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    base = ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--resume", run_id]

    # the budget counts what the run already spent: resuming with the same one runs nothing
    result = runner.invoke(app, base)
    assert result.exit_code in (0, 1), result.output
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "partial" and len(doc["suites"]["s"]["cases"]) == 5
    assert sum(_calls(tmp_path / "calls.txt").values()) == 5

    result = runner.invoke(app, [*base, "--max-cost", "1"])
    assert result.exit_code in (0, 1), result.output
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 12
    calls = _calls(tmp_path / "calls.txt")
    assert len(calls) == 12 and set(calls.values()) == {1}
    assert doc["config"]["run_options"]["max_cost_usd"] == 1
    assert doc["suites"]["s"]["aggregate"]["cost_usd"] == pytest.approx(0.12)


def test_resume_from_the_document_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    (runs / f"{run_id}.journal.jsonl").unlink()
    result = runner.invoke(
        app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--resume", run_id,
              "--max-cost", "1"],
    )
    assert result.exit_code in (0, 1), result.output
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 12
    assert set(_calls(tmp_path / "calls.txt").values()) == {1}
    assert doc["seed"] == 5 and doc["run_id"] == run_id  # the document's record, not defaults


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("config", "changed since it started (at suites.s.scorers[0].field)"),
        ("dataset", "dataset data/s.jsonl of suite 's' changed since it started"),
    ],
)
def test_resume_refuses_a_changed_config_or_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, message: str
) -> None:
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    if change == "config":
        cfg.write_text(cfg.read_text().replace('field = "verdict"', 'field = "answer"'))
    else:
        data = tmp_path / "data" / "s.jsonl"
        data.write_text(data.read_text().replace('"n": 3}', '"n": 3, "x": 1}'))
    before = {p.name: p.read_bytes() for p in runs.iterdir()}
    result = runner.invoke(
        app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--resume", run_id,
              "--max-cost", "1"],
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in runs.iterdir()} == before


def test_resume_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    base = ["run", "--config", str(cfg), "--runs-dir", str(runs)]

    result = runner.invoke(app, [*base, "--resume", run_id, "--suite", "s"])
    assert result.exit_code == 2 and "drop --suite" in result.output
    result = runner.invoke(app, [*base, "--resume", run_id, "--seed", "1", "--allow-self-judge"])
    assert result.exit_code == 2 and "drop --seed, --allow-self-judge" in result.output

    result = runner.invoke(app, [*base, "--resume", "20260101T000000000Z-abcdef"])
    assert result.exit_code == 2 and "no run" in result.output

    result = runner.invoke(app, [*base, "--resume", "../escape"])
    assert result.exit_code == 2 and "invalid run id" in result.output

    assert runner.invoke(app, [*base, "-q", "--resume", run_id, "--max-cost", "1"]).exit_code in (0, 1)
    result = runner.invoke(app, [*base, "--resume", run_id])
    assert result.exit_code == 2 and "already complete" in result.output


def test_dry_run_of_a_resume_counts_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    before = {p.name: p.read_bytes() for p in runs.iterdir()}
    result = runner.invoke(
        app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--resume", run_id, "--dry-run", "--json"],
    )
    assert result.exit_code == 0, result.output
    import json

    est = json.loads(result.stdout)
    assert est["items"] == 7 and est["suites"][0]["done"] == 5
    assert {p.name: p.read_bytes() for p in runs.iterdir()} == before


def test_a_budget_stopped_run_has_no_finished_at_and_says_when_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: `finished_at` means completed; the report shows the stop time instead."""
    cfg, runs, run_id = _budget_stopped_run(tmp_path, monkeypatch)
    doc = load(runs / f"{run_id}.json")
    assert doc["finished_at"] is None and doc["stopped_at"] >= doc["started_at"]
    assert doc["summary"].get("finished_at") is None
    html = runner.invoke(app, ["report", run_id, "--config", str(cfg), "--runs-dir", str(runs), "--format", "html"])
    assert html.exit_code == 0, html.output
    assert f"· stopped {doc['stopped_at']}" in html.stdout and "· finished" not in html.stdout
    js = json.loads(runner.invoke(app, ["report", run_id, "--config", str(cfg), "--runs-dir", str(runs),
                                        "--format", "json"]).stdout)
    (header,) = js["runs"]
    assert header["finished_at"] is None and header["stopped_at"] == doc["stopped_at"]
