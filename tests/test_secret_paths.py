"""Three credential paths that reached files evalh writes (issue 27, items 7-9), each through
separate `evalh` processes against the loopback mock, which echoes the request it received
(path with its query, every header, the JSON body):

* a model `base_url` with a query (`http://gateway/v1?api_key=…`): the query stays the
  query of every request (not glued before `/chat/completions`), and its values are
  credentials;
* a literal value of a credential-named key in an HTTP target's body template;
* a generator key the provider echoes into the cases `evalh generate -o` and `evalh run`
  write.

After each, no secret value is in any file under the project nor in any output of any
command, in every format: the run document, JUnit of `run` and `compare`, `show` (table and
JSON), `report` (table, markdown, JSON, HTML), `compare` (table, markdown, JSON) and the
pages' API.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from evalh.mock import MockProvider
from tests.test_secret_scan import Project, _cases, ui_api

MODEL_KEY = f"sk-model-{secrets.token_hex(12)}"
QUERY_KEY = f"gw-query-{secrets.token_hex(12)}"
BODY_LITERAL = f"literal-{secrets.token_hex(12)}"
BEARER_LITERAL = f"bearer-lit-{secrets.token_hex(12)}"
GEN_KEY = f"gen-access-{secrets.token_hex(12)}"
SECRETS = {"model key": MODEL_KEY, "base_url ?api_key=": QUERY_KEY, "body literal": BODY_LITERAL,
           "body bearer literal": BEARER_LITERAL, "generator key": GEN_KEY}
ENV = {"ANTHROPIC_API_KEY": MODEL_KEY, "OPENAI_API_KEY": MODEL_KEY, "GEN_ACCESS": GEN_KEY}


def _every_format(p: Project, a: str, b: str) -> None:
    """Every command and format that shows a run or a comparison of two."""
    p.evalh_each(
        (("show", a), (0,)), (("show", a, "--json"), (0,)),
        (("report", a, b), (0,)), (("report", a, b, "--format", "md"), (0,)),
        (("report", a, b, "--format", "json"), (0,)),
        (("report", a, b, "--format", "html", "-o", "report.html"), (0,)),
        (("compare", a, b), (0, 1, 3)), (("compare", a, b, "--format", "markdown"), (0, 1, 3)),
        (("compare", a, b, "--format", "json", "--junit-xml", "compare.xml"), (0, 1, 3)),
    )


def _assert_nothing_leaked(p: Project, extra: list[tuple[str, str]]) -> None:
    files = [f for f in sorted(p.root.rglob("*")) if f.is_file() and f.name != "evalh.toml"]
    hits = [(what, str(f.relative_to(p.root))) for f in files for what, value in SECRETS.items()
            if value.encode() in f.read_bytes()]
    hits += [(what, f"output of `evalh {cmd}`") for cmd, out in [*p.outputs, *extra]
             for what, value in SECRETS.items() if value in out]
    assert hits == []


def _project(tmp_path: Path, toml: str) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    (root / "evalh.toml").write_text(toml, encoding="utf-8")
    _cases(root, "cases.jsonl", [f"question {i}" for i in range(2)])
    return Project(root, ENV)


@pytest.mark.parametrize("where", ["config", "variable"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_model_base_url_query_stays_the_query_and_is_a_credential(tmp_path: Path, kind: str, where: str) -> None:
    """`base_url = "http://…/v1?api_key=…"` (or the provider's base URL variable): each
    request goes to `…/v1/chat/completions?api_key=…` (openai) or `…/v1/messages?api_key=…`
    (anthropic), and the key the gateway echoes is in no file and no output (it was in the
    run document, JUnit, HTML, `show --json`, `report --format json` and the pages' API)."""
    with MockProvider([{"text": "an answer", "echo": True}]) as mp:
        base = mp.openai_base_url if kind == "openai" else mp.base_url
        url = f"{base}?api_key={QUERY_KEY}&team=evals"
        configured = f'base_url = "{url}", ' if where == "config" else ""
        target = f'{{ kind = "{kind}", model = "m-1", {configured}prompt = "{{{{ input.q }}}}", max_retries = 0 }}'
        p = _project(tmp_path, f'[suites.s]\ndataset = "cases.jsonl"\nregime = "stochastic"\n'
                               f'target = {target}\nscorers = [{{ type = "contains" }}]\n')
        if where == "variable":  # OPENAI_BASE_URL / ANTHROPIC_BASE_URL stand in for base_url
            p.env[f"{kind.upper()}_BASE_URL"] = url
        a = p.run_json("--junit-xml", "run.xml")
        b = p.run_json("--no-cache")
        paths = [r.path for r in mp.requests]
    endpoint = "/v1/chat/completions" if kind == "openai" else "/v1/messages"
    assert paths == [endpoint] * 4, paths
    doc = json.loads((p.root / "eval_runs" / f"{a['run_id']}.json").read_text())
    cases = doc["suites"]["s"]["cases"]
    assert [c["status"] for c in cases] == ["passed", "passed"], cases
    echo = json.loads(cases[0]["output"].split("\n")[1])
    assert echo["path"] == f"{endpoint}?api_key=[REDACTED]&team=evals"  # sent as the query, scrubbed
    if where == "config":
        assert doc["config"]["suites"]["s"]["target"]["base_url"].endswith("?api_key=[REDACTED]&team=[REDACTED]")
    _every_format(p, str(a["run_id"]), str(b["run_id"]))
    _assert_nothing_leaked(p, ui_api(p.root, [str(a["run_id"]), str(b["run_id"])]))


def test_a_credential_literal_in_an_http_body_template_is_scrubbed(tmp_path: Path) -> None:
    """`"api_key": "literal-…"` written in the body template: the product echoes it; it
    reaches no file and no output (headers were scrubbed, the body was not)."""
    with MockProvider([{"endpoint": "product", "text": "an answer", "echo": True}]) as mp:
        body = ('{"q": {{ input.q | tojson }}, "api_key": "' + BODY_LITERAL + '", '
                '"auth": {"authorization": "Bearer ' + BEARER_LITERAL + '"}, "user": "evals-ci-runner"}')
        target = f"{{ kind = \"http\", url = \"{mp.base_url}/v1/product/answer\", body = '{body}', max_retries = 0 }}"
        p = _project(tmp_path, f'[suites.s]\ndataset = "cases.jsonl"\nregime = "stochastic"\n'
                               f'target = {target}\nscorers = [{{ type = "contains" }}]\n')
        a = p.run_json("--junit-xml", "run.xml")
        b = p.run_json()
        sent = mp.requests[0].body
    assert sent["api_key"] == BODY_LITERAL and sent["auth"]["authorization"] == f"Bearer {BEARER_LITERAL}"
    doc = json.loads((p.root / "eval_runs" / f"{a['run_id']}.json").read_text())
    echo = json.loads(doc["suites"]["s"]["cases"][0]["output"].split("\n")[1])
    assert echo["body"]["api_key"] == "[REDACTED]" and echo["body"]["user"] == "evals-ci-runner"
    _every_format(p, str(a["run_id"]), str(b["run_id"]))
    _assert_nothing_leaked(p, ui_api(p.root, [str(a["run_id"]), str(b["run_id"])]))


GENERATE = """\
[suites.s]
regime = "stochastic"
target = "prod:answer"
scorers = [{{ type = "contains" }}]

[suites.s.generate]
count = 2
generator = {{ provider = "anthropic", model = "gen-1", base_url = "{base}", api_key_env = "GEN_ACCESS", max_retries = 0 }}
max_similarity = 1.0
max_chars = 20000

[[suites.s.generate.strategies]]
name = "free"
palette = ["rail", "housing"]
prompt = "Write one question about {{{{ topic }}}}."
"""


def test_a_generator_key_the_provider_echoes_is_not_written_to_generated_cases(tmp_path: Path) -> None:
    """The generator's reply quotes its request (its key in `authorization`): neither
    `generate -o generated.jsonl` nor `eval_runs/generated/*.jsonl` (a file people commit)
    holds the key."""
    with MockProvider([{"endpoint": "anthropic", "text": "which question?", "echo": True}]) as mp:
        p = _project(tmp_path, GENERATE.format(base=mp.base_url))
        (p.root / "prod.py").write_text("def answer(inp):\n    return str(inp)\n", encoding="utf-8")
        out = p.evalh("generate", "--suite", "s", "-o", "generated.jsonl").stdout
        run = p.run_json("--no-cache")
        assert mp.count() >= 4
    generated = (p.root / "generated.jsonl").read_text()
    assert "authorization" in generated and "Bearer [REDACTED]" in generated, generated[:500]  # it did echo
    frozen = sorted((p.root / "eval_runs" / "generated").glob("*.jsonl"))
    assert frozen and "Bearer [REDACTED]" in frozen[0].read_text()
    assert run["status"] == "complete", run
    _assert_nothing_leaked(p, [("generate", out)])


def test_which_config_values_are_registered_as_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credential-shaped places of evalh.toml are registered when it is read; evalh's own
    settings that end in `_key` (they name fields) and ordinary values are not."""
    from evalh import redact

    monkeypatch.setattr(redact, "_REGISTERED", set())
    monkeypatch.setenv("PLAIN_NAMED", "from-env-0123456789")
    monkeypatch.setenv("HDR_VALUE", "hdr-0123456789")
    tree = {"suites": {"s": {
        "target": {"kind": "openai", "base_url": "http://gw/v1?team=evals-0123&api_key=gw-0123456789",
                   "api_key_env": "PLAIN_NAMED", "params": {"api_key": "param-0123456789", "user": "some.user-42"}},
        "scorers": [{"type": "judge", "verdict_key": "answer.verdict", "text_key": "doc.text-1",
                     "headers": {"Authorization": "Bearer ${HDR_VALUE}"}}],
        "product": {"kind": "http", "url": "http://u:pw-0123456789@h/a?token=tok-0123456789&region=eu-west-1",
                    "body": '{"q": "{{ input.q }}", "api_key": "literal-0123456789", "user": "evals-ci-runner"}'},
    }}}
    redact.register_config_secrets(tree)
    registered = set(redact._REGISTERED)
    assert registered == {
        "evals-0123", "gw-0123456789", "from-env-0123456789", "param-0123456789", "hdr-0123456789",
        "Bearer hdr-0123456789", "pw-0123456789", "tok-0123456789", "literal-0123456789",
        "dTpwdy0wMTIzNDU2Nzg5",  # the Basic value of u:pw-…
    }
