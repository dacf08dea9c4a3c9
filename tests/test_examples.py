"""Tests of the example product (examples/) and the labels of the shipped offline datasets.

Every case in datasets/gate.jsonl and datasets/guards.jsonl is executed here, so a
mislabeled expectation or a drifted rail fails pytest before it can rot the suite.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from examples.citecheck import check, extract_claims
from examples.guards import (
    canonicalize,
    completeness,
    impersonal,
    isin_check_digit_ok,
    materiality,
    run,
)

ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "datasets" / "gate.jsonl"
GUARDS = ROOT / "datasets" / "guards.jsonl"


def _load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(c.kind, c.text) for c in extract_claims(text)]


# --- citecheck -------------------------------------------------------------------------


def test_extracts_each_notation_once() -> None:
    text = (
        "Revenue of $2.3B in Q3 2024 rose 12% and 25 bps; 1.5 million users, 12,400 staff, "
        "3.5x over 2021–2024, 8-10% guidance, $2-3B capex, 2024-10-22, March 15, 2024, "
        'May 2024, "a quote" [1].'
    )
    assert _kinds(text) == [
        ("money", "$2.3B"),
        ("quarter", "Q3 2024"),
        ("percent", "12%"),
        ("bps", "25 bps"),
        ("number", "1.5 million"),
        ("number", "12,400"),
        ("multiple", "3.5x"),
        ("year_range", "2021–2024"),
        ("range", "8-10%"),
        ("range", "$2-3B"),
        ("date", "2024-10-22"),
        ("date", "March 15, 2024"),
        ("date", "May 2024"),
        ("quote", '"a quote"'),
    ]


def test_year_range_does_not_eat_following_word_as_scale() -> None:
    (claim,) = extract_claims("over 2023-2024 the company grew")
    assert claim.kind == "year_range" and claim.value == (2023, 2024)
    (claim,) = extract_claims("over 2023-2024 The company grew")
    assert claim.kind == "year_range"


def test_citation_markers_are_not_claims() -> None:
    assert extract_claims("Nothing numeric here [1][2] or [1, 3].") == []


def test_rounding_within_stated_precision() -> None:
    src = {"1": "Revenue was $2.31 billion."}
    assert check({"answer": "Revenue was $2.3B [1].", "sources": src})["verdict"] == "accept"
    assert check({"answer": "Revenue was $2.4B [1].", "sources": src})["verdict"] == "reject"
    assert (
        check({"answer": "Revenue was $2,310 million [1].", "sources": src})["verdict"] == "accept"
    )


def test_claim_must_be_in_the_cited_source_not_any_source() -> None:
    src = ["Margin was 18%.", "Debt was $5M."]
    out = check({"answer": "Debt was $5M [1].", "sources": src})
    assert out["verdict"] == "reject"
    assert out["reasons"] == ["unsupported money '$5M': not in cited [1]"]
    assert check({"answer": "Debt was $5M [2].", "sources": src})["verdict"] == "accept"


def test_quote_is_literal_and_spans_sentence_punctuation() -> None:
    src = {"1": "She said: “Growth slowed. Margins held.” Then left."}
    ok = check({"answer": 'She said "Growth slowed. Margins held." [1]', "sources": src})
    assert ok["verdict"] == "accept", ok
    bad = check({"answer": 'She said "Growth slowed. Margins rose." [1]', "sources": src})
    assert bad["verdict"] == "reject"


def test_malformed_input_fails_closed() -> None:
    assert check({"sources": {}})["verdict"] == "reject"
    assert check({"answer": 3, "sources": {}})["verdict"] == "reject"
    assert check({"answer": "x", "sources": "not a list"})["verdict"] == "reject"


# --- guards -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("aapl", "AAPL"),
        (" $msft ", "MSFT"),
        ("NYSE:brk/b", "BRK.B"),
        ("US0378331005", "US0378331005"),
    ],
)
def test_canonicalize_accepts(raw: str, canonical: str) -> None:
    out = canonicalize(raw)
    assert out["verdict"] == "accept" and out["canonical"] == canonical


@pytest.mark.parametrize(
    "raw", ["../etc", "AAPL; rm -rf", "АAPL", "AAPL\u200b", "X" * 25, "AAPL|cat", "US0378331006"]
)
def test_canonicalize_refuses_hostile(raw: str) -> None:
    assert canonicalize(raw)["verdict"] == "reject"


def test_isin_check_digit() -> None:
    assert isin_check_digit_ok("US0378331005")
    assert isin_check_digit_ok("GB0002634946")
    assert not isin_check_digit_ok("US0378331009")


def test_impersonal() -> None:
    assert impersonal('Acme said "we will grow" and US sales rose.')["verdict"] == "accept"
    assert impersonal("We’re bullish.") == {"verdict": "reject", "violations": ["We're"]}
    assert impersonal("Holders must sell now.")["verdict"] == "reject"


def test_completeness() -> None:
    assert completeness("## Summary\na\n## Evidence\nb\n## Risks\nc")["verdict"] == "accept"
    out = completeness("## Summary\na\n## Evidence\n\n")
    assert out == {"verdict": "reject", "missing": ["Risks"], "empty": ["Evidence"]}


def test_materiality() -> None:
    assert materiality(100, 104.9)["verdict"] == "silent"
    assert materiality(100, 95)["verdict"] == "speak"
    assert materiality(100, 110, hours_since_last_alert=1)["why"] == "cooldown"
    assert materiality(100, 115, hours_since_last_alert=1)["verdict"] == "speak"
    assert materiality(100, float("inf"))["verdict"] == "reject"


def test_run_dispatches_and_refuses_unknown_guard() -> None:
    assert run({"guard": "canonicalize", "identifier": "aapl"})["canonical"] == "AAPL"
    with pytest.raises(ValueError, match="unknown guard"):
        run({"guard": "nope"})


# --- datasets ---------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "target"), [(GATE, check), (GUARDS, run)], ids=["gate", "guards"])
def test_every_case_label_matches_the_product(path: Path, target: Any) -> None:
    cases = _load(path)
    assert len(cases) >= 36
    wrong = {
        c["id"]: (c["expected"], out)
        for c in cases
        if (out := target(c["input"]))["verdict"] != c["expected"]
    }
    assert not wrong, wrong


@pytest.mark.parametrize("path", [GATE, GUARDS], ids=["gate", "guards"])
def test_dataset_shape(path: Path) -> None:
    cases = _load(path)
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "duplicate ids"
    split_of_group: dict[str, set[str]] = defaultdict(set)
    for c in cases:
        assert set(c) == {"id", "input", "expected", "metadata"}, c["id"]
        md = c["metadata"]
        assert {"split", "group", "stratum", "tags"} <= set(md), c["id"]
        split_of_group[md["group"]].add(md["split"])
    crossing = {g: s for g, s in split_of_group.items() if len(s) > 1}
    assert not crossing, f"groups crossing splits: {crossing}"


def test_gate_has_truthful_and_planted_case_per_stratum() -> None:
    verdicts: dict[str, set[str]] = defaultdict(set)
    for c in _load(GATE):
        verdicts[c["metadata"]["stratum"]].add(c["expected"])
        tag = "truthful" if c["expected"] == "accept" else "planted"
        assert tag in c["metadata"]["tags"], c["id"]
        assert c["id"].endswith("." + tag), c["id"]
    incomplete = {s: v for s, v in verdicts.items() if v != {"accept", "reject"}}
    assert not incomplete, incomplete


def test_guards_have_pass_and_reject_per_guard() -> None:
    verdicts: dict[str, set[str]] = defaultdict(set)
    for c in _load(GUARDS):
        verdicts[c["metadata"]["stratum"]].add(c["expected"])
    assert set(verdicts) == {"canonicalize", "impersonal", "completeness", "materiality"}
    for guard, seen in verdicts.items():
        assert len(seen) >= 2, (guard, seen)
    assert {"speak", "silent", "reject"} <= verdicts["materiality"]
