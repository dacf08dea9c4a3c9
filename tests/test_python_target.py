"""The Python callable target: sync and async functions, the case or its input, TargetOutput."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from evalh.imports import ImportFailure
from evalh.models import Case
from evalh.services import RunServices
from evalh.targets import build_target
from evalh.targets.base import CallContext, TargetOutput
from evalh.targets.python_callable import PythonTargetConfig

MODULE = '''
import asyncio
import functools
import threading

from evalh.targets.base import TargetOutput


def upper(inp):
    return {"text": inp.upper(), "thread": threading.current_thread().name}


async def upper_async(inp):
    await asyncio.sleep(0)
    return {"text": inp.upper(), "thread": threading.current_thread().name}


def whole_case(case):
    return {"id": case.id, "expected": case.expected}


def with_usage(inp):
    return TargetOutput(output=inp, tokens_in=3, tokens_out=5, cost_usd=0.01,
                        trace=[{"tool": "search", "args": {"q": inp}}])


def not_json(inp):
    return {"x": object()}


class AsyncCallable:
    async def __call__(self, inp):
        return inp + "!"


async_object = AsyncCallable()


async def _add(suffix, inp):
    return inp + suffix


partial_async = functools.partial(_add, "?")
'''


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "evalh_pt_module.py").write_text(MODULE, encoding="utf-8")
    return tmp_path


def call(root: Path, fn: str, inp: Any = "hi", expected: Any = None) -> TargetOutput:
    target = build_target(PythonTargetConfig(callable=f"evalh_pt_module:{fn}"), root)
    ctx = CallContext(run_id="r", suite="s", arm="default", attempt=0,
                      services=RunServices(root=root))
    out = asyncio.run(target.call(Case(id="c1", input=inp, expected=expected), ctx))
    assert isinstance(out, TargetOutput)
    return out


def test_sync_function_runs_in_a_worker_thread(root: Path) -> None:
    out = call(root, "upper")
    assert out.output["text"] == "HI"
    assert out.output["thread"] != threading.main_thread().name


def test_async_function_runs_on_the_loop(root: Path) -> None:
    out = call(root, "upper_async")
    assert out.output["text"] == "HI"
    assert out.output["thread"] == threading.main_thread().name


def test_first_parameter_named_case_gets_the_whole_case(root: Path) -> None:
    assert call(root, "whole_case", expected="e").output == {"id": "c1", "expected": "e"}


def test_target_output_is_passed_through(root: Path) -> None:
    out = call(root, "with_usage", "q")
    assert (out.output, out.tokens_in, out.tokens_out, out.cost_usd) == ("q", 3, 5, 0.01)
    assert out.trace == [{"tool": "search", "args": {"q": "q"}}]


def test_non_json_output_is_refused_naming_the_type(root: Path) -> None:
    with pytest.raises(TypeError, match="JSON"):
        call(root, "not_json")


@pytest.mark.parametrize("fn", ["async_object", "partial_async"])
def test_async_callables_that_are_not_coroutine_functions_are_awaited(root: Path, fn: str) -> None:
    assert call(root, fn, "hi").output in ("hi!", "hi?")


@pytest.mark.parametrize("spec", ["evalh_pt_module:nope", "evalh_pt_missing:f", "no_colon"])
def test_unimportable_callable(root: Path, spec: str) -> None:
    with pytest.raises(ImportFailure):
        build_target(PythonTargetConfig(callable=spec), root)
