"""Import user code named as `module:function`, from the project root.

Every import of project code goes through `import_user_module`: targets and custom scorers
(`import_callable`, which first puts the project root on `sys.path` with `ensure_on_path`, so
`run`, `validate` and `rejudge` find the same modules whatever the current directory and
`PYTHONPATH`), and target kinds or scorer types registered by plugins (`evalh.registry`).

A module that ends the process at import — `sys.exit(...)` with any code, an argparse parser
reading evalh's own command line, any `BaseException` but `KeyboardInterrupt` — is a bad
target: `ImportFailure`, one line naming the module, never evalh's exit code or the module's.
What the module printed while importing is held back and, when the import fails, its last
line is quoted in that one line (argparse's `error: ...`); when the import succeeds it is
passed through as printed.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any


class ImportFailure(ValueError):
    """The named callable cannot be imported; the message says why in one line."""


_before_user_code: list[Callable[[], None]] = []


def before_user_code(hook: Callable[[], None]) -> None:
    """Call `hook` once, before the project's code is first imported (the program's start
    ends there: `evalh.gcpause.pause_for_startup`)."""
    _before_user_code.append(hook)


def ensure_on_path(root: Path) -> None:
    """Make the project root importable, as `python -m` from the root would."""
    r = str(root)
    if r not in sys.path:
        sys.path.insert(0, r)


def _last_line(*texts: str, limit: int = 200) -> str | None:
    for text in texts:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            line = lines[-1]
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return None


def _exit_code(exc: SystemExit) -> str:
    code = exc.code
    if code is None:
        return "0"  # sys.exit() exits 0
    return str(code) if isinstance(code, int) else repr(code)


def import_user_module(module_name: str, *, what: str = "target") -> ModuleType:
    """Import `module_name`; any way it fails, exiting included, is an `ImportFailure`.

    `what` names the kind of module in the message ("target", "scorer", "plugin").
    `KeyboardInterrupt` is let through: the user stopped evalh, the module did not.
    """
    while _before_user_code and module_name.partition(".")[0] != "evalh":  # once, before the
        _before_user_code.pop()()  # first import of code that is not evalh's own
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    out, err = io.StringIO(), io.StringIO()
    failure: str | None = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            module = importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except ImportError as exc:
        failure = f"cannot import {what} module {module_name!r}: {exc}"
    except SystemExit as exc:
        failure = (f"importing module {module_name!r} exited (SystemExit {_exit_code(exc)}) — "
                   f"a {what} module must not exit at import")
    except Exception as exc:  # the user's module raised while importing
        failure = f"importing {module_name!r} raised {type(exc).__name__}: {exc}"
    except BaseException as exc:  # GeneratorExit or the module's own BaseException subclass
        detail = f": {exc}" if str(exc) else ""
        failure = (f"importing module {module_name!r} raised {type(exc).__name__} (a BaseException)"
                   f"{detail} — a {what} module must not exit at import")
    if failure is not None:
        said = _last_line(err.getvalue(), out.getvalue())
        if said:
            failure += f" (it printed: {said})"
        raise ImportFailure(" ".join(failure.split("\n"))) from None
    sys.stdout.write(out.getvalue())  # a module that imported fine keeps what it printed
    sys.stderr.write(err.getvalue())
    return module


def import_callable(spec: str, *, root: Path, what: str = "target") -> Callable[..., Any]:
    """The callable named `module:function`, imported from the project `root`."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ImportFailure(f"{what} {spec!r} is not of the form 'module:function'")
    ensure_on_path(root)
    module = import_user_module(module_name, what=what)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ImportFailure(f"{what} module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ImportFailure(f"{what} {spec!r} is not callable")
    return obj


INLINE_MARK = "__evalh_inline__"
"""The attribute `evalh.api.inline` sets on a function: evalh may call it on the event loop."""


def declared_inline(fn: Callable[..., Any]) -> bool:
    """Whether a user function declared itself cheap (`@evalh.api.inline`): a sync target
    or custom scorer evalh then calls on the event loop instead of in a worker thread."""
    return getattr(fn, INLINE_MARK, False) is True
