"""`compare RUN REJUDGED --corrected`: a rejudged run's corrected figure rests on the draw
and labels of the run it came from (its report shows it), and compare now reads it the same
way — it said the rejudged run 'has no labelled sample' and gave no corrected row."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_labels_corrected import CASES, _cache_dir, cli, good, label, project, run, text

__all__ = ["_cache_dir"]


def test_compare_reads_a_rejudged_runs_corrected_figure(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "24", "--seed", "7")
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {"verdict": "pass" if good(i, 4) else "fail",
                                                            "rationale": "strict"}} for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    again = cli(cfg, "rejudge", run_id, "--all", "--json")
    assert again.exit_code == 0, again.output
    new_id = json.loads(again.stdout)["run_id"]
    res = cli(cfg, "compare", run_id, new_id, "--corrected", "--json")
    assert res.exit_code == 0, res.output
    assert "no labelled sample" not in res.output
    (row,) = [m for m in json.loads(res.stdout)["suites"]["s"]["metrics"] if m["name"] == "corrected_pass_rate"]
    assert "one sample labelled on both" in row["method"]
