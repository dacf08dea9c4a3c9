"""Real runs for the figure tests: a throwaway project run through the CLI, and every surface
a person reads of its run — `evalh report` in each format, `evalh show`, and the
dashboard's `/api/runs/RUN/report` over loopback HTTP.

A test writes a project (config, dataset, a target module), runs it with `run_project`, and
asserts a figure on each surface `surfaces` returns. Nothing here builds a run by hand.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner, Result

from evalh.cli.main import app

FORMATS = ("table", "md", "html", "json")


def write_project(root: Path, toml: str, files: dict[str, str]) -> Path:
    """`evalh.toml` and every other file under `root`; the config's path."""
    (root / "evalh.toml").write_text(toml, encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "evalh.toml"


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def cli(cfg: Path, *args: str, config: bool = True) -> Result:
    extra = ["--config", str(cfg)] if config else []
    return CliRunner().invoke(app, [*args, *extra, "--runs-dir", str(cfg.parent / "eval_runs")],
                              env={"COLUMNS": "240"})


def run_project(cfg: Path, *args: str, expect: tuple[int, ...] = (0, 1)) -> str:
    """`evalh run` on the project; the id of the run it wrote."""
    result = cli(cfg, "run", *args)
    assert result.exit_code in expect, result.output
    runs = sorted((cfg.parent / "eval_runs").glob("*.json"))
    assert runs, (result.exit_code, result.output, result.stderr, repr(result.exception))
    return runs[-1].stem


def report(cfg: Path, run_id: str, fmt: str, *extra: str) -> str:
    """`evalh report RUN --format FMT` in the project (its BASELINE, if set, read)."""
    result = cli(cfg, "report", run_id, "--format", fmt, *extra)
    assert result.exit_code == 0, result.output
    text = result.stdout
    if fmt == "html":  # the drawn page, not the JSON embedded for its scripts
        text = text[:text.index('<script type="application/json"')]
    return text


def dashboard(root: Path, path: str, runs_dir: Path | None = None) -> Any:
    """GET `path` from the dashboard served over `runs_dir` (default `root/eval_runs`) of
    the project at `root`, as JSON."""
    from evalh.ui.server import make_server

    server = make_server(runs_dir or root / "eval_runs", root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        got = httpx.get(f"http://127.0.0.1:{server.server_address[1]}{path}", timeout=60)
        assert got.status_code == 200, got.text
        return got.json()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def surfaces(cfg: Path, run_id: str) -> dict[str, str]:
    """Every surface of the run as text: `report` in each format, `show`, and the
    dashboard's report endpoint (its JSON text)."""
    out = {fmt: report(cfg, run_id, fmt) for fmt in FORMATS}
    shown = cli(cfg, "show", run_id)
    assert shown.exit_code == 0, shown.output
    out["show"] = shown.stdout
    out["api"] = json.dumps(dashboard(cfg.parent, f"/api/runs/{run_id}/report"))
    return out


def figures(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The figures of `kind` of every suite of a report document (JSON or the API's)."""
    return [f for s in doc["suites"] for f in s["figures"] if f["kind"] == kind]


def count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text, re.IGNORECASE))
