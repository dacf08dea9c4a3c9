"""The product the import fixtures evaluate, two versions of it: a lookup of capitals.

inspect_ai asks it through `mockllm/model` (a callable of custom outputs), promptfoo through
a Python provider (`provider.py`), evalh through a python target: the same answers, three
ways. v2 regresses one case (australia); both fail canada and error on atlantis.
"""

from __future__ import annotations

import json
from pathlib import Path

CASES = [json.loads(line) for line in (Path(__file__).parent / "cases.jsonl").read_text().splitlines() if line]

_V1 = {
    "France": "The capital of France is Paris.",
    "Japan": "Tokyo.",
    "Italy": "It is Rome.",
    "Canada": "Toronto, I believe.",
    "Australia": "Canberra.",
}
_V2 = {**_V1, "Australia": "Sydney, the largest city."}


class ProductDown(RuntimeError):
    pass


def answer(question: str, version: str = "v1") -> str:
    table = _V2 if version == "v2" else _V1
    for country, reply in table.items():
        if country in question:
            return reply
    raise ProductDown(f"no answer for {question!r}")


def target(inp: dict[str, str]) -> str:
    """evalh's python target: the version from EVALH_FIXTURE_VERSION (default v1)."""
    import os

    return answer(inp["question"], os.environ.get("EVALH_FIXTURE_VERSION", "v1"))
