"""The secret scan: complete, budget-stopped, errored and killed runs, with keys in every
place a user puts one — the environment, `api_key_env`, headers, a URL's userinfo and query,
a model `base_url`'s query, a credential literal in a body template, a generator's key —
against a loopback provider and product that echo every request they receive (path with
its query, headers, body). Afterwards no secret value is in any file under the project (run
documents, journals, the response cache, generated datasets, reports in every format,
JUnit, exports) nor in the output of any command in any format, nor in the pages' API.

Every command is a separate `evalh` process, as a user or CI runs it: nothing registered
as a secret by one command helps the next. The commands that only read the runs are
independent of each other, and run side by side.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalh.mock import MockProvider


def _secret(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


ANTHROPIC_KEY = _secret("sk-ant-scan")
OPENAI_KEY = _secret("sk-openai-judge-scan")
CUSTOM_KEY = _secret("custom-access-scan")  # through api_key_env = "EVAL_MODEL_ACCESS"
HEADER_VALUE = _secret("hdr-scan")  # X-Product-Auth = "Bearer ${PRODUCT_HDR}"
URL_USER = _secret("user-scan")
URL_PASSWORD = _secret("pw-scan")
URL_TOKEN = _secret("tok-scan")
BASIC = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()
GATEWAY_KEY = _secret("gw-scan")  # base_url = "…/v1?api_key=…" (openai and anthropic)
BODY_LITERAL = _secret("literal-scan")  # body = '{…, "api_key": "literal-…"}'
GEN_KEY = _secret("gen-scan")  # a generator's api_key_env = "GEN_ACCESS"
SECRETS = {
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY (judge)": OPENAI_KEY,
    "api_key_env EVAL_MODEL_ACCESS": CUSTOM_KEY, "header ${PRODUCT_HDR}": HEADER_VALUE,
    "url user": URL_USER, "url password": URL_PASSWORD, "url ?token=": URL_TOKEN,
    "Basic header": BASIC, "base_url ?api_key=": GATEWAY_KEY, "body literal": BODY_LITERAL,
    "generator key": GEN_KEY,
}

SCRIPT = [
    {"match": "slow", "endpoint": "anthropic", "text": "a slow answer", "latency_ms": 250, "echo": True},
    {"match": "garble", "endpoint": "product", "text": "x", "fault": "malformed_json", "echo": True},
    {"match": "boom", "fault": {"kind": "server_error", "message": "the server fell over"}},
    {"endpoint": "openai", "model": "judge-1", "json": {"verdict": "pass", "rationale": "fine"}, "echo": True},
    {"endpoint": ["anthropic", "openai", "product"], "text": "an answer", "echo": True},
]


def _toml(mp: MockProvider) -> str:
    host = mp.base_url.split("://", 1)[1]
    url = f"http://{URL_USER}:{URL_PASSWORD}@{host}/v1/product/answer?token={URL_TOKEN}&region=eu"
    judge = (f'{{ type = "judge", provider = "openai", model = "judge-1", base_url = "{mp.openai_base_url}", '
             'rubric = "Is the answer right?", max_retries = 0 }')
    anthropic = (f'{{ kind = "anthropic", model = "claude-haiku-4-5", base_url = "{mp.base_url}", '
                 'prompt = "{{ input.q }}", max_retries = 0 }')
    custom = (f'{{ kind = "openai", model = "sub-2", base_url = "{mp.openai_base_url}", '
              'api_key_env = "EVAL_MODEL_ACCESS", prompt = "{{ input.q }}", max_retries = 0 }')
    gateways = "".join(
        f'[suites.gateway_{kind}]\ndataset = "cases.jsonl"\nregime = "stochastic"\n'
        f'scorers = [{{ type = "contains" }}]\ntarget = {{ kind = "{kind}", model = "gw-1", '
        f'base_url = "{base}?api_key={GATEWAY_KEY}&team=evals", prompt = "{{{{ input.q }}}}", max_retries = 0 }}\n\n'
        for kind, base in (("openai", mp.openai_base_url), ("anthropic", mp.base_url)))
    body = '{"q": {{ input.q | tojson }}, "api_key": "' + BODY_LITERAL + '", "user": "evals-ci-runner"}'
    return f"""\
[evalh]
concurrency = 2
timeout_s = 10

[suites.subject]
dataset = "cases.jsonl"
regime = "stochastic"
target = {anthropic}
scorers = [{{ type = "contains" }}, {judge}]

[suites.custom]
dataset = "cases.jsonl"
regime = "stochastic"
target = {custom}
scorers = [{{ type = "contains" }}, {judge}]

[suites.product]
dataset = "cases.jsonl"
regime = "stochastic"
scorers = [{{ type = "contains" }}]
target = {{ kind = "http", url = "{url}", body = '{body}', headers = {{ X-Product-Auth = "Bearer ${{PRODUCT_HDR}}" }}, max_retries = 0 }}

[suites.flaky]
dataset = "flaky.jsonl"
regime = "stochastic"
scorers = [{{ type = "contains" }}]
target = {{ kind = "http", url = "{url}", headers = {{ X-Product-Auth = "Bearer ${{PRODUCT_HDR}}" }}, max_retries = 0 }}

[suites.flaky_model]
dataset = "flaky.jsonl"
regime = "stochastic"
target = {custom}
scorers = [{{ type = "contains" }}, {judge}]

[suites.slow]
dataset = "slow.jsonl"
regime = "stochastic"
concurrency = 1
target = {anthropic}
scorers = [{{ type = "contains" }}]

{gateways}[suites.gen]
regime = "stochastic"
target = {anthropic}
scorers = [{{ type = "contains" }}]

[suites.gen.generate]
count = 2
generator = {{ provider = "anthropic", model = "gen-1", base_url = "{mp.base_url}", api_key_env = "GEN_ACCESS", max_retries = 0 }}
max_similarity = 1.0
max_chars = 20000

[[suites.gen.generate.strategies]]
name = "free"
palette = ["rail", "housing"]
prompt = "Write one question about {{{{ topic }}}}."
"""


def _cases(root: Path, name: str, questions: list[str]) -> None:
    (root / name).write_text("".join(
        json.dumps({"id": f"{name.split('.')[0]}{i}", "input": {"q": q}, "expected": "answer"}) + "\n"
        for i, q in enumerate(questions)), encoding="utf-8")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALH_", "ANTHROPIC_", "OPENAI_"))}
    env.pop("EVAL_RUNS_DIR", None)
    env.update({"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY,
                "EVAL_MODEL_ACCESS": CUSTOM_KEY, "PRODUCT_HDR": HEADER_VALUE, "GEN_ACCESS": GEN_KEY,
                "NO_PROXY": "127.0.0.1,localhost", "COLUMNS": "200"})
    return env


class Project:
    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = {**_env(), **(env or {})}
        self.outputs: list[tuple[str, str]] = []

    def evalh(self, *args: str, codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "evalh.cli.main", *args], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=60)
        self.outputs.append((" ".join(args), proc.stdout + proc.stderr))
        assert proc.returncode in codes, (args, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
        return proc

    def evalh_each(self, *commands: tuple[tuple[str, ...], tuple[int, ...]]) -> None:
        """Independent commands (each its own `evalh` process, reading what the runs wrote and
        writing files of their own), started as the cores allow, checked as `evalh` is."""
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(lambda command: self.evalh(*command[0], codes=command[1]), commands))

    def run_json(self, *args: str, codes: tuple[int, ...] = (0, 1)) -> dict[str, object]:
        out = self.evalh("run", "--json", *args, codes=codes).stdout
        return json.loads(out[out.index("{"):])  # type: ignore[no-any-return]


def ui_api(root: Path, run_ids: list[str]) -> list[tuple[str, str]]:
    """(address, body) of what the pages' API serves of the runs: the list, and for each run
    its summary, report, cases and first case of each suite; the comparison of the first two."""
    import threading

    import httpx

    from evalh.ui.server import make_server

    server = make_server(root / "eval_runs", root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    pages: list[tuple[str, str]] = []
    try:
        api = f"http://127.0.0.1:{server.server_address[1]}/api"

        def get(path: str, **params: str) -> str:
            reply = httpx.get(f"{api}{path}", params=params, timeout=60)
            assert reply.status_code == 200, (path, params, reply.text[:300])
            pages.append((f"{path}?{params}", reply.text))
            return reply.text

        get("/runs")
        for run_id in run_ids:
            summary = json.loads(get(f"/runs/{run_id}"))
            get(f"/runs/{run_id}/report")
            for suite in summary.get("suites") or {}:
                get(f"/runs/{run_id}/cases", suite=suite)
                get(f"/runs/{run_id}/case", suite=suite, i="0")
        if len(run_ids) > 1:
            get("/compare", base=run_ids[0], candidate=run_ids[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert any('"output"' in body for _, body in pages)
    return pages


def _kill_mid_run(project: Project) -> str:
    """`evalh run --suite slow`, killed with SIGKILL once two results are in its journal."""
    runs = project.root / "eval_runs"
    before = set(runs.glob("*.journal.jsonl"))
    proc = subprocess.Popen([sys.executable, "-m", "evalh.cli.main", "run", "--suite", "slow"], cwd=project.root,
                            env=project.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    journal: Path | None = None
    while time.monotonic() < deadline:
        found = sorted(set(runs.glob("*.journal.jsonl")) - before)
        if found and len(found[-1].read_bytes().splitlines()) >= 3:  # the header and two results
            journal = found[-1]
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=10)
    project.outputs.append(("run --suite slow (killed)", out))
    assert journal is not None and proc.returncode == -signal.SIGKILL, out[-2000:]
    return journal.name.split(".")[0]


def test_no_secret_reaches_any_file_or_any_output(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    with MockProvider(SCRIPT) as mp:
        (root / "evalh.toml").write_text(_toml(mp), encoding="utf-8")
        _cases(root, "cases.jsonl", [f"question {i}" for i in range(3)])
        _cases(root, "flaky.jsonl", ["garble this", "boom now", "a fine question"])
        _cases(root, "slow.jsonl", [f"slow question {i}" for i in range(6)])
        (root / "rubric.md").write_text("Is the answer right?\n", encoding="utf-8")
        p = Project(root)

        complete = p.run_json("--suite", "subject", "--suite", "custom", "--suite", "product",
                              "--suite", "gateway_openai", "--suite", "gateway_anthropic", "--suite", "gen",
                              "--junit-xml", "run.xml")
        assert complete["status"] == "complete", complete
        p.evalh("generate", "--suite", "gen", "-o", "generated.jsonl", "--seed", "7")
        # errored cases (a malformed echo, a 500), and replies served from the cache
        errored = p.run_json("--suite", "flaky", "--suite", "flaky_model", "--suite", "custom")
        assert errored["summary"]["errored"] >= 2, errored  # type: ignore[index]
        partial = p.run_json("--suite", "custom", "--suite", "product", "--no-cache", "--max-tokens", "100")
        assert partial["status"] == "partial", partial
        killed = _kill_mid_run(p)
        resumed = p.run_json("--resume", killed)
        assert resumed["run_id"] == killed and resumed["status"] == "complete", resumed
        served = mp.count()

    docs = sorted((root / "eval_runs").glob("*.json"))
    ids = [str(r["run_id"]) for r in (complete, errored, partial, resumed)]
    p.evalh_each(
        *((("show", run_id, "--json"), (0,)) for run_id in ids),
        *((("show", run_id), (0,)) for run_id in ids),
        (("report", ids[0], ids[1], ids[2]), (0,)),
        (("report", ids[0], ids[1], "--format", "md"), (0,)),
        (("report", ids[0], ids[2], "--format", "json"), (0,)),
        (("report", ids[0], ids[1], "--format", "html", "-o", "report.html"), (0,)),
        (("compare", ids[0], ids[1]), (0, 1, 3)),
        (("compare", ids[0], ids[1], "--format", "json", "--junit-xml", "compare.xml"), (0, 1, 3)),
        (("compare", ids[0], ids[2], "--format", "markdown"), (0, 1, 3)),
        (("export-requests", ids[1], "-o", "requests.json", "--rubric", "rubric.md"), (0,)),
    )
    api = ui_api(root, ids)

    # the echoes happened: the replies held the credentials, now replaced
    assert served > 20 and len(docs) == 4
    cache = sorted((root / ".evalh" / "cache").rglob("*.json"))
    assert cache and all(b"authorization" in f.read_bytes() for f in cache)
    assert (root / "eval_runs" / f"{partial['run_id']}.journal.jsonl").is_file()
    assert (root / "report.html").is_file() and (root / "requests.json").is_file()
    assert (root / "run.xml").is_file() and (root / "compare.xml").is_file()
    documents = b"".join(d.read_bytes() for d in docs)
    assert b"x-product-auth" in documents and b"authorization" in documents and b"region=eu" in documents
    # the three paths echoed: a gateway's query key, a body literal, a generator's key
    assert b"?api_key=[REDACTED]&team=evals" in documents and b'\\"api_key\\":\\"[REDACTED]\\"' in documents
    generated = [root / "generated.jsonl", *sorted((root / "eval_runs" / "generated").glob("*.jsonl"))]
    assert len(generated) == 2 and all(b"Bearer [REDACTED]" in f.read_bytes() for f in generated)

    files = [f for f in sorted(root.rglob("*")) if f.is_file() and f.name != "evalh.toml"]
    hits = [(what, str(f.relative_to(root))) for f in files for what, value in SECRETS.items()
            if value.encode() in f.read_bytes()]
    hits += [(what, f"output of `evalh {cmd}`") for cmd, out in p.outputs for what, value in SECRETS.items()
             if value in out]
    hits += [(what, f"ui api {url}") for url, page in api for what, value in SECRETS.items() if value in page]
    assert hits == []
