"""The shipped feedback-quality example (examples/feedback/, synthetic) end to end: run with
an advisory judge on the mock, blinded export, three synthetic raters and a lead, import,
report — every figure checked against hand counts and against statsmodels / krippendorff
on the same data; then a re-run with one item changed carries the other ratings over."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.report import build_report
from evalh.store import RunStore

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "feedback"
MARKERS = ("hand-picked", "heldout", "feedback.h", "feedback.t", "feedback-model-1", "exhaustive", "destination")


def cli(*args: str) -> Any:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res


def run_example(root: Path, runs: Path) -> str:
    sys.modules.pop("product", None)  # the target module of the copy at `root`
    importlib.invalidate_caches()
    before = set(RunStore(runs).list_ids()) if runs.exists() else set()
    cli("run", "--config", str(root / "evalh.toml"), "--runs-dir", str(runs), "-q")
    (new,) = set(RunStore(runs).list_ids()) - before
    return new


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("feedback")
    root = tmp / "project"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "eval_runs"))
    runs = tmp / "runs"
    run_id = run_example(root, runs)
    req = tmp / "requests.json"
    cli("export-requests", run_id, "--runs-dir", str(runs), "--rubric", str(root / "rubric.toml"), "-o", str(req))
    export = json.loads(req.read_text())
    sys.path.insert(0, str(root))
    try:
        raters = importlib.import_module("raters")
        ratings = raters.ratings(export)
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("raters", None)
    files = []
    for name, lines in ratings.items():
        f = tmp / f"{name}.jsonl"
        f.write_text("".join(json.dumps(x) + "\n" for x in lines))
        files.append(str(f))
    cli("label", "import", *files, "--run", run_id, "--runs-dir", str(runs))
    rep = json.loads(cli("label", "report", run_id, "--runs-dir", str(runs), "--by", "split", "--json").stdout)
    return {"root": root, "runs": runs, "run_id": run_id, "export": export, "ratings": ratings, "report": rep,
            "tmp": tmp}


def test_the_export_is_blinded_and_its_hashes_recompute(example: dict[str, Any]) -> None:
    from evalh.models import sha256_of

    text = json.dumps(example["export"])
    for marker in MARKERS:
        assert marker not in text, marker  # split, sampling, case names, provisional labels, producer
    for req in example["export"]["requests"]:
        body = {k: req[k] for k in ("input", "output", "claims")}
        assert sha256_of(body) == req["request_sha256"]
        for c in req["claims"]:
            assert set(c) == {"id", "start", "end", "text"}  # the provisional truth and grounding stay hidden
            assert req["output"]["text"][c["start"]:c["end"]] == c["text"]


def test_counts_claims_and_advisory_flags_by_hand(example: dict[str, Any]) -> None:
    rep = example["report"]
    assert rep["releaseDecision"] == "not-assessed" and rep["judgeUse"] == "advisory-only"
    c = rep["counts"]
    # 15 captured results; one answer's relevance is null against two values (disputed);
    # the one truth dispute is adjudicated
    assert (c["results"], c["agreed"], c["disputed"], c["adjudicated"], c["unlabelled"], c["single_rated"],
            c["failed_captures"], c["withheld"], c["not_reviewed"], c["missing"]) == (15, 14, 1, 1, 0, 0, 0, 0, 0, 0)
    assert rep["raters"] == ["ann", "ben", "cho"]
    cl = rep["claims"]
    assert (cl["total"], cl["selected"], cl["exhaustive"]) == (28, 4, 24)
    assert cl["unresolved_ids"] == ["feedback/feedback.t44:c2"]  # truth unsupported: unsettled


def _units(example: dict[str, Any], field: str) -> dict[tuple[str, str], dict[str, Any]]:
    units: dict[tuple[str, str], dict[str, Any]] = {}
    for rater in ("ann", "ben", "cho"):
        for r in example["ratings"][rater]:
            for cid, fields in (r.get("claims") or {}).items():
                units.setdefault((r["request_id"], cid), {})[rater] = fields[field]
    return units


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")  # statsmodels, kappa variance
def test_agreement_matches_statsmodels_and_krippendorff(example: dict[str, Any]) -> None:
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa, to_table

    truth = example["report"]["inter_rater"]["fields"]["claims.truth"]
    units = _units(example, "truth")
    cats = ["true", "false", "unsupported"]
    data = np.array([[cats.index(u[r]) for r in ("ann", "ben", "cho")] for _, u in sorted(units.items())])
    assert truth["subjects"] == len(units) == 28
    pairs = {tuple(p["raters"]): p for p in truth["pairs"]}
    for (i, a), (j, b) in (((0, "ann"), (1, "ben")), ((0, "ann"), (2, "cho")), ((1, "ben"), (2, "cho"))):
        table, _ = to_table(data[:, [i, j]], bins=np.arange(4))
        assert pairs[(a, b)]["kappa"] == pytest.approx(cohens_kappa(table).kappa, abs=1e-12)
        assert pairs[(a, b)]["raw_agreement"] == pytest.approx(float(np.mean(data[:, i] == data[:, j])))
    assert pairs[("ann", "ben")]["raw_agreement"] == pytest.approx(27 / 28)  # ben's one dispute
    agg, _ = aggregate_raters(data)
    assert truth["fleiss_kappa"]["kappa"] == pytest.approx(fleiss_kappa(agg), abs=1e-12)
    alpha = krippendorff.alpha(reliability_data=data.T.astype(float), level_of_measurement="nominal")
    assert truth["krippendorff_alpha"]["nominal"]["alpha"] == pytest.approx(alpha, abs=1e-12)
    # relevance: cho's one null is a category of its own
    rel = example["report"]["inter_rater"]["fields"]["dimensions.relevance"]
    pairs = {tuple(p["raters"]): p for p in rel["pairs"]}
    assert pairs[("ann", "cho")]["raw_agreement"] == pytest.approx(13 / 14)
    assert pairs[("ann", "ben")]["kappa"] is None and pairs[("ann", "ben")]["kappa_null_reason"].startswith("constant")


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")  # statsmodels, kappa variance
def test_judge_human_confusion_on_the_humans_rubric(example: dict[str, Any]) -> None:
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa

    (j,) = example["report"]["judges"]
    assert j["same_rubric_as_humans"] is True  # the judge reads rubric.toml: same bytes, same digest
    assert j["judge_prompt_sha256"] and j["judgeUse"] == "advisory-only" and j["interval_95"] is None
    # by hand (build_cases.py): humans defect on t49, t44, h2-pr, h3-chat, h5-pr; the judge
    # calls h1-pr a defect too and misses h3-chat
    assert j["confusion"] == {"defect": {"defect": 4, "ok": 1}, "ok": {"defect": 1, "ok": 8}}
    assert j["overlap"] == 14 and j["raw_agreement"] == pytest.approx(12 / 14)
    assert j["kappa"] == pytest.approx(cohens_kappa(np.array([[4, 1], [1, 8]])).kappa, abs=1e-12)


def test_work_item_rates_and_intervals_by_hand_and_statsmodels(example: dict[str, Any]) -> None:
    from statsmodels.stats.proportion import proportion_confint

    strata = {s["stratum"]: s for s in example["report"]["strata"]}
    held = {r["name"]: r for r in strata["heldout"]["rates"]}
    # six held-out work items of two destinations each: h2 and h5 have a false claim, h2 and
    # h3 an unsupported one (h3's is a correct guess: true and unsupported)
    for name in ("any_false_claim", "any_unsupported_claim"):
        r = held[name]
        assert (r["rate_numerator"], r["rate_denominator"], r["work_items"]) == (2, 6, 6)
        assert r["interval_95"] == pytest.approx(list(proportion_confint(2, 6, method="wilson")), abs=2e-16)
        assert r["interval_null_reasons"] == []
    dev = {r["name"]: r for r in strata["dev"]["rates"]}
    assert (dev["any_false_claim"]["rate_numerator"], dev["any_false_claim"]["rate_denominator"]) == (2, 3)
    reasons = dev["any_false_claim"]["interval_null_reasons"]
    assert len(reasons) == 3 and "held-out split" in reasons[0] and "cannot override" in reasons[1]
    assert "selected" in reasons[2]
    q = strata["dev"]["dimensions"]["repetition"]
    assert (q["polarity"], q["true"], q["labelled"]) == ("adverse", 1, 1)
    assert strata["heldout"]["dimensions"]["relevance"]["disputed"] == 1


def test_evalh_report_gives_the_judge_only_suite_no_interval(example: dict[str, Any]) -> None:
    run = RunStore(example["runs"]).load(example["run_id"])
    assert run.config["suites"]["feedback"]["advisory"] is True
    iv = build_report([run]).suites[0].arms[0].interval
    assert iv.low is None and iv.reason.startswith("judge-only figure")


def test_a_rerun_with_one_item_changed_keeps_the_other_ratings(example: dict[str, Any]) -> None:
    root, runs = example["root"], example["runs"]
    outputs = json.loads((root / "outputs.json").read_text())
    ask = "Review the timeouts of module 4 (pr)."
    outputs[ask] += " Also, the docs are stale."  # the claims' spans still hold; the content changed
    (root / "outputs.json").write_text(json.dumps(outputs))
    rerun = run_example(root, runs)
    # never exported: the rubric file says what to verify the stored ratings against
    direct = json.loads(cli("label", "report", rerun, "--runs-dir", str(runs), "--rubric", str(root / "rubric.toml"),
                            "--json").stdout)
    assert (direct["counts"]["unlabelled"], direct["stale"]["ratings_of_changed_content"]) == (1, 1)
    # exported (new request ids): the same
    cli("export-requests", rerun, "--runs-dir", str(runs), "--rubric", str(root / "rubric.toml"),
        "-o", str(example["tmp"] / "rerun.json"))
    rep = json.loads(cli("label", "report", rerun, "--runs-dir", str(runs), "--by", "split", "--json").stdout)
    assert rep["counts"]["unlabelled"] == 1 and rep["counts"]["agreed"] + rep["counts"]["disputed"] == 14
    assert rep["stale"]["results"] == [{"suite": "feedback", "case_id": "feedback.h4-pr", "arm": "default",
                                       "attempt": 0, "raters": ["ann", "ben", "cho"]}]
    held = {r["name"]: r for r in next(s for s in rep["strata"] if s["stratum"] == "heldout")["rates"]}
    assert held["any_false_claim"]["interval_95"] is None  # h4 is no longer settled
    assert held["any_false_claim"]["interval_null_reasons"] == ["labels incomplete: 1 unlabelled"]
    assert Counter(s["rate_denominator"] for s in held.values()) == Counter({5: 2})
