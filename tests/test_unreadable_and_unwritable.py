"""Bad input and a folder that cannot be written, through the CLI (issue 27, item 12):
`evalh report` on a document whose `status` is not a status is one line and exit 2 in every
format, writing nothing; `export-requests -o ro/x.json` into a read-only folder is exit 4
and leaves the run's label registry (`<run>.labels.json`) unwritten — nothing is written
until everything can be."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def run_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "tgt_12:echo"\nscorers = [{ type = "contains" }]\n',
        encoding="utf-8")
    (tmp_path / "tgt_12.py").write_text('def echo(inp):\n    return "x " + inp["q"]\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": "x"}) + "\n" for i in range(3)))
    (tmp_path / "rubric.md").write_text("Is it right?\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("run", "-q")
    assert result.exit_code == 0, result.output
    (doc,) = (tmp_path / "eval_runs").glob("*.json")
    return doc.name.removesuffix(".json")


@pytest.mark.parametrize("fmt", ["table", "md", "json", "html"])
def test_report_on_a_document_with_a_status_that_is_not_one_is_one_line_and_exit_2(
    tmp_path: Path, run_id: str, fmt: str
) -> None:
    path = tmp_path / "eval_runs" / f"{run_id}.json"
    doc = json.loads(path.read_text())
    doc["status"] = 17
    path.write_text(json.dumps(doc))
    for args in ([run_id], [str(path)], []):
        result = invoke("report", *args, "--format", fmt, "-o", "out.txt")
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and "status" in lines[0] and run_id in lines[0], lines
        assert not (tmp_path / "out.txt").exists()


def test_export_requests_into_a_read_only_folder_writes_nothing(
    tmp_path: Path, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        """A read-only filesystem under `ro/` (the tests may run as root, whom chmod does not stop)."""
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and os.fspath(path).startswith(str(ro)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    result = invoke("export-requests", run_id, "-o", "ro/x.json", "--rubric", "rubric.md")
    assert result.exit_code == 4, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "ro/x.json" in lines[0] and "Read-only file system" in lines[0], lines
    assert sorted(p.name for p in (tmp_path / "eval_runs").iterdir()) == [f"{run_id}.json"]
    assert list(ro.iterdir()) == []

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    result = invoke("export-requests", run_id, "-o", "ro/x.json", "--rubric", "rubric.md")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "eval_runs" / f"{run_id}.labels.json").is_file() and (ro / "x.json").is_file()
