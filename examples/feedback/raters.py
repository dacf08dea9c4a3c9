"""Three synthetic raters (no real people) who rate a blinded export of this example.

    python examples/feedback/raters.py requests.json OUT_DIR

writes OUT_DIR/ann.jsonl, ben.jsonl, cho.jsonl and adjudication.jsonl — what three raters
and a lead would return. A rater sees only the blinded request (the ask, the evidence, the
output and its claim spans); these ones answer from the table below, keyed by the ask and
the claim's text. Two deliberate differences: ben rates one claim's truth differently (a
dispute, which the lead adjudicates) and cho cannot tell one answer's relevance (a null,
left disputed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# The agreed ratings: (truth, grounding) per claim text, relevance, follow-up dimensions.
_CASES = [json.loads(line) for line in (_HERE / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line]
_BY_ASK = {c["input"]["ask"]: c for c in _CASES}
DISPUTED = ("Review the timeouts of module 2 (pr).", "c2")
"""ben calls this claim true; ann and cho call it false; the lead adjudicates `false`."""
CANNOT_TELL = "Review the timeouts of module 3 (chat)."
"""cho cannot tell this answer's relevance (null); ann and ben say relevant."""


def _rating(req: dict[str, Any], rubric_sha256: str, rater: str) -> dict[str, Any]:
    case = _BY_ASK[req["input"]["ask"]]
    truth = {c["text"]: (c["truth"], c["grounding"]) for c in case["expected"]["claims"]}
    out: dict[str, Any] = {"request_id": req["request_id"], "request_sha256": req["request_sha256"],
                           "rubric_sha256": rubric_sha256, "rater": rater}
    if req["kind"] == "followup":
        out["dimensions"] = {"repetition": True, "usefulness": False}
        return out
    claims = {}
    for c in req["claims"]:
        t, g = truth[c["text"]]
        if rater == "ben" and (req["input"]["ask"], c["id"]) == DISPUTED:
            t = "true"
        claims[c["id"]] = {"truth": t, "grounding": g}
    out["claims"] = claims
    out["fields"] = {"verdict": case["expected"]["verdict"]}
    out["dimensions"] = {"relevance": None if rater == "cho" and req["input"]["ask"] == CANNOT_TELL else True}
    return out


def ratings(export: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each rater's ratings of every request of `export`, and the lead's adjudication."""
    sha = export["rubric"]["sha256"]
    out = {r: [_rating(req, sha, r) for req in export["requests"]] for r in ("ann", "ben", "cho")}
    req = next(q for q in export["requests"] if q["input"]["ask"] == DISPUTED[0])
    out["adjudication"] = [{"request_id": req["request_id"], "request_sha256": req["request_sha256"],
                            "rubric_sha256": sha, "rater": "lead", "kind": "adjudication",
                            "claims": {DISPUTED[1]: {"truth": "false"}}}]
    return out


def main(argv: list[str]) -> None:
    export = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in ratings(export).items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
