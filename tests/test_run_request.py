"""`core.request.run_request`: what `evalh run` decides, without the command — the flags a resume
refuses, the dry run, the baseline loaded before anything runs, the exit code of a run
and of its comparison with the baseline, the `--json` document."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.baseline import LoadedBaseline
from evalh.config import load_config
from evalh.core.request.run_request import RunRequest, prepare_request, run_request
from evalh.errors import EvalhError


def test_resume_refuses_the_flags_it_keeps_from_the_run(repo_root: Path, tmp_path: Path) -> None:
    cfg = load_config(repo_root / "evalh.toml")
    request = RunRequest(resume="20261129T201530123Z-3fa9c1", label="x", repeats=2)
    with pytest.raises(EvalhError, match="drop --label, --repeats"):
        prepare_request(cfg, request, tmp_path / "runs")


def test_a_dry_run_is_an_estimate_and_writes_nothing(repo_root: Path, tmp_path: Path) -> None:
    cfg = load_config(repo_root / "evalh.toml")
    prepared = prepare_request(cfg, RunRequest(suites=["gate"], dry_run=True), tmp_path / "runs")
    assert prepared.warnings == [] and prepared.resume_note is None

    def unreachable() -> LoadedBaseline:
        raise AssertionError("a dry run loads no baseline")

    outcome = run_request(prepared, load_reference=unreachable)
    assert outcome.estimate is not None and outcome.run is None and outcome.code == 0
    assert outcome.to_dict() == outcome.estimate.to_dict()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_the_baseline_is_loaded_before_the_run_starts(repo_root: Path, tmp_path: Path) -> None:
    cfg = load_config(repo_root / "evalh.toml")
    prepared = prepare_request(cfg, RunRequest(suites=["gate"], compare_baseline=True), tmp_path / "runs")

    def missing() -> LoadedBaseline:
        raise EvalhError("no BASELINE")

    with pytest.raises(EvalhError, match="no BASELINE"):
        run_request(prepared, load_reference=missing)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*.json"))


def test_a_run_compared_with_itself_passes_and_its_document_says_so(repo_root: Path, tmp_path: Path) -> None:
    from evalh.baseline import load_baseline, write_baseline

    cfg = load_config(repo_root / "evalh.toml")
    runs = tmp_path / "runs"
    first = run_request(prepare_request(cfg, RunRequest(suites=["gate"]), runs))
    assert first.code == 0 and first.reasons == [] and first.comparison is None
    assert first.run is not None and first.path is not None and first.path.is_file()
    doc = first.to_dict()
    assert list(doc) == ["run_id", "path", "status", "exit_code", "reasons", "summary"]
    assert doc["summary"] == first.run.summary

    root = tmp_path / "project"
    root.mkdir()
    write_baseline(root, first.run.run_id)
    prepared = prepare_request(cfg, RunRequest(suites=["gate"], compare_baseline=True), runs)
    second = run_request(prepared, load_reference=lambda: load_baseline(root, prepared.store))
    assert second.comparison is not None and not second.comparison.fails_gate
    assert second.code == 0
    assert second.to_dict()["comparison"]["base"]["run_id"] == first.run.run_id
