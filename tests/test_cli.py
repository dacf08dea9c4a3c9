"""The command line through Typer's CliRunner: exit codes, stdout vs stderr, files written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_project(project: Path, *args: str) -> tuple[Result, list[Path]]:
    """`evalh run` on the test project, runs written to project/runs."""
    runs = project / "runs"
    result = invoke("run", "--config", str(project / "evalh.toml"), "--runs-dir", str(runs), *args)
    return result, sorted(runs.glob("*.json")) if runs.is_dir() else []


def set_target(project: Path, function: str) -> None:
    path = project / "evalh.toml"
    path.write_text(path.read_text().replace("evalh_fixture_target:answer",
                                             f"evalh_fixture_target:{function}"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


# ----------------------------------------------------------------------------- the shipped suites

RUN_FIELDS = {"schema", "run_id", "label", "status", "started_at", "finished_at", "git",
              "environment", "config", "derived_from", "suites", "summary"}
AGGREGATE_FIELDS = {"n", "passed", "failed", "errored", "pass_rate", "mean_score", "tokens_in",
                    "tokens_out", "cost_usd", "latency_ms_p50", "latency_ms_p95"}
CASE_FIELDS = {"case_id", "arm", "attempt", "status", "score", "scores", "output", "trace",
               "latency_ms", "tokens_in", "tokens_out", "cost_usd", "error"}


@pytest.mark.parametrize("suite", ["gate", "guards"])
def test_shipped_suite_passes_and_writes_one_document(repo_root: Path, tmp_path: Path,
                                                      suite: str) -> None:
    runs = tmp_path / "runs"
    result = invoke("run", "--suite", suite, "--config", str(repo_root / "evalh.toml"),
                    "--runs-dir", str(runs), "--label", "ci")
    assert result.exit_code == 0, result.output
    docs = list(runs.glob("*.json"))
    assert len(docs) == 1 and not list(runs.glob("*.journal.jsonl"))
    doc = load(docs[0])
    assert set(doc) >= RUN_FIELDS
    assert doc["schema"] == "evalh.run/1" and doc["status"] == "complete" and doc["label"] == "ci"
    assert docs[0].stem == doc["run_id"] and doc["finished_at"] and doc["derived_from"] is None
    assert set(doc["git"]) == {"sha", "dirty", "branch"}
    assert set(doc["environment"]) == {"evalh", "python", "platform"}
    assert doc["config"]["suites"][suite]["target"]["kind"] == "python"
    assert isinstance(doc["config"]["seed"], int) and doc["seed"] == doc["config"]["seed"]
    assert list(doc["suites"]) == [suite]
    s = doc["suites"][suite]
    assert s["regime"] == "deterministic"
    assert s["dataset"]["path"] == f"datasets/{suite}.jsonl" and len(s["dataset"]["sha256"]) == 64
    assert s["dataset"]["cases"] >= 30
    agg = s["aggregate"]
    assert set(agg) >= AGGREGATE_FIELDS
    assert agg["n"] == agg["passed"] == s["dataset"]["cases"] == len(s["cases"])
    assert (agg["failed"], agg["errored"], agg["pass_rate"]) == (0, 0, 1.0)
    for case in s["cases"]:
        assert set(case) >= CASE_FIELDS
        assert case["status"] == "passed" and case["arm"] == "default" and case["attempt"] == 0
    assert doc["summary"]["deterministic_ok"] is True
    assert doc["summary"]["cases"] == agg["n"]
    assert suite in result.stdout  # the results table


def test_shipped_suites_cover_both_directions_of_every_behaviour(repo_root: Path) -> None:
    """Every behaviour (stratum) has cases with different verdicts, so a regression either
    way (wrongly accepting, wrongly rejecting) is a named failing case."""
    from evalh.datasets import load_dataset

    for name in ("gate", "guards"):
        cases = load_dataset(repo_root / "datasets" / f"{name}.jsonl").cases
        verdicts: dict[str, set[Any]] = {}
        for case in cases:
            verdicts.setdefault(case.metadata.stratum or case.id, set()).add(case.expected)
        lonely = [s for s, v in verdicts.items() if len(v) < 2]
        assert not lonely, f"{name}: behaviours with one direction only: {lonely}"
        assert "reject" in set().union(*verdicts.values())


# ----------------------------------------------------------------------------- outcomes and exit codes


def test_passing_run_exit_0_table_on_stdout_talk_on_stderr(project: Path) -> None:
    result, docs = run_project(project)
    assert result.exit_code == 0, result.output
    assert len(docs) == 1
    assert "smoke" in result.stdout and "100.0% (3/3)" in result.stdout
    assert f"wrote {docs[0]}" in result.stderr and "wrote" not in result.stdout


def test_failing_case_exit_1_and_named(project: Path) -> None:
    set_target(project, "always_accept")
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    assert "smoke: 1 not passed" in result.stdout and "smoke.no" in result.stdout
    assert "smoke.yes" not in result.stdout and "smoke.maybe" not in result.stdout  # passes are not named
    doc = load(docs[0])
    assert doc["summary"]["deterministic_ok"] is False
    by_id = {c["case_id"]: c for c in doc["suites"]["smoke"]["cases"]}
    assert by_id["smoke.no"]["status"] == "failed" and by_id["smoke.yes"]["status"] == "passed"
    agg = doc["suites"]["smoke"]["aggregate"]
    assert (agg["passed"], agg["failed"], agg["pass_rate_denominator"]) == (2, 1, 3)


def test_crashing_target_is_errored_counted_apart_never_a_pass(project: Path) -> None:
    set_target(project, "crash_on_no")
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    assert "errored" in result.stdout and "smoke.no" in result.stdout
    assert "cannot handle a refusal" in result.stdout
    doc = load(docs[0])
    assert doc["status"] == "complete"
    cases = {c["case_id"]: c for c in doc["suites"]["smoke"]["cases"]}
    assert len(cases) == 3  # never dropped
    bad = cases["smoke.no"]
    assert bad["status"] == "errored" and bad["score"] is None and bad["scores"] == []
    assert bad["error"] == {"type": "ValueError", "message": "cannot handle a refusal"}
    agg = doc["suites"]["smoke"]["aggregate"]
    assert (agg["passed"], agg["failed"], agg["errored"]) == (2, 0, 1)
    assert agg["pass_rate"] == 1.0 and agg["pass_rate_denominator"] == 2  # errored kept apart
    assert agg["error_rate"] == pytest.approx(1 / 3)
    assert doc["summary"]["errored"] == 1 and doc["summary"]["deterministic_ok"] is False


def test_a_target_that_always_crashes_has_no_pass_rate(project: Path) -> None:
    set_target(project, "crash")
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    agg = load(docs[0])["suites"]["smoke"]["aggregate"]
    assert (agg["errored"], agg["passed"], agg["pass_rate"], agg["pass_rate_denominator"]) == (3, 0, None, 0)
    assert "n/a" in result.stdout


@pytest.mark.parametrize(("function", "timeout", "error_type"), [("hang", "0.05", "TimeoutError"),
                                                                 ("not_json", "60", "TypeError")])
def test_timeout_and_bad_output_are_errored(project: Path, function: str, timeout: str, error_type: str) -> None:
    """A target that never answers times out whatever the machine's speed (a short timeout
    is safe there); one that answers garbage gets a timeout no busy machine reaches, so
    its error is the garbage's, never a timeout's."""
    set_target(project, function)
    result, docs = run_project(project, "--timeout", timeout, "--json")
    assert result.exit_code == 1, result.output
    cases = load(docs[0])["suites"]["smoke"]["cases"]
    assert {c["status"] for c in cases} == {"errored"}
    assert {c["error"]["type"] for c in cases} == {error_type}


def test_a_target_calling_sys_exit_is_errored_not_a_green_gate(project: Path) -> None:
    set_target(project, "exits")
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    cases = load(docs[0])["suites"]["smoke"]["cases"]
    assert len(cases) == 3 and {c["status"] for c in cases} == {"errored"}


@pytest.mark.parametrize("body", ["import sys\n    sys.exit(0)", "raise Stop('product bug')"])
@pytest.mark.parametrize("where", ["target", "scorer"])
def test_sys_exit_or_a_base_exception_in_a_target_or_scorer_is_errored_not_green(
    project: Path, monkeypatch: pytest.MonkeyPatch, where: str, body: str
) -> None:
    """A custom scorer calling sys.exit(0) ended `evalh run` with exit 0, nothing printed,
    nothing measured; a target or scorer raising a BaseException of its own (pytest.fail,
    a library's cancellation) ended it with a traceback. Each is the case's error: the
    run is written complete with every case errored, and it exits 1, one line, no traceback."""
    (project / "evalh_exit_code.py").write_text(
        "class Stop(BaseException):\n    pass\n\n\n"
        f"def target(inp):\n    {body}\n\n\n"
        f"def scorer(output, expected):\n    {body}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(project))
    cfg = project / "evalh.toml"
    if where == "target":
        set_target(project, "answer")
        cfg.write_text(cfg.read_text().replace("evalh_fixture_target:answer", "evalh_exit_code:target"))
    else:
        cfg.write_text(cfg.read_text().replace('{ type = "exact", field = "verdict" }',
                                               '{ type = "custom", function = "evalh_exit_code:scorer" }'))
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    doc = load(docs[0])
    assert doc["status"] == "complete"
    assert {c["status"] for c in doc["suites"]["smoke"]["cases"]} == {"errored"}


def test_a_crashing_deterministic_scorer_is_errored_not_a_judge_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a judge's failure is a `judge_error` (outside the gate): a bug in a deterministic
    scorer errors the case, and the gate goes red."""
    (project / "evalh_crash_scorer.py").write_text(
        "def boom(output, expected):\n    raise RuntimeError('scorer bug')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(project))
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text().replace('{ type = "exact", field = "verdict" }',
                                           '{ type = "custom", function = "evalh_crash_scorer:boom" }'))
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    doc = load(docs[0])
    cases = doc["suites"]["smoke"]["cases"]
    assert {c["status"] for c in cases} == {"errored"}
    assert all("scorer bug" in c["error"]["message"] for c in cases)
    assert doc["summary"]["errored"] == 3 and doc["summary"]["deterministic_ok"] is False


def test_async_target_repeats_and_seed(project: Path) -> None:
    set_target(project, "answer_async")
    result, docs = run_project(project, "--repeats", "3", "--seed", "11", "--json")
    assert result.exit_code == 0, result.output
    doc = load(docs[0])
    assert doc["seed"] == 11
    cases = doc["suites"]["smoke"]["cases"]
    assert sorted((c["case_id"], c["attempt"]) for c in cases) == sorted(
        (cid, a) for cid in ("smoke.yes", "smoke.no", "smoke.maybe") for a in range(3))


def test_target_knows_its_run_and_case(project: Path) -> None:
    """The context variable is exact at any concurrency; the environment at -j 1."""
    set_target(project, "whoami")
    result, docs = run_project(project, "-j", "1", "--repeats", "2", "--json")
    assert result.exit_code == 0, result.output
    doc = load(docs[0])
    for case in doc["suites"]["smoke"]["cases"]:
        out = case["output"]
        assert out["context"] == [doc["run_id"], "smoke", case["case_id"], "default", case["attempt"]]
        assert out["env"] == [doc["run_id"], case["case_id"]]


def test_untrusted_text_is_shown_literally(project: Path) -> None:
    """Case ids and rationales may hold rich markup: it must print as text, not style."""
    data = project / "data" / "smoke.jsonl"
    data.write_text('{"id": "smoke.[bold]x[/bold]", "input": {"text": "no"}, '
                    '"expected": "[red]accept[/red]"}\n')
    result, _ = run_project(project)
    assert result.exit_code == 1, result.output
    assert "smoke.[bold]x[/bold]" in result.stdout
    assert "[red]accept[/red]" in result.stdout


# ----------------------------------------------------------------------------- bad usage, bad input


def test_unknown_suite_exit_2_one_line(project: Path) -> None:
    result, docs = run_project(project, "--suite", "nope")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'nope'" in lines[0] and "smoke" in lines[0]
    assert docs == []


def test_bad_dataset_exit_2_names_line_and_writes_nothing(project: Path) -> None:
    with (project / "data" / "smoke.jsonl").open("a") as fh:
        fh.write("{not json\n")
    result, docs = run_project(project)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: data/smoke.jsonl:4: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert docs == [] and not (project / "runs").exists()


def test_bad_option_value_is_usage_error(project: Path) -> None:
    result, docs = run_project(project, "--repeats", "0")
    assert result.exit_code == 2 and docs == []


def test_missing_config_exit_2(tmp_path: Path) -> None:
    result = invoke("run")  # the cwd is an empty temp dir
    assert result.exit_code == 2
    assert "evalh.toml" in result.stderr and "Traceback" not in result.output


def test_validate_ok_and_bad(project: Path) -> None:
    ok = invoke("validate", "--config", str(project / "evalh.toml"))
    assert ok.exit_code == 0, ok.output
    (project / "evalh.toml").write_text((project / "evalh.toml").read_text() + "colour = 'red'\n")
    bad = invoke("validate", "--config", str(project / "evalh.toml"))
    assert bad.exit_code == 2
    assert "suites.smoke.colour" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- json and streams


def test_run_json_is_data_on_stdout(project: Path) -> None:
    result, docs = run_project(project, "--json", "--label", "j")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["run_id"] == docs[0].stem and payload["status"] == "complete"
    assert Path(payload["path"]) == docs[0]
    assert payload["summary"]["passed"] == 3


def test_run_json_with_failures_still_valid_json(project: Path) -> None:
    set_target(project, "crash_on_no")
    result, _ = run_project(project, "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["summary"]["errored"] == 1


def test_progress_goes_to_stderr(project: Path) -> None:
    result, _ = run_project(project)
    assert result.exit_code == 0, result.output
    assert "errored 0" in result.stderr  # the progress bar's columns
    assert "errored 0" not in result.stdout


def test_quiet_prints_nothing_on_success(project: Path) -> None:
    result, docs = run_project(project, "-q")
    assert result.exit_code == 0 and result.stdout == "" and len(docs) == 1


# ----------------------------------------------------------------------------- runs and show


def test_runs_and_show(project: Path) -> None:
    first, _ = run_project(project, "--label", "first", "-q")
    set_target(project, "always_accept")
    second, docs = run_project(project, "--label", "second", "-q")
    assert (first.exit_code, second.exit_code) == (0, 1)
    ids = [d.stem for d in docs]
    common = ["--config", str(project / "evalh.toml"), "--runs-dir", str(project / "runs")]

    table = invoke("runs", *common)
    assert table.exit_code == 0, table.output
    assert ids[0] in table.stdout and ids[1] in table.stdout and "second" in table.stdout
    assert table.stdout.index(ids[0]) < table.stdout.index(ids[1])  # newest last

    listed = json.loads(invoke("runs", *common, "--json").stdout)
    assert [r["run_id"] for r in listed] == ids and [r["label"] for r in listed] == ["first", "second"]
    assert listed[1]["suites"]["smoke"] == pytest.approx(2 / 3)
    assert json.loads(invoke("runs", *common, "--json", "--limit", "1").stdout)[0]["run_id"] == ids[1]

    shown = invoke("show", ids[1], *common)
    assert shown.exit_code == 0, shown.output
    assert ids[1] in shown.stdout and "smoke.no" in shown.stdout and "failed" in shown.stdout

    as_json = invoke("show", ids[1], *common, "--json")
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == load(docs[1])
    by_path = invoke("show", str(docs[0]), "--json")
    assert json.loads(by_path.stdout)["label"] == "first"


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_runs_limit_must_be_positive(project: Path, limit: str) -> None:
    """`[-0:]` would list every run: a limit below 1 is a usage error."""
    run_project(project, "-q")
    result = invoke("runs", "--runs-dir", str(project / "runs"), "--limit", limit)
    assert result.exit_code == 2


def test_runs_with_no_runs(project: Path) -> None:
    result = invoke("runs", "--runs-dir", str(project / "empty"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []


# ----------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["runs"], ["show"]])
def test_help(command: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout


def test_run_help_has_examples() -> None:
    result = invoke("run", "--help")
    assert result.exit_code == 0, result.output
    assert "evalh run --suite gate" in result.stdout


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from evalh.cli.main import main\n"
        "sys.argv = ['evalh', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('anthropic', 'httpx', 'aiohttp', 'rich.progress', 'jsonschema', 'openai')"
        " if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY=\n" in out.stdout, out.stdout[-500:]


def test_terminal_output_never_shows_an_env_secret(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI keeps the terminal output as a log: an error or rationale echoing a key is redacted."""
    secret = "sk-test-SECRET123456"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    (project / "evalh_leaky.py").write_text(
        "import os\n"
        "def run(inp):\n"
        "    if 'no' in inp['text']:\n"
        "        raise RuntimeError('auth failed for key ' + os.environ['ANTHROPIC_API_KEY'])\n"
        "    return os.environ['ANTHROPIC_API_KEY']\n",
        encoding="utf-8",
    )
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text().replace("evalh_fixture_target:answer", "evalh_leaky:run")
                   .replace('{ type = "exact", field = "verdict" }', "{ type = \"exact\" }"))
    result, docs = run_project(project)
    assert result.exit_code == 1, result.output
    assert "auth failed for key" in result.stdout and "got " in result.stdout
    assert secret not in result.output
    shown = invoke("show", str(docs[0]))
    assert "auth failed for key" in shown.stdout and secret not in shown.output


# ----------------------------------------------------------------------------- run --compare-baseline


def test_run_compare_baseline_names_the_regressed_case_and_exits_1(project: Path) -> None:
    first, docs = run_project(project, "-q")
    assert first.exit_code == 0, first.output
    assert invoke("baseline", "set", docs[0].stem, "--config", str(project / "evalh.toml"),
                  "--runs-dir", str(project / "runs")).exit_code == 0
    set_target(project, "crash_on_no")  # a case that passed now errors: a named regression
    result, docs = run_project(project, "--compare-baseline")
    assert result.exit_code == 1, result.output
    assert len(docs) == 2
    errored = [c["case_id"] for c in load(docs[-1])["suites"]["smoke"]["cases"] if c["status"] == "errored"]
    assert errored and all(case_id in result.stdout for case_id in errored)
    assert "regressed" in result.stdout


def test_run_compare_baseline_json_holds_the_run_and_the_verdict(project: Path) -> None:
    run_project(project, "-q")
    (project / "BASELINE").write_text(sorted((project / "runs").glob("*.json"))[0].stem + "\n")
    result, _ = run_project(project, "--compare-baseline", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "complete" and doc["comparison"]["regressed"] is False
    assert doc["comparison"]["suites"]["smoke"]["verdict"] == "flat"


def test_run_compare_baseline_without_a_baseline_runs_nothing(project: Path) -> None:
    result, docs = run_project(project, "--compare-baseline")
    assert result.exit_code == 2 and docs == []
    assert "BASELINE" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_dry_run_of_a_suite_whose_key_is_missing_plans_it(repo_root: Path, tmp_path: Path) -> None:
    """A dry run only estimates: it must answer "what would `live` cost?" without the key."""
    result = invoke("run", "--config", str(repo_root / "evalh.toml"), "--runs-dir", str(tmp_path / "runs"),
                    "--suite", "live", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert "live" in result.stdout and not (tmp_path / "runs").exists()
    without = invoke("run", "--config", str(repo_root / "evalh.toml"), "--runs-dir", str(tmp_path / "runs"),
                     "--suite", "live")
    assert without.exit_code == 2 and "ANTHROPIC_API_KEY" in without.stderr


def test_runs_listing_shows_a_hostile_label_inert(project: Path) -> None:
    hostile = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 [bold red]x[/]"
    result, _ = run_project(project, "-q", "--label", hostile)
    assert result.exit_code == 0, result.output
    listing = invoke("runs", "--config", str(project / "evalh.toml"), "--runs-dir", str(project / "runs"))
    assert listing.exit_code == 0, listing.output
    assert "\x1b" not in listing.stdout and "\x07" not in listing.stdout
    assert "[bold red]x[/]" in listing.stdout  # markup shown as the text it is
