"""Bidirectional controls from model output never reach the terminal or markdown raw.

U+202E (right-to-left override) and the isolates U+2066–U+2069 reorder what a reader
sees ("Trojan Source"): a failing case's text can be made to read as something else in a
terminal, a CI log or a job summary. They are neutralised like the other control
characters (replaced by U+FFFD), by `evalh show`, `runs`, `report` and `compare`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import report_factory as rf
from typer.testing import CliRunner

from evalh.console import inert
from evalh.models import Score
from evalh.report.render import md_escape
from evalh.store import RunStore

BIDI = "\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a\u202b\u202c\u202d"
HOSTILE = "ok" + BIDI + "evil"
BASE_ID = "20260101T000000000Z-aaaaaa"
CAND_ID = "20260101T000100000Z-bbbbbb"


def _clean(text: str) -> None:
    leaked = sorted({f"U+{ord(ch):04X}" for ch in text if ch in BIDI})
    assert not leaked, leaked


@pytest.mark.parametrize("ch", list(BIDI))
def test_each_bidi_control_is_neutralised(ch: str) -> None:
    assert inert(f"a{ch}b") == "a\ufffdb"
    assert md_escape(f"a{ch}b") == "a\ufffdb"


def test_markdown_drops_other_control_characters_too() -> None:
    assert md_escape("a\x1b[2Jb\x07c\x9bd") == "a\ufffd\\[2Jb\ufffdc\ufffdd"


def test_right_to_left_text_itself_is_kept() -> None:
    """Hebrew or Arabic letters are text, not controls."""
    assert inert("שלום مرحبا") == "שלום مرحبا" and md_escape("שלום") == "שלום"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    runs_dir = tmp_path / "runs"
    store = RunStore(runs_dir)
    base = rf.make_run(BASE_ID, {"gate": rf.suite([rf.res("c" + HOSTILE, "passed"), rf.res("d", "passed")])},
                       label="base" + BIDI)
    cand = rf.make_run(CAND_ID, {"gate": rf.suite([
        rf.res("c" + HOSTILE, "errored", error=("TargetError", "reply " + HOSTILE), output="out" + HOSTILE),
        rf.res("d", "failed", output="said " + HOSTILE,
               scores=[Score(scorer="judge", value=0.0, passed=False, rationale="because " + HOSTILE)]),
    ])}, label="cand" + BIDI)
    store.write(base)
    store.write(cand)
    return runs_dir


@pytest.mark.parametrize("args", [
    ["show", CAND_ID],
    ["runs"],
    ["report", CAND_ID],
    ["report", CAND_ID, "--format", "md"],
    ["compare", BASE_ID, CAND_ID],
    ["compare", BASE_ID, CAND_ID, "--format", "markdown"],
])
def test_commands_never_print_bidi_controls(runs: Path, args: list[str]) -> None:
    result = CliRunner().invoke(app_(), [*args, "--runs-dir", str(runs)])
    assert result.exit_code in (0, 1), result.output
    assert "evil" in result.stdout or args[0] == "runs"
    _clean(result.stdout)
    _clean(result.stderr)


def app_():  # noqa: ANN202 - the CLI app, imported when a test needs it
    from evalh.cli.main import app

    return app
