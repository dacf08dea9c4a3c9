"""One interval rule for `label report`, `evalh report` and the dashboard
(`evalh.labels.intervals.interval_where_valid`): the same conditions, every failing one
named, one trial per work item, and never an interval on a judge-only figure."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalh.core.stats.intervals import wilson_interval
from evalh.labels.intervals import WorkItem, interval_where_valid
from evalh.models import Score
from evalh.report import build_report
from evalh.store import RunStore
from evalh.ui.server import make_server
from tests.report_factory import make_run, res, suite

OK = {"split": "heldout", "sampling": "random", "producer_model": "m", "prompt_sha256": "p"}


def judged(cid: str, passed: bool, **meta: Any) -> Any:
    score = Score(scorer="rubric", value=float(passed), passed=passed, verdict="ok" if passed else "bad",
                  judge_model="judge-x")
    return res(cid, "passed" if passed else "failed", metadata={**OK, **meta}, scores=[score])


def only(report: Any) -> Any:
    return report.suites[0].arms[0].interval


def test_evalh_report_gives_a_judge_only_pass_rate_no_interval() -> None:
    run = make_run("r", {"s": suite([judged(f"c{i}", i < 6) for i in range(8)], "stochastic")})
    iv = only(build_report([run]))
    assert iv.low is None and iv.reason.startswith("judge-only figure")
    mixed = [judged(f"c{i}", i < 6) for i in range(8)]
    for r in mixed:
        r.scores.append(Score(scorer="exact", value=1.0, passed=True))
    iv = only(build_report([make_run("r", {"s": suite(mixed, "stochastic")})]))
    assert (iv.successes, iv.n) == (6, 8) and (iv.low, iv.high) == pytest.approx(wilson_interval(6, 8))


def test_evalh_report_trial_is_the_work_item_and_sampling_metadata_wins() -> None:
    rs = [res(f"c{i}", "passed" if i != 1 else "failed", metadata={**OK, "group": f"g{i // 2}"}) for i in range(6)]
    iv = only(build_report([make_run("r", {"s": suite(rs, "stochastic")})]))
    assert (iv.successes, iv.n, iv.of) == (2, 3, "work items passing every attempt")
    picked = [res(f"c{i}", metadata={**OK, "sampling": "hand-picked"}) for i in range(4)]
    reason = only(build_report([make_run("r", {"s": suite(picked, "stochastic")})])).reason
    assert "sampling is hand-picked" in reason and "cannot override" in reason
    unknown = [res(f"c{i}", metadata={"split": "heldout", "sampling": "random"}) for i in range(4)]
    assert "producer model or prompt digest unknown" in only(build_report([make_run("r", {"s": suite(unknown, "stochastic")})])).reason


def test_the_dashboard_shows_the_same_rule(tmp_path: Path) -> None:
    run = make_run("20260101T000000000Z-000001", {"s": suite([judged(f"c{i}", True) for i in range(4)], "stochastic")})
    RunStore(tmp_path / "eval_runs").write(run)
    server = make_server(tmp_path / "eval_runs", tmp_path, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        body = httpx.get(url + "/api/runs/20260101T000000000Z-000001/report").json()
        assert body["suites"][0]["arms"][0]["interval"]["reason"] == only(build_report([run])).reason
        assert body["suites"][0]["arms"][0]["interval"]["reason"].startswith("judge-only figure")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_every_failing_condition_is_listed() -> None:
    bad = res("a", metadata={"split": "dev", "sampling": "hand-picked", "claim_coverage": "selected"})
    v = interval_where_valid([WorkItem("a", [bad], True), WorkItem("b", [bad, bad], None)], source="judge",
                             arms={"x", "y"}, claim_rate=True, regime="deterministic")
    assert len(v.reasons) == 9 and v.low is None
    assert (v.successes, v.n) == (1, 1)  # the settled work item only


def test_a_model_targets_model_and_prompt_are_the_known_producer() -> None:
    rs = [res(f"c{i}", metadata={"split": "heldout", "sampling": "random"}) for i in range(4)]
    s = suite(rs, "stochastic")
    s.target = {"kind": "anthropic", "model": "claude-x", "prompt": "{{ input.q }}"}
    iv = only(build_report([make_run("r", {"s": s})]))
    assert iv.reason is None and (iv.successes, iv.n) == (4, 4)
