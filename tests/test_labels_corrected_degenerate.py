"""A corrected figure whose labels are all one value has a zero-width (CLT) interval: it
measures no judge–human disagreement, so it cannot say how many labels a target width
needs — `labels_needed` is null with the reason, and `export-requests --target-width`
refuses to plan from it instead of calling the target already met."""

from __future__ import annotations

from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, label, project, report, run

__all__ = ["_cache_dir"]


def test_a_zero_width_interval_plans_no_labels(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    rated = label(cfg, run_id, "--sample", "3", "--seed", "11")
    assert {r["output"]["text"].split()[0] for r in rated} == {"GOOD"}  # three labels, one value

    (fig,) = report(cfg, run_id, "--target-width", "0.3")["corrected"]
    assert fig["interval_95"][0] == fig["interval_95"][1]  # the CLT interval collapses
    plan = fig["labels_needed"]
    assert plan["labels_needed"] is None
    assert "zero-width" in plan["reason"]

    out = tmp_path / "more.json"
    res = cli(cfg, "export-requests", run_id, "--rubric", str(tmp_path / "rubric.md"), "--target-width", "0.3",
              "--seed", "5", "-o", str(out))
    assert res.exit_code == 2, res.output
    assert "zero-width" in res.output and "already" not in res.output
    assert not out.exists()


def test_the_terminal_report_says_why(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "3", "--seed", "11")
    res = cli(cfg, "label", "report", run_id, "--target-width", "0.3")
    assert res.exit_code == 0, res.output
    assert "0 more" not in res.stdout and "zero-width" in res.stdout
