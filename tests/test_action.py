"""The GitHub Action at the repository root (action.yml, composite), its shell steps run
as GitHub runs them (`bash --noprofile --norc -eo pipefail`), in order, in a scratch
project with a git history, a fake `GITHUB_*` environment and a loopback stand-in for
GitHub's comments API that records every request; `uses:` steps (setup-python,
upload-artifact) are GitHub's and are not run. The action and the workflows evalh writes
are validated against SchemaStore's published schemas (vendored in tests/data/schemas)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "tests" / "data" / "schemas"
TOKEN = "ghs_fake0123456789abcdef"


class Yaml12Loader(yaml.SafeLoader):
    """YAML as GitHub reads it: `on:` is a key, not the boolean YAML 1.1 makes of it."""


Yaml12Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))


def load(text: str) -> Any:
    return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506 - a SafeLoader subclass


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.json").read_text())


def test_the_action_and_the_workflows_validate_against_the_published_schemas(tmp_path: Path) -> None:
    from evalh.scaffold import InstallSpec, workflow_text

    jsonschema.validate(load((REPO / "action.yml").read_text()), schema("github-action"))
    (tmp_path / "pyproject.toml").write_text("")
    for spec in (InstallSpec("evalh==0.1.0"), InstallSpec("./evalh-0.1.0-py3-none-any.whl", "commit it"),
                 InstallSpec("evalh @ git+https://example.org/evalh@abc")):
        jsonschema.validate(load(workflow_text(tmp_path, spec)), schema("github-workflow"))
    from tests.test_docs_run import blocks

    jsonschema.validate(load(blocks("docs/ci.md", "yaml", "## GitHub Actions")[0]), schema("github-workflow"))
    (usage,) = blocks("docs/ci.md", "yaml", "## The evalh action")
    jsonschema.validate(load(usage), schema("github-workflow"))
    assert any(s.get("uses", "").endswith("evalh@v0.1.0") or "uses: ./" in usage
               for s in load(usage)["jobs"]["evals"]["steps"])


class CommentsApi:
    """GitHub's issue-comments endpoints, in memory, every request recorded."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.comments: dict[int, str] = {1: "an unrelated comment"}
        self.next_id = 100
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, code: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                req = {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"),
                       "body": body}
                api.requests.append(req)
                return req

            def do_GET(self) -> None:  # noqa: N802
                self._record()
                if not self.path.startswith("/repos/acme/widgets/issues/7/comments"):
                    return self._reply(404, {"message": "Not Found"})
                self._reply(200, [{"id": i, "body": b} for i, b in api.comments.items()])

            def do_POST(self) -> None:  # noqa: N802
                req = self._record()
                api.next_id += 1
                api.comments[api.next_id] = req["body"]["body"]
                self._reply(201, {"id": api.next_id})

            def do_PATCH(self) -> None:  # noqa: N802
                req = self._record()
                cid = int(self.path.rsplit("/", 1)[1])
                api.comments[cid] = req["body"]["body"]
                self._reply(200, {"id": cid})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def api() -> Iterator[CommentsApi]:
    server = CommentsApi()
    yield server
    server.server.shutdown()


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def expression(text: str, ctx: dict[str, str]) -> str:
    """`${{ inputs.x }}`, `${{ github.x }}`, `${{ steps.id.outputs.k }}` as the runner would."""
    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: ctx.get(m.group(1), ""), text)


def run_action(root: Path, api: CommentsApi, inputs: dict[str, str], tmp: Path) -> tuple[int, list[dict[str, Any]]]:
    """Every step of action.yml in order; a step after a failed one runs only with
    `if: always()`. Returns the action's exit code (its last failing step's) and each
    step's outcome."""
    action = load((REPO / "action.yml").read_text())
    ctx = {"github.action_path": str(REPO), "github.token": TOKEN, "github.run_id": "42", "github.job": "evals"}
    defaults = {k: expression(str(v.get("default", "")), ctx) for k, v in action["inputs"].items()}
    ctx.update({f"inputs.{k}": v for k, v in {**defaults, **inputs}.items()})
    bin_dir = tmp / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    pip_log = tmp / "pip-args.txt"
    (bin_dir / "pip").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{pip_log}"\n')  # installing is pip's
    (bin_dir / "pip").chmod(0o755)
    event = tmp / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALH_", "ANTHROPIC_", "OPENAI_"))}
    base_env.update({
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_ACTIONS": "true", "GITHUB_SHA": git(root, "rev-parse", "HEAD").strip(), "GITHUB_RUN_ID": "42",
        "GITHUB_REPOSITORY": "acme/widgets", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": api.url, "GITHUB_SERVER_URL": "https://github.example", "GITHUB_BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"), "NO_COLOR": "1", "COLUMNS": "200",
    })
    code, failed, outcomes = 0, False, []
    for i, step in enumerate(action["runs"]["steps"]):
        if "run" not in step:
            outcomes.append({"uses": step["uses"]})
            continue
        if failed and "always()" not in str(step.get("if", "")):
            outcomes.append({"name": step["name"], "skipped": True})
            continue
        output = tmp / f"output-{i}"
        output.write_text("")
        env = {**base_env, "GITHUB_OUTPUT": str(output),
               **{k: expression(str(v), ctx) for k, v in (step.get("env") or {}).items()}}
        cwd = root / expression(str(step.get("working-directory", ".")), ctx)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=300)
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            ctx[f"steps.{step.get('id')}.outputs.{key}"] = value
        outcomes.append({"name": step["name"], "code": proc.returncode, "stdout": proc.stdout,
                         "stderr": proc.stderr})
        if proc.returncode:
            failed, code = True, proc.returncode
    outcomes.append({"pip": pip_log.read_text().splitlines() if pip_log.exists() else None})
    return code, outcomes


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An `evalh init` project whose BASELINE was set two commits before main's tip, and a
    pull-request branch from main that breaks one case."""
    from typer.testing import CliRunner

    from evalh.cli.main import app

    root = tmp_path / "proj"
    root.mkdir()
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert CliRunner().invoke(app, ["init", "-q"]).exit_code == 0
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "start")
        result = CliRunner().invoke(app, ["run", "--json"])
        run_id = json.loads(result.stdout)["run_id"]
        assert CliRunner().invoke(app, ["baseline", "set", run_id]).exit_code == 0
    finally:
        os.chdir(cwd)
    git(root, "add", "BASELINE")
    git(root, "add", "-f", f"eval_runs/{run_id}.json")
    git(root, "commit", "-qm", "baseline")
    for n in range(2):  # main moves on
        (root / f"notes{n}.txt").write_text("x")
        git(root, "add", "-A")
        git(root, "commit", "-qm", f"main {n}")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(root, "checkout", "-qb", "pr")
    stub = root / "evals" / "evalh_target.py"
    stub.write_text(stub.read_text().replace('text.endswith("?")', 'text.endswith(("?", "."))'))
    git(root, "commit", "-qam", "break a statement")
    return root


def test_the_action_gates_a_pull_request_and_keeps_one_comment(project: Path, api: CommentsApi, tmp_path: Path) -> None:
    code, steps = run_action(project, api, {"suites": "smoke", "flags": "--fail-on-inconclusive"}, tmp_path)
    assert code == 1, steps  # evalh compare's exit code: the regression
    names = {s.get("name"): s for s in steps}
    assert steps[-1]["pip"] == ["install", str(REPO)]  # no evalh-version: the action's own checkout
    assert names["Run the suites"]["code"] == 0 and names["Compare with the baseline"]["code"] == 0
    assert names["Exit with evalh's code"]["code"] == 1
    assert [s.get("uses") for s in steps if "uses" in s] == ["actions/setup-python@v5", "actions/upload-artifact@v4"]
    reports = project / "reports"
    assert {p.name for p in reports.iterdir()} >= {"evalh-run.xml", "evalh-compare.xml", "evalh-compare.json",
                                                   "evalh-compare.md"}
    summary = (tmp_path / "summary.md").read_text()
    assert "REGRESSED" in summary and "statement.plain" in summary
    assert "3 commits behind the candidate's merge base with origin/main" in summary  # baseline run at "start"

    comparison = json.loads((reports / "evalh-compare.json").read_text())
    assert comparison["baseline_age"]["commits_behind"] == 3 and comparison["baseline_age"]["stale"] is False
    assert [(r["method"], r["path"].split("?")[0]) for r in api.requests] == [
        ("GET", "/repos/acme/widgets/issues/7/comments"), ("POST", "/repos/acme/widgets/issues/7/comments")]
    assert {r["auth"] for r in api.requests} == {f"Bearer {TOKEN}"}
    body = api.requests[-1]["body"]["body"]
    lines = [ln for ln in body.splitlines() if ln.strip()]
    assert lines[1].startswith("## evalh: **REGRESSED** (gate: FAIL)")  # the verdict first
    assert "`statement.plain`: passed → failed" in body
    assert "https://github.example/acme/widgets/actions/runs/42#artifacts" in body
    assert "<details><summary>The full comparison</summary>" in body
    assert all(TOKEN not in (s.get("stdout", "") + s.get("stderr", "")) for s in steps)

    # Another push to the pull request: the same comment is edited, no second one.
    code, _ = run_action(project, api, {"suites": "smoke"}, tmp_path)
    assert code == 1
    assert [r["method"] for r in api.requests[2:]] == ["GET", "PATCH"]
    assert api.requests[-1]["path"] == "/repos/acme/widgets/issues/comments/101"
    assert len([c for c in api.comments.values() if "evalh: pull-request comment" in c]) == 1


def test_the_action_passes_a_clean_change_and_installs_the_version_asked(
    project: Path, api: CommentsApi, tmp_path: Path
) -> None:
    git(project, "checkout", "-q", "main")
    code, steps = run_action(project, api, {"evalh-version": "0.1.0", "comment": "false",
                                            "baseline-max-age-days": "0"}, tmp_path)
    assert code == 0, steps
    assert steps[-1]["pip"] == ["install", "evalh==0.1.0"]
    assert api.requests == []  # comment: false
    summary = (tmp_path / "summary.md").read_text()
    assert "warning: the baseline is" in summary and "older than 0 days" in summary
    code, steps = run_action(project, api, {"evalh-version": "./dist/evalh-0.1.0-py3-none-any.whl",
                                            "comment": "false"}, tmp_path)
    assert code == 0 and steps[-1]["pip"] == ["install", "./dist/evalh-0.1.0-py3-none-any.whl"]


def test_without_a_baseline_the_action_exits_with_the_runs_code(project: Path, api: CommentsApi, tmp_path: Path) -> None:
    (project / "BASELINE").unlink()
    code, steps = run_action(project, api, {}, tmp_path)
    assert code == 1  # the broken case fails the run; there is nothing to compare it with
    assert "no BASELINE committed yet" in (tmp_path / "summary.md").read_text()
    assert api.requests == []


def test_the_comment_escapes_what_runs_say_and_a_refusal_is_one_line(api: CommentsApi, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from evalh.report.pr_comment import comment_body

    hostile = {"verdict": "regressed", "fails_gate": True, "gate_reasons": [], "suites": {"s<b>": {
        "regime": "deterministic", "verdict": "regressed",
        "cases": {"regressed": [{"case_id": "<img src=x onerror=alert(1)>", "arm": "default",
                                 "base": "passed", "candidate": "failed"}]}}}}
    body = comment_body(hostile)
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body and "<b>" not in body
    (tmp_path / "cmp.json").write_text(json.dumps(hostile))
    (tmp_path / "event.json").write_text(json.dumps({"number": 7}))
    for k, v in {"GITHUB_REPOSITORY": "someone/else", "GITHUB_EVENT_NAME": "pull_request_target",
                 "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_API_URL": api.url,
                 "GITHUB_TOKEN": TOKEN}.items():
        monkeypatch.setenv(k, v)
    result = CliRunner().invoke(app, ["ci", "comment", "--compare-json", str(tmp_path / "cmp.json")])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "HTTP 404" in lines[0] and "pull-requests: write" in lines[0]
    assert TOKEN not in result.output
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    result = CliRunner().invoke(app, ["ci", "comment", "--compare-json", str(tmp_path / "cmp.json"), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["posted"] is None
    assert len(api.requests) == 1  # the refused listing; nothing on a push


def test_run_compare_baseline_says_how_old_the_baseline_is(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from evalh.cli.main import app

    monkeypatch.chdir(project)
    env = {**os.environ, "EVALH_BASE_REF": "origin/main"}  # in a process of its own: the broken stub, imported anew
    proc = subprocess.run([sys.executable, "-m", "evalh.cli.main", "run", "--compare-baseline", "--json"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # statement.plain regressed
    age = json.loads(proc.stdout)["comparison"]["baseline_age"]
    assert age["commits_behind"] == 3 and age["against"] == "the candidate's merge base with origin/main"
    result = CliRunner().invoke(app, ["compare", "--baseline-max-age", "0"])
    assert "warning: the baseline is 0 days old, older than 0 days" in " ".join(result.stdout.split())


def test_the_comment_never_carries_a_credential_of_the_job(api: CommentsApi, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull-request comment is public: a credential of the job's environment that reached
    the comparison's files (an older evalh, another tool's markdown, a case id) is scrubbed
    from what `ci comment` posts and from what it prints, as from every file evalh writes."""
    from typer.testing import CliRunner

    from evalh.cli.main import app

    key = "sk-proj-jobsecret0123456789"
    cmp = {"verdict": "regressed", "fails_gate": True, "gate_reasons": [f"suite s: {key}"], "suites": {"s": {
        "regime": "deterministic", "verdict": "regressed",
        "cases": {"regressed": [{"case_id": f"echo-{key}", "arm": "default", "base": "passed", "candidate": "failed"}]}}}}
    (tmp_path / "cmp.json").write_text(json.dumps(cmp))
    (tmp_path / "cmp.md").write_text(f"the product said {key}\n")
    (tmp_path / "event.json").write_text(json.dumps({"number": 7}))
    for k, v in {"GITHUB_REPOSITORY": "acme/widgets", "GITHUB_EVENT_NAME": "pull_request",
                 "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_API_URL": api.url,
                 "GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": key}.items():
        monkeypatch.setenv(k, v)
    args = ["ci", "comment", "--compare-json", str(tmp_path / "cmp.json"), "--markdown", str(tmp_path / "cmp.md")]
    for extra in (["--dry-run"], ["--dry-run", "--json"], ["--json"]):
        result = CliRunner().invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        assert key not in result.output and TOKEN not in result.output
    posted = [r["body"]["body"] for r in api.requests if r["method"] in ("POST", "PATCH")]
    assert posted and all(key not in body and "[REDACTED]" in body for body in posted)


@pytest.mark.parametrize("doc", [
    {"suites": 5},
    {"suites": {"a": 1}, "gate_reasons": 5},
    {"suites": {"a": {"cases": {"regressed": [1]}}}},
    {"suites": {"a": {"cases": 3, "metrics": [1]}}, "baseline_age": {"commits_behind": 3}},
])
def test_a_compare_json_of_the_wrong_shape_is_one_line_and_exit_2(tmp_path: Path, doc: dict[str, Any]) -> None:
    """`ci comment` read a file that has `suites` but not compare's shape with a traceback
    (exit 1); bad input is one line naming the file, exit 2, nothing posted."""
    from typer.testing import CliRunner

    from evalh.cli.main import app

    (tmp_path / "cmp.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["ci", "comment", "--compare-json", str(tmp_path / "cmp.json"), "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cmp.json" in lines[0] and "evalh compare --format json" in lines[0], lines
    assert result.stdout == ""
