"""Test doubles for evalh: a loopback mock LLM provider with scripted replies and faults.

`MockProvider` and `serve` live in `evalh.mock.mock_provider` and are imported lazily
(so `python -m evalh.mock.mock_provider` runs without a double-import warning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.mock.script import Fault, Reply, Rule, Script, ScriptState, ToolCall, UsageOverride

if TYPE_CHECKING:
    from evalh.mock.engine import RecordedRequest
    from evalh.mock.mock_provider import MockProvider, serve

__all__ = [
    "Fault",
    "MockProvider",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Script",
    "ScriptState",
    "ToolCall",
    "UsageOverride",
    "serve",
]

_LAZY = {
    "MockProvider": "evalh.mock.mock_provider",
    "serve": "evalh.mock.mock_provider",
    "RecordedRequest": "evalh.mock.engine",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
