"""`sources_from`: the citation judge, its metadata pre-check and the external score read the
sources the product itself found (its output or its trace), and the case input only when told
to. Through the CLI and the runner, against the loopback mock provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

PRODUCT = '''\
from evalh.targets.base import TargetOutput

SOURCES = {"1": {"text": "Sara Berg spoke about rural schools and teacher shortages.", "speaker": "Sara Berg", "party": "L"},
           "2": {"text": "Erik Holm wanted more rail freight.", "speaker": "Erik Holm", "party": "M"}}

def answer(inp):
    if inp["q"] == "lost":   # the product found nothing
        return TargetOutput(output={"answer": "Schools matter [1].", "sources": None}, trace=[])
    text = ("On schools, [Erik Holm](/mp/erik-holm) (M) wants more teachers [1].\\n\\n"
            "Rail freight should grow [2].")
    return TargetOutput(output={"answer": text, "sources": SOURCES},
                        trace=[{"tool": "search", "hits": SOURCES, "count": 2}, {"tool": "compose"}])
'''
JUDGE = 'provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", max_retries = 0'


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path, scorers: str, cases: list[dict[str, Any]]) -> Path:
    (root / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = "product:answer"\nregime = "stochastic"\n'
        f'max_error_rate = 1\nscorers = [\n{scorers}\n]\n', encoding="utf-8")
    (root / "d.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (root / "product.py").write_text(PRODUCT, encoding="utf-8")
    script = [  # score rules first: a rule without an endpoint answers /v1/score too
        {"endpoint": "score", "match": "wants more teachers", "score": 0.3},
        {"endpoint": "score", "score": 0.9},
        {"match": "wants more teachers", "json": {"verdict": "wrong_speaker", "rationale": "[1] is Sara Berg (L)"}},
        {"match": "Rail freight", "json": {"verdict": "supported", "rationale": "[2] says so"}},
        {"match": "Schools matter", "json": {"verdict": "supported", "rationale": "the input's [1] says so"}},
    ]
    (root / "judge.json").write_text(json.dumps({"rules": script}), encoding="utf-8")
    return root / "evalh.toml"


def run(cfg: Path) -> tuple[Result, dict[str, Any] | None]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--json"])
    docs = sorted(runs.glob("*.json")) if runs.is_dir() else []
    return result, (json.loads(docs[-1].read_bytes()) if docs else None)


def score(doc: dict[str, Any], case: str, name: str) -> dict[str, Any]:
    c = next(c for c in doc["suites"]["s"]["cases"] if c["case_id"] == case)
    return next(s for s in c["scores"] if s["scorer"] == name)


INPUT_SOURCES = {"1": {"text": "Schools matter, said Anna Lind.", "speaker": "Anna Lind", "party": "S"}}


def test_judge_precheck_and_score_read_the_products_sources(tmp_path: Path) -> None:
    scorers = (f'{{ type = "citation_judge", {JUDGE}, answer_field = "answer", sources_from = "output.sources", '
               "mention_patterns = ['\\[(?P<speaker>[^\\]]+)\\]\\(/mp/[^)]*\\)\\s*\\((?P<party>[^)]+)\\)'] },\n"
               '{ type = "external_score", name = "grounding", url = "mock:judge.json", model = "m", answer_field = "answer", '
               'mode = "paragraphs", sources_from = "trace.search.hits" }')
    # the case input carries no sources at all: the product's are the only evidence
    cfg = project(tmp_path, scorers, [{"id": "c1", "input": {"q": "schools"}}])
    result, doc = run(cfg)
    assert doc is not None, result.output
    judge = score(doc, "c1", "citation_judge")
    assert judge["error"] is None, judge
    rows = judge["details"]["paragraphs"]
    assert [r["verdict"] for r in rows] == ["wrong_speaker", "supported"]
    # the pre-check compared the paragraph with the product's source [1], not with anything in the input
    assert rows[0]["metadata_mismatch"] == (
        "the paragraph states speaker 'Erik Holm', party 'M', but [1] has speaker 'Sara Berg', party 'L'")
    assert judge["details"]["sources_from"] == "output.sources"
    assert judge["details"]["precheck"]["caught_by_precheck"] == 1
    grounding = score(doc, "c1", "grounding")
    assert grounding["details"]["scores"] == [0.3, 0.9]
    assert grounding["details"]["sources_from"] == "trace.search.hits"


def test_no_fallback_to_the_input_unless_told(tmp_path: Path) -> None:
    scorers = (f'{{ type = "citation_judge", {JUDGE}, answer_field = "answer", sources_from = "output.sources" }},\n'
               '{ type = "external_score", name = "grounding", url = "mock:judge.json", model = "m", answer_field = "answer", sources_from = "output.sources" }')
    cfg = project(tmp_path, scorers, [{"id": "c1", "input": {"q": "lost", "sources": INPUT_SOURCES}}])
    result, doc = run(cfg)
    assert doc is not None, result.output
    judge = score(doc, "c1", "citation_judge")
    assert judge["error"] == "no numbered sources at 'output.sources'"
    grounding = score(doc, "c1", "grounding")
    assert grounding["value"] is None and grounding["details"]["no_sources"] == "no numbered sources at 'output.sources'"
    assert doc["suites"]["s"]["cases"][0]["status"] == "judge_error"


def test_fallback_to_the_input_when_listed(tmp_path: Path) -> None:
    scorers = (f'{{ type = "citation_judge", {JUDGE}, answer_field = "answer", sources_from = ["output.sources", "input.sources"] }},\n'
               '{ type = "external_score", name = "grounding", url = "mock:judge.json", model = "m", answer_field = "answer", '
               'sources_from = ["output.sources", "input.sources"] }')
    cfg = project(tmp_path, scorers, [{"id": "c1", "input": {"q": "lost", "sources": INPUT_SOURCES}}])
    result, doc = run(cfg)
    assert doc is not None, result.output
    judge = score(doc, "c1", "citation_judge")
    assert judge["passed"] is True and judge["details"]["sources_from"] == "input.sources"
    assert score(doc, "c1", "grounding")["details"]["sources_from"] == "input.sources"


@pytest.mark.parametrize(("extra", "message"), [
    ('sources_from = "answer.sources"', "must start with one of output, trace, input, metadata"),
    ('sources_from = "trace"', "name a trace entry"),
    ('sources_from = "output.sources", sources_field = "docs"', "not both"),
])
def test_bad_sources_from_is_a_config_error(tmp_path: Path, extra: str, message: str) -> None:
    cfg = project(tmp_path, f'{{ type = "citation_judge", {JUDGE}, {extra} }}', [{"id": "c1", "input": {"q": "x"}}])
    result, doc = run(cfg)
    assert result.exit_code == 2 and doc is None
    assert "suites.s.scorers[0]" in result.stderr and message in result.stderr
