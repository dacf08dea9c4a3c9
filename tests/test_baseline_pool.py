"""A BASELINE of several runs: pooling (`evalh.core.compare.pool`), the marker holding several ids,
compare against the pool, and `evalh baseline noise` (`evalh.core.compare.noise`), through the CLI
on real runs of a test project and of the shipped examples."""

from __future__ import annotations

import json
import shutil
import statistics
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from compare_factory import make_run, result, suite
from typer.testing import CliRunner, Result

from evalh.baseline import read_baseline, read_baseline_ids, write_baseline
from evalh.cli.main import app
from evalh.core.compare.noise import case_outcomes, measure_noise
from evalh.core.compare.pool import PoolError, pool_runs, what_ran_differences
from evalh.errors import InvalidRunId
from evalh.models import Run

A = "20260101T000000000Z-aaaaaa"
B = "20260101T000100000Z-bbbbbb"
C = "20260101T000200000Z-cccccc"


def _keys(run: Run, name: str = "s") -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for r in run.suites[name].cases:
        out.setdefault((r.case_id, r.arm), []).append(r.attempt)
    return out


# --------------------------------------------------------------------------- pool_runs


def _three_runs() -> list[Run]:
    """A: two attempts of x and y; B: one of x, one of y, and z (only B has it);
    C: attempts 1 then 0 of x (out of order), no y; C also has a suite of its own."""
    a = make_run(A, {"s": suite([result("x", "passed", attempt=0), result("x", "failed", attempt=1),
                                 result("y", "passed", attempt=0), result("y", "passed", attempt=1)],
                                "stochastic")})
    b = make_run(B, {"s": suite([result("x", "failed"), result("y", "passed"), result("z", "errored")],
                                "stochastic")})
    c = make_run(C, {"s": suite([result("x", "passed", attempt=1, latency_ms=5.0),
                                 result("x", "failed", attempt=0, latency_ms=7.0)], "stochastic"),
                     "only_c": suite([result("w", "passed")])})
    return [a, b, c]


def test_pool_renumbers_attempts_per_case_across_runs() -> None:
    runs = _three_runs()
    before = [r.model_dump() for r in runs]
    pooled = pool_runs(runs)
    assert pooled.pooled_from == [A, B, C] and pooled.run_id == A
    keys = _keys(pooled)
    assert keys == {("x", "default"): [0, 1, 2, 3, 4], ("y", "default"): [0, 1, 2],
                    ("z", "default"): [0]}
    # x: A's attempts 0, 1, then B's, then C's in their own attempt order (0 = 7 ms first).
    x = [r for r in pooled.suites["s"].cases if r.case_id == "x"]
    assert [r.status for r in x] == ["passed", "failed", "failed", "failed", "passed"]
    assert [r.latency_ms for r in x][3:] == [7.0, 5.0]
    assert all(r.case_digest == f"d-{r.case_id}" for r in pooled.suites["s"].cases)
    # A suite only one run has keeps what exists.
    assert _keys(pooled, "only_c") == {("w", "default"): [0]}
    # Aggregates and summary are the pool's, not the first run's.
    agg = pooled.suites["s"].aggregate
    assert (agg.n, agg.passed, agg.failed, agg.errored) == (9, 5, 3, 1)
    assert pooled.summary["pooled_runs"] == 3 and pooled.summary["cases"] == 10
    # Pure: the inputs are not touched.
    assert [r.model_dump() for r in runs] == before


def test_pooled_run_round_trips_and_old_documents_have_no_pool() -> None:
    pooled = pool_runs(_three_runs())
    again = Run.model_validate_json(pooled.to_json_bytes())
    assert again.pooled_from == [A, B, C] and _keys(again) == _keys(pooled)
    old = json.loads(make_run(A).to_json_bytes())
    del old["pooled_from"]
    assert Run.model_validate(old).pooled_from == []


def test_pool_status_is_the_worst_of_its_runs() -> None:
    runs = _three_runs()
    runs[1].status, runs[1].status_reason = "partial", "budget reached"
    pooled = pool_runs(runs)
    assert pooled.status == "partial"
    assert pooled.status_reason == f"pooled run {B} is partial: budget reached"
    assert pool_runs(_three_runs()).status == "complete"


def test_pool_refuses_what_cannot_be_pooled() -> None:
    with pytest.raises(PoolError, match="no runs"):
        pool_runs([])
    a, b, _ = _three_runs()
    with pytest.raises(PoolError, match="named twice"):
        pool_runs([a, a])
    b.suites["s"].cases[0].case_digest = "other"
    with pytest.raises(PoolError, match="case x differs between runs"):
        pool_runs([a, b])
    a, b, _ = _three_runs()
    b.suites["s"].regime = "deterministic"
    with pytest.raises(PoolError, match="regime differs"):
        pool_runs([a, b])


def _configured(run_id: str, **suite_cfg: Any) -> Run:
    cfg = {"target": {"kind": "python", "callable": "m:f"}, "regime": "stochastic",
           "scorers": [{"type": "exact"}], "thresholds": {"pass_rate_drop": 0.05}}
    cfg.update(suite_cfg)
    run = make_run(run_id, {"s": suite([result("x")], "stochastic")},
                   config={"suites": {"s": cfg}, "seed": int(run_id[-1], 16)}, label=run_id[-3:])
    return run


def test_what_ran_differences_ignore_seed_label_and_thresholds() -> None:
    same = [_configured(A), _configured(B, thresholds={"pass_rate_drop": 0.1}, description="x"),
            _configured(C, repeats=3)]
    same[2].started_at = "2027-01-01T00:00:00Z"
    assert what_ran_differences(same) == []
    diffs = what_ran_differences([_configured(A), _configured(B, target={"kind": "python",
                                                                         "callable": "m:g"})])
    assert [(d.suite, d.key, d.value_a, d.value_b) for d in diffs] == [("s", "target.callable", "m:f", "m:g")]
    other_data = _configured(B)
    other_data.suites["s"].dataset.sha256 = "ds1"
    assert [d.key for d in what_ran_differences([_configured(A), other_data])] == ["dataset_sha256"]
    scorers = _configured(B, scorers=[{"type": "contains"}])
    assert [d.key for d in what_ran_differences([_configured(A), scorers])] == ["scorers[0].type"]


# --------------------------------------------------------------------------- noise, pure


def test_noise_counts_flips_and_the_spread_of_each_rows_change() -> None:
    outcomes = {  # per run: case → status; c0 flips in B, c1 in C, c2 never
        A: {"c0": "passed", "c1": "passed", "c2": "failed", "c3": "passed"},
        B: {"c0": "failed", "c1": "passed", "c2": "failed", "c3": "passed"},
        C: {"c0": "passed", "c1": "failed", "c2": "failed"},  # c3 only in A and B
    }
    runs = [make_run(i, {"s": suite([result(c, st) for c, st in o.items()])}) for i, o in outcomes.items()]
    doc = measure_noise(runs)
    s = doc["suites"]["s"]
    assert doc["baseline_runs"] == [A, B, C] and doc["pairs"] == 3 and s["pairs"] == 3
    assert s["cases"]["compared"] == 4 and s["cases"]["flipped"] == 2
    assert {f["case_id"] for f in s["cases"]["flipped_cases"]} == {"c0", "c1"}
    pairs = {(p["base"], p["candidate"]): (p["flipped"], p["cases"]) for p in s["pair_results"]}
    assert pairs == {(A, B): (1, 4), (A, C): (1, 3), (B, C): (2, 3)}
    # pass rates 3/4, 2/4 in A, B; over the 3 cases C shares: A 2/3, C 1/3, B 1/3 vs C 1/3.
    row = next(r for r in s["rows"] if r["name"] == "pass_rate")
    changes = sorted(row["changes"])
    assert changes == pytest.approx(sorted([0.5 - 0.75, 1 / 3 - 2 / 3, 1 / 3 - 1 / 3]))
    assert row["change"]["min"] == pytest.approx(-1 / 3) and row["change"]["max"] == pytest.approx(0.0)
    assert row["change"]["sd"] == pytest.approx(statistics.stdev(changes))
    assert row["verdicts"]["regressed"] == 3  # deterministic: every flip to failed is named
    with pytest.raises(ValueError):
        measure_noise(runs[:1])


def test_case_outcome_is_mixed_when_attempts_disagree() -> None:
    sr = suite([result("x", "passed", attempt=0), result("x", "failed", attempt=1),
                result("y", "passed"), result("z", "skipped")], "stochastic")
    assert case_outcomes(sr) == {("x", "default"): "mixed", ("y", "default"): "passed"}


# --------------------------------------------------------------------------- the marker


def test_marker_of_several_runs_round_trips(tmp_path: Path) -> None:
    path = write_baseline(tmp_path, [A, B, C])
    assert path.read_text() == f"{A}\n{B}\n{C}\n"
    assert read_baseline_ids(tmp_path) == [A, B, C]
    assert read_baseline(tmp_path) == A  # callers that need one run get the first
    write_baseline(tmp_path, A)
    assert path.read_text() == f"{A}\n"  # one run: exactly the original one-line marker


def test_old_single_run_marker_is_read_as_before(tmp_path: Path) -> None:
    (tmp_path / "BASELINE").write_text(f"\n  {A}  \n\n")
    assert read_baseline_ids(tmp_path) == [A] and read_baseline(tmp_path) == A


@pytest.mark.parametrize(("text", "message"), [
    (f"{A}\n../../etc/passwd\n", "BASELINE:2: invalid run id"),
    (f"{A}\n{B}\n{A}\n", f"BASELINE:3: run {A} is named twice"),
    ("\n\n", "holds no run id"),
])
def test_a_bad_marker_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "BASELINE").write_text(text)
    with pytest.raises(InvalidRunId, match=message):
        read_baseline_ids(tmp_path)


# --------------------------------------------------------------------------- through the CLI

NOISY_TOML = """\
[evalh]
concurrency = 2
timeout_s = 5

[suites.smoke]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:answer"
regime = "deterministic"
scorers = [{ type = "exact", field = "verdict" }]

[suites.noisy]
dataset = "data/noisy.jsonl"
target = "evalh_fixture_target:flaky"
regime = "stochastic"
scorers = [{ type = "exact", field = "verdict" }]
"""

FLAKY = '''

def flaky(inp):
    """Right about two times in three, a different two in every run (and attempt)."""
    import hashlib

    from evalh.context import current

    ctx = current()
    h = hashlib.sha256(f"{ctx.run_id}/{ctx.case_id}/{ctx.attempt}".encode()).digest()[0]
    return answer(inp) if h % 3 else {"verdict": "unsure"}
'''


@pytest.fixture
def noisy(project: Path) -> Path:
    """The test project with a stochastic suite `noisy` of 30 cases whose target answers
    right about two times in three, differently in each run."""
    (project / "evalh.toml").write_text(NOISY_TOML)
    cases = [json.dumps({"id": f"n{i:02d}", "input": {"text": "yes" if i % 2 else "no"},
                         "expected": "accept" if i % 2 else "reject"}) for i in range(30)]
    (project / "data" / "noisy.jsonl").write_text("\n".join(cases) + "\n")
    with (project / "evalh_fixture_target.py").open("a") as fh:
        fh.write(FLAKY)
    return project


def cli(project: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(project / "evalh.toml"),
                                    "--runs-dir", str(project / "runs")])


def run_ids(project: Path) -> list[str]:
    return sorted(p.stem for p in (project / "runs").glob("*.json"))


def make_runs(project: Path, n: int, *args: str) -> list[str]:
    before = set(run_ids(project)) if (project / "runs").is_dir() else set()
    for _ in range(n):
        r = cli(project, "run", "-q", *args)
        assert r.exit_code in (0, 1), r.output
    return [i for i in run_ids(project) if i not in before]


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def _docs(project: Path, ids: list[str]) -> list[dict[str, Any]]:
    return [json.loads((project / "runs" / f"{i}.json").read_bytes()) for i in ids]


def test_compare_pools_the_baseline_runs_and_says_how_many(noisy: Path) -> None:
    base_ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", *base_ids).exit_code == 0
    assert (noisy / "BASELINE").read_text() == "".join(f"{i}\n" for i in base_ids)
    shown = cli(noisy, "baseline", "show")
    assert shown.exit_code == 0 and shown.stdout == "".join(f"{i}\n" for i in base_ids)
    doc = json.loads(cli(noisy, "baseline", "show", "--json").stdout)
    assert doc["run_ids"] == base_ids and doc["run_id"] == base_ids[0]
    assert all(r["run_exists"] for r in doc["runs"]) and doc["noise"] is None

    (cand,) = make_runs(noisy, 1)
    result = cli(noisy, "compare", "--format", "json")
    assert result.exit_code == 0, result.output
    cmp = json.loads(result.stdout)
    assert cmp["baseline_runs"] == base_ids and cmp["candidate"]["run_id"] == cand
    # The base figure is the pool's: each case's pass fraction over the 3 runs, averaged.
    per_case: dict[str, list[int]] = {}
    for d in _docs(noisy, base_ids):
        for r in d["suites"]["noisy"]["cases"]:
            per_case.setdefault(r["case_id"], []).append(r["status"] == "passed")
    expected = statistics.fmean(statistics.fmean(v) for v in per_case.values())
    assert all(len(v) == 3 for v in per_case.values())
    row = next(m for m in cmp["suites"]["noisy"]["metrics"] if m["name"] == "pass_rate")
    assert row["base"] == pytest.approx(expected) and row["n"] == 30
    for fmt in ("table", "markdown"):
        text = cli(noisy, "compare", "--format", fmt).stdout
        assert f"baseline: 3 runs pooled per case ({', '.join(base_ids)})" in text
        assert "noise floor not measured: run `evalh baseline noise`" in text.replace("\\`", "`")
    # An explicit base is one run, as before: no pool, no baseline keys.
    cmp = json.loads(cli(noisy, "compare", base_ids[0], cand, "--format", "json").stdout)
    assert "baseline_runs" not in cmp


def test_run_compare_baseline_uses_the_pool(noisy: Path) -> None:
    base_ids = make_runs(noisy, 2)
    assert cli(noisy, "baseline", "set", *base_ids).exit_code == 0
    result = cli(noisy, "run", "--compare-baseline", "--json")
    doc = json.loads(result.stdout)
    assert doc["comparison"]["baseline_runs"] == base_ids
    assert doc["comparison"]["suites"]["smoke"]["verdict"] == "flat"
    text = cli(noisy, "run", "--compare-baseline", "-q").stdout
    assert "baseline: 2 runs pooled per case" in text


def test_noise_measures_flips_and_spread_and_compare_shows_it(noisy: Path) -> None:
    base_ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", *base_ids).exit_code == 0
    result = cli(noisy, "baseline", "noise", "--json")
    assert result.exit_code == 0, result.output
    noise = json.loads(result.stdout)
    stored = json.loads((noisy / "BASELINE.noise.json").read_bytes())
    assert stored == noise and noise["baseline_runs"] == base_ids and noise["pairs"] == 3
    assert not list((noisy / "runs").glob("BASELINE*"))  # beside the marker, not a "run"
    # Flips counted independently from the run documents.
    outcome = [{r["case_id"]: r["status"] for r in d["suites"]["noisy"]["cases"]}
               for d in _docs(noisy, base_ids)]
    flipped = sorted(c for c in outcome[0] if len({o[c] for o in outcome}) > 1)
    s = noise["suites"]["noisy"]
    assert s["cases"]["compared"] == 30 and s["cases"]["flipped"] == len(flipped) > 0
    assert sorted(f["case_id"] for f in s["cases"]["flipped_cases"]) == flipped
    for p, (i, j) in zip(s["pair_results"], combinations(range(3), 2), strict=True):
        assert p["flipped"] == sum(outcome[i][c] != outcome[j][c] for c in outcome[i])
    # The A/A spread of the pass-rate change, against each pair's own rates.
    rate = [sum(st == "passed" for st in o.values()) / len(o) for o in outcome]
    changes = [rate[j] - rate[i] for i, j in combinations(range(3), 2)]
    row = next(r for r in s["rows"] if r["name"] == "pass_rate")
    assert row["change"]["min"] == pytest.approx(min(changes))
    assert row["change"]["max"] == pytest.approx(max(changes))
    assert row["change"]["sd"] == pytest.approx(statistics.stdev(changes))
    assert noise["suites"]["smoke"]["cases"] == {**noise["suites"]["smoke"]["cases"],
                                                 "compared": 3, "flipped": 0}
    # The terminal form: one line a suite.
    text = cli(noisy, "baseline", "noise").stdout
    assert "3 baseline runs, 3 pairs" in text
    line = (f"noise floor (3 baseline runs): pass_rate changes between baseline runs span "
            f"{min(changes) * 100:+.1f} to {max(changes) * 100:+.1f} pp")
    assert line in text and f"{len(flipped)} of 30 cases flip" in text

    make_runs(noisy, 1)
    for fmt in ("table", "markdown"):
        out = cli(noisy, "compare", "--format", fmt).stdout.replace("\\", "")  # md escapes
        assert line in out and f"{len(flipped)} of 30 cases flip" in out
        assert "0 of 3 cases flip" in out  # the deterministic suite
    cmp = json.loads(cli(noisy, "compare", "--format", "json").stdout)
    assert cmp["baseline_noise"]["suites"]["noisy"]["cases"]["flipped"] == len(flipped)
    assert cmp["baseline_noise"]["suites"]["noisy"]["line"].startswith(line)


def test_noise_measured_on_other_runs_is_not_shown(noisy: Path) -> None:
    ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", *ids[:2]).exit_code == 0
    assert cli(noisy, "baseline", "noise").exit_code == 0
    assert cli(noisy, "baseline", "set", ids[0], ids[2]).exit_code == 0
    out = cli(noisy, "compare", ids[1]).stdout  # explicit base: not the marker
    assert "noise floor" not in out
    cmp = json.loads(cli(noisy, "compare", "--format", "json").stdout)
    assert cmp["baseline_noise"] is None
    out = cli(noisy, "compare").stdout
    assert "was measured on other runs than BASELINE names" in out and "noise floor (" not in out


def test_noise_needs_two_baseline_runs(noisy: Path) -> None:
    (first,) = make_runs(noisy, 1)
    result = cli(noisy, "baseline", "noise")
    assert result.exit_code == 2 and "BASELINE" in one_error_line(result)
    assert cli(noisy, "baseline", "set", first).exit_code == 0
    result = cli(noisy, "baseline", "noise")
    assert result.exit_code == 2
    assert "the noise floor needs at least two" in one_error_line(result)
    assert not (noisy / "BASELINE.noise.json").exists()


def test_baseline_set_refuses_runs_of_different_configurations(noisy: Path) -> None:
    (first,) = make_runs(noisy, 1)
    toml = noisy / "evalh.toml"
    toml.write_text(toml.read_text().replace(":answer", ":answer_async"))
    (second,) = make_runs(noisy, 1)
    result = cli(noisy, "baseline", "set", first, second)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "one configuration" in line and "target.callable" in line and "smoke" in line
    assert not (noisy / "BASELINE").exists()
    # Seed and label differ in every run: they do not count.
    (third,) = make_runs(noisy, 1, "--seed", "7", "--label", "other")
    assert cli(noisy, "baseline", "set", second, third).exit_code == 0
    # A marker edited by hand to name runs of different configurations is refused at use.
    (noisy / "BASELINE").write_text(f"{first}\n{third}\n")
    result = cli(noisy, "compare")
    assert result.exit_code == 2 and "target.callable" in one_error_line(result)


def test_baseline_set_refuses_a_run_named_twice_or_missing(noisy: Path) -> None:
    (first,) = make_runs(noisy, 1)
    result = cli(noisy, "baseline", "set", first, first)
    assert result.exit_code == 2 and "named twice" in one_error_line(result)
    result = cli(noisy, "baseline", "set", first, "20990101T000000000Z-ffffff")
    assert result.exit_code == 2 and "no run" in one_error_line(result)
    assert not (noisy / "BASELINE").exists()


def test_old_single_run_marker_still_drives_compare(noisy: Path) -> None:
    first, second = make_runs(noisy, 2)
    (noisy / "BASELINE").write_text(f"{first}\n")  # as an older evalh wrote it
    result = cli(noisy, "compare", "--format", "json")
    assert result.exit_code == 0, result.output
    cmp = json.loads(result.stdout)
    assert cmp["base"]["run_id"] == first and cmp["candidate"]["run_id"] == second
    assert cmp["baseline_runs"] == [first] and cmp["baseline_noise"] is None
    text = cli(noisy, "compare").stdout
    assert "pooled" not in text and "noise floor" not in text


def test_noise_of_the_shipped_examples(repo_root: Path, tmp_path: Path) -> None:
    """The shipped gate and panel suites are deterministic code: two runs agree case for
    case, so the measured noise floor is zero flips and no pass-rate change."""
    shutil.copy(repo_root / "evalh.toml", tmp_path / "evalh.toml")  # BASELINE lands in tmp_path
    shutil.copytree(repo_root / "datasets", tmp_path / "datasets")
    cfg, runs = str(tmp_path / "evalh.toml"), str(tmp_path / "runs")

    def shipped(*args: str) -> Result:
        return CliRunner().invoke(app, [*args, "--config", cfg, "--runs-dir", runs])

    for seed in ("1", "2"):
        assert shipped("run", "-q", "--suite", "gate", "--suite", "panel", "--seed", seed).exit_code == 0
    ids = sorted(p.stem for p in Path(runs).glob("*.json"))
    assert shipped("baseline", "set", *ids).exit_code == 0
    result = shipped("baseline", "noise", "--json")
    assert result.exit_code == 0, result.output
    noise = json.loads(result.stdout)
    assert (tmp_path / "BASELINE.noise.json").is_file() and not (repo_root / "BASELINE").exists()
    for name in ("gate", "panel"):
        s = noise["suites"][name]
        assert s["pairs"] == 1 and s["cases"]["flipped"] == 0 and s["cases"]["compared"] >= 15
        row = next(r for r in s["rows"] if r["name"] == "pass_rate")
        assert row["change"]["min"] == row["change"]["max"] == 0.0


def test_runs_marks_every_baseline_run(noisy: Path) -> None:
    ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", ids[0], ids[2]).exit_code == 0
    rows = json.loads(cli(noisy, "runs", "--json").stdout)
    assert {r["run_id"]: r["baseline"] for r in rows} == {ids[0]: True, ids[1]: False, ids[2]: True}
    assert cli(noisy, "runs").stdout.count("(BASELINE)") == 2


def test_the_noise_file_never_holds_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.baseline import write_noise

    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("PRODUCT_API_KEY", secret)
    runs = [make_run(i, {"s": suite([result(f"case {secret}", st)])})
            for i, st in ((A, "passed"), (B, "failed"))]
    doc = measure_noise(runs)
    assert doc["suites"]["s"]["cases"]["flipped_cases"][0]["case_id"] == f"case {secret}"
    text = write_noise(tmp_path, doc).read_text()
    assert secret not in text and json.loads(text)["suites"]["s"]["cases"]["flipped"] == 1


def test_a_suite_only_some_baseline_runs_have_is_pooled_from_those(noisy: Path) -> None:
    (only_smoke,) = make_runs(noisy, 1, "--suite", "smoke")
    (both,) = make_runs(noisy, 1)
    result = cli(noisy, "baseline", "set", only_smoke, both)
    assert result.exit_code == 0, result.output
    assert "suite noisy is in 1 of the 2 baseline runs" in result.stderr
    make_runs(noisy, 1)
    cmp = json.loads(cli(noisy, "compare", "--format", "json").stdout)
    assert cmp["baseline_runs"] == [only_smoke, both]
    assert cmp["suites"]["smoke"]["counts"]["compared"] == 3
    assert cmp["suites"]["noisy"]["counts"]["compared"] == 30
    noise = json.loads(cli(noisy, "baseline", "noise", "--json").stdout)
    assert noise["suites"]["noisy"]["pairs"] == 0 and noise["suites"]["smoke"]["pairs"] == 1
    assert "noisy (stochastic): noise floor: suite noisy is in one baseline run only" in \
        cli(noisy, "baseline", "noise").stdout
