"""Writes cases.jsonl, outputs.json and judge.script.json of this example from the table
below (synthetic: fictional repositories and people). Run it after editing the table:

    python examples/feedback/build_cases.py

Each case is one captured attempt of a work item (`group`) at one destination. Claims are
annotated on the case (`expected.claims`): exact output offsets, with provisional truth and
grounding labels that raters never see. Evidence has a role (seen, reference,
conversation, compaction), whether the producer saw it, and its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRODUCER = {"producer_model": "feedback-model-1", "prompt_sha256": hashlib.sha256(b"review prompt v3").hexdigest()}
JUDGE_MODEL = "judge-model-1"

# (case id, group, split, destination, kind, ask, evidence, output text,
#  claims [(span, truth, grounding)], judge verdict)
CASES = [
    ("t49", "w-t49", "dev", "pr", "answer", "Review the error handling in parse_config.",
     [("seen", True, "catch (IOException e) { log(e); return 0; }")],
     "The catch block in parse_config is empty. Errors are logged.",
     [("The catch block in parse_config is empty", "false", "supported"), ("Errors are logged", "true", "supported")],
     "defect"),
    ("t44", "w-t44", "dev", "pr", "answer", "Summarise the tests added for create_user.",
     [("seen", True, "test_create_user_rejects_empty_name"), ("compaction", None, "earlier: null ids were discussed")],
     "A test checks that creation succeeds. Null ids were rejected before.",
     [("A test checks that creation succeeds", "false", "unsupported"), ("Null ids were rejected before", "unsupported", "unsupported")],
     "defect"),
    ("t22", "w-t22", "dev", "chat", "followup", "Thanks, that answers it.",
     [("conversation", True, "user: thanks, that answers it")],
     "As I said, the retry is bounded. As I said, the retry is bounded.", [], "defect"),
]
HELD = [  # six work items, each at two destinations
    ("h1", {"pr": ("true", "supported", "true", "supported", "defect"), "chat": ("true", "supported", "true", "supported", "ok")}),
    ("h2", {"pr": ("true", "supported", "false", "unsupported", "defect"), "chat": ("true", "supported", "true", "supported", "ok")}),
    ("h3", {"pr": ("true", "supported", "true", "supported", "ok"), "chat": ("true", "supported", "true", "unsupported", "ok")}),
    ("h4", {"pr": ("true", "supported", "true", "supported", "ok"), "chat": ("true", "supported", "true", "supported", "ok")}),
    ("h5", {"pr": ("false", "supported", "true", "supported", "defect"), "chat": ("true", "supported", "true", "supported", "ok")}),
    ("h6", {"pr": ("true", "supported", "true", "supported", "ok"), "chat": ("true", "supported", "true", "supported", "ok")}),
]
for item, dests in HELD:
    for dest, (t1, g1, t2, g2, judge) in dests.items():
        n = int(item[1:])
        text = f"The timeout in module {n} is {n * 10} seconds. The {dest} handler retries {n} times."
        CASES.append((
            f"{item}-{dest}", f"w-{item}", "heldout", dest, "answer", f"Review the timeouts of module {n} ({dest}).",
            [("seen", True, f"TIMEOUT = {n * 10}"), ("reference", None, f"retries: {n}")], text,
            [(f"The timeout in module {n} is {n * 10} seconds", t1, g1), (f"The {dest} handler retries {n} times", t2, g2)],
            judge,
        ))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    lines, outputs, rules = [], {}, []
    for cid, group, split, dest, kind, ask, evidence, text, claims, judge in CASES:
        held = split == "heldout"
        spans = []
        for i, (span, truth, grounding) in enumerate(claims):
            start = text.index(span)
            spans.append({"id": f"c{i + 1}", "start": start, "end": start + len(span), "text": span,
                          "truth": truth, "grounding": grounding})
        case = {
            "id": f"feedback.{cid}",
            "input": {"ask": ask, "evidence": [
                {"role": role, "seenByProducer": seen, "text": body, "sha256": sha(body)} for role, seen, body in evidence]},
            "expected": {"claims": spans, "verdict": "defect" if any(c[1] != "true" or c[2] != "supported" for c in claims) else "ok"},
            "metadata": {"group": group, "split": split, "sampling": "random" if held else "hand-picked",
                         "claim_coverage": "exhaustive" if held else "selected", "destination": dest,
                         "practice": "conversation" if dest == "chat" else "review", "rating_kind": kind,
                         "review_state": "reviewed", **PRODUCER},
        }
        lines.append(json.dumps(case))
        outputs[ask] = text
        rules.append({"model": JUDGE_MODEL, "match": ask,
                      "json": {"verdict": judge, "rationale": f"judged {judge} against the evidence"}})
    (HERE / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (HERE / "outputs.json").write_text(json.dumps(outputs, indent=1) + "\n", encoding="utf-8")
    (HERE / "judge.script.json").write_text(json.dumps({"rules": rules}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
