"""`export-requests --seed S` without `--sample` or `--target-width` drew nothing and
exported every request, exit 0: a user who meant to draw a random sample got none, and the
corrected figure was null later. It is refused in one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, project, run

__all__ = ["_cache_dir"]


def test_a_seed_without_a_draw_is_refused(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    out = tmp_path / "req.json"
    res = cli(cfg, "export-requests", run_id, "--rubric", str(tmp_path / "rubric.md"), "--seed", "7", "-o", str(out))
    assert res.exit_code == 2, res.output
    assert "--seed" in res.output and "--sample" in res.output
    assert not out.exists() and not (tmp_path / "runs" / f"{run_id}.labels.json").exists()
