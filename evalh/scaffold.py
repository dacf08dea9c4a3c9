"""`evalh init`: the files a new project starts from.

`plan_init` decides what to write (nothing is touched); `write_init` writes it. Nothing
that exists is ever overwritten: when any planned file exists, `plan_init` raises
`ConfigError` naming it (exit 2) and nothing is written. The one exception is
`.gitignore`, which gets the lines it lacks appended (an existing one is kept as it was
otherwise). CI added later (`evalh init --ci github` where an `evalh.toml` is already)
plans only the CI files: the project's are kept as they are.

After `evalh init`, `evalh run` works at once and offline: a deterministic suite `smoke`
whose target is either a stub written into the user's package or an existing
`module:function` (`--target`).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from evalh.errors import ConfigError, WriteFailed

SUITE = "smoke"
DATASET = "evals/smoke.jsonl"
STUB_MODULE = "evalh_target"
STUB_FUNCTION = "answer"
GITIGNORE_LINES = ("eval_runs/", ".evalh/")
"""Run documents and the response cache (`.evalh/cache/`)."""
WORKFLOW = ".github/workflows/evals.yml"
CI_CHOICES = ("github",)

_NOT_PACKAGES = {"tests", "test", "docs", "doc", "evals", "examples", "build", "dist", "scripts",
                 "venv", "site-packages", "node_modules"}
_TARGET_FORM = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_PACKAGE_FORM = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclass
class InitPlan:
    root: Path
    target: str | None
    """The suite's target, `module:function` (None when only CI files are added)."""
    files: dict[str, str] = field(default_factory=dict)
    """Path relative to `root` → content, each one new."""
    gitignore: list[str] = field(default_factory=list)
    """Lines `.gitignore` lacks (appended; the file is created when absent)."""
    stub: str | None = None
    """The relative path of the target stub written, if any."""
    kept: list[str] = field(default_factory=list)
    """Files of the project that exist and are kept as they are (CI added later)."""
    install: InstallSpec | None = None
    """How the CI workflow written installs evalh (None: no workflow)."""

    @property
    def written(self) -> list[str]:
        return [*self.files, *([".gitignore"] if self.gitignore else [])]


def _packages(root: Path) -> list[tuple[str, Path]]:
    """Importable top-level packages of the project: (name, directory), flat or src layout."""
    found: list[tuple[str, Path]] = []
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            if (d.is_dir() and not d.name.startswith((".", "_")) and d.name not in _NOT_PACKAGES
                    and d.name.isidentifier() and (d / "__init__.py").is_file()):
                found.append((d.name, d))
    return found


def _stub_location(root: Path, package: str | None) -> tuple[str, Path]:
    """(module name, file) of the target stub: in the user's package when there is one
    (named with `package`, or the only one found), else in `evals/`."""
    if package is not None:
        if not _PACKAGE_FORM.match(package):
            raise ConfigError(f"--package: {package!r} is not a Python package name")
        rel = Path(*package.split("."))
        for base in (root, root / "src"):
            if (base / rel / "__init__.py").is_file():
                return f"{package}.{STUB_MODULE}", base / rel / f"{STUB_MODULE}.py"
        raise ConfigError(f"--package: no package {package!r} in {root} (no {rel}/__init__.py)")
    found = _packages(root)
    if len(found) == 1:
        name, directory = found[0]
        return f"{name}.{STUB_MODULE}", directory / f"{STUB_MODULE}.py"
    return f"evals.{STUB_MODULE}", root / "evals" / f"{STUB_MODULE}.py"


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


METHODOLOGY_CHOICES = ("bias-aware",)
"""The presets `evalh init --methodology` offers (`evalh.methodology_spec.METHODOLOGIES`)."""

_PRESET_COMMENT = """\
# methodology = "bias-aware"   # refuse every run the bias-aware methodology would not count:
#                              # N >= 5 repeats, suites named, a --label, judge != subject, blind
#                              # and calibrated judges, distinct models in a panel, a named
#                              # runs_dir (docs/methodology-bias.md)"""


def config_text(target: str, *, stub: bool, methodology: str | None = None) -> str:
    where = ("the stub evalh init wrote: replace its body with a call into your product"
             if stub else "your function: it receives each case's `input`")
    if methodology is None:
        preset, repeats = _PRESET_COMMENT, ""
        runs = "`evalh run` runs every suite below"
    else:
        preset = (f"methodology = {_toml_string(methodology)}   # every requirement of the methodology "
                  "(docs/methodology-bias.md)\nruns_dir = \"eval_runs\"          # where runs go, named")
        repeats = "repeats = 5                               # the methodology refuses fewer\n"
        runs = f"`evalh run --suite {SUITE} --label first` runs the suite"
    return f"""\
# evalh's configuration (every key: evalh's docs/config.md).
# {runs}; `evalh compare` tells whether a change made it worse.

[evalh]
concurrency = 4
timeout_s = 30
{preset}

[suites.{SUITE}]
description = "A first deterministic suite: every case must pass."
dataset = "{DATASET}"        # JSONL, one case a line
target = {_toml_string(target)}   # {where}
regime = "deterministic"                  # zero tolerance by case; "stochastic" for sampled models
{repeats}scorers = [{{ type = "exact", field = "label" }}]   # output["label"] == the case's expected

# A model as the target (needs its key; `evalh run` skips the suite without it):
#
# [suites.live]
# dataset = "evals/live.jsonl"
# regime = "stochastic"
# target = {{ kind = "anthropic", model = "claude-haiku-4-5", prompt = "{{{{ input.text }}}}" }}
# scorers = [{{ type = "contains" }}]
"""


DATASET_LINES = [
    '{"id": "question.plain", "input": {"text": "Where is the report?"}, "expected": "question"}',
    '{"id": "question.spaces", "input": {"text": "Is it done ?  "}, "expected": "question"}',
    '{"id": "statement.plain", "input": {"text": "The report is on the desk."}, "expected": "statement"}',
    '{"id": "statement.empty", "input": {"text": ""}, "expected": "statement"}',
]


STUB_TEXT = '''\
"""The function evalh calls for each case of the `smoke` suite (evalh.toml).

evalh passes the case's `input` (here a dict with `text`) and scores what you return:
the `exact` scorer compares `output["label"]` with the case's `expected`.
Replace the body with a call into your product, and the cases in evals/smoke.jsonl
with real ones. A function may also be `async def`.
"""

from __future__ import annotations

from typing import Any


def answer(input: dict[str, Any]) -> dict[str, Any]:
    text = str(input.get("text", "")).strip()
    return {"label": "question" if text.endswith("?") else "statement"}
'''


WHEEL_NAME = "evalh-{version}-py3-none-any.whl"


@dataclass(frozen=True)
class InstallSpec:
    """How the generated workflow installs evalh: the pip argument, and a note for the
    person who commits the workflow when the argument needs something of them."""

    requirement: str
    note: str | None = None


def _version() -> str:
    from evalh import __version__

    return __version__


def _direct_url() -> dict[str, object] | None:
    """PEP 610's record of where the installed evalh came from (None: from an index, or
    not installed at all)."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution("evalh").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _git(directory: Path, *args: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def install_spec(root: Path, direct_url: dict[str, object] | None = None) -> InstallSpec:
    """The pip argument that installs, in CI, the evalh installed here (`direct_url`: PEP
    610's record, read from the installed distribution when not given):

    - a wheel file inside the project → its path relative to the project root (`./…`);
      a wheel elsewhere → `./<its file name>`, with a note to commit it there;
    - a wheel or archive at an http(s) URL → that URL;
    - a VCS checkout (`pip install git+…`) → `evalh @ git+URL@COMMIT`;
    - a local directory (an editable checkout) → `evalh @ git+ORIGIN@COMMIT` when it is a
      git checkout with an `origin` remote, else a version pin with a note;
    - from a package index → `evalh==VERSION`.
    """
    from urllib.parse import unquote, urlparse

    info = direct_url if direct_url is not None else _direct_url()
    version = _version()
    pin = InstallSpec(f"evalh=={version}")
    if not info or not isinstance(info.get("url"), str):
        return pin
    url = str(info["url"])
    parsed = urlparse(url)
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return InstallSpec(f"evalh @ {vcs['vcs']}+{url}" + (f"@{commit}" if commit else ""))
    if isinstance(info.get("dir_info"), dict):
        directory = Path(unquote(parsed.path)) if parsed.scheme == "file" else None
        origin = _git(directory, "remote", "get-url", "origin") if directory else None
        commit = _git(directory, "rev-parse", "HEAD") if directory else None
        if origin and commit and not origin.startswith(("/", ".", "file:")):
            return InstallSpec(f"evalh @ git+{origin}@{commit}")
        return InstallSpec(pin.requirement, "evalh was installed from a local directory: "
                                            "replace this line with how CI gets evalh")
    if parsed.scheme in ("http", "https"):
        return InstallSpec(url)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
        try:
            return InstallSpec("./" + path.resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            return InstallSpec(f"./{path.name}", f"commit the wheel evalh was installed from "
                                                 f"({path.name}) at the project root")
    return pin


def _yaml_arg(arg: str) -> str:
    """A pip argument as the `run:` line says it (quoted when it has a space)."""
    return f'"{arg}"' if " " in arg else arg


def workflow_text(root: Path, spec: InstallSpec | None = None) -> str:
    """`.github/workflows/evals.yml` for the project in `root`: the one CI recipe (docs/ci.md
    shows it as written for a project with a pyproject.toml and the wheel at its root;
    `tests/test_docs_run.py` checks they are the same)."""
    spec = spec or install_spec(root)
    project = (root / "pyproject.toml").is_file() or (root / "setup.py").is_file()
    install = f"pip install {_yaml_arg(spec.requirement)}" + (" -e ." if project else "")
    cache_key = "pyproject.toml" if (root / "pyproject.toml").is_file() else "evalh.toml"
    note = f"\n        # {spec.note}" if spec.note else ""
    return f"""\
# evalh in CI (written by `evalh init --ci github`; evalh's docs/ci.md explains each step).
# Commit a baseline first: `evalh run`, then `evalh baseline set RUN_ID`, then
# `git add BASELINE && git add -f eval_runs/RUN_ID.json`.
name: evals
on:
  pull_request:
  push:
    branches: [main]

permissions:
  contents: read
  checks: write   # the JUnit report below writes a check run

jobs:
  evals:
    runs-on: ubuntu-latest
    timeout-minutes: 15
    steps:
      - uses: actions/checkout@v4

      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
          cache: pip
          cache-dependency-path: {cache_key}   # what keys the pip cache

      - name: Install
        # evalh as it was installed where `evalh init` ran{" (and the project's own code)" if project else ""}{note}
        run: {install}

      - name: Run the suites
        # `evalh run` exits 1 when a deterministic case fails; the comparison below decides
        # whether that is a regression. Exit 2 (bad config, bad dataset) stops here.
        run: |
          set +e
          evalh run --label "ci ${{GITHUB_SHA::10}}" --quiet --junit-xml reports/evalh-run.xml
          code=$?
          mkdir -p reports && echo "$code" > reports/evalh-run.code
          if [ "$code" -gt 1 ]; then exit "$code"; fi
          exit 0

      - name: Compare with the baseline
        # BASELINE vs the newest run (the one just made). Markdown goes to the job summary,
        # JUnit XML to the test reporter, and a regression fails the job. Without a BASELINE
        # the job ends with the run's own code (a skipped suite or a failed case is not green).
        run: |
          if [ ! -f BASELINE ]; then
            echo "no BASELINE committed yet: nothing to compare; the job ends with the run's code"
            exit "$(cat reports/evalh-run.code 2>/dev/null || echo 2)"
          fi
          evalh compare --fail-on-regression --format markdown \\
            --junit-xml reports/evalh-compare.xml >> "$GITHUB_STEP_SUMMARY"

      - name: Upload the JUnit reports and the run documents
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: evalh-${{{{ github.run_id }}}}
          path: |
            reports/*.xml
            eval_runs/*.json
          if-no-files-found: ignore

      - name: Show failing cases in the checks tab
        if: always() && hashFiles('reports/*.xml') != ''
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: reports/*.xml
          check_name: evalh
"""


def _check_target(root: Path, target: str) -> None:
    """`--target` must name a callable importable from the project root."""
    if not _TARGET_FORM.match(target):
        raise ConfigError(f"--target: {target!r} is not of the form 'module:function'")
    from evalh.imports import ImportFailure, import_callable

    try:
        import_callable(target, root=root)
    except ImportFailure as exc:
        raise ConfigError(f"--target: {exc}") from None


def plan_init(root: Path, *, target: str | None = None, package: str | None = None,
              ci: str | None = None, methodology: str | None = None) -> InitPlan:
    """What `evalh init` would write in `root`. `ConfigError` (nothing written) when a
    file it would create exists, or an option is bad."""
    root = root.resolve()
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory")
    if ci is not None and ci not in CI_CHOICES:
        raise ConfigError(f"--ci: unknown CI {ci!r} (known: {', '.join(CI_CHOICES)})")
    if methodology is not None and methodology not in METHODOLOGY_CHOICES:
        raise ConfigError(f"--methodology: unknown methodology {methodology!r} "
                          f"(known: {', '.join(METHODOLOGY_CHOICES)})")
    if target is not None and package is not None:
        raise ConfigError("--target and --package exclude each other (the stub goes in --package)")
    files: dict[str, str] = {}
    stub_rel: str | None = None
    kept: list[str] = []
    spec = install_spec(root) if ci == "github" else None
    if ci is not None and (root / "evalh.toml").is_file() and target is None and package is None:
        # The project is there: add the CI files only (the config, cases and stub are kept).
        kept = [rel for rel in ("evalh.toml", DATASET) if (root / rel).exists()]
    elif target is None:
        module, stub_path = _stub_location(root, package)
        target = f"{module}:{STUB_FUNCTION}"
        stub_rel = stub_path.relative_to(root).as_posix()
        files[stub_rel] = STUB_TEXT
        if module.startswith("evals.") and not (root / "evals" / "__init__.py").exists():
            files["evals/__init__.py"] = ""
    else:
        _check_target(root, target)
    if not kept:
        files["evalh.toml"] = config_text(target or "", stub=stub_rel is not None, methodology=methodology)
        files[DATASET] = "\n".join(DATASET_LINES) + "\n"
    if ci == "github":
        files[WORKFLOW] = workflow_text(root, spec)
    for rel in sorted(files, key=lambda r: (r != "evalh.toml", r)):
        path = root / rel
        if path.exists() or path.is_symlink():
            raise ConfigError(f"{path}: exists; evalh init never overwrites a file (nothing was written)")
        for parent in Path(rel).parents:
            p = root / parent
            if parent != Path(".") and p.exists() and not p.is_dir():
                raise ConfigError(f"{p}: exists and is not a directory (nothing was written)")
    gitignore = root / ".gitignore"
    present: set[str] = set()
    if gitignore.is_file():
        present = {ln.strip() for ln in gitignore.read_text(encoding="utf-8", errors="replace").splitlines()}
    elif gitignore.exists():
        raise ConfigError(f"{gitignore}: exists and is not a file (nothing was written)")
    missing = [ln for ln in GITIGNORE_LINES
               if ln not in present and ln.rstrip("/") not in present and f"/{ln}" not in present]
    return InitPlan(root=root, target=target, files=files, gitignore=missing, stub=stub_rel,
                    kept=kept, install=spec)


def write_init(plan: InitPlan) -> list[Path]:
    """Write the plan: new files with O_EXCL (a file that appeared since planning is not
    overwritten), then the `.gitignore` lines. On a failure the files already created are
    removed again."""
    created: list[Path] = []
    made_dirs: list[Path] = []
    try:
        for rel, text in plan.files.items():
            path = plan.root / rel
            for parent in reversed(path.relative_to(plan.root).parents):
                d = plan.root / parent
                if parent != Path(".") and not d.exists():
                    d.mkdir()
                    made_dirs.append(d)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raise ConfigError(f"{path}: exists; evalh init never overwrites a file") from None
            created.append(path)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        if plan.gitignore:
            gitignore = plan.root / ".gitignore"
            prefix = ""
            if gitignore.is_file():
                old = gitignore.read_bytes()
                if old and not old.endswith(b"\n"):
                    prefix = "\n"
            with open(gitignore, "a", encoding="utf-8", newline="\n") as fh:
                fh.write(prefix + "# evalh: run documents and the response cache\n"
                         + "".join(f"{ln}\n" for ln in plan.gitignore))
    except BaseException as exc:
        for path in reversed(created):
            path.unlink(missing_ok=True)
        for d in reversed(made_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(exc, OSError) and not isinstance(exc, ConfigError):
            raise WriteFailed(f"{getattr(exc, 'filename', None) or plan.root}: "
                              f"{exc.strerror or exc}") from None
        raise
    return [plan.root / rel for rel in plan.written]


def init_project(root: Path, *, target: str | None = None, package: str | None = None,
                 ci: str | None = None, methodology: str | None = None) -> InitPlan:
    """Plan and write a new project in `root` (see the module docstring)."""
    plan = plan_init(root, target=target, package=package, ci=ci, methodology=methodology)
    write_init(plan)
    return plan


CONFIG_FILENAME = "evalh.toml"


def find_config(start: Path | None = None) -> Path:
    """The evalh.toml found from `start` (the current directory) upwards. Here, not in
    `evalh.config`: a command that reads runs looks for it without importing the config's
    models, which it needs only when there is a config to load."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / CONFIG_FILENAME).is_file():
            return d / CONFIG_FILENAME
    raise ConfigError(f"no {CONFIG_FILENAME} found in {here} or its parents: `evalh init` writes one (or use --config PATH)")


def has_config(start: Path | None = None) -> bool:
    """Whether an evalh.toml is found from `start` (the current directory) upwards: hints
    say `evalh init` where there is none."""
    try:
        find_config(start)
    except ConfigError:
        return False
    return True


def first_run_hint(start: Path | None = None) -> str:
    """What to do where there are no runs yet: `evalh run`, or `evalh init` first where no
    evalh.toml is found."""
    if has_config(start):
        return "run `evalh run` first"
    return "no evalh.toml here either: start with `evalh init`, then `evalh run`"
