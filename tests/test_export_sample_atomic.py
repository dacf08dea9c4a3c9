"""`export-requests --sample` records its draw only once the export is written: when the
file cannot be written (exit 2, one line), the label sidecar holds no draw nobody received
— such a draw would leave drawn results unlabelled and the corrected figure null for good."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, label, project, report, run

__all__ = ["_cache_dir"]


def test_a_draw_whose_export_cannot_be_written_is_not_recorded(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "20", "--seed", "1")
    side = tmp_path / "runs" / f"{run_id}.labels.json"
    before = json.loads(side.read_text(encoding="utf-8"))["samples"]
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    res = cli(cfg, "export-requests", run_id, "--rubric", str(tmp_path / "rubric.md"), "--sample", "5",
              "--seed", "2", "-o", str(tmp_path / "a-file" / "more.json"))
    assert res.exit_code == 2, res.output
    assert json.loads(side.read_text(encoding="utf-8"))["samples"] == before
    (fig,) = report(cfg, run_id)["corrected"]
    assert fig["null_reasons"] == [] and fig["labelled"] == 20
