"""One summary of a run: the document's `summary`, the dashboard's history row and the
pass rates `evalh runs` lists are forms of `core.results.outcome.run_summary`, and agree."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.config import load_config
from evalh.core.request.run_request import RunRequest, prepare_request, run_request
from evalh.core.results.outcome import run_summary
from evalh.ui.index import history_row


def test_the_document_the_dashboard_and_the_listing_show_one_summary(repo_root: Path, tmp_path: Path) -> None:
    import orjson

    cfg = load_config(repo_root / "evalh.toml")
    runs = tmp_path / "runs"
    run = run_request(prepare_request(cfg, RunRequest(suites=["gate"], label="one"), runs)).run
    assert run is not None
    summary = run_summary(run)
    assert run.summary == summary.document()
    row = history_row(run)
    assert row == summary.history_row()
    assert row["run_id"] == run.run_id and row["label"] == "one"
    document_rates = {n: s["pass_rate"] for n, s in run.summary["suites"].items()}
    assert {n: s["aggregate"]["pass_rate"] for n, s in row["suites"].items()} == document_rates
    assert row["cost_usd"] == run.summary["cost_usd"]

    listed = CliRunner().invoke(app, ["runs", "--runs-dir", str(runs), "--config", str(repo_root / "evalh.toml"), "--json"])
    assert listed.exit_code == 0, listed.output
    (entry,) = orjson.loads(listed.stdout)
    assert entry["run_id"] == run.run_id and entry["suites"] == document_rates
