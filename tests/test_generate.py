"""Generated cases (`[suites.S.generate]`, evalh.core.generate.generate): the seeded 2:1 strategy mix,
the rolling avoid-list, withheld fields that never reach the generator, same seed → same
cases, failed generations as errored cases of their own, resume after kill -9 and rejudge
generating nothing, the generator ≠ subject guard, dry runs and budgets, and the shipped
`parliament` example. The generator is the loopback mock provider, a real HTTP server."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.mock.mock_provider import MockProvider
from tests.runner_project import evalh_process, journal_results, load

REPO = Path(__file__).resolve().parent.parent
GEN = "claude-sonnet-4-5"
SPEAKERS = sorted({json.loads(line)["speaker"] for line in (REPO / "datasets" / "talks.jsonl").read_text().splitlines()})

PRODUCT = '''\
import os, time
from examples.parliament import answer as _answer

def answer(inp):
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    if os.environ.get("CALLS_FILE"):
        with open(os.environ["CALLS_FILE"], "a") as f:
            f.write(str(inp.get("question")) + "\\n")
    return _answer(inp)
'''


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))
    monkeypatch.setenv("MOCK_KEY", "k")


@pytest.fixture
def mock() -> Iterator[MockProvider]:
    script = json.loads((REPO / "datasets" / "parliament.script.json").read_text(encoding="utf-8"))
    with MockProvider(script) as mp:
        yield mp


def shipped_suite(repo_toml: str) -> str:
    """The `parliament` suite's tables from the repo's evalh.toml, renamed `p`."""
    start = repo_toml.index("[suites.parliament]")
    rest = repo_toml[start:]
    end = rest.find("\n[suites.", 1)
    while end != -1 and rest[end + 1:].startswith("[suites.parliament"):
        end = rest.find("\n[suites.", end + 1)
    block = rest if end == -1 else rest[:end]
    return block.replace("suites.parliament", "suites.p")


def project(root: Path, mp: MockProvider, *, count: int = 12, extra: str = "") -> Path:
    """The shipped example in a temporary project, its generator and judge on `mp`."""
    (root / "datasets").mkdir(exist_ok=True)
    shutil.copy(REPO / "datasets" / "talks.jsonl", root / "datasets" / "talks.jsonl")
    suite = shipped_suite((REPO / "evalh.toml").read_text(encoding="utf-8"))
    suite = suite.replace('target = "examples.parliament:answer"', 'target = "prod:answer"')
    suite = suite.replace("count = 24", f"count = {count}")
    mock_url = '"mock:datasets/parliament.script.json"'
    suite = suite.replace(f"base_url = {mock_url}, ", f'base_url = "{mp.base_url}", api_key_env = "MOCK_KEY", ', 1)
    suite = suite.replace(f"base_url = {mock_url}\n", f'base_url = "{mp.base_url}"\napi_key_env = "MOCK_KEY"\n', 1)
    suite = suite.replace(f"url = {mock_url}", f'url = "{mp.base_url}/v1/score"', 1)
    assert mock_url not in suite
    (root / "evalh.toml").write_text(suite + extra, encoding="utf-8")
    (root / "prod.py").write_text(PRODUCT, encoding="utf-8")
    return root / "evalh.toml"


def invoke(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [args[0], "--config", str(cfg), *args[1:]])


def generator_requests(mp: MockProvider) -> list[dict[str, Any]]:
    return [r.body for r in mp.requests if isinstance(r.body, dict) and r.body.get("model") == GEN]


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def doc_of(runs: Path) -> dict[str, Any]:
    (path,) = runs.glob("*.json")
    return load(path)


# --------------------------------------------------------------------------- sampling


def test_strategy_mix_is_two_to_one_over_300_iterations(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    out = tmp_path / "300.jsonl"
    result = invoke(cfg, "generate", "--suite", "p", "--iterations", "300", "--seed", "1", "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    drawn = record["drawn_by_strategy"]
    assert drawn["talk_seed"] + drawn["free"] == 300
    # 2:1 → 200 expected; binomial sd = sqrt(300 · 2/3 · 1/3) ≈ 8.2; 3.5 sd either side
    assert abs(drawn["talk_seed"] - 200) <= 29, drawn
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == record["generated"] == record["requested"] - record["failed"]
    assert {c["metadata"]["strategy"] for c in lines} == {"talk_seed", "free"}


def test_each_strategy_template_is_compiled_once_not_once_a_case(tmp_path: Path, mock: MockProvider,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling a Jinja template costs milliseconds (7 ms for the shipped prompts): a
    generation compiles each strategy's prompt once, whatever the number of cases."""
    from evalh.targets import templates

    compiled: list[str] = []
    real = templates.compile_template
    monkeypatch.setattr(templates, "compile_template", lambda source, name: compiled.append(name) or real(source, name))
    cfg = project(tmp_path, mock)
    # templates of this test only: none compiled before it in this process
    cfg.write_text(cfg.read_text().replace("Write one open question", f"Write one open question ({tmp_path.name})"))
    cfg.write_text(cfg.read_text().replace("Write one natural question", f"Write one natural question ({tmp_path.name})"))
    result = invoke(cfg, "generate", "--suite", "p", "--iterations", "40", "--seed", "1", "-o",
                    str(tmp_path / "40.jsonl"), "--json")
    assert result.exit_code == 0, result.output
    assert sum(json.loads(result.stdout)["drawn_by_strategy"].values()) == 40
    assert sorted(compiled) == ["generate.strategies.free.prompt", "generate.strategies.talk_seed.prompt"]


def test_strategy_mix_holds_for_every_seed() -> None:
    from evalh.core.generate.draws import draws
    from evalh.generate_spec import GeneratorConfig

    spec = GeneratorConfig.model_validate({
        "generator": {"provider": "anthropic", "model": "g"},
        "strategies": [{"name": "a", "weight": 2, "prompt": "x", "palette": ["p"]},
                       {"name": "b", "weight": 1, "prompt": "y", "palette": ["q"]}]})
    for seed in range(20):
        n = sum(d.strategy.name == "a" for d in draws(spec, None, 300, seed, "s"))
        assert abs(n - 200) <= 29, (seed, n)


def test_same_seed_same_cases_other_seed_other_cases(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    files = {}
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        mock.reset()  # each run meets the script as a fresh server would
        files[name] = tmp_path / f"{name}.jsonl"
        result = invoke(cfg, "generate", "--suite", "p", "--seed", seed, "-o", str(files[name]))
        assert result.exit_code == 0, result.output
    assert files["a"].read_bytes() == files["b"].read_bytes()
    assert files["a"].read_bytes() != files["c"].read_bytes()


# --------------------------------------------------------------------------- prompts


def test_withheld_fields_never_reach_the_generator(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    out = tmp_path / "g.jsonl"
    result = invoke(cfg, "generate", "--suite", "p", "--iterations", "60", "--seed", "2", "-o", str(out))
    assert result.exit_code == 0, result.output
    bodies = generator_requests(mock)
    assert len(bodies) >= 60
    for body in bodies:
        text = json.dumps(body, ensure_ascii=False)
        assert not [s for s in SPEAKERS if s in text], "a withheld speaker reached the generator"
        assert '"speaker"' not in text
    cases = [json.loads(line) for line in out.read_text().splitlines()]
    seeded = [c for c in cases if c["metadata"]["strategy"] == "talk_seed"]
    assert seeded and all(c["expected"]["speaker"] in SPEAKERS for c in seeded)  # the label the product must find
    assert all(c["metadata"]["generated"]["corpus_row_sha256"] for c in seeded)
    assert all("expected" not in c or c["expected"] is None for c in cases if c["metadata"]["strategy"] == "free")


def test_the_avoid_list_is_the_last_n_cases_written(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    text = cfg.read_text().replace("avoid_last = 20", "avoid_last = 3").replace('name = "talk_seed"\nweight = 2',
                                                                                 'name = "talk_seed"\nweight = 0.0001')
    cfg.write_text(text)
    out = tmp_path / "g.jsonl"
    result = invoke(cfg, "generate", "--suite", "p", "--iterations", "10", "--seed", "3", "-o", str(out))
    assert result.exit_code == 0, result.output
    written = [json.loads(line)["input"]["question"] for line in out.read_text().splitlines()]
    firsts = [b for b in generator_requests(mock) if len(b["messages"]) == 1]  # first asks, not re-asks
    assert len(firsts) == 10 and len(written) == 10
    for k, body in enumerate(firsts):
        listed = [line[2:] for line in prompt_of(body).splitlines() if line.startswith("- ")]
        assert listed == written[max(0, k - 3):k], k


def test_a_near_duplicate_is_asked_again_with_the_reason(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    script = json.loads((REPO / "datasets" / "parliament.script.json").read_text(encoding="utf-8"))
    same = {"model": GEN, "match": "in parliament, as a journalist",  # the generator repeats itself on free topics
            "json": {"question": "What are the main proposals on schools this year?", "complexity": "multi"}}
    mock.set_script({**script, "rules": [same, *script["rules"]]})
    out = tmp_path / "g.jsonl"
    result = invoke(cfg, "generate", "--suite", "p", "--iterations", "40", "--seed", "4", "-o", str(out), "--json")
    record = json.loads(result.stdout)
    assert record["rejected_duplicates"] > 0 and record["failed"] > 0
    reasks = [b for b in generator_requests(mock) if len(b["messages"]) > 1]
    assert any("near-duplicate" in str(b["messages"][-1]["content"]) for b in reasks)
    questions = [json.loads(line)["input"]["question"] for line in out.read_text().splitlines()]
    assert len(set(questions)) == len(questions)


# --------------------------------------------------------------------------- in a run


def test_a_run_stores_its_generated_cases_with_provenance(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs), "--seed", "9", "-q")
    assert result.exit_code in (0, 1), result.output
    doc = doc_of(runs)
    record = doc["config"]["suites"]["p"]["generate"]["record"]
    assert record["seed"] == doc["seed"] == 9 and record["requested"] == 12
    assert record["generated"] + record["failed"] == 12 and record["usage"]["calls"] >= 12
    assert record["corpus"]["sha256"] and record["usage"]["cost_usd"] > 0  # priced: the generator's cost
    cases = doc["suites"]["p"]["cases"]
    assert len(cases) == 12
    for c in cases:
        prov = c["metadata"]["generated"]
        assert prov["generator_model"] == GEN and len(prov["prompt_sha256"]) == 64
        assert c["metadata"]["strategy"] == prov["strategy"]
    # the file the suite ran is the one recorded, content-addressed
    assert doc["suites"]["p"]["dataset"]["path"] == doc["config"]["suites"]["p"]["dataset"] == record["file"]
    # the report breaks results down by fields the generator produced
    rep = invoke(cfg, "report", "--runs-dir", str(runs), "--by", "strategy", "--by", "complexity", "--format", "json")
    assert rep.exit_code == 0, rep.output
    assert {b["field"] for s in json.loads(rep.stdout)["suites"] for a in s["arms"] for b in a["breakdowns"]} == {
        "strategy", "complexity"}


def test_a_failed_generation_is_an_errored_case_of_its_own_that_never_reaches_the_target(
    tmp_path: Path, mock: MockProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = project(tmp_path, mock, count=3)
    (tmp_path / "datasets" / "talks.jsonl").write_text(  # one row: the one the generator garbles
        next(line for line in (REPO / "datasets" / "talks.jsonl").read_text().splitlines() if '"t013"' in line) + "\n")
    cfg.write_text(cfg.read_text().replace('name = "free"\nweight = 1', 'name = "free"\nweight = 0.0001'))
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("CALLS_FILE", str(calls))
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs), "--seed", "1", "--json")
    assert result.exit_code == 1, result.output  # nothing measured
    doc = doc_of(runs)
    cases = doc["suites"]["p"]["cases"]
    assert {c["status"] for c in cases} == {"errored"}
    assert {c["error"]["type"] for c in cases} == {"GenerationFailed"}
    assert all("the reply is not JSON" in c["error"]["message"] for c in cases)
    assert not calls.exists(), "a case that was never written reached the product"
    record = doc["config"]["suites"]["p"]["generate"]["record"]
    assert (record["failed"], record["generated"], record["rejected_garbage"]) == (3, 0, 9)


def test_the_generator_must_not_be_the_subject(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    text = cfg.read_text().replace('target = "prod:answer"',
                                   f'target = {{ kind = "python", callable = "prod:answer", model = "{GEN}" }}')
    cfg.write_text(text)
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs))
    assert result.exit_code == 2 and "generator model 'claude-sonnet-4-5' is the model under test" in result.stderr
    assert not runs.exists() and generator_requests(mock) == []


def test_dry_run_estimates_generation_without_calling_the_generator(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs), "--dry-run", "--iterations", "30", "--seed", "1")
    assert result.exit_code == 0, result.output
    assert "suite p: generating 30 cases: 30 requests to claude-sonnet-4-5" in result.stderr
    assert "cost at most $" in result.stderr
    assert generator_requests(mock) == [] and not runs.exists()


def test_generation_is_charged_to_the_budget(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock, count=40)
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs), "--seed", "1", "--max-cost", "0.004", "--json")
    doc = doc_of(runs)
    record = doc["config"]["suites"]["p"]["generate"]["record"]
    assert record["stopped"] and "not generated" in record["stopped"], record
    assert 0 < record["generated"] < 40 and record["usage"]["cost_usd"] >= 0.004
    assert doc["status"] == "partial", result.output  # nothing was left for the cases


def test_bad_corpus_is_one_line_naming_file_and_line(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    (tmp_path / "datasets" / "talks.jsonl").write_text('{"id": "a", "text": "x"}\n{"text": "no id"}\n')
    result = invoke(cfg, "run", "--runs-dir", str(tmp_path / "runs"))
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: datasets/talks.jsonl:2: id: missing (each row needs an id)"


# --------------------------------------------------------------------------- never again


def test_rejudge_reuses_the_stored_cases(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    runs = tmp_path / "runs"
    assert invoke(cfg, "run", "--runs-dir", str(runs), "--seed", "3", "-q").exit_code in (0, 1)
    original = doc_of(runs)
    asked = len(generator_requests(mock))
    result = invoke(cfg, "rejudge", original["run_id"], "--all", "--runs-dir", str(runs), "--json")
    assert result.exit_code in (0, 1), result.output
    assert len(generator_requests(mock)) == asked, "rejudge generated cases again"
    new = load(next(p for p in runs.glob("*.json") if original["run_id"] not in p.name))
    key = [(c["case_id"], c["input"], c["metadata"]) for c in original["suites"]["p"]["cases"]]
    assert [(c["case_id"], c["input"], c["metadata"]) for c in new["suites"]["p"]["cases"]] == key


def test_resume_after_kill_9_generates_nothing(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock, count=30)
    cfg.write_text(cfg.read_text().replace("[suites.p]\n", "[suites.p]\nconcurrency = 2\n", 1))
    runs = tmp_path / "runs"
    calls = tmp_path / "calls.txt"
    env = {"PYTHONPATH": str(REPO), "SLOW_S": "0.05", "CALLS_FILE": str(calls)}
    proc = evalh_process(["run", "--seed", "8", "-q", "--runs-dir", str(runs)], tmp_path, env)
    deadline, journal = time.monotonic() + 60, None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        if found and len(journal_results(found[0])) >= 6:
            journal = found[0]
            break
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=10)
    assert journal is not None, "the run ended before it could be killed"
    asked = len(generator_requests(mock))
    assert asked >= 30
    frozen = list((runs / "generated").glob("p-*.jsonl"))
    assert len(frozen) == 1
    run_id = journal.name.removesuffix(".journal.jsonl")

    resumed = evalh_process(["run", "--resume", run_id, "--runs-dir", str(runs), "-q"], tmp_path,
                            {**env, "SLOW_S": "0"})
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode in (0, 1), stderr
    assert len(generator_requests(mock)) == asked, "the resumed run generated cases again"
    assert list((runs / "generated").glob("p-*.jsonl")) == frozen
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and len(doc["suites"]["p"]["cases"]) == 30
    written = {json.loads(line)["id"]: json.loads(line)["input"] for line in frozen[0].read_text().splitlines()}
    assert {c["case_id"]: c["input"] for c in doc["suites"]["p"]["cases"]} == written


# --------------------------------------------------------------------------- the shipped example


def test_the_shipped_parliament_example_runs_with_no_key(repo_root: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(repo_root / "evalh.toml"), "--suite", "parliament",
                                      "--seed", "7", "--runs-dir", str(runs), "--json"])
    assert result.exit_code == 0, result.output
    doc = doc_of(runs)
    suite = doc["suites"]["parliament"]
    record = doc["config"]["suites"]["parliament"]["generate"]["record"]
    assert set(record["drawn_by_strategy"]) == {"talk_seed", "free"} and all(record["drawn_by_strategy"].values())
    judge = suite["details"]["citation_judge"]
    assert {"supported", "wrong_speaker"} <= set(judge["paragraph_verdicts"])
    assert judge["precheck"]["caught_by_precheck"] >= 1
    judged = [s for c in suite["cases"] for s in c["scores"] if s["scorer"] == "citation_judge" and not s["error"]]
    assert judged and all(s["details"]["sources_from"] == "output.sources" for s in judged)
    grounding = suite["details"]["grounding"]
    assert grounding["values"] > 0 and grounding["nulls"] == 0


def test_a_template_asking_for_a_withheld_field_is_refused_before_any_call(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    cfg.write_text(cfg.read_text().replace("{{ row.text[:500] }}", "{{ row.text[:500] }} by {{ row.speaker }}"))
    for command in (["validate"], ["run", "--runs-dir", str(tmp_path / "runs")]):
        result = invoke(cfg, *command)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().endswith(
            "suites.p.generate: template `generate.strategies.talk_seed.prompt`: 'dict object' has no attribute 'speaker'")
    assert generator_requests(mock) == [] and not (tmp_path / "runs").exists()


def test_validate_checks_a_generating_suite_without_calling(tmp_path: Path, mock: MockProvider) -> None:
    cfg = project(tmp_path, mock)
    result = invoke(cfg, "validate", "--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["suites"]
    assert row["suite"] == "p" and row["cases"] == 12
    assert generator_requests(mock) == []


def test_a_run_its_requirements_refuse_generates_nothing(tmp_path: Path, mock: MockProvider) -> None:
    """Issue 29: `[suites.S.require]` (or the preset) refuses before cases are generated."""
    cfg = project(tmp_path, mock, count=3, extra="\n[suites.p.require]\nlabel = true\n")
    runs = tmp_path / "runs"
    result = invoke(cfg, "run", "--runs-dir", str(runs), "--seed", "9", "-q")
    assert result.exit_code == 2, result.output
    assert "suite 'p' requires a run label: pass --label (require.label)" in result.stderr
    assert generator_requests(mock) == [] and not runs.exists()
