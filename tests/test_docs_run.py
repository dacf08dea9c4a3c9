"""Docs that run: the command lines of README.md's "Start in your project" and its product
examples, of docs/adopting.md, of the reference pages (config, judges, report, running,
labels and sweeps: see below), of the other pages (concepts, methodology, architecture,
methodology-bias, generated-cases, plugins, scale, batch: at the end; where another test
runs a page's example already, it is pointed to, not run twice), and docs/ci.md's recipe step by step (the workflow YAML parsed, each
`run:` executed in order as GitHub runs it: `bash -eo pipefail`), in scratch projects;
the exit codes and files the text promises are checked.

`pip install` lines are left out (tests/test_installed.py installs the wheel); everything
else is run as written, with the evalh of this checkout on PATH."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import Result

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


@pytest.mark.parametrize(("section", "files"), [
    ("## Coming from inspect_ai", {"logs/main.eval": "inspect-v1.eval", "logs/pr.json": "inspect-v2.json"}),
    ("## Coming from promptfoo", {"main-results.json": "promptfoo-v1.json", "pr-results.json": "promptfoo-v2.json"}),
])
def test_the_adopting_page_coming_from_other_tools_runs_as_written(
    tmp_path: Path, section: str, files: dict[str, str]
) -> None:
    """Each line of the section's block, in order, on files the real tool made
    (tests/data/imports, named as the page names them): the baseline set from an import,
    the change imported, and the gate failing on the case the change broke."""
    env = env_for(tmp_path)
    for name, fixture in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / "tests" / "data" / "imports" / fixture, tmp_path / name)
    (block,) = blocks("docs/adopting.md", "bash", section)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) == 3 and "evalh baseline set" in lines[0] and "evalh compare --fail-on-regression" in lines[2]
    ok(bash(lines[0], tmp_path, env), lines[0])
    ok(bash(lines[1], tmp_path, env), lines[1])
    gate = bash(lines[2], tmp_path, env)
    assert gate.returncode == 1, gate.stderr  # "exit 1: a ... that passed fails now"
    assert "capital.australia" in gate.stdout
    assert len(list((tmp_path / "eval_runs").glob("*.json"))) == 2


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


def test_ci_recipe_is_what_init_writes(tmp_path: Path) -> None:
    """One recipe: docs/ci.md's workflow is what `evalh init --ci github` writes for a
    project with a pyproject.toml whose evalh was installed from the wheel at its root."""
    from evalh.scaffold import InstallSpec, workflow_text

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "yourpkg"\nversion = "0"\n')
    shown = blocks("docs/ci.md", "yaml", "## GitHub Actions")[0]
    assert shown == workflow_text(tmp_path, InstallSpec("./evalh-0.1.0-py3-none-any.whl"))


def test_ci_recipe_step_by_step(repo_project: Path) -> None:
    root = repo_project
    toml = root / "evalh.toml"  # the offline deterministic suites (the recipe runs every suite)
    toml.write_text(toml.read_text().split("[suites.panel]")[0])
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
            if name == "Install":  # tests/test_installed.py runs it, from a fresh venv
                assert script == "pip install ./evalh-0.1.0-py3-none-any.whl -e ."
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
    toml.write_text(toml.read_text().replace("examples.citecheck:check", "examples.broken:check"))
    run_steps({"Compare with the baseline": 1})
    failures = (root / "reports" / "evalh-run.xml").read_text()
    assert "<failure" in failures and "exact:" in failures


def test_ci_recipe_without_a_baseline_fails_with_the_runs_code(tmp_path: Path) -> None:
    """Before a BASELINE is committed, the recipe's job ended green whatever the run did:
    the run step lets exit 1 through for the comparison to judge, and the compare step, with
    nothing to compare, exited 0 — a suite skipped for its missing key, or every case
    errored, was a green job (the failure issue 27 is about). With no baseline the job ends
    with the run's own code, as the evalh action does."""
    root = tmp_path
    (root / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "q{i}", "expected": "ok"}}\n' for i in range(3)))
    (root / "evalh.toml").write_text(
        '[suites.live]\ndataset = "cases.jsonl"\nregime = "stochastic"\nscorers = [{ type = "exact" }]\n'
        'target = { kind = "openai", model = "m-1", api_key_env = "LIVE_KEY_NOT_SET", prompt = "{{ input }}" }\n'
        '\n[suites.local]\ndataset = "cases.jsonl"\nregime = "deterministic"\nscorers = [{ type = "exact" }]\n'
        'target = "answers:ok"\n')
    (root / "answers.py").write_text("def ok(inp):\n    return 'ok'\n")
    env = env_for(root, GITHUB_SHA="0123456789abcdef", GITHUB_RUN_ID="1", GITHUB_STEP_SUMMARY=str(root / "summary.md"))
    env.pop("LIVE_KEY_NOT_SET", None)
    codes = {}
    for step in recipe_steps():
        if "run" in step and step["name"] != "Install":
            codes[str(step["name"])] = bash(str(step["run"]), root, env).returncode
    assert codes["Run the suites"] == 0  # exit 1 is let through to the next step
    assert codes["Compare with the baseline"] == 1, codes  # the run skipped `live` for its key


def test_ci_budget_stopped_run_still_reaches_the_compare_step(tmp_path: Path) -> None:
    """"Stochastic suites in CI", run as written: a `live` suite (here a model on the mock
    provider, priced so that $2 buys one reply) stopped by its budget exits 1 and is
    partial; the run step lets it through, and the compare step compares it, saying so — and
    fails, since it measured less than the suite's minimum coverage of the baseline."""
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
    # it measured less than 90 % of what the baseline measured: the gate says so and fails
    assert compare.returncode == 1, compare.stderr
    text = summary.read_text()
    assert "partial" in text and "base results measured" in text and "minimum 90 %" in text


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
    proc = here("evalh run --json --no-cache", tmp_path, env)  # against the documented script
    run = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())
    by_id = {r["case_id"]: r for r in run["suites"]["mock"]["cases"]}
    assert by_id["paris1"]["output"] == "garbage" and by_id["json"]["output"] == '{"answer":42}'
    assert by_id["json"]["tokens_out"] == 7 and by_id["other"]["output"] == "ok"


# --------------------------------------------------------------------------- the reference pages
#
# docs/config.md, judges.md, report.md, running.md and labels-and-sweeps.md: every shell
# block (bash, sh, console, or a bare fence of evalh command lines) runs, every TOML block is
# loaded — a complete config is run, a fragment (`key = …` lines, a `[[suites.S.scorers]]`
# table) is validated in a suite that gives it its context. `text` and `json` blocks are what
# evalh prints or reads (outputs, run documents, rating lines) and are not run, except a
# block marked `<!-- docs-run: file PATH -->`, written to PATH in the scratch project. A block
# that cannot run here is marked `<!-- docs-run: skip: WHY -->` on the line above it; such
# exemptions are counted (EXEMPT) so they stay few. In commands, the placeholders RUN_ID,
# RUN_A, RUN_B and the documented example id 20261129T201530123Z-3fa9c1 are replaced by run
# ids of the scratch project — nothing else is edited. A model is the mock provider, reached
# through ANTHROPIC_BASE_URL as a real one would be.

FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)
MARK = re.compile(r"<!-- docs-run: (.*?) -->\s*$")
EXAMPLE_ID = "20261129T201530123Z-3fa9c1"
EXEMPT = {"docs/config.md": 0, "docs/judges.md": 0, "docs/report.md": 1, "docs/running.md": 1,
          "docs/labels-and-sweeps.md": 2, "docs/concepts.md": 0, "docs/methodology.md": 0,
          "docs/architecture.md": 1, "docs/methodology-bias.md": 0, "docs/generated-cases.md": 0,
          "docs/plugins.md": 0, "docs/scale.md": 0, "docs/batch.md": 0}
SHELL = ("bash", "sh", "console", "")
TOML_RE = re.compile(r"^\s*(\[|[A-Za-z_\"][\w.\"-]* *=)", re.M)


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    text: str
    mark: str | None

    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def page(doc: str) -> list[Block]:
    text = (REPO / doc).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        indent = len(m.group(1))
        body = "\n".join(ln[indent:] for ln in m.group(3).splitlines()) + "\n"
        before = text[: m.start()].rstrip("\n").splitlines()
        mark = MARK.search(before[-1]) if before else None
        found.append(Block(doc, text.count("\n", 0, m.start()) + 1, m.group(2), body,
                           mark.group(1) if mark else None))
    return found


class Coverage:
    """Which blocks of a page a test ran; at the end every runnable one must have been."""

    def __init__(self, doc: str) -> None:
        self.doc = doc
        self.blocks = page(doc)
        self.done: set[int] = set()

    def take(self, lang: str | tuple[str, ...], contains: str = "") -> list[Block]:
        langs = (lang,) if isinstance(lang, str) else lang
        out = [b for b in self.blocks if b.lang in langs and contains in b.text and b.line not in self.done
               and not (b.mark or "").startswith("skip")]
        self.done.update(b.line for b in out)
        return out

    def check(self) -> None:
        skipped = [b for b in self.blocks if (b.mark or "").startswith("skip:")]
        assert all(len(b.mark or "") > len("skip: ") + 10 for b in skipped), "an exemption says why"
        assert len(skipped) <= EXEMPT[self.doc], [b.where() for b in skipped]
        left = [b.where() for b in self.blocks if b.line not in self.done and b not in skipped
                and (b.lang in SHELL or b.lang == "toml" or (b.mark or "").startswith("file "))]
        assert not left, f"blocks no test ran: {left}"


DOCS_REPLIES = [  # what a model asked by the docs' example prompts (sources as JSON) answers
    ("How many people does Acme employ", "Acme employs 12,400 people [1]."),
    ("What did the CEO say about demand", "Jane Park said demand stayed resilient [1]."),
    ("What was Acme's quarterly revenue", "Acme's quarterly revenue was $2.31 billion [1]."),
    ("How many customers does Acme serve", "Acme serves 1.52 million customers [1]."),
]


@pytest.fixture
def mock_model() -> Iterator[dict[str, str]]:
    """A mock provider answering the docs' prompts, the example answerer's (the scenarios
    script) and the judges.md judge; the environment that points Anthropic clients at it."""
    from evalh.mock.mock_provider import MockProvider

    scenarios = json.loads((REPO / "datasets" / "scenarios.script.json").read_text())
    rules = [{"match": f"regex:(?s)Sources: \\{{.*{re.escape(q)}", "json": {"answer": a}} for q, a in DOCS_REPLIES]
    rules.append({"match": "names the capital of the country asked about",
                  "json": {"verdict": "pass", "rationale": "It names Paris, and nothing false."}})
    with MockProvider({"rules": rules + scenarios["rules"], "default": scenarios.get("default", {"text": "ok"})}) as mock:
        yield {"ANTHROPIC_BASE_URL": str(mock.base_url), "ANTHROPIC_API_KEY": "sk-docs-run-0123456789"}


def sh(cmd: str, root: Path, env: dict[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = bash(cmd, root, env)
    assert proc.returncode == code, f"{cmd!r} exited {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
    return proc


def here(cmd: str, root: Path, env: dict[str, str], code: int = 0) -> Result:
    """An `evalh` command line of the test's own (a setup run, the run of a page's TOML
    block), in this process through typer's CliRunner, from `root` with exactly `env`: no
    interpreter start and provider-SDK import of its own. The pages' shell blocks go through
    bash as written (`sh`)."""
    from typer.testing import CliRunner

    from evalh.cli.main import app

    args = shlex.split(cmd)
    assert args[0] == "evalh", cmd
    overrides: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    overrides.update(env)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner(env=overrides).invoke(app, args[1:])
    finally:
        os.chdir(cwd)
    assert result.exit_code == code, (f"{cmd!r} exited {result.exit_code}\n{result.stdout[-1500:]}\n"
                                      f"{result.stderr[-1500:]}\n{result.exception!r}")
    return result


def commands(block: Block) -> list[str]:
    """The command lines of a shell block (a console block's `$ ` lines; comments kept)."""
    lines = block.text.splitlines()
    if block.lang == "console":
        return [ln[2:] for ln in lines if ln.startswith("$ ")]
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def placeholders(cmd: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        cmd = re.sub(rf"\b{re.escape(name)}\b", value, cmd)
    return cmd


def run_ids(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "eval_runs").glob("*.json"))


def load_run(root: Path, run_id: str) -> dict[str, object]:
    return json.loads((root / "eval_runs" / f"{run_id}.json").read_bytes())


def write_files(blocks: list[Block], root: Path) -> None:
    for b in blocks:
        if (b.mark or "").startswith("file "):
            path = root / b.mark.split(" ", 1)[1]  # type: ignore[union-attr]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(b.text, encoding="utf-8")


def fragment_keys(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^([A-Za-z_][\w]*) *=", text, re.M)]


def test_config_page_examples_run(repo_project: Path, mock_model: dict[str, str]) -> None:
    root = repo_project
    env = env_for(root, **mock_model)
    cov = Coverage("docs/config.md")
    write_files([b for b in cov.blocks if b.mark], root)
    cov.done.update(b.line for b in cov.blocks if (b.mark or "").startswith("file "))

    # The complete example, as evalh.toml: valid, and it runs green, the live suite on the model.
    (complete,) = cov.take("toml", "[suites.gate]")
    (root / "evalh.toml").write_text(complete.text)
    here("evalh validate", root, env)
    proc = here("evalh run --json", root, env)
    run = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())
    live = run["suites"]["live"]["cases"]
    assert len(live) == 4 * 5 and all(r["status"] == "passed" for r in live), [r["scores"] for r in live][:2]
    assert {r["output"]["answer"] for r in live} == {a for _, a in DOCS_REPLIES}

    # A price table and the arms example, added to it.
    (prices,) = cov.take("toml", '[prices."claude-haiku-4-5"]')
    (arms,) = cov.take("toml", "[suites.prompts]")
    (root / "evalh.toml").write_text(complete.text + "\n" + prices.text + "\n" + arms.text)
    here("evalh validate", root, env)
    proc = here("evalh run --suite prompts --json", root, env)
    prompts = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())["suites"]["prompts"]
    assert sorted({r["arm"] for r in prompts["cases"]}) == ["v1", "v2"] and len(prompts["cases"]) == 8

    # Fragments: each in a suite that gives it context, validated. The user's own files they
    # name (a schema, a scorer function) are the project's, written here.
    (root / "schemas" / "reply.json").write_text('{"type": "object"}')
    (root / "my_product").mkdir()
    (root / "my_product" / "__init__.py").write_text("")
    (root / "my_product" / "evals.py").write_text("def tone_ok(case, output, ctx):\n    return 1.0\n")
    base = {"dataset": '"datasets/gate.jsonl"', "target": '"examples.citecheck:check"',
            "scorers": '[{ type = "exact", field = "verdict" }]'}
    suites = []
    for block in cov.take("toml"):
        keys = fragment_keys(block.text)
        assert keys and set(keys) <= {"target", "scorers"}, block.where()
        suite = {**base, **{k: block.text.split("=", 1)[1].split("#")[0].strip() for k in keys}}
        suites.append(f"[suites.line{block.line}]\n" + "".join(f"{k} = {v}\n" for k, v in suite.items()))
    # The case shown under "The dataset" is a valid dataset line.
    case_block = next(b for b in cov.blocks if b.lang == "json" and '"refund.late"' in b.text)
    (root / "cases.jsonl").write_text(case_block.text)
    suites.append('[suites.case]\ndataset = "cases.jsonl"\ntarget = "examples.citecheck:check"\n')
    (root / "evalh.toml").write_text("\n".join(suites))
    proc = here("evalh validate --json", root, env)  # one line naming the fragment otherwise
    assert len(json.loads(proc.stdout)["suites"]) == len(suites) > 10
    cov.check()


def test_readme_product_examples_run(repo_project: Path, mock_model: dict[str, str]) -> None:
    """README's "Using it on your product": the gate suite and the live model suite."""
    root = repo_project
    env = env_for(root, **mock_model)
    gate, live = blocks("README.md", "toml", "## Using it on your product")
    (root / "evalh.toml").write_text(gate + "\n" + live)
    proc = here("evalh run --json", root, env)
    run = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())
    assert all(r["status"] == "passed" for r in run["suites"]["live"]["cases"])
    assert run["suites"]["gate"]["aggregate"]["passed"] == run["suites"]["gate"]["aggregate"]["n"]


def test_judges_page_examples_run(tmp_path: Path, mock_model: dict[str, str]) -> None:
    root = tmp_path
    env = env_for(root, **mock_model)
    cov = Coverage("docs/judges.md")
    (judge,) = cov.take("toml", 'type = "judge"')
    (verdicts,) = cov.take("toml", 'scale = "verdicts"')
    (citation,) = cov.take("toml", 'type = "citation_judge"')
    (sources_from,) = cov.take("toml", "sources_from =")
    (external,) = cov.take("toml", 'type = "external_score"')
    # The judge, on a suite of the user's: it runs, and the (mock) model's verdict is used.
    (root / "qa.jsonl").write_text(json.dumps({"id": "fr", "input": {
        "question": "What is the capital of France?", "reference": "Paris is the capital of France."},
        "expected": "Paris"}) + "\n")
    (root / "qa_product.py").write_text("def answer(inp):\n    return 'Paris'\n")
    qa = '[suites.qa]\ndataset = "qa.jsonl"\ntarget = "qa_product:answer"\n\n'
    (root / "evalh.toml").write_text(qa + judge.text)
    proc = here("evalh run --json --no-cache", root, env)
    (case,) = json.loads(Path(json.loads(proc.stdout)["path"]).read_bytes())["suites"]["qa"]["cases"]
    assert case["status"] == "passed" and "Paris" in case["scores"][0]["rationale"]
    # The other tables and keys, each where it belongs: validated.
    scale_line = next(ln for ln in judge.text.splitlines() if ln.startswith("scale ="))
    configs = [qa.replace("suites.qa", "suites.verdicts") + judge.text.replace("suites.qa", "suites.verdicts")
               .replace(scale_line, verdicts.text.strip())]
    citations = '[suites.{name}]\ndataset = "cites.jsonl"\ntarget = "qa_product:answer"\n\n'
    (root / "cites.jsonl").write_text(json.dumps({"id": "c", "input": {
        "question": "Who said it?", "sources": {"1": "Alice said it."}}}) + "\n")
    lines = [ln for ln in sources_from.text.splitlines() if ln.strip()]
    assert len({ln.split("=")[0] for ln in lines}) == 1  # alternatives of one key: each on its own
    for i, alternative in enumerate(["", *lines]):
        name = f"citations{i}"
        judge_table = citation.text.replace("suites.citations", f"suites.{name}")
        if alternative:  # where the sources are instead of `sources_field`
            judge_table = re.sub(r"^sources_field = .*\n", "", judge_table, flags=re.M) + alternative + "\n"
        configs.append(citations.format(name=name) + judge_table + "\n"
                       + external.text.replace("suites.citations", f"suites.{name}"))
    (root / "evalh.toml").write_text("\n".join(configs))
    proc = here("evalh validate --json", root, env)
    assert len(json.loads(proc.stdout)["suites"]) == 1 + 1 + len(lines)
    cov.check()


@pytest.fixture
def two_runs(repo_project: Path) -> tuple[Path, dict[str, str]]:
    """The repo's project with two runs of its gate and parliament suites (split and
    complexity metadata, trace tools, num_iterations)."""
    env = env_for(repo_project)
    for _ in range(2):
        here("evalh run -q --suite gate --suite parliament", repo_project, env)
    a, b = run_ids(repo_project)
    return repo_project, {"RUN_ID": b, "RUN_A": a, "RUN_B": b, EXAMPLE_ID: b}


def test_report_page_commands_run(two_runs: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, ids = two_runs
    summary = tmp_path / "summary.md"
    env = env_for(root, GITHUB_STEP_SUMMARY=str(summary))
    cov = Coverage("docs/report.md")
    outputs = []
    for block in cov.take(SHELL, "evalh report"):
        for cmd in commands(block):
            outputs.append(sh(placeholders(cmd, ids), root, env).stdout)
    assert "pass_rate" not in summary.read_text() and "| gate |" in summary.read_text().replace("  ", " ")
    assert (root / "report.html").read_text().startswith("<!doctype html>")
    assert any('"passed"' in o for o in outputs)  # the jq line printed counts
    cov.check()


def test_running_page_commands_run(repo_project: Path, mock_model: dict[str, str]) -> None:
    """The live suite here is the example answerer on the mock (a real key's job otherwise);
    the resumed run is one a budget stopped."""
    root = repo_project
    env = env_for(root, **mock_model)
    here("evalh run -q --suite scenarios_model --max-cost 0.0000001", root, env, code=1)
    (partial,) = run_ids(root)
    assert load_run(root, partial)["status"] == "partial"
    cov = Coverage("docs/running.md")
    (block,) = cov.take("console", "evalh run --suite gate")
    for cmd in commands(block):
        sh(placeholders(cmd, {EXAMPLE_ID: partial}), root, env)
    assert load_run(root, partial)["status"] == "complete"
    labelled = [load_run(root, i) for i in run_ids(root) if i != partial]
    assert any(r["label"] == "prompt=v2" and len(r["suites"]["live"]["cases"]) == 4 * 5 for r in labelled)
    cov.check()


def test_labels_page_commands_run(repo_project: Path) -> None:
    """The panel suite and its sweep as the page writes them; the labelling workflow on its
    run. The raters' files (alice.jsonl, …) are made here from requests.json, as raters would."""
    from evalh.labels.rubric import parse_rubric

    root = repo_project
    env = env_for(root)
    cov = Coverage("docs/labels-and-sweeps.md")
    write_files(cov.blocks, root)
    cov.done.update(b.line for b in cov.blocks if (b.mark or "").startswith("file "))
    assert parse_rubric((root / "rubric.toml").read_bytes(), "rubric.toml").fields  # the scheme loads
    import tomllib

    (checks,) = cov.take("toml", "[[suites.feedback.require.digests]]")  # what the feedback example says
    subset(tomllib.loads(checks.text), tomllib.loads((REPO / "examples/feedback/evalh.toml").read_text()), checks.where())

    (panel,) = cov.take("toml", "[suites.panel]\n")
    (sweep,) = cov.take("toml", "[suites.panel.sweep]")
    (root / "evalh.toml").write_text(panel.text + "\n" + sweep.text)
    here("evalh run -q", root, env)
    (run_id,) = run_ids(root)
    ids = {"RUN_ID": run_id}
    for block in cov.take("", "evalh sweep"):
        for cmd in commands(block):
            assert "structural" in sh(placeholders(cmd, ids), root, env).stdout  # the ranked tiers
    (root / "rubric.md").write_text("Is the panel's call on this node a defect?\n")
    (ppi,) = cov.take("", "--sample")  # the corrected-figure section's draw: run last, below
    (export,) = cov.take("", "evalh export-requests")
    for cmd in commands(export):
        sh(placeholders(cmd, ids), root, env)
    requests = json.loads((root / "requests.json").read_text())
    rubric_sha = requests["rubric"]["sha256"]

    def rating(req: dict[str, str], rater: str, label: str, **extra: str) -> str:
        return json.dumps({"request_id": req["request_id"], "request_sha256": req["request_sha256"],
                           "rubric_sha256": rubric_sha, "rater": rater, "label": label, **extra}) + "\n"

    reqs = requests["requests"]
    (root / "alice.jsonl").write_text("".join(rating(r, "alice", "defect" if i % 2 else "ok") for i, r in enumerate(reqs)))
    (root / "bob.jsonl").write_text("".join(rating(r, "bob", "defect" if i % 3 else "ok") for i, r in enumerate(reqs)))
    disputed = next(r for i, r in enumerate(reqs) if (i % 2 != 0) != (i % 3 != 0))
    (root / "adjudication.jsonl").write_text(rating(disputed, "carol", "defect", kind="adjudication"))
    (root / "fixes.jsonl").write_text(rating(reqs[0], "alice", "defect"))
    (root / "old-rubric.md").write_bytes((root / "rubric.md").read_bytes())
    (imports,) = cov.take("", "evalh label import")
    for cmd in commands(imports):
        sh(placeholders(cmd, ids), root, env)
    (report,) = cov.take("", "evalh label report")
    for cmd in commands(report):
        out = sh(placeholders(cmd, ids), root, env).stdout
        if "--json" in cmd:
            assert json.loads(out)["counts"]
    for cmd in commands(ppi):  # a random draw recorded in the sidecar; the panel has no judge to correct
        sh(placeholders(cmd, ids), root, env)
    side = json.loads((root / "eval_runs" / f"{run_id}.labels.json").read_text())
    assert [(s["seed"], len(s["drawn"])) for s in side["samples"]] == [(7, 5)]
    cov.check()



# --------------------------------------------------------------------------- the other pages
#
# docs/cli.md is not run here: it is generated from the commands' own help
# (docs/gen_cli_reference.py) and tests/test_cli_reference.py compares it with the help.


def test_pages_without_commands_have_none_to_run() -> None:
    """concepts.md, methodology.md and architecture.md show diagrams, schemas and outputs
    (`text` blocks); architecture.md's "Checking it" block is what .ci/run does already."""
    for doc in ("docs/concepts.md", "docs/methodology.md", "docs/architecture.md"):
        cov = Coverage(doc)
        assert all(b.lang != "" for b in cov.blocks), doc  # a bare fence would be taken for commands
        cov.check()


def subset(part: object, whole: object, where: str = "") -> None:
    """`part` (a page's TOML excerpt) says nothing `whole` (the config that runs) does not."""
    if isinstance(part, dict):
        assert isinstance(whole, dict), where
        for k, v in part.items():
            assert k in whole, f"{where}.{k}: not in the example"
            subset(v, whole[k], f"{where}.{k}")
    elif isinstance(part, list) and part and all(isinstance(x, dict) for x in part):
        assert isinstance(whole, list), where
        for x in part:
            fits = []
            for y in whole:
                try:
                    subset(x, y, where)
                    fits.append(y)
                except AssertionError:
                    pass
            assert fits, f"{where}: {x} matches no table of the example"
    else:
        assert part == whole, f"{where}: {part!r} on the page, {whole!r} in the example"


def test_methodology_bias_page_is_the_example_that_runs() -> None:
    """The page's command is the one tests/test_bias_methodology.py runs (its `example_run`,
    whose figures it checks against hand counts; not run twice), and each TOML excerpt is
    what examples/bias/evalh.toml, the config it runs, says."""
    import shlex
    import tomllib

    from tests.test_bias_methodology import EXAMPLE_RUN_ARGS

    cov = Coverage("docs/methodology-bias.md")
    (block,) = cov.take("bash", "evalh run")
    run, report = (shlex.split(c, comments=True) for c in block.text.replace("\\\n", " ").splitlines())
    assert run == ["evalh", "run", "--config", "examples/bias/evalh.toml", "--runs-dir", "outputs", *EXAMPLE_RUN_ARGS]
    assert report == ["evalh", "report", "--config", "examples/bias/evalh.toml", "--runs-dir", "outputs"]
    example = tomllib.loads((REPO / "examples/bias/evalh.toml").read_text(encoding="utf-8"))
    for b in cov.take("toml"):
        subset(tomllib.loads(b.text), example, b.where())
    cov.check()


def test_generated_cases_page_suite_validates_and_dry_runs(repo_project: Path) -> None:
    root = repo_project
    cov = Coverage("docs/generated-cases.md")
    (suite,) = cov.take("toml", "[suites.parliament.generate]")
    (root / "evalh.toml").write_text(suite.text)
    env = env_for(root)
    here("evalh validate", root, env)
    proc = here("evalh run --dry-run", root, env)  # "what generation would ask and cost, without a call"
    assert "generating 24 cases: 24 requests to claude-sonnet-4-5" in " ".join(proc.stderr.split() + proc.stdout.split())
    assert not (root / "eval_runs").exists()
    cov.check()


def test_plugins_page_examples_run(tmp_path: Path) -> None:
    """The page's entry points, as a dist-info on PYTHONPATH (as an installed package is;
    tests/test_installed.py pip-installs it), naming tests/plugin_pkg's modules; its suites
    and its report command run on them."""
    import tomllib

    root = tmp_path
    cov = Coverage("docs/plugins.md")
    (eps,) = cov.take("toml", "[project.entry-points.")
    groups = tomllib.loads(eps.text)["project"]["entry-points"]
    shipped = tomllib.loads((REPO / "tests/plugin_pkg/pyproject.toml").read_text())["project"]["entry-points"]
    subset(groups, shipped, eps.where())
    info = root / "site" / "evalh_demo_plugin-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalh-demo-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{g}]\n" + "".join(f"{n} = {v}\n" for n, v in e.items()) + "\n" for g, e in groups.items()))
    env = env_for(root, PYTHONPATH=f"{root / 'site'}{os.pathsep}{REPO / 'tests/plugin_pkg/src'}",
                  DEMO_ECHO_KEY="sk-demo-0123456789")
    (demo,) = cov.take("toml", "[suites.demo]")
    (echo,) = cov.take("toml", "[suites.echo]")
    (root / "cases.jsonl").write_text('{"id": "hi", "input": {"text": "hi"}, "expected": "SAY HI"}\n'
                                      '{"id": "long", "input": {"text": "a sentence well over twenty characters"}}\n')
    (root / "evalh.toml").write_text(demo.text + "\n" + echo.text)
    sh("evalh validate", root, env)
    run = json.loads(sh("evalh run --json", root, env, code=1).stdout)  # the long case is over 20 characters
    doc = json.loads(Path(run["path"]).read_bytes())
    statuses = {(s, r["case_id"]): r["status"] for s, v in doc["suites"].items() for r in v["cases"]}
    assert statuses == {("demo", "hi"): "passed", ("demo", "long"): "failed",
                        ("echo", "hi"): "passed", ("echo", "long"): "failed"}, statuses
    (report,) = cov.take("sh", "evalh report")
    for cmd in commands(report):
        sh(cmd, root, env)
    assert doc["run_id"] in (root / "runs.csv").read_text()
    cov.check()


def test_scale_page_commands_run(tmp_path: Path) -> None:
    """The page's summary lines (every shard in one scratch project, moved to shards/K/ as
    the CI would; tests/test_scale_recipes.py runs the full recipes), and the processes
    example on a suite `live`."""
    root = tmp_path
    cov = Coverage("docs/scale.md")
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{n}", "input": {"n": n}, "expected": "even" if n % 2 == 0 else "odd"}) + "\n"
        for n in range(12)))
    (root / "parity.py").write_text("def check(inp):\n    return 'even' if inp['n'] % 2 == 0 else 'odd'\n")
    suite = 'dataset = "cases.jsonl"\ntarget = "parity:check"\nscorers = [{ type = "exact" }]\n'
    (root / "evalh.toml").write_text("[suites.live]\n" + suite)
    env = env_for(root)
    (summary,) = cov.take("console", "evalh merge")
    shard, merge = commands(summary)
    for k in range(1, 5):  # machine k
        sh(shard.replace("--shard 1/4", f"--shard {k}/4"), root, env)
        (done,) = (root / "eval_runs").glob("*.json")
        (root / "shards" / str(k)).mkdir(parents=True)
        done.rename(root / "shards" / str(k) / done.name)
    sh(merge, root, env)
    (merged,) = [load_run(root, i) for i in run_ids(root)]
    assert len(merged["merged_from"]) == 4 and len(merged["suites"]["live"]["cases"]) == 12

    (procs,) = cov.take("toml", "processes = 4")
    (root / "evalh.toml").write_text(procs.text + suite)  # the last table is [suites.live]
    (command,) = cov.take("console", "--procs 4")
    for cmd in commands(command):
        sh(cmd, root, env)
    newest = load_run(root, run_ids(root)[-1])
    assert not newest.get("merged_from") and len(newest["suites"]["live"]["cases"]) == 12
    cov.check()


def test_batch_page_examples(tmp_path: Path) -> None:
    """The first suite: valid, and its dry run prices the target's and the judge's request at
    the batch price (half of list: the saving is the cost). The offline example and the
    resume after `kill -9` are run by tests/test_batch.py (against the mock's batch APIs,
    counting the batches created), from this page's blocks: not run twice."""
    root = tmp_path
    cov = Coverage("docs/batch.md")
    (nightly,) = cov.take("toml", "[suites.nightly]")
    (root / "datasets").mkdir()
    (root / "datasets" / "nightly.jsonl").write_text('{"id": "q1", "input": {"question": "Who?"}}\n')
    (root / "evalh.toml").write_text(nightly.text)
    env = env_for(root, ANTHROPIC_API_KEY="sk-docs-run-0123456789")  # a dry run calls nothing
    here("evalh validate", root, env)
    total = json.loads(here("evalh run --dry-run --json", root, env).stdout)["total"]
    assert total["batch_requests"] == 2 and total["batch_saving_usd"] == pytest.approx(total["cost_usd"])
    tests = (REPO / "tests" / "test_batch.py").read_text(encoding="utf-8")
    for name in ("test_the_example_of_docs_batch_md_runs_as_written",
                 "test_killed_while_polling_the_resumed_run_reattaches_to_its_batch"):
        assert f"def {name}(" in tests, name
    cov.take("toml", "[suites.capitals]")
    cov.take("bash", "evalh run --dry-run")
    cov.take("bash", "evalh run --resume RUN_ID")
    cov.check()


def test_plugins_page_python_api_and_pytest_blocks_run(project: Path) -> None:
    """The page's Python API block and its pytest test, in a project with the `smoke`
    suite they name (tests/conftest.py's `project`, every case passing)."""
    root = project
    env = env_for(root)
    api_block, pytest_block = (b for b in page("docs/plugins.md") if b.lang == "python")
    (root / "use_api.py").write_text(api_block.text)
    proc = subprocess.run([sys.executable, "use_api.py"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    ok(proc, f"{api_block.where()}: the Python API block")
    assert "smoke" in proc.stdout and len(run_ids(root)) == 1  # the md report of the run it made
    (root / "test_evals.py").write_text(pytest_block.text)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_evals.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    ok(proc, f"{pytest_block.where()}: the pytest block")
    assert "1 passed" in proc.stdout and len(run_ids(root)) == 2  # the fixture ran the suite
