"""Claims and dimensions as data in the rubric, ratings bound to content across runs,
intervals exactly where valid, and agreement across every rater (checked against
statsmodels and krippendorff)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.stats.intervals import wilson_interval
from evalh.labels import (
    LabelError,
    LabelStore,
    RatingsStore,
    build_export,
    import_ratings,
    label_report,
    load_store,
)
from evalh.labels.agreement import fleiss_kappa, krippendorff_alpha
from evalh.labels.report_models import LabelReport, Rate, StaleResult
from evalh.labels.rubric import parse_rubric
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult
from evalh.store import RunStore

HIDDEN = "ZZ-PROVISIONAL-9c1e"
RUBRIC = b'''text = "Rate each claim's truth and grounding, and the answer's quality."

[claims]
path = "expected.claims"
text_path = "output.text"
[claims.fields.truth]
values = ["true", "false", "unsupported"]
allow_null = false
[claims.fields.grounding]
values = ["supported", "unsupported", "unknown"]
allow_null = false

[dimensions.relevance]
values = [true, false]
polarity = "higher-is-better"
[dimensions.repetition]
values = [true, false]
polarity = "adverse"

[kinds.answer]
claims = true
dimensions = ["relevance"]
[kinds.followup]
dimensions = ["repetition"]

[[rates]]
name = "any_false_claim"
claim_field = "truth"
positive = "false"
unsettled = ["unsupported"]
'''
HELD = {"split": "heldout", "sampling": "random", "claim_coverage": "exhaustive",
        "producer_model": "m-1", "prompt_sha256": "p" * 64}


def annotate(text: str, claims: list[str]) -> list[dict[str, Any]]:
    """Claims annotated on the case (hidden with their provisional verdicts), as spans of the output."""
    out = []
    for i, c in enumerate(claims):
        start = text.index(c)
        out.append({"id": f"c{i + 1}", "start": start, "end": start + len(c), "provisional": HIDDEN})
    return out


def case(cid: str, group: str, *, kind: str = "answer", text: str | None = None, attempt: int = 0,
         stratum: str = "s", **meta: Any) -> CaseResult:
    text = text or f"{cid}: the cache is empty. The retry is bounded."
    claims = annotate(text, ["the cache is empty", "The retry is bounded"]) if kind == "answer" else []
    return CaseResult(case_id=cid, attempt=attempt, status="passed", input={"q": f"question {cid}"},
                      expected={"hidden": HIDDEN, "claims": claims}, output={"text": text},
                      metadata={"group": group, "rating_kind": kind, "stratum": stratum, **{**HELD, **meta}})


def make_run(results: list[CaseResult], run_id: str = "20260101T000000000Z-aaaaaa") -> Run:
    return Run(run_id=run_id, started_at="2026-01-01T00:00:00Z", status="complete",
               environment=EnvironmentInfo(evalh="0", python="3", platform="test"), config={},
               suites={"fb": SuiteResult(regime="stochastic", dataset=DatasetInfo(path="d", sha256="x", cases=1),
                                         cases=results)})


def export(run: Run, labels: LabelStore | None = None, rubric: bytes = RUBRIC) -> tuple[dict[str, Any], LabelStore]:
    labels = labels or LabelStore(run_id=run.run_id)
    doc, _ = build_export(run, labels, rubric=rubric, rubric_name="rubric.toml")
    return doc, labels


def line(req: dict[str, Any], doc: dict[str, Any], rater: str, **body: Any) -> str:
    return json.dumps({"request_id": req["request_id"], "request_sha256": req["request_sha256"],
                       "rubric_sha256": doc["rubric"]["sha256"], "rater": rater, **body})


def full(req: dict[str, Any], truth: str = "true", grounding: str = "supported") -> dict[str, Any]:
    if req["kind"] == "answer":
        return {"claims": {c["id"]: {"truth": truth, "grounding": grounding} for c in req["claims"]},
                "dimensions": {"relevance": True}}
    return {"dimensions": {"repetition": False}}


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def by_case(doc: dict[str, Any], labels: LabelStore) -> dict[str, dict[str, Any]]:
    reqs = {r["request_id"]: r for r in doc["requests"]}
    return {f"{ref.case_id}#{ref.attempt}": reqs[rid] for rid, ref in labels.requests.items()}


def rate_all(tmp_path: Path, run: Run, raters: list[str], store: RatingsStore | None = None,
             overrides: dict[tuple[str, str], dict[str, Any]] | None = None) -> tuple[dict[str, Any], LabelStore, RatingsStore]:
    doc, labels = export(run)
    store = store or load_store(tmp_path / "runs")
    reqs = by_case(doc, labels)
    for rater in raters:
        lines = [line(req, doc, rater, **(overrides or {}).get((rater, key), full(req))) for key, req in reqs.items()]
        import_ratings(run, labels, store, [write(tmp_path / f"{rater}.jsonl", lines)])
    return doc, labels, store


# ----------------------------------------------------------------------------- the scheme


def test_rubric_declares_kinds_claim_fields_dimensions_and_rates() -> None:
    r = parse_rubric(RUBRIC, "rubric.toml")
    assert set(r.claim_fields) == {"truth", "grounding"}  # two fields, never one verdict
    assert r.dimensions["repetition"].polarity == "adverse"
    assert r.kinds["followup"].claims is False and r.rates[0].positive == "false"
    with pytest.raises(LabelError, match=r"rubric\.toml: dimensions\.x\.polarity"):
        parse_rubric(b'[dimensions.x]\npolarity = "sideways"\n', "rubric.toml")
    with pytest.raises(LabelError, match=r"claims: `path` and `text_path`"):
        parse_rubric(b'[claims.fields.truth]\nvalues = ["true"]\n', "rubric.toml")


def test_export_has_exact_claim_spans_and_nothing_hidden() -> None:
    run = make_run([case("a", "g1"), case("f", "g2", kind="followup")])
    doc, labels = export(run)
    assert HIDDEN not in json.dumps(doc)  # the claims' provisional verdicts stay behind
    reqs = by_case(doc, labels)
    a = reqs["a#0"]
    assert a["kind"] == "answer" and reqs["f#0"]["kind"] == "followup"
    for c in a["claims"]:
        assert set(c) == {"id", "start", "end", "text"}
        assert a["output"]["text"][c["start"]:c["end"]] == c["text"]
    assert doc["rubric"]["scheme"]["claims"]["fields"]["grounding"]["values"] == ["supported", "unsupported", "unknown"]


def test_blinded_hash_is_over_the_blinded_request_only() -> None:
    base = case("a", "g1")
    sha = export(make_run([base]))[0]["requests"][0]["request_sha256"]
    relabelled = base.model_copy(update={"expected": {**base.expected, "hidden": "corrected"}})
    verdict_fixed = base.model_copy(deep=True)
    verdict_fixed.expected["claims"][0]["provisional"] = "corrected"
    moved = base.model_copy(deep=True)
    moved.expected["claims"][0]["end"] -= 1
    assert export(make_run([relabelled]))[0]["requests"][0]["request_sha256"] == sha
    assert export(make_run([verdict_fixed]))[0]["requests"][0]["request_sha256"] == sha
    assert export(make_run([moved]))[0]["requests"][0]["request_sha256"] != sha


def test_a_span_outside_the_output_is_refused() -> None:
    bad = case("a", "g1")
    bad.expected["claims"][0]["end"] = 10_000
    with pytest.raises(LabelError, match=r"case a: expected\.claims\[0\]: start/end must be offsets"):
        export(make_run([bad]))


# ----------------------------------------------------------------------------- import


def test_incomplete_claim_ratings_are_refused_naming_the_missing_claim_ids(tmp_path: Path) -> None:
    run = make_run([case("a", "g1")])
    doc, labels = export(run)
    req = doc["requests"][0]
    skipped = line(req, doc, "ann", claims={"c1": {"truth": "true", "grounding": "supported"}},
                   dimensions={"relevance": True})
    store = load_store(tmp_path / "runs")
    with pytest.raises(LabelError, match=r"x\.jsonl:1: incomplete claim ratings for request r-\w+: missing claim id\(s\) c2"):
        import_ratings(run, labels, store, [write(tmp_path / "x.jsonl", [skipped])])
    half = line(req, doc, "ann", claims={"c1": {"truth": "true"}, "c2": {"truth": "true", "grounding": "unknown"}},
                dimensions={"relevance": True})
    with pytest.raises(LabelError, match=r"claim\(s\) without every field: c1 \(grounding\)"):
        import_ratings(run, labels, store, [write(tmp_path / "x.jsonl", [half])])
    not_allowed = line(req, doc, "ann", **{**full(req), "claims": {"c1": {"truth": None, "grounding": "unknown"},
                                                                  "c2": {"truth": "true", "grounding": "unknown"}}})
    with pytest.raises(LabelError, match=r"claims\.c1\.truth: null \(cannot tell\) is not allowed"):
        import_ratings(run, labels, store, [write(tmp_path / "x.jsonl", [not_allowed])])
    off_vocab = line(req, doc, "ann", **{**full(req), "dimensions": {"relevance": "very"}})
    with pytest.raises(LabelError, match=r"dimensions\.relevance: 'very' is not one of true, false"):
        import_ratings(run, labels, store, [write(tmp_path / "x.jsonl", [off_vocab])])
    assert not store.folder.exists()  # nothing written


def test_several_dimensions_of_one_request_are_ratings_of_their_own(tmp_path: Path) -> None:
    run = make_run([case("a", "g1")])
    doc, labels, store = rate_all(tmp_path, run, ["ann"])
    items = sorted((r.item, r.field) for r in store.records)
    assert items == [("claim:c1", "grounding"), ("claim:c1", "truth"), ("claim:c2", "grounding"),
                     ("claim:c2", "truth"), ("dimension:relevance", "relevance")]


def test_cli_incomplete_import_exits_2_with_one_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = make_run([case("a", "g1")])
    RunStore(runs).write(run)
    (tmp_path / "rubric.toml").write_bytes(RUBRIC)
    out = tmp_path / "req.json"
    res = CliRunner().invoke(app, ["export-requests", run.run_id, "--runs-dir", str(runs), "--rubric",
                                   str(tmp_path / "rubric.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    req = doc["requests"][0]
    f = write(tmp_path / "r.jsonl", [line(req, doc, "ann", dimensions={"relevance": True})])
    res = CliRunner().invoke(app, ["label", "import", str(f), "--run", run.run_id, "--runs-dir", str(runs)])
    assert res.exit_code == 2
    assert res.stderr.strip().endswith("missing claim id(s) c1, c2") and len(res.stderr.strip().splitlines()) == 1
    assert not (runs / "ratings").exists()


# ----------------------------------------------------------------------------- content, not runs


def test_ratings_carry_over_to_a_rerun_and_the_changed_item_is_stale(tmp_path: Path) -> None:
    first = make_run([case(c, f"g{c}") for c in "abcd"])
    _, _, store = rate_all(tmp_path, first, ["ann", "ben"])
    changed = case("c", "gc", text="c: the cache is empty! The retry is bounded.")
    rerun = make_run([case("a", "ga"), case("b", "gb"), changed, case("d", "gd")],
                     run_id="20260102T000000000Z-bbbbbb")
    _, labels = export(rerun)  # a fresh export of the re-run: new request ids
    rep = label_report(rerun, labels, load_store(tmp_path / "runs"))
    assert rep.counts.agreed == 3 and rep.counts.unlabelled == 1
    assert rep.to_dict()["stale"]["ratings_of_changed_content"] == 1
    assert rep.stale.results == [StaleResult(suite="fb", case_id="c", arm="default", attempt=0, raters=["ann", "ben"])]
    assert "fb/c:c1" in rep.claims.unresolved_ids  # stale: never used
    assert len(store.records) == len(load_store(tmp_path / "runs").records)  # the store is untouched


def test_rubric_versions_are_never_pooled(tmp_path: Path) -> None:
    run = make_run([case("a", "g1"), case("b", "g2")])
    doc, labels, store = rate_all(tmp_path, run, ["ann"])
    v2 = RUBRIC.replace(b"quality.", b"quality (v2).")
    doc2, _ = export(run, labels, rubric=v2)
    reqs = by_case(doc2, labels)
    f = write(tmp_path / "ben.jsonl", [line(reqs["a#0"], doc2, "ben", **full(reqs["a#0"]))])
    with pytest.raises(LabelError, match="stale rating: given under rubric"):  # ann's v1 digest now refused
        import_ratings(run, labels, store, [write(tmp_path / "late.jsonl",
                                                  [line(reqs["b#0"], doc, "ann", **full(reqs["b#0"]))])])
    import_ratings(run, labels, store, [f])
    rep = label_report(run, labels, store)
    assert rep.raters == ["ben"] and rep.rubric_sha256 == doc2["rubric"]["sha256"]
    assert rep.other_rubrics.ratings == 10 and list(rep.other_rubrics.rubrics) == [doc["rubric"]["sha256"]]
    old = label_report(run, labels, store, rubric=doc["rubric"]["sha256"])
    assert old.raters == ["ann"] and old.to_dict()["other_rubrics"]["ratings"] == 5


# ----------------------------------------------------------------------------- intervals


def _rate(rep: LabelReport, stratum: str = "s") -> Rate:
    row = next(r for r in rep.strata if r.stratum == stratum)
    return row.rates[0]


def test_one_trial_per_work_item_across_claims_and_attempts(tmp_path: Path) -> None:
    def two(cid: str, group: str) -> list[CaseResult]:
        return [case(cid, group), case(cid, group, attempt=1, text=f"{cid}: the cache is empty. The retry is bounded (again).")]

    # three work items of two cases × two attempts × two claims each: g1 has one false claim on one attempt
    results = [r for cid, g in (("a", "g1"), ("b", "g1"), ("c", "g2"), ("d", "g2"), ("e", "g3"), ("f", "g3"))
               for r in two(cid, g)]
    run = make_run(results)
    doc, labels = export(run)
    reqs = by_case(doc, labels)
    store = load_store(tmp_path / "runs")
    lines = []
    for key, req in reqs.items():
        body = full(req)
        if key == "a#1":
            body["claims"]["c2"]["truth"] = "false"
        lines.append(line(req, doc, "ann", **body))
    import_ratings(run, labels, store, [write(tmp_path / "ann.jsonl", lines)])
    rate = _rate(label_report(run, labels, store))
    assert (rate.numerator, rate.denominator, rate.work_items) == (1, 3, 3)
    assert rate.interval_95 == pytest.approx(wilson_interval(1, 3))


@pytest.mark.parametrize(("meta", "flag", "reason"), [
    ({"sampling": "hand-picked"}, True, "--random-sample cannot override a case's own sampling"),
    ({"sampling": None}, False, "not attested as a random held-out sample"),
    ({"split": "dev"}, True, "held-out split"),
    ({"claim_coverage": "selected"}, True, "claim coverage is selected, not exhaustive"),
    ({"prompt_sha256": None}, True, "producer model or prompt digest unknown"),
])
def test_no_interval_unless_every_condition_holds(tmp_path: Path, meta: dict[str, Any], flag: bool, reason: str) -> None:
    run = make_run([case(c, f"g{c}", **meta) for c in "abc"])
    doc, labels, store = rate_all(tmp_path, run, ["ann"])
    rate = _rate(label_report(run, labels, store, random_sample=flag))
    assert rate.interval_95 is None and rate.denominator == 3
    assert any(reason in r for r in rate.interval_null_reasons), rate.interval_null_reasons


def test_every_reason_is_listed_and_sampling_without_metadata_can_be_attested(tmp_path: Path) -> None:
    run = make_run([case(c, f"g{c}", sampling=None, split="dev", claim_coverage="selected") for c in "ab"])
    _, labels, store = rate_all(tmp_path, run, ["ann"])
    reasons = _rate(label_report(run, labels, store)).interval_null_reasons
    assert len(reasons) == 3  # split, sampling, coverage: all of them, not the first
    run = make_run([case(c, f"g{c}", sampling=None) for c in "ab"])
    (tmp_path / "second").mkdir()
    _, labels, store = rate_all(tmp_path / "second", run, ["ann"])
    assert _rate(label_report(run, labels, store, random_sample=True)).interval_95 is not None


def test_unsettled_truth_and_disputes_disable_the_interval_and_name_claims(tmp_path: Path) -> None:
    run = make_run([case(c, f"g{c}") for c in "abc"])
    doc, labels = export(run)
    reqs = by_case(doc, labels)
    unsure = json.loads(json.dumps(full(reqs["a#0"])))
    unsure["claims"]["c1"]["truth"] = "unsupported"  # both agree truth cannot be settled
    over = {("ann", "a#0"): unsure, ("ben", "a#0"): unsure, ("ben", "b#0"): full(reqs["b#0"], truth="false")}
    _, labels, store = rate_all(tmp_path, run, ["ann", "ben"], overrides=over)
    rep = label_report(run, labels, store)
    rate = _rate(rep)
    assert rate.interval_95 is None and (rate.numerator, rate.denominator) == (0, 1)
    assert rate.interval_null_reasons == ["labels incomplete: 1 disputed, 1 unsettled"]
    assert rep.claims.unresolved_ids == ["fb/a:c1", "fb/b:c1", "fb/b:c2"]
    assert rep.counts.disputed == 1


def test_a_group_crossing_sampling_methods_is_refused(tmp_path: Path) -> None:
    run = make_run([case("a", "g1"), case("b", "g1", sampling="hand-picked")])
    doc, labels, store = rate_all(tmp_path, run, ["ann"])
    with pytest.raises(LabelError, match=r"group 'g1' crosses sampling methods \(hand-picked, random\)"):
        label_report(run, labels, store)


def test_crossed_strata_with_by_several_fields(tmp_path: Path) -> None:
    run = make_run([case("a", "g1", practice="p1", destination="pr"), case("b", "g2", practice="p1", destination="chat"),
                    case("c", "g3", practice="p2", destination="pr")])
    _, labels, store = rate_all(tmp_path, run, ["ann"])
    rep = label_report(run, labels, store, by=["practice", "destination"])
    assert [r.stratum for r in rep.strata] == ["p1 × chat", "p1 × pr", "p2 × pr"]
    assert rep.strata[0].by == {"practice": "p1", "destination": "chat"}


def test_withheld_and_not_reviewed_are_counted_apart(tmp_path: Path) -> None:
    run = make_run([case("a", "g1"), case("b", "g2", review_state="withheld"), case("c", "g3", review_state="not-reviewed")])
    _, labels, store = rate_all(tmp_path, run, ["ann"], overrides={})
    rep = label_report(run, labels, store)
    c = rep.counts
    assert (c.withheld, c.not_reviewed, c.agreed) == (1, 1, 1)
    assert any("1 withheld" in r and "1 not reviewed" in r for r in _rate(rep).interval_null_reasons)


# ----------------------------------------------------------------------------- agreement


def _units(n: int, raters: int, cats: list[str | None], seed: int, missing: float = 0.0) -> dict[int, dict[str, str | None]]:
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        u = {f"r{j}": rng.choice(cats) for j in range(raters) if rng.random() >= missing}
        out[i] = u
    return out


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    units = _units(30, 3, ["true", "false", None], seed)
    cats = ["true", "false", None]
    data = [[cats.index(u[f"r{j}"]) for j in range(3)] for u in units.values()]
    table, _ = aggregate_raters(data)
    assert fleiss_kappa(units).kappa == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_alpha_matches_the_krippendorff_package(seed: int) -> None:
    import krippendorff
    import numpy as np

    order = ["0", "1", "2", "3"]
    units = _units(25, 3, [*order, None], seed, missing=0.2)
    # nominal: null is a category of its own
    codes = {v: i for i, v in enumerate([*order, None])}
    nominal = np.array([[codes[u[f"r{j}"]] if f"r{j}" in u else np.nan for u in units.values()] for j in range(3)],
                       dtype=float)
    ours = krippendorff_alpha(units).alpha
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=nominal, level_of_measurement="nominal"), abs=1e-12)
    # ordinal: null cannot be ordered, so it is left out
    ordinal = np.array([[float(u[f"r{j}"]) if u.get(f"r{j}") is not None else np.nan for u in units.values()]
                        for j in range(3)])
    res = krippendorff_alpha(units, level="ordinal", order=order)
    ref = krippendorff.alpha(reliability_data=ordinal, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert res.alpha == pytest.approx(ref, abs=1e-12)
    assert res.null_left_out == sum(v is None for u in units.values() for v in u.values())


def test_agreement_is_null_with_its_reason() -> None:
    constant = {i: {"a": "x", "b": "x", "c": "x"} for i in range(4)}
    assert fleiss_kappa(constant).kappa is None and (fleiss_kappa(constant).null_reason or "").startswith("constant")
    assert (krippendorff_alpha(constant).null_reason or "").startswith("constant")
    assert fleiss_kappa({0: {"a": "x"}}).null_reason == "fewer than two raters"
    assert krippendorff_alpha({0: {"a": "x"}, 1: {"b": "y"}}).null_reason == "no subject with two ratings"
    # an abstention against a value is a disagreement
    alpha = krippendorff_alpha({0: {"a": None, "b": "x"}, 1: {"a": "x", "b": "x"}, 2: {"a": "y", "b": "y"}}).alpha
    assert alpha is not None and alpha < 1


def test_report_gives_fleiss_and_krippendorff_per_field(tmp_path: Path) -> None:
    run = make_run([case(c, f"g{c}") for c in "abcd"])
    doc, labels = export(run)
    reqs = by_case(doc, labels)
    over = {("cho", "b#0"): full(reqs["b#0"], truth="false"), ("cho", "c#0"): full(reqs["c#0"], grounding="unknown")}
    _, labels, store = rate_all(tmp_path, run, ["ann", "ben", "cho"], overrides=over)
    fields = label_report(run, labels, store).inter_rater.fields
    assert set(fields) == {"claims.truth", "claims.grounding", "dimensions.relevance"}
    truth = fields["claims.truth"]
    assert truth.subjects == 8 and len(truth.pairs) == 3
    assert truth.fleiss_kappa.kappa is not None and truth.krippendorff_alpha["nominal"].alpha is not None
    assert (fields["dimensions.relevance"].fleiss_kappa.null_reason or "").startswith("constant")


def test_a_dataset_group_crossing_sampling_methods_is_refused(tmp_path: Path) -> None:
    from evalh.datasets import load_dataset
    from evalh.errors import DatasetError

    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"id": "a", "input": 1, "metadata": {"group": "g", "sampling": "random"}}) + "\n"
                 + json.dumps({"id": "b", "input": 2, "metadata": {"group": "g", "sampling": "hand-picked"}}) + "\n")
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: group 'g' crosses sampling methods: 'hand-picked' here, 'random' at line 1"):
        load_dataset(f)
