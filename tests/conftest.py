"""Shared fixtures.

- `_isolate` (autouse): no test sees the user's evalh/provider environment, the user's
  current directory, or a target module imported by an earlier test.
- `repo_root`: the repository root, for tests that need the shipped `evalh.toml`,
  `datasets/` or the `examples` package (the root is put on `sys.path` for them).
- `project`: a small, self-contained project in a temp dir (config, dataset, target module).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# `examples` is not an installed package: make it importable however pytest was started
# (`pytest` does not put the current directory on sys.path, `python -m pytest` does).
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def _own_tests_package() -> None:
    """`tests.*` means this directory. An installed distribution may ship a top-level
    `tests` package of its own (ppi-python, a dev dependency, does); as a regular package it
    would win over this directory, which has no `__init__.py`, so `tests` is bound here."""
    import importlib.util
    import types

    here = Path(__file__).resolve().parent
    try:
        spec = importlib.util.find_spec("tests")
    except (ImportError, ValueError):
        spec = None
    locations = [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []
    if here not in locations:
        package = types.ModuleType("tests", "evalh's tests")
        package.__path__ = [str(here)]
        sys.modules["tests"] = package


_own_tests_package()


def _compile_project_code() -> None:
    """Bytecode for evalh's own modules and the example product, as an installed package
    has: where PYTHONDONTWRITEBYTECODE is set, an editable install has none, and every
    `evalh` process a test starts compiled each module it imports again (~0.35 s of CPU a
    process). Python still checks each file against its source, so an edit is never missed."""
    if not sys.dont_write_bytecode:
        return  # the interpreter writes them itself
    import compileall

    for package in ("evalh", "examples"):
        compileall.compile_dir(REPO_ROOT / package, quiet=2)


_compile_project_code()

_ENV_PREFIXES = ("EVALH_", "ANTHROPIC_", "OPENAI_")
_ENV_NAMES = ("EVAL_RUNS_DIR",)


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Strip the user's evalh/provider variables, run in an empty directory, and forget any
    module imported from a temp dir (each `project` has its own target module)."""
    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES) or name in _ENV_NAMES:
            monkeypatch.delenv(name)
    # Wide, colourless terminal output: assertions read whole case ids, not "gate.mon…".
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    path_before = list(sys.path)
    yield
    sys.path[:] = path_before
    # The consoles are made once a process, at the width of the moment: a test that laid
    # output out at another width must not leave its console to the next test.
    from evalh import console

    console.out.cache_clear()
    console.err.cache_clear()
    tmp_root = str(tmp_path_factory.getbasetemp())
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(tmp_root):
            del sys.modules[name]


@pytest.fixture
def repo_root() -> Path:
    """The repository root: its `evalh.toml`, `datasets/` and `examples/` (importable)."""
    return REPO_ROOT


PROJECT_TOML = """\
[evalh]
concurrency = 2
timeout_s = 5

[suites.smoke]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:answer"
regime = "deterministic"
scorers = [{ type = "exact", field = "verdict" }]
"""

PROJECT_CASES = [
    '{"id": "smoke.yes", "input": {"text": "yes please"}, "expected": "accept", '
    '"metadata": {"split": "dev", "group": "g1", "tags": ["must-pass"]}}',
    '{"id": "smoke.no", "input": {"text": "no thanks"}, "expected": "reject", '
    '"metadata": {"split": "dev", "group": "g1"}}',
    '{"id": "smoke.maybe", "input": {"text": "maybe yes"}, "expected": "accept", '
    '"metadata": {"split": "dev", "group": "g2"}}',
]

PROJECT_TARGET = '''\
"""Targets of the test project: each takes the case input (a dict with `text`)."""

import asyncio
import os


def answer(inp):
    return {"verdict": "accept" if "yes" in inp["text"] else "reject"}


async def answer_async(inp):
    await asyncio.sleep(0)
    return answer(inp)


def always_accept(inp):
    return {"verdict": "accept"}


def crash(inp):
    raise RuntimeError("the product fell over on " + inp["text"])


def crash_on_no(inp):
    if "no" in inp["text"]:
        raise ValueError("cannot handle a refusal")
    return answer(inp)


async def hang(inp):
    await asyncio.Event().wait()


def echo_env(inp):
    """Echoes the environment back, as a careless product might."""
    return {"verdict": "accept", "env": dict(os.environ)}


def not_json(inp):
    return {"verdict": object()}


def exits(inp):
    import sys

    sys.exit(0)


def whoami(inp):
    """Reports the run and case it belongs to, as a product's own logs would."""
    from evalh.context import current

    ctx = current()
    return {
        "verdict": answer(inp)["verdict"],
        "context": [ctx.run_id, ctx.suite, ctx.case_id, ctx.arm, ctx.attempt] if ctx else None,
        "env": [os.environ.get("EVALH_RUN_ID"), os.environ.get("EVALH_CASE_ID")],
    }
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding `evalh.toml` (one deterministic suite, `smoke`, of three cases
    that all pass), `data/smoke.jsonl`, and the target module `evalh_fixture_target`
    (functions `answer`, `answer_async`, `always_accept`, `crash`, `crash_on_no`, `hang`,
    `echo_env`, `exits`, `not_json`, `whoami`).

    Tests change it by rewriting or appending to the files; the module is forgotten after
    each test, so every test imports its own copy.
    """
    (tmp_path / "evalh.toml").write_text(PROJECT_TOML, encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "smoke.jsonl").write_text("\n".join(PROJECT_CASES) + "\n", encoding="utf-8")
    (tmp_path / "evalh_fixture_target.py").write_text(PROJECT_TARGET, encoding="utf-8")
    return tmp_path
