"""A comparison of two imported runs is byte-identical to the comparison of the same data
produced by evalh itself (issue 31, section 1).

For each tool, the two committed files of one eval (tests/data/imports: v1 then v2, made
by the real inspect_ai and promptfoo) are imported through the CLI. The same data is then
run by evalh: a project whose dataset holds the imported cases (ids, inputs, expected,
metadata, in the file's order), a python target (`replay.py`, written below) that answers
each case with the output, tokens and cost the tool recorded (and raises the recorded
error, an exception of the recorded type with the recorded message, where the tool
recorded one), and one custom scorer per scorer the importer names, under that name, that
returns the score the tool recorded. What is replayed is what the importer read from the
tool's file (`evalh.importers.read_file`), so nothing is copied from the imported run
document. The native runs carry the imported runs' labels (`run --label`).

`evalh compare BASE CAND --format json` and `--format md` of the imported pair and of the
native pair must then be the same bytes after masking only what must differ:

- the run ids: made from the clock and a random suffix when a run is written;
- `started_at`: the tool's own start time for an imported run, the clock for a native one;
- the git sha and dirty flag: an imported run carries the git state the tool recorded
  (inspect_ai's `eval.revision`: the commit of the checkout that made the fixtures), a
  native one that of the directory it ran in (none here: a temporary directory). evalh
  must not put this checkout's git state on an imported run, nor invent one for a run.

One more part cannot be the same, and is taken out only after it is checked: the
configuration differences the tool recorded between its two runs. promptfoo's v1 and v2
files name different providers (`label: answers-v1` / `answers-v2`, `config.version`), and
the comparison of the imported runs says so (`config_differences`, and the markdown's
"The runs' configuration differs" block), naming keys of the tool's own config
(`target.config.*`, `imported_config.*`) that a native run's snapshot has no place for
(its python target records `kind` and `callable`). The test asserts that those are exactly
the differences the tool recorded, and that the native pair has none, then compares the
rest byte for byte (docs/adopting.md). inspect_ai's two logs record the same config: nothing
is taken out for them.

Each pair is compared as imported (deterministic: one epoch, no repeats) and again as a
stochastic suite (`import --regime stochastic`, `regime = "stochastic"`), whose comparison
has metric rows. One of them is measured, not replayed: the latency row. A native run's
latency is taken by evalh's clock around the call (a target cannot report it), an imported
one's is the tool's, so the `latency_ms` row's figures (base, candidate, change, the
allowance the 50 ms floor makes of the base, its note and direction) cannot be the same.
The row is taken out of both texts (the JSON object, the markdown table's row) after
checking it is there on both sides, reported only (not gating) and over the same cases;
the rest, the gating rows and the verdict included, is compared byte for byte.

Nothing else is masked. The data replayed is that of attempt 0 of each case: a python
target is not told the attempt, and the committed pairs have one attempt a case.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.importers import read_file

DATA = Path(__file__).resolve().parent / "data" / "imports"
FILES = {"inspect": ("inspect-v1.eval", "inspect-v2.json"), "promptfoo": ("promptfoo-v1.json", "promptfoo-v2.json")}

REPLAY = '''"""Answers and scores each case as the tool recorded them (REPLAY_FILE)."""
import json
import os
from pathlib import Path

from evalh.models import Score
from evalh.targets.base import TargetOutput


def _recorded(case_id):
    return json.loads(Path(os.environ["REPLAY_FILE"]).read_text())[case_id]


def target(case):
    r = _recorded(case.id)
    if r["error"] is not None:
        raise type(r["error"]["type"], (RuntimeError,), {})(r["error"]["message"])
    return TargetOutput(output=r["output"], tokens_in=r["tokens_in"], tokens_out=r["tokens_out"],
                        cost_usd=r["cost_usd"], cached=r["cached"])


def scorer(name):
    def score(case, output, ctx):
        assert ctx.attempt == 0
        return Score.model_validate(next(s for s in _recorded(case.id)["scores"] if s["scorer"] == name))
    return score
'''


def invoke(root: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    cwd, saved = Path.cwd(), {k: os.environ.get(k) for k in env or {}}
    os.chdir(root)
    os.environ.update(env or {})
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def import_file(root: Path, name: str, *extra: str) -> str:
    result = invoke(root, "import", str(DATA / name), *extra)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def native_project(root: Path, files: tuple[str, str], regime: str) -> tuple[list[Path], list[str]]:
    """The evalh project that runs the same data: its dataset, replay target and scorers;
    one replay file per tool file. Returns the replay files and the labels."""
    runs = [read_file(DATA / name) for name in files]
    (suite_name, suite), = runs[0].suites.items()
    assert suite_name == "capitals" and all(list(r.suites) == ["capitals"] for r in runs)
    cases = list({r.case_id: r for r in suite.results}.values())
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": r.case_id, "input": r.input, "expected": r.expected, "metadata": r.metadata}) + "\n"
        for r in cases))
    (root / "replay.py").write_text(REPLAY)
    for name in suite.scorers:  # one module-level function per scorer the importer names
        (root / "replay.py").write_text((root / "replay.py").read_text() + f"\n\n{name} = scorer({name!r})\n")
    scorers = ",\n".join(f'{{ type = "custom", name = "{n}", function = "replay:{n}" }}' for n in suite.scorers)
    (root / "evalh.toml").write_text(
        f'[suites.capitals]\ndataset = "cases.jsonl"\ntarget = "replay:target"\n'
        f'regime = "{regime}"\nscorers = [\n{scorers}\n]\n')
    replays = []
    for n, run in enumerate(runs):
        results = run.suites["capitals"].results
        assert all(r.attempt == 0 and r.arm == "default" for r in results)  # one attempt, one arm
        assert [r.case_id for r in results] == [r.case_id for r in cases]  # the same cases
        path = root / f"recorded-{n}.json"
        path.write_bytes(orjson.dumps({r.case_id: r.model_dump(mode="json") for r in results}))
        replays.append(path)
    return replays, [run.label or "" for run in runs]


def masked(text: str, ids: list[str]) -> str:
    """`text` with the run ids, start times and git state masked (the module docstring)."""
    for n, run_id in enumerate(ids):
        text = text.replace(run_id, f"<run {n}>")
    text = re.sub(r'"started_at": "[^"]*"', '"started_at": "<time>"', text)
    text = re.sub(r'"git_sha": (null|"[0-9a-f]+")', '"git_sha": "<sha>"', text)
    text = re.sub(r'"git_dirty": (null|true|false)', '"git_dirty": "<dirty>"', text)
    return re.sub(r" git [0-9a-f]+( dirty)?", "", text)  # markdown: the header's git state


TOOL_DIFFERENCES = {
    "inspect": [],
    "promptfoo": [("target.config.version", "v1", "v2"), ("target.label", "answers-v1", "answers-v2"),
                  ("imported_config.providers[0].config.version", "v1", "v2"),
                  ("imported_config.providers[0].label", "answers-v1", "answers-v2")],
}
JSON_DIFFERENCES = re.compile(r'\n  "config_differences": \[\n.*?\n  \],', re.DOTALL)
MD_DIFFERENCES = re.compile(r"\n> \*\*The runs' configuration differs:\*\*\n(> - .*\n)+")


LATENCY_JSON = re.compile(r'\{\n +"arm": "[^"]*",\n +"name": "latency_ms",\n.*?\n +\}', re.DOTALL)
LATENCY_MD = re.compile(r"^\| latency \|.*$", re.MULTILINE)


def without_latency(text: str, fmt: str) -> str:
    """`text` without its latency row, once checked (the module docstring)."""
    if fmt == "json":
        (row,) = [m for m in json.loads(text)["suites"]["capitals"]["metrics"] if m["name"] == "latency_ms"]
        assert row["gating"] is False and row["n"] == 6
        text, n = LATENCY_JSON.subn("{}", text)
        assert {} in json.loads(text)["suites"]["capitals"]["metrics"]  # the row, and only it
    else:
        text, n = LATENCY_MD.subn("| latency | measured |", text)
    assert n == 1
    return text


def without_tool_differences(text: str, fmt: str, tool: str) -> str:
    """`text` without the configuration differences the tool recorded, once checked to be
    exactly those (the module docstring)."""
    expected = TOOL_DIFFERENCES[tool]
    if fmt == "json":
        got = [(d["key"], d["base"], d["candidate"]) for d in json.loads(text)["config_differences"]]
        assert got == expected
        return JSON_DIFFERENCES.sub('\n  "config_differences": [],', text) if expected else text
    block = MD_DIFFERENCES.search(text)
    assert (block is not None) == bool(expected)
    if block is None:
        return text
    escaped = [k.replace("_", "\\_").replace("[", "\\[").replace("]", "\\]") for k, _, _ in expected]
    assert block.group(0).strip("\n").splitlines()[1:] == [
        f"> - capitals: {key}: '{b}' \u2192 '{c}'" for key, (_, b, c) in zip(escaped, expected, strict=True)]
    return text[:block.start()] + text[block.end():]


@pytest.mark.parametrize("regime", ["deterministic", "stochastic"])
@pytest.mark.parametrize("tool", list(FILES))
def test_comparing_imported_runs_is_comparing_the_same_data_run_by_evalh(tmp_path: Path, tool: str,
                                                                        regime: str) -> None:
    stochastic = regime == "stochastic"
    imported = [import_file(tmp_path, name, *(["--regime", regime] if stochastic else [])) for name in FILES[tool]]
    replays, labels = native_project(tmp_path, FILES[tool], regime)
    native = []
    for replay, label in zip(replays, labels, strict=True):
        result = invoke(tmp_path, "run", "--json", "--label", label, env={"REPLAY_FILE": str(replay)})
        assert result.exit_code == 1, result.output  # canada fails and atlantis errors, as imported
        native.append(json.loads(result.stdout)["run_id"])
    for fmt in ("json", "md"):
        got = [invoke(tmp_path, "compare", *pair, "--format", fmt) for pair in (imported, native)]
        assert [r.exit_code for r in got] == [0, 0], [r.output for r in got]
        texts = [masked(r.stdout, ids) for r, ids in zip(got, (imported, native), strict=True)]
        assert ("inconclusive" if stochastic else "regressed") in texts[0].lower() and "capital.australia" in texts[0]
        texts[0] = without_tool_differences(texts[0], fmt, tool)
        if stochastic:
            texts = [without_latency(t, fmt) for t in texts]
        if fmt == "json":
            assert json.loads(texts[1])["config_differences"] == []  # the native pair: one config
        assert texts[0] == texts[1], fmt


def test_an_imported_suite_records_the_allowances_of_the_project_suite_of_its_name(tmp_path: Path) -> None:
    """Imported in a project whose `capitals` suite sets its allowances, the imported suite
    records those (as a run of that suite would), and a comparison applies them; a suite
    the project does not name records the defaults."""
    for name in ("answers.py", "cases.jsonl"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    (tmp_path / "evalh.toml").write_text(
        '[suites.capitals]\ndataset = "cases.jsonl"\ntarget = "answers:target"\n'
        'scorers = [{ type = "contains" }]\nthresholds = { pass_rate_drop = 0.2, cost_increase_pct = 10.0 }\n')
    ids = [import_file(tmp_path, name) for name in FILES["inspect"]]
    doc = json.loads((tmp_path / "eval_runs" / f"{ids[0]}.json").read_bytes())
    table = doc["config"]["suites"]["capitals"]["thresholds"]
    assert (table["pass_rate_drop"], table["cost_increase_pct"], table["latency_floor_ms"]) == (0.2, 10.0, 50.0)
    result = invoke(tmp_path, "compare", *ids, "--format", "json")
    suite = json.loads(result.stdout)["suites"]["capitals"]
    assert suite["thresholds_source"] == "base and candidate config" and suite["thresholds"]["pass_rate_drop"] == 0.2

    (tmp_path / "evalh.toml").write_text((tmp_path / "evalh.toml").read_text().replace("capitals", "other"))
    doc = json.loads((tmp_path / "eval_runs" / f"{import_file(tmp_path, FILES['inspect'][0])}.json").read_bytes())
    assert doc["config"]["suites"]["capitals"]["thresholds"]["pass_rate_drop"] == 0.05  # the default
