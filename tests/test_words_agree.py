"""Where evalh says one thing in one place and another elsewhere (issue 19, item 5):
the suite order, the name of the answer's path, the markdown format's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from compare_factory import det_suite, make_run
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.config import load_config
from evalh.errors import ConfigError
from evalh.store import RunStore


def test_every_doc_that_orders_suites_names_the_estimated_cost(repo_root: Path) -> None:
    """The code orders by tier, then estimated cost, then name (prepare.cheapest_first)."""
    seen = 0
    for name in ("concepts.md", "running.md", "config.md"):
        text = (repo_root / "docs" / name).read_text(encoding="utf-8")
        for m in re.finditer(r"then by name", text):
            seen += 1
            before = " ".join(text[max(0, m.start() - 260):m.start()].split())
            assert "estimated cost" in before, f"docs/{name}: {before[-120:]!r} then by name"
    assert seen >= 4


def _suite(tmp_path: Path, scorer: str) -> object:
    (tmp_path / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = "m:f"\nscorers = [{scorer}]\n', encoding="utf-8")
    return load_config(tmp_path / "evalh.toml", check_datasets=False).suites["s"].scorers[0]


EXT = 'type = "external_score", url = "http://127.0.0.1:9/v1/score", model = "m"'


def test_external_score_and_citation_judge_name_the_answer_path_alike(tmp_path: Path) -> None:
    ext = _suite(tmp_path, f'{{ {EXT}, answer_field = "text" }}')
    cit = _suite(tmp_path, '{ type = "citation_judge", provider = "anthropic", model = "m", answer_field = "text" }')
    assert ext.answer_field == cit.answer_field == "text"  # type: ignore[attr-defined]
    # the older name still reads, and lands under the common one
    old = _suite(tmp_path, f'{{ {EXT}, claim_field = "text" }}')
    assert old.answer_field == "text"  # type: ignore[attr-defined]
    assert "answer_field" in type(ext).SNAPSHOT and "claim_field" not in type(ext).SNAPSHOT
    with pytest.raises(ConfigError, match="not both"):
        _suite(tmp_path, f'{{ {EXT}, answer_field = "a", claim_field = "b" }}')


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    store = RunStore(tmp_path / "runs")
    store.write(make_run("20260101T000000000Z-aaaaaa", {"gate": det_suite({"a": "passed"})}))
    store.write(make_run("20260101T000100000Z-bbbbbb", {"gate": det_suite({"a": "passed"})}))
    return tmp_path / "runs"


@pytest.mark.parametrize("spelling", ["md", "markdown"])
def test_compare_and_report_take_both_spellings_of_markdown(runs: Path, spelling: str) -> None:
    ids = ["20260101T000000000Z-aaaaaa", "20260101T000100000Z-bbbbbb"]
    cmp = CliRunner().invoke(app, ["compare", *ids, "--format", spelling, "--runs-dir", str(runs)])
    assert cmp.exit_code == 0, cmp.output
    assert cmp.stdout.startswith("## evalh compare")
    rep = CliRunner().invoke(app, ["report", *ids, "--format", spelling, "--runs-dir", str(runs)])
    assert rep.exit_code == 0, rep.output
    assert rep.stdout.startswith("# evalh report")
