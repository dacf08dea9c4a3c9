"""Claim offsets are integers: a JSON `true`/`false` (a bool is an int in Python) is not an
offset, and `evalh validate` refuses it with the file and line like any span that does not
hold, instead of reading `true` as 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.test_exact_text import CASE_CLAIMS, EVIDENCE, GOOD_CLAIM, _case, one_line, project, sha

runner = CliRunner()


@pytest.mark.parametrize("claim", [
    {"id": "c1", "start": False, "end": 24, "text": "The catch block is empty"},
    {"id": "c1", "start": True, "end": 24},
])
def test_a_boolean_offset_is_refused(tmp_path: Path, claim: dict[str, object]) -> None:
    ev = "catch (IOException e) { log(e); return 0; }"
    cfg = project(tmp_path, [_case("a", ev, sha(ev), GOOD_CLAIM), _case("b", ev, sha(ev), claim)],
                  require=EVIDENCE + CASE_CLAIMS)
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert "cases.jsonl:2: case 'b': expected.claims[0]: start/end must be offsets" in one_line(result)
