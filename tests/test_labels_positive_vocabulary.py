"""`label report --positive VALUE` and the corrected figure's default `pass` are values of
the rubric's first field: a value outside a declared vocabulary is refused (one line, exit
2) instead of reporting rates of a label no rater could give, and the corrected figure of a
default `pass` the rubric does not have is null with the reason, not 'judge alone 0.000'."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_labels_corrected import _cache_dir, cli, project, report, run

__all__ = ["_cache_dir"]

RUBRIC = """\
[fields.verdict]
values = ["ok", "defect"]
allow_null = false
"""


def rated_sample(tmp: Path) -> tuple[Path, str]:
    cfg = project(tmp, bad_every=4)
    rubric = tmp / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    run_id = run(cfg)
    out = tmp / "req.json"
    res = cli(cfg, "export-requests", run_id, "--rubric", str(rubric), "--sample", "12", "--seed", "4", "-o", str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    lines = [json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                         "rubric_sha256": doc["rubric"]["sha256"], "rater": "ann",
                         "fields": {"verdict": "ok" if r["output"]["text"].startswith("GOOD") else "defect"}})
             for r in doc["requests"]]
    (tmp / "ann.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = cli(cfg, "label", "import", str(tmp / "ann.jsonl"), "--run", run_id)
    assert res.exit_code == 0, res.output
    return cfg, run_id


def test_a_positive_outside_the_vocabulary_is_refused(tmp_path: Path) -> None:
    cfg, run_id = rated_sample(tmp_path)
    res = cli(cfg, "label", "report", run_id, "--positive", "bogus")
    assert res.exit_code == 2, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "'bogus'" in lines[0] and "ok, defect" in lines[0], res.stderr


def test_the_default_pass_outside_the_vocabulary_gives_a_null_corrected_figure(tmp_path: Path) -> None:
    cfg, run_id = rated_sample(tmp_path)
    (fig,) = report(cfg, run_id)["corrected"]
    assert fig["estimate"] is None
    assert any("'pass' is not a value of the rubric's field 'verdict'" in r for r in fig["null_reasons"])
    res = cli(cfg, "report", run_id, "--format", "md")
    assert res.exit_code == 0, res.output
    assert "'pass' is not a value of the rubric's field 'verdict'" in res.stdout
    (ok,) = report(cfg, run_id, "--positive", "defect")["corrected"]
    assert ok["positive"] == "defect" and "positive" in json.dumps(ok)
