"""A green gate means the work was measured (issue 27, items 1-4): through the CLI, a
candidate that measured less than the baseline did — a split filter, a new dataset under
the same ids, a suite skipped for a missing key, a suite removed — fails
`compare --fail-on-regression` and `run --compare-baseline` with the reason, and coverage
is a figure every compared suite reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

TARGET = '''\
def answer(inp):
    return {"text": inp["q"].upper()}

def broken(inp):
    raise RuntimeError("the product fell over")
'''

DET = '''\
[suites.det]
dataset = "d.jsonl"
target = "tgt:answer"
regime = "deterministic"
scorers = [{ type = "exact", field = "text", expected_field = "text" }]
'''
STOCH = '''\
[suites.sto]
dataset = "d.jsonl"
target = "tgt:answer"
regime = "stochastic"
scorers = [{ type = "exact", field = "text", expected_field = "text" }]
'''
LIVE = '''\
[suites.live]
dataset = "d.jsonl"
target = "tgt:answer"
regime = "deterministic"
requires_env = ["LIVE_KEY_FOR_TEST"]
scorers = [{ type = "exact", field = "text", expected_field = "text" }]
'''


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))
    monkeypatch.delenv("LIVE_KEY_FOR_TEST", raising=False)


def write(root: Path, toml: str, *, n: int = 40, prefix: str = "q", x_split: int = 1) -> Path:
    (root / "evalh.toml").write_text(toml, encoding="utf-8")
    (root / "tgt.py").write_text(TARGET, encoding="utf-8")
    rows = []
    for i in range(n):
        q = f"{prefix}{i}"
        split = "x" if i < x_split else "y"
        rows.append({"id": f"c{i}", "input": {"q": q}, "expected": {"text": q.upper()},
                     "metadata": {"split": split}})
    (root / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root / "evalh.toml"


def cli(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


def baseline(cfg: Path, *args: str) -> str:
    result = cli(cfg, "run", "--json", *args)
    assert result.exit_code == 0, result.output
    run_id: str = json.loads(result.stdout)["run_id"]
    assert cli(cfg, "baseline", "set", run_id).exit_code == 0
    return run_id


def compare_json(cfg: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = cli(cfg, "compare", "--fail-on-regression", "--format", "json", *args)
    return result, json.loads(result.stdout)


# ----------------------------------------------------------------------------- item 1: a split filter


def test_a_split_filter_that_drops_39_of_40_cases_fails_the_gate(tmp_path: Path) -> None:
    cfg = write(tmp_path, DET + STOCH)
    baseline(cfg)
    cfg.write_text(DET.replace('regime = "deterministic"', 'regime = "deterministic"\nsplits = ["x"]')
                   + STOCH.replace('regime = "stochastic"', 'regime = "stochastic"\nsplits = ["x"]'))
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    det = doc["suites"]["det"]
    assert det["coverage"] == {"measured": 1, "of": 40, "share": 0.025, "minimum": 0.9, "absent": 39,
                               "changed": 0, "untrusted": 0, "below": True}
    line = ("suite det cannot pass: coverage 1 of 40 base results measured (2.5 %), minimum 90 %: "
            "39 not in the candidate; the candidate's splits are ['x'], the base's all")
    assert line in doc["gate_reasons"]
    assert any(r.startswith("suite sto cannot pass: ") for r in doc["gate_reasons"])
    table = cli(cfg, "compare", "--fail-on-regression")
    assert table.exit_code == 1 and "coverage 1 of 40 base results measured" in table.stdout


def test_min_coverage_comes_from_the_suite_key_and_the_flag(tmp_path: Path) -> None:
    cfg = write(tmp_path, DET, n=10, x_split=9)  # the filter keeps 9 of 10: 90 %
    baseline(cfg)
    cfg.write_text(DET.replace('regime = "deterministic"', 'regime = "deterministic"\nsplits = ["x"]'))
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 0, result.output  # at the minimum is not below it
    assert doc["suites"]["det"]["coverage"]["share"] == 0.9
    result, doc = compare_json(cfg, "--min-coverage", "0.95")
    assert result.exit_code == 1, result.output
    assert "coverage 9 of 10 base results measured (90 %), minimum 95 %" in doc["gate_reasons"][0]
    cfg.write_text(cfg.read_text().replace('splits = ["x"]', 'splits = ["x"]\nmin_coverage = 1.0'))
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert "minimum 100 %" in doc["gate_reasons"][0]
    result, _ = compare_json(cfg, "--min-coverage", "0.5")  # the operator's flag wins
    assert result.exit_code == 0, result.output


def test_fewer_repeats_than_the_baseline_is_less_coverage(tmp_path: Path) -> None:
    cfg = write(tmp_path, STOCH, n=10)
    baseline(cfg, "--repeats", "2")
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    cov = doc["suites"]["sto"]["coverage"]
    assert (cov["measured"], cov["of"], cov["untrusted"]) == (10, 20, 10)


# ----------------------------------------------------------------------------- item 2: content changed


def test_every_case_changed_content_fails_the_gate(tmp_path: Path) -> None:
    cfg = write(tmp_path, DET + STOCH, n=12)
    baseline(cfg)
    write(tmp_path, DET + STOCH, n=12, prefix="new")  # same ids, another dataset
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    for name in ("det", "sto"):
        s = doc["suites"][name]
        assert s["verdict"] == "incomparable" and s["counts"]["changed"] == 12
        assert s["coverage"]["changed"] == 12 and s["coverage"]["measured"] == 0
        assert s["blocking"][0] == ("nothing comparable: no case could be compared (12 changed, "
                                    "0 added, 0 removed, 0 not run, 0 skipped)")
    assert cli(cfg, "run", "--compare-baseline", "-q").exit_code == 1


# ----------------------------------------------------------------------------- item 3: a missing key


def test_a_suite_skipped_for_a_missing_key_fails_run_and_the_gate(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path, DET + LIVE, n=5)
    monkeypatch.setenv("LIVE_KEY_FOR_TEST", "set")
    baseline(cfg)
    monkeypatch.delenv("LIVE_KEY_FOR_TEST")

    result = cli(cfg, "run", "--json")
    assert result.exit_code == 1, result.output
    line = "suite live was not run (skipped: needs LIVE_KEY_FOR_TEST): the run did not measure it"
    assert line in result.stderr and json.loads(result.stdout)["reasons"] == [line]

    result = cli(cfg, "run", "--compare-baseline", "--json")
    assert result.exit_code == 1, result.output
    gate = json.loads(result.stdout)["comparison"]["gate_reasons"]
    assert gate == ["suite live cannot pass: suite live is in the base (5 case(s)) and was not run by "
                    "the candidate: skipped: needs LIVE_KEY_FOR_TEST"]

    # the operator cannot wave through a suite that was skipped for its key
    result, doc = compare_json(cfg, "--allow-removed-suite", "live")
    assert result.exit_code == 1, result.output
    assert doc["gate_reasons"][0].endswith("; --allow-removed-suite does not cover it")

    # naming the suites to run is a choice: it exits 0, and the gate says why live is missing
    assert cli(cfg, "run", "--suite", "det", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1
    assert "not selected (the run named --suite det)" in doc["gate_reasons"][0]
    result, _ = compare_json(cfg, "--allow-removed-suite", "live")
    assert result.exit_code == 0, result.output


def test_a_suite_removed_from_the_config_needs_the_explicit_flag(tmp_path: Path) -> None:
    cfg = write(tmp_path, DET + STOCH, n=5)
    baseline(cfg)
    cfg.write_text(DET)
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert doc["gate_reasons"] == [
        "suite sto cannot pass: suite sto is in the base (5 case(s)) and was not run by the "
        "candidate: removed from the candidate's config; --allow-removed-suite sto accepts that"]
    result, doc = compare_json(cfg, "--allow-removed-suite", "sto")
    assert result.exit_code == 0, result.output
    assert doc["suites"]["sto"]["verdict"] == "removed"
    result = cli(cfg, "run", "--compare-baseline", "--allow-removed-suite", "sto", "-q")
    assert result.exit_code == 0, result.output


# ----------------------------------------------------------------------------- item 4: advisory


def test_an_advisory_suite_that_measured_nothing_fails_run_and_the_gate(tmp_path: Path) -> None:
    advisory = STOCH.replace('regime = "stochastic"', 'regime = "stochastic"\nadvisory = true')
    cfg = write(tmp_path, advisory, n=30)
    baseline(cfg)
    cfg.write_text(advisory.replace("tgt:answer", "tgt:broken"))
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["reasons"] == [
        "suite sto: 30 of 30 results errored (100 %), over max_error_rate 10 %: an advisory "
        "suite that measured nothing"]
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert doc["suites"]["sto"]["advisory"] is not None


def test_an_advisory_suite_with_some_errors_still_never_gates(tmp_path: Path) -> None:
    advisory = STOCH.replace('regime = "stochastic"', 'regime = "stochastic"\nadvisory = true')
    cfg = write(tmp_path, advisory, n=10)
    baseline(cfg)
    (tmp_path / "halftgt.py").write_text('''
def half(inp):
    if int(inp["q"][1:]) % 2:
        raise RuntimeError("down")
    return {"text": inp["q"].upper()}
''', encoding="utf-8")
    cfg.write_text(advisory.replace("tgt:answer", "halftgt:half"))
    assert cli(cfg, "run", "-q").exit_code == 0  # 50 % errored: advisory, over its rate, not nothing
    result, _ = compare_json(cfg)
    assert result.exit_code == 0, result.output


def test_a_baseline_of_several_runs_counts_its_attempts_per_run(tmp_path: Path) -> None:
    cfg = write(tmp_path, STOCH, n=10)
    ids = []
    for _ in range(3):
        result = cli(cfg, "run", "--json")
        assert result.exit_code == 0, result.output
        ids.append(json.loads(result.stdout)["run_id"])
    assert cli(cfg, "baseline", "set", *ids).exit_code == 0
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 0, result.output
    cov = doc["suites"]["sto"]["coverage"]
    assert (cov["measured"], cov["of"], cov["below"]) == (10, 10, False)


def test_an_advisory_suite_skipped_for_its_key_fails_the_gate(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    advisory_live = LIVE.replace('regime = "deterministic"', 'regime = "deterministic"\nadvisory = true')
    cfg = write(tmp_path, DET + advisory_live, n=5)
    monkeypatch.setenv("LIVE_KEY_FOR_TEST", "set")
    baseline(cfg)
    monkeypatch.delenv("LIVE_KEY_FOR_TEST")
    assert cli(cfg, "run", "-q").exit_code == 1
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert doc["suites"]["live"]["advisory"] is not None
    assert doc["gate_reasons"][0].startswith("suite live cannot pass: suite live is in the base")


@pytest.mark.parametrize("flag", [("--min-coverage", "1"), ("--allow-removed-suite", "det")])
def test_a_gate_flag_without_compare_baseline_is_a_usage_error(tmp_path: Path, flag: tuple[str, str]) -> None:
    """`evalh run --min-coverage 1` (or --allow-removed-suite) without --compare-baseline
    compared nothing and exited 0: the user believes a coverage gate is in force. Like
    --until-decided and --fail-on-inconclusive, it is one line, exit 2, nothing run."""
    cfg = write(tmp_path, DET, n=4)
    result = cli(cfg, "run", "-q", *flag)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and flag[0] in lines[0] and "--compare-baseline" in lines[0], lines
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("*.json"))


def test_a_change_cannot_lower_the_minimum_the_baseline_left_at_its_default(tmp_path: Path) -> None:
    """The baseline leaves `min_coverage` unset (0.9); a pull request adds `splits = ["x"]`
    and `min_coverage = 0.0` to the suite: 1 of 40 cases measured, and the gate passed at
    "minimum 0 %". The larger of the two runs' values applies, and the baseline's value is
    its default when unset: the change can raise its gate, never lower it (lowering it is
    the baseline's config, or --min-coverage on the command line)."""
    cfg = write(tmp_path, DET)
    baseline(cfg)
    cfg.write_text(DET.replace('regime = "deterministic"', 'regime = "deterministic"\nsplits = ["x"]\nmin_coverage = 0.0'))
    assert cli(cfg, "run", "-q").exit_code == 0
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert doc["suites"]["det"]["coverage"]["minimum"] == 0.9
    result, _ = compare_json(cfg, "--min-coverage", "0")  # the operator's flag still wins
    assert result.exit_code == 0, result.output


def test_a_change_cannot_make_its_own_regressed_suite_advisory(tmp_path: Path) -> None:
    """A pull request that breaks a stochastic suite and adds `advisory = true` to it passed
    the gate (`regressed`, `gate: pass`, exit 0): a suite advisory in any run's config was
    advisory. The baseline's config decides, as it does for thresholds; the candidate's own
    declaration is named, and the suite gates until the baseline says so."""
    cfg = write(tmp_path, STOCH, n=30)
    baseline(cfg)
    cfg.write_text(STOCH.replace('regime = "stochastic"', 'regime = "stochastic"\nadvisory = true')
                   .replace("tgt:answer", "tgt_wrong:wrong"))
    (tmp_path / "tgt_wrong.py").write_text("def wrong(inp):\n    return {\"text\": \"nope\"}\n")
    ran = cli(cfg, "run", "-q")
    assert ran.exit_code == 0, ran.output  # advisory: the run itself never fails on it
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    sto = doc["suites"]["sto"]
    assert sto["verdict"] == "regressed" and sto["advisory"] is None
    assert any("advisory in the candidate's config only" in r for r in sto["reasons"])


TWO_SCORERS = '''\
[suites.S]
dataset = "d.jsonl"
target = "tgt2:answer"
regime = "REGIME"
scorers = [{ type = "exact", field = "text", expected_field = "text" },
           { type = "exact", name = "strict", field = "strict", expected_field = "text"ADVISORY }]
'''
TGT2 = '''\
def answer(inp):
    return {"text": inp["q"].upper(), "strict": inp["q"].upper()}

def sloppy(inp):
    return {"text": inp["q"].upper(), "strict": "nope"}
'''
OWN_SCORER = ("scorer strict is advisory in the candidate's config only: a change cannot make its own "
              "scorer advisory; set it in the baseline's config (re-baseline) to stop it gating")


def two_scorers(regime: str, *, advisory: bool = False, target: str = "answer") -> str:
    return (TWO_SCORERS.replace("REGIME", regime).replace("tgt2:answer", f"tgt2:{target}")
            .replace("ADVISORY", ", advisory = true" if advisory else ""))


@pytest.mark.parametrize("regime", ["deterministic", "stochastic"])
def test_a_change_cannot_make_its_own_failing_scorer_advisory(tmp_path: Path, regime: str) -> None:
    """A pull request that breaks what one scorer checks and adds `advisory = true` to that
    scorer (the suite keeps its other scorer) passed the gate: the candidate's cases were
    scored without it, so every case passed and nothing regressed. The baseline gated on
    that scorer; the suite cannot pass until the baseline's config makes it advisory."""
    cfg = write(tmp_path, two_scorers(regime), n=30)
    (tmp_path / "tgt2.py").write_text(TGT2, encoding="utf-8")
    baseline(cfg)
    cfg.write_text(two_scorers(regime, advisory=True, target="sloppy"))
    ran = cli(cfg, "run", "--compare-baseline", "--json")
    assert ran.exit_code == 1, ran.output
    comparison = json.loads(ran.stdout)["comparison"]
    assert comparison["gate_reasons"] == [f"suite S cannot pass: {OWN_SCORER}"]
    result, doc = compare_json(cfg)
    assert result.exit_code == 1, result.output
    assert doc["suites"]["S"]["blocking"] == [OWN_SCORER] and OWN_SCORER in doc["suites"]["S"]["reasons"]
    table = cli(cfg, "compare", "--fail-on-regression")
    assert table.exit_code == 1 and "scorer strict is advisory in the candidate's config only" in table.stdout
    markdown = cli(cfg, "compare", "--fail-on-regression", "--format", "markdown")
    assert markdown.exit_code == 1 and "scorer strict is advisory in the candidate" in markdown.stdout
    junit = cli(cfg, "compare", "--fail-on-regression", "--junit-xml", str(tmp_path / "junit.xml"))
    xml = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert junit.exit_code == 1 and 'type="cannot-pass"' in xml
    assert "scorer strict is advisory in the candidate" in xml

    # declared in the baseline's config (re-baselined), it no longer gates
    baseline(cfg)
    assert cli(cfg, "run", "--compare-baseline", "-q").exit_code == 0


def test_an_advisory_scorer_the_baseline_never_gated_on_passes(tmp_path: Path) -> None:
    """The reverse and a new scorer are fine: a scorer advisory in the base and gating in the
    candidate, or one the base did not have, weakens nothing the baseline gated on."""
    cfg = write(tmp_path, two_scorers("deterministic", advisory=True), n=10)
    (tmp_path / "tgt2.py").write_text(TGT2, encoding="utf-8")
    baseline(cfg)
    cfg.write_text(two_scorers("deterministic"))
    assert cli(cfg, "run", "--compare-baseline", "-q").exit_code == 0
    cfg.write_text(DET.replace("[suites.det]", "[suites.S]"))  # the base has only `exact`
    baseline(cfg)
    cfg.write_text(two_scorers("deterministic", advisory=True, target="sloppy"))
    result = cli(cfg, "run", "--compare-baseline", "--json")
    assert result.exit_code == 0, result.output
