"""docs/config.md cannot drift from the config models, and its examples are valid config."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from evalh.config import load_config


def _generator(repo_root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_config_reference", repo_root / "docs" / "gen_config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_reference_is_up_to_date(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "config.md").read_text(encoding="utf-8")
    fresh = _generator(repo_root).render(doc)
    assert fresh == doc, "docs/config.md is stale: run `python docs/gen_config_reference.py`"


def _toml_blocks(repo_root: Path) -> list[str]:
    doc = (repo_root / "docs" / "config.md").read_text(encoding="utf-8")
    return re.findall(r"```toml\n(.*?)```", doc, re.S)


def test_every_toml_example_parses(repo_root: Path) -> None:
    blocks = _toml_blocks(repo_root)
    assert len(blocks) > 10
    for block in blocks:
        tomllib.loads(block)


@pytest.mark.parametrize("marker", ["[evalh]", "arms = ["])
def test_whole_file_examples_load_as_config(repo_root: Path, tmp_path: Path, marker: str) -> None:
    block = next(b for b in _toml_blocks(repo_root) if marker in b)
    (tmp_path / "evalh.toml").write_text(block, encoding="utf-8")
    cfg = load_config(tmp_path / "evalh.toml", check_datasets=False)
    assert cfg.suites


def test_concepts_links_the_other_guides(repo_root: Path) -> None:
    text = (repo_root / "docs" / "concepts.md").read_text(encoding="utf-8")
    for name in ("config", "providers", "judges", "report", "methodology", "ci", "running"):
        assert f"({name}.md" in text, name


def test_readme_config_examples_load(repo_root: Path, tmp_path: Path) -> None:
    """The README's evalh.toml snippets are what a new user copies: each must load."""
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        path = tmp_path / f"readme{i}.toml"
        path.write_text(block, encoding="utf-8")
        cfg = load_config(path, check_datasets=False)
        assert cfg.suites, block
