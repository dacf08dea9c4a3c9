"""Counts that add up: a judge reply cut at max_tokens is counted in the suite's figures for
every judge type (a citation judge's paragraphs included), not only on the case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app

PRODUCT = '''\
def answer(inp):
    return {"answer": "Schools need teachers [1].\\n\\nRail should grow [2].\\n\\nNo citation here.",
            "sources": {"1": "Schools need more teachers.", "2": "Rail freight should grow."}}
'''


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def test_truncated_citation_judge_replies_are_counted_by_the_suite(tmp_path: Path) -> None:
    judge = ('{ type = "citation_judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
             'max_retries = 0, max_tokens = 24, answer_field = "answer", sources_from = "output.sources" }')
    (tmp_path / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = "product:answer"\nregime = "stochastic"\nmax_error_rate = 1\n'
        f'scorers = [{judge}]\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": i}}) + "\n" for i in range(3)),
                                      encoding="utf-8")
    (tmp_path / "product.py").write_text(PRODUCT, encoding="utf-8")
    long_why = "the cited source says exactly this, in these words, and nothing in it contradicts the claim " * 3
    rules = [{"match": "Schools need teachers", "json": {"verdict": "supported", "rationale": long_why}},
             {"json": {"verdict": "supported", "rationale": "ok"}}]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(tmp_path / "evalh.toml"), "--runs-dir", str(runs), "--json"])
    doc: dict[str, Any] = json.loads(next(runs.glob("*.json")).read_bytes())
    assert result.exit_code == 1, result.output  # every case lost a judgment: nothing measured
    cases = doc["suites"]["s"]["cases"]
    scores = [c["scores"][0] for c in cases]
    # each case: the first paragraph's reply was cut (a judge_error), the second judged
    assert all(s["error"] and "truncated" in s["error"] for s in scores)
    assert all([r.get("truncated", False) for r in s["details"]["paragraphs"]] == [True, False] for s in scores)
    figures = doc["suites"]["s"]["details"]["citation_judge"]
    assert figures["truncated"] == 3                 # cases with a cut reply
    assert figures["truncated_paragraphs"] == 3      # paragraphs whose reply was cut
    assert figures["judge_error"] == 3 and figures["scored"] == 3
