"""The evalh.toml contract: what loads, and one line naming file and key for what does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.config import Thresholds, find_config, load_config
from evalh.errors import ConfigError
from evalh.scorers.match import ExactConfig
from evalh.targets.python_callable import PythonTargetConfig

SUITE = """
[suites.{name}]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:answer"
scorers = [{{ type = "exact", field = "verdict" }}]
"""


def _write(project: Path, text: str) -> Path:
    path = project / "evalh.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.exit_code == 2
    assert "\n" not in info.value.message, info.value.message
    assert info.value.message.startswith(f"{path}: "), info.value.message
    return info.value.message


# ----------------------------------------------------------------------------- the contract


def test_the_issue_contract_loads(project: Path) -> None:
    path = _write(project, """
[suites.gate]
dataset = "data/smoke.jsonl"        # JSONL, one case a line; JSON array also accepted
target  = "evalh_fixture_target:answer"
regime  = "deterministic"
scorers = [{ type = "exact" }]
""")
    cfg = load_config(path)
    gate = cfg.suite("gate")
    assert gate.name == "gate" and gate.regime == "deterministic"
    assert gate.target == PythonTargetConfig(kind="python", callable="evalh_fixture_target:answer")
    assert isinstance(gate.scorers[0], ExactConfig) and gate.scorers[0].field is None
    assert cfg.root == project.resolve()
    assert cfg.resolve(gate.dataset) == project.resolve() / "data" / "smoke.jsonl"


def test_target_as_a_table_with_kind(project: Path) -> None:
    path = _write(project, """
[suites.s]
dataset = "data/smoke.jsonl"
target = { kind = "python", callable = "evalh_fixture_target:answer" }
regime = "stochastic"
""")
    suite = load_config(path).suite("s")
    assert suite.target.callable == "evalh_fixture_target:answer"  # type: ignore[attr-defined]
    assert suite.regime == "stochastic"


def test_defaults(project: Path) -> None:
    cfg = load_config(_write(project, SUITE.format(name="s")))
    assert cfg.settings.concurrency == 8 and cfg.settings.timeout_s == 60.0
    assert cfg.settings.seed is None and cfg.settings.max_cost_usd is None
    suite = cfg.suite("s")
    assert suite.regime == "deterministic" and suite.repeats == 1 and suite.tier == 0
    assert suite.thresholds == Thresholds()
    assert (suite.thresholds.pass_rate_drop, suite.thresholds.mean_score_drop) == (0.05, 0.02)
    assert suite.thresholds.cost_increase_pct == 25.0
    assert suite.thresholds.latency_p50_increase_pct == 50.0


def test_thresholds_can_be_set_per_suite(project: Path) -> None:
    path = _write(project, SUITE.format(name="s") + "thresholds = { pass_rate_drop = 0.1 }\n")
    t = load_config(path).suite("s").thresholds
    assert t.pass_rate_drop == 0.1 and t.mean_score_drop == 0.02


def test_suites_run_by_tier_then_name(project: Path) -> None:
    text = "".join(
        SUITE.format(name=name) + f"tier = {tier}\n"
        for name, tier in [("zeta", 0), ("live", 2), ("alpha", 1), ("beta", 0), ("aardvark", 1)]
    )
    cfg = load_config(_write(project, text))
    assert [s.name for s in cfg.suites_in_order()] == ["beta", "zeta", "aardvark", "alpha", "live"]


def test_find_config_walks_up_from_a_subdirectory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = project / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert find_config() == project.resolve() / "evalh.toml"
    cfg = load_config()
    assert cfg.root == project.resolve()
    assert cfg.resolve("data/smoke.jsonl").is_file()  # relative to the config, not the cwd


def test_prices_table(project: Path) -> None:
    path = _write(project, '[prices."claude-x"]\ninput = 3.0\noutput = 15.0\n' + SUITE.format(name="s"))
    price = load_config(path).prices["claude-x"]
    assert (price.input, price.output) == (3.0, 15.0)


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("snippet", "key"),
    [
        ("datset = 'x'\n", "suites.s.datset"),
        ("scorers = [{ type = 'exact', feild = 'v' }]\n", "suites.s.scorers[0].feild"),
        ("thresholds = { pass_rate_dorp = 0.1 }\n", "suites.s.thresholds.pass_rate_dorp"),
    ],
)
def test_unknown_key_in_a_suite_names_file_and_key(project: Path, snippet: str, key: str) -> None:
    base = SUITE.format(name="s")
    if snippet.startswith("scorers"):
        base = base.replace('scorers = [{ type = "exact", field = "verdict" }]\n', "")
    msg = _refused(_write(project, base + snippet))
    assert key in msg, msg


def test_unknown_key_in_the_target_table(project: Path) -> None:
    path = _write(project, """
[suites.s]
dataset = "data/smoke.jsonl"
target = { kind = "python", callable = "evalh_fixture_target:answer", api_key = "x" }
""")
    assert "suites.s.target.api_key" in _refused(path)


def test_unknown_key_in_evalh_and_at_top_level(project: Path) -> None:
    assert "evalh.concurency" in _refused(_write(project, "[evalh]\nconcurency = 2\n" + SUITE.format(name="s")))
    assert "sutes" in _refused(_write(project, "[sutes.s]\ndataset = 'x'\n"))


def test_missing_dataset_names_the_key(project: Path) -> None:
    msg = _refused(_write(project, SUITE.format(name="s").replace("data/smoke.jsonl", "data/nope.jsonl")))
    assert "suites.s.dataset" in msg and "data/nope.jsonl" in msg


def test_missing_target_and_unknown_target_kind(project: Path) -> None:
    assert "suites.s.target" in _refused(_write(project, "[suites.s]\ndataset = 'data/smoke.jsonl'\n"))
    msg = _refused(_write(project, "[suites.s]\ndataset = 'data/smoke.jsonl'\ntarget = { kind = 'telepathy' }\n"))
    assert "suites.s.target.kind" in msg and "telepathy" in msg


def test_unknown_scorer_type_names_the_key_and_the_known_types(project: Path) -> None:
    text = SUITE.format(name="s").replace('type = "exact"', 'type = "exactly"')
    msg = _refused(_write(project, text))
    assert "suites.s.scorers[0].type" in msg and "'exactly'" in msg and "regex" in msg


def test_bad_regex_is_refused_at_load(project: Path) -> None:
    text = SUITE.format(name="s").replace('{ type = "exact", field = "verdict" }',
                                          "{ type = 'regex', pattern = '(unclosed' }")
    msg = _refused(_write(project, text))
    assert "suites.s.scorers[0]" in msg and "compile" in msg


def test_bad_values_name_the_key(project: Path) -> None:
    assert "suites.s.regime" in _refused(_write(project, SUITE.format(name="s") + 'regime = "random"\n'))
    assert "suites.s.repeats" in _refused(_write(project, SUITE.format(name="s") + "repeats = 0\n"))
    assert "evalh.concurrency" in _refused(_write(project, "[evalh]\nconcurrency = 0\n" + SUITE.format(name="s")))


def test_invalid_toml_and_missing_file(project: Path) -> None:
    assert "invalid TOML" in _refused(_write(project, "[suites.s\n"))
    with pytest.raises(ConfigError) as info:
        load_config(project / "other.toml")
    assert "not found" in info.value.message


def test_no_config_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        find_config()
    assert "evalh.toml" in info.value.message


def test_unknown_suite(project: Path) -> None:
    cfg = load_config(project / "evalh.toml")
    with pytest.raises(ConfigError) as info:
        cfg.suite("nope")
    assert "'nope'" in info.value.message and "smoke" in info.value.message


# ----------------------------------------------------------------------------- user code, via the CLI


@pytest.mark.parametrize(
    "target",
    [
        "evalh_fixture_target:missing_function",
        "no_such_module_xyz:answer",
        "evalh_fixture_target",
        "broken_on_import:answer",
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_unimportable_target_exits_2_naming_the_key(project: Path, target: str, command: str) -> None:
    (project / "broken_on_import.py").write_text("raise RuntimeError('bad module')\n", encoding="utf-8")
    _write(project, SUITE.format(name="s").replace("evalh_fixture_target:answer", target))
    runs = project / "runs"
    args = [command, "--config", str(project / "evalh.toml")]
    if command == "run":
        args += ["--runs-dir", str(runs)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(project / "evalh.toml") in lines[0] and "suites.s.target" in lines[0]
    assert "Traceback" not in result.output
    assert not runs.exists() or not any(runs.iterdir())  # nothing written


def test_unimportable_custom_scorer_names_the_key(project: Path) -> None:
    _write(project, SUITE.format(name="s").replace(
        '{ type = "exact", field = "verdict" }', '{ type = "custom", function = "nowhere_xyz:f" }'))
    result = CliRunner().invoke(app, ["validate", "--config", str(project / "evalh.toml")])
    assert result.exit_code == 2, result.output
    assert "suites.s.scorers[0]" in result.stderr


def test_validate_ok(project: Path) -> None:
    result = CliRunner().invoke(app, ["validate", "--config", str(project / "evalh.toml")])
    assert result.exit_code == 0, result.output
    assert "smoke" in result.stdout and "3 cases" in result.stdout
    assert "valid" in result.stderr


def test_validate_json(project: Path) -> None:
    import json

    result = CliRunner().invoke(app, ["validate", "--config", str(project / "evalh.toml"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["suites"][0]["suite"] == "smoke" and doc["suites"][0]["cases"] == 3


def test_validate_reports_a_bad_dataset_line(project: Path) -> None:
    with (project / "data" / "smoke.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "smoke.yes", "input": {}}\n')
    result = CliRunner().invoke(app, ["validate", "--config", str(project / "evalh.toml")])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "error: data/smoke.jsonl:4: duplicate case id 'smoke.yes' (first at line 1)"
    ]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("prices = 3\n", "prices"),
        ("prices = []\n", "prices"),
        ("evalh = []\n", "evalh"),
        ("suites = []\n", "suites"),
        ("suites.s = 3\n", "suites.s"),
        (SUITE.format(name="s").replace('[{ type = "exact", field = "verdict" }]', '"exact"'),
         "suites.s.scorers"),
        (SUITE.format(name="s") + 'arms = { name = "a" }\n', "suites.s.arms"),
        (SUITE.format(name="s").replace('[{ type = "exact", field = "verdict" }]', "[3]"),
         "suites.s.scorers[0]"),
        (SUITE.format(name="s").replace('"evalh_fixture_target:answer"', "3"), "suites.s.target"),
        (SUITE.format(name="s") + "arms = [3]\n", "suites.s.arms[0]"),
    ],
)
def test_tables_of_the_wrong_shape_name_the_key(project: Path, text: str, key: str) -> None:
    msg = _refused(_write(project, text))
    assert f": {key}: " in msg, msg


def test_splits_that_select_no_case_are_a_config_error(project: Path) -> None:
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text() + 'splits = ["heldoutt"]\n')
    from typer.testing import CliRunner

    from evalh.cli.main import app

    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "-q"])
    assert result.exit_code == 2, result.output
    assert "suites.smoke.splits" in result.output and "heldoutt" in result.output
    assert not (project / "eval_runs").exists()


def test_arms_replace_the_target(project: Path) -> None:
    """docs/config.md: arms replace `target`, so a suite of arms needs none (the baseline
    arm's target stands for the suite); a suite with neither names both keys."""
    (project / "evalh.toml").write_text(
        '[suites.arms]\ndataset = "data/smoke.jsonl"\nscorers = [{ type = "exact", field = "verdict" }]\n'
        'baseline_arm = "real"\narms = [\n'
        '  { name = "yes_man", target = "evalh_fixture_target:always_accept" },\n'
        '  { name = "real", target = "evalh_fixture_target:answer" },\n]\n')
    suite = load_config(project / "evalh.toml").suites["arms"]
    assert [name for name, _ in suite.arm_targets()] == ["yes_man", "real"]
    assert isinstance(suite.target, PythonTargetConfig) and suite.target.callable == "evalh_fixture_target:answer"
    result = CliRunner().invoke(app, ["run", "--config", str(project / "evalh.toml"), "--runs-dir",
                                      str(project / "runs"), "-q"])
    assert result.exit_code == 1, result.output  # the yes-man arm fails smoke.no
    (project / "evalh.toml").write_text('[suites.none]\ndataset = "data/smoke.jsonl"\n')
    with pytest.raises(ConfigError, match=r"suites\.none\.target: missing \(give `target`, or `arms`\)"):
        load_config(project / "evalh.toml")
