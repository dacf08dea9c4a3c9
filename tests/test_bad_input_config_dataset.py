"""Bad evalh.toml and dataset input that used to reach a traceback, a byte offset or a
silent change: each is exit 2, one line on stderr naming the file and the line (or the key),
and nothing written. Through `evalh validate` and `evalh run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

TOML = """\
[suites.s]
dataset = "d.jsonl"
target = "tgt:echo"
scorers = [{ type = "exact" }]
"""
BIG = "123456789012345678901234567890"


def project(root: Path, *, toml: bytes | str = TOML, dataset: bytes | str = '{"id": "a", "input": 1, "expected": 1}\n',
            name: str = "d.jsonl") -> Path:
    (root / "evalh.toml").write_bytes(toml.encode() if isinstance(toml, str) else toml)
    (root / name).write_bytes(dataset.encode() if isinstance(dataset, str) else dataset)
    (root / "tgt.py").write_text("def echo(x):\n    return x\n", encoding="utf-8")
    return root / "evalh.toml"


def invoke(command: str, cfg: Path) -> Result:
    args = [command, "--config", str(cfg)]
    if command == "run":
        args += ["--runs-dir", str(cfg.parent / "runs"), "--no-cache", "-q"]
    return CliRunner().invoke(app, args)


def refused(cfg: Path, *says: str) -> None:
    for command in ("validate", "run"):
        result = invoke(command, cfg)
        assert result.exit_code == 2, (command, result.output)
        err = result.stderr.strip()
        assert err.count("\n") == 0 and "Traceback" not in err, err
        for text in says:
            assert text in err, (command, err)
    assert not (cfg.parent / "runs").exists()  # nothing half-written


def test_thousands_of_nested_inline_tables(tmp_path: Path) -> None:
    """Before: RecursionError, exit 1."""
    cfg = project(tmp_path, toml=TOML + "[evalh]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n")
    refused(cfg, f"{cfg}:6:", "nested more than 64 levels deep")


def test_deep_nesting_the_parser_survives(tmp_path: Path) -> None:
    cfg = project(tmp_path, toml=TOML + "[evalh]\nx = " + "[" * 300 + "1" + "]" * 300 + "\n")
    refused(cfg, f"{cfg}:6:", "evalh.x", "nested more than 64 levels deep")


def test_an_integer_beyond_64_bits_in_the_config(tmp_path: Path) -> None:
    """Before: validate said valid, run ended in a TypeError traceback."""
    cfg = project(tmp_path, toml=TOML + f"[evalh]\nseed = {BIG}\n")
    refused(cfg, str(cfg), "evalh.seed", BIG, "64 bits")


def test_a_config_byte_that_is_not_utf8_is_named_by_line(tmp_path: Path) -> None:
    cfg = project(tmp_path, toml=TOML.encode() + b'description = "caf\xe9"\n')
    refused(cfg, f"{cfg}:5:", "not valid UTF-8", "0xe9")


def test_a_dataset_byte_that_is_not_utf8_is_named_by_line(tmp_path: Path) -> None:
    """Before: `cannot read: 'utf-8' codec can't decode byte 0xff in position 87`."""
    data = b'{"id": "a", "input": 1}\n{"id": "b", "input": 2}\n{"id": "c", "input": "\xff"}\n'
    cfg = project(tmp_path, dataset=data)
    refused(cfg, "d.jsonl:3:", "not valid UTF-8", "0xff", "column 23")


@pytest.mark.parametrize("field", ["input", "expected"])
def test_an_integer_beyond_64_bits_in_a_dataset_is_refused_not_rounded(tmp_path: Path, field: str) -> None:
    """Before: read as 1.2345678901234568e+29, run and digested rounded, exit 0."""
    line = f'{{"id": "b", "input": 1, "{field}": {{"n": {BIG}}}}}'.replace('"input": 1, "input"', '"input"')
    cfg = project(tmp_path, dataset='{"id": "a", "input": 1}\n' + line + "\n")
    refused(cfg, "d.jsonl:2:", BIG, "64 bits", "as a string")


def test_an_integer_beyond_64_bits_in_a_json_array_dataset(tmp_path: Path) -> None:
    cfg = project(tmp_path, dataset=f'[\n  {{"id": "a", "input": 1}},\n  {{"id": "b", "input": -{BIG}}}\n]\n')
    refused(cfg, "d.jsonl:3:", BIG, "64 bits")


def test_a_dataset_value_nested_too_deeply_to_digest(tmp_path: Path) -> None:
    """Before: `TypeError: Recursion limit reached` from the case digest."""
    cfg = project(tmp_path, dataset='{"id": "a", "input": ' + "[" * 300 + "]" * 300 + "}\n")
    refused(cfg, "d.jsonl:1:", "nested too deeply")


def test_64_bit_integers_are_kept_exact(tmp_path: Path) -> None:
    values = [2**64 - 1, -(2**63), 2**53 + 1]
    cfg = project(tmp_path, dataset=json.dumps({"id": "a", "input": values, "expected": values}) + "\n")
    result = invoke("run", cfg)
    assert result.exit_code == 0, result.output
    (doc,) = (cfg.parent / "runs").glob("*.json")
    (case,) = json.loads(doc.read_bytes())["suites"]["s"]["cases"]
    assert case["input"] == values and case["output"] == values and case["status"] == "passed"
