"""Readers of other evaluation tools' results (the adapter layer, like `evalh.providers`).

Each reader turns one tool's result file into an `ImportedRun` (`evalh.importers.base`):
cases with their recorded outputs and every score the tool gave, errors, usage, cost,
latency, the model and task config, and notes naming what could not be mapped. The core
(`evalh.core.request.imported`) makes an evalh run document of it through the one runner, the
outputs given back by a stored source (as `evalh rejudge` does).

- `inspect_log`: inspect_ai logs, `.eval` (zip) and `.json`;
- `promptfoo`: promptfoo's `promptfoo eval -o results.json`.

`read_file` tells them apart by their content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh.importers.base import ForeignFileError, ImportedRun, load_json

FORMATS = ("inspect_ai", "promptfoo")


def sniff(path: Path, doc: Any) -> str:
    """Which tool wrote `path` (`doc`: its JSON, None for a `.eval` zip): `inspect_ai` or
    `promptfoo` (ForeignFileError otherwise)."""
    if path.suffix == ".eval":
        return "inspect_ai"
    if isinstance(doc, dict):
        if isinstance(doc.get("eval"), dict) and "version" in doc:
            return "inspect_ai"
        results = doc.get("results")
        if isinstance(results, dict) and isinstance(results.get("results"), list):
            return "promptfoo"
    raise ForeignFileError(f"{path}: neither an inspect_ai log (.eval, .json) nor a promptfoo result "
                           "file (`promptfoo eval -o results.json`)")


def read_file(path: Path) -> ImportedRun:
    """The run a tool's result file holds (ForeignFileError, one line naming the file, when
    it cannot be read). A JSON file is parsed once."""
    if not path.is_file():
        raise ForeignFileError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    doc = None if path.suffix == ".eval" else load_json(path)
    tool = sniff(path, doc)
    try:
        if tool == "inspect_ai":
            from evalh.importers.inspect_log import read_inspect_log

            return read_inspect_log(path, doc)
        from evalh.importers.promptfoo import read_promptfoo

        return read_promptfoo(path, doc)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        # a file of the tool's outline whose fields are not of the tool's types
        raise ForeignFileError(f"{path}: not a {tool} result evalh can read "
                               f"({type(exc).__name__}: {exc})") from None


__all__ = ["FORMATS", "ForeignFileError", "ImportedRun", "read_file", "sniff"]
