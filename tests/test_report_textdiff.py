"""The word diff the side-by-side views draw (`evalh.report.textdiff`)."""

from __future__ import annotations

from evalh.report.textdiff import MAX_TOKENS, as_text, word_diff


def _side(ops: list[list[str]], keep: str) -> str:
    return "".join(t for op, t in ops if op in ("eq", keep))


def test_changed_words_are_marked_and_both_texts_rebuild_exactly() -> None:
    a = "The 2025 budget allocated $2.4B to housing, mostly for social rentals [1]."
    b = "The 2025 budget allocated $3.1B to housing, including a tax credit [1]."
    d = word_diff(a, b)
    assert _side(d["ops"], "del") == a and _side(d["ops"], "ins") == b
    assert ["del", "2.4B"] in d["ops"] and ["ins", "3.1B"] in d["ops"]
    assert ["del", "mostly for social rentals"] in d["ops"]  # one change, not four
    assert d["changed_words"] == 10 and d["by"] == "word" and d["same"] is False


def test_identical_outputs_and_non_text_outputs() -> None:
    assert word_diff("same", "same") == {"by": "word", "ops": [["eq", "same"]], "changed_words": 0, "same": True}
    d = word_diff({"verdict": "accept"}, {"verdict": "reject"})
    assert [op for op in d["ops"] if op[0] != "eq"] == [["del", "accept"], ["ins", "reject"]]
    assert as_text(None) == "" and word_diff(None, "new")["ops"] == [["ins", "new"]]


def test_huge_outputs_are_compared_by_line() -> None:
    a = "\n".join(f"line {i} " + "w " * 10 for i in range(MAX_TOKENS // 10))
    b = a.replace("line 7 ", "line seven ", 1)
    d = word_diff(a, b)
    assert d["by"] == "line" and _side(d["ops"], "del") == a and _side(d["ops"], "ins") == b
    assert sum(op != "eq" for op, _ in d["ops"]) == 2
