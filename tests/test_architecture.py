"""The rules of docs/architecture.md that import-linter does not check: no private name is
imported across packages. (The layers, the cycles and where rich may be imported are
import-linter contracts in pyproject.toml, run by `lint-imports` in .ci/run.)"""

from __future__ import annotations

import ast
from pathlib import Path

import evalh

PACKAGE = Path(evalh.__file__).parent


def _package_of(module: str) -> str:
    """`evalh.core.run` for `evalh.core.run.plan` (each room of the core is a package of its
    own); `evalh.report` for `evalh.report.render`; `evalh` for a top-level module
    (`evalh.store`)."""
    parts = module.split(".")
    if parts[:2] == ["evalh", "core"] and len(parts) > 3:
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def private_imports_across_packages(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = _module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            if not node.module.startswith("evalh") or _package_of(node.module) == _package_of(importer):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{importer}:{node.lineno} imports {node.module}.{alias.name}")
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    assert private_imports_across_packages() == []


def test_the_check_sees_a_private_import_across_packages(tmp_path: Path) -> None:
    pkg = tmp_path / "evalh"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "cli" / "x.py").write_text("from evalh.ui.server import _secret, public\n"
                                      "from evalh.cli.y import _same_package\n")
    assert private_imports_across_packages(pkg) == ["evalh.cli.x:1 imports evalh.ui.server._secret"]


def test_each_room_of_the_core_is_a_package_of_its_own(tmp_path: Path) -> None:
    """A private name of one room of the core (`core.run`) is not imported by another
    (`core.analysis`); inside a room it may be."""
    pkg = tmp_path / "evalh"
    (pkg / "core" / "analysis").mkdir(parents=True)
    (pkg / "core" / "analysis" / "x.py").write_text("from evalh.core.run.plan import _private\n"
                                                    "from evalh.core.analysis.sweep import _same_room\n")
    assert private_imports_across_packages(pkg) == ["evalh.core.analysis.x:1 imports evalh.core.run.plan._private"]
