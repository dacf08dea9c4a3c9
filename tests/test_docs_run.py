"""Docs that run: the command lines of README.md's "Start in your project", of
docs/adopting.md, and docs/ci.md's recipe step by step (the workflow YAML parsed, each
`run:` executed in order as GitHub runs it: `bash -eo pipefail`), in scratch projects;
the exit codes and files the text promises are checked.

`pip install` lines are left out (tests/test_installed.py installs the wheel); everything
else is run as written, with the evalh of this checkout on PATH."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent


def blocks(doc: str, lang: str, section: str | None = None) -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    if section is not None:
        start = text.index(section)
        nxt = re.search(r"^## ", text[start + len(section):], re.M)
        text = text[start: start + len(section) + (nxt.start() if nxt else len(text))]
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def env_for(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALH_", "ANTHROPIC_", "OPENAI_", "GITHUB_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", **extra})
    return env


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A script as a GitHub Actions `run:` step runs it (`bash -e -o pipefail`)."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def without_pip(script: str) -> str:
    return "\n".join(ln for ln in script.splitlines() if not re.match(r"\s*python -m pip install ", ln))


def git_init(root: Path, env: dict[str, str]) -> None:
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)


def ok(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def test_readme_start_and_the_adopting_page_run_as_written(tmp_path: Path) -> None:
    for doc, section in (("README.md", "## Start in your project"), ("docs/adopting.md", None)):
        root = tmp_path / Path(doc).stem
        (root / "myapp").mkdir(parents=True)
        (root / "myapp" / "__init__.py").write_text("")
        env = env_for(root)
        git_init(root, env)
        scripts = blocks(doc, "bash" if doc == "README.md" else "sh", section)
        assert scripts and any("evalh init" in s for s in scripts)
        for script in scripts:
            ok(bash(without_pip(script), root, env), f"{doc}: {script!r}")
        assert (root / "myapp" / "evalh_target.py").is_file()  # the stub went into the package
        assert (root / "BASELINE").is_file() and list((root / "eval_runs").glob("*.json"))
        if doc == "docs/adopting.md":
            assert (root / ".github/workflows/evals.yml").is_file()
            staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=root, env=env,
                                    capture_output=True, text=True, check=True).stdout
            assert "BASELINE" in staged and "eval_runs/" in staged  # `git add -f` of the baseline run


@pytest.fixture
def repo_project(tmp_path: Path) -> Path:
    """A scratch copy of this repository's project (config, datasets, example product)."""
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy2(REPO / "evalh.toml", root / "evalh.toml")
    for d in ("datasets", "examples"):
        shutil.copytree(REPO / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def recipe_steps(section: str = "## GitHub Actions", index: int = 0) -> list[dict[str, object]]:
    workflow = yaml.safe_load(blocks("docs/ci.md", "yaml", section)[index])
    if "jobs" in workflow:
        return list(workflow["jobs"]["evals"]["steps"])
    return list(workflow)  # a fragment: a list of steps


def test_ci_recipe_step_by_step(repo_project: Path) -> None:
    root = repo_project
    summary = root / "summary.md"
    env = env_for(root, GITHUB_SHA="0123456789abcdef", GITHUB_RUN_ID="1", GITHUB_STEP_SUMMARY=str(summary))
    git_init(root, env)
    workflow = yaml.safe_load(blocks("docs/ci.md", "yaml", "## GitHub Actions")[0])
    assert workflow["permissions"]["checks"] == "write"

    # "Set the baseline from a clean run on the main branch"
    set_baseline = blocks("docs/ci.md", "sh", "## What CI needs")[0]
    ok(bash(set_baseline, root, env), "setting the baseline")
    assert (root / "BASELINE").read_text().strip()

    def run_steps(expect: dict[str, int]) -> None:
        for step in recipe_steps():
            if "run" not in step:
                assert "uses" in step
                continue
            name, script = str(step["name"]), str(step["run"])
            if name == "Install":
                assert "pip install evalh" in script
                continue
            proc = bash(script, root, env)
            assert proc.returncode == expect.get(name, 0), (name, proc.returncode, proc.stderr[-2000:])

    run_steps({})
    assert (root / "reports" / "evalh-run.xml").is_file() and (root / "reports" / "evalh-compare.xml").is_file()
    assert "gate" in summary.read_text()

    # A regression: the product gets one gate case wrong. The run step lets exit 1 through,
    # the comparison fails the job.
    (root / "examples" / "broken.py").write_text(
        "from examples.citecheck import check as _check\n\n\n"
        "def check(inp):\n    out = _check(inp)\n"
        "    return {**out, 'verdict': 'accept'} if isinstance(out, dict) else out\n")
    toml = root / "evalh.toml"
    toml.write_text(toml.read_text().replace("examples.citecheck:check", "examples.broken:check"))
    run_steps({"Compare with the baseline": 1})
    failures = (root / "reports" / "evalh-run.xml").read_text()
    assert "<failure" in failures and "exact:" in failures


def test_ci_budget_stopped_run_still_reaches_the_compare_step(tmp_path: Path) -> None:
    """"Stochastic suites in CI", run as written: a `live` suite (here a model on the mock
    provider, priced so that $2 buys one reply) stopped by its budget exits 1 and is
    partial; the run step lets it through, and the compare step compares it, saying so."""
    root = tmp_path
    (root / "script.json").write_text('{"rules": [], "default": {"text": "ok"}}')
    (root / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "q{i}", "expected": "ok"}}\n' for i in range(4)))
    (root / "evalh.toml").write_text(
        '[evalh]\nconcurrency = 1\n\n[prices]\n"m-1" = { input = 1000000.0, output = 1000000.0 }\n\n'
        '[suites.live]\ndataset = "cases.jsonl"\nregime = "stochastic"\nconcurrency = 1\n'
        'scorers = [{ type = "exact" }]\n'
        'target = { kind = "openai", model = "m-1", base_url = "mock:script.json", prompt = "{{ input }}" }\n')
    summary = root / "summary.md"
    env = env_for(root, GITHUB_STEP_SUMMARY=str(summary))
    steps = recipe_steps("### Stochastic suites in CI")
    assert [s["name"] for s in steps] == ["Run the live suite", "Compare"]
    baseline_env = {**env, "EVALH_CACHE_DIR": str(root / "baseline-cache")}  # the live run starts cold
    ok(bash("evalh baseline set $(evalh run --json | python -c "
            "'import json,sys; print(json.load(sys.stdin)[\"run_id\"])')", root, baseline_env), "baseline")
    live = str(steps[0]["run"])
    proc = bash(live.replace("exit 0", 'echo "run exited $code"; exit 0'), root, env)
    ok(proc, "the live step")
    assert "run exited 1" in proc.stdout  # `evalh run` exited 1 (partial); the step let it through
    newest = sorted((root / "eval_runs").glob("*.json"))[-1]
    assert '"status":"partial"' in newest.read_text().replace(" ", "")
    compare = bash(str(steps[1]["run"]), root, env)  # the next step runs, and compares
    assert compare.returncode == 0, compare.stderr  # flat over the cases both runs finished
    assert "partial" in summary.read_text()


def test_the_mock_script_reference_example_replies_as_described(tmp_path: Path) -> None:
    (script,) = blocks("docs/providers.md", "json", "### The mock-provider script format")
    (tmp_path / "script.json").write_text(script)
    (tmp_path / "cases.jsonl").write_text("\n".join([
        '{"id": "paris1", "input": {"q": "What is the capital of France?"}, "expected": "garbage"}',
        '{"id": "json", "input": {"q": "json please"}, "expected": "{\\"answer\\":42}"}',
        '{"id": "other", "input": {"q": "anything else"}, "expected": "ok"}',
    ]) + "\n")
    (tmp_path / "evalh.toml").write_text(
        '[suites.mock]\ndataset = "cases.jsonl"\nconcurrency = 1\nscorers = [{ type = "exact" }]\n'
        'target = { kind = "anthropic", model = "claude-haiku-4-5", base_url = "mock:script.json", '
        'prompt = "{{ input.q }}", backoff_base_s = 0.01 }\n')
    env = env_for(tmp_path)
    proc = bash("evalh run --json --no-cache", tmp_path, env)
    ok(proc, "evalh run against the documented script")
    run = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())
    by_id = {r["case_id"]: r for r in run["suites"]["mock"]["cases"]}
    assert by_id["paris1"]["output"] == "garbage" and by_id["json"]["output"] == '{"answer":42}'
    assert by_id["json"]["tokens_out"] == 7 and by_id["other"]["output"] == "ok"
