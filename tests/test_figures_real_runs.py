"""Every figure a person reads, from a real run through the CLI: each test writes a project,
runs it with `evalh run`, and asserts the figure on every surface — `evalh report` in each
format, `evalh show` and the dashboard's `/api/runs/RUN/report` (`tests.real_runs`).

Hand-built detail shapes stay in the pure unit tests (`test_report_figures.py`); these
runs write what the scorers really write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.real_runs import count, figures, jsonl, run_project, surfaces, write_project

# ----------------------------------------------------------------------------- per-lens classification

LENS_TARGET = '''\
LENSES = ("dates", "money", "quotes", "scope")


def review(inp):
    """Four healthy lenses (money misses one positive) and a `provenance` lens that
    errored on every call, as a lens whose tool timed out would."""
    out = {}
    for lens in LENSES:
        out[lens] = "refuted" if inp["bad"] and not (lens == "money" and inp["n"] == 0) else "survived"
    out["provenance"] = {"error": "lookup timed out"}
    return {"lenses": out}
'''

PANEL_TOML = '''\
[suites.panel_dead]
dataset = "panel.jsonl"
target = "lenses:review"
regime = "stochastic"
max_error_rate = 1.0
scorers = [{ type = "classification", field = "lenses", expected_field = "lenses", positive = "refuted" }]

[suites.panel_dead.sweep]
measure = "count:lenses"
count_value = "refuted"
label = "severity"
tiers = ["block"]
otherwise = "none"
grid = { block = "1:5" }
current = { block = 2 }
'''


def panel_project(root: Path) -> Path:
    rows = []
    for n in range(6):
        bad = n < 3
        label = "refuted" if bad else "survived"
        rows.append({"id": f"node{n}", "input": {"n": n, "bad": bad},
                     "expected": {"lenses": {k: label for k in ("dates", "money", "quotes", "scope", "provenance")},
                                  "severity": "block" if bad else "none"}})
    return write_project(root, PANEL_TOML, {"panel.jsonl": jsonl(rows), "lenses.py": LENS_TARGET})


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    cfg = panel_project(tmp_path_factory.mktemp("panel"))
    run_id = run_project(cfg)
    return cfg, run_id, surfaces(cfg, run_id)


def test_the_run_json_names_the_dead_lens_worst_by_effective_recall(panel: tuple[Path, str, dict[str, str]]) -> None:
    cfg, run_id, _ = panel
    doc = json.loads((cfg.parent / "eval_runs" / f"{run_id}.json").read_bytes())
    fact = doc["suites"]["panel_dead"]["details"]["classification"]
    assert set(fact) == {"positive", "unit", "arms"}  # the shape the scorer really writes
    rep = fact["arms"]["default"]
    assert rep["lenses"]["provenance"]["errored"] == 6 and rep["lenses"]["provenance"]["effective_recall"] == 0.0
    assert rep["worst"]["lens"] == "provenance" and rep["worst"]["by"] == "effective_recall"
    assert rep["no_recall"] == []  # it had known positives: never hidden under "no recall"


def test_per_lens_figures_reach_every_surface(panel: tuple[Path, str, dict[str, str]]) -> None:
    _, _, out = panel
    for name, text in out.items():
        assert count("recall", text) >= 3, name
        assert "worst lens: provenance" in text, name
        assert "effective recall 0.0% (0/3)" in text, name
        assert "macro" in text, name
        assert "lens provenance errored on every call (6)" in text, name
        assert "66.7% (2/3)" in text, name  # money's recall: one positive missed
    for name in ("json", "api"):
        [fig] = figures(json.loads(out[name]), "classification")
        assert fig["data"]["worst"] == "provenance" and fig["data"]["positive"] == "refuted"
        rows = {r[0]: r for r in fig["rows"]}
        assert rows["provenance"][6] == "6" and rows["provenance"][8] == "n/a (0/0)"


def test_a_sweep_over_a_dead_lens_says_every_result_errored(panel: tuple[Path, str, dict[str, str]]) -> None:
    _, _, out = panel
    for name, text in out.items():
        assert "all 6 results errored" in text, name


def test_the_shipped_panel_suite_shows_its_per_lens_figure(repo_root: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from tests.real_runs import cli, report

    cfg = repo_root / "evalh.toml"
    runs = tmp_path / "eval_runs"
    result = CliRunner().invoke(app, ["run", "--suite", "panel", "--config", str(cfg), "--runs-dir", str(runs)])
    assert result.exit_code in (0, 1), result.output
    [path] = runs.glob("*.json")
    local = tmp_path / "evalh.toml"  # `report` and `show` need only the runs directory
    local.write_text("", encoding="utf-8")
    for fmt in ("table", "md", "html"):
        text = report(local, path.stem, fmt)
        assert "classification: per lens" in text and "macro" in text, fmt
        assert "worst lens: contradiction (effective recall 60.0% (3/5)" in text, fmt
    shown = cli(local, "show", path.stem, config=False)
    assert "worst lens: contradiction (effective recall 60.0% (3/5)" in shown.stdout
    # its policy sweep's ranking, on every surface too
    from tests.real_runs import dashboard

    api = json.dumps(dashboard(tmp_path, f"/api/runs/{path.stem}/report"))
    for name, text in {"table": report(local, path.stem, "table"), "md": report(local, path.stem, "md"),
                       "html": report(local, path.stem, "html"), "json": report(local, path.stem, "json"),
                       "show": shown.stdout, "api": api}.items():
        assert "policy sweep: count:lenses against the label severity" in text, name
        assert "42.9% (6/14)" in text and "candidates tie at the top on accuracy" in text, name


# ----------------------------------------------------------------------------- the bill

BILL_TOML = '''\
[suites.answers]
dataset = "d.jsonl"
regime = "stochastic"
target = { kind = "anthropic", model = "claude-sonnet-4-5", base_url = "mock:provider.json", prompt = "{{ input.q }}", max_tokens = 32 }
scorers = [{ type = "judge", provider = "anthropic", model = "claude-sonnet-4-0", base_url = "mock:judge.json", rubric = "Is it right?", max_tokens = 64 }]
'''


def bill_project(root: Path) -> Path:
    return write_project(root, BILL_TOML, {
        "d.jsonl": jsonl([{"id": f"c{i}", "input": {"q": f"question {i}"}, "expected": "x"} for i in range(3)]),
        "provider.json": json.dumps({"rules": [{"match": "", "text": "the answer is x"}]}),
        "judge.json": json.dumps({"rules": [{"match": "", "json": {"verdict": "pass", "rationale": "the answer names x, as the case expects"}}]}),
    })


@pytest.fixture(scope="module")
def billed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    root = tmp_path_factory.mktemp("bill")
    cfg = bill_project(root)
    from tests.real_runs import cli

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALH_CACHE_DIR", str(root / "cache"))
        run_id = run_project(cfg, "--no-cache")
        cached = run_project(cfg)  # warms the cache
        cached = run_project(cfg)  # every call answered from the cache
        assert cli(cfg, "run", "--no-cache", "--max-cost", "0.0001").exit_code in (0, 1)
    return cfg, run_id, {**surfaces(cfg, run_id), "cached_id": cached}


def test_the_summary_counts_judge_calls_in_the_bill(billed: tuple[Path, str, dict[str, str]]) -> None:
    cfg, run_id, _ = billed
    doc = json.loads((cfg.parent / "eval_runs" / f"{run_id}.json").read_bytes())
    bill = doc["summary"]["bill"]
    target, judge = bill["target"], bill["judge"]
    assert target["cost_usd"] > 0 and judge["cost_usd"] > 0 and judge["calls"] == 3
    assert bill["total"]["cost_usd"] == pytest.approx(target["cost_usd"] + judge["cost_usd"])
    assert doc["summary"]["cost_usd"] == pytest.approx(bill["total"]["cost_usd"])  # judge calls in the total
    assert doc["summary"]["tokens_in"] == target["tokens_in"] + judge["tokens_in"]
    assert doc["summary"]["suites"]["answers"]["bill"]["judge"]["calls"] == 3


def test_the_bill_reaches_every_surface(billed: tuple[Path, str, dict[str, str]]) -> None:
    cfg, run_id, out = billed
    doc = json.loads((cfg.parent / "eval_runs" / f"{run_id}.json").read_bytes())
    from evalh.numbers import money_exact

    judge_cost = money_exact(doc["summary"]["bill"]["judge"]["cost_usd"])
    total_cost = money_exact(doc["summary"]["bill"]["total"]["cost_usd"])
    for name in ("table", "md", "html", "json", "show", "api"):
        text = out[name]
        assert "the bill: target, judge and generator calls" in text, name
        assert judge_cost in text and total_cost in text, name
    [fig] = figures(json.loads(out["api"]), "bill")
    assert [r[0] for r in fig["rows"]] == ["target", "judge", "generator", "total"]


def test_the_cost_trend_counts_judges_and_marks_a_cached_run(billed: tuple[Path, str, dict[str, str]]) -> None:
    cfg, run_id, out = billed
    from tests.real_runs import dashboard

    runs = dashboard(cfg.parent, "/api/runs")
    by_id = {r["run_id"]: r for r in runs["runs"]}
    doc = json.loads((cfg.parent / "eval_runs" / f"{run_id}.json").read_bytes())
    assert by_id[run_id]["cost_usd"] == pytest.approx(doc["summary"]["bill"]["total"]["cost_usd"])
    from evalh.numbers import money_exact

    assert f"judge {money_exact(doc['summary']['bill']['judge']['cost_usd'])}" in by_id[run_id]["bill_text"]
    per_run = runs["trends"]["series"]["cost_per_run"][0]
    ids = [r["run_id"] for r in runs["trends"]["runs"]]
    assert per_run["values"][ids.index(run_id)] == pytest.approx(doc["summary"]["cost_usd"])
    cached = ids.index(out["cached_id"])
    assert per_run["values"][cached] is None and per_run["cached"][cached] is True  # a gap marked cached, not $0
    [suite] = runs["trends"]["series"]["cost_usd"]
    assert suite["values"][cached] is None and suite["cached"][cached] is True
    assert suite["values"][ids.index(run_id)] == pytest.approx(doc["summary"]["cost_usd"])


def test_a_cached_run_is_marked_cached_where_its_cost_and_latency_appear(billed: tuple[Path, str, dict[str, str]]) -> None:
    cfg, _, out = billed
    from tests.real_runs import report

    cached = out["cached_id"]
    for fmt in ("table", "md", "html"):
        text = report(cfg, cached, fmt)
        assert "3 cached" in text, fmt
    doc = json.loads(report(cfg, cached, "json"))
    econ = doc["suites"][0]["arms"][0]["economics"]
    assert econ["cached"] == 3 and econ["latency_denominator"] == 0 and econ["latency_ms_p50"] is None
    from tests.real_runs import cli, dashboard

    shown = cli(cfg, "show", cached)
    assert "(3 cached)" in shown.stdout  # the run table's cost column
    rows = dashboard(cfg.parent, f"/api/runs/{cached}/cases?suite=answers")["rows"]
    assert [r["cached"] for r in rows] == [True] * 3  # the case list says cached where a latency would be


def test_the_run_table_and_the_budget_agree_on_the_bill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.real_runs import cli

    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = bill_project(tmp_path)
    result = cli(cfg, "run", "--no-cache")
    [path] = (tmp_path / "eval_runs").glob("*.json")
    bill = json.loads(path.read_bytes())["summary"]["bill"]
    from evalh.numbers import money_exact

    line = next(x for x in result.stdout.splitlines() if x.startswith("bill:"))
    assert f"judge {money_exact(bill['judge']['cost_usd'])}" in line
    assert f"total {money_exact(bill['total']['cost_usd'])}" in line
    from evalh.numbers import money

    progress = next(x for x in result.output.splitlines() if x.startswith("answers ") and " tokens " in x)
    total = bill["total"]
    assert f"tokens {total['tokens_in'] + total['tokens_out']} {money(total['cost_usd'])}" in progress  # judges too


# ----------------------------------------------------------------------------- repeats

FLAKY_TARGET = '''\
from evalh.context import current


def answer(inp):
    """Case 0 always right, case 1 right on its first attempt only, case 2 never."""
    attempt = current().attempt
    right = inp["n"] == 0 or (inp["n"] == 1 and attempt == 0)
    return {"verdict": "yes" if right else "no"}
'''

REPEATS_TOML = '''\
[suites.flaky]
dataset = "d.jsonl"
target = "flaky:answer"
regime = "stochastic"
repeats = 3
max_error_rate = 1.0
scorers = [{ type = "exact", field = "verdict" }]
'''


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    cfg = write_project(tmp_path_factory.mktemp("repeats"), REPEATS_TOML, {
        "d.jsonl": jsonl([{"id": f"c{n}", "input": {"n": n}, "expected": "yes"} for n in range(3)]),
        "flaky.py": FLAKY_TARGET})
    run_id = run_project(cfg)
    return cfg, run_id, surfaces(cfg, run_id)


def test_md_puts_the_raw_runs_before_any_aggregate(repeated: tuple[Path, str, dict[str, str]]) -> None:
    md = repeated[2]["md"]
    assert md.index("raw attempts") < md.index("raw runs") < md.index("Summary") < md.index("pass rate")
    assert md.index("c1 score: mean = (1 + 0 + 0) / 3") < md.index("Summary")
    assert md.count("raw attempts (every aggregate") == 1  # not drawn twice


def test_repeats_reach_every_surface(repeated: tuple[Path, str, dict[str, str]]) -> None:
    _, _, out = repeated
    for name in ("table", "md", "html", "show"):
        text = out[name]
        assert ("Flakiness (3 cases)" if name == "html" else "flaky: flakiness over 3 cases") in text, name
        assert "pass@k and pass^k" in text, name
        assert "1 flaky case" in text or name == "show", name  # the summary's flag
    for name in ("json", "api"):
        rep = json.loads(out[name])["suites"][0]["arms"][0]["repeats"]
        assert (rep["stable_pass"], rep["flaky"], rep["stable_fail"]) == (1, 1, 1), name


# ----------------------------------------------------------------------------- an advisory judge

ADVISORY_TOML = '''\
[suites.graded]
dataset = "d.jsonl"
target = "answer:answer"
regime = "stochastic"
scorers = [
  { type = "contains", field = "text" },
  { type = "judge", name = "tone", provider = "anthropic", model = "claude-sonnet-4-0", base_url = "mock:judge.json", rubric = "Is the tone right?", output_field = "text", max_tokens = 64, advisory = true },
]
'''


def test_an_advisory_judge_is_labelled_advisory_on_every_surface(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = write_project(tmp_path, ADVISORY_TOML, {
        "d.jsonl": jsonl([{"id": f"c{i}", "input": {"q": i}, "expected": "x"} for i in range(3)]),
        "answer.py": "def answer(inp):\n    return {'text': 'x marks the spot'}\n",
        "judge.json": json.dumps({"rules": [{"match": "", "json": {"verdict": "fail", "rationale": "the tone is curt, as the rubric forbids"}}]}),
    })
    run_id = run_project(cfg, expect=(0,))
    out = surfaces(cfg, run_id)
    for name, text in out.items():
        assert "tone verdicts (advisory)" in text, name
        assert "tone is advisory: its verdicts are recorded and never decide" in text, name
        assert "100.0% (3/3)" in text, name  # the pass rate and the advisory judge's "fail" share, both
    [fig] = [f for f in figures(json.loads(out["api"]), "verdicts") if f["scorer"] == "tone"]
    assert fig["data"]["advisory"] is True and fig["rows"] == [["fail", "3", "100.0% (3/3)"]]


# ----------------------------------------------------------------------------- bias metrics, claims, judges

def test_bias_metrics_claims_and_judges_reach_show_and_the_dashboard(tmp_path: Path, repo_root: Path) -> None:
    """The shipped bias example (its report formats: tests/test_bias_methodology.py): the
    same flags in `evalh show` and over the dashboard's HTTP endpoint."""
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from tests.real_runs import cli, dashboard
    from tests.test_bias_methodology import EXAMPLE_RUN_ARGS

    cfg = repo_root / "examples" / "bias" / "evalh.toml"
    runs = tmp_path / "eval_runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--no-cache",
                                      *EXAMPLE_RUN_ARGS])
    assert result.exit_code == 0, result.output
    [path] = runs.glob("*.json")
    local = tmp_path / "evalh.toml"
    local.write_text("", encoding="utf-8")
    shown = cli(local, "show", path.stem)
    assert shown.exit_code == 0, shown.output
    api = json.dumps(dashboard(tmp_path, f"/api/runs/{path.stem}/report"))
    for name, text in (("show", shown.stdout), ("api", api)):
        for needle in ("sycophancy = 40.0% (10/25) crosses its threshold > 0.3",
                       "pattern_bias.stripe = 80.0% (40/50) crosses its threshold > 0.7",
                       "verbosity_bias = 100.0% (80/80) crosses its threshold > 0.6",
                       "consistency under order swap: 80.0% (80/100)", "position bias", "low-confidence",
                       "claim C - B", "rule tokens_out < 0: holds", "the bill: target, judge and generator calls"):
            assert needle in text, (name, needle)


# ----------------------------------------------------------------------------- labels agreement

from tests.test_labels_example import example  # noqa: E402,F401 - the feedback example, run, exported, rated


def test_labels_agreement_reaches_every_surface(example: dict) -> None:  # type: ignore[type-arg]  # noqa: F811
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from tests.real_runs import dashboard

    runs, run_id = example["runs"], example["run_id"]

    def invoke(*args: str) -> str:
        result = CliRunner().invoke(app, [*args, "--runs-dir", str(runs)], env={"COLUMNS": "240"})
        assert result.exit_code == 0, result.output
        return result.stdout

    fields = example["report"]["inter_rater"]["fields"]
    fname, f = next(iter(fields.items()))
    fleiss = f["fleiss_kappa"]["kappa"]
    texts = {fmt: invoke("report", run_id, "--format", fmt) for fmt in ("table", "md", "html", "json")}
    texts["show"] = invoke("show", run_id)
    texts["api"] = json.dumps(dashboard(example["root"], f"/api/runs/{run_id}/report", runs))
    label = "labels: agreement between raters, before adjudication"
    for name, text in texts.items():
        text = text.replace("\\\\'", "'").replace("&#39;", "'").replace("\\'", "'")
        assert label in text, name
        assert "Fleiss' kappa" in text or "Fleiss\\u0027 kappa" in text, name
        assert f"{fleiss:.3f}" in text, name
        assert "releaseDecision: not-assessed" in text, name


def test_the_generator_is_billed_apart_on_every_surface(tmp_path: Path, repo_root: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped `parliament` suite writes its cases with a generator, then answers and
    judges them, all on the mock: the bill counts the generator's calls apart."""
    from typer.testing import CliRunner

    from evalh.cli.main import app
    from evalh.numbers import money_exact
    from tests.real_runs import cli, dashboard, report

    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "eval_runs"
    result = CliRunner().invoke(app, ["run", "--suite", "parliament", "--config", str(repo_root / "evalh.toml"),
                                      "--runs-dir", str(runs), "--no-cache", "-q"])
    assert result.exit_code in (0, 1), result.output
    [path] = runs.glob("*.json")
    doc = json.loads(path.read_bytes())
    bill = doc["summary"]["bill"]
    gen = doc["config"]["suites"]["parliament"]["generate"]["record"]["usage"]
    assert bill["generator"]["calls"] == gen["calls"] > 0 and bill["generator"]["cost_usd"] == pytest.approx(gen["cost_usd"])
    assert bill["judge"]["calls"] > 0
    assert doc["summary"]["cost_usd"] == pytest.approx(
        sum(bill[p]["cost_usd"] or 0.0 for p in ("target", "judge", "generator")))
    local = tmp_path / "evalh.toml"
    local.write_text("", encoding="utf-8")
    texts = {fmt: report(local, path.stem, fmt) for fmt in ("table", "md", "html", "json")}
    texts["show"] = cli(local, "show", path.stem).stdout
    texts["api"] = json.dumps(dashboard(tmp_path, f"/api/runs/{path.stem}/report"))
    for name, text in texts.items():
        assert money_exact(bill["generator"]["cost_usd"]) in text, name


def test_verdicts_across_runs_in_every_report_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.real_runs import cli

    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = write_project(tmp_path, ADVISORY_TOML, {
        "d.jsonl": jsonl([{"id": f"c{i}", "input": {"q": i}, "expected": "x"} for i in range(3)]),
        "answer.py": "def answer(inp):\n    return {'text': 'x marks the spot'}\n",
        "judge.json": json.dumps({"rules": [{"match": "", "json": {"verdict": "fail", "rationale": "the tone is curt, as the rubric forbids"}}]}),
    })
    first = run_project(cfg, "--label", "v1", expect=(0,))
    second = run_project(cfg, "--label", "v2", expect=(0,))
    for fmt in ("table", "md", "html", "json"):
        result = cli(cfg, "report", first, second, "--format", fmt)
        assert result.exit_code == 0, result.output
        flat = " ".join(result.stdout.replace("│", " ").split())  # a table's title wraps at its width
        assert "graded: tone verdicts (advisory) across runs" in flat, fmt
        assert result.stdout.count("100.0% (3/3)") >= 2, fmt
