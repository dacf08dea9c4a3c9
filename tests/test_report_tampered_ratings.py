"""An edited ratings file is refused by `label report` (exit 2, naming file and line), but
it no longer stops `evalh report` of every labelled run (which read no labels before the
corrected figures): the run's report is written, its corrected figure is null and flags
the refusal, so the edit is not missed."""

from __future__ import annotations

from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, label, project, run

__all__ = ["_cache_dir"]


def test_an_edited_ratings_file_nulls_the_corrected_figure_and_flags_it(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "20", "--seed", "1")
    (stored,) = (tmp_path / "runs" / "ratings").glob("*.jsonl")
    lines = stored.read_text(encoding="utf-8").split("\n")
    lines[1] = lines[1].replace('"value":"pass"', '"value":"fail"') if '"value":"pass"' in lines[1] \
        else lines[1].replace('"value":"fail"', '"value":"pass"')
    stored.write_text("\n".join(lines), encoding="utf-8")
    refused = cli(cfg, "label", "report", run_id)
    assert refused.exit_code == 2 and "does not match its SHA-256 in the header: edited" in refused.output
    for fmt in ("md", "json", "table"):
        res = cli(cfg, "report", run_id, "--format", fmt)
        assert res.exit_code == 0, res.output
        assert "does not match its SHA-256 in the header: edited" in res.stdout.replace("\n", " ") or \
            "does not match its SHA-256" in res.stdout, fmt
    from evalh.ui.api import DashboardApi
    from evalh.ui.index import RunIndex

    board = DashboardApi(RunIndex(tmp_path / "runs"), tmp_path).report(run_id)
    (fig,) = [f for f in board["suites"][0]["figures"] if f["kind"] == "corrected"]
    assert any("edited" in f for f in fig["flags"])
