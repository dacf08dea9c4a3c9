"""The dashboard server on loopback, driven over real HTTP (httpx): the page and its
Content-Security-Policy, the JSON endpoints, hostile run ids, paging and filtering, the
summary cache, and `compare` answering exactly what `compare_runs` decides."""

from __future__ import annotations

import base64
import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.compare.decide import ComparePolicy, compare_runs
from evalh.store import RunStore
from evalh.ui import index as ui_index
from evalh.ui.server import make_server
from tests.report_factory import HOSTILE_IMG, make_run, res, series, suite, write_runs

OUTCOMES = [
    {"a": "passed", "b": "passed", "c": "failed"},
    {"a": "passed", "b": "failed", "c": "failed"},
    {"a": "passed", "b": "passed", "c": "passed"},
    {"a": "failed", "b": "passed", "c": "passed"},
]


def serve(root: Path) -> tuple[str, threading.Thread, object]:
    server = make_server(root / "eval_runs", root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{server.server_address[1]}", thread, server


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    series(tmp_path / "eval_runs", OUTCOMES, hostile_in=1)
    url, thread, server = serve(tmp_path)
    try:
        yield url, tmp_path
    finally:
        server.shutdown()  # type: ignore[attr-defined]
        server.server_close()  # type: ignore[attr-defined]
        thread.join(5)


def ids(root: Path) -> list[str]:
    return RunStore(root / "eval_runs").list_ids()


def test_page_is_one_document_whose_only_script_is_allowed_by_hash(site: tuple[str, Path]) -> None:
    url, _ = site
    r = httpx.get(url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    scripts = re.findall(r"<script>(.*?)</script>", r.text, re.S)
    assert len(scripts) == 1 and "<script src" not in r.text
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = r.headers["content-security-policy"]
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    assert "connect-src 'self'" in csp
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", r.text)
    assert r.headers["x-content-type-options"] == "nosniff"


def test_runs_lists_summaries_oldest_first_with_denominators(site: tuple[str, Path]) -> None:
    url, root = site
    body = httpx.get(url + "/api/runs").json()
    assert [r["run_id"] for r in body["runs"]] == ids(root)
    agg = body["runs"][0]["suites"]["gate"]["aggregate"]
    assert (agg["passed"], agg["pass_rate_denominator"]) == (2, 3)
    assert body["runs"][1]["label"] == HOSTILE_IMG  # data is returned as data; the page escapes it
    assert body["runs"][0]["cost_usd"] is None  # unknown cost is null, never 0


def test_trends_have_one_slot_per_run_per_series(site: tuple[str, Path]) -> None:
    url, root = site
    body = httpx.get(url + "/api/trends").json()
    assert [r["run_id"] for r in body["runs"]] == ids(root)
    (gate,) = body["series"]["pass_rate"]
    assert gate["name"] == "gate" and len(gate["values"]) == 4
    assert gate["values"][0] == pytest.approx(2 / 3) and gate["values"][2] == 1.0
    assert [s["name"] for s in body["series"]["latency_ms_p95"]] == ["gate"]
    assert body["series"]["cost_usd"][0]["values"] == [None] * 4


@pytest.mark.parametrize("path", [
    "/api/runs/..%2F..%2Fetc%2Fpasswd", "/api/runs/%2e%2e", "/api/runs/a%0Ab/cases",
    "/api/runs/.hidden", "/api/runs/" + "x" * 200, "/api/compare?base=..%2Fx&candidate=y",
])
def test_hostile_run_ids_are_refused_with_400(site: tuple[str, Path], path: str) -> None:
    url, _ = site
    r = httpx.get(url + path)
    assert r.status_code == 400, r.text
    assert "invalid run id" in r.json()["error"]


def test_unknown_runs_and_routes_are_404(site: tuple[str, Path]) -> None:
    url, _ = site
    assert httpx.get(url + "/api/runs/20990101T000000000Z-ffffff").status_code == 404
    assert httpx.get(url + "/api/nothing").status_code == 404
    assert httpx.get(url + "/etc/passwd").status_code == 404


def test_a_foreign_host_header_is_refused(site: tuple[str, Path]) -> None:
    url, _ = site
    assert httpx.get(url + "/api/runs", headers={"Host": "evil.example:4023"}).status_code == 403
    assert httpx.get(url + "/api/runs", headers={"Host": "localhost:4023"}).status_code == 200


def test_case_list_pages_and_filters_on_the_server(tmp_path: Path) -> None:
    rs = [res(f"case{i:03d}", "failed" if i % 5 == 0 else "passed") for i in range(250)]
    rs.append(res("case-err", "errored"))
    write_runs(tmp_path / "eval_runs", [make_run("20260101T000000000Z-000001", {"big": suite(rs)})])
    url, thread, server = serve(tmp_path)
    client = httpx.Client()
    try:
        base = url + "/api/runs/20260101T000000000Z-000001/cases"
        page = client.get(base, params={"offset": 200, "limit": 100}).json()
        assert (page["total"], len(page["rows"]), page["rows"][0]["case_id"]) == (251, 51, "case200")
        assert page["counts"] == {"passed": 200, "failed": 50, "errored": 1, "judge_error": 0, "skipped": 0}
        failed = client.get(base, params={"status": "failed"}).json()
        assert failed["total"] == 50 and {r["status"] for r in failed["rows"]} == {"failed"}
        bad = client.get(base, params={"status": "bad"}).json()
        assert bad["total"] == 51
        hit = client.get(base, params={"q": "CASE24"}).json()
        assert [r["case_id"] for r in hit["rows"]] == [f"case24{i}" for i in range(10)]
        for params in ({"limit": 0}, {"offset": -1}, {"status": "bogus"}, {"suite": "nope"}, {"limit": "x"}):
            assert client.get(base, params=params).status_code == 400, params
        detail = client.get(url + "/api/runs/20260101T000000000Z-000001/case", params={"suite": "big", "i": 250}).json()
        assert detail["result"]["case_id"] == "case-err"
        assert detail["result"]["error"]["message"] == "case-err fell over"
        assert client.get(url + "/api/runs/20260101T000000000Z-000001/case", params={"suite": "big", "i": 251}).status_code == 400
    finally:
        client.close()
        server.shutdown()  # type: ignore[attr-defined]
        server.server_close()  # type: ignore[attr-defined]
        thread.join(5)


def test_case_detail_returns_hostile_output_verbatim_as_json(site: tuple[str, Path]) -> None:
    url, root = site
    run_id = ids(root)[1]
    rows = httpx.get(f"{url}/api/runs/{run_id}/cases", params={"q": "hostile"}).json()["rows"]
    detail = httpx.get(f"{url}/api/runs/{run_id}/case", params={"suite": "gate", "i": rows[0]["i"]})
    assert detail.headers["content-type"].startswith("application/json")
    assert HOSTILE_IMG in detail.json()["result"]["output"]


def test_compare_is_exactly_compare_runs(site: tuple[str, Path]) -> None:
    url, root = site
    store = RunStore(root / "eval_runs")
    base, cand = ids(root)[2], ids(root)[3]
    got = httpx.get(url + "/api/compare", params={"base": base, "candidate": cand}).json()
    assert got == compare_runs(store.load(base), store.load(cand), ComparePolicy()).to_dict()
    assert got["regressed"] is True
    assert [c["case_id"] for c in got["suites"]["gate"]["cases"]["regressed"]] == ["a"]


def test_run_header_and_report_without_raw_rows(tmp_path: Path) -> None:
    rs = [res(c, st, attempt=a) for a in range(3) for c, st in (("x", "passed"), ("y", "failed"))]
    write_runs(tmp_path / "eval_runs", [make_run("20260101T000000000Z-000001", {"s": suite(rs, "stochastic")})])
    url, thread, server = serve(tmp_path)
    try:
        body = httpx.get(url + "/api/runs/20260101T000000000Z-000001").json()
        assert body["suites"] == {"s": 6} and body["summary"]["suites"]["s"]["aggregate"]["n"] == 6
        report = httpx.get(url + "/api/runs/20260101T000000000Z-000001/report").json()
        rep = report["suites"][0]["arms"][0]["repeats"]
        assert rep["raw"] == [] and (rep["stable_pass"], rep["stable_fail"]) == (1, 1)
    finally:
        server.shutdown()  # type: ignore[attr-defined]
        server.server_close()  # type: ignore[attr-defined]
        thread.join(5)


def test_summaries_are_cached_by_file_and_refreshed_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = series(tmp_path / "eval_runs", OUTCOMES[:2])
    parsed: list[str] = []
    real = ui_index._summary_run
    monkeypatch.setattr(ui_index, "_summary_run", lambda path: parsed.append(str(path)) or real(path))
    index = ui_index.RunIndex(tmp_path / "eval_runs")
    assert len(index.summaries()) == 2 and len(parsed) == 2
    assert len(index.summaries()) == 2 and len(parsed) == 2  # nothing re-read
    changed = runs[1].model_copy(update={"label": "relabelled run"})
    RunStore(tmp_path / "eval_runs").write(changed)
    summaries = index.summaries()
    assert len(parsed) == 3 and summaries[1]["label"] == "relabelled run"
    (tmp_path / "eval_runs" / f"{runs[0].run_id}.json").write_text("{not json")
    assert [s["run_id"] for s in index.summaries()] == [runs[1].run_id]  # unreadable: left out


def test_loaded_runs_are_kept_in_a_small_lru(tmp_path: Path) -> None:
    runs = series(tmp_path / "eval_runs", OUTCOMES)
    index = ui_index.RunIndex(tmp_path / "eval_runs", max_loaded=2)
    first = index.load(runs[0].run_id)
    assert index.load(runs[0].run_id) is first
    index.load(runs[1].run_id)
    index.load(runs[2].run_id)
    assert index.load(runs[0].run_id) is not first  # evicted, loaded again


runner = CliRunner()


def test_ui_command_help_and_busy_port() -> None:
    result = runner.invoke(app, ["ui", "--help"])
    assert result.exit_code == 0 and "--port" in result.stdout and "127.0.0.1" in result.stdout
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["ui", "--port", str(port), "--runs-dir", "runs"])
    assert result.exit_code == 2
    assert "cannot listen on 127.0.0.1" in result.stderr and "--port" in result.stderr


def test_a_malformed_case_row_is_listed_but_the_report_names_it(tmp_path: Path) -> None:
    import orjson

    path = write_runs(tmp_path / "eval_runs", [make_run("20260101T000000000Z-000001", {"s": suite([res("a"), res("b")])})])[0]
    doc = orjson.loads(path.read_bytes())
    doc["suites"]["s"]["cases"][1]["status"] = "<b>bogus</b>"
    path.write_bytes(orjson.dumps(doc))
    url, thread, server = serve(tmp_path)
    try:
        with httpx.Client() as client:
            base = url + "/api/runs/20260101T000000000Z-000001"
            assert client.get(base + "/cases").json()["total"] == 2
            bad = client.get(base + "/report")
            assert bad.status_code == 422 and "suites.s.cases.1.status" in bad.json()["error"]
            assert client.get(base + "/case", params={"suite": "s", "i": 0}).status_code == 200
            assert client.get(base + "/case", params={"suite": "s", "i": 1}).status_code == 422
    finally:
        server.shutdown()  # type: ignore[attr-defined]
        server.server_close()  # type: ignore[attr-defined]
        thread.join(5)


def test_baseline_is_marked_and_is_the_default_base_of_compare(site: tuple[str, Path]) -> None:
    from evalh.baseline import write_baseline

    url, root = site
    run_ids = ids(root)
    write_baseline(root, run_ids[1])
    with httpx.Client() as client:
        assert client.get(url + "/api/runs").json()["baseline"] == run_ids[1]
        assert client.get(f"{url}/api/runs/{run_ids[1]}").json()["baseline"] is True
        assert client.get(f"{url}/api/runs/{run_ids[2]}").json()["baseline"] is False
        got = client.get(url + "/api/compare").json()
        assert (got["base"]["run_id"], got["candidate"]["run_id"]) == (run_ids[1], run_ids[-1])
        (root / "BASELINE").write_text("../../etc/passwd\n")
        assert client.get(url + "/api/runs").json()["baseline"] is None  # a bad marker marks nothing
        got = client.get(url + "/api/compare").json()
        assert (got["base"]["run_id"], got["candidate"]["run_id"]) == (run_ids[-2], run_ids[-1])


# --------------------------------------------------------------------------- case by case, grids


def _two_runs_with_arms(root: Path) -> list[str]:
    from evalh.models import Score

    runs = []
    for k in (0, 1):
        qa = [res("same", "passed", output="one two three"),
              res("flip", "passed" if k == 0 else "failed", output="Paris is the capital" if k == 0 else "Lyon is the capital"),
              res("err", "passed" if k == 0 else "errored", output="fine" if k == 0 else None),
              res("hostile", "failed", output=HOSTILE_IMG if k else "calm",
                  scores=[Score(scorer="exact", value=0.0, passed=False, rationale=HOSTILE_IMG)])]
        qa += [res("rep", "passed" if (a + k) % 2 == 0 or k == 0 else "failed", attempt=a, output="r") for a in range(2)]
        grid = [res(f"m{i}", "passed" if (i + j) % 2 else "failed", arm=arm, tokens=(10, 2), output="x" * (300 if i == 0 else 5))
                for i in range(3) for j, arm in enumerate(("a1", "a2", "a3"))]
        runs.append(make_run(f"2026010{k + 1}T000000000Z-00000{k}", {"qa": suite(qa), "g": suite(grid, baseline_arm="a2")}))
    write_runs(root / "eval_runs", runs)
    return [r.run_id for r in runs]


@pytest.fixture
def pair_site(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    run_ids = _two_runs_with_arms(tmp_path)
    url, thread, server = serve(tmp_path)
    try:
        yield url, run_ids
    finally:
        server.shutdown()  # type: ignore[attr-defined]
        server.server_close()  # type: ignore[attr-defined]
        thread.join(5)


def test_compare_cases_pairs_both_runs_and_filters_what_changed(pair_site: tuple[str, list[str]]) -> None:
    url, (b, c) = pair_site
    with httpx.Client(base_url=url) as client:
        def get(**params: str) -> dict:
            r = client.get("/api/compare/cases", params={"base": b, "candidate": c, "suite": "qa", **params})
            assert r.status_code == 200, r.text
            return r.json()

        page = get()
        assert page["filter"] == "changed"
        assert page["counts"] == {"regressed": 3, "improved": 0, "changed": 4, "errored": 1, "flaky": 1, "all": 5}
        assert [p["case_id"] for p in page["rows"]] == ["flip", "err", "rep", "hostile"]  # regressions first
        assert page["rows"][3]["tags"] == ["output_changed"]  # same outcome, other words
        flip = page["rows"][0]
        assert flip["base"]["statuses"] == ["passed"] and flip["candidate"]["statuses"] == ["failed"]
        assert set(flip["tags"]) >= {"regressed", "outcome_changed", "output_changed"}
        assert [p["case_id"] for p in get(filter="errored")["rows"]] == ["err"]
        flaky = get(filter="flaky")["rows"]
        assert [p["case_id"] for p in flaky] == ["rep"] and flaky[0]["candidate"]["statuses"] == ["failed", "passed"]
        assert [p["case_id"] for p in get(filter="all", q="lyon")["rows"]] == ["flip"]  # output text, either side
        assert [p["case_id"] for p in get(filter="all", q="PARIS")["rows"]] == ["flip"]
        assert len(get(filter="all")["rows"]) == 5
        assert client.get("/api/compare/cases", params={"base": b, "candidate": c, "filter": "nope"}).status_code == 400
        assert client.get("/api/compare/cases", params={"base": b, "candidate": c, "suite": "zz"}).status_code == 400
        assert client.get("/api/compare/cases", params={"base": "../x", "candidate": c}).status_code == 400


def test_compare_case_returns_both_sides_and_a_word_diff(pair_site: tuple[str, list[str]]) -> None:
    url, (b, c) = pair_site
    with httpx.Client(base_url=url) as client:
        got = client.get("/api/compare/case", params={"base": b, "candidate": c, "suite": "qa", "case": "flip"}).json()
        assert got["base"][0]["output"] == "Paris is the capital" and got["candidate"][0]["output"] == "Lyon is the capital"
        assert got["diffs"][0]["ops"] == [["del", "Paris"], ["ins", "Lyon"], ["eq", " is the capital"]]
        assert got["diffs"][0]["changed_words"] == 2
        hostile = client.get("/api/compare/case", params={"base": b, "candidate": c, "suite": "qa", "case": "hostile"}).json()
        assert hostile["candidate"][0]["output"] == HOSTILE_IMG  # verbatim JSON; the page makes it text
        assert hostile["candidate"][0]["scores"][0]["rationale"] == HOSTILE_IMG
        rep = client.get("/api/compare/case", params={"base": b, "candidate": c, "suite": "qa", "case": "rep"}).json()
        assert [r["attempt"] for r in rep["candidate"]] == [0, 1] and len(rep["diffs"]) == 2
        missing = client.get("/api/compare/case", params={"base": b, "candidate": c, "suite": "qa", "case": "nope"})
        assert missing.status_code == 404
        assert client.get("/api/compare/case", params={"base": b, "candidate": c, "suite": "qa"}).status_code == 400


def test_matrix_has_one_cell_per_case_and_arm_sorted_by_disagreement(pair_site: tuple[str, list[str]]) -> None:
    url, (b, _) = pair_site
    with httpx.Client(base_url=url) as client:
        g = client.get(f"/api/runs/{b}/matrix", params={"suite": "g"}).json()
        assert g["by"] == "arm" and g["columns"] == ["a2", "a1", "a3"] and g["baseline_arm"] == "a2"  # baseline first
        assert sorted(r["case_id"] for r in g["rows"]) == ["m0", "m1", "m2"]
        assert all(set(r["cells"]) == {"a1", "a2", "a3"} for r in g["rows"])
        assert [r["disagreement"] > 0 for r in g["rows"]] == [True, True, True]
        m0 = next(r for r in g["rows"] if r["case_id"] == "m0")["cells"]["a1"]
        assert m0["truncated"] is True and len(m0["preview"]) == 240 and m0["tokens_in"] == 10
        reps = client.get(f"/api/runs/{b}/matrix", params={"suite": "qa", "by": "attempt"}).json()
        assert reps["columns"] == ["0", "1"]
        assert {r["case_id"]: r["flakiness"] for r in reps["rows"]}["flip"] == "stable_pass"
        assert reps["flakiness"] == {"stable_pass": 4, "stable_fail": 1}
        assert client.get(f"/api/runs/{b}/matrix", params={"suite": "g", "by": "x"}).status_code == 400
        assert client.get(f"/api/runs/{b}/matrix", params={"suite": "g", "by": "attempt", "arm": "zz"}).status_code == 400


def test_both_stylesheets_draw_the_suite_palette_and_a_suite_keeps_its_slot() -> None:
    from importlib import resources

    from evalh.report.colors import PALETTE, suite_colors

    for pkg, name in (("evalh.ui", "dashboard.css"), ("evalh.report", "templates/report.css")):
        css = resources.files(pkg).joinpath(name).read_text()
        assert re.findall(r"--s(\d): (#[0-9a-f]{6})", css)[:len(PALETTE)] == [(str(i), c) for i, c in enumerate(PALETTE)], name
    few = suite_colors(["gate", "live"])
    many = suite_colors(["gate", "live · a", "live · b", "zeta", "answers"])
    assert set(few) == {"gate", "live"} and len(set(many.values())) == len(many)  # no two suites share a colour
    assert suite_colors(["gate"])["gate"] == few["gate"]  # the slot comes from the name, not from the page


def test_trends_carry_denominators_per_suite_cost_and_colours(tmp_path: Path) -> None:
    from evalh.ui.api import trends
    from evalh.ui.index import history_row

    runs = [make_run(f"2026010{k}T000000000Z-00000{k}", {
        "a": suite([res("x", cost_usd=0.5), res("y", "failed", cost_usd=0.25)]),
        "b": suite([res("x", arm="p"), res("x", "failed", arm="q")])}) for k in (1, 2)]
    t = trends([history_row(r) for r in runs])
    pr = {s["name"]: s for s in t["series"]["pass_rate"]}
    assert pr["a"]["values"] == [0.5, 0.5] and pr["a"]["num"] == [1, 1] and pr["a"]["den"] == [2, 2]
    assert set(pr) == {"a", "b · p", "b · q"}
    cost = {s["name"]: s["values"] for s in t["series"]["cost_usd"]}
    assert cost == {"a": [0.75, 0.75], "b": [None, None]}  # per suite; unknown stays unknown
    assert set(t["colors"]) == {"a", "b"}
