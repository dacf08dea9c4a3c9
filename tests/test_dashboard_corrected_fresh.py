"""The dashboard's report of a run follows its labels: a random draw or ratings imported
while the dashboard runs change the corrected (PPI++) figure it shows, though the run
document itself is unchanged (the report was cached by the run file alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh.ui.api import DashboardApi
from evalh.ui.index import RunIndex
from tests.test_labels_corrected import _cache_dir, label, project, report, run

__all__ = ["_cache_dir"]


def corrected(board: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in board["suites"][0]["figures"] if f["kind"] == "corrected"]


def test_the_dashboard_shows_labels_imported_after_it_read_the_run(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    api = DashboardApi(RunIndex(tmp_path / "runs"), tmp_path)
    assert corrected(api.report(run_id)) == []  # nobody has labelled it yet
    label(cfg, run_id, "--sample", "24", "--seed", "7")
    (fig,) = corrected(api.report(run_id))
    assert fig["data"]["estimate"] == report(cfg, run_id)["corrected"][0]["estimate"]
