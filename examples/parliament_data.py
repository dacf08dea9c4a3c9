"""Builds the `parliament` example's data: a synthetic corpus of parliamentary talks and the
mock provider's script for its question generator and judge.

    python examples/parliament_data.py        # rewrites datasets/talks.jsonl and datasets/parliament.script.json

Everything is invented for the project: the members, their parties (Green Progress, Civic
Union, Labour Alliance, Rural Front) and what they said. No real person is named.
"""

from __future__ import annotations

import json
from pathlib import Path

SPEAKERS = [
    ("Maja Lindqvist", "GP"), ("Oskar Wennberg", "CU"), ("Elin Strand", "LA"), ("Viktor Ahl", "RF"),
    ("Nora Holmgren", "GP"), ("Jonas Ekdahl", "CU"), ("Ida Fors", "LA"), ("Anton Vik", "RF"),
    ("Lova Sandin", "GP"), ("Hugo Brink", "CU"), ("Ella Norberg", "LA"), ("Filip Dahl", "RF"),
]
TOPICS = {
    "schools": ["smaller classes in the early years", "a national reading guarantee", "more school nurses",
                "free school meals for all ages", "higher pay for special-needs teachers"],
    "healthcare": ["shorter queues for hip surgery", "a nurse on call in every village", "state-run emergency wards",
                   "cheaper dental care for pensioners", "a single patient record for all regions"],
    "defence": ["a larger home guard", "joint air patrols with neighbours", "conscription for all young adults",
                "stockpiles of medicine for crises", "cyber defence units in every county"],
    "climate": ["a faster phase-out of coal heating", "tax relief for heat pumps", "rewilding of drained wetlands",
                "electric ferries on the coast", "a climate test for every new road"],
    "migration": ["faster asylum decisions", "language courses from the first day", "work permits for seasonal pickers",
                  "more staff at the border agency", "housing spread across all municipalities"],
    "housing": ["rent caps for students", "state loans for first homes", "building on disused rail yards",
                "lower fees for building permits", "tenant councils with a real vote"],
    "rail": ["night trains to the north", "a second track on the coast line", "cheaper season tickets",
             "repairs before new lines", "freight moved from roads to rail"],
    "pensions": ["a higher guaranteed pension", "a later retirement age", "pension credits for carers",
                 "lower tax on small pensions", "a public fund with fewer fees"],
}
TOPIC_NAMES = list(TOPICS)


def slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def talks() -> list[dict[str, object]]:
    rows = []
    for i in range(64):
        speaker, party = SPEAKERS[i % len(SPEAKERS)]
        topic = TOPIC_NAMES[i % len(TOPIC_NAMES)]
        proposal = TOPICS[topic][(i // len(TOPIC_NAMES)) % len(TOPICS[topic])]
        stance = ["supported", "opposed", "asked for a study of"][i % 3]
        text = (f"Speaking on {topic}, the member {stance} {proposal}. "
                f"The member said the government had waited too long on {topic}, and that the cost of "
                f"{proposal} should be shared between the state and the regions. "
                f"Talk number {i + 1} ended with a call for a vote before the summer.")
        rows.append({"id": f"t{i + 1:03d}", "speaker": speaker, "party": party,
                     "date": f"2024-{(i % 9) + 2:02d}-{(i % 27) + 1:02d}", "topic": topic, "text": text})
    return rows


def _question_variants(row: dict[str, object]) -> list[dict[str, str]]:
    topic, n = row["topic"], str(row["id"])
    proposal = str(row["text"]).split(" the member ")[1].split(". ")[0]
    return [
        {"question": f"What do the different parties say about {proposal.split(' ', 1)[1]}?", "complexity": "multi"},
        {"question": f"Who in parliament has spoken about {topic} and {proposal.split(' ', 1)[1]}, and what did they propose (talk {n})?",
         "complexity": "multi"},
        {"question": f"Which member {proposal} in the {topic} debate?", "complexity": "single"},
    ]


FREE_QUESTIONS = {
    t: [{"question": q, "complexity": c} for q, c in [
        (f"What are the main proposals on {t} this year?", "multi"),
        (f"Which party wants the state to pay more for {t}?", "single"),
        (f"How do the government and the opposition differ on {t}?", "multi"),
        (f"Has anyone asked for a study of {t} spending?", "single"),
        (f"What did members say about {t} in the spring debates?", "multi"),
        (f"Who opposed the latest {t} reform, and why?", "single"),
    ]] for t in TOPIC_NAMES
}
GARBAGE_ROW = "t013"
"""The generator answers this row's prompt with prose instead of JSON, every time: a failed
generation, recorded as such."""


def script() -> dict[str, object]:
    rules: list[dict[str, object]] = []
    # the external grounding score: word overlap (the mock's default), nothing to script
    # the generator (model claude-sonnet-4-5)
    rules.append({"model": "claude-sonnet-4-5", "match": f"Talk {GARBAGE_ROW} (",
                  "text": "Here is a question you could ask about that talk, with some background first."})
    for row in talks():
        rules.append({"model": "claude-sonnet-4-5", "match": f"Talk {row['id']} (",
                      "sequence": [{"json": v} for v in _question_variants(row)]})
    for topic, qs in FREE_QUESTIONS.items():
        rules.append({"model": "claude-sonnet-4-5", "match": f"about {topic} in parliament",
                      "sequence": [{"json": q} for q in qs]})
    # the citation judge (model claude-opus-4-1): what the pre-check flagged, what the answerer
    # overstated or invented, else supported
    judge = "claude-opus-4-1"
    rules += [
        {"model": judge, "match": "<precheck>", "json": {
            "verdict": "wrong_speaker", "rationale": "The cited talk was held by another member; the pre-check names who."}},
        {"model": judge, "match": "Taken together", "json": {
            "verdict": "partial", "rationale": "The sources show positions on the topic, not a consensus."}},
        {"model": judge, "match": "reportedly", "json": {
            "verdict": "unsupported", "rationale": "The cited talk says nothing about a budget figure."}},
        {"model": judge, "json": {"verdict": "supported", "rationale": "The cited talk states this position."}},
    ]
    return {"rules": rules, "default": {"text": "ok"}}


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    (root / "datasets" / "talks.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in talks()), encoding="utf-8")
    (root / "datasets" / "parliament.script.json").write_text(
        json.dumps(script(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
