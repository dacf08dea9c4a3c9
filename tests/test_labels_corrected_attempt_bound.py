"""Under a rubric that binds ratings to the attempt (`bind = "attempt"`), the corrected
figure finds the ratings of its drawn results: it read them by the content digest alone, so
every drawn result looked unlabelled and the figure was null."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, project, report, run

__all__ = ["_cache_dir"]

RUBRIC = """\
bind = "attempt"
[fields.verdict]
values = ["pass", "fail"]
allow_null = false
"""


def test_the_corrected_figure_reads_attempt_bound_ratings(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    run_id = run(cfg)
    out = tmp_path / "req.json"
    res = cli(cfg, "export-requests", run_id, "--rubric", str(rubric), "--sample", "20", "--seed", "4", "-o", str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    lines = [json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                         "rubric_sha256": doc["rubric"]["sha256"], "rater": "ann",
                         "fields": {"verdict": "pass" if r["output"]["text"].startswith("GOOD") else "fail"}})
             for r in doc["requests"]]
    (tmp_path / "ann.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = cli(cfg, "label", "import", str(tmp_path / "ann.jsonl"), "--run", run_id)
    assert res.exit_code == 0, res.output
    (fig,) = report(cfg, run_id)["corrected"]
    assert fig["null_reasons"] == [] and fig["labelled"] == 20
