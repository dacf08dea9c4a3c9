"""Import user code named as `module:function`, from the project root."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ImportFailure(ValueError):
    """The named callable cannot be imported; the message says why in one line."""


def ensure_on_path(root: Path) -> None:
    """Make the project root importable, as `python -m` from the root would."""
    r = str(root)
    if r not in sys.path:
        sys.path.insert(0, r)


def import_callable(spec: str, *, what: str = "target") -> Callable[..., Any]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ImportFailure(f"{what} {spec!r} is not of the form 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportFailure(f"cannot import {what} module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise ImportFailure(
            f"importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ImportFailure(f"{what} module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ImportFailure(f"{what} {spec!r} is not callable")
    return obj
