"""Issue 29, seed 002: exact text, exactly — `output_sha256` is the SHA-256 of a text
output's bytes; `[suites.S.require]` digests and claim spans refused by `evalh validate`
(file and line) and checked on each reply; a secret scrubbed from an output moves its
claims' offsets with it, and a claim that quotes scrubbed text leaves out its case, not the
run's export."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.models import output_digest_matches, sha256_of

runner = CliRunner()
SECRET = "sk-live-h29-0123456789abcdef"

PRODUCT = '''\
import os


def text(inp):
    return inp["say"]


def table(inp):
    return {"text": inp["say"]}


def leaky(inp):
    return {"text": "Key " + os.environ["H29_API_KEY"] + ". The retry count is 3."}
'''


JUDGE = """
[[suites.s.scorers]]
type = "judge"
provider = "anthropic"
model = "judge-h29"
base_url = "mock:judge.json"
rubric = "ok?"
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def project(tmp: Path, rows: list[dict[str, Any]], *, target: str = "product29:text", require: str = "",
            judged: bool = False) -> Path:
    (tmp / "product29.py").write_text(PRODUCT, encoding="utf-8")
    (tmp / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp / "evalh.toml").write_text(f"""\
[suites.s]
dataset = "cases.jsonl"
target = "{target}"
regime = "stochastic"
max_error_rate = 1
{require}

[[suites.s.scorers]]
type = "exact"
field = "missing"
{JUDGE if judged else ""}""", encoding="utf-8")
    (tmp / "judge.json").write_text(json.dumps({"rules": [], "default": {"json": {"verdict": "pass", "rationale": "ok"}}}))
    return tmp / "evalh.toml"


def one_line(result: Any) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def run(cfg: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    runs = cfg.parent / "runs"
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    docs = sorted(runs.glob("*.json"))
    return result, json.loads(docs[-1].read_text()) if docs else {}


# ---------------------------------------------------------------------------- 5. output_sha256


def test_output_sha256_is_the_digest_of_the_exact_text_bytes(tmp_path: Path) -> None:
    said = "Ünïcode, \"quoted\"\nand a tab\t."
    cfg = project(tmp_path, [{"id": "a", "input": {"say": said}, "expected": "x"}])
    _, doc = run(cfg)
    case = doc["suites"]["s"]["cases"][0]
    assert case["output"] == said
    assert case["output_sha256"] == sha(said)  # what sha256sum of the text gives
    # an older document's digest (of the JSON-encoded string) is still accepted as the output's
    assert output_digest_matches(said, sha256_of(said)) and output_digest_matches(said, sha(said))
    assert not output_digest_matches(said, sha("something else"))


def test_a_table_output_keeps_its_canonical_json_digest(tmp_path: Path) -> None:
    cfg = project(tmp_path, [{"id": "a", "input": {"say": "hi"}, "expected": "x"}], target="product29:table")
    _, doc = run(cfg)
    case = doc["suites"]["s"]["cases"][0]
    assert case["output_sha256"] == sha256_of({"text": "hi"})


# ---------------------------------------------------------------------------- 6. validate: digests and spans

EVIDENCE = '[[suites.s.require.digests]]\npath = "input.evidence"\n'
CASE_CLAIMS = '[suites.s.require.claims]\npath = "expected.claims"\ntext_path = "metadata.output.text"\n'


def _case(cid: str, evidence: str, digest: str, claim: dict[str, Any]) -> dict[str, Any]:
    out = "The catch block is empty. Errors are logged."
    return {"id": cid, "input": {"say": out, "evidence": [{"text": evidence, "sha256": digest}]},
            "expected": {"claims": [claim]}, "metadata": {"output": {"text": out, "sha256": sha(out)}}}


GOOD_CLAIM = {"id": "c1", "start": 0, "end": 24, "text": "The catch block is empty"}


def test_validate_accepts_exact_digests_and_spans(tmp_path: Path) -> None:
    ev = "catch (IOException e) { log(e); return 0; }"
    cfg = project(tmp_path, [_case("a", ev, sha(ev), GOOD_CLAIM)], require=EVIDENCE + CASE_CLAIMS)
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("bad", "says"), [
    ("digest", "error: cases.jsonl:2: case 'b': input.evidence[0].sha256: SHA-256 "),
    ("json_digest", "(it is the digest of the JSON-encoded text, not of its bytes) (require.digests)"),
    ("span_text", "error: cases.jsonl:2: case 'b': expected.claims[0]: its text is not the output's characters 0–24 "
                  "(require.claims) (suite 's')"),
    ("span_offsets", "error: cases.jsonl:2: case 'b': expected.claims[0]: start/end must be offsets inside "
                     "metadata.output.text (0 ≤ start < end ≤ 44)"),
])
def test_validate_refuses_a_wrong_digest_or_span_naming_file_and_line(tmp_path: Path, bad: str, says: str) -> None:
    ev = "catch (IOException e) { log(e); return 0; }"
    digest = {"digest": sha(ev + " "), "json_digest": hashlib.sha256(json.dumps(ev).encode()).hexdigest()}.get(bad, sha(ev))
    claim = {"span_text": {**GOOD_CLAIM, "text": "The catch block is EMPTY"},
             "span_offsets": {**GOOD_CLAIM, "end": 99}}.get(bad, GOOD_CLAIM)
    cfg = project(tmp_path, [_case("a", ev, sha(ev), GOOD_CLAIM), _case("b", ev, digest, claim)],
                  require=EVIDENCE + CASE_CLAIMS)
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2
    assert says in one_line(result)
    ran, doc = run(cfg)  # and the run: refused before any call, nothing written
    assert ran.exit_code == 2 and not doc


def test_claims_over_the_output_are_checked_on_each_reply_per_case(tmp_path: Path) -> None:
    out = "The catch block is empty."
    rows = [{"id": "good", "input": {"say": out}, "expected": {"claims": [GOOD_CLAIM]}},
            {"id": "bad", "input": {"say": out}, "expected": {"claims": [{**GOOD_CLAIM, "text": "The catch block is full"}]}}]
    cfg = project(tmp_path, rows, require='[suites.s.require.claims]\npath = "expected.claims"\ntext_path = "output"\n')
    _, doc = run(cfg)
    by_id = {c["case_id"]: c for c in doc["suites"]["s"]["cases"]}
    assert by_id["good"]["status"] != "errored"
    assert by_id["bad"]["status"] == "errored"
    assert by_id["bad"]["error"] == {"type": "ClaimSpanError", "message":
                                     "expected.claims[0]: its text is not the output's characters 0–24 (require.claims)"}


# ---------------------------------------------------------------------------- 8. scrubbing keeps spans true

RUBRIC = '''text = "Rate each claim."
[claims]
path = "expected.claims"
text_path = "output.text"
[claims.fields.truth]
values = ["true", "false"]
'''


def test_a_scrubbed_output_keeps_its_claims_true_and_refuses_only_the_case_quoting_the_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H29_API_KEY", SECRET)
    original = "Key " + SECRET + ". The retry count is 3."
    at = original.index("The retry count is 3")
    rows = [
        {"id": "offsets", "input": {"n": 1}, "expected": {"claims": [{"id": "c1", "start": at, "end": at + 20}]}},
        {"id": "quoted", "input": {"n": 2}, "expected": {"claims": [{"id": "c1", "start": 0, "end": at - 2,
                                                                      "text": original[:at - 2]}]}},
        {"id": "after", "input": {"n": 3}, "expected": {"claims": [{"id": "c1", "start": at, "end": at + 20,
                                                                     "text": "The retry count is 3"}]}},
        {"id": "across", "input": {"n": 4}, "expected": {"claims": [{"id": "c1", "start": 0, "end": at - 2}]}},
    ]
    cfg = project(tmp_path, rows, target="product29:leaky", judged=True)
    _, doc = run(cfg)
    by_id = {c["case_id"]: c for c in doc["suites"]["s"]["cases"]}
    assert by_id["offsets"]["output"] == {"text": "Key [REDACTED]. The retry count is 3."}
    assert by_id["offsets"]["scrubbed"] == {"text": [[4, 4 + len(SECRET)]]}
    assert SECRET not in (tmp_path / "runs" / f"{doc['run_id']}.json").read_text()
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    out = tmp_path / "requests.json"
    result = runner.invoke(app, ["export-requests", doc["run_id"], "--config", str(cfg), "--runs-dir",
                                 str(tmp_path / "runs"), "--rubric", str(rubric), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "left out s/case quoted: expected.claims[0]: claim 'c1' quotes text a secret scrub cut from the output" \
        in result.stderr
    assert "left out 1 whose claims quote scrubbed text" in result.stderr
    requests = json.loads(out.read_text())["requests"]
    assert len(requests) == 3
    # offsets only, reaching into the cut: the span covers the whole marker
    assert sorted(r["claims"][0]["text"] for r in requests) == ["Key [REDACTED]", "The retry count is 3",
                                                               "The retry count is 3"]
    for r in requests:
        (claim,) = r["claims"]
        if claim["text"] == "Key [REDACTED]":
            continue
        assert claim["text"] == "The retry count is 3"  # not '. The retry count is'
        assert r["output"]["text"][claim["start"]:claim["end"]] == "The retry count is 3"
    assert SECRET not in out.read_text() and "quoted" not in out.read_text()
    # a rejudged run replays the stored output: it keeps where the scrub cut
    again = runner.invoke(app, ["rejudge", doc["run_id"], "--all", "--config", str(cfg), "--runs-dir",
                                str(tmp_path / "runs"), "-q"])
    assert again.exit_code in (0, 1), again.output
    (newer,) = [p for p in (tmp_path / "runs").glob("*.json") if p.stem not in (doc["run_id"],)
                and not p.name.endswith(".labels.json")]
    cases = {c["case_id"]: c for c in json.loads(newer.read_text())["suites"]["s"]["cases"]}
    assert cases["offsets"]["scrubbed"] == {"text": [[4, 4 + len(SECRET)]]}
    assert cases["offsets"]["status"] == by_id["offsets"]["status"]


def test_the_feedback_example_checks_its_evidence_digests(tmp_path: Path) -> None:
    import shutil

    repo = Path(__file__).resolve().parents[1] / "examples" / "feedback"
    root = tmp_path / "feedback"
    shutil.copytree(repo, root, ignore=shutil.ignore_patterns("__pycache__", "eval_runs"))
    assert runner.invoke(app, ["validate", "--config", str(root / "evalh.toml")]).exit_code == 0
    lines = (root / "cases.jsonl").read_text().splitlines()
    case = json.loads(lines[1])
    case["input"]["evidence"][0]["text"] += " "  # the exported text changed, its digest did not
    lines[1] = json.dumps(case)
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["validate", "--config", str(root / "evalh.toml")])
    assert result.exit_code == 2
    line = one_line(result)
    assert line == ("error: cases.jsonl:2: case 'feedback.t44': input.evidence[0].sha256: SHA-256 55df4b2f4450… is "
                    "not the text's (bb9ba1be370f…) (require.digests) (suite 'feedback')")
    assert line in (Path(__file__).resolve().parents[1] / "docs" / "labels-and-sweeps.md").read_text()  # as the page says
