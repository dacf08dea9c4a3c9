"""`evalh import`: inspect_ai logs and promptfoo result files made by the real tools
(tests/data/imports, made by its make_fixtures.py) as evalh runs, through the CLI; their
per-case outcomes; a comparison of two imported runs; the same eval run by evalh itself
gives the same outcomes and the same verdict."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

DATA = Path(__file__).resolve().parent / "data" / "imports"
V1 = {"capital.france": "passed", "capital.japan": "passed", "capital.italy": "passed",
      "capital.canada": "failed", "capital.australia": "passed", "capital.atlantis": "errored"}
V2 = {**V1, "capital.australia": "failed"}
FILES = {"inspect": ("inspect-v1.eval", "inspect-v2.json"), "promptfoo": ("promptfoo-v1.json", "promptfoo-v2.json")}


def invoke(root: Path, *args: str) -> Result:
    cwd = Path.cwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(cwd)


def imported(root: Path, name: str, *extra: str) -> dict[str, Any]:
    result = invoke(root, "import", str(DATA / name), *extra)
    assert result.exit_code == 0, result.output
    run_id = result.stdout.strip()
    return json.loads((root / "eval_runs" / f"{run_id}.json").read_bytes())


def statuses(doc: dict[str, Any], suite: str = "capitals") -> dict[str, str]:
    return {r["case_id"]: r["status"] for r in doc["suites"][suite]["cases"]}


def by_case(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in doc["suites"]["capitals"]["cases"]}


@pytest.mark.parametrize(("name", "outcomes"), [("inspect-v1.eval", V1), ("inspect-v2.json", V2)])
def test_an_inspect_log_becomes_a_run(tmp_path: Path, name: str, outcomes: dict[str, str]) -> None:
    doc = imported(tmp_path, name)
    assert doc["status"] == "complete" and statuses(doc) == outcomes
    suite = doc["suites"]["capitals"]
    assert suite["regime"] == "deterministic" and suite["target"]["kind"] == "inspect_ai"
    assert suite["target"]["model"] == "mockllm/model" and suite["target"]["generate_config"] == {"temperature": 0.0}
    cases = by_case(doc)
    france = cases["capital.france"]
    assert france["input"] == "What is the capital of France?" and france["expected"] == "Paris"
    assert france["metadata"]["group"] == "europe" and france["output"] == "The capital of France is Paris."
    includes, brevity = france["scores"]
    assert (includes["scorer"], includes["passed"], includes["value"]) == ("includes", True, 1.0)
    assert (brevity["scorer"], brevity["passed"], brevity["value"]) == ("brevity", None, 0.5)  # graded: no verdict
    assert (france["tokens_in"], france["tokens_out"]) == (6, 6) and france["latency_ms"] is not None
    assert cases["capital.atlantis"]["error"]["type"] == "ProductDown"
    assert doc["git"]["sha"] == "53c21ba"  # the revision inspect_ai recorded, not this checkout's
    record = doc["config"]["import"]
    assert record["format"] == "inspect_ai" and record["tool_version"] == "0.3.285" and record["file"] == name
    assert any("metrics" in n for n in record["notes"])
    scorers = doc["config"]["suites"]["capitals"]["scorers"]
    assert [(s["name"], s["kind"]) for s in scorers] == [("includes", "pass_fail"), ("brevity", "graded")]
    agg = suite["aggregate"]
    assert (agg["passed"], agg["failed"], agg["errored"], agg["pass_rate_denominator"]) == (
        list(outcomes.values()).count("passed"), list(outcomes.values()).count("failed"), 1, 5)


def test_inspect_epochs_are_attempts_of_a_stochastic_suite(tmp_path: Path) -> None:
    doc = imported(tmp_path, "inspect-epochs.eval")
    suite = doc["suites"]["capitals"]
    assert suite["regime"] == "stochastic"
    attempts = sorted((r["case_id"], r["attempt"], r["status"]) for r in suite["cases"])
    assert attempts == sorted((c, a, s) for c, s in V1.items() for a in (0, 1))


@pytest.mark.parametrize(("name", "outcomes"), [("promptfoo-v1.json", V1), ("promptfoo-v2.json", V2)])
def test_a_promptfoo_result_file_becomes_a_run(tmp_path: Path, name: str, outcomes: dict[str, str]) -> None:
    doc = imported(tmp_path, name)
    assert statuses(doc) == outcomes
    suite = doc["suites"]["capitals"]
    assert suite["target"]["kind"] == "promptfoo" and suite["target"]["config"]["version"] == name[-7:-5]
    cases = by_case(doc)
    canada = cases["capital.canada"]
    assert canada["input"] == {"question": "What is the capital of Canada?", "expected": "Ottawa"}
    assert canada["expected"][0] == {"type": "icontains", "value": "Ottawa"}  # the assertion, rendered
    assert [(s["scorer"], s["passed"]) for s in canada["scores"]] == [("icontains", False), ("brevity", True)]
    assert canada["cost_usd"] == pytest.approx(1.2e-05) and (canada["tokens_in"], canada["tokens_out"]) == (6, 3)
    assert canada["latency_ms"] > 0 and canada["metadata"]["group"] == "americas"
    assert cases["capital.atlantis"]["error"]["type"] == "ProductDown"
    assert doc["git"] == {"sha": None, "dirty": None, "branch": None}  # promptfoo records none
    record = doc["config"]["import"]
    assert record["format"] == "promptfoo" and record["tool_version"] == "0.121.20"
    assert any("git" in n for n in record["notes"])


def test_import_json_is_what_run_json_prints(tmp_path: Path) -> None:
    result = invoke(tmp_path, "import", str(DATA / "inspect-v1.eval"), str(DATA / "promptfoo-v2.json"), "--json")
    assert result.exit_code == 0, result.output
    decoder, text, docs = json.JSONDecoder(), result.stdout, []
    while text.strip():
        doc, end = decoder.raw_decode(text.lstrip())
        docs.append(doc)
        text = text.lstrip()[end:]
    assert len(docs) == 2
    for doc in docs:
        assert list(doc) == ["run_id", "path", "status", "exit_code", "reasons", "summary"]
        assert (tmp_path / doc["path"]).is_file() and doc["summary"]["suites"]["capitals"]["errored"] == 1


@pytest.mark.parametrize("tool", list(FILES))
def test_compare_of_two_imported_runs_names_the_regression(tmp_path: Path, tool: str) -> None:
    base, cand = (imported(tmp_path, f)["run_id"] for f in FILES[tool])
    result = invoke(tmp_path, "compare", base, cand, "--fail-on-regression", "--format", "json")
    assert result.exit_code == 1, result.output
    suite = json.loads(result.stdout)["suites"]["capitals"]
    assert suite["verdict"] == "regressed"
    assert "capital.australia" in json.dumps(suite) and "capital.canada" not in json.dumps(suite.get("regressed_cases", ""))
    assert invoke(tmp_path, "report", "--format", "md").exit_code == 0
    same = invoke(tmp_path, "compare", base, base, "--fail-on-regression")
    assert same.exit_code == 0, same.output


def test_the_same_eval_three_ways_gives_the_same_outcomes_and_verdict(tmp_path: Path) -> None:
    """evalh runs cases.jsonl against answers.py (v1, then v2) with the `contains` scorer
    (case-folded, as inspect_ai's includes() and promptfoo's icontains): the outcomes per
    case and the verdict are those of the imported inspect_ai and promptfoo runs."""
    for name in ("answers.py", "cases.jsonl"):
        shutil.copy2(DATA / name, tmp_path / name)
    (tmp_path / "evalh.toml").write_text(
        '[suites.capitals]\ndataset = "cases.jsonl"\ntarget = "answers:target"\n'
        'scorers = [{ type = "contains" }]\n')
    native = []
    for version in ("v1", "v2"):
        os.environ["EVALH_FIXTURE_VERSION"] = version
        try:
            result = invoke(tmp_path, "run", "--json", "--label", version)
        finally:
            del os.environ["EVALH_FIXTURE_VERSION"]
        assert result.exit_code == 1, result.output  # canada fails, atlantis errors
        native.append(json.loads(Path(json.loads(result.stdout)["path"]).read_bytes()))
    verdicts = {}
    for tool, (f1, f2) in [("evalh", (None, None)), *FILES.items()]:
        docs = native if tool == "evalh" else [imported(tmp_path, f1), imported(tmp_path, f2)]
        assert [statuses(d) for d in docs] == [V1, V2], tool
        result = invoke(tmp_path, "compare", docs[0]["run_id"], docs[1]["run_id"], "--format", "json")
        suite = json.loads(result.stdout)["suites"]["capitals"]
        pass_rate = [(m["base"], m["candidate"], m["n"], m["verdict"]) for m in suite["metrics"] if m["name"] == "pass_rate"]
        verdicts[tool] = (suite["verdict"], result.exit_code, json.dumps(pass_rate),
                          json.dumps([(c["case_id"], c["base"], c["candidate"]) for c in suite["cases"]["regressed"]]))
    assert len(set(verdicts.values())) == 1, verdicts  # the same verdict, pass-rate row and regressed cases
    assert verdicts["evalh"][:2] == ("regressed", 0)


@pytest.mark.parametrize(("content", "says"), [
    ('{"hello": 1}', "neither an inspect_ai log"),
    ("not json", "not JSON"),
    ('{"version": 2, "eval": {"task": "t"}, "samples": null}', "no samples"),
])
def test_a_file_that_is_not_a_tool_result_is_one_line_and_writes_nothing(tmp_path: Path, content: str, says: str) -> None:
    bad = tmp_path / "results.json"
    bad.write_text(content)
    result = invoke(tmp_path, "import", str(DATA / "inspect-v1.eval"), str(bad))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and says in lines[0], lines
    assert not (tmp_path / "eval_runs").exists() or not list((tmp_path / "eval_runs").glob("*.json"))


def test_rejudge_and_labelling_work_on_an_imported_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An imported promptfoo run judged again by evalh's judge (the mock provider), and its
    outputs exported for labellers."""
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("answers.py", "cases.jsonl"):
        shutil.copy2(DATA / name, tmp_path / name)
    (tmp_path / "judge.json").write_text(json.dumps({
        "rules": [{"match": "<output>\nToronto", "json": {"verdict": "fail", "rationale": "Ottawa is"}}],
        "default": {"json": {"verdict": "pass", "rationale": "right capital"}}}))
    (tmp_path / "evalh.toml").write_text(
        '[suites.capitals]\ndataset = "cases.jsonl"\ntarget = "answers:target"\nscorers = [\n'
        '{ type = "judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
        'max_retries = 0, rubric = "Names the capital asked about." },\n]\n')
    run_id = imported(tmp_path, "promptfoo-v1.json")["run_id"]
    result = invoke(tmp_path, "rejudge", run_id, "--all", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / json.loads(result.stdout)["path"]).read_bytes())
    assert doc["derived_from"] == {"run_id": run_id, "how": "rejudge"}
    cases = by_case(doc)
    judged = {c: [s["passed"] for s in r["scores"] if s["scorer"] == "judge"] for c, r in cases.items()}
    assert judged["capital.france"] == [True] and judged["capital.canada"] == [False]
    assert judged["capital.atlantis"] == [] and cases["capital.atlantis"]["status"] == "errored"
    assert [s["scorer"] for s in cases["capital.france"]["scores"]] == ["icontains", "brevity", "judge"]

    (tmp_path / "rubric.md").write_text("Is the capital right?\n")
    result = invoke(tmp_path, "export-requests", run_id, "-o", "requests.json", "--rubric", "rubric.md")
    assert result.exit_code == 0, result.output
    requests = json.loads((tmp_path / "requests.json").read_text())["requests"]
    assert len(requests) == 5  # the outputs there are: the errored case has none


def test_the_dashboard_serves_imported_runs(tmp_path: Path) -> None:
    import threading

    import httpx

    from evalh.ui.server import make_server

    base, cand = (imported(tmp_path, f)["run_id"] for f in FILES["inspect"])
    server = make_server(tmp_path / "eval_runs", tmp_path, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        listed = httpx.get(url + "/api/runs").json()
        assert {base, cand} <= {r["run_id"] for r in listed["runs"]}
        got = httpx.get(url + "/api/compare", params={"base": base, "candidate": cand}).json()
        assert got["suites"]["capitals"]["verdict"] == "regressed"
        assert [c["case_id"] for c in got["suites"]["capitals"]["cases"]["regressed"]] == ["capital.australia"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.slow
def test_inspect_ai_makes_the_same_fixtures_today(tmp_path: Path) -> None:
    """The committed inspect_ai logs are what the script makes with the inspect_ai
    installed (the `bench` extra): made again, imported, the same outcomes per case."""
    pytest.importorskip("inspect_ai")
    import subprocess
    import sys

    out = tmp_path / "made"
    out.mkdir()
    proc = subprocess.run([sys.executable, str(DATA / "make_fixtures.py"), "--only", "inspect", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from evalh.importers import read_file

    for name in ("inspect-v1.eval", "inspect-v2.json", "inspect-epochs.eval"):
        fresh, kept = read_file(out / name), read_file(DATA / name)
        outcome = [[(r.case_id, r.attempt, r.error is not None, [(s.scorer, s.passed, s.value) for s in r.scores])
                    for r in run.suites["capitals"].results] for run in (fresh, kept)]
        assert outcome[0] == outcome[1], name


def test_a_suite_of_graded_scorers_only_is_stochastic_and_noted(tmp_path: Path) -> None:
    """The inspect_ai log with its pass/fail scorer left out (a log whose task scored with
    `brevity` alone): no case passes, the suite compares by mean score, the notes say so."""
    log = json.loads((DATA / "inspect-v2.json").read_text())
    log["eval"]["scorers"] = [s for s in log["eval"]["scorers"] if s["name"] == "brevity"]
    for sample in log["samples"]:
        sample["scores"] = {k: v for k, v in (sample.get("scores") or {}).items() if k == "brevity"}
    (tmp_path / "graded.json").write_text(json.dumps(log))
    result = invoke(tmp_path, "import", str(tmp_path / "graded.json"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / json.loads(result.stdout)["path"]).read_bytes())
    suite = doc["suites"]["capitals"]
    assert suite["regime"] == "stochastic" and suite["aggregate"]["passed"] == 0
    assert suite["aggregate"]["mean_score"] is not None
    assert any("every scorer is graded" in n for n in doc["config"]["import"]["notes"])


def test_an_imported_run_that_measured_nothing_exits_1_and_says_so(tmp_path: Path) -> None:
    """A promptfoo file whose every result errored (the provider down) is imported and kept,
    but, like any run that measured nothing, it is not exit 0; and `--json` carries the
    run's own verdict (the exit code and reasons `evalh run --json` would give), not 0."""
    doc = json.loads((DATA / "promptfoo-v2.json").read_text())
    for row in doc["results"]["results"]:
        row.update(success=False, error="provider down", response={"error": "provider down"}, failureReason=2)
        row.pop("gradingResult", None)
    down = tmp_path / "down.json"
    down.write_text(json.dumps(doc))
    result = invoke(tmp_path, "import", str(down), "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["exit_code"] == 1 and any("capitals" in r for r in out["reasons"]), out
    assert (tmp_path / out["path"]).is_file()  # kept: the record of what the tool did
    plain = invoke(tmp_path, "import", str(down))
    assert plain.exit_code == 1 and "measured nothing" in plain.stderr, plain.output
    fine = invoke(tmp_path, "import", str(DATA / "promptfoo-v1.json"), "--json")
    assert fine.exit_code == 0 and json.loads(fine.stdout)["exit_code"] == 1  # v1 has a failed and an errored case


@pytest.mark.parametrize(("where", "value"), [
    (("results", "results"), [1]),
    (("results", "results", 0), "x"),
    (("results", "results", 0, "gradingResult", "componentResults"), 5),
    (("results", "results", 0, "testCase", "assert"), True),
    (("results", "results", 1, "testIdx"), None),
])
def test_a_promptfoo_file_with_fields_of_the_wrong_type_is_one_line(tmp_path: Path, where: tuple[Any, ...],
                                                                    value: Any) -> None:
    """A result file of promptfoo's outline whose fields are not of promptfoo's types (a
    hand edit, a truncated export) was a traceback and exit 1: it is bad input, one line
    naming the file, exit 2, and nothing is written — not even the good file imported with it."""
    doc = json.loads((DATA / "promptfoo-v2.json").read_text())
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    result = invoke(tmp_path, "import", str(DATA / "promptfoo-v1.json"), str(bad))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0], lines
    assert not (tmp_path / "eval_runs").exists() or not list((tmp_path / "eval_runs").iterdir())


def test_an_impossible_token_count_is_not_a_count(tmp_path: Path) -> None:
    """tokenUsage 1e308 crashed the writer with a traceback after the first file's run was
    written and the second's journal begun; it is recorded as no count, and both import."""
    doc = json.loads((DATA / "promptfoo-v2.json").read_text())
    doc["results"]["results"][0]["response"]["tokenUsage"]["completion"] = 1e308
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    result = invoke(tmp_path, "import", str(DATA / "promptfoo-v1.json"), str(big))
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "eval_runs" / f"{result.stdout.split()[1]}.json").read_bytes())
    assert by_case(run)["capital.france"]["tokens_out"] is None


@pytest.mark.parametrize("value", [-1, True, [1], {"a": 1}])
def test_an_inspect_log_whose_start_is_not_a_time_still_imports(tmp_path: Path, value: Any) -> None:
    """`stats.started_at` not a string crashed the import with a traceback after the file was
    read (nothing told the user which file): a start that is not a time is no start, as
    a sample's is, and the eval's `created` stands for it."""
    doc = json.loads((DATA / "inspect-v2.json").read_text())
    doc["stats"]["started_at"] = value
    log = tmp_path / "log.json"
    log.write_text(json.dumps(doc))
    result = invoke(tmp_path, "import", str(log))
    assert result.exit_code == 0, result.output
    assert statuses(json.loads((tmp_path / "eval_runs" / f"{result.stdout.strip()}.json").read_bytes())) == V2
