"""`inline = true` on a Python target: a sync function called on the event loop, without the
hand-off to a worker thread, behaves as the threaded call does — the case's context, errors
and timeouts recorded as `errored`, the same statuses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.runner_project import TARGET_MODULE, by_triple, load, write_project

runner = CliRunner()

THREAD_PROBE = '''

def thread_name(inp):
    import threading
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd", "thread": threading.current_thread().name}
'''


def _project(root: Path, target: str, *, inline: bool, cases: int = 10, concurrency: int = 4) -> Path:
    cfg = write_project(root, cases=cases, target=target, concurrency=concurrency)
    text = cfg.read_text().replace(
        f'target = "{TARGET_MODULE}:{target}"',
        f'target = {{ kind = "python", callable = "{TARGET_MODULE}:{target}", inline = {str(inline).lower()} }}',
    )
    cfg.write_text(text)
    module = root / f"{TARGET_MODULE}.py"
    module.write_text(module.read_text() + THREAD_PROBE)
    return cfg


def _run(cfg: Path, runs: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    [doc] = sorted(runs.glob("*.json"))
    return result, load(doc)


def _facts(doc: dict[str, Any]) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {k: (r["status"], r["score"], r["error"], r["seed"]) for k, r in by_triple(doc).items()}


def test_an_inline_target_runs_on_the_loop_thread_and_a_threaded_one_does_not(tmp_path: Path) -> None:
    _, inline = _run(_project(tmp_path / "a", "thread_name", inline=True), tmp_path / "a" / "runs")
    _, threaded = _run(_project(tmp_path / "b", "thread_name", inline=False), tmp_path / "b" / "runs")
    assert {r["output"]["thread"] for r in inline["suites"]["s"]["cases"]} == {"MainThread"}
    assert all(r["output"]["thread"].startswith("evalh-target") for r in threaded["suites"]["s"]["cases"])


@pytest.mark.parametrize("concurrency", [1, 8])
def test_inline_targets_see_their_own_case_as_threaded_ones_do(tmp_path: Path, concurrency: int) -> None:
    results = {}
    for inline in (True, False):
        root = tmp_path / str(inline)
        _, doc = _run(_project(root, "who", inline=inline, cases=16, concurrency=concurrency), root / "runs",
                      "--seed", "7")
        for r in doc["suites"]["s"]["cases"]:
            out = r["output"]
            assert out["ctx"] == [doc["run_id"], "s", r["case_id"], "default", r["attempt"]]
            assert out["env_run_id"] == doc["run_id"]
            assert out["env_case_id"] == (r["case_id"] if concurrency == 1 else None)
        results[inline] = _facts(doc)
    assert results[True] == results[False]


def test_an_inline_target_that_raises_gives_errored_cases_like_a_threaded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRASH_EVERY", "3")
    docs = {}
    for inline in (True, False):
        root = tmp_path / str(inline)
        result, docs[inline] = _run(_project(root, "parity", inline=inline, cases=12), root / "runs", "--seed", "4")
        assert result.exit_code == 1, result.output
    errored = [r for r in docs[True]["suites"]["s"]["cases"] if r["status"] == "errored"]
    assert len(errored) == 4
    assert all(r["error"]["type"] == "RuntimeError" for r in errored)
    assert _facts(docs[True]) == _facts(docs[False])


def test_an_inline_call_past_its_timeout_is_errored_when_it_returns(tmp_path: Path) -> None:
    """Nothing can interrupt a sync call on the loop: it is recorded as the timeout it was."""
    root = tmp_path / "t"
    result, doc = _run(_project(root, "sleepy", inline=True, cases=2, concurrency=1), root / "runs",
                       "--timeout", "0.05")
    assert result.exit_code == 1, result.output
    for r in doc["suites"]["s"]["cases"]:
        assert r["status"] == "errored"
        assert r["error"]["type"] == "TimeoutError"
        assert r["latency_ms"] >= 50


def test_inline_is_not_part_of_the_config_snapshot(tmp_path: Path) -> None:
    """Where a sync function runs changes no output: a run and its resume may differ in it."""
    _, doc = _run(_project(tmp_path, "parity", inline=True), tmp_path / "runs")
    assert "inline" not in doc["suites"]["s"]["target"]


# ---------------------------------------------------------------------------- @evalh.api.inline

DECLARED = '''

from evalh.api import inline as _inline

_plain_parity = parity


@_inline
def parity(inp):
    return _plain_parity(inp)


@_inline
def declared_thread_name(inp):
    return thread_name(inp)


@_inline
def scorer_thread(case, output):
    import threading
    return {"value": 1.0, "passed": True, "rationale": threading.current_thread().name}
'''


def _declared(root: Path, target: str, *, declare: bool, cases: int = 10, concurrency: int = 4) -> Path:
    """The project of `_project` without `inline` in its config; with `declare`, its target
    module's functions are declared cheap with `@evalh.api.inline` instead."""
    cfg = _project(root, target, inline=False, cases=cases, concurrency=concurrency)
    cfg.write_text(cfg.read_text().replace(", inline = false", ""))
    if declare:
        module = root / f"{TARGET_MODULE}.py"
        module.write_text(module.read_text() + DECLARED)
    return cfg


def test_a_target_declared_inline_runs_on_the_loop_thread(tmp_path: Path) -> None:
    cfg = _declared(tmp_path, "declared_thread_name", declare=True)
    result, doc = _run(cfg, tmp_path / "runs")
    assert result.exit_code == 1, result.output  # every fifth case is mislabelled: a red gate
    assert {r["output"]["thread"] for r in doc["suites"]["s"]["cases"]} == {"MainThread"}
    assert "inline" not in doc["suites"]["s"]["target"]


def test_a_target_declared_inline_writes_the_document_a_threaded_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte for byte, once what differs between any two runs is masked (the golden test's
    mask): where a sync function runs changes nothing a run records."""
    from tests.test_lean_path_golden import normalize

    docs = {}
    for declare in (True, False):
        root = tmp_path / str(declare)
        cfg = _declared(root, "parity", declare=declare, cases=24, concurrency=4)
        monkeypatch.delitem(sys.modules, TARGET_MODULE, raising=False)  # this project's module
        result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(root / "runs"), "-q",
                                     "--seed", "5"])
        assert result.exit_code == 1, result.output
        [path] = (root / "runs").glob("*.json")
        docs[declare] = normalize(path.read_bytes())
    assert docs[True] == docs[False]


def test_a_custom_scorer_declared_inline_runs_on_the_loop_thread(tmp_path: Path) -> None:
    cfg = _declared(tmp_path, "parity", declare=True)
    cfg.write_text(cfg.read_text().replace(
        'scorers = [{ type = "exact", field = "verdict" }]',
        f'scorers = [{{ type = "custom", function = "{TARGET_MODULE}:scorer_thread" }}]'))
    result, doc = _run(cfg, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    rationales = {s["rationale"] for r in doc["suites"]["s"]["cases"] for s in r["scores"]}
    assert rationales == {"MainThread"}


def test_inline_refuses_what_it_cannot_mark_saying_so() -> None:
    from evalh.api import inline

    with pytest.raises(TypeError, match="@inline cannot mark"):
        inline(len)
