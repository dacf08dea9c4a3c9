"""A stratified draw (`export-requests --target-width`) samples each stratum at its own
rate, so the corrected figure must weight the strata of the draw: it weighted whatever
`--by` the report asked for (and `evalh report` always `stratum`), giving a biased figure
when the two differ. The draw's strata are now the figure's, whatever `--by` says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_labels_corrected import CASES, _cache_dir, good, label, project, report, run, text

__all__ = ["_cache_dir"]


def test_the_figure_weights_the_strata_the_draw_was_made_by(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, x in enumerate(lines):
        x["metadata"] = {"stratum": "A" if i % 2 else "B", "split": "x" if i % 3 else "y"}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {
        "verdict": ("pass" if good(i, 4) else "fail") if i % 2 else "pass", "rationale": "scripted"}}
        for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "16", "--seed", "2")
    label(cfg, run_id, "--target-width", "0.25", "--seed", "3")  # more from B: unequal rates by stratum
    side = json.loads((tmp_path / "runs" / f"{run_id}.labels.json").read_text(encoding="utf-8"))
    assert side["samples"][1]["method"] == "stratified" and side["samples"][1]["by"] == ["stratum"]
    (by_stratum,) = report(cfg, run_id)["corrected"]
    (by_split,) = report(cfg, run_id, "--by", "split")["corrected"]
    assert by_split["estimate"] == pytest.approx(by_stratum["estimate"], abs=1e-12)
    assert set(by_split["strata"]) == {"A", "B"}


def test_a_further_draw_keeps_the_strata_of_the_first_stratified_one(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, x in enumerate(lines):
        x["metadata"] = {"stratum": "A" if i % 2 else "B", "split": "x" if i % 3 else "y"}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {
        "verdict": ("pass" if good(i, 4) else "fail") if i % 2 else "pass", "rationale": "scripted"}}
        for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "16", "--seed", "2")
    label(cfg, run_id, "--target-width", "0.25", "--seed", "3")
    (now,) = report(cfg, run_id)["corrected"]
    narrower = f"{0.95 * (now['interval_95'][1] - now['interval_95'][0]):.4f}"
    label(cfg, run_id, "--target-width", narrower, "--seed", "4", "--by", "split")
    side = json.loads((tmp_path / "runs" / f"{run_id}.labels.json").read_text(encoding="utf-8"))
    assert [s["by"] for s in side["samples"][1:]] == [["stratum"], ["stratum"]]
    (fig,) = report(cfg, run_id, "--by", "split")["corrected"]
    assert fig["null_reasons"] == [] and set(fig["strata"]) == {"A", "B"}
