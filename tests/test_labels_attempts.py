"""Issue 29, seed 002: repeated attempts in the labelling workflow — a rubric binds ratings
to content (default) or to the attempt (`bind = "attempt"`), through the CLI; the labelling
page's resume with repeated identical outputs is tested in Chromium in
tests/test_label_serve_attempts_browser.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalh.cli.main import app

runner = CliRunner()

PRODUCT = '''\
def answer(inp):
    return {"text": "The retry count is 3. Nothing else."}
'''

RUBRIC = '''text = "Rate the claim."
{bind}
[claims]
path = "expected.claims"
text_path = "output.text"
[claims.fields.truth]
values = ["true", "false"]
allow_null = false
'''


def project(tmp: Path, *, repeats: int = 3, cases: int = 2) -> Path:
    (tmp / "product_h29.py").write_text(PRODUCT, encoding="utf-8")
    rows = [{"id": f"c{i}", "input": {"ask": f"ask {i}"},
             "expected": {"claims": [{"id": "c1", "start": 0, "end": 20, "text": "The retry count is 3"}]},
             "metadata": {"group": f"g{i}"}} for i in range(cases)]
    (tmp / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp / "evalh.toml").write_text(f"""\
[suites.s]
dataset = "cases.jsonl"
target = "product_h29:answer"
regime = "stochastic"
repeats = {repeats}
scorers = [{{ type = "contains", field = "text" }}]
""", encoding="utf-8")
    return tmp / "evalh.toml"


def cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def run_and_export(tmp: Path, bind: str) -> tuple[Path, str, dict[str, Any]]:
    cfg = project(tmp)
    runs = tmp / "runs"
    cli("run", "--config", str(cfg), "--runs-dir", str(runs), "-q")
    run_id = next(runs.glob("*.json")).stem
    rubric = tmp / "rubric.toml"
    rubric.write_text(RUBRIC.format(bind=bind), encoding="utf-8")
    out = tmp / "requests.json"
    cli("export-requests", run_id, "--config", str(cfg), "--runs-dir", str(runs), "--rubric", str(rubric), "-o", str(out))
    return runs, run_id, json.loads(out.read_text())


def rate(doc: dict[str, Any], values: list[str]) -> str:
    return "".join(json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                               "rubric_sha256": doc["rubric"]["sha256"], "rater": "ann",
                               "claims": {"c1": {"truth": v}}}) + "\n"
                   for r, v in zip(doc["requests"], values, strict=False))


def test_a_rubric_that_binds_to_the_attempt_takes_different_labels_for_identical_outputs(tmp_path: Path) -> None:
    runs, run_id, doc = run_and_export(tmp_path, 'bind = "attempt"')
    reqs = doc["requests"]
    assert len(reqs) == 6 and len({r["request_sha256"] for r in reqs}) == 6  # one digest per attempt
    assert {json.dumps(r["output"]) for r in reqs} == {json.dumps({"text": "The retry count is 3. Nothing else."})}
    f = tmp_path / "ann.jsonl"
    values = ["true", "false", "true", "false", "true", "true"]
    f.write_text(rate(doc, values))
    cli("label", "import", str(f), "--run", run_id, "--runs-dir", str(runs))
    g = tmp_path / "bob.jsonl"
    g.write_text(rate(doc, values).replace('"ann"', '"bob"'))
    cli("label", "import", str(g), "--run", run_id, "--runs-dir", str(runs))
    rep = json.loads(cli("label", "report", run_id, "--runs-dir", str(runs), "--json").stdout)
    assert rep["counts"]["agreed"] == 6 and rep["counts"]["disputed"] == 0
    # a re-run of the same content keeps each attempt's ratings (same suite, case, arm, attempt)
    cfg = tmp_path / "evalh.toml"
    cli("run", "--config", str(cfg), "--runs-dir", str(runs), "-q")
    rerun = sorted(p.stem for p in runs.glob("*.json") if p.stem != run_id and not p.stem.endswith(".labels"))[-1]
    cli("export-requests", rerun, "--config", str(cfg), "--runs-dir", str(runs), "--rubric", str(tmp_path / "rubric.toml"),
        "-o", str(tmp_path / "rerun.json"))
    again = json.loads(cli("label", "report", rerun, "--runs-dir", str(runs), "--json").stdout)
    assert again["counts"]["agreed"] == 6 and again["counts"]["unlabelled"] == 0


def test_the_default_binding_refuses_different_labels_for_identical_outputs(tmp_path: Path) -> None:
    runs, run_id, doc = run_and_export(tmp_path, "")
    reqs = sorted(doc["requests"], key=lambda r: r["request_sha256"])  # the first two share their content
    assert reqs[0]["request_sha256"] == reqs[1]["request_sha256"]
    f = tmp_path / "ann.jsonl"
    f.write_text(rate({**doc, "requests": reqs[:2]}, ["true", "false"]))
    result = cli("label", "import", str(f), "--run", run_id, "--runs-dir", str(runs), code=2)
    assert "ann.jsonl:2" in result.stderr and "ann already rated" in result.stderr


def test_an_unknown_binding_is_refused(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    runs = tmp_path / "runs"
    cli("run", "--config", str(cfg), "--runs-dir", str(runs), "-q")
    run_id = next(runs.glob("*.json")).stem
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.format(bind='bind = "case"'), encoding="utf-8")
    result = cli("export-requests", run_id, "--config", str(cfg), "--runs-dir", str(runs), "--rubric", str(rubric),
                 "-o", str(tmp_path / "r.json"), code=2)
    assert "rubric.toml: bind: 'case' is not one of content, attempt" in result.stderr


# ---------------------------------------------------------------------------- 7. a tamper-evident store


def test_an_edited_rating_with_the_same_count_is_refused_by_label_report(tmp_path: Path) -> None:
    runs, run_id, doc = run_and_export(tmp_path, 'bind = "attempt"')
    f = tmp_path / "ann.jsonl"
    f.write_text(rate(doc, ["true"] * 6))
    cli("label", "import", str(f), "--run", run_id, "--runs-dir", str(runs))
    ok = json.loads(cli("label", "report", run_id, "--runs-dir", str(runs), "--json").stdout)
    assert ok["ratings_store"]["files"] == 1 and ok["ratings_store"]["records"] == 6
    assert ok["ratings_store"]["unverified_files"] == []
    (stored,) = (runs / "ratings").glob("*.jsonl")
    lines = stored.read_text().splitlines()
    assert json.loads(lines[0])["records"] == 6
    lines[3] = lines[3].replace('"value":"true"', '"value":"false"')  # one rating flipped, count kept
    assert lines[3] != stored.read_text().splitlines()[3]
    stored.write_text("\n".join(lines) + "\n")
    result = cli("label", "report", run_id, "--runs-dir", str(runs), code=2)
    assert result.stderr.strip() == (f"error: {stored}:4: the record does not match its SHA-256 in the header: "
                                     "edited (a rating is corrected by a later record with `replaces`, never in place)")


def test_a_ratings_file_of_the_first_layout_is_read_and_said_unverified(tmp_path: Path) -> None:
    runs, run_id, doc = run_and_export(tmp_path, 'bind = "attempt"')
    f = tmp_path / "ann.jsonl"
    f.write_text(rate(doc, ["true"] * 6))
    cli("label", "import", str(f), "--run", run_id, "--runs-dir", str(runs))
    (stored,) = (runs / "ratings").glob("*.jsonl")
    lines = stored.read_text().splitlines()
    lines[0] = json.dumps({"schema": "evalh.ratings/1", "records": 6})
    stored.write_text("\n".join(lines) + "\n")
    rep = json.loads(cli("label", "report", run_id, "--runs-dir", str(runs), "--json").stdout)
    assert rep["ratings_store"]["unverified_files"] == [stored.name] and rep["counts"]["single_rated"] == 6
    text = cli("label", "report", run_id, "--runs-dir", str(runs)).stdout
    assert "1 file(s) of the first layout, without record digests: an edit of them is not detected" in text
