"""The product under test in this example: review feedback replayed from its capture.

The cases preserve exact produced text, as a feedback harness does: the target returns the
captured output of each request (outputs.json), so the offsets of the annotated claims hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_OUTPUTS: dict[str, str] = json.loads((Path(__file__).resolve().parent / "outputs.json").read_text(encoding="utf-8"))


def answer(inp: dict[str, Any]) -> dict[str, Any]:
    return {"text": _OUTPUTS[inp["ask"]]}
