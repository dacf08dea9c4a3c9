"""`--target-width` never plans to label a whole stratum: the corrected figure needs an
unlabelled result in each stratum of a stratified draw, so a plan that labelled all of
one (as evalh advised, then drew) turned the figure null ('none unlabelled')."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_labels_corrected import CASES, _cache_dir, good, label, project, report, run, text

__all__ = ["_cache_dir"]


def test_following_the_plan_keeps_the_figure_valid(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, x in enumerate(lines):
        x["metadata"] = {"stratum": "A" if i % 2 else "B"}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {
        "verdict": ("pass" if good(i, 4) else "fail") if i % 2 else "pass", "rationale": "scripted"}}
        for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "16", "--seed", "2")
    (fig,) = report(cfg, run_id)["corrected"]
    strata = fig["strata"]
    widest: str | None = None
    for width in ("0.3", "0.25", "0.2", "0.18", "0.16", "0.14", "0.12", "0.1"):
        (planned,) = report(cfg, run_id, "--target-width", width)["corrected"]
        need = planned["labels_needed"]
        if need["labels_needed"] is None:
            continue
        for k, more in need["per_stratum"].items():
            assert more <= strata[k]["unlabelled"] - 1, (width, k, more, strata[k])
        widest = width
    assert widest is not None
    label(cfg, run_id, "--target-width", widest, "--seed", "3")
    (after,) = report(cfg, run_id)["corrected"]
    assert after["null_reasons"] == [], after["null_reasons"]
