"""The README links every guide, and its tables render as written."""

from __future__ import annotations

import re
from pathlib import Path


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
