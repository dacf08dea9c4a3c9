"""`evalh init`: a new project that runs at once, offline; nothing existing is overwritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_init_in_an_empty_directory_then_run_passes(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0, result.output
    files = tree(tmp_path)
    assert set(files) == {"evalh.toml", "evals/smoke.jsonl", "evals/__init__.py",
                          "evals/evalh_target.py", ".gitignore"}
    assert files[".gitignore"].decode().splitlines()[1:] == ["eval_runs/", ".evalh/"]
    assert "next: evalh run" in result.stderr
    result = invoke("validate")
    assert result.exit_code == 0, result.output
    result = invoke("run", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "complete" and doc["summary"]["suites"]["smoke"]["passed"] == 4


def test_init_writes_the_stub_into_the_only_package(tmp_path: Path) -> None:
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")  # tests/ is never the user's package
    result = invoke("init", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["target"] == "myapp.evalh_target:answer"
    assert (tmp_path / "myapp" / "evalh_target.py").is_file()
    assert not (tmp_path / "evals" / "__init__.py").exists()
    result = invoke("run", "--config", str(tmp_path / "evalh.toml"), "-q")
    assert result.exit_code == 0, result.output


def test_init_with_an_existing_target_and_github_ci(tmp_path: Path) -> None:
    (tmp_path / "product.py").write_text("def classify(x):\n    return {'label': 'question'}\n")
    (tmp_path / ".gitignore").write_text("*.pyc\neval_runs")  # one line already there, no newline
    result = invoke("init", str(tmp_path), "--target", "product:classify", "--ci", "github")
    assert result.exit_code == 0, result.output
    assert 'target = "product:classify"' in (tmp_path / "evalh.toml").read_text()
    assert not (tmp_path / "evals").joinpath("evalh_target.py").exists()
    assert (tmp_path / ".gitignore").read_text().splitlines() == [
        "*.pyc", "eval_runs", "# evalh: run documents and the response cache", ".evalh/"]
    import yaml

    workflow = yaml.safe_load((tmp_path / ".github/workflows/evals.yml").read_text())
    assert workflow["permissions"]["checks"] == "write"
    runs = " ".join(step.get("run", "") for step in workflow["jobs"]["evals"]["steps"])
    assert "evalh run" in runs and "evalh compare --fail-on-regression" in runs
    result = invoke("run", "--config", str(tmp_path / "evalh.toml"), "--json")
    doc = json.loads(result.stdout)  # the two statements fail: the user's function decides
    assert result.exit_code == 1 and doc["summary"]["suites"]["smoke"]["passed"] == 2


@pytest.mark.parametrize("existing", ["evalh.toml", "evals/smoke.jsonl", "evals/evalh_target.py"])
def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n")
    before = tree(tmp_path)
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / existing) in lines[0] and "exists" in lines[0]
    assert tree(tmp_path) == before


def test_init_refuses_a_workflow_that_exists(tmp_path: Path) -> None:
    wf = tmp_path / ".github" / "workflows" / "evals.yml"
    wf.parent.mkdir(parents=True)
    wf.write_text("name: mine\n")
    before = tree(tmp_path)
    result = invoke("init", str(tmp_path), "--ci", "github")
    assert result.exit_code == 2 and "evals.yml" in result.stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize(("args", "says"), [
    (["--target", "nope"], "module:function"),
    (["--target", "missing_mod:fn"], "cannot import"),
    (["--ci", "gitlab"], "unknown CI"),
    (["--package", "absent"], "no package 'absent'"),
])
def test_init_bad_options_are_one_line_and_write_nothing(tmp_path: Path, args: list[str], says: str) -> None:
    result = invoke("init", str(tmp_path), *args)
    assert result.exit_code == 2
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert tree(tmp_path) == {}


def test_help_hint_follows_whether_a_config_exists(tmp_path: Path) -> None:
    import subprocess
    import sys

    def first_hint(cwd: Path) -> str:
        out = subprocess.run([sys.executable, "-m", "evalh.cli.main", "--help"], cwd=cwd,
                             capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"}).stdout
        return " ".join(out.split())

    assert "start with `evalh init`" in first_hint(tmp_path)
    (tmp_path / "evalh.toml").write_text("")
    assert "Run `evalh run` (evalh.toml found)" in first_hint(tmp_path)


def test_a_missing_config_says_evalh_init(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    result = invoke("run")
    assert result.exit_code == 2
    assert "no evalh.toml found" in result.stderr and "`evalh init` writes one" in result.stderr


def test_no_runs_hint_says_init_where_there_is_no_config(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    result = invoke("report")
    assert result.exit_code == 2 and "start with `evalh init`" in result.stderr
    assert invoke("init", "-q").exit_code == 0
    result = invoke("report")
    assert result.exit_code == 2 and "run `evalh run` first" in result.stderr


def test_ci_added_later_writes_only_the_workflow(tmp_path: Path) -> None:
    """`evalh init`, then `evalh init --ci github`: the project's files are kept as they
    are, the workflow is added (exit 0); asked a third time, it refuses to overwrite it."""
    assert invoke("init", str(tmp_path), "-q").exit_code == 0
    (tmp_path / "evals" / "smoke.jsonl").write_text('{"id": "mine", "input": {"text": "?"}, "expected": "question"}\n')
    before = tree(tmp_path)
    result = invoke("init", str(tmp_path), "--ci", "github")
    assert result.exit_code == 0, result.output
    after = tree(tmp_path)
    assert set(after) - set(before) == {".github/workflows/evals.yml"}
    assert all(after[k] == v for k, v in before.items())  # nothing else touched
    assert "kept evalh.toml (exists)" in result.stderr
    result = invoke("init", str(tmp_path), "--ci", "github")
    assert result.exit_code == 2 and "evals.yml: exists" in result.stderr
    assert tree(tmp_path) == after


def test_ci_added_later_with_a_target_still_refuses_the_config(tmp_path: Path) -> None:
    """`--target` asks for a new config: an existing evalh.toml is refused as before."""
    (tmp_path / "product.py").write_text("def f(x):\n    return {}\n")
    assert invoke("init", str(tmp_path), "-q").exit_code == 0
    before = tree(tmp_path)
    result = invoke("init", str(tmp_path), "--ci", "github", "--target", "product:f")
    assert result.exit_code == 2 and "evalh.toml: exists" in result.stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize(("direct_url", "requirement", "noted"), [
    (None, "evalh==0.1.0", False),  # from an index
    ({"url": "file:///{root}/vendor/evalh-0.1.0-py3-none-any.whl", "archive_info": {}},
     "./vendor/evalh-0.1.0-py3-none-any.whl", False),
    ({"url": "file:///elsewhere/evalh-0.1.0-py3-none-any.whl", "archive_info": {}},
     "./evalh-0.1.0-py3-none-any.whl", True),
    ({"url": "https://example.org/evalh-0.1.0-py3-none-any.whl", "archive_info": {}},
     "https://example.org/evalh-0.1.0-py3-none-any.whl", False),
    ({"url": "https://github.com/acme/evalh", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
     "evalh @ git+https://github.com/acme/evalh@abc123", False),
    ({"url": "file:///nowhere/evalh", "dir_info": {"editable": True}}, "evalh==0.1.0", True),
])
def test_the_workflow_installs_evalh_as_it_was_installed(
    tmp_path: Path, direct_url: dict[str, object] | None, requirement: str, noted: bool
) -> None:
    from evalh.scaffold import install_spec, workflow_text

    if direct_url is not None:
        direct_url = {**direct_url, "url": str(direct_url["url"]).replace("/{root}", tmp_path.resolve().as_posix())}
    spec = install_spec(tmp_path, direct_url or {})
    assert spec.requirement == requirement and (spec.note is not None) == noted
    import yaml

    steps = yaml.safe_load(workflow_text(tmp_path, spec))["jobs"]["evals"]["steps"]
    (install,) = [s["run"] for s in steps if s.get("name") == "Install"]
    assert install == "pip install " + (f'"{requirement}"' if " " in requirement else requirement)


def test_an_editable_checkout_with_an_origin_installs_from_its_commit(tmp_path: Path) -> None:
    import subprocess

    from evalh.scaffold import install_spec

    checkout = tmp_path / "evalh-src"
    checkout.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    for cmd in (["init", "-q"], ["remote", "add", "origin", "https://example.org/acme/evalh.git"],
                ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *cmd], cwd=checkout, env=env, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True).stdout.strip()
    spec = install_spec(tmp_path / "project", {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    assert spec.requirement == f"evalh @ git+https://example.org/acme/evalh.git@{sha}" and spec.note is None
