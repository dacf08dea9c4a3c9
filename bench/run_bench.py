"""Runner benchmarks: harness overhead per case (evalh vs inspect_ai), latency-bound
throughput, one-case end to end, and the progress bar's cost.

    python bench/run_bench.py                      # everything; writes bench/runner_results.{md,json}
    python bench/run_bench.py --quick              # no 10,000-sample inspect_ai run, one repeat
    python bench/run_bench.py --inspect-python /path/to/venv/bin/python

inspect_ai is the `bench` extra (`pip install -e ".[bench]"`, or `pip install inspect-ai
openai anthropic` into its own venv and pass `--inspect-python`); without it the comparison
is skipped and says so. Its `openai` and `anthropic` providers run against the same loopback
mock as evalh's model targets (the same HTTP workload); its `mockllm` runs in-process.
`hyperfine` is used for the end-to-end timing when it is on PATH, else a Python timing loop.

Every measurement runs in a fresh interpreter (`python bench/run_bench.py _worker ...`), so
imports and caches of one do not help another. "Harness time" is the wall time of the
library call that loads the dataset, runs every case, scores it and writes the run (evalh:
`prepare_run` + `execute`; inspect_ai: `eval()`), excluding interpreter start and imports,
which the end-to-end figures include. Work files go to bench/.work/ (ignored by git).

This file imports only the standard library at module level: the inspect_ai worker runs
under another interpreter that has no evalh.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "runner"
REPO = HERE.parent

TARGET_SOURCE = '''\
import asyncio


def instant(inp):
    return "ok"


async def sleep50(inp):
    await asyncio.sleep(0.05)
    return "ok"
'''


# ---------------------------------------------------------------------------- project files


def write_dataset(n: int) -> Path:
    path = WORK / f"cases{n}.jsonl"
    if not path.exists():
        with path.open("w", encoding="utf-8") as fh:
            for i in range(n):
                fh.write(json.dumps({"id": f"c{i:05d}", "input": {"q": f"question {i}"}, "expected": "ok"}) + "\n")
    return path


def write_config(name: str, n: int, target: str, concurrency: int, base_url: str | None = None,
                 processes: int = 1) -> Path:
    """One suite `b` of `n` cases; `target` is `python`, `sleep50`, `anthropic` or `openai`;
    `processes`: its cases over that many worker processes (evalh.core.run.procs)."""
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "bench_target.py").write_text(TARGET_SOURCE, encoding="utf-8")
    write_dataset(n)
    head = f'[evalh]\nconcurrency = {concurrency}\ntimeout_s = 60\n'
    head += f"processes = {processes}\n" if processes > 1 else ""
    head += f'\n[suites.b]\ndataset = "cases{n}.jsonl"\n'
    head += 'scorers = [{ type = "exact" }]\n'
    if target == "python":
        body = 'target = "bench_target:instant"\n'
    elif target == "sleep50":
        body = 'target = "bench_target:sleep50"\n'
    else:
        url = base_url if target == "anthropic" else f"{base_url}/v1"
        body = (
            f'\n[suites.b.target]\nkind = "{target}"\nmodel = "bench-model"\nbase_url = "{url}"\n'
            f'api_key_env = "BENCH_API_KEY"\nprompt = "{{{{ input.q }}}}"\nmax_tokens = 16\n'
            f"max_in_flight = {concurrency}\n"
        )
    path = WORK / f"{name}.toml"
    path.write_text(head + body, encoding="utf-8")
    return path



def inline_config(config: Path) -> Path:
    """A copy of `config` (a `python` one of `write_config`) whose target is declared cheap
    (`inline = true`: called on the event loop, no worker thread), beside it."""
    text = config.read_text(encoding="utf-8").replace(
        'target = "bench_target:instant"',
        'target = { kind = "python", callable = "bench_target:instant", inline = true }')
    inline = config.with_name(f"{config.stem}_inline.toml")
    inline.write_text(text, encoding="utf-8")
    return inline

# ---------------------------------------------------------------------------- workers


def worker_evalh(config: str, runs_dir: str, progress: bool, minimal_client: bool = False) -> dict[str, Any]:
    """Harness time of one evalh run of `config` (imports done before the clock starts).
    `minimal_client`: the `openai` backend sends through bench/minimal_client.py instead
    of aiohttp (the experiment row: what a near-free HTTP client would give)."""
    os.environ.setdefault("BENCH_API_KEY", "bench-key")
    if minimal_client:
        sys.path.insert(0, str(HERE))
        from minimal_client import use_in_openai_backend

        use_in_openai_backend()
    # Imports are outside the clock (see the module docstring), the model SDKs' too: a
    # provider imports its SDK on first use, and `import anthropic` alone takes ~1.2 s here.
    # Only for model targets: the SDK's ~150,000 objects make every full GC pass slower.
    if 'kind = "' in Path(config).read_text(encoding="utf-8"):
        import aiohttp  # noqa: F401
        import anthropic  # noqa: F401

    from evalh.config import load_config
    from evalh.core.run.entry import run_plan
    from evalh.core.run.prepare import RunOptions, prepare_run
    from evalh.store import RunStore

    observer = None
    if progress:
        from evalh.report.terminal.progress import ProgressObserver

        observer = ProgressObserver(enabled=True)
    import resource
    from datetime import datetime

    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, cpu0 = time.perf_counter(), time.process_time()
    cfg = load_config(config)
    prepared = prepare_run(cfg, RunOptions(seed=1, use_cache=False), Path(runs_dir))
    run = run_plan(prepared.plan, RunStore(Path(runs_dir)), observer, results=False)  # aggregates only: no read-back
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # worker processes (processes = N), reaped
    workers_cpu = (children1.ru_utime - children0.ru_utime) + (children1.ru_stime - children0.ru_stime)
    agg = run.suites["b"].aggregate
    assert run.finished_at is not None
    span = (datetime.fromisoformat(run.finished_at) - datetime.fromisoformat(run.started_at)).total_seconds()
    return {
        "wall_s": wall, "cases": agg.n, "passed": agg.passed, "errored": agg.errored,
        "latency_ms_p50": agg.latency_ms_p50, "status": run.status, "cpu_s": cpu,
        "run_span_s": span, "limits": run.limits, "workers_cpu_s": workers_cpu,
    }


def worker_inspect(n: int, log_dir: str, provider: str = "mockllm", base_url: str | None = None) -> dict[str, Any]:
    """Harness time of one inspect_ai eval of `n` samples: on `mockllm/model` (in-process),
    or on its `openai` / `anthropic` provider against the loopback mock at `base_url` (the
    same HTTP workload as evalh's model targets; chat completions, no streaming, 32
    connections as evalh's 32 in flight, 16 output tokens).

    The mock's outputs carry their usage: without it mockllm counts tokens with tiktoken,
    which downloads an encoding (no network here) and would only add to inspect's time.
    """
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import exact
    from inspect_ai.solver import generate

    if provider == "openai":
        import openai  # noqa: F401  (imports outside the clock, as for evalh)
    elif provider == "anthropic":
        import anthropic  # noqa: F401

    def outputs(input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        out = ModelOutput.from_content(model="mockllm", content="ok")
        out.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)
        return out

    t0, cpu0 = time.perf_counter(), time.process_time()
    if provider == "mockllm":
        model = get_model("mockllm/model", custom_outputs=outputs)
    elif provider == "openai":
        model = get_model("openai/bench-model", base_url=f"{base_url}/v1", api_key="bench-key",
                          responses_api=False, config=GenerateConfig(max_tokens=16))
    else:
        model = get_model("anthropic/bench-model", base_url=base_url, api_key="bench-key",
                          streaming=False, config=GenerateConfig(max_tokens=16))
    task = Task(
        dataset=[Sample(input=f"question {i}", target="ok", id=f"c{i:05d}") for i in range(n)],
        solver=[generate()], scorer=exact(),
    )
    logs = eval(task, model=model, display="none", log_dir=log_dir, max_connections=32)
    wall = time.perf_counter() - t0
    log = logs[0]
    assert log.status == "success", log.error
    assert log.results is not None
    return {"wall_s": wall, "cases": log.results.completed_samples, "cpu_s": time.process_time() - cpu0}


def worker_client(kind: str, base_url: str, in_flight: int, n: int) -> dict[str, Any]:
    """What the mock server allows without evalh: `raw` is a minimal keep-alive HTTP/1.1
    client on asyncio streams (the server's ceiling); `aiohttp` is one `aiohttp.ClientSession`;
    `httpx` / `httpx8` are one
    `httpx.AsyncClient` / eight of them, `in_flight` requests at a time."""
    import asyncio

    body = json.dumps({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
    host, port = base_url.removeprefix("http://").split(":")

    async def raw() -> None:
        request = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer k\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

        async def connection(count: int) -> None:
            reader, writer = await asyncio.open_connection(host, int(port))
            for _ in range(count):
                writer.write(request)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                await reader.readexactly(length)
            writer.close()

        share = [n // in_flight + (i < n % in_flight) for i in range(in_flight)]
        await asyncio.gather(*(connection(k) for k in share))

    async def with_httpx(pools: int) -> None:
        import httpx

        clients = [httpx.AsyncClient(limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
                   for _ in range(pools)]
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with gate:
                r = await clients[i % pools].post(f"{base_url}/v1/chat/completions", content=body,
                                                  headers={"Authorization": "Bearer k"})
                r.raise_for_status()

        await asyncio.gather(*(one(i) for i in range(n)))
        for c in clients:
            await c.aclose()

    async def with_aiohttp() -> None:
        import aiohttp

        gate = asyncio.Semaphore(in_flight)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def one() -> None:
                async with gate, session.post(f"{base_url}/v1/chat/completions", data=body,
                                              headers={"Authorization": "Bearer k"}) as r:
                    r.raise_for_status()
                    await r.read()

            await asyncio.gather(*(one() for _ in range(n)))

    async def backend(provider: str) -> None:
        """evalh's provider backend alone (`send`: the HTTP client, and the SDK for
        anthropic), without the runner, the retry wrapper or the cache."""
        from evalh.providers.anthropic import AnthropicBackend
        from evalh.providers.base import ChatRequest, ProviderConfig
        from evalh.providers.openai import OpenAIBackend

        config = ProviderConfig(provider=provider, model="m",  # type: ignore[arg-type]
                                base_url=base_url + ("/v1" if provider == "openai" else ""))
        client = (OpenAIBackend if provider == "openai" else AnthropicBackend)(config, "k")
        request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=16)
        gate = asyncio.Semaphore(in_flight)

        async def one() -> None:
            async with gate:
                await client.send(request)

        await asyncio.gather(*(one() for _ in range(n)))
        await client.aclose()

    if kind.startswith("backend-") or kind == "aiohttp":
        import aiohttp  # noqa: F401  (imports outside the clock)
        import anthropic  # noqa: F401
    t0, cpu0 = time.perf_counter(), time.process_time()
    if kind == "raw":
        asyncio.run(raw())
    elif kind.startswith("backend-"):
        asyncio.run(backend(kind.removeprefix("backend-")))
    elif kind == "aiohttp":
        asyncio.run(with_aiohttp())
    else:
        asyncio.run(with_httpx(8 if kind == "httpx8" else 1))
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0, "cases": n}


def run_worker(python: str, args: list[str], env: dict[str, str] | None = None,
               stderr_to_null: bool = False) -> dict[str, Any]:
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "_worker", *args],
        cwd=WORK, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        check=False,
    )
    process_s = time.perf_counter() - started
    shutil.rmtree(WORK / "runs", ignore_errors=True)  # a 10,000-case document is ~10 MB
    shutil.rmtree(WORK / "inspect_logs", ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_s"] = process_s
    result["load_before"] = load
    return result


def median_of(runs: list[dict[str, Any]], key: str = "wall_s") -> float:
    return statistics.median(r[key] for r in runs)


# ---------------------------------------------------------------------------- mock server


class MockServer:
    """The loopback provider in its own process, so its CPU is not the runner's GIL. It keeps
    the last 100 requests only: the benchmarks never read them, and a server holding 10,000
    spends its collector's time on them, more as a pass goes on."""

    def __init__(self, latency_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalh.mock.mock_provider", "--port", "0",
             "--latency-ms", str(latency_ms), "--max-recorded", "100"],
            stderr=subprocess.PIPE, text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        self.base_url = line.strip().rsplit(" ", 1)[-1]
        if not self.base_url.startswith("http://"):
            raise RuntimeError(f"mock provider did not start: {line!r}")

    def cpu_s(self) -> float | None:
        """CPU seconds the server process has used so far (Linux /proc; else None)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(self, args: list[str]) -> dict[str, Any]:
        """`run_worker(args)`, with the server's CPU seconds during it as `server_cpu_s`."""
        before = self.cpu_s()
        result = run_worker(sys.executable, args)
        after = self.cpu_s()
        result["server_cpu_s"] = after - before if before is not None and after is not None else None
        return result

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# ---------------------------------------------------------------------------- the benchmarks


def bench_overhead(args: argparse.Namespace, inspect_python: str | None) -> dict[str, Any]:
    repeats = 1 if args.quick else 3
    out: dict[str, Any] = {"evalh_python": {}, "evalh_anthropic": {}, "evalh_openai": {}, "inspect_ai": {},
                           "inspect_ai_openai": {}, "inspect_ai_anthropic": {}}
    for n in (1000, 10000):
        cfg = write_config(f"py{n}", n, "python", 32)
        runs = [run_worker(sys.executable, ["evalh", str(cfg), str(WORK / "runs")]) for _ in range(repeats)]
        out["evalh_python"][n] = {"wall_s": median_of(runs), "runs": runs}
        print(f"evalh python target, {n} cases: {median_of(runs):.2f}s", file=sys.stderr)
    server = MockServer(latency_ms=0)
    try:
        for kind in ("anthropic", "openai"):
            for n in (1000, 10000):
                cfg = write_config(f"{kind}{n}", n, kind, 32, server.base_url)
                runs = [run_worker(sys.executable, ["evalh", str(cfg), str(WORK / "runs")])
                        for _ in range(repeats)]
                out[f"evalh_{kind}"][n] = {"wall_s": median_of(runs), "runs": runs}
                print(f"evalh {kind} target, {n} cases: {median_of(runs):.2f}s", file=sys.stderr)
            if inspect_python:  # the same HTTP workload through inspect_ai's provider (1,000: ~25 s each)
                runs = [run_worker(inspect_python, ["inspect", "1000", str(WORK / "inspect_logs"), kind,
                                                    server.base_url]) for _ in range(1 if args.quick else 2)]
                out[f"inspect_ai_{kind}"][1000] = {"wall_s": median_of(runs), "runs": runs}
                print(f"inspect_ai {kind} provider, 1000 samples: {median_of(runs):.2f}s", file=sys.stderr)
    finally:
        server.stop()
    if inspect_python:
        sizes = (1000,) if args.quick else (1000, 10000)
        for n in sizes:
            runs = [run_worker(inspect_python, ["inspect", str(n), str(WORK / "inspect_logs")])]
            out["inspect_ai"][n] = {"wall_s": median_of(runs), "runs": runs}
            print(f"inspect_ai mockllm, {n} samples: {median_of(runs):.2f}s", file=sys.stderr)
    return out


def bench_latency(args: argparse.Namespace) -> dict[str, Any]:
    """1,000 cases against a mock that answers after 50 ms, at 32 and 64 in flight: the
    clients alone (baselines), then evalh; model targets also at 16 in flight, and at 64
    against 500 ms replies (a real provider's latency; 3,000 cases there, so that the fixed
    cost of a run and the last partial round weigh as they would in a long run). Keys:
    `kind@in_flight[/latency]`."""
    n = 1000
    repeats = 1 if args.quick else 3
    out: dict[str, Any] = {}

    def measure(server: MockServer, kind: str, c: int, latency: float, key: str, baseline: bool,
                n: int = n) -> None:
        if baseline:
            argv = ["client", kind, server.base_url, str(c), str(n)]
        else:
            target = kind.removesuffix("-minimal")
            cfg = write_config(f"lat_{target}{c}_{n}", n, target, c, server.base_url)
            argv = ["evalh", str(cfg), str(WORK / "runs")]
            if kind.endswith("-minimal"):
                argv.append("--minimal-client")
        runs = [server.run(argv) for _ in range(repeats)]
        wall = median_of(runs)
        ideal = n * latency / c
        out[key] = {"target": kind, "in_flight": c, "latency_s": latency, "cases": n, "wall_s": wall,
                    "ideal_s": ideal,
                    "efficiency": ideal / wall, "runs": runs, "baseline": baseline,
                    "experiment": kind.endswith("-minimal")}
        print(f"latency-bound {key}: {wall:.2f}s (ideal {ideal:.2f}s, {ideal / wall:.0%})", file=sys.stderr)

    server = MockServer(latency_ms=50)
    try:
        for kind in ("raw", "aiohttp", "httpx", "httpx8", "backend-openai", "backend-anthropic"):
            for c in (32, 64):
                measure(server, kind, c, 0.05, f"{kind}@{c}", baseline=True)
        for kind in ("sleep50", "anthropic", "openai", "openai-minimal"):
            for c in (16, 32, 64) if kind in ("anthropic", "openai") else (32, 64):
                measure(server, kind, c, 0.05, f"{kind}@{c}", baseline=False)
    finally:
        server.stop()
    server = MockServer(latency_ms=500)
    try:
        for kind in ("anthropic", "openai"):
            measure(server, kind, 64, 0.5, f"{kind}@64/500ms", baseline=False, n=3000)
    finally:
        server.stop()
    return out


def bench_procs(args: argparse.Namespace) -> dict[str, Any]:
    """The latency-bound workload (1,000 cases, 50 ms replies) with the suite's cases over
    worker processes (`processes = N`), beside one process in the same pass: `anthropic` and
    `openai` targets at 32 and 64 in flight. Keys: `kind@in_flight/pN`. CPU is split into the
    run's process (`cpu_s`: the coordinator — journal, results, hand-out) and its workers
    (`workers_cpu_s`)."""
    n = 1000
    repeats = 1 if args.quick else 3
    out: dict[str, Any] = {}
    server = MockServer(latency_ms=50)
    try:
        for kind in ("anthropic", "openai"):
            for c in (32, 64):
                for procs in (1, 2, 3):
                    cfg = write_config(f"procs_{kind}{c}_{procs}", n, kind, c, server.base_url, processes=procs)
                    runs = [server.run(["evalh", str(cfg), str(WORK / "runs")]) for _ in range(repeats)]
                    wall = median_of(runs)
                    ideal = n * 0.05 / c
                    key = f"{kind}@{c}/p{procs}"
                    out[key] = {"target": kind, "in_flight": c, "processes": procs, "latency_s": 0.05, "cases": n,
                                "wall_s": wall, "ideal_s": ideal, "efficiency": ideal / wall, "runs": runs}
                    print(f"latency-bound {key}: {wall:.2f}s (ideal {ideal:.2f}s, {ideal / wall:.0%})", file=sys.stderr)
    finally:
        server.stop()
    return out


def bench_one_case(args: argparse.Namespace, inspect_python: str | None) -> dict[str, Any]:
    cfg = write_config("one", 1, "python", 8)
    evalh_bin = shutil.which("evalh") or ""
    cmd = [evalh_bin, "run", "--config", str(cfg), "--runs-dir", str(WORK / "runs"), "-q"]
    out: dict[str, Any] = {}
    if shutil.which("hyperfine") and evalh_bin:
        export = WORK / "hyperfine.json"
        subprocess.run(
            ["hyperfine", "--warmup", "2", "--runs", "5" if args.quick else "15", "--export-json",
             str(export), "--style", "none", " ".join(cmd)],
            check=True, capture_output=True,
        )
        res = json.loads(export.read_text())["results"][0]
        out["evalh"] = {"tool": "hyperfine", "mean_s": res["mean"], "min_s": res["min"],
                        "stddev_s": res["stddev"], "runs": len(res["times"])}
    else:
        times = []
        for _ in range(5 if args.quick else 15):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        out["evalh"] = {"tool": "python loop", "mean_s": statistics.mean(times), "min_s": min(times),
                        "stddev_s": statistics.pstdev(times), "runs": len(times)}
    print(f"one-case evalh run: {out['evalh']['mean_s']:.3f}s", file=sys.stderr)
    if inspect_python:
        times = [run_worker(inspect_python, ["inspect", "1", str(WORK / "inspect_logs")])["process_s"]
                 for _ in range(1 if args.quick else 3)]
        out["inspect_ai"] = {"tool": "python loop", "mean_s": statistics.mean(times), "min_s": min(times),
                             "runs": len(times)}
        print(f"one-sample inspect eval: {out['inspect_ai']['mean_s']:.3f}s", file=sys.stderr)
    return out


def bench_progress(args: argparse.Namespace) -> dict[str, Any]:
    """10,000 instant cases with the progress bar drawn (to a forced terminal) vs --quiet."""
    cfg = write_config("py10000", 10000, "python", 32)
    env = {"FORCE_COLOR": "1", "COLUMNS": "120"}
    repeats = 1 if args.quick else 3
    quiet = [run_worker(sys.executable, ["evalh", str(cfg), str(WORK / "runs")], env) for _ in range(repeats)]
    drawn = [run_worker(sys.executable, ["evalh", str(cfg), str(WORK / "runs"), "--progress"], env)
             for _ in range(repeats)]
    q, d = median_of(quiet), median_of(drawn)
    print(f"progress bar on 10,000 cases: {d:.2f}s vs {q:.2f}s quiet", file=sys.stderr)
    return {"cases": 10000, "quiet_s": q, "progress_s": d, "per_case_us": (d - q) / 10000 * 1e6}


# ---------------------------------------------------------------------------- report


def find_inspect_python(given: str | None) -> str | None:
    candidates = [given, os.environ.get("INSPECT_PYTHON"), sys.executable]
    for python in candidates:
        if python and subprocess.run([python, "-c", "import inspect_ai"], capture_output=True).returncode == 0:
            return python
    return None


def inspect_version(python: str) -> str:
    return subprocess.run([python, "-c", "import inspect_ai; print(inspect_ai.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def render(results: dict[str, Any]) -> str:
    from bench.report import render_markdown

    return render_markdown(results)


def main_bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one repeat, no 10,000-sample inspect run")
    parser.add_argument("--inspect-python", help="interpreter that has inspect_ai (default: this one, or $INSPECT_PYTHON)")
    parser.add_argument("--only", choices=["overhead", "latency", "procs", "one_case", "progress"], action="append")
    parser.add_argument("--render-only", action="store_true", help="rewrite the .md from the .json")
    args = parser.parse_args(argv)
    if args.render_only:
        data = json.loads((HERE / "runner_results.json").read_text())
        (HERE / "runner_results.md").write_text(render(data), encoding="utf-8")
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    inspect_python = find_inspect_python(args.inspect_python)
    if inspect_python is None:
        print("inspect_ai not found: the comparison is skipped (pip install -e '.[bench]' or "
              "--inspect-python)", file=sys.stderr)
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": f"{sys.platform}-{platform.machine()}",
            "inspect_ai": inspect_version(inspect_python) if inspect_python else None,
            "load_at_start": os.getloadavg()[0],
        },
        "quick": args.quick,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    everything = {"overhead", "latency", "procs", "one_case", "progress"}
    only = set(args.only or everything)
    json_path = HERE / "runner_results.json"
    if only != everything and json_path.exists():
        previous = json.loads(json_path.read_text())
        if inspect_python is None and "overhead" not in only:  # section 1 keeps its inspect_ai
            results["machine"]["inspect_ai"] = previous.get("machine", {}).get("inspect_ai")
        results = {**previous, **results}
    passes = results.setdefault("passes", {})
    for name, run in (
        ("overhead", lambda: bench_overhead(args, inspect_python)),
        ("latency", lambda: bench_latency(args)),
        ("procs", lambda: bench_procs(args)),
        ("one_case", lambda: bench_one_case(args, inspect_python)),
        ("progress", lambda: bench_progress(args)),
    ):
        if name in only:
            passes[name] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_at_start": os.getloadavg()[0]}
            results[name] = run()
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    (HERE / "runner_results.md").write_text(render(results), encoding="utf-8")
    print(f"wrote {json_path} and {HERE / 'runner_results.md'}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["_worker"]:
        kind, rest = argv[1], argv[2:]
        if kind == "evalh":
            result = worker_evalh(rest[0], rest[1], progress="--progress" in rest,
                                  minimal_client="--minimal-client" in rest)
        elif kind == "client":
            result = worker_client(rest[0], rest[1], int(rest[2]), int(rest[3]))
        else:
            result = worker_inspect(int(rest[0]), rest[1], *rest[2:4])
        sys.stdout.write(json.dumps(result, default=str) + "\n")
        return 0
    sys.path.insert(0, str(REPO))
    return main_bench(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
