"""Sharded runs (`evalh run --shard K/N`) and `evalh merge` (issue 18 item 2).

The shards are real `evalh run` processes, started in parallel; the merged document is
compared case by case with one unsharded run of the same project and seed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalh.core.run.shard import Shard, parse_shard, select, shard_of
from evalh.errors import EvalhError
from evalh.models import Run
from tests.runner_project import TARGET_MODULE, by_triple, evalh_process, load, write_project

SEED = "4242"
# A second suite: two arms, two repeats, model-like usage and cost, some errored cases.
SECOND = f"""
[suites.t]
dataset = "data/s.jsonl"
regime = "stochastic"
repeats = 2
target = "{TARGET_MODULE}:parity"
arms = [{{ name = "a", target = "{TARGET_MODULE}:priced" }}, {{ name = "b", target = "{TARGET_MODULE}:parity" }}]
scorers = [{{ type = "exact", field = "verdict" }}]
"""


def evalh(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = evalh_process(list(args), root, env)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def docs(runs: Path) -> list[Path]:
    return sorted(p for p in runs.glob("*.json"))


def run_id(stdout: str) -> str:
    return str(json.loads(stdout)["run_id"])


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between a merged run and an unsharded one, per suite: every
    (case, arm, attempt) with its status, score, scores and output, and the counts."""
    out: dict[str, Any] = {}
    for name, suite in doc["suites"].items():
        rows = [(r["case_id"], r["arm"], r["attempt"], r["status"], r["score"],
                 [(s["scorer"], s["value"], s["passed"]) for s in r["scores"]], r["output"],
                 r["cost_usd"], r["tokens_in"], r["seed"], (r["error"] or {}).get("type"))
                for r in suite["cases"]]
        counts = {k: v for k, v in suite["aggregate"].items() if not k.startswith("latency")}
        arms = {a: {k: v for k, v in agg.items() if not k.startswith("latency")} for a, agg in suite["arms"].items()}
        out[name] = {"rows": rows, "aggregate": counts, "arms": arms, "dataset": suite["dataset"],
                     "regime": suite["regime"], "baseline_arm": suite["baseline_arm"], "details": suite["details"]}
    return out


# ------------------------------------------------------------------------------ shard selection


def test_shard_of_is_a_stable_hash_of_suite_and_case_id() -> None:
    # SHA-256, not hash(): the same on every machine and in every process (PYTHONHASHSEED)
    assert [shard_of("gate", f"c{i}", 4) for i in range(8)] == [shard_of("gate", f"c{i}", 4) for i in range(8)]
    code = "from evalh.core.run.shard import shard_of; print([shard_of('gate', f'c{i}', 4) for i in range(8)])"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert other == str([shard_of("gate", f"c{i}", 4) for i in range(8)])
    assert shard_of("gate", "c0", 4) == 1 + int.from_bytes(
        __import__("hashlib").sha256(b"gate\0c0").digest()[:8], "big") % 4


def test_shards_partition_the_cases() -> None:
    class C:
        def __init__(self, i: int) -> None:
            self.id = f"case-{i}"

    cases = [C(i) for i in range(500)]
    parts = [select(cases, "s", Shard(k, 4)) for k in range(1, 5)]
    ids = [c.id for part in parts for c in part]
    assert sorted(ids) == sorted(c.id for c in cases)  # complete and disjoint
    assert all(60 < len(p) < 190 for p in parts)  # and roughly even
    assert select(cases, "s", None) == cases
    assert [c.id for c in parts[0]] == [c.id for c in cases if shard_of("s", c.id, 4) == 1]  # order kept


@pytest.mark.parametrize("text", ["0/3", "4/3", "x/y", "1/0", "3", "-1/3", ""])
def test_bad_shard_values(text: str) -> None:
    with pytest.raises(EvalhError) as exc:
        parse_shard(text)
    assert exc.value.exit_code == 2
    assert "--shard" in exc.value.message and "\n" not in exc.value.message


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert str(parse_shard(" 1 / 1 ")) == "1/1"


def test_an_old_document_has_no_shard() -> None:
    run = Run.model_validate({"schema": "evalh.run/1", "run_id": "r", "started_at": "t",
                              "environment": {"evalh": "0", "python": "3", "platform": "p"}})
    assert run.shard is None and run.merged_from == []


# ------------------------------------------------------------------------------ the CLI


@pytest.mark.parametrize("value", ["0/3", "4/3", "x/y"])
def test_bad_shard_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, value: str) -> None:
    write_project(tmp_path, cases=6)
    res = evalh(tmp_path, "run", "--shard", value, "--seed", SEED, "-q")
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "--shard" in res.stderr
    assert not (tmp_path / "eval_runs").exists() or not docs(tmp_path / "eval_runs")


def test_a_shard_needs_a_shared_seed(tmp_path: Path) -> None:
    write_project(tmp_path, cases=6)
    res = evalh(tmp_path, "run", "--shard", "1/2", "-q")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "error: --shard 1/2: the shards of one run must share a seed: give every shard the same "
        "--seed N (or set [evalh] seed)"]


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One project; four shards run as four `evalh run` processes at once, each into its own
    runs directory (as CI jobs on separate machines would); one unsharded run."""
    root = tmp_path_factory.mktemp("sharded")
    write_project(root, cases=40, extra=SECOND)
    env = {"CRASH_EVERY": "7"}  # some errored cases, kept as errored on their shard
    procs = [evalh_process(["run", "--shard", f"{k}/4", "--seed", SEED, "--json", "--runs-dir", f"shard{k}"],
                           root, env) for k in range(1, 5)]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (_, stderr) in zip(procs, outs, strict=True):
        assert p.returncode == 1, stderr  # every fifth case fails: a deterministic failure, as unsharded
    full = evalh(root, "run", "--seed", SEED, "--json", "--runs-dir", "full", env=env)
    assert full.returncode == 1, full.stderr
    return {"root": root, "shards": [run_id(o) for o, _ in outs], "full": run_id(full.stdout)}


def test_four_shards_in_four_processes_merge_equal_to_one_run(sharded: dict[str, Any]) -> None:
    root: Path = sharded["root"]
    paths = [str(Path(f"shard{k}") / f"{rid}.json") for k, rid in enumerate(sharded["shards"], 1)]
    shard_docs = [load(root / p) for p in paths]
    assert [d["shard"] for d in shard_docs] == ["1/4", "2/4", "3/4", "4/4"]
    assert [d["config"]["shard"] for d in shard_docs] == ["1/4", "2/4", "3/4", "4/4"]
    counts = [len(d["suites"]["s"]["cases"]) for d in shard_docs]
    assert sum(counts) == 40 and all(counts)  # every shard did part of the work
    # a case's arms and attempts are all on one shard
    for d in shard_docs:
        cases = {r["case_id"] for r in d["suites"]["t"]["cases"]}
        assert len(d["suites"]["t"]["cases"]) == 4 * len(cases)

    res = evalh(root, "merge", *reversed(paths), "--json", "--runs-dir", "merged")  # any order
    assert res.returncode == 1, res.stderr  # the unsharded run's exit code
    out = json.loads(res.stdout)
    assert out["status"] == "complete" and out["merged_from"] == sharded["shards"]
    merged = load(root / out["path"])
    full = load(root / "full" / f"{sharded['full']}.json")
    assert merged["merged_from"] == sharded["shards"] and merged["shard"] is None
    assert comparable(merged) == comparable(full)
    assert [r["case_id"] for r in merged["suites"]["s"]["cases"]] == [f"c{n:03d}" for n in range(40)]
    assert merged["summary"] == full["summary"]
    assert merged["config"] == full["config"] and merged["seed"] == full["seed"]
    assert merged["status"] == full["status"] == "complete"
    # the merged document is a run like any other: the store reads it, compare pairs it
    cmp = evalh(root, "compare", str(Path("full") / f"{sharded['full']}.json"), out["path"], "--fail-on-regression")
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr


def _refused(root: Path, *args: str) -> str:
    before = sorted(p.name for p in (root / "merged_refused").glob("*")) if (root / "merged_refused").exists() else []
    res = evalh(root, "merge", *args, "-o", "merged_refused")
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    after = sorted(p.name for p in (root / "merged_refused").glob("*")) if (root / "merged_refused").exists() else []
    assert after == before  # nothing written
    return lines[0]


def test_merge_refuses_a_missing_shard(sharded: dict[str, Any]) -> None:
    root = sharded["root"]
    paths = [str(Path(f"shard{k}") / f"{rid}.json") for k, rid in enumerate(sharded["shards"], 1)]
    line = _refused(root, paths[0], paths[1], paths[3])
    assert line == "error: missing shard 3/4: got 1/4, 2/4, 4/4; a merge needs every shard"


def test_merge_refuses_a_duplicated_shard_and_an_unsharded_run(sharded: dict[str, Any]) -> None:
    root = sharded["root"]
    paths = [str(Path(f"shard{k}") / f"{rid}.json") for k, rid in enumerate(sharded["shards"], 1)]
    copy = root / "copy"
    copy.mkdir(exist_ok=True)
    (copy / "dup.json").write_bytes((root / paths[1]).read_bytes().replace(
        sharded["shards"][1].encode(), b"20990101T000000000Z-000000"))
    line = _refused(root, *paths, str(copy / "dup.json"))
    assert line.startswith("error: duplicated shard 2/4: runs ") and "are both shard 2/4" in line
    line = _refused(root, *paths, str(Path("full") / f"{sharded['full']}.json"))
    assert line == f"error: run {sharded['full']} is not a shard (it was not run with --shard K/N): nothing to merge"


def test_merge_refuses_overlapping_cases(sharded: dict[str, Any]) -> None:
    root = sharded["root"]
    paths = [root / f"shard{k}" / f"{rid}.json" for k, rid in enumerate(sharded["shards"], 1)]
    one, two = load(paths[0]), load(paths[1])
    two["suites"]["s"]["cases"].append(one["suites"]["s"]["cases"][0])  # a case on two shards
    bad = root / "overlap"
    bad.mkdir(exist_ok=True)
    (bad / "two.json").write_text(json.dumps(two), encoding="utf-8")
    case = one["suites"]["s"]["cases"][0]["case_id"]
    line = _refused(root, str(paths[0]), str(bad / "two.json"), str(paths[2]), str(paths[3]))
    assert line == (f"error: overlapping cases: case {case!r} of suite 's' is in shard 1/4 (run "
                    f"{sharded['shards'][0]}) and shard 2/4 (run {sharded['shards'][1]})")


def test_merge_refuses_shards_of_different_configs(tmp_path: Path) -> None:
    write_project(tmp_path, cases=12)
    a = evalh(tmp_path, "run", "--shard", "1/2", "--seed", SEED, "--json", "-q")
    cfg = tmp_path / "evalh.toml"
    cfg.write_text(cfg.read_text().replace("timeout_s = 10", "timeout_s = 11"))
    b = evalh(tmp_path, "run", "--shard", "2/2", "--seed", SEED, "--json", "-q")
    c = evalh(tmp_path, "run", "--shard", "2/2", "--seed", "1", "--json", "-q")
    ids = [run_id(x.stdout) for x in (a, b, c)]
    line = _refused(tmp_path, ids[0], ids[1])
    assert line == (f"error: different config: shard 1/2 (run {ids[0]}) and shard 2/2 (run {ids[1]}) differ at "
                    "config.settings.timeout_s; the shards of one run share one config")
    line = _refused(tmp_path, ids[1], ids[2])
    assert line.startswith("error: duplicated shard 2/2")
    d = evalh(tmp_path, "run", "--shard", "1/2", "--seed", "1", "--json", "-q")
    line = _refused(tmp_path, run_id(d.stdout), ids[1])
    assert line == (f"error: different seeds: shard 1/2 (run {run_id(d.stdout)}) has seed 1, shard 2/2 (run "
                    f"{ids[1]}) has {SEED}; run every shard with the same --seed")
    e = evalh(tmp_path, "run", "--shard", "1/3", "--seed", SEED, "--json", "-q")
    line = _refused(tmp_path, run_id(e.stdout), ids[1])
    assert line.startswith("error: different shard counts: ")


def test_a_partial_shard_makes_a_partial_merge_and_its_resume_keeps_the_shard(tmp_path: Path) -> None:
    write_project(tmp_path, cases=24, target="priced", concurrency=1)
    one = evalh(tmp_path, "run", "--shard", "1/2", "--seed", SEED, "--json", "--max-cost", "0.03")
    assert one.returncode == 1
    first = json.loads(one.stdout)
    assert first["status"] == "partial"
    two = evalh(tmp_path, "run", "--shard", "2/2", "--seed", SEED, "--json")
    res = evalh(tmp_path, "merge", first["run_id"], run_id(two.stdout), "--json")
    assert res.returncode == 1
    merged = json.loads(res.stdout)
    assert merged["status"] == "partial"
    doc = load(Path(merged["path"]) if Path(merged["path"]).is_absolute() else tmp_path / merged["path"])
    assert doc["status_reason"].startswith(f"shard 1/2 (run {first['run_id']}) is partial: cost budget reached")
    assert "evalh run --resume" in doc["status_reason"]
    assert any(f"run {doc['run_id']} is partial" in line for line in res.stderr.splitlines())

    # --shard with --resume is refused; the resume keeps the shard it recorded
    refused = evalh(tmp_path, "run", "--resume", first["run_id"], "--shard", "1/2")
    assert refused.returncode == 2 and "--resume keeps the run's own shard" in refused.stderr
    resumed = evalh(tmp_path, "run", "--resume", first["run_id"], "--max-cost", "100", "--json")
    assert resumed.returncode == 1, resumed.stderr  # every fifth case fails
    shard_doc = load(tmp_path / "eval_runs" / f"{first['run_id']}.json")
    assert shard_doc["status"] == "complete" and shard_doc["shard"] == "1/2"
    ids = {r["case_id"] for r in shard_doc["suites"]["s"]["cases"]}
    assert ids == {f"c{n:03d}" for n in range(24) if shard_of("s", f"c{n:03d}", 2) == 1}
    again = evalh(tmp_path, "merge", first["run_id"], run_id(two.stdout), "--json")
    assert json.loads(again.stdout)["status"] == "complete"
    full = evalh(tmp_path, "run", "--seed", SEED, "--json", "--runs-dir", "full")
    assert comparable(load(tmp_path / json.loads(again.stdout)["path"])) == comparable(
        load(tmp_path / "full" / f"{run_id(full.stdout)}.json"))
    assert by_triple(load(tmp_path / json.loads(again.stdout)["path"])).keys() == by_triple(
        load(tmp_path / "full" / f"{run_id(full.stdout)}.json")).keys()


def test_a_shard_set_as_the_baseline_is_warned_about(sharded: dict[str, Any]) -> None:
    """A shard made the baseline holds a candidate only to its quarter of the cases (a
    candidate that ran that quarter passes the gate at 100 % coverage): `baseline set` says
    so and names the merge, as it does for an unfinished run."""
    root = sharded["root"]
    done = evalh(root, "baseline", "set", sharded["shards"][0], "--runs-dir", "shard1")
    assert done.returncode == 0, done.stderr
    assert "shard 1/4" in done.stderr and "evalh merge" in done.stderr, done.stderr
    (root / "BASELINE").unlink()
