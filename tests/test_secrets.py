"""Which values are secrets, and where they are kept out: the scrub rule (only credentials,
never a path, a short value or a word), the response cache, the HTTP target's URL
credentials and model targets with credentials in `base_url`. Through the CLI against the
loopback mock provider, which can echo the request it received (`echo = true`)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.mock import MockProvider
from evalh.models import sha256_of

KEY = "sk-ant-echoed-0123456789abcdef"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_project(root: Path, *args: str) -> tuple[Result, dict[str, Any] | None, bytes]:
    runs = root / "runs"
    before = set(runs.glob("*.json")) if runs.is_dir() else set()
    result = invoke("run", "--config", str(root / "evalh.toml"), "--runs-dir", str(runs), *args)
    new = sorted(set(runs.glob("*.json")) - before) if runs.is_dir() else []
    if not new:
        return result, None, b""
    raw = new[-1].read_bytes()
    return result, json.loads(raw), raw


def write(root: Path, toml: str, cases: list[dict[str, Any]], module: str = "") -> None:
    (root / "evalh.toml").write_text(toml, encoding="utf-8")
    (root / "d.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    if module:
        (root / "tgt.py").write_text(module, encoding="utf-8")


CASES = [{"id": f"c{i}", "input": {"q": f"question {i}"}, "expected": "x"} for i in range(2)]


def all_bytes(root: Path) -> bytes:
    """Every file under `root` but the config the test wrote (it holds a URL's credentials)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != "evalh.toml")


# ----------------------------------------------------------------------------- the rule


ENV_TARGET = '''\
import os

def echo(inp):
    return {"cwd": os.environ["PWD"], "sock": os.environ["SSH_AUTH_SOCK"],
            "session": os.environ["XDG_SESSION_ID"], "mode": os.environ["EVALH_AUTH_MODE"],
            "key": os.environ["ANTHROPIC_API_KEY"], "short": os.environ["SHORT_TOKEN"],
            "path": os.environ["GOOGLE_APPLICATION_CREDENTIALS"]}
'''


def test_only_credentials_are_scrubbed_and_the_digest_is_of_the_stored_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$PWD (the project path), a socket path, a session id and a setting are not secrets:
    they stay in the output as the product returned them. A key is replaced, and the output's
    digest is that of the output as stored, so the document verifies against itself."""
    creds = tmp_path / "creds.json"
    creds.write_text("{}")
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    monkeypatch.setenv("XDG_SESSION_ID", "session-20261201")
    monkeypatch.setenv("EVALH_AUTH_MODE", "interactive")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("SHORT_TOKEN", "abc123")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path, '[suites.s]\ndataset = "d.jsonl"\ntarget = "tgt:echo"\nscorers = [{ type = "exact" }]\n',
          CASES, ENV_TARGET)
    result, doc, raw = run_project(tmp_path)
    assert doc is not None, result.output
    case = doc["suites"]["s"]["cases"][0]
    assert case["output"] == {
        "cwd": str(tmp_path), "sock": str(tmp_path / "agent.sock"), "session": "session-20261201",
        "mode": "interactive", "key": "[REDACTED]", "short": "abc123",
        "path": str(creds),
    }
    assert KEY.encode() not in raw
    assert case["output_sha256"] == sha256_of(case["output"])


def test_the_rule_on_names_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.redact import is_credential_name, secret_env_values

    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "CLIENT_SECRET",
                 "STRIPE_KEY", "api_key", "SSH_PASSPHRASE", "SLACK_BOT_TOKEN", "AZURE_CREDENTIALS"):
        assert is_credential_name(name), name
    for name in ("PWD", "OLDPWD", "SSH_AUTH_SOCK", "XDG_SESSION_ID", "DBUS_SESSION_BUS_ADDRESS",
                 "EVALH_AUTH_MODE", "MAX_TOKENS", "TOKENIZERS_PARALLELISM", "KEYBOARD", "SIGNAL",
                 "HOME", "PATH", "MONKEY"):
        assert not is_credential_name(name), name
    monkeypatch.setenv("SOME_TOKEN", "/usr/local/lib")  # a path
    monkeypatch.setenv("OTHER_TOKEN", "Disabled")  # a word
    monkeypatch.setenv("THIRD_TOKEN", "/Zq8+xK2/long-base64-secret")  # starts with / but names nothing
    values = secret_env_values()
    assert "/usr/local/lib" not in values and "Disabled" not in values
    assert "/Zq8+xK2/long-base64-secret" in values


# ----------------------------------------------------------------------------- the mock echoes


def test_the_mock_echoes_the_request_it_received_credentials_included() -> None:
    import httpx

    with MockProvider([{"match": "who", "text": "you are", "echo": True},
                       {"match": "json", "json": {"a": 1}, "echo": True}]) as mp:
        reply = httpx.post(mp.base_url + "/v1/product/x?token=tok-0123456789",
                           json={"q": "who"}, headers={"Authorization": "Bearer sk-echo-0123456789"})
        text, line = reply.json()["output"].split("\n")
        assert text == "you are"
        echo = json.loads(line)
        assert echo["path"] == "/v1/product/x?token=tok-0123456789"
        assert echo["headers"]["authorization"] == "Bearer sk-echo-0123456789"
        obj = httpx.post(mp.base_url + "/v1/product", json={"q": "json"}).json()["output"]
        assert obj["a"] == 1 and obj["echo"]["path"] == "/v1/product"
        assert mp.requests[0].headers["authorization"] == "Bearer ***"  # the record stays masked


# ----------------------------------------------------------------------------- the response cache

ECHO_SCRIPT = [{"endpoint": "anthropic", "match": "question", "text": "an answer", "echo": True}]
JUDGE_KEY = "sk-openai-judge-0123456789abcdef"
CUSTOM_KEY = "custom-cred-0123456789abcdef"


def model_project(root: Path, mp: MockProvider, *, api_key_env: str = "", judge: bool = False) -> None:
    env = f', api_key_env = "{api_key_env}"' if api_key_env else ""
    scorers = '{ type = "contains" }'
    if judge:
        scorers += (f', {{ type = "judge", provider = "openai", model = "judge-1", base_url = "{mp.openai_base_url}", '
                    'rubric = "is it right?", max_retries = 0 }')
    write(root, f'[suites.s]\ndataset = "d.jsonl"\nregime = "stochastic"\n'
                f'target = {{ kind = "anthropic", model = "claude-haiku-4-5", base_url = "{mp.base_url}", '
                f'prompt = "{{{{ input.q }}}}", max_retries = 0{env} }}\nscorers = [{scorers}]\n', CASES)


def test_the_response_cache_is_scrubbed_like_every_file_evalh_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that echoes the request headers: the subject's key, a judge's key and a
    key read through a plainly named `api_key_env` never reach `.evalh/cache`."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    monkeypatch.setenv("LOCAL_LLM", CUSTOM_KEY)
    script = [*ECHO_SCRIPT, {"endpoint": "openai", "json": {"verdict": "pass", "rationale": "fine"}, "echo": True}]
    judged, custom = tmp_path / "judged", tmp_path / "custom"
    with MockProvider(script) as mp:
        judged.mkdir(), custom.mkdir()
        model_project(judged, mp, judge=True)
        result, doc, raw = run_project(judged)
        assert doc is not None, result.output
        model_project(custom, mp, api_key_env="LOCAL_LLM")
        result, doc2, _ = run_project(custom)
        assert doc2 is not None, result.output
    assert "authorization" in doc["suites"]["s"]["cases"][0]["output"]  # it did echo
    cache = sorted((judged / ".evalh" / "cache").rglob("*.json"))
    custom_cache = sorted((custom / ".evalh" / "cache").rglob("*.json"))
    assert len(cache) == 4 and len(custom_cache) == 2  # 2 subject and 2 judge replies; 2 replies
    blob = b"".join(p.read_bytes() for p in cache + custom_cache)
    assert b"[REDACTED]" in blob and b"authorization" in blob
    for secret in (KEY, JUDGE_KEY, CUSTOM_KEY):
        assert secret.encode() not in blob, secret
        assert secret.encode() not in all_bytes(tmp_path), secret


def test_suites_with_different_keys_never_share_cached_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MockProvider([{"match": "question", "text": "an answer"}]) as mp:
        model_project(tmp_path, mp)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        first = run_project(tmp_path)[1]
        again = run_project(tmp_path)[1]
        assert mp.count() == 2
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-another-account-0123456789")
        other = run_project(tmp_path)[1]
        assert mp.count() == 4
    assert first is not None and again is not None and other is not None
    assert [c["cached"] for c in first["suites"]["s"]["cases"]] == [False, False]
    assert [c["cached"] for c in again["suites"]["s"]["cases"]] == [True, True]
    assert [c["cached"] for c in other["suites"]["s"]["cases"]] == [False, False]
    names = b" ".join(p.name.encode() for p in (tmp_path / ".evalh" / "cache").rglob("*"))
    assert KEY.encode() not in names


# ----------------------------------------------------------------------------- HTTP target URLs

URL_USER, URL_PASSWORD, URL_TOKEN = "evalh-ci-user", "pw-0123456789-url", "tok-query-0123456789"
BASIC = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()


def test_http_target_url_credentials_are_secrets_when_the_product_echoes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`?token=` and the Basic header derived from `user:pass@`: every credential evalh sends
    stays out of the run document, `show --json` and the dashboard API."""
    import threading

    import httpx

    from evalh.ui.server import make_server

    with MockProvider([{"match": "question", "text": "x", "echo": True}]) as mp:
        host = mp.base_url.split("://", 1)[1]
        url = f"http://{URL_USER}:{URL_PASSWORD}@{host}/v1/product/answer?token={URL_TOKEN}&region=eu"
        write(tmp_path, f'[suites.s]\ndataset = "d.jsonl"\ntarget = {{ kind = "http", url = "{url}" }}\n'
                        'scorers = [{ type = "contains" }]\n', CASES)
        result, doc, raw = run_project(tmp_path)
        assert doc is not None, result.output
        sent = mp.requests[0]
    assert sent.headers["authorization"] == "***"  # Basic, masked in the record; sent all the same
    output = doc["suites"]["s"]["cases"][0]["output"]
    assert "region=eu" in output and "authorization" in output  # it did echo
    shown = invoke("show", str(tmp_path / "runs" / f"{doc['run_id']}.json"), "--json")
    server = make_server(tmp_path / "runs", tmp_path, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/api/runs/{doc['run_id']}"
        api = [httpx.get(base).text, httpx.get(f"{base}/case", params={"suite": "s", "i": 0}).text]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert '"output"' in api[1]
    for secret in (URL_PASSWORD, URL_TOKEN, BASIC, URL_USER):
        for where, blob in [("document", raw.decode()), ("show", shown.output), *(("api", a) for a in api),
                            ("files", all_bytes(tmp_path).decode())]:
            assert secret not in blob, (secret, where)


# ----------------------------------------------------------------------------- model base_url


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("where", ["target", "judge"])
def test_credentials_in_a_model_base_url_are_refused_when_the_config_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, where: str
) -> None:
    """Not one error per case (aiohttp's "Cannot combine AUTHORIZATION header", the SDK's
    "Connection error."): one line naming the field and what to do, exit 2, nothing written."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    url = f"http://{URL_USER}:{URL_PASSWORD}@127.0.0.1:9/v1"
    model = f'kind = "{kind}", model = "m", prompt = "{{{{ input.q }}}}"'
    if where == "target":
        target, scorers = f'{{ {model}, base_url = "{url}" }}', '{ type = "contains" }'
        field = "suites.s.target.base_url"
    else:
        target = f'{{ {model}, base_url = "mock:none.json" }}'
        scorers = f'{{ type = "judge", provider = "{kind}", model = "j", base_url = "{url}", rubric = "r" }}'
        field = "suites.s.scorers[0].judges[0].base_url"
    write(tmp_path, f'[suites.s]\ndataset = "d.jsonl"\ntarget = {target}\nscorers = [{scorers}]\n', CASES)
    for command in (["validate"], ["run", "--runs-dir", str(tmp_path / "runs")]):
        result = invoke(*command, "--config", str(tmp_path / "evalh.toml"))
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"evalh.toml: {field}: " in lines[0], lines
        assert "api_key_env" in lines[0] and URL_PASSWORD not in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("where", ["target", "judge"])
def test_credentials_in_a_base_url_variable_are_refused_before_any_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, where: str
) -> None:
    """`ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` stand in for an unset `base_url`: the same
    refusal, naming the variable, instead of an error on every case."""
    variable = "ANTHROPIC_BASE_URL" if kind == "anthropic" else "OPENAI_BASE_URL"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    monkeypatch.setenv(variable, f"http://{URL_USER}:{URL_PASSWORD}@127.0.0.1:9/v1")
    model = f'kind = "{kind}", model = "m", prompt = "{{{{ input.q }}}}"'
    if where == "target":
        target, scorers = f"{{ {model} }}", '{ type = "contains" }'
    else:
        target = f'{{ {model}, base_url = "mock:none.json" }}'
        scorers = f'{{ type = "judge", provider = "{kind}", model = "j", rubric = "r" }}'
    write(tmp_path, f'[suites.s]\ndataset = "d.jsonl"\ntarget = {target}\nscorers = [{scorers}]\n', CASES)
    for command in (["validate"], ["run", "--runs-dir", str(tmp_path / "runs")]):
        result = invoke(*command, "--config", str(tmp_path / "evalh.toml"))
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{variable}: credentials in the URL" in lines[0], lines
        assert "suites.s" in lines[0] and URL_PASSWORD not in result.output
    assert not (tmp_path / "runs").exists()
