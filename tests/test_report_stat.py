"""`evalh report --stat PATH`: count, mean, min, max, p50 and p95 of a numeric field of the
output, trace or metadata, overall and by --by fields (metadata or rooted paths)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

PRODUCT = '''\
from evalh.targets.base import TargetOutput

def answer(inp):
    n = inp["n"]
    return TargetOutput(output={"num_iterations": n, "route": "deep" if n > 2 else "quick", "used_tool": n > 1},
                        trace=[{"tool": "search", "hits": n * 2}])
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "product:answer"\nregime = "stochastic"\n'
        'scorers = [{ type = "exact", field = "route", expected_field = "route" }]\n', encoding="utf-8")
    rows = [(1, "low"), (2, "low"), (3, "high"), (4, "high"), (10, "high")]
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"n": n}, "expected": {"route": "deep"},
                    "metadata": {"complexity": cx}}) + "\n" for i, (n, cx) in enumerate(rows)), encoding="utf-8")
    (tmp_path / "product.py").write_text(PRODUCT, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--config", str(tmp_path / "evalh.toml"), "--runs-dir",
                                      str(tmp_path / "runs"), "--quiet"])
    assert result.exit_code == 0, result.output
    return tmp_path


def report(root: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["report", "--config", str(root / "evalh.toml"), "--runs-dir", str(root / "runs"), *args])


def rows(result: Result, path: str) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)["field_stats"]
    return next(s for s in stats if s["path"] == path)["rows"]


def test_stat_overall_and_by_metadata(project: Path) -> None:
    result = report(project, "--stat", "output.num_iterations", "--by", "complexity", "--format", "json")
    overall, high, low = rows(result, "output.num_iterations")
    assert (overall["count"], overall["mean"], overall["max"], overall["p50"]) == (5, 4.0, 10, 3)
    assert overall["p95"] == pytest.approx(8.8)  # linear interpolation between 4 and 10
    assert (high["value"], high["count"], high["mean"], low["value"], low["mean"]) == ("high", 3, 17 / 3, "low", 1.5)


def test_stat_of_the_trace_by_an_output_path(project: Path) -> None:
    result = report(project, "--stat", "trace.search.hits", "--by", "output.route", "--format", "json")
    overall, deep, quick = rows(result, "trace.search.hits")
    assert overall["max"] == 20 and (deep["value"], deep["count"]) == ("deep", 3) and quick["mean"] == 3.0


def test_booleans_are_shares_and_text_is_no_number(project: Path) -> None:
    result = report(project, "--stat", "output.used_tool", "--stat", "output.num_iterations", "--by", "output.route",
                    "--format", "json")
    assert rows(result, "output.used_tool")[0]["mean"] == pytest.approx(0.8)
    # text is no number: never read as 0, and a field with no number anywhere is refused
    result = report(project, "--stat", "metadata.complexity", "--format", "json")
    assert result.exit_code == 2 and "no result of the reported runs has a number there" in result.stderr


def test_unknown_stat_path_is_refused(project: Path) -> None:
    result = report(project, "--stat", "metadata.weight")
    assert result.exit_code == 2 and "--stat metadata.weight: no result of the reported runs has a number there" in result.stderr
    result = report(project, "--stat", "num_iterations")
    assert result.exit_code == 2 and "give a rooted path" in result.stderr


def test_stat_tables_in_the_terminal_and_markdown(project: Path) -> None:
    result = report(project, "--stat", "output.num_iterations", "--by", "complexity")
    assert result.exit_code == 0, result.output
    assert "output.num_iterations — s" in result.stdout and "complexity = high" in result.stdout
    md = report(project, "--stat", "latency_ms", "--format", "md")
    assert md.exit_code == 0 and "## latency\\_ms — s" in md.stdout
