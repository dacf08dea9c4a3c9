"""`evalh compare BASE CAND --corrected` takes runs by path like every compare does: the
corrected row reads each run (and its label sidecar beside it) from the path given, not
from the runs directory by id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, label, project, run

__all__ = ["_cache_dir"]


def test_compare_corrected_reads_a_run_given_by_path(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    base = run(cfg)
    label(cfg, base, "--sample", "20", "--seed", "1")
    project(tmp_path, bad_every=3)  # a worse product (and the judge's script for its answers)
    cand = run(cfg)
    label(cfg, cand, "--sample", "20", "--seed", "1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = tmp_path / "runs"
    for name in (f"{cand}.json", f"{cand}.labels.json"):
        shutil.move(str(runs / name), str(elsewhere / name))
    res = cli(cfg, "compare", base, str(elsewhere / f"{cand}.json"), "--corrected", "--json")
    assert res.exit_code == 0, res.output
    rows = {m["name"] for m in json.loads(res.stdout)["suites"]["s"]["metrics"]}
    assert "corrected_pass_rate" in rows
