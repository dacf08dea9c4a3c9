"""Plugins by entry point, in-process: the demo plugin of tests/plugin_pkg found through a
dist-info on sys.path (as an installed package is), its scorer, target and provider used by
a suite, its provider as a model target kind, its report format by `evalh report --format`;
names a built-in has and entry points that name no module are not registered.
(tests/test_installed.py installs the same package with pip into the wheel's venv.)"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh import registry
from evalh.cli.main import app

PLUGIN = Path(__file__).resolve().parent / "plugin_pkg"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def entry_points_txt(extra: dict[str, dict[str, str]] | None = None) -> str:
    groups = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    for group, eps in (extra or {}).items():
        groups.setdefault(group, {}).update(eps)
    return "".join(f"[{g}]\n" + "".join(f"{n} = {v}\n" for n, v in eps.items()) + "\n"
                   for g, eps in groups.items())


@pytest.fixture
def plugin_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    site = tmp_path_factory.mktemp("site")
    info = site / "evalh_demo_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalh-demo-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(entry_points_txt({
        "evalh.scorers": {"exact": "evalh_demo_plugin.scorer", "broken": "evalh_demo_plugin.scorer:build"},
        "evalh.report_formats": {"html": "evalh_demo_plugin.report_format"},
    }))
    sys.path[:0] = [str(site), str(PLUGIN / "src")]
    registry.load_plugins(reload=True)
    yield
    for p in (str(site), str(PLUGIN / "src")):
        sys.path.remove(p)
    registry.load_plugins(reload=True)
    for name in [m for m in sys.modules if m.startswith("evalh_demo_plugin")]:
        del sys.modules[name]


def project(root: Path) -> Path:
    (root / "cases.jsonl").write_text(
        '{"id": "short", "input": {"text": "hello"}}\n'
        '{"id": "long", "input": {"text": "a sentence well over twenty characters"}}\n')
    (root / "evalh.toml").write_text(
        '[suites.demo]\ndataset = "cases.jsonl"\ntarget = { kind = "demo_shout" }\n'
        'scorers = [{ type = "demo_length", max_chars = 20 }]\n')
    return root / "evalh.toml"


def test_a_suite_runs_on_the_plugin_scorer_target_and_provider(
    plugin_installed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEMO_ECHO_KEY", "sk-demo-secret-0123456789")
    config = project(tmp_path)
    assert invoke("validate", "--config", str(config)).exit_code == 0
    result = invoke("run", "--config", str(config), "--json")
    assert result.exit_code == 1, result.output  # the long case fails the length scorer
    doc = json.loads(result.stdout)
    run = json.loads(Path(doc["path"]).read_bytes())
    suite = run["suites"]["demo"]
    by_id = {r["case_id"]: r for r in suite["cases"]}
    assert by_id["short"]["output"] == "HELLO"  # the provider's reply, through the target
    assert by_id["short"]["status"] == "passed" and by_id["long"]["status"] == "failed"
    assert "at most 20" in by_id["long"]["scores"][0]["rationale"]
    assert suite["details"]["demo_length"] == {"longest": len("a sentence well over twenty characters")}
    assert "sk-demo-secret" not in Path(doc["path"]).read_text()


def test_evalh_plugins_lists_loaded_shadowed_and_invalid(plugin_installed: None) -> None:
    result = invoke("plugins", "--json")
    assert result.exit_code == 0
    rows = {(r["kind"], r["name"]): r for r in json.loads(result.stdout)["plugins"]}
    assert rows[("scorer", "demo_length")]["status"] == "loaded"
    assert rows[("scorer", "demo_length")]["distribution"] == "evalh-demo-plugin"
    assert rows[("target", "demo_shout")]["status"] == "loaded"
    assert rows[("provider", "demo_echo")]["status"] == "loaded"
    assert rows[("target", "demo_echo")] == {**rows[("provider", "demo_echo")], "kind": "target",
                                            "module": "evalh.targets.model"}  # its model target kind
    assert rows[("report_format", "demo_csv")]["status"] == "loaded"
    assert rows[("scorer", "exact")]["status"] == "shadowed"
    assert registry.SCORER_TYPES["exact"] == "evalh.scorers.match"  # the built-in wins
    assert rows[("report_format", "html")]["status"] == "shadowed"  # `report --format html` is the built-in
    assert "html" not in registry.REPORT_FORMATS
    assert rows[("scorer", "broken")]["status"] == "invalid"
    assert "broken" not in registry.SCORER_TYPES


def test_unknown_names_list_plugin_types_and_go_away_with_the_plugin(tmp_path: Path) -> None:
    config = project(tmp_path)
    result = invoke("validate", "--config", str(config))  # not installed: one line, exit 2
    assert result.exit_code == 2
    assert "unknown target kind 'demo_shout'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_scorer_type_names_the_installed_plugins(plugin_installed: None, tmp_path: Path) -> None:
    config = project(tmp_path)
    config.write_text(config.read_text().replace("demo_length", "demo_lenght"))
    result = invoke("validate", "--config", str(config))
    assert result.exit_code == 2
    assert "unknown scorer type 'demo_lenght'" in result.stderr and "demo_length" in result.stderr


def test_providers_are_validated_against_the_registry(plugin_installed: None) -> None:
    from pydantic import ValidationError

    from evalh.providers.base import ProviderConfig

    assert ProviderConfig(provider="demo_echo", model="m").key_env() == "DEMO_ECHO_KEY"
    assert ProviderConfig(provider="anthropic", model="m").key_env() == "ANTHROPIC_API_KEY"
    with pytest.raises(ValidationError, match="unknown provider 'nope'.*demo_echo"):
        ProviderConfig(provider="nope", model="m")


def test_reading_entry_points_imports_no_plugin_module(plugin_installed: None) -> None:
    registry.load_plugins(reload=True)
    assert not [m for m in sys.modules if m.startswith("evalh_demo_plugin")]


def test_a_plugin_scorer_must_subclass_the_protocol(plugin_installed: None, tmp_path: Path) -> None:
    """Hooks are called directly (their defaults come from subclassing `Scorer`): a scorer
    that only looks like one is refused before anything runs, in one line."""
    config = project(tmp_path)
    config.write_text(config.read_text().replace('{ type = "demo_length", max_chars = 20 }', '{ type = "demo_bare" }'))
    result = invoke("run", "--config", str(config))
    assert result.exit_code == 2, result.output
    assert "does not subclass evalh.scorers.base.Scorer" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "eval_runs").exists() or not list((tmp_path / "eval_runs").glob("*.json"))


def echo_project(root: Path, target: str) -> Path:
    (root / "cases.jsonl").write_text('{"id": "hi", "input": {"text": "hello"}, "expected": "SAY HELLO"}\n')
    (root / "evalh.toml").write_text(
        f'[suites.echo]\ndataset = "cases.jsonl"\ntarget = {target}\nscorers = [{{ type = "exact" }}]\n')
    return root / "evalh.toml"


def test_a_plugin_provider_is_a_model_target_kind(
    plugin_installed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`kind = "demo_echo"`: a model target (prompt template, tokens, cache) whose requests
    go to the plugin's provider, as `kind = "anthropic"` goes to Anthropic's."""
    monkeypatch.setenv("DEMO_ECHO_KEY", "k-demo-0123456789")
    config = echo_project(tmp_path, '{ kind = "demo_echo", model = "echo-1", prompt = "say {{ input.text }}" }')
    assert invoke("validate", "--config", str(config)).exit_code == 0
    result = invoke("run", "--config", str(config), "--json", "--no-cache")
    assert result.exit_code == 0, result.output
    run = json.loads(Path(json.loads(result.stdout)["path"]).read_bytes())
    (case,) = run["suites"]["echo"]["cases"]
    assert case["output"] == "SAY HELLO" and case["status"] == "passed"
    assert case["tokens_in"] == case["tokens_out"] == 2
    snapshot = run["config"]["suites"]["echo"]["target"]
    assert snapshot["kind"] == snapshot["provider"] == "demo_echo"


def test_without_its_key_a_plugin_model_target_names_the_plugins_variable(
    plugin_installed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DEMO_ECHO_KEY", raising=False)
    config = echo_project(tmp_path, '{ kind = "demo_echo", model = "echo-1", prompt = "{{ input.text }}" }')
    result = invoke("validate", "--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["suites"][0]["needs_env"] == ["DEMO_ECHO_KEY"]


@pytest.mark.parametrize(("target", "message"), [
    ('{ kind = "demo_ech", model = "m", prompt = "p" }',
     "suites.echo.target.kind: unknown target kind 'demo_ech' (known: anthropic, demo_echo, demo_shout, http, openai, python)"),
    ('{ kind = "demo_echo", provider = "openai", model = "m", prompt = "p" }',
     "provider 'openai' contradicts kind 'demo_echo'"),
])
def test_bad_model_kinds_are_one_line_naming_the_field(
    plugin_installed: None, tmp_path: Path, target: str, message: str,
) -> None:
    result = invoke("validate", "--config", str(echo_project(tmp_path, target)))
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_judge_may_name_a_plugin_provider(plugin_installed: None, tmp_path: Path) -> None:
    config = echo_project(tmp_path, '{ kind = "demo_shout" }')
    config.write_text(config.read_text().replace(
        '[{ type = "exact" }]', '[{ type = "judge", provider = "demo_echo", model = "echo-1", rubric = "Is it loud?" }]'))
    result = invoke("validate", "--config", str(config))
    assert result.exit_code == 0, result.stderr
    wrong = config.read_text().replace('provider = "demo_echo"', 'provider = "demo_ehco"')
    config.write_text(wrong)
    result = invoke("validate", "--config", str(config))
    assert result.exit_code == 2
    assert "unknown provider 'demo_ehco'" in result.stderr and "demo_echo" in result.stderr


def test_evalh_report_offers_the_plugin_report_format(
    plugin_installed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEMO_ECHO_KEY", "k-demo-0123456789")
    config = project(tmp_path)
    assert invoke("run", "--config", str(config), "-q").exit_code == 1
    (run_id,) = [p.stem for p in (tmp_path / "eval_runs").glob("*.json")]
    help_text = invoke("report", "--help").stdout
    assert "Installed by plugins: demo_csv." in " ".join(help_text.split())

    result = invoke("report", "--config", str(config), "--format", "demo_csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["run,suite,case,arm,attempt,status",
                                          f"{run_id},demo,short,default,0,passed",
                                          f"{run_id},demo,long,default,0,failed"]  # dataset order
    out = tmp_path / "runs.csv"
    written = invoke("report", "--config", str(config), "-f", "demo_csv", "-o", str(out), "-q")
    assert written.exit_code == 0 and written.stderr == "" and out.read_text() == result.stdout

    from evalh import api

    assert api.load_project(config).report(fmt="demo_csv") == result.stdout

    for args, message in ((["--format", "demo_cvs"], "unknown report format 'demo_cvs' (known: table, md, markdown, json, html, demo_csv)"),
                          (["--format", "demo_csv", "--by", "split"], "--format demo_csv: a plugin's format renders the runs itself (drop --by)")):
        bad = invoke("report", "--config", str(config), *args)
        assert bad.exit_code == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_report_format_that_fails_is_one_line_naming_it(
    plugin_installed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEMO_ECHO_KEY", "k-demo-0123456789")
    config = project(tmp_path)
    invoke("run", "--config", str(config), "-q")
    from evalh_demo_plugin import report_format

    def broken(runs: list[object]) -> str:
        raise RuntimeError("no csv today")

    monkeypatch.setattr(report_format, "render", broken)
    result = invoke("report", "--config", str(config), "--format", "demo_csv")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: report format demo_csv (evalh_demo_plugin.report_format): "
                                     "render failed: RuntimeError: no csv today")


def test_without_the_plugin_its_report_format_is_unknown(tmp_path: Path) -> None:
    result = invoke("report", "--config", str(project(tmp_path)), "--format", "demo_csv")
    assert result.exit_code == 2
    assert "unknown report format 'demo_csv' (known: table, md, markdown, json, html)" in result.stderr
    assert "Installed by plugins" not in invoke("report", "--help").stdout


def test_builtins_list_every_kind_once(plugin_installed: None) -> None:
    rows = json.loads(invoke("plugins", "--builtins", "--json").stdout)["plugins"]
    keys = [(r["kind"], r["name"]) for r in rows if r["status"] in ("loaded", "built-in")]
    assert len(keys) == len(set(keys))  # (a shadowed entry point is listed beside the built-in)
    by_key = {(r["kind"], r["name"]): r for r in rows if r["status"] in ("loaded", "built-in")}
    assert by_key[("target", "demo_echo")]["distribution"] == "evalh-demo-plugin"  # not a built-in
    assert by_key[("report_format", "html")]["status"] == "built-in"
    assert by_key[("target", "anthropic")]["status"] == "built-in"
