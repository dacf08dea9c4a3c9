"""Suite-level figures (`evalh.report.figures`) on every text surface: per-lens
classification with the dead lens as worst, judging counts with low-confidence splits,
pairwise consistency under order swap and its flag."""

from __future__ import annotations

import json
import re

from evalh.core.analysis.classify import confusion_report
from evalh.models import Score
from evalh.report import build_report, to_html, to_json, to_markdown
from evalh.report.render import render_terminal
from evalh.scorers.judge_base import judge_counts
from tests.report_factory import HOSTILE_IMG, make_run, res, suite


def lens_details() -> dict:
    obs = []
    for i in range(10):  # four healthy lenses
        for lens in ("dates", "money", "quotes", "scope"):
            positive = i < 5
            obs.append((lens, ("tp" if i != 0 or lens != "money" else "fn") if positive else "tn", positive))
    obs += [("provenance", "errored", i < 5) for i in range(10)]  # a lens whose every call errored
    return confusion_report(obs)


def pairwise_details(consistent: int, judged: int) -> dict:
    return {"baseline_arm": "a", "pairs_judged": judged, "consistent": consistent, "inconsistent": judged - consistent,
            "judge_error": 0, "consistency_under_order_swap": consistent / judged, "position_bias_flag": consistent / judged < 0.8,
            "min_consistency": 0.8, "arms": {"b": {"win": 5, "loss": 3, "tie": 1, "inconsistent": judged - consistent,
                                                    "judge_error": 0, "win_rate": 5 / 9, "decided": 9}}}


def run_with_figures():  # type: ignore[no-untyped-def]
    scores = [Score(scorer="judge", value=1.0, passed=True, verdict="good", details={"low_confidence": i < 3})
              for i in range(8)]
    details = {"refuters": {"positive": "refuted", "unit": "case attempt", "arms": {"default": lens_details()}},
               "judge": judge_counts(scores), "pair": pairwise_details(10, 16)}
    return make_run("r1", {"s": suite([res("a"), res("b")], details=details)})


def test_the_dead_lens_is_the_worst_lens_not_hidden_under_no_recall() -> None:
    details = lens_details()
    # the scorer's own view agrees with every surface: worst by effective recall, and a
    # lens with known positives is never listed as having no recall
    assert details["worst"]["lens"] == "provenance" and details["worst"]["recall"] is None
    assert details["no_recall"] == []
    [fig] = [f for f in build_report([run_with_figures()]).suites[0].figures if f.kind == "classification"]
    assert fig.kind == "classification" and fig.data["worst"] == "provenance"
    rows = {r[0]: r for r in fig.rows}
    assert rows["provenance"][6] == "10" and rows["provenance"][8] == "n/a (0/0)"  # no recall over zero
    assert rows["provenance"][9] == "0.0% (0/5)"  # effective recall: its errors on positives are misses
    assert rows["money"][8] == "80.0% (4/5)"
    assert fig.notes[0].startswith("worst lens: provenance (effective recall 0.0% (0/5)")
    assert "by recall alone (errors left out) the worst lens would be money" in fig.notes
    assert any("lens provenance errored on every call (10)" in f for f in fig.flags)
    assert "macro" in rows


def test_every_text_surface_shows_every_figure() -> None:
    rep = build_report([run_with_figures()])
    md = to_markdown(rep)
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    render_terminal(rep, Console(file=buf, width=200, no_color=True))
    term = buf.getvalue()
    html = to_html(rep)
    html = html[:html.index('<script type="application/json"')]  # the drawn page, not its embedded data
    doc = json.loads(to_json(rep))
    for text in (md, term, html):
        assert len(re.findall("recall", text, re.IGNORECASE)) >= 3
        assert "worst lens: provenance" in text
        assert "consistency under order swap: 62.5% (10/16)" in text
        assert "position bias" in text
        assert "3 of 8 verdicts low-confidence" in text
    figs = doc["suites"][0]["figures"]
    assert [(f["kind"], f["scorer"]) for f in figs] == [("judge", "judge"), ("pairwise", "pair"), ("classification", "refuters")]
    # the flags reach the summary that opens the report
    assert any("position bias" in f for f in doc["summary"][0]["flags"])
    assert md.index("position bias") < md.index("## suite s")


def test_a_hostile_lens_name_is_escaped() -> None:
    obs = [(HOSTILE_IMG, "tp", True)]
    rep = build_report([make_run("r", {"s": suite([res("a")], details={"c": {"positive": "x", "unit": "case attempt", "arms": {"default": confusion_report(obs)}}})})])
    assert HOSTILE_IMG not in to_html(rep) and HOSTILE_IMG not in to_markdown(rep)


def test_a_classification_of_several_arms_is_one_figure_per_arm() -> None:
    fact = {"positive": "refuted", "unit": "case attempt",
            "arms": {"a": confusion_report([("x", "tp", True)]), "b": confusion_report([("x", "errored", True)])}}
    rep = build_report([make_run("r", {"s": suite([res("a")], details={"c": fact})})])
    figs = [f for f in rep.suites[0].figures if f.kind == "classification"]
    assert [(f.arm, f.title, f.data["worst"]) for f in figs] == [("a", "c [a]: per lens", "x"), ("b", "c [b]: per lens", "x")]
    assert figs[1].flags == ["c [b]: lens x errored on every call (1)"]


def test_verdict_distributions_are_figures_drawn_on_every_surface() -> None:
    def judged(cid: str, verdict: str, arm: str) -> object:
        return res(cid, "passed" if verdict == "supported" else "failed", arm=arm,
                   scores=[Score(scorer="cite", value=1.0, passed=verdict == "supported", verdict=verdict)])

    rs = [judged("a", "supported", "x"), judged("b", "supported", "x"), judged("c", "unsupported", "x"),
          judged("a", "unsupported", "y")]
    rep = build_report([make_run("r", {"s": suite(rs, baseline_arm="x")})])  # type: ignore[arg-type]
    figs = [f for f in rep.suites[0].figures if f.kind == "verdicts"]
    assert [(f.arm, f.title) for f in figs] == [("x", "x · cite verdicts"), ("y", "y · cite verdicts")]
    assert figs[0].rows == [["supported", "2", "66.7% (2/3)"], ["unsupported", "1", "33.3% (1/3)"]]
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    render_terminal(rep, Console(file=buf, width=200, no_color=True))
    html = to_html(rep)
    for text in (to_markdown(rep), buf.getvalue(), html[:html.index('<script type="application/json"')]):
        assert "x · cite verdicts" in text and "66.7% (2/3)" in text


def test_evalh_show_prints_the_figures_under_its_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from tests.report_factory import write_runs

    run = run_with_figures().model_copy(update={"run_id": "20260301T000000000Z-00000f"})
    write_runs(tmp_path / "runs", [run])
    result = CliRunner().invoke(app, ["show", run.run_id, "--runs-dir", str(tmp_path / "runs")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "worst lens: provenance" in out and "effective recall" in out and "n/a (0/0)" in out
    assert "consistency under order swap: 62.5% (10/16)" in out and "position bias" in out
    assert "3 of 8 verdicts low-confidence" in out


def test_verdict_distributions_across_runs_side_by_side_on_every_surface() -> None:
    def run(k: int, verdicts: list[str]):  # type: ignore[no-untyped-def]
        rs = [res(f"c{i}", "passed" if v == "good" else "failed",
                  scores=[Score(scorer="j", value=1.0, passed=v == "good", verdict=v)]) for i, v in enumerate(verdicts)]
        return make_run(f"2026010{k}T000000000Z-00000{k}", {"s": suite(rs)}, label=f"v{k}")

    rep = build_report([run(1, ["good", "good", "bad"]), run(2, ["good", "bad", "bad", "ugly"])])
    [fig] = rep.figures
    assert fig.title == "s: j verdicts across runs" and fig.columns == ["verdict", "v1", "v2"]
    assert fig.rows == [["good", "66.7% (2/3)", "25.0% (1/4)"], ["bad", "33.3% (1/3)", "50.0% (2/4)"], ["ugly", "0.0% (0/3)", "25.0% (1/4)"]]
    html = to_html(rep)
    for text in (to_markdown(rep), html[:html.index('<script type="application/json"')]):
        assert "j verdicts across runs" in text and "25.0% (1/4)" in text
    md = to_markdown(rep)
    assert md.index("across runs") < md.index("# run ")  # with the summary, before the runs
    assert build_report([run(1, ["good"])]).figures == []
