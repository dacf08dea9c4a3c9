"""docs/cli.md cannot drift from the commands' --help, and the README links every guide."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType


def _generator(repo_root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_reference", repo_root / "docs" / "gen_cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_up_to_date(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "cli.md").read_text(encoding="utf-8")
    assert _generator(repo_root).render() == doc, \
        "docs/cli.md is stale: run `python docs/gen_cli_reference.py`"


def test_cli_reference_has_every_command(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in ("run", "validate", "runs", "show", "baseline set", "baseline show", "compare",
                 "report", "ui", "rejudge", "sweep", "export-requests", "label import",
                 "label report", "mock-provider"):
        assert f"\n## evalh {name}\n" in doc, name


def test_readme_links_every_guide_and_every_link_exists(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)", readme)
    for target in targets:
        if not target.startswith("http"):
            assert (repo_root / target).exists(), target
    for guide in (repo_root / "docs").glob("*.md"):
        assert f"(docs/{guide.name})" in readme, guide.name


def test_no_table_cell_is_split_by_a_pipe_in_code(repo_root: Path) -> None:
    """In a markdown table a `|` inside backticks still ends the cell (GitHub renders
    `--format json|markdown` as two cells); it must be written `\\|`."""
    bad = []
    for path in [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("|"):
                bad += [f"{path.name}:{n}: {span}" for span in re.findall(r"`([^`]*)`", line)
                        if re.search(r"(?<!\\)\|", span)]
    assert not bad, bad
