"""Judge figures corrected by human labels, end to end through the CLI: a judged run through
the mock provider with a judge biased by script, a random sample drawn by `export-requests
--sample`, its ratings imported, and `label report` / `compare` showing the corrected
figures (PPI++); a hand-picked sample gives null with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.core.stats.ppi import ppi_mean

JUDGE = 'provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", max_retries = 0'
TARGET = '''\
from pathlib import Path


def answer(inp):  # every n-th answer is bad, n read at each call: a new product between runs
    n = int(Path(__file__).with_name("bad_every.txt").read_text())
    i = int(inp["q"].split()[-1])
    return {"text": ("GOOD " if i % n else "BAD ") + inp["q"]}
'''
CASES = 60


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def good(i: int, bad_every: int) -> bool:
    return i % bad_every != 0


def text(i: int, bad_every: int) -> str:
    return f"{'GOOD' if good(i, bad_every) else 'BAD'} answer {i:03d}"


def judge_says(i: int, bad_every: int) -> str:
    """The scripted judge: passes two bad answers in three (false pass), fails one good in twenty."""
    if good(i, bad_every):
        return "fail" if i % 20 == 1 else "pass"
    return "fail" if i % 3 == 0 else "pass"


def project(root: Path, bad_every: int) -> Path:
    (root / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "ctgt:answer"\nregime = "stochastic"\n'
        f'scorers = [{{ type = "judge", {JUDGE}, rubric = "r", output_field = "text" }}]\n', encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:03d}", "input": {"q": f"answer {i:03d}"}}) + "\n" for i in range(CASES)),
        encoding="utf-8")
    (root / "ctgt.py").write_text(TARGET, encoding="utf-8")
    (root / "bad_every.txt").write_text(str(bad_every), encoding="utf-8")
    rules = [{"match": f"<output>\n{text(i, bad_every)}", "json": {"verdict": judge_says(i, bad_every), "rationale": "scripted"}}
             for i in range(CASES)]
    (root / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    (root / "rubric.md").write_text("Label pass when the answer is GOOD, fail when BAD.\n", encoding="utf-8")
    return root / "evalh.toml"


def cli(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


def run(cfg: Path) -> str:
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["run_id"])


def label(cfg: Path, run_id: str, *export_args: str, keep: int | None = None) -> list[dict[str, Any]]:
    """Export (with `export_args`), rate every exported request (or the first `keep` by
    answer) truthfully, import; returns the rated requests."""
    out = cfg.parent / f"req-{run_id}.json"
    res = cli(cfg, "export-requests", run_id, "--rubric", str(cfg.parent / "rubric.md"), "-o", str(out), *export_args)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    reqs = sorted(doc["requests"], key=lambda r: r["output"]["text"])[:keep]
    lines = [json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                         "rubric_sha256": doc["rubric"]["sha256"], "rater": "ann",
                         "label": "pass" if r["output"]["text"].startswith("GOOD") else "fail"}) for r in reqs]
    ratings = cfg.parent / f"ratings-{run_id}.jsonl"
    ratings.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = cli(cfg, "label", "import", str(ratings), "--run", run_id)
    assert res.exit_code == 0, res.output
    return reqs


def report(cfg: Path, run_id: str, *args: str) -> dict[str, Any]:
    res = cli(cfg, "label", "report", run_id, "--json", *args)
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_a_random_sample_corrects_the_judge_and_a_hand_picked_one_does_not(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    rated = label(cfg, run_id, "--sample", "24", "--seed", "7")
    assert len(rated) == 24
    side = json.loads((tmp_path / "runs" / f"{run_id}.labels.json").read_text(encoding="utf-8"))
    (draw,) = side["samples"]
    assert (draw["seed"], draw["frame_size"], len(draw["drawn"])) == (7, CASES, 24)

    (fig,) = report(cfg, run_id)["corrected"]
    # the same figure from the scripted truth, by hand
    drawn = {c for c, _ in draw["drawn"]}
    ids = [f"c{i:03d}" for i in range(CASES)]
    y = [float(good(i, 4)) for i, c in enumerate(ids) if c in drawn]
    yh = [float(judge_says(i, 4) == "pass") for i, c in enumerate(ids) if c in drawn]
    yu = [float(judge_says(i, 4) == "pass") for i, c in enumerate(ids) if c not in drawn]
    want = ppi_mean(y, yh, yu)
    assert fig["null_reasons"] == []
    assert fig["estimate"] == pytest.approx(want.estimate, abs=1e-12)
    assert fig["interval_95"] == pytest.approx(list(want.interval), abs=1e-12)
    assert (fig["labelled"], fig["judged"]) == (24, CASES)
    assert fig["judge_rate"] == pytest.approx(sum(yh + yu) / CASES)
    assert fig["effective_labels"] == pytest.approx(want.effective_labels)
    np = pytest.importorskip("numpy")
    ppi_py = pytest.importorskip("ppi_py")  # the reference implementation, on the same data
    lo, hi = ppi_py.ppi_mean_ci(np.array(y), np.array(yh), np.array(yu), alpha=0.05, lam=None)
    assert fig["interval_95"] == pytest.approx([float(np.squeeze(lo)), float(np.squeeze(hi))], abs=1e-9)

    text_out = cli(cfg, "label", "report", run_id, "--target-width", "0.1")
    assert text_out.exit_code == 0, text_out.output
    assert "corrected rate of 'pass', s · judge judge:" in text_out.stdout.replace("\n", " ") or \
        "corrected rate of 'pass'" in text_out.stdout
    assert "labels needed for width 0.1" in text_out.stdout

    # hand-picked: another project, every request exported, the first 24 by answer labelled
    other = tmp_path / "hand"
    other.mkdir()
    cfg2 = project(other, bad_every=4)
    run2 = run(cfg2)
    label(cfg2, run2, keep=24)
    (fig2,) = report(cfg2, run2)["corrected"]
    assert fig2["estimate"] is None and fig2["interval_95"] is None
    assert any("not drawn at random by evalh" in r for r in fig2["null_reasons"])
    assert fig2["labels_outside_draw"] == 24


def test_compare_gates_on_the_corrected_difference(tmp_path: Path) -> None:
    """Base: one answer in ten bad; candidate: one in two. Each run labels a random 24 (the
    same seed draws the same cases: one sample labelled on both, a paired difference)."""
    cfg = project(tmp_path, bad_every=10)
    base = run(cfg)
    label(cfg, base, "--sample", "24", "--seed", "5")
    project(tmp_path, bad_every=2)
    cand = run(cfg)
    label(cfg, cand, "--sample", "24", "--seed", "5")
    res = cli(cfg, "compare", base, cand, "--corrected", "--json", "--fail-on-regression")
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    (row,) = [m for m in doc["suites"]["s"]["metrics"] if m["name"] == "corrected_pass_rate"]
    assert row["verdict"] == "regressed" and row["scorer"] == "judge" and row["n"] == 24
    assert "one sample labelled on both" in row["method"]
    assert row["p_adjusted"] is not None  # held to the family like every row
    assert doc["suites"]["s"]["counts"]["changed"] == 0  # the same cases: only the product changed
    assert doc["family"]["size"] >= 2
    table = cli(cfg, "compare", base, cand, "--corrected")
    assert "corrected_pass_rate" in table.stdout or "corrected pass rate" in table.stdout


def test_report_shows_the_corrected_figure_and_a_rejudge_shows_both_judges(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "24", "--seed", "7")
    res = cli(cfg, "report", run_id, "--json")
    assert res.exit_code == 0, res.output
    (s,) = json.loads(res.stdout)["suites"]
    (fig,) = [f for f in s["figures"] if f["kind"] == "corrected"]
    want = report(cfg, run_id)["corrected"][0]
    assert fig["data"]["estimate"] == want["estimate"] and fig["rows"][0][0] == "all"
    md = cli(cfg, "report", run_id, "--format", "md")
    assert "corrected by human labels (PPI++)" in md.stdout
    from evalh.ui.api import DashboardApi
    from evalh.ui.index import RunIndex

    board = DashboardApi(RunIndex(tmp_path / "runs"), tmp_path).report(run_id)  # the dashboard's report
    (dash,) = [f for f in board["suites"][0]["figures"] if f["kind"] == "corrected"]
    assert dash["rows"] == fig["rows"]
    html = cli(cfg, "report", run_id, "--format", "html", "-o", str(tmp_path / "r.html"))
    assert html.exit_code == 0, html.output
    assert "corrected by human labels (PPI++)" in (tmp_path / "r.html").read_text(encoding="utf-8")

    # a rejudge: the judge now fails every BAD answer; same outputs, same human labels
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {"verdict": "pass" if good(i, 4) else "fail",
                                                            "rationale": "strict"}} for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    res = cli(cfg, "rejudge", run_id, "--all", "--json")
    assert res.exit_code == 0, res.output
    new_id = json.loads(res.stdout)["run_id"]
    (after,) = report(cfg, new_id)["corrected"]
    assert after["null_reasons"] == [] and after["before_rejudge"]["estimate"] == want["estimate"]
    assert after["judge_rate"] == pytest.approx(sum(good(i, 4) for i in range(CASES)) / CASES)
    assert after["estimate"] != want["estimate"]
    assert after["se"] < want["se"]  # a judge that agrees with the humans narrows the interval
    text_out = cli(cfg, "report", new_id)
    assert "before rejudge" in text_out.stdout


def test_a_draw_is_reproducible_and_a_second_draw_takes_what_is_left(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    side = tmp_path / "runs" / f"{run_id}.labels.json"

    def export(*args: str) -> Result:
        return cli(cfg, "export-requests", run_id, "--rubric", str(tmp_path / "rubric.md"), "-o",
                   str(tmp_path / "r.json"), *args)

    assert export("--sample", "10", "--seed", "3").exit_code == 0
    first = json.loads(side.read_text(encoding="utf-8"))["samples"][0]["drawn"]
    side.unlink()
    assert export("--sample", "10", "--seed", "3").exit_code == 0
    assert json.loads(side.read_text(encoding="utf-8"))["samples"][0]["drawn"] == first
    assert export("--sample", "45", "--seed", "4").exit_code == 0
    samples = json.loads(side.read_text(encoding="utf-8"))["samples"]
    assert not {tuple(k) for k in samples[0]["drawn"]} & {tuple(k) for k in samples[1]["drawn"]}
    before = side.read_bytes()
    for args, says in ((("--sample", "6", "--seed", "5"), "cannot draw 6 of 5"),
                       (("--sample", "3"), "--seed"),
                       (("--sample", "3", "--target-width", "0.1", "--seed", "1"), "not both")):
        bad = export(*args)
        assert bad.exit_code == 2 and says in bad.output, bad.output
        assert side.read_bytes() == before  # nothing half-written


def test_missing_labels_in_the_draw_and_changed_results_give_null(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "12", "--seed", "7", keep=10)  # two drawn results left unrated
    (fig,) = report(cfg, run_id)["corrected"]
    assert fig["estimate"] is None
    assert any("2 drawn result(s) without an agreed label" in r for r in fig["null_reasons"])
    side = tmp_path / "runs" / f"{run_id}.labels.json"
    doc = json.loads(side.read_text(encoding="utf-8"))
    doc["samples"][0]["frame_sha256"] = "0" * 64
    side.write_text(json.dumps(doc), encoding="utf-8")
    (fig,) = report(cfg, run_id)["corrected"]
    assert any("results changed since the labelled sample was drawn" in r for r in fig["null_reasons"])


def test_target_width_draws_more_where_judge_and_humans_disagree(tmp_path: Path) -> None:
    """Stratum A: the judge is right throughout; stratum B: it passes bad answers. The
    follow-up draw goes to B, and the estimate weighs each stratum by its share."""
    cfg = project(tmp_path, bad_every=4)
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, x in enumerate(lines):
        x["metadata"] = {"stratum": "A" if i % 2 else "B"}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rules = [{"match": f"<output>\n{text(i, 4)}", "json": {
        "verdict": ("pass" if good(i, 4) else "fail") if i % 2 else "pass", "rationale": "scripted"}}
        for i in range(CASES)]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    run_id = run(cfg)
    label(cfg, run_id, "--sample", "16", "--seed", "2")
    (fig,) = report(cfg, run_id, "--target-width", "0.2")["corrected"]
    need = fig["labels_needed"]
    # every answer of A is good and the judge says so: A's interval has zero width, and it is said
    assert fig["strata"]["A"]["se"] == 0 and any(n.startswith("stratum A:") for n in fig["notes"])
    assert need["labels_needed"] and need["per_stratum"]["B"] > need["per_stratum"].get("A", 0)
    label(cfg, run_id, "--target-width", "0.2", "--seed", "3")
    side = json.loads((tmp_path / "runs" / f"{run_id}.labels.json").read_text(encoding="utf-8"))
    assert side["samples"][1]["method"] == "stratified" and side["samples"][1]["per_stratum"] == {
        k: v for k, v in need["per_stratum"].items() if v}
    (after,) = report(cfg, run_id)["corrected"]
    assert after["labelled"] == 16 + need["labels_needed"]
    assert set(after["strata"]) == {"A", "B"} and after["method"] == "PPI++ (power-tuned), stratified by stratum (2 strata)"
    a, b = after["strata"]["A"], after["strata"]["B"]
    assert after["estimate"] == pytest.approx((a["judged"] * a["estimate"] + b["judged"] * b["estimate"]) / CASES)
    assert after["interval_95"][1] - after["interval_95"][0] < fig["interval_95"][1] - fig["interval_95"][0]


def test_compare_with_independent_samples_and_no_change_is_not_a_regression(tmp_path: Path) -> None:
    cfg = project(tmp_path, bad_every=4)
    base = run(cfg)
    label(cfg, base, "--sample", "20", "--seed", "1")
    cand = run(cfg)  # the same outputs: the base's ratings apply, but only the candidate's own draw is used
    label(cfg, cand, "--sample", "20", "--seed", "99")
    res = cli(cfg, "compare", base, cand, "--corrected", "--json", "--fail-on-regression")
    assert res.exit_code == 0, res.output
    (row,) = [m for m in json.loads(res.stdout)["suites"]["s"]["metrics"] if m["name"] == "corrected_pass_rate"]
    assert "independent" in row["method"] and row["verdict"] in ("flat", "inconclusive")
    assert row["interval"][0] < 0 < row["interval"][1] or row["delta"] == 0
