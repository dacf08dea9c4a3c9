"""The sharding recipes of docs/scale.md, run as written: the YAML is read from the page,
and every command of every matrix job (every index of the Indexed Job) runs in its own
scratch copy of a project, as on separate machines; then the merge (and the gate). What
the CI or the cluster does around the commands — checkout, installing, moving artifacts,
a shared volume — is done by the test, and the merged run is checked against an
unsharded run of the same project.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runner_project import load, write_project
from tests.test_shard_merge import comparable

pytestmark = pytest.mark.slow  # processes, venvs or large runs: minutes on a busy 2-core machine

yaml = pytest.importorskip("yaml")

DOC = Path(__file__).resolve().parent.parent / "docs" / "scale.md"


def recipes() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def shell_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a job: evalh on PATH (the interpreter running the tests has it)."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    return {**os.environ, "PATH": path, "NO_COLOR": "1", **(extra or {})}


def sh(command: str, cwd: Path, env: dict[str, str] | None = None, shell: str = "bash") -> subprocess.CompletedProcess[str]:
    # GitHub's default `run:` shell is `bash -e -o pipefail`; the pod's is `sh -c`
    args = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command] if shell == "bash" else ["sh", "-c", command]
    return subprocess.run(args, cwd=cwd, env=shell_env(env), capture_output=True, text=True, timeout=180, check=False)


def project(path: Path) -> Path:
    """The project a job checks out: the runner tests' one (every fifth case fails)."""
    path.mkdir(parents=True)
    write_project(path, cases=30)
    return path


def unsharded(root: Path, seed: str) -> dict[str, Any]:
    done = sh(f"evalh run --seed {seed} --runs-dir full -q || [ $? -eq 1 ]", root)
    assert done.returncode == 0, done.stderr
    return load(next((root / "full").glob("*.json")))


def expand(text: str, values: dict[str, str]) -> str:
    """GitHub's `${{ … }}` expressions, from the values the test gives them."""
    def one(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        assert key in values, f"the recipe uses ${{{{ {key} }}}}, which the test does not know"
        return values[key]

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def test_the_page_has_both_recipes() -> None:
    found = recipes()
    assert len(found) == 2
    assert "strategy" in found[0] and "JOB_COMPLETION_INDEX" in found[1]


def test_github_actions_matrix_recipe(tmp_path: Path) -> None:
    workflow = yaml.safe_load(recipes()[0])
    env = {f"env.{k}": str(v) for k, v in workflow["env"].items()}
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert merge_job["needs"] == "shard"
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(workflow["env"]["SHARDS"]) + 1))
    artifacts = tmp_path / "artifacts"

    def run_steps(job: dict[str, Any], root: Path, values: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
        done = []
        for step in job["steps"]:
            if "uses" in step:
                action = step["uses"].split("@")[0]
                with_ = {k: expand(str(v), values) for k, v in (step.get("with") or {}).items()}
                if action == "actions/upload-artifact":
                    target = artifacts / with_["name"]
                    target.mkdir(parents=True)
                    files = list(root.glob(with_["path"]))
                    assert files, f"{with_['path']} matched nothing to upload"
                    for f in files:
                        shutil.copy(f, target / f.name)
                elif action == "actions/download-artifact":
                    pattern = with_["pattern"]
                    for art in artifacts.glob(pattern):
                        shutil.copytree(art, root / with_["path"] / art.name)
                else:  # checkout, setup-python: the scratch project and this interpreter
                    assert action in ("actions/checkout", "actions/setup-python"), action
                continue
            command = expand(step["run"], values)
            if command.startswith("pip install"):
                assert command == "pip install -e ."  # evalh is installed here already
                continue
            res = sh(command, root)
            assert res.returncode == 0, f"{command}\n{res.stdout}\n{res.stderr}"
            done.append(res)
        return done

    for k in shards:  # each matrix job on its own machine
        run_steps(shard_job, project(tmp_path / f"job-{k}"), {**env, "matrix.shard": str(k)})

    root = project(tmp_path / "merge-job")
    reference = unsharded(root, workflow["env"]["SEED"])
    baseline = sh("evalh baseline set " + reference["run_id"] + " --runs-dir full", root)
    assert baseline.returncode == 0, baseline.stderr
    shutil.copytree(root / "full", root / "eval_runs")  # BASELINE's run where the gate looks
    run_steps(merge_job, root, {**env, "github.sha": "0123abcd"})
    merged = [load(p) for p in (root / "eval_runs").glob("*.json") if load(p).get("merged_from")]
    assert len(merged) == 1
    assert merged[0]["label"] == "0123abcd" and len(merged[0]["merged_from"]) == len(shards)
    assert comparable(merged[0]) == comparable(reference)


def test_kubernetes_indexed_job_recipe(tmp_path: Path) -> None:
    shards_job, merge_job = list(yaml.safe_load_all(recipes()[1]))
    spec = shards_job["spec"]
    assert spec["completionMode"] == "Indexed"
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert spec["completions"] == spec["parallelism"] == int(env["SHARDS"])
    assert container["command"] == ["sh", "-c"] and len(container["args"]) == 1
    volume = tmp_path / "pvc"  # the shared volume every pod mounts at RUNS_DIR
    volume.mkdir()
    env["RUNS_DIR"] = str(volume)
    for index in range(spec["completions"]):  # each pod in its own copy of the image
        pod = project(tmp_path / f"pod-{index}")
        res = sh(container["args"][0], pod, {**env, "JOB_COMPLETION_INDEX": str(index)}, shell="sh")
        assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in volume.iterdir()) == [f"shard-{k}" for k in range(1, spec["completions"] + 1)]

    merger = merge_job["spec"]["template"]["spec"]["containers"][0]
    root = project(tmp_path / "merge-pod")
    menv = {e["name"]: e["value"] for e in merger["env"]} | {"RUNS_DIR": str(volume)}
    res = sh(merger["args"][0], root, menv, shell=merger["command"][0])
    assert res.returncode == 0, res.stderr
    merged = load(next((volume / "merged").glob("*.json")))
    assert [s.split("-")[0] for s in merged["merged_from"]] and len(merged["merged_from"]) == spec["completions"]
    assert comparable(merged) == comparable(unsharded(root, env["SEED"]))
