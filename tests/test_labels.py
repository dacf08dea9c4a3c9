"""Human labels: blinded export, ratings bound to digests, agreement and honest intervals;
then the `export-requests` and `label` commands through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.stats.intervals import cohens_kappa, wilson_interval
from evalh.labels import (
    LabelError,
    LabelStore,
    RatingsStore,
    build_export,
    import_ratings,
    label_report,
    load_store,
    request_sha256,
)
from evalh.labels.report_models import LabelReport, Rate, Stratum
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, Score, SuiteResult
from evalh.store import RunStore

MARKER = "ZZ-HIDDEN-LABEL-7f3a"
RUBRIC = b"Label `defect` when the answer states something the evidence does not support, else `ok`.\n"
RUN_ID = "20260101T000000000Z-abcdef"
HELD = {"split": "heldout", "producer_model": "m-1", "prompt_sha256": "p" * 64}
"""Held out, producer known: only sampling and the labels decide whether there is an interval."""


def result(i: int, *, arm: str = "default", attempt: int = 0, stratum: str = "s1",
           output: Any = None, judge: str | None = None, status: str = "passed", **meta: Any) -> CaseResult:
    scores = [Score(scorer="exact", value=1.0, passed=True, rationale=f"{MARKER} rationale")]
    if judge is not None:
        scores.append(Score(scorer="rubric", value=1.0, passed=True, verdict=judge, judge_model="judge-x",
                            rubric_sha256="r" * 64))
    return CaseResult(
        case_id=f"case.{MARKER}.{i}", arm=arm, attempt=attempt, status=status,  # type: ignore[arg-type]
        input={"question": f"q{i}", "evidence": f"evidence {i}"},
        expected={"label": MARKER, "why": f"{MARKER} because"},
        metadata={"stratum": stratum, "tags": [MARKER], **{**HELD, **meta}},
        output=output if output is not None else (None if status == "errored" else {"answer": f"a{i}"}),
        scores=scores if status != "errored" else [],
    )


def make_run(results: list[CaseResult]) -> Run:
    return Run(
        run_id=RUN_ID, started_at="2026-01-01T00:00:00Z", status="complete",
        environment=EnvironmentInfo(evalh="0", python="3", platform="test"),
        config={"suites": {"s": {"target": {"kind": "python", "callable": f"prod.{MARKER}:run"}}}},
        suites={"s": SuiteResult(regime="stochastic", dataset=DatasetInfo(path="d", sha256="x", cases=4),
                                 target={"kind": "python", "callable": f"prod.{MARKER}:run"},
                                 details={"note": MARKER}, cases=results)},
    )


def store_at(tmp_path: Path) -> RatingsStore:
    return load_store(tmp_path / "runs")


def imp(run: Run, labels: LabelStore, store: RatingsStore, path: Path, **kw: Any) -> Any:
    return import_ratings(run, labels, store, [path], **kw)[0]


def exported(run: Run) -> tuple[dict[str, Any], LabelStore]:
    labels = LabelStore(run_id=run.run_id)
    doc, _ = build_export(run, labels, rubric=RUBRIC)
    return doc, labels


def case_rid(labels: LabelStore) -> dict[str, str]:
    return {ref.case_id.rsplit(".", 1)[1]: rid for rid, ref in labels.requests.items()}


def ratings_file(path: Path, doc: dict[str, Any], labels: LabelStore, rater: str,
                 by_case: dict[str, Any], **extra: Any) -> Path:
    sha = {r["request_id"]: r["request_sha256"] for r in doc["requests"]}
    with path.open("w") as fh:
        for i, label in by_case.items():
            rid = case_rid(labels)[i]
            fh.write(json.dumps({"request_id": rid, "request_sha256": sha[rid],
                                 "rubric_sha256": doc["rubric"]["sha256"], "rater": rater,
                                 "label": label, **extra}) + "\n")
    return path


# ----------------------------------------------------------------------------- export


def test_export_is_blinded_and_has_only_input_and_output() -> None:
    run = make_run([result(i) for i in range(4)] + [result(9, status="errored")])
    doc, labels = exported(run)
    data = json.dumps(doc)
    assert MARKER not in data  # no label, rationale, case id, metadata, target or details
    assert len(doc["requests"]) == 4  # the errored result has no output to label
    for req in doc["requests"]:
        assert set(req) == {"request_id", "request_sha256", "input", "output"}
        assert req["request_id"].startswith("r-")
    assert [r["request_id"] for r in doc["requests"]] == sorted(r["request_id"] for r in doc["requests"])
    assert doc["manifest"]["requests"] == 4 and len(doc["manifest"]["sha256"]) == 64
    assert labels.exports[-1].manifest_sha256 == doc["manifest"]["sha256"]


def test_request_hash_ignores_label_corrections_and_follows_output_changes() -> None:
    r = result(1)
    fixed = r.model_copy(update={"expected": {"label": "corrected"}, "scores": []})
    changed = r.model_copy(update={"output": {"answer": "different"}})
    assert request_sha256(fixed) == request_sha256(r)
    assert request_sha256(changed) != request_sha256(r)
    assert request_sha256(r.model_copy(update={"input": {"question": "other"}})) != request_sha256(r)


def test_reexport_keeps_request_ids() -> None:
    run = make_run([result(i) for i in range(3)])
    labels = LabelStore(run_id=RUN_ID)
    first, _ = build_export(run, labels, rubric=RUBRIC)
    second, _ = build_export(run, labels, rubric=RUBRIC)
    assert [r["request_id"] for r in first["requests"]] == [r["request_id"] for r in second["requests"]]
    assert first["manifest"]["sha256"] == second["manifest"]["sha256"] and len(labels.exports) == 2


# ----------------------------------------------------------------------------- import


def test_ratings_bind_to_request_and_rubric(tmp_path: Path) -> None:
    run = make_run([result(i) for i in range(3)])
    doc, labels = exported(run)
    f = ratings_file(tmp_path / "a.jsonl", doc, labels, "alice", {"0": "ok", "1": "defect", "2": None})
    store = store_at(tmp_path)
    s = imp(run, labels, store, f)
    assert (s.imported, s.unchanged) == (3, 0) and len(store.records) == 3
    assert imp(run, labels, store, f).unchanged == 3  # idempotent
    assert len(list(store.folder.iterdir())) == 1  # nothing new: no second file
    assert len(store_at(tmp_path).records) == 3  # validated on load


def test_stale_output_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    run = make_run([result(i) for i in range(3)])
    doc, labels = exported(run)
    f = ratings_file(tmp_path / "a.jsonl", doc, labels, "alice", {"0": "ok", "1": "defect"})
    changed = make_run([result(0), result(1, output={"answer": "rewritten"}), result(2)])
    with pytest.raises(LabelError, match=r"a\.jsonl:2: stale rating: request r-\w+ was rated as"):
        imp(changed, labels, store_at(tmp_path), f)
    assert not (tmp_path / "runs" / "ratings").exists()  # nothing half-imported


def test_other_rubric_unknown_id_duplicates_and_typos_are_rejected(tmp_path: Path) -> None:
    run = make_run([result(i) for i in range(2)])
    doc, labels = exported(run)
    other = ratings_file(tmp_path / "o.jsonl", doc, labels, "alice", {"0": "ok"})
    other.write_text(other.read_text().replace(doc["rubric"]["sha256"], "0" * 64))
    with pytest.raises(LabelError, match=r"o\.jsonl:1: stale rating: given under rubric 000000000000"):
        imp(run, labels, store_at(tmp_path), other)
    unknown = tmp_path / "u.jsonl"
    unknown.write_text(json.dumps({"request_id": "r-nope", "request_sha256": "x", "rubric_sha256": "y",
                                   "rater": "a", "label": "ok"}) + "\n")
    with pytest.raises(LabelError, match=r"u\.jsonl:1: unknown request id 'r-nope'"):
        imp(run, labels, store_at(tmp_path), unknown)
    dup = ratings_file(tmp_path / "d.jsonl", doc, labels, "alice", {"0": "ok"})
    dup.write_text(dup.read_text() * 2)
    with pytest.raises(LabelError, match=r"d\.jsonl:2: duplicate"):
        imp(run, labels, store_at(tmp_path), dup)
    typo = ratings_file(tmp_path / "t.jsonl", doc, labels, "alice", {"0": "ok"}, lable="x")
    with pytest.raises(LabelError, match=r"t\.jsonl:1: lable"):
        imp(run, labels, store_at(tmp_path), typo)


def test_a_changed_label_needs_replace(tmp_path: Path) -> None:
    run = make_run([result(0)])
    doc, labels = exported(run)
    store = store_at(tmp_path)
    imp(run, labels, store, ratings_file(tmp_path / "a.jsonl", doc, labels, "alice", {"0": "ok"}))
    fix = ratings_file(tmp_path / "b.jsonl", doc, labels, "alice", {"0": "defect"})
    with pytest.raises(LabelError, match="use --replace"):
        imp(run, labels, store, fix)
    assert imp(run, labels, store, fix, replace=True).replaced == 1
    assert [r.value for r in store_at(tmp_path).current.values()] == ["defect"]
    assert [r.value for r in store.records] == ["ok", "defect"]  # append-only: the original is kept


# ----------------------------------------------------------------------------- report


def rated(results: list[CaseResult], tmp_path: Path, raters: dict[str, dict[str, Any]],
          adjudicate: dict[str, Any] | None = None) -> tuple[Run, LabelStore, RatingsStore]:
    run = make_run(results)
    doc, labels = exported(run)
    store = load_store(tmp_path / f"runs-{len(list(tmp_path.iterdir()))}")
    for rater, by_case in raters.items():
        imp(run, labels, store, ratings_file(tmp_path / f"{rater}.jsonl", doc, labels, rater, by_case))
    if adjudicate:
        f = ratings_file(tmp_path / "adj.jsonl", doc, labels, "lead", adjudicate, kind="adjudication")
        imp(run, labels, store, f)
    return run, labels, store


def test_agreement_and_kappa_before_adjudication(tmp_path: Path) -> None:
    a = {"0": "ok", "1": "ok", "2": "defect", "3": "defect"}
    b = {"0": "ok", "1": "defect", "2": "defect", "3": "defect"}
    run, labels, store = rated([result(i) for i in range(4)], tmp_path, {"alice": a, "bob": b}, adjudicate={"1": "ok"})
    rep = label_report(run, labels, store)
    pair = rep.inter_rater.pairs[0]
    assert pair.raters == ("alice", "bob") and pair.agreement.overlap == 4
    assert pair.agreement.raw_agreement == 0.75
    assert pair.agreement.kappa == pytest.approx(0.5) == cohens_kappa(list(a.values()), list(b.values()))
    assert rep.counts.adjudicated == 1 and rep.counts.disputed == 0  # settled, originals kept
    assert len([r for r in store.records if r.kind == "rating"]) == 8


def test_null_kappa_says_why_and_null_label_disagrees(tmp_path: Path) -> None:
    run, labels, store = rated([result(i) for i in range(3)], tmp_path,
                        {"alice": {"0": "ok", "1": "ok"}, "bob": {"0": "ok", "1": "ok"}, "carol": {"2": "ok"}})
    pairs = {p.raters: p.agreement for p in label_report(run, labels, store).inter_rater.pairs}
    assert pairs[("alice", "bob")].kappa is None and pairs[("alice", "bob")].raw_agreement == 1.0
    assert (pairs[("alice", "bob")].kappa_null_reason or "").startswith("constant labels")
    assert pairs[("alice", "carol")].kappa is None and pairs[("alice", "carol")].overlap == 0
    assert (pairs[("alice", "carol")].kappa_null_reason or "").startswith("no overlap")
    run, labels, store = rated([result(0)], tmp_path, {"dan": {"0": None}, "eve": {"0": "ok"}})
    assert label_report(run, labels, store).inter_rater.pairs[0].agreement.raw_agreement == 0.0


def test_judge_human_confusion_on_the_agreed_overlap(tmp_path: Path) -> None:
    results = [result(0, judge="ok"), result(1, judge="ok"), result(2, judge="defect"), result(3, judge="defect")]
    run, labels, store = rated(results, tmp_path, {"alice": {"0": "ok", "1": "defect", "2": "defect", "3": None}})
    (j,) = label_report(run, labels, store).judges
    assert j.scorer == "rubric" and j.judge_models == ["judge-x"]
    assert j.agreement.overlap == 3  # the abstained request is not in the overlap
    assert j.confusion == {"ok": {"ok": 1}, "defect": {"ok": 1, "defect": 1}}
    assert j.agreement.raw_agreement == pytest.approx(2 / 3) and j.same_rubric_as_humans is False


def _stratum(rep: LabelReport, name: str = "s1") -> Stratum:
    return next(s for s in rep.strata if s.stratum == name)


def _positive(rep: LabelReport, name: str = "s1") -> Rate:
    rate = _stratum(rep, name).positive
    assert rate is not None
    return rate


def test_wilson_only_where_its_assumptions_hold(tmp_path: Path) -> None:
    labels_ = {"0": "defect", "1": "ok", "2": "ok", "3": "ok"}
    run, labels, store = rated([result(i) for i in range(4)], tmp_path, {"alice": labels_})
    hand_picked = _positive(label_report(run, labels, store, positive="defect"))
    assert hand_picked.rate == 0.25 and hand_picked.numerator == 1 and hand_picked.denominator == 4
    assert hand_picked.interval_95 is None
    assert any("random held-out sample" in r for r in hand_picked.interval_null_reasons)
    attested = _positive(label_report(run, labels, store, positive="defect", random_sample=True))
    assert attested.interval_95 == pytest.approx(wilson_interval(1, 4))
    assert attested.interval_null_reasons == []
    # metadata.sampling = "random" on every case is an attestation too
    sampled = [result(i, sampling="random") for i in range(4)]
    run, labels, store = rated(sampled, tmp_path, {"alice": labels_})
    assert _positive(label_report(run, labels, store, positive="defect")).interval_95 is not None


@pytest.mark.parametrize(
    ("results", "raters", "reason"),
    [
        ([result(i) for i in range(3)], {"alice": {"0": "ok", "1": "ok"}}, "labels incomplete: 1 unlabelled"),
        ([result(i) for i in range(2)], {"a": {"0": "ok", "1": "ok"}, "b": {"0": "ok", "1": "defect"}},
         "labels incomplete: 1 disputed"),
        ([result(0), result(1), result(1, attempt=1)], {"a": {"0": "ok", "1": "ok"}}, "unequal attempts"),
        ([result(0), result(0, arm="b")], {"a": {"0": "ok"}}, "more than one arm"),
    ],
)
def test_wilson_is_null_with_the_reason(tmp_path: Path, results: list[CaseResult],
                                        raters: dict[str, dict[str, Any]], reason: str) -> None:
    run = make_run(results)
    doc, labels = exported(run)
    store = store_at(tmp_path)
    for rater, by_case in raters.items():
        sha = {r["request_id"]: r["request_sha256"] for r in doc["requests"]}
        lines = []
        for rid, ref in labels.requests.items():
            i = ref.case_id.rsplit(".", 1)[1]
            if i in by_case:
                lines.append(json.dumps({"request_id": rid, "request_sha256": sha[rid], "label": by_case[i],
                                         "rubric_sha256": doc["rubric"]["sha256"], "rater": rater}))
        (tmp_path / f"{rater}.jsonl").write_text("\n".join(lines) + "\n")
        imp(run, labels, store, tmp_path / f"{rater}.jsonl")
    row = _positive(label_report(run, labels, store, positive="defect", random_sample=True))
    assert row.interval_95 is None
    assert any(reason in r for r in row.interval_null_reasons), row.interval_null_reasons


def test_every_report_is_advisory(tmp_path: Path) -> None:
    run, labels, store = rated([result(0)], tmp_path, {"alice": {"0": "ok"}})
    rep = label_report(run, labels, store)
    assert rep.release_decision == "not-assessed" and rep.judge_use == "advisory-only"
    assert rep.to_dict()["releaseDecision"] == "not-assessed" and rep.to_dict()["judgeUse"] == "advisory-only"
    assert _stratum(rep).positive is None
    assert _stratum(rep).interval_null_reasons[0].startswith("no positive label")
    assert rep.to_dict()["strata"][0]["interval_null_reasons"][0].startswith("no positive label")


# ----------------------------------------------------------------------------- CLI


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_cli_export_import_report(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = make_run([result(i, stratum="a" if i < 2 else "b", judge="ok") for i in range(4)])
    run_path = RunStore(runs).write(run)
    run_bytes = run_path.read_bytes()
    rubric = tmp_path / "rubric.md"
    rubric.write_bytes(RUBRIC)
    out = tmp_path / "requests.json"
    exp = invoke("export-requests", RUN_ID, "--runs-dir", str(runs), "--rubric", str(rubric), "-o", str(out))
    assert exp.exit_code == 0, exp.output
    assert MARKER.encode() not in out.read_bytes()
    doc = json.loads(out.read_bytes())
    side = runs / f"{RUN_ID}.labels.json"
    assert side.is_file() and RunStore(runs).list_ids() == [RUN_ID]  # the sidecar is not a run

    lines = [json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                         "rubric_sha256": doc["rubric"]["sha256"], "rater": rater, "label": label})
             for r in doc["requests"] for rater, label in (("alice", "ok"), ("bob", "defect"))]
    good = tmp_path / "ratings.jsonl"
    good.write_text("\n".join(lines) + "\n")
    imp = invoke("label", "import", str(good), "--run", RUN_ID, "--runs-dir", str(runs))
    assert imp.exit_code == 0, imp.output
    assert "8 imported" in imp.stderr
    assert run_path.read_bytes() == run_bytes  # the run document is never modified

    stale = tmp_path / "stale.jsonl"
    stale.write_text(lines[0] + "\n" + lines[1].replace(doc["requests"][0]["request_sha256"], "f" * 64) + "\n")
    before = side.read_bytes()
    bad = invoke("label", "import", str(stale), "--run", RUN_ID, "--runs-dir", str(runs))
    assert bad.exit_code == 2
    assert f"{stale}:2: stale rating" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert side.read_bytes() == before  # nothing written

    rep = invoke("label", "report", RUN_ID, "--runs-dir", str(runs), "--positive", "defect")
    assert rep.exit_code == 0, rep.output
    assert "releaseDecision: not-assessed" in rep.stdout and "judgeUse: advisory-only" in rep.stdout
    assert "alice × bob" in rep.stdout  # always ok vs always defect: raw 0, kappa 0
    assert "no interval for a, b: labels incomplete: 2 disputed" in rep.stdout
    js = invoke("label", "report", RUN_ID, "--runs-dir", str(runs), "--json")
    assert js.exit_code == 0 and json.loads(js.stdout)["judges"][0]["overlap"] == 0  # disputed: no agreed label

    assert invoke("label", "report", "../etc", "--runs-dir", str(runs)).exit_code == 2
