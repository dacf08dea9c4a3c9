"""`config_differences` lists what differed in what ran, not how it was asked for: the shuffle
seed (it only orders the cases) is not a difference, and a repeats, timeout or concurrency
value that moved between evalh.toml and a flag is compared as the value each run used."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.core.compare.config import config_differences
from evalh.models import Run


def cli(project: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(project / "evalh.toml"),
                                    "--runs-dir", str(project / "runs")])


def run(project: Path, *args: str) -> Run:
    result = cli(project, "run", "--json", *args)
    assert result.exit_code == 0, result.output
    path = Path(json.loads(result.stdout)["path"])
    return Run.model_validate_json(path.read_bytes())


def set_key(project: Path, table: str, line: str) -> None:
    cfg = project / "evalh.toml"
    text = cfg.read_text(encoding="utf-8")
    head = f"[{table}]\n"
    assert head in text
    cfg.write_text(text.replace(head, head + line + "\n", 1), encoding="utf-8")


def keys(base: Run, cand: Run) -> list[tuple[str | None, str, object, object]]:
    return [(d.suite, d.key, d.base, d.candidate) for d in config_differences(base, cand)]


def test_the_seed_is_not_a_difference(project: Path) -> None:
    a = run(project, "--seed", "1")
    b = run(project, "--seed", "2")
    assert a.seed != b.seed
    assert keys(a, b) == []


def test_the_config_seed_is_not_a_difference_either(project: Path) -> None:
    set_key(project, "evalh", "seed = 5")
    a = run(project)
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text().replace("seed = 5", "seed = 6"))
    b = run(project)
    assert (a.seed, b.seed) == (5, 6)
    assert keys(a, b) == []


def test_repeats_moved_from_config_to_flag_is_not_a_difference(project: Path) -> None:
    by_flag = run(project, "--repeats", "3")
    set_key(project, "suites.smoke", "repeats = 3")
    by_config = run(project)
    assert keys(by_flag, by_config) == []
    assert keys(by_config, by_flag) == []


def test_a_real_repeats_change_is_listed_once_with_the_values_used(project: Path) -> None:
    once = run(project)
    thrice = run(project, "--repeats", "3")
    assert keys(once, thrice) == [("smoke", "repeats", 1, 3)]
    set_key(project, "suites.smoke", "repeats = 2")
    overridden = run(project, "--repeats", "3")  # config says 2, the flag ran 3
    assert keys(thrice, overridden) == []


def test_timeout_and_concurrency_are_compared_as_used(project: Path) -> None:
    # the test project has [evalh] concurrency = 2, timeout_s = 5
    by_flag = run(project, "--timeout", "7", "--concurrency", "3")
    set_key(project, "suites.smoke", "timeout_s = 7\nconcurrency = 3")
    by_suite = run(project)
    assert keys(by_flag, by_suite) == []
    longer = run(project, "--timeout", "9")
    assert keys(by_suite, longer) == [("smoke", "timeout_s", 7.0, 9.0)]


def test_max_error_rate_is_not_a_difference_of_what_ran(project: Path) -> None:
    a = run(project)
    b = run(project, "--max-error-rate", "0.5")
    set_key(project, "suites.smoke", "max_error_rate = 0.2")
    c = run(project)
    assert keys(a, b) == [] and keys(b, c) == []


def test_a_real_difference_is_still_listed(project: Path) -> None:
    a = run(project)
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text().replace("evalh_fixture_target:answer", "evalh_fixture_target:answer_async"))
    b = run(project)
    assert ("smoke", "target.callable", "evalh_fixture_target:answer",
            "evalh_fixture_target:answer_async") in keys(a, b)


def test_compare_json_lists_no_seed_and_no_repeats_moved_to_a_flag(project: Path) -> None:
    a = run(project, "--seed", "1", "--repeats", "3")
    set_key(project, "suites.smoke", "repeats = 3")
    b = run(project, "--seed", "2")
    result = cli(project, "compare", a.run_id, b.run_id, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["config_differences"] == []
