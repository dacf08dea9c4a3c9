"""The run document is the same, byte for byte, whatever the per-case path does inside.

A seeded run of the repo's own suites — sync Python targets (`gate`, `guards`, `panel`,
with their exact and classification scorers) and an `anthropic` model target against the
loopback mock (`scenarios_model`: retries after 429 and 529, tool calls, truncation,
repeats) — is run through the CLI and its document compared with
`tests/data/golden_run.json`, written by the code before the lean per-case path
(issue 33). Only what differs from run to run is masked first: the run id, clock times and
latencies, the git and environment facts, the endpoint limits (how far the in-flight
bound adapted depends on timing), the line index (byte offsets shift with the masked
fields' lengths) and the mock's random tool-call ids. Everything else — keys, their order,
every value, number formatting, escaping — must match byte for byte.

Regenerate (only when a document change is intended): `python tests/test_lean_path_golden.py --write`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden_run.json"
ARGS = ["run", "--suite", "gate", "--suite", "guards", "--suite", "panel", "--suite", "scenarios_model",
        "--seed", "7", "--no-cache", "-q"]
VOLATILE_SCALARS = ("run_id", "started_at", "finished_at", "latency_ms", "latency_ms_p50", "latency_ms_p95")


def normalize(raw: bytes) -> bytes:
    """`raw` with every field that differs between two runs of the same code replaced by `"~"`."""
    out = raw
    for key in VOLATILE_SCALARS:
        name = b'"' + key.encode() + b'":'
        out = re.sub(re.escape(name) + rb'(?:"[^"]*"|-?[0-9.eE+-]+|null)', name + b'"~"', out)
    for key in (b"git", b"environment"):
        out = re.sub(rb'"' + key + rb'":\{[^{}]*\}', b'"' + key + b'":"~"', out)
    out = re.sub(rb'"line_index":\{"every":\d+,"offsets":\{[^{}]*\}\}', b'"line_index":"~"', out)
    out = re.sub(rb'"limits":\{(?:[^{}]|\{[^{}]*\})*\}', b'"limits":"~"', out)
    return re.sub(rb'"id":"toolu_[0-9a-f]+"', b'"id":"toolu_~"', out)


def run_document(runs_dir: Path) -> bytes:
    """The document of one seeded run of the repo's suites, run through the CLI."""
    from typer.testing import CliRunner

    from evalh.cli.main import app

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(app, [*ARGS, "--runs-dir", str(runs_dir)])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    (doc,) = runs_dir.glob("*.json")
    return doc.read_bytes()


def test_a_seeded_runs_document_is_byte_identical_to_the_golden_one(tmp_path: Path) -> None:
    got = normalize(run_document(tmp_path / "runs"))
    want = GOLDEN.read_bytes()
    if got != want:  # the first difference, not 240 KB of bytes
        at = next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b) if len(got) == len(want) \
            else next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
        raise AssertionError(f"documents differ at byte {at}: got {got[at - 120:at + 120]!r}\n"
                             f"want {want[at - 120:at + 120]!r}")


def test_normalize_masks_only_what_varies() -> None:
    raw = (b'{"run_id":"20260101T000000Z-abc","git":{"sha":"x","dirty":false},"latency_ms":12.5,'
           b'"latency_ms_p50":null,"limits":{"a@b":{"requests":3}},"line_index":{"every":1024,"offsets":{"s":[9]}},'
           b'"score":0.5,"trace":[{"id":"toolu_00ff"}]}')
    assert normalize(raw) == (b'{"run_id":"~","git":"~","latency_ms":"~","latency_ms_p50":"~","limits":"~",'
                              b'"line_index":"~","score":0.5,"trace":[{"id":"toolu_~"}]}')


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_bytes(normalize(run_document(Path(tmp) / "runs")))
    print(f"wrote {GOLDEN.relative_to(ROOT)}")
