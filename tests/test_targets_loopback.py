"""Model targets (templates, JSON output, tokens, cost, trace, cache), the http target,
and the shipped `scenarios`, `scenarios_model` and `live` suites, run through the CLI
against the loopback mock provider (nothing here calls a real provider)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.errors import ConfigError
from evalh.mock import MockProvider
from evalh.models import Case
from evalh.targets.model import ModelTargetConfig, build, parse_json_reply
from evalh.targets.templates import TemplateError

SECRET = "sk-ant-verysecret-0123456789abcdef"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own response cache (never the repository's .evalh/cache)."""
    path = tmp_path / "response-cache"
    monkeypatch.setenv("EVALH_CACHE_DIR", str(path))
    return path


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    script = [
        {"match": "capital of France", "text": "Paris"},
        {"match": "as json", "text": '```json\n{"answer": 42}\n```'},
        {"match": "not json", "text": "Sure! Here you go: 42"},
        {"match": "weather", "text": "Checking.", "tool_calls": [{"name": "get_weather", "input": {"city": "Oslo"}}]},
    ]
    with MockProvider(script) as provider:
        yield provider


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write_project(root: Path, toml: str, datasets: dict[str, list[dict[str, Any]]]) -> Path:
    (root / "evalh.toml").write_text(toml, encoding="utf-8")
    for name, cases in datasets.items():
        (root / name).write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return root / "evalh.toml"


def run_config(cfg: Path, *args: str) -> tuple[Result, dict[str, Any] | None, bytes]:
    runs = cfg.parent / "runs"
    before = set(runs.glob("*.json")) if runs.is_dir() else set()
    result = invoke("run", "--config", str(cfg), "--runs-dir", str(runs), *args)
    new = sorted(set(runs.glob("*.json")) - before) if runs.is_dir() else []
    if not new:
        return result, None, b""
    raw = new[-1].read_bytes()
    return result, json.loads(raw), raw


def cases_of(doc: dict[str, Any], suite: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(c["case_id"], c["attempt"]): c for c in doc["suites"][suite]["cases"]}


CASE = Case(id="c1", input={"question": "capital of France?"}, expected="Paris",
            metadata={"split": "dev", "tags": ["geo"]})


def model_config(**kw: Any) -> ModelTargetConfig:
    fields: dict[str, Any] = {"kind": "anthropic", "model": "claude-haiku-4-5", "prompt": "{{ input.question }}"}
    fields.update(kw)
    return ModelTargetConfig.model_validate(fields)


# --- templates -------------------------------------------------------------------------


def test_templates_see_input_and_case_but_not_expected(tmp_path: Path) -> None:
    target = build(model_config(
        system="Case {{ case.id }} ({{ case.metadata.split }}, {{ case.metadata.tags | join(',') }})",
        prompt="Q: {{ input.question }}",
    ), tmp_path)
    system, messages = target.render(CASE)
    assert system == "Case c1 (dev, geo)"
    assert messages == [{"role": "user", "content": "Q: capital of France?"}]
    leaky = build(model_config(prompt="{{ input.question }} (answer: {{ expected }})"), tmp_path)
    with pytest.raises(TemplateError, match="template `prompt`.*'expected' is undefined"):
        leaky.render(CASE)


def test_missing_variable_is_an_error_naming_the_template(tmp_path: Path) -> None:
    target = build(model_config(messages=[
        {"role": "user", "content": "{{ input.question }}"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and {{ input.followup }}?"},
    ], prompt=None), tmp_path)
    with pytest.raises(TemplateError, match=r"template `messages\[2\]`.*followup"):
        target.render(CASE)


def test_sandbox_refuses_reaching_into_python(tmp_path: Path) -> None:
    target = build(model_config(prompt="{{ input.__class__.__mro__[1].__subclasses__() }}"), tmp_path)
    with pytest.raises(TemplateError):
        target.render(CASE)


def test_bad_model_target_configs_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly one of `prompt`"):
        model_config(messages=[{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="contradicts"):
        model_config(provider="openai")
    with pytest.raises(TemplateError, match="template `prompt` line 1"):
        build(model_config(prompt="{{ input.question "), Path("."))
    cfg = model_config(api_key_env="MY_KEY")
    assert cfg.requires_env() == ["MY_KEY"] and cfg.model_id() == "claude-haiku-4-5"
    assert model_config(base_url="mock:x.json").requires_env() == []


def test_json_replies_are_parsed_fence_or_not() -> None:
    assert parse_json_reply('{"a": 1}') == {"a": 1}
    assert parse_json_reply('```json\n[1, 2]\n```') == [1, 2]
    with pytest.raises(Exception, match="not valid JSON.*cut at max_tokens"):
        parse_json_reply('{"a": ', truncated=True)


# --- a model suite through the CLI ---------------------------------------------------------

MODEL_TOML = """\
[evalh]
concurrency = 4
timeout_s = 10

[suites.qa]
dataset = "qa.jsonl"
regime = "stochastic"
repeats = 2
scorers = [{{ type = "contains" }}]

[suites.qa.target]
kind = "{kind}"
model = "{model}"
base_url = "{base_url}"
api_key_env = "EVALH_TEST_KEY"
system = "Answer briefly."
prompt = "{{{{ input.question }}}}"
output = "{output}"
backoff_base_s = 0.001

[suites.qa.target.params]
top_p = 0.5
"""

QA_CASES = [
    {"id": "paris", "input": {"question": "What is the capital of France?"}, "expected": "Paris"},
    {"id": "tools", "input": {"question": "What is the weather in Oslo?"}, "expected": "Checking"},
]


def model_project(root: Path, mp: MockProvider, kind: str = "anthropic", *, model: str = "claude-haiku-4-5",
                  output: str = "text", cases: list[dict[str, Any]] | None = None) -> Path:
    base_url = mp.base_url if kind == "anthropic" else mp.openai_base_url
    toml = MODEL_TOML.format(kind=kind, model=model, base_url=base_url, output=output)
    return write_project(root, toml, {"qa.jsonl": cases or QA_CASES})


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_model_suite_records_usage_cost_trace_and_limits(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", SECRET)
    cfg = model_project(tmp_path, mp, kind)
    mp.inject("rate_limit", retry_after=0.01)
    result, doc, raw = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert doc is not None
    suite = doc["suites"]["qa"]
    assert suite["aggregate"]["passed"] == 4 and suite["aggregate"]["cached"] == 0
    c = cases_of(doc, "qa")
    paris = c[("paris", 0)]
    assert paris["output"] == "Paris" and paris["tokens_in"] > 0 and paris["tokens_out"] == 1
    assert paris["cost_usd"] == pytest.approx((paris["tokens_in"] * 1.0 + paris["tokens_out"] * 5.0) / 1e6)
    assert c[("tools", 1)]["trace"][0]["name"] == "get_weather"
    assert c[("tools", 1)]["trace"][0]["input"] == {"city": "Oslo"}
    (limits,) = doc["limits"].values()
    assert limits["rate_limited"] == 1 and limits["retries"] == 1 and limits["requests"] == 5
    assert doc["config"]["suites"]["qa"]["target"]["params"] == {"top_p": 0.5}
    assert SECRET.encode() not in raw  # the key value never reaches the document
    assert doc["config"]["suites"]["qa"]["target"]["api_key_env"] == "EVALH_TEST_KEY"
    sent = [r for r in mp.requests if r.body and r.body.get("top_p") == 0.5]
    assert len(sent) == 5  # every request carried the params (the 429'd one too)


def test_second_run_is_served_from_the_cache_and_no_cache_bypasses_it(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    cfg = model_project(tmp_path, mp)
    first, doc1, _ = run_config(cfg)
    assert first.exit_code == 0, first.output
    assert mp.count() == 4  # 2 cases × 2 repeats: repeats are distinct cache entries
    second, doc2, _ = run_config(cfg)
    assert second.exit_code == 0 and doc2 is not None
    assert mp.count() == 4  # nothing asked again
    agg = doc2["suites"]["qa"]["aggregate"]
    assert agg["cached"] == 4 and agg["cost_usd"] == 0 and agg["latency_ms_p50"] is None
    assert all(c["cached"] and c["cost_usd"] == 0 for c in doc2["suites"]["qa"]["cases"])
    third, doc3, _ = run_config(cfg, "--no-cache")
    assert third.exit_code == 0 and doc3 is not None
    assert mp.count() == 8 and doc3["suites"]["qa"]["aggregate"]["cached"] == 0


def test_unpriced_model_cost_is_null_not_zero(mp: MockProvider, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    cfg = model_project(tmp_path, mp, model="house-model-7b")
    result, doc, _ = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert doc is not None
    agg = doc["suites"]["qa"]["aggregate"]
    assert agg["cost_usd"] is None and agg["cost_unknown"] == 4 and agg["tokens_in"] > 0
    # a price in the config makes it known
    cfg.write_text(cfg.read_text() + '\n[prices."house-model-7b"]\ninput = 1000000\noutput = 0\n')
    result, doc, _ = run_config(cfg, "--no-cache")
    assert doc is not None
    case = doc["suites"]["qa"]["cases"][0]
    assert case["cost_usd"] == pytest.approx(case["tokens_in"])


def test_json_output_unparseable_reply_errors_the_case(mp: MockProvider, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    cases = [{"id": "ok", "input": {"question": "as json please"}, "expected": "42"},
             {"id": "bad", "input": {"question": "not json please"}, "expected": "42"}]
    cfg = model_project(tmp_path, mp, output="json", cases=cases)
    result, doc, _ = run_config(cfg)
    assert doc is not None
    c = cases_of(doc, "qa")
    assert c[("ok", 0)]["output"] == {"answer": 42} and c[("ok", 0)]["status"] == "passed"
    bad = c[("bad", 0)]
    assert bad["status"] == "errored" and "not valid JSON" in bad["error"]["message"]
    assert "Sure! Here you go" in bad["error"]["message"]


def test_missing_key_fails_fast_with_one_line(mp: MockProvider, tmp_path: Path) -> None:
    cfg = model_project(tmp_path, mp)
    result, doc, _ = run_config(cfg, "--suite", "qa")
    assert result.exit_code == 2 and doc is None
    assert result.stderr.strip().count("\n") == 0
    assert "EVALH_TEST_KEY" in result.stderr and "set" in result.stderr
    assert mp.count() == 0


def test_a_missing_variable_errors_only_that_case(mp: MockProvider, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    cases = [QA_CASES[0], {"id": "odd", "input": {"text": "no question here"}, "expected": "x"}]
    cfg = model_project(tmp_path, mp, cases=cases)
    result, doc, _ = run_config(cfg)
    assert doc is not None
    odd = cases_of(doc, "qa")[("odd", 0)]
    assert odd["status"] == "errored" and odd["error"]["type"] == "TemplateError"
    assert "template `prompt`" in odd["error"]["message"] and "question" in odd["error"]["message"]
    assert cases_of(doc, "qa")[("paris", 0)]["status"] == "passed"


# --- the http target -------------------------------------------------------------------------

HTTP_TOML = """\
[evalh]
concurrency = 2
timeout_s = 10

[suites.product]
dataset = "product.jsonl"
scorers = [{{ type = "contains" }}]

[suites.product.target]
kind = "http"
url = "{url}"
{body}
headers = {{ "X-Product-Token" = "Bearer ${{PRODUCT_TOKEN}}" }}
output_field = "output"
trace_field = "tool_calls"
usage_field = "usage"
model = "claude-haiku-4-5"
backoff_base_s = 0.001
"""

PRODUCT_CASES = [{"id": "p1", "input": {"question": "capital of France?"}, "expected": "Paris"}]


def http_project(root: Path, mp: MockProvider, body: str = "") -> Path:
    toml = HTTP_TOML.format(url=mp.base_url + "/v1/product/answer", body=body)
    return write_project(root, toml, {"product.jsonl": PRODUCT_CASES})


def test_http_target_posts_the_case_and_reads_fields(mp: MockProvider, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRODUCT_TOKEN", SECRET)
    cfg = http_project(tmp_path, mp)
    result, doc, raw = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert doc is not None
    (rec,) = mp.requests
    assert rec.body == {"input": {"question": "capital of France?"}}  # the default body
    assert rec.headers["x-product-token"] == f"Bearer {SECRET}"  # ${VAR} expanded when sent
    assert rec.headers["x-evalh-run-id"] == doc["run_id"] and rec.headers["x-evalh-case-id"] == "p1"
    case = doc["suites"]["product"]["cases"][0]
    assert case["output"] == "Paris" and case["status"] == "passed"
    assert case["tokens_in"] > 0 and case["cost_usd"] is not None
    target = doc["config"]["suites"]["product"]["target"]
    assert "headers" not in target and target["url"].endswith("/v1/product/answer")
    assert SECRET.encode() not in raw and b"PRODUCT_TOKEN" not in raw


def test_http_target_body_template_and_retries(mp: MockProvider, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    cfg = http_project(tmp_path, mp, body="""body = '{"q": {{ input.question | tojson }}, "id": {{ case.id | tojson }}}'""")
    mp.inject("server_error")
    result, doc, _ = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert [r.body for r in mp.requests] == [{"q": "capital of France?", "id": "p1"}] * 2


@pytest.mark.parametrize(("fault", "expect"), [("server_error", "HTTP 500"), ("malformed_json", "not JSON")])
def test_http_target_failures_error_the_case_with_status_and_excerpt(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, expect: str
) -> None:
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    cfg = http_project(tmp_path, mp)
    mp.inject(fault, times=10)
    result, doc, _ = run_config(cfg)
    assert result.exit_code == 1 and doc is not None
    case = doc["suites"]["product"]["cases"][0]
    assert case["status"] == "errored" and expect in case["error"]["message"]
    assert "{" in case["error"]["message"]  # a short excerpt of the body


def test_http_target_needs_its_header_variables(mp: MockProvider, tmp_path: Path) -> None:
    cfg = http_project(tmp_path, mp)
    result, doc, _ = run_config(cfg, "--suite", "product")
    assert result.exit_code == 2 and doc is None and "PRODUCT_TOKEN" in result.stderr


def test_http_target_url_must_be_http(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, HTTP_TOML.format(url="file:///etc/passwd", body=""), {"product.jsonl": PRODUCT_CASES})
    from evalh.config import load_config

    with pytest.raises(ConfigError, match="suites.product.target.url"):
        load_config(cfg)


# --- the shipped suites ----------------------------------------------------------------------


def test_scenarios_suites_pin_the_products_behaviour(repo_root: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)  # present, and must never be written down
    runs = tmp_path / "runs"
    args = ["run", "--config", str(repo_root / "evalh.toml"), "--runs-dir", str(runs),
            "--suite", "scenarios", "--suite", "scenarios_model"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    (path,) = runs.glob("*.json")
    raw = path.read_bytes()
    assert SECRET.encode() not in raw
    doc = json.loads(raw)
    c = {k[0]: v for k, v in cases_of(doc, "scenarios").items()}
    assert all(v["status"] == "passed" for v in c.values()), {k: v["scores"] for k, v in c.items()}
    # a retry that repairs a bad reply: two billed calls, the second answer delivered
    repair = c["scenarios.repair"]
    assert repair["output"]["status"] == "answered" and repair["output"]["attempts"] == 2
    assert [t["verdict"] for t in repair["trace"] if t["tool"] == "citecheck"] == ["reject", "accept"]
    assert "$2.3B" in repair["output"]["answer"]
    # a persistent bad reply: rejected, booked $0, the provider's spend still recorded
    persistent = c["scenarios.persistent"]
    assert persistent["output"] == {**persistent["output"], "status": "rejected", "answer": None, "booked": False}
    assert persistent["tokens_in"] > 0 and persistent["cost_usd"] > 0
    # an upstream failure fails closed and nothing was billed
    outage = c["scenarios.outage"]
    assert outage["output"]["status"] == "unavailable" and outage["output"]["answer"] is None
    assert outage["tokens_in"] == 0 and outage["cost_usd"] == 0
    assert outage["trace"][0]["status"] == 500
    assert c["scenarios.truncated"]["output"]["reasons"] == ["answer cut at max_tokens"]

    m = cases_of(doc, "scenarios_model")
    assert all(v["status"] == "passed" for v in m.values())
    for case_id in ("model.echo", "model.rate_limited", "model.overloaded", "model.tool"):
        pair = [m[(case_id, 0)], m[(case_id, 1)]]  # cache_repeats: one call, one cache hit
        assert sorted(r["cached"] for r in pair) == [False, True]
        assert [r["cost_usd"] for r in pair if r["cached"]] == [0.0]
    assert not m[("model.truncated", 0)]["cached"] and not m[("model.truncated", 1)]["cached"]
    assert m[("model.truncated", 0)]["truncated"]
    assert m[("model.tool", 0)]["trace"][0]["name"] == "lookup"
    (limits,) = doc["limits"].values()
    assert limits["rate_limited"] == 1 and limits["retries"] == 2

    again = invoke(*args)  # the disk cache now serves every complete reply
    assert again.exit_code == 0, again.output
    doc2 = json.loads(max(runs.glob("*.json")).read_bytes())
    assert doc2["suites"]["scenarios_model"]["aggregate"]["cached"] == 8


def test_run_without_a_key_skips_live_by_name(repo_root: Path, tmp_path: Path) -> None:
    toml = f"""\
[suites.gate]
dataset = "{(repo_root / 'datasets/gate.jsonl').as_posix()}"
target = "examples.citecheck:check"
scorers = [{{ type = "exact", field = "verdict" }}]

[suites.live]
dataset = "{(repo_root / 'datasets/live.jsonl').as_posix()}"
target = "examples.answerer:live"
regime = "stochastic"
requires_env = ["ANTHROPIC_API_KEY"]
"""
    cfg = write_project(tmp_path, toml, {})
    result, doc, _ = run_config(cfg, "-q")
    # the run is written, but it did not measure a suite of its config: never green
    assert result.exit_code == 1, result.output
    assert "skipped suite 'live'" in result.stderr and "ANTHROPIC_API_KEY" in result.stderr
    assert ("suite live was not run (skipped: needs ANTHROPIC_API_KEY): the run did not measure it"
            in result.stderr)
    assert doc is not None and list(doc["suites"]) == ["gate"]
    assert doc["config"]["suites_not_run"] == {
        "live": {"cause": "missing_key", "text": "skipped: needs ANTHROPIC_API_KEY"}}
    result, _, _ = run_config(cfg, "-q", "--suite", "gate")  # naming what to run is a choice
    assert result.exit_code == 0, result.output


def test_live_suite_without_a_key_exits_2_saying_what_to_set(repo_root: Path, tmp_path: Path) -> None:
    result = invoke("run", "--config", str(repo_root / "evalh.toml"), "--runs-dir", str(tmp_path),
                    "--suite", "live")
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "set" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert not list(tmp_path.glob("*.json"))


def test_answerer_against_the_mock_without_evalh(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The product itself, driven directly: what the scenarios suite scores."""
    from examples import answerer

    cases = {json.loads(line)["id"]: json.loads(line) for line in
             (repo_root / "datasets/scenarios.jsonl").read_text().splitlines()}
    with MockProvider(answerer.SCRIPT) as server:
        monkeypatch.setenv("EVALH_SCENARIOS_BASE_URL", server.base_url)

        async def ask(case_id: str) -> Any:
            return await answerer.scenario(cases[case_id]["input"])

        out = asyncio.run(ask("scenarios.uncited_repair"))
        assert out.output["status"] == "answered" and out.output["attempts"] == 2
        assert out.trace[1]["reasons"] == ["uncited number '1.52 million'"]
        assert server.count() == 2


def test_mock_provider_command_refuses_a_missing_script_or_a_taken_port(tmp_path: Path) -> None:
    import socket

    missing = invoke("mock-provider", "--port", "0", "--script", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "nope.json" in missing.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = invoke("mock-provider", "--port", str(sock.getsockname()[1]))
    assert taken.exit_code == 2 and "cannot listen" in taken.stderr


def test_a_header_value_echoed_by_the_product_is_scrubbed(mp: MockProvider, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A header value from a variable whose name does not look secret (so the environment
    scrub alone would miss it) is still kept out of the run document when echoed back."""
    leaked = "hunter2-0123456789-passphrase"
    toml = HTTP_TOML.format(url=mp.base_url + "/v1/product/answer", body="").replace(
        "PRODUCT_TOKEN", "PRODUCT_PHRASE")
    cfg = write_project(tmp_path, toml, {"product.jsonl": PRODUCT_CASES})
    monkeypatch.setenv("PRODUCT_PHRASE", leaked)
    mp.set_script([{"match": "capital of France", "text": f"Paris (your header was {leaked})"}])
    result, doc, raw = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert doc is not None and doc["suites"]["product"]["cases"][0]["output"].startswith("Paris")
    assert leaked.encode() not in raw and b"[REDACTED]" in raw


def test_http_body_credentials_come_from_the_environment_and_never_reach_the_run(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key the product expects in the body: `${VAR}` is expanded when sent and scrubbed
    if echoed; a key written literally in the template is redacted from the snapshot."""
    from_env = "bodysecret-0123456789-phrase"
    literal = "LITERALPW-9876543210"
    body = ("""body = '{"q": {{ input.question | tojson }}, "auth_key": "${BODY_PHRASE}", """
            f""""password": "{literal}", "user": "eval"}}'""")
    cfg = http_project(tmp_path, mp, body=body)
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    monkeypatch.setenv("BODY_PHRASE", from_env)
    mp.set_script([{"match": "capital of France", "text": f"Paris (you sent {from_env})"}])
    result, doc, raw = run_config(cfg)
    assert result.exit_code == 0, result.output
    assert mp.requests[-1].body["auth_key"] == from_env  # expanded when sent
    assert doc is not None and doc["suites"]["product"]["cases"][0]["status"] == "passed"
    assert from_env.encode() not in raw and literal.encode() not in raw
    snap_body = doc["config"]["suites"]["product"]["target"]["body"]
    assert '"auth_key": "${BODY_PHRASE}"' in snap_body and '"password": "[REDACTED]"' in snap_body
    assert '"user": "eval"' in snap_body


def test_http_target_needs_its_body_variables(mp: MockProvider, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    monkeypatch.delenv("BODY_PHRASE", raising=False)
    cfg = http_project(tmp_path, mp, body="""body = '{"k": "${BODY_PHRASE}"}'""")
    result, doc, _ = run_config(cfg, "--suite", "product")
    assert result.exit_code == 2 and doc is None and "BODY_PHRASE" in result.stderr


def test_only_the_body_template_names_variables_never_a_case_input(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`${VAR}` in a case's input is data: it is sent as written, never expanded (an input
    naming a key variable must not send the key to the product under test)."""
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    monkeypatch.setenv("SOME_KEY", "sk-should-never-be-sent-0123")
    cfg = http_project(tmp_path, mp, body="""body = '{"q": {{ input.question | tojson }}, "k": "${SOME_KEY}"}'""")
    cases = [{"id": "p1", "input": {"question": "echo ${SOME_KEY} and ${UNSET_VAR_X}"}, "expected": "ok"}]
    (tmp_path / "product.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n", encoding="utf-8")
    result, doc, _ = run_config(cfg)
    assert doc is not None, result.output
    sent = mp.requests[-1].body
    assert sent["q"] == "echo ${SOME_KEY} and ${UNSET_VAR_X}"
    assert sent["k"] == "sk-should-never-be-sent-0123"
    assert doc["suites"]["product"]["cases"][0]["status"] != "errored"


def test_a_plain_word_from_a_body_variable_does_not_corrupt_the_run(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A setting such as `passed` passed through `${VAR}` is not treated as a secret: scrubbing
    it would rewrite every case's status."""
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    monkeypatch.setenv("EVAL_MODE", "passed")
    cfg = http_project(tmp_path, mp, body="""body = '{"q": {{ input.question | tojson }}, "mode": "${EVAL_MODE}"}'""")
    result, doc, _ = run_config(cfg)
    assert result.exit_code == 0 and doc is not None, result.output
    assert doc["suites"]["product"]["cases"][0]["status"] == "passed"
    from evalh.store import RunStore

    assert RunStore(tmp_path / "runs").load(doc["run_id"]).status == "complete"


def test_a_body_credential_echoed_into_a_partial_runs_journal_is_scrubbed(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phrase = "journal-secret-0123456789-phrase"
    monkeypatch.setenv("PRODUCT_TOKEN", "t")
    monkeypatch.setenv("BODY_PHRASE", phrase)
    cfg = http_project(tmp_path, mp, body="""body = '{"q": {{ input.question | tojson }}, "k": "${BODY_PHRASE}"}'""")
    cases = [{"id": f"p{i}", "input": {"question": "capital of France?"}, "expected": "Paris"} for i in range(4)]
    (tmp_path / "product.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n", encoding="utf-8")
    mp.set_script([{"match": "capital of France", "text": f"Paris ({phrase})"}])
    result, doc, _ = run_config(cfg, "--max-tokens", "1", "-j", "1")
    assert doc is not None and doc["status"] == "partial", result.output
    journal = next((tmp_path / "runs").glob("*.journal.jsonl")).read_bytes()
    assert b"Paris" in journal and phrase.encode() not in journal
