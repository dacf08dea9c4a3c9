"""evalh as a user gets it: a wheel built from this checkout, installed into a fresh venv
outside it, used from an empty directory and from a user's project.

One venv per test module (module fixture). It sees the current environment's
site-packages for evalh's dependencies (a `.pth` naming them: what `--system-site-packages`
does, but also when the tests themselves run in a venv, as in `.ci/run`), so nothing but
the wheel is installed (`--no-deps`). The outer environment's `.pth` files are not run, so
this checkout's editable install is invisible; a test checks the `evalh` imported is the
wheel's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # processes, venvs or large runs: minutes on a busy 2-core machine

REPO = Path(__file__).resolve().parent.parent
WHEEL_SOURCES = ("pyproject.toml", "README.md", "evalh")


@dataclass
class Venv:
    root: Path
    wheel: Path

    @property
    def bin(self) -> Path:
        return self.root / ("Scripts" if os.name == "nt" else "bin")

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("EVALH_", "ANTHROPIC_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))
               and k not in ("EVAL_RUNS_DIR", "PYTEST_ADDOPTS")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["NO_COLOR"] = "1"
        env["COLUMNS"] = "200"
        return env

    def run(self, *args: str, cwd: Path, code: int | None = 0, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a command of the venv (`evalh ...`, `python ...`) in `cwd`; check its exit code."""
        exe = shutil.which(args[0], path=str(self.bin)) or args[0]
        proc = subprocess.run([exe, *args[1:]], cwd=cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)
        if code is not None:
            assert proc.returncode == code, (
                f"{' '.join(args)} exited {proc.returncode}, expected {code}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
        return proc

    def pip_install(self, *args: str) -> None:
        subprocess.run([str(self.python), "-m", "pip", "install", "-q", "--no-deps",
                        "--disable-pip-version-check", "--no-warn-script-location", *args],
                       env=self.env(), check=True, capture_output=True, timeout=300)


def plugin_wheel(pkg: Path, out: Path) -> Path:
    """A wheel of tests/plugin_pkg, zipped here from its pyproject.toml (name, version,
    entry points) and its src/ tree: pip installs it as it would any wheel, without the
    isolated build environment a source install needs (tens of seconds on a busy machine)."""
    import base64
    import hashlib
    import tomllib
    import zipfile

    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    dist = meta["name"].replace("-", "_")
    info = f"{dist}-{meta['version']}.dist-info"
    files: dict[str, bytes] = {
        p.relative_to(pkg / "src").as_posix(): p.read_bytes()
        for p in sorted((pkg / "src").rglob("*.py"))
    }
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {meta['name']}\n"
                                 f"Version: {meta['version']}\n").encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: evalh-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in eps.items()) + "\n"
        for group, eps in meta["entry-points"].items()).encode()

    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{name},sha256={digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    wheel = out / f"{dist}-{meta['version']}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout's working tree, built from a copy (the tree gets no
    build/ or egg-info, and nothing but the package sources goes in)."""
    src = out / "src"
    src.mkdir()
    for name in WHEEL_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    dist = out / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "--disable-pip-version-check", "-w", str(dist), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = dist.glob("evalh-*.whl")
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    base = tmp_path_factory.mktemp("installed")
    wheel = build_wheel(base)
    root = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    v = Venv(root, wheel)
    purelib = subprocess.run([str(v.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    outer = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(purelib, "_outer_environment.pth").write_text("".join(f"{p}\n" for p in outer))
    v.pip_install(str(wheel))
    yield v


def where_is_evalh(venv: Venv, cwd: Path) -> Path:
    out = venv.run("python", "-c", "import evalh; print(evalh.__file__)", cwd=cwd).stdout
    return Path(out.strip())


def test_the_venv_runs_the_wheel_not_the_checkout(venv: Venv, tmp_path: Path) -> None:
    found = where_is_evalh(venv, tmp_path)
    assert venv.root in found.parents and REPO not in found.parents
    assert (found.parent / "report" / "templates" / "report.html.j2").is_file()
    assert (found.parent / "ui" / "dashboard.js").is_file()


def test_from_an_empty_directory_init_run_compare(venv: Venv, tmp_path: Path) -> None:
    project = tmp_path / "empty"
    project.mkdir()
    help_text = " ".join(venv.run("evalh", "--help", cwd=project).stdout.split())
    assert "start with `evalh init`" in help_text
    venv.run("evalh", "run", cwd=project, code=2)  # no evalh.toml yet: one line, exit 2
    venv.run("evalh", "init", cwd=project)
    first = json.loads(venv.run("evalh", "run", "--json", "--label", "first", cwd=project).stdout)
    assert first["status"] == "complete" and first["summary"]["passed"] == 4
    venv.run("evalh", "baseline", "set", first["run_id"], cwd=project)
    second = json.loads(venv.run("evalh", "run", "--json", cwd=project).stdout)
    venv.run("evalh", "compare", "--fail-on-regression", cwd=project)
    assert second["run_id"] != first["run_id"]
    report = venv.run("evalh", "report", "--format", "md", cwd=project).stdout
    assert "smoke" in report

    # A regression: the stub misreads a statement; run exits 1, the gate fails.
    stub = project / "evals" / "evalh_target.py"
    stub.write_text(stub.read_text().replace('text.endswith("?")', 'text.endswith(("?", "."))'))
    venv.run("evalh", "run", "-q", cwd=project, code=1)
    gate = venv.run("evalh", "compare", "--fail-on-regression", "--format", "json", cwd=project, code=1)
    assert "statement.plain" in gate.stdout


def test_in_a_user_project_with_a_package(venv: Venv, tmp_path: Path) -> None:
    project = tmp_path / "userproj"
    (project / "acme").mkdir(parents=True)
    (project / "acme" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text('[project]\nname = "acme"\nversion = "0"\n')
    (project / ".gitignore").write_text("__pycache__/\n")
    venv.run("evalh", "init", "--ci", "github", cwd=project)
    assert (project / "acme" / "evalh_target.py").is_file()
    # installed from a wheel outside the project: its name, at the root, where it is to be committed
    workflow = (project / ".github/workflows/evals.yml").read_text()
    assert f"pip install ./{venv.wheel.name} -e ." in workflow and f"commit the wheel evalh was installed from ({venv.wheel.name})" in workflow
    assert (project / ".gitignore").read_text().startswith("__pycache__/\n")
    sub = project / "acme"  # from a subdirectory: the config is found upwards
    venv.run("evalh", "run", "-q", cwd=sub)
    assert len(list((project / "eval_runs").glob("*.json"))) == 1


def test_a_plugin_installed_with_pip_runs_a_suite(venv: Venv, tmp_path: Path) -> None:
    """tests/plugin_pkg, pip-installed into the venv (as a wheel): its scorer, target and provider run a
    suite, its provider is a model target kind, its report format is `evalh report --format`'s;
    `evalh plugins` lists them with their distribution."""
    venv.pip_install(str(plugin_wheel(REPO / "tests" / "plugin_pkg", tmp_path)))
    project = tmp_path / "pluggy"
    project.mkdir()
    listed = json.loads(venv.run("evalh", "plugins", "--json", cwd=project).stdout)["plugins"]
    assert {(p["kind"], p["name"], p["status"]) for p in listed} >= {
        ("scorer", "demo_length", "loaded"), ("target", "demo_shout", "loaded"),
        ("provider", "demo_echo", "loaded"), ("report_format", "demo_csv", "loaded")}
    (project / "cases.jsonl").write_text('{"id": "hi", "input": {"text": "hi there"}}\n')
    (project / "evalh.toml").write_text(
        '[suites.demo]\ndataset = "cases.jsonl"\ntarget = { kind = "demo_shout" }\n'
        'scorers = [{ type = "demo_length", max_chars = 20 }]\n\n'
        '[suites.echo]\ndataset = "cases.jsonl"\n'  # the plugin's provider as a model target kind
        'target = { kind = "demo_echo", model = "echo-1", prompt = "{{ input.text }}!" }\n'
        'scorers = [{ type = "demo_length", max_chars = 20 }]\n')
    env = {**venv.env(), "DEMO_ECHO_KEY": "k-demo"}
    proc = subprocess.run([str(venv.bin / "evalh"), "run", "--json"], cwd=project, capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run_id = json.loads(proc.stdout)["run_id"]
    run = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())
    assert run["suites"]["demo"]["cases"][0]["output"] == "HI THERE"
    assert run["suites"]["echo"]["cases"][0]["output"] == "HI THERE!"
    csv = subprocess.run([str(venv.bin / "evalh"), "report", "--format", "demo_csv"], cwd=project,
                         capture_output=True, text=True, env=env, timeout=120)
    assert csv.returncode == 0, csv.stderr[-2000:]
    assert f"{run_id},echo,hi,default,0,passed" in csv.stdout.splitlines()


def test_the_pytest_plugin_comes_with_the_wheel(venv: Venv, tmp_path: Path) -> None:
    """The `pytest11` entry point: a user's test gets the `evalh` fixture without `-p`."""
    project = tmp_path / "withtests"
    project.mkdir()
    venv.run("evalh", "init", "-q", cwd=project)
    (project / "test_evals.py").write_text('def test_smoke(evalh):\n    evalh.check("smoke")\n')
    proc = venv.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_evals.py", cwd=project)
    assert "1 passed" in proc.stdout


def fresh_venv(root: Path, wheel: Path) -> Venv:
    """A venv with pip, whose dependencies are the outer environment's (as `venv` has)."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300, capture_output=True)
    v = Venv(root, wheel)
    purelib = subprocess.run([str(v.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    outer = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(purelib, "_outer_environment.pth").write_text("".join(f"{p}\n" for p in outer))
    return v


def test_the_generated_workflow_runs_step_by_step_from_a_fresh_venv(venv: Venv, tmp_path: Path) -> None:
    """README's path: the wheel in the project, installed from there, `evalh init --ci
    github`; then, in another fresh venv (the CI runner), every `run:` step of the workflow
    in order as GitHub runs it, its install line first: the gate passes, then fails on a
    regression. Dependencies come from the outer environment (no index is asked)."""
    import yaml

    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy2(venv.wheel, project / venv.wheel.name)
    user = fresh_venv(tmp_path / "user-venv", venv.wheel)
    pip_env = {**user.env(), "PIP_NO_INDEX": "1"}
    subprocess.run([str(user.python), "-m", "pip", "install", "-q", venv.wheel.name], cwd=project,
                   env=pip_env, check=True, capture_output=True, timeout=300)
    user.run("evalh", "init", "--ci", "github", cwd=project)
    workflow = yaml.safe_load((project / ".github/workflows/evals.yml").read_text())
    steps = workflow["jobs"]["evals"]["steps"]
    (install,) = [s["run"] for s in steps if s.get("name") == "Install"]
    assert install == f"pip install ./{venv.wheel.name}"  # the wheel's path in the project
    run_id = json.loads(user.run("evalh", "run", "--json", cwd=project).stdout)["run_id"]
    user.run("evalh", "baseline", "set", run_id, cwd=project)

    ci = fresh_venv(tmp_path / "ci-venv", venv.wheel)
    assert not (ci.bin / "evalh").exists()
    summary = tmp_path / "summary.md"
    env = {**ci.env(), "PIP_NO_INDEX": "1", "GITHUB_SHA": "0123456789abcdef", "GITHUB_RUN_ID": "7",
           "GITHUB_STEP_SUMMARY": str(summary)}

    def run_steps() -> dict[str, int]:
        codes = {}
        for step in steps:
            if "run" in step:
                proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                      cwd=project, env=env, capture_output=True, text=True, timeout=300)
                codes[step["name"]] = proc.returncode
                if proc.returncode:
                    break
        return codes

    assert run_steps() == {"Install": 0, "Run the suites": 0, "Compare with the baseline": 0}
    assert (ci.bin / "evalh").exists() and "smoke" in summary.read_text()
    assert (project / "reports" / "evalh-compare.xml").is_file()
    stub = project / "evals" / "evalh_target.py"
    stub.write_text(stub.read_text().replace('text.endswith("?")', 'text.endswith(("?", "."))'))
    assert run_steps() == {"Install": 0, "Run the suites": 0, "Compare with the baseline": 1}
