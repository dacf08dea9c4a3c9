"""The run store: atomic writes, run ids, where runs live, secrets kept out, git provenance."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from evalh import registry, store
from evalh.atomic import atomic_write_bytes
from evalh.cli.main import app
from evalh.config import load_config
from evalh.core.run.entry import run_plan
from evalh.core.run.prepare import RunOptions, prepare_run
from evalh.errors import InvalidRunId, RunNotFound
from evalh.models import CaseResult, EnvironmentInfo, Run
from evalh.provenance import git_info
from evalh.store import RunStore, new_run_id, validate_run_id

HOSTILE_IDS = ["../x", "a/b", "..", "x\0", "", "a" * 200, "/etc/passwd", "a\\b", "x\n", ".hidden",
               "a..b"]


def _run(run_id: str = "20260101T000000000Z-abcdef", **over: object) -> Run:
    return Run(run_id=run_id, started_at="2026-01-01T00:00:00.000Z",
               environment=EnvironmentInfo(evalh="0", python="3", platform="p"), **over)


def _invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


# ----------------------------------------------------------------------------- atomic writes


def test_write_then_load(tmp_path: Path) -> None:
    s = RunStore(tmp_path / "runs")
    path = s.write(_run(label="x"))
    assert path == tmp_path / "runs" / "20260101T000000000Z-abcdef.json"
    assert s.load("20260101T000000000Z-abcdef").label == "x"
    assert s.load(str(path)).label == "x"  # a path to a document works too
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_a_failed_write_leaves_the_old_document_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    atomic_write_bytes(target, b'{"old": true}')

    def broken_fsync(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b'{"new": true, "big": "' + b"x" * 100_000 + b'"}')
    assert target.read_bytes() == b'{"old": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_failed_first_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_replace = os.replace

    def replace_after_checking(src: str, dst: str) -> None:
        # the temp file is complete before it gets the real name: a reader never sees half
        assert orjson.loads(Path(src).read_bytes())["run_id"] == "20260101T000000000Z-abcdef"
        assert not Path(dst).exists()
        raise KeyboardInterrupt

    monkeypatch.setattr(store.os, "replace", replace_after_checking)
    with pytest.raises(KeyboardInterrupt):
        RunStore(tmp_path).write(_run())
    monkeypatch.setattr(store.os, "replace", real_replace)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- run ids


def test_run_ids_sort_by_time() -> None:
    t0 = datetime(2026, 1, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    steps = [timedelta(0), timedelta(milliseconds=1), timedelta(seconds=1), timedelta(days=1),
             timedelta(days=400)]
    ids = [new_run_id(t0 + d) for d in steps]
    assert sorted(ids) == ids and len(set(ids)) == len(ids)
    for rid in ids:
        assert validate_run_id(rid) == rid
    assert new_run_id() != new_run_id()  # same millisecond, distinct ids


def test_list_ids_oldest_first_and_ignores_other_files(tmp_path: Path) -> None:
    s = RunStore(tmp_path)
    ids = [new_run_id(datetime(2026, 1, d, tzinfo=UTC)) for d in (3, 1, 2)]
    for rid in ids:
        s.write(_run(rid))
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "x.journal.jsonl").write_text("")
    assert s.list_ids() == sorted(ids)
    assert s.latest() is not None and s.latest().run_id == max(ids)  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_hostile_run_ids_are_refused(tmp_path: Path, bad: str) -> None:
    s = RunStore(tmp_path / "runs")
    with pytest.raises(InvalidRunId):
        s.path_for(bad)
    with pytest.raises(InvalidRunId):
        s.load(bad)
    with pytest.raises(InvalidRunId):
        s.journal_path(bad)


@pytest.mark.parametrize("bad", [*(i for i in HOSTILE_IDS if "\0" not in i), "../secret"])
def test_show_refuses_hostile_ids_with_one_line(tmp_path: Path, bad: str) -> None:
    (tmp_path / "secret.json").write_text("{}")
    result = _invoke("show", bad, "--runs-dir", str(tmp_path / "runs"))
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    # refused for its shape, not merely not found (or unreadable) after a lookup outside runs/
    assert "invalid run id" in lines[0], lines


def test_show_unknown_run(tmp_path: Path) -> None:
    result = _invoke("show", "20260101T000000000Z-000000", "--runs-dir", str(tmp_path))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "20260101T000000000Z-000000" in result.stderr  # type: ignore[attr-defined]
    with pytest.raises(RunNotFound):
        RunStore(tmp_path).load("20260101T000000000Z-000000")


# ----------------------------------------------------------------------------- where runs live


def _docs(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def test_default_runs_dir_is_beside_the_config(project: Path) -> None:
    result = _invoke("run", "--config", str(project / "evalh.toml"), "-q")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert len(_docs(project / "eval_runs")) == 1
    assert not Path("eval_runs").exists()  # not in the (unrelated) current directory


def test_eval_runs_dir_and_runs_dir_option(project: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    env_dir, opt_dir = tmp_path / "from_env", tmp_path / "from_option"
    monkeypatch.setenv("EVAL_RUNS_DIR", str(env_dir))
    cfg = str(project / "evalh.toml")
    assert _invoke("run", "--config", cfg, "-q").exit_code == 0  # type: ignore[attr-defined]
    assert len(_docs(env_dir)) == 1
    assert _invoke("run", "--config", cfg, "-q", "--runs-dir", str(opt_dir)).exit_code == 0  # type: ignore[attr-defined]
    assert len(_docs(opt_dir)) == 1 and len(_docs(env_dir)) == 1
    assert not (project / "eval_runs").exists()
    run_id = _docs(env_dir)[0].stem
    shown = _invoke("show", run_id, "--config", cfg, "--json")
    assert shown.exit_code == 0, shown.output  # type: ignore[attr-defined]
    assert orjson.loads(shown.stdout)["run_id"] == run_id  # type: ignore[attr-defined]


def test_runs_dir_from_config(project: Path) -> None:
    text = (project / "evalh.toml").read_text().replace("[evalh]", '[evalh]\nruns_dir = "out/runs"')
    (project / "evalh.toml").write_text(text)
    assert _invoke("run", "--config", str(project / "evalh.toml"), "-q").exit_code == 0  # type: ignore[attr-defined]
    assert len(_docs(project / "out" / "runs")) == 1


# ----------------------------------------------------------------------------- secrets

SECRET_ENV = "sk-test-SECRET123456"
URL = "https://user:pw-SECRET-PASS@api.example.test/v1?api_key=SECRET-QUERY&region=eu"

FAKE_KIND = '''
import os
from typing import Literal

from evalh.targets.base import Target, TargetConfig, TargetOutput


class FakeHttpConfig(TargetConfig):
    SNAPSHOT = frozenset({"kind", "url"})
    kind: Literal["fakehttp"] = "fakehttp"
    url: str
    api_key: str | None = None
    headers: dict[str, str] = {}


CONFIGS = {"fakehttp": FakeHttpConfig}


class FakeHttp(Target):
    def __init__(self, config):
        self.config = config

    async def call(self, case, ctx):
        # a careless product: echoes its environment
        return TargetOutput(output={
            "verdict": "accept" if "yes" in case.input["text"] else "reject",
            "env": dict(os.environ),
        })

    async def aclose(self):
        return None


def build(config, root):
    return FakeHttp(config)
'''


class _JournalSpy:
    """An observer that copies the journal each time a result is recorded (the journal is
    removed once a run completes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[bytes] = []

    def on_start(self, plan: object) -> None: ...
    def on_suite(self, suite: object, todo: int) -> None: ...
    def on_finish(self, run: object) -> None: ...

    def on_result(self, suite: object, result: object) -> None:
        self.seen.append(self.path.read_bytes())


def test_secrets_never_reach_the_run_document_or_the_journal(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_ENV)
    monkeypatch.setenv("EVALH_TEST_TOKEN", "tok-ABCDEFGH-0001")
    (project / "evalh_fake_http.py").write_text(FAKE_KIND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setitem(registry.TARGET_KINDS, "fakehttp", "evalh_fake_http")
    (project / "evalh.toml").write_text(f"""
[suites.s]
description = "talks to {URL} with a key"
dataset = "data/smoke.jsonl"
target = {{ kind = "fakehttp", url = "{URL}", api_key = "literal-KEY-IN-CONFIG", headers = {{ Authorization = "Bearer HEADER-SECRET" }} }}
scorers = [{{ type = "exact", field = "verdict" }}]
""", encoding="utf-8")
    cfg = load_config(project / "evalh.toml")
    runs = RunStore(project / "runs")
    prepared = prepare_run(cfg, RunOptions(seed=1), runs.runs_dir)
    spy = _JournalSpy(runs.journal_path(prepared.plan.run_id))
    run = run_plan(prepared.plan, runs, spy)
    assert run.summary["passed"] == 3
    document = runs.path_for(run.run_id).read_bytes()
    assert spy.seen, "the journal was never written"
    for blob in [document, *spy.seen]:
        for secret in (SECRET_ENV, "tok-ABCDEFGH-0001", "pw-SECRET-PASS", "SECRET-QUERY",
                       "literal-KEY-IN-CONFIG", "HEADER-SECRET"):
            assert secret.encode() not in blob, secret
    doc = orjson.loads(document)
    target = doc["config"]["suites"]["s"]["target"]
    assert set(target) == {"kind", "url"}  # only the allowlist
    assert "api.example.test/v1" in target["url"] and "region=eu" in target["url"]
    assert doc["suites"]["s"]["target"]["url"] == target["url"]
    # what the product echoed stays visible, minus the secrets
    assert "[REDACTED]" in document.decode()


def test_journal_lines_are_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_ENV)
    journal = RunStore(tmp_path).journal("20260101T000000000Z-abcdef")
    journal.open({"note": f"key {SECRET_ENV}"})
    journal.append("s", CaseResult(case_id="c", status="passed", output=f"echo {SECRET_ENV}"))
    journal.close()
    data = journal.path.read_bytes()
    assert SECRET_ENV.encode() not in data and data.count(b"[REDACTED]") == 2
    header, results = journal.read(journal.path)
    assert header == {"note": "key [REDACTED]"} and results[0][1].output == "echo [REDACTED]"


# ----------------------------------------------------------------------------- git provenance


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.test", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()


def test_git_info_in_a_repository(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(project.parent))
    _git(project, "init", "-q", "-b", "trunk")
    _git(project, "add", "evalh.toml", "data", "evalh_fixture_target.py")
    _git(project, "commit", "-q", "-m", "init")
    sha = _git(project, "rev-parse", "HEAD")
    result = _invoke("run", "--config", str(project / "evalh.toml"), "-q")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    doc = orjson.loads(_docs(project / "eval_runs")[0].read_bytes())
    assert doc["git"] == {"sha": sha, "dirty": False, "branch": "trunk"}  # untracked runs: clean
    with (project / "data" / "smoke.jsonl").open("a") as fh:
        fh.write("\n")
    assert git_info(project).dirty is True
    _git(project, "checkout", "-q", "--detach")
    assert git_info(project).branch is None and git_info(project).sha == sha


def test_git_info_outside_a_repository(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(project.parent))
    result = _invoke("run", "--config", str(project / "evalh.toml"), "-q")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    doc = orjson.loads(_docs(project / "eval_runs")[0].read_bytes())
    assert doc["git"] == {"sha": None, "dirty": None, "branch": None}


def test_snapshot_of_a_free_form_table_keeps_settings_and_hides_credentials() -> None:
    from evalh.providers.base import ProviderConfig
    from evalh.redact import REDACTED
    from evalh.snapshot import snapshot

    cfg = ProviderConfig(provider="openai", model="m", params={
        "top_p": 0.9, "max_tokens": 64, "api_key": "sk-live-abc", "access_token": "t0k3n"})
    params = snapshot(cfg)["params"]
    assert params["top_p"] == 0.9 and params["max_tokens"] == 64
    assert params["api_key"] == REDACTED and params["access_token"] == REDACTED


def test_credential_values_in_a_json_template_are_redacted_and_nothing_else() -> None:
    from evalh.redact import REDACTED, redact_json_text

    text = ('{"api_key": "k-123", "password" : "pw", "apiKey": 12345, "accessToken": "t", '
            '"private_key": "p", "token": "${TOK}", "author": "me", "max_tokens": 5, '
            '"q": {{ input.q | tojson }}, "session_id": "s1"}')
    out = redact_json_text(text)
    for key in ("api_key", "password", "apiKey", "accessToken", "private_key"):
        assert f'"{key}"' in out
    assert out.count(REDACTED) == 5
    for kept in ('"token": "${TOK}"', '"author": "me"', '"max_tokens": 5', '"session_id": "s1"',
                 "{{ input.q | tojson }}"):
        assert kept in out, kept


def test_only_json_template_fields_are_redacted_in_a_snapshot() -> None:
    """A prompt that shows the model a JSON shape keeps it: only fields a config names as
    JSON templates (an HTTP target's body) are redacted."""
    from evalh.snapshot import snapshot
    from evalh.targets.http import HttpTargetConfig
    from evalh.targets.model import ModelTargetConfig

    prompt = 'Reply as {"author": "<name>", "password": "<never>"}'
    model = ModelTargetConfig(kind="anthropic", model="m", prompt=prompt)
    assert snapshot(model)["prompt"] == prompt
    http = HttpTargetConfig(kind="http", url="http://127.0.0.1:9/x", body='{"password": "hunter22"}')
    assert snapshot(http)["body"] == '{"password": "[REDACTED]"}'
