"""The five reference harnesses, rerun as configuration plus data (docs/seeds.md).

Each seed is a project in this repository: the root project (`evalh.toml`, `datasets/`, the
targets in `examples/`) for the refuter panel (000), the tiered agent eval (001) and the
citation eval (004); `examples/feedback` for the feedback-quality eval with human labels
(002); `examples/bias` for the bias-aware methodology (003). A test copies the project to a
temporary directory, runs it with `evalh run` (the mock provider wherever a model is named:
no key, no network) and asserts the seed's own figures with their values on every surface a
person reads: `evalh report` in each format, `evalh show` and the dashboard's
`/api/runs/RUN/report`. docs/seeds.md maps each requirement of a seed to its test here.
"""

from __future__ import annotations

import html
import importlib
import json
import shutil
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.real_runs import cli, figures, surfaces

REPO = Path(__file__).resolve().parent.parent
SURFACES = ("table", "md", "html", "json", "show", "api")


def plain(name: str, text: str) -> str:
    """A surface's text with its format's escaping undone: the JSON ones reloaded (no
    \\u escapes), HTML entities and Markdown backslashes removed."""
    if name in ("json", "api"):
        return json.dumps(json.loads(text), ensure_ascii=False)
    text = html.unescape(text)
    return text.replace("\\_", "_").replace("\\#", "#").replace("\\*", "*").replace("\\[", "[").replace("\\]", "]")


@dataclass
class SeedRun:
    """One seed's rerun: its project copy, the run's id and document, every surface."""

    cfg: Path
    run_id: str
    doc: dict[str, Any]
    out: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)


def copy_root_project(dest: Path) -> Path:
    """The root project (config, datasets, the example targets) under `dest`."""
    shutil.copy(REPO / "evalh.toml", dest / "evalh.toml")
    ignore = shutil.ignore_patterns("__pycache__", "eval_runs", "outputs")
    shutil.copytree(REPO / "datasets", dest / "datasets", ignore=ignore)
    shutil.copytree(REPO / "examples", dest / "examples", ignore=ignore)
    return dest / "evalh.toml"


def run(cfg: Path, *args: str, expect: tuple[int, ...] = (0,)) -> str:
    before = {p.stem for p in (cfg.parent / "eval_runs").glob("*.json")}
    result = cli(cfg, "run", *args)
    assert result.exit_code in expect, (result.exit_code, result.output)
    [new] = {p.stem for p in (cfg.parent / "eval_runs").glob("*.json")} - before
    return new


def finish(cfg: Path, run_id: str, **extra: Any) -> SeedRun:
    doc = json.loads((cfg.parent / "eval_runs" / f"{run_id}.json").read_bytes())
    out = {name: plain(name, text) for name, text in surfaces(cfg, run_id).items()}
    return SeedRun(cfg, run_id, doc, out, extra)


# ----------------------------------------------------------------------------- the seeds, run


def seed_000(root: Path) -> SeedRun:
    cfg = copy_root_project(root)
    run_id = run(cfg, "--suite", "panel", "--label", "panel eval")
    swept = cli(cfg, "sweep", run_id, "--suite", "panel")
    assert swept.exit_code == 0, swept.output
    return finish(cfg, run_id, sweep=swept.stdout)


def seed_001(root: Path) -> SeedRun:
    cfg = copy_root_project(root)
    tiers = ("--suite", "gate", "--suite", "guards", "--suite", "scenarios", "--suite", "scenarios_model")
    base = run(cfg, *tiers, "--label", "tiered")
    live = cli(cfg, "run", "--suite", "live")  # the live tier needs its key, named in one line
    assert cli(cfg, "baseline", "set", base).exit_code == 0
    same = cli(cfg, "run", *tiers, "--label", "again", "--compare-baseline")
    # a planted regression in the deterministic gate suite: one accepted notation now rejected
    gate = cfg.parent / "datasets" / "gate.jsonl"
    rows = [json.loads(line) for line in gate.read_text(encoding="utf-8").splitlines() if line.strip()]
    flipped = next(r for r in rows if r["expected"] == "accept")
    flipped["expected"] = "reject"
    gate.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    worse = cli(cfg, "run", *tiers, "--label", "planted", "--compare-baseline")
    got = finish(cfg, base, live=live, same=same, worse=worse, flipped=flipped["id"])
    # every tier, no --suite: the live one is skipped for its key (exit 1) and says so everywhere
    every = run(cfg, "--label", "every tier", expect=(1,))
    got.extra["every"] = {name: plain(name, text) for name, text in surfaces(cfg, every).items()}
    return got


def seed_002(root: Path) -> SeedRun:
    from tests.test_labels_example import EXAMPLE

    project = root / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", "eval_runs"))
    cfg = project / "evalh.toml"
    sys.modules.pop("product", None)  # the target module of this copy
    importlib.invalidate_caches()
    run_id = run(cfg, "-q")
    req = root / "requests.json"
    exported = cli(cfg, "export-requests", run_id, "--rubric", str(project / "rubric.toml"), "-o", str(req))
    assert exported.exit_code == 0, exported.output
    export = json.loads(req.read_text(encoding="utf-8"))
    sys.path.insert(0, str(project))
    try:
        ratings = importlib.import_module("raters").ratings(export)
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("raters", None)
    files = []
    for name, lines in ratings.items():
        f = root / f"{name}.jsonl"
        f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        files.append(str(f))
    imported = cli(cfg, "label", "import", *files, "--run", run_id)
    assert imported.exit_code == 0, imported.output
    labels = cli(cfg, "label", "report", run_id, "--by", "split", "--json")
    assert labels.exit_code == 0, labels.output
    return finish(cfg, run_id, export=export, labels=json.loads(labels.stdout))


def seed_003(root: Path) -> SeedRun:
    from tests.test_bias_methodology import EXAMPLE_RUN_ARGS

    project = root / "project"
    shutil.copytree(REPO / "examples" / "bias", project, ignore=shutil.ignore_patterns("__pycache__", "outputs"))
    cfg = project / "evalh.toml"
    sys.modules.pop("advisor", None)
    sys.modules.pop("bias_metrics", None)
    importlib.invalidate_caches()
    refused = cli(cfg, "run", "--suite", "sycophancy", "--repeats", "2", "--label", "too few")
    run_id = run(cfg, "-q", "--no-cache", *EXAMPLE_RUN_ARGS)
    return finish(cfg, run_id, refused=refused)


def seed_004(root: Path) -> SeedRun:
    cfg = copy_root_project(root)
    run_id = run(cfg, "--suite", "citations", "--suite", "parliament", "--label", "judge=sonnet", "--no-cache")
    by = cli(cfg, "report", run_id, "--by", "complexity", "--format", "md")
    assert by.exit_code == 0, by.output
    rejudged = cli(cfg, "rejudge", run_id, "--suite", "citations", "--all", "--label", "rejudged")
    got = finish(cfg, run_id, by=plain("md", by.stdout), rejudged=rejudged)
    # the grounding endpoint absent (a loopback port nothing listens on): null, never 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALH_SCORER_ENDPOINT", f"http://127.0.0.1:{port}/v1/score")
        unscored = run(cfg, "--suite", "citations", "--label", "no scorer", "--no-cache", expect=(0, 1))
    got.extra["unscored"] = json.loads((cfg.parent / "eval_runs" / f"{unscored}.json").read_bytes())
    return got


SEEDS: dict[str, Callable[[Path], SeedRun]] = {
    "000_refuter_panel": seed_000,
    "001_tiered_agent": seed_001,
    "002_feedback_labels": seed_002,
    "003_bias_aware": seed_003,
    "004_citations": seed_004,
}
_RUNS: dict[str, SeedRun] = {}


@pytest.fixture(params=sorted(SEEDS))
def seed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SeedRun]]:
    """Each seed's rerun, made once for the module (the cache and key environment fixed)."""
    yield request.param, seed_run(request.param, tmp_path_factory)


def seed_run(name: str, tmp_path_factory: pytest.TempPathFactory) -> SeedRun:
    """The seed's rerun, made once for the module, with no key in the environment."""
    if name not in _RUNS:
        root = tmp_path_factory.mktemp(name)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("EVALH_CACHE_DIR", str(root / "cache"))
            for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EVALH_SCORER_ENDPOINT"):
                mp.delenv(key, raising=False)
            _RUNS[name] = SEEDS[name](root)
    return _RUNS[name]


# ----------------------------------------------------------------------------- what each seed reads

Needle = str | tuple[str, ...]  # a text, or texts of which one must appear (the HTML's own wording)

NEEDLES: dict[str, tuple[Needle, ...]] = {
    "000_refuter_panel": (
        "classification: per lens", "effective recall", "macro",
        "60.0% (3/5)",  # contradiction's recall: two refutable nodes missed
        "75.0% (3/4)",  # evidence's effective recall: its errored call on a bad node is a miss
        "80.3% (5 lenses)", "75.3% (5 lenses)",  # macro recall, macro effective recall
        "worst lens: contradiction (effective recall 60.0% (3/5)",
        "policy sweep: count:lenses against the label severity",
        "42.9% (6/14)", "4 candidates tie at the top on accuracy",
    ),
    "001_tiered_agent": ("the bill: target, judge and generator calls",),
    "002_feedback_labels": (
        "labels: agreement between raters, before adjudication", "claims.truth", "claims.grounding",
        "kappa is undefined (not perfect)",  # a null kappa of constant labels is no perfect agreement
        "judge rubric_judge vs agreed human labels: overlap 14, raw agreement 0.857, kappa 0.689",
        "releaseDecision: not-assessed", "judgeUse: advisory-only",
    ),
    "003_bias_aware": (
        "sycophancy = 40.0% (10/25) crosses its threshold > 0.3",
        "pattern_bias.stripe = 80.0% (40/50) crosses its threshold > 0.7",
        "anchoring = 80.0% (16/20) crosses its threshold > 0.7",
        "verbosity_bias = 100.0% (80/80) crosses its threshold > 0.6",
        "consistency under order swap: 80.0% (80/100)", "position bias", "low-confidence",
        "claim C - B", "rule tokens_out < 0: holds", "rule score:accuracy >= -0.02: holds",
        "the bill: target, judge and generator calls",
    ),
    "004_citations": (
        "citation_judge verdicts per",
        "wrong_speaker", "27.3% (3/11)", "wrong_attribution", "9.1% (1/11)", "36.4% (4/11)", "18.2% (2/11)",
        "88.9% (8/9)",  # judged: the uncited answer abstains (no cited paragraph), never a pass
        "truncated",  # the judging table names a judge reply cut at its max_tokens apart
        "the bill: target, judge and generator calls",
    ),
}


# the drawn surfaces only (report's table, md and html; show): the JSON ones carry these as
# numbers, checked in CHECKS
DRAWN_NEEDLES: dict[str, tuple[Needle, ...]] = {
    "002_feedback_labels": ("0.917",),  # Fleiss' kappa of the truth verdicts, three raters over 28 claims
    "001_tiered_agent": ("100.0% (58/58)", "100.0% (57/57)", "100.0% (7/7)", "100.0% (10/10)"),
}
# the report only (table, md, html): `evalh show` is the results table, the cases that did not
# pass and the figures the suites hold (its --help), not the whole report
REPORT_NEEDLES: dict[str, tuple[Needle, ...]] = {
    "002_feedback_labels": ("hand-picked cases do not represent a population",),  # so no Wilson interval
    "001_tiered_agent": (("flakiness over 5 cases", "Flakiness (5 cases)"),),  # scenarios_model: 2 attempts a case
    "003_bias_aware": ("judge calibration stance", "accuracy 100.0% (4/4)", "3 flaky cases"),
    "004_citations": ("worst cases", "bad paragraphs", "tools used"),
}


@pytest.mark.slow
@pytest.mark.parametrize("surface", SURFACES)
def test_the_seed_figures_reach_every_surface(seed: tuple[str, SeedRun], surface: str) -> None:
    name, got = seed
    text = got.out[surface]
    needles = NEEDLES[name]
    if surface not in ("json", "api"):
        needles += DRAWN_NEEDLES.get(name, ())
    if surface in ("table", "md", "html"):
        needles += REPORT_NEEDLES.get(name, ())
    missing = [n for n in needles if not any(t in text for t in ((n,) if isinstance(n, str) else n))]
    assert not missing, (name, surface, missing)


def _suite_figure(got: SeedRun, surface: str, kind: str) -> list[dict[str, Any]]:
    return figures(json.loads(got.out[surface]), kind)


@pytest.mark.slow
def test_the_seed_documents_and_their_own_checks(seed: tuple[str, SeedRun]) -> None:
    """What each seed asks beyond the surfaces' text: the run document's facts, the exit
    codes, and the commands of the seed's workflow (sweep, compare, labels, rejudge)."""
    name, got = seed
    doc = got.doc
    assert doc["config"]["suites"] and "sha" in doc["git"]  # the config snapshot and git kept
    CHECKS[name](got)


def check_000(got: SeedRun) -> None:
    assert got.doc["label"] == "panel eval"
    fact = got.doc["suites"]["panel"]["details"]["classification"]["arms"]["default"]
    ev = fact["lenses"]["evidence"]
    assert (ev["tp"], ev["fn"], ev["errored"], ev["recall"], ev["effective_recall"]) == (3, 0, 1, 1.0, 0.75)
    assert fact["worst"]["lens"] == "contradiction" and fact["worst"]["by"] == "effective_recall"
    for surface in ("json", "api"):
        [fig] = _suite_figure(got, surface, "classification")
        assert fig["data"]["worst"] == "contradiction" and fig["data"]["positive"] == "refuted"
    assert "no recommendation" in got.extra["sweep"]
    assert "under-determined: structural, sharpen, note" in got.extra["sweep"]
    assert "Advisory only: a person edits the policy; evalh never writes it" in got.extra["sweep"]


def check_001(got: SeedRun) -> None:
    assert got.doc["label"] == "tiered"
    live = got.extra["live"]
    assert live.exit_code == 2 and "needs ANTHROPIC_API_KEY" in live.output
    tiers = [s for s in got.doc["suites"]]
    assert tiers == ["gate", "guards", "scenarios", "scenarios_model"]  # cheapest first
    assert got.doc["config"]["suites"]["scenarios_model"]["repeats"] == 2
    assert got.extra["same"].exit_code == 0, got.extra["same"].output
    worse = got.extra["worse"]
    assert worse.exit_code == 1, worse.output
    assert got.extra["flipped"] in worse.output  # a deterministic regression, by case name
    from tests.real_runs import dashboard

    history = dashboard(got.cfg.parent, "/api/runs")["runs"]
    assert [r["label"] for r in history][:3] == ["tiered", "again", "planted"]  # the time series, oldest first

    for surface in ("json", "api"):
        suites = {s["suite"]: s["arms"][0] for s in json.loads(got.out[surface])["suites"]}
        counts = {k: (a["counts"]["passed"], a["counts"]["pass_rate_denominator"]) for k, a in suites.items()}
        assert counts == {"gate": (58, 58), "guards": (57, 57), "scenarios": (7, 7), "scenarios_model": (10, 10)}
        assert suites["scenarios_model"]["repeats"], surface  # two attempts a case: the repeats figure


def check_002(got: SeedRun) -> None:
    rep = got.extra["labels"]
    assert rep["raters"] == ["ann", "ben", "cho"]
    export = json.dumps(got.extra["export"])
    for hidden in ("hand-picked", "heldout", "feedback-model-1"):
        assert hidden not in export  # the blinded requests carry no hidden label
    for surface in ("json", "api"):
        [fig] = _suite_figure(got, surface, "labels")
        assert "agreement between raters" in json.dumps(fig)
    assert "advisory" in got.out["table"]  # judgeUse: advisory-only


def check_003(got: SeedRun) -> None:
    assert got.doc["label"] == "bias demo" and got.doc["seed"] == 7
    refused = got.extra["refused"]
    assert refused.exit_code == 2  # N >= 5 repeats: refused before anything is spent or written
    assert "requires at least 5 repeats, got 2" in refused.output
    md = got.out["md"]
    assert md.index("raw runs (every result, before any aggregate)") < md.index("suite metrics")
    for surface in ("json", "api"):
        suites = {s["suite"]: s for s in json.loads(got.out[surface])["suites"]}
        cal = json.dumps(suites["sycophancy"]["calibration"])
        assert "claude-sonnet-4-0" in cal and "gpt-4.1" in cal and "claude-haiku-4-5" in cal, surface
        assert suites["anchoring"]["arms"][0]["repeats"]["flaky"] == 3, surface


def check_004(got: SeedRun) -> None:
    assert got.doc["label"] == "judge=sonnet"
    assert "complexity" in got.extra["by"]
    rejudged = got.extra["rejudged"]
    assert rejudged.exit_code in (0, 1), rejudged.output
    # `rejudge --all` of one suite: every judgment again, the old-vs-new confusion, the rest carried over
    assert "citations: 9 judged again, 0 carried over" in rejudged.output
    assert "parliament: 0 judged again, 24 carried over" in rejudged.output
    assert "drift over 11 judgments: agreement 1.000, Cohen's kappa 1.000" in rejudged.output
    for surface in ("json", "api"):
        suites = {s["suite"]: s["arms"][0] for s in json.loads(got.out[surface])["suites"]}
        worst = {w["case_id"]: w["bad_paragraphs"] for w in suites["citations"]["worst"]}
        assert worst["citations.mixed_list"] == 1 and "citations.wrong_attribution" in worst, surface
        assert suites["parliament"]["tools"], surface  # which tools the product called, and how bad those went
    unscored = got.extra["unscored"]["suites"]["citations"]["cases"]
    grounding = [s for c in unscored for s in c["scores"] if s["scorer"] == "grounding"]
    assert len(grounding) == 9 and all(s["value"] is None and s["abstained"] for s in grounding)
    before = {c["case_id"]: c["status"] for c in got.doc["suites"]["citations"]["cases"]}
    assert {c["case_id"]: c["status"] for c in unscored} == before  # the verdicts stand without it


CHECKS: dict[str, Callable[[SeedRun], None]] = {
    "000_refuter_panel": check_000,
    "001_tiered_agent": check_001,
    "002_feedback_labels": check_002,
    "003_bias_aware": check_003,
    "004_citations": check_004,
}


@pytest.mark.slow
@pytest.mark.parametrize("surface", SURFACES)
def test_a_tier_skipped_for_its_key_is_named_on_every_surface(surface: str,
                                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    """Seed 001's live tier without its key: the run document records it (`suites_not_run`),
    and a reader of any surface learns that the run did not measure it."""
    text = seed_run("001_tiered_agent", tmp_path_factory).extra["every"][surface]
    assert "suite live was not run (skipped: needs ANTHROPIC_API_KEY)" in text, surface


def test_a_suite_skipped_for_its_key_is_named_in_a_small_project(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as the seed's, in the fast set: a two-suite project whose second suite needs
    a key nobody set."""
    from tests.real_runs import jsonl, run_project, write_project

    monkeypatch.delenv("EVALH_SEEDS_TEST_KEY", raising=False)
    target = 'def answer(inp):\n    return inp["q"]\n'
    suite = '[suites.{name}]\ndataset = "d.jsonl"\ntarget = "t:answer"\nscorers = [{{ type = "exact" }}]\n'
    toml = suite.format(name="offline") + suite.format(name="keyed") + 'requires_env = ["EVALH_SEEDS_TEST_KEY"]\n'
    cfg = write_project(tmp_path, toml, {"t.py": target, "d.jsonl": jsonl([{"id": "c", "input": {"q": "x"}, "expected": "x"}])})
    run_id = run_project(cfg, expect=(1,))
    line = "suite keyed was not run (skipped: needs EVALH_SEEDS_TEST_KEY): the run did not measure it"
    for name, text in surfaces(cfg, run_id).items():
        assert line in plain(name, text), name
