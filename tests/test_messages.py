"""Messages that say what is so (issue 19, item 6): the Anthropic provider names the server
it called and hints at a base_url ending in /v1; the progress bar does not show an unknown
cost as $0; a cut failure line ends in an ellipsis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.mock import MockProvider
from evalh.providers import get_provider
from evalh.providers.base import ChatRequest, ProviderConfig, ProviderError
from evalh.providers.prices import merged_prices
from evalh.services import Budget, RunServices

KEY_ENV = "EVALH_TEST_PROVIDER_KEY"


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([{"match": "", "text": "hi"}]) as provider:
        yield provider


def _chat(cfg: ProviderConfig, tmp_path: Path) -> None:
    svc = RunServices(root=tmp_path, prices=merged_prices({}), budget=Budget(), cache=None)

    async def go() -> None:
        from evalh.providers import close_providers

        try:
            await get_provider(cfg, svc).chat(
                ChatRequest(model="m", messages=[{"role": "user", "content": "hello"}]))
        finally:
            await close_providers(svc)

    asyncio.run(go())


def test_anthropic_base_url_ending_in_v1_names_the_server_and_hints(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789")
    cfg = ProviderConfig(provider="anthropic", model="m", base_url=mp.base_url + "/v1",
                         api_key_env=KEY_ENV, max_retries=0, timeout_s=5)
    with pytest.raises(ProviderError) as info:
        _chat(cfg, tmp_path)
    text = str(info.value)
    assert info.value.status == 404
    assert f"HTTP 404 from {mp.base_url}" in text and "from Anthropic" not in text
    assert "without /v1" in text  # what to fix


def test_the_anthropic_api_itself_is_still_called_anthropic() -> None:
    from evalh.providers.anthropic import server_name

    assert server_name("https://api.anthropic.com") == "Anthropic"
    assert server_name("http://user:pw@127.0.0.1:8080/proxy") == "http://127.0.0.1:8080"


def _project(root: Path, model: str) -> Path:
    (root / "provider.json").write_text(json.dumps({"rules": [{"match": "", "text": "x"}]}), encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": "x"}) + "\n" for i in range(3)),
        encoding="utf-8")
    (root / "evalh.toml").write_text(
        f'[suites.live]\ndataset = "d.jsonl"\nregime = "stochastic"\nscorers = [{{ type = "contains" }}]\n'
        f'target = {{ kind = "anthropic", model = "{model}", base_url = "mock:provider.json", '
        f'prompt = "{{{{ input.q }}}}", max_retries = 0 }}\n', encoding="utf-8")
    return root / "evalh.toml"


def _bar(tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = _project(tmp_path, model)
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if "errored" in ln and "tokens" in ln]
    return line


def test_progress_bar_shows_an_unknown_cost_as_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = _bar(tmp_path, "no-price-model-1", monkeypatch)
    assert "$0.0000" not in line and "cost unknown" in line, line


def test_progress_bar_shows_a_known_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = _bar(tmp_path, "claude-haiku-4-5", monkeypatch)
    assert "$0.0000" in line and "unknown" not in line, line  # a few tokens at $1/$5 per million


def test_a_cut_failure_line_ends_in_an_ellipsis() -> None:
    from rich.console import Console

    from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, ErrorInfo, Run, SuiteResult
    from evalh.report.terminal.run import render_run

    long = "the product fell over because " + "x" * 300
    run = Run(run_id="20260101T000000000Z-abcdef", started_at="2026-01-01T00:00:00Z", status="complete",
              environment=EnvironmentInfo(evalh="0", python="3", platform="test"),
              suites={"s": SuiteResult(regime="deterministic", dataset=DatasetInfo(path="d", sha256="x", cases=2),
                                       cases=[CaseResult(case_id="a", status="errored",
                                                         error=ErrorInfo(type="RuntimeError", message=long)),
                                              CaseResult(case_id="b", status="errored",
                                                         error=ErrorInfo(type="RuntimeError", message="short"))])})
    console = Console(width=400, record=True, no_color=True)
    render_run(run, console)
    lines = {ln.split()[1]: ln.rstrip() for ln in console.export_text().splitlines() if ln.startswith("  errored")}
    assert lines["a"].endswith("…") and "x" * 100 in lines["a"]
    assert lines["b"].endswith("short")
