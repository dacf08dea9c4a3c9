"""Model clients at the limit (issue 33): client CPU per request and the latency-bound run.

    python bench/client_cpu_bench.py [--repeats 3] [--label after] [--kinds openai,anthropic]

Against the loopback mock provider (`evalh.mock.mock_provider`, own process, replies after
50 ms), for the `openai` and `anthropic` kinds:

* `send`: evalh's backend `send` alone, 1,000 requests at 64 in flight, in a fresh
  interpreter (imports outside the clock). *CPU per request* = the client process's CPU
  time (user + system) over 1,000.
* `run`: `evalh run` of a 1,000-case suite with that target at 64 in flight, spawn to exit
  (*whole*: interpreter start, imports, dataset, run, document) and the run's own span
  (*in run*: first case to last result). *of ideal* = ideal / measured, ideal = 1,000 ×
  50 ms / 64 = 0.781 s.

Each row is the median of `--repeats` runs. The load average (`os.getloadavg()`, 1 min)
is recorded with every run: the machine these figures come from is shared and busy, so a
row is only comparable to another row measured at a similar load. Results are appended to
`client_cpu_results.json` under `--label`; `client_cpu_results.md` is written by hand from it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "client_cpu"
N = 1000
IN_FLIGHT = 64
LATENCY_S = 0.05


def worker_send(provider: str, base_url: str) -> dict[str, Any]:
    import asyncio

    import aiohttp  # noqa: F401  (imports outside the clock)
    import anthropic  # noqa: F401

    from evalh.providers.base import ChatRequest, ProviderConfig
    from evalh.providers.clients import _provider_module

    config = ProviderConfig(provider=provider, model="m",
                            base_url=base_url + ("/v1" if provider == "openai" else ""))
    backend = _provider_module(config).make_backend(config, "k")
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=16)

    async def main() -> None:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one() -> None:
            async with gate:
                await backend.send(request)

        await one()  # the connection pool and lazy imports warmed outside the clock
        t0, cpu0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one() for _ in range(N)))
        out["wall_s"], out["cpu_s"] = time.perf_counter() - t0, time.process_time() - cpu0
        await backend.aclose()

    out: dict[str, Any] = {}
    asyncio.run(main())
    return out


def write_suite(kind: str, base_url: str) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    data = WORK / "cases.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps({"id": f"c{i:05d}", "input": {"q": f"question {i}"},
                                            "expected": "ok"}) + "\n" for i in range(N)))
    url = base_url if kind == "anthropic" else f"{base_url}/v1"
    path = WORK / f"{kind}.toml"
    path.write_text(
        f"[evalh]\nconcurrency = {IN_FLIGHT}\ntimeout_s = 60\n\n[suites.b]\ndataset = \"cases.jsonl\"\n"
        'scorers = [{ type = "exact" }]\n\n[suites.b.target]\n'
        f'kind = "{kind}"\nmodel = "bench-model"\nbase_url = "{url}"\napi_key_env = "BENCH_API_KEY"\n'
        f'prompt = "{{{{ input.q }}}}"\nmax_tokens = 16\nmax_in_flight = {IN_FLIGHT}\n',
        encoding="utf-8")
    return path


def run_evalh(config: Path) -> dict[str, Any]:
    runs = WORK / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    load = os.getloadavg()[0]
    evalh = shutil.which("evalh") or "evalh"
    t0 = time.perf_counter()
    proc = subprocess.run([evalh, "run", "--config", str(config), "--runs-dir", str(runs), "-q", "--no-cache"],
                          cwd=WORK, env={**os.environ, "BENCH_API_KEY": "k"}, capture_output=True,
                          text=True, check=False)
    whole = time.perf_counter() - t0
    doc = next(runs.glob("*.json"), None) if runs.exists() else None
    if doc is None:
        doc = next(runs.rglob("run.json"), None) if runs.exists() else None
    if doc is None:
        raise RuntimeError(f"no run document: {proc.stdout[-500:]} {proc.stderr[-2000:]}")
    run = json.loads(doc.read_text())
    from datetime import datetime

    span = (datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])).total_seconds()
    agg = run["suites"]["b"]["aggregate"]
    if agg["n"] != N or agg["errored"]:
        raise RuntimeError(f"run did not succeed: n={agg['n']} errored={agg['errored']}")
    return {"whole_s": whole, "span_s": span, "load": load, "passed": agg["passed"]}


def run_send(kind: str, base_url: str) -> dict[str, Any]:
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, __file__, "_send", kind, base_url],
                          capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load"] = load
    return result


def main(argv: list[str]) -> int:
    if argv[:1] == ["_send"]:
        print(json.dumps(worker_send(argv[1], argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="now")
    parser.add_argument("--kinds", default="openai,anthropic")
    parser.add_argument("--only", choices=["send", "run"], action="append")
    args = parser.parse_args(argv)
    server = subprocess.Popen([sys.executable, "-m", "evalh.mock.mock_provider", "--port", "0",
                               "--latency-ms", str(LATENCY_S * 1000), "--max-recorded", "100"],
                              stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    base_url = server.stderr.readline().strip().rsplit(" ", 1)[-1]
    rows: dict[str, Any] = {}
    ideal = N * LATENCY_S / IN_FLIGHT
    try:
        for kind in args.kinds.split(","):
            if not args.only or "send" in args.only:
                runs = [run_send(kind, base_url) for _ in range(args.repeats)]
                cpu_ms = statistics.median(r["cpu_s"] for r in runs) / N * 1000
                rows[f"send/{kind}"] = {"cpu_ms_per_request": cpu_ms, "runs": runs}
                print(f"send {kind}: {cpu_ms:.3f} ms CPU/request, loads "
                      f"{[round(r['load'], 1) for r in runs]}", file=sys.stderr)
            if not args.only or "run" in args.only:
                cfg = write_suite(kind, base_url)
                runs = [run_evalh(cfg) for _ in range(args.repeats)]
                whole = statistics.median(r["whole_s"] for r in runs)
                span = statistics.median(r["span_s"] for r in runs)
                rows[f"run/{kind}"] = {"whole_s": whole, "span_s": span, "of_ideal_whole": ideal / whole,
                                       "of_ideal_in_run": ideal / span, "runs": runs}
                print(f"run {kind}: whole {whole:.2f}s ({ideal / whole:.0%}), in run {span:.2f}s "
                      f"({ideal / span:.0%}), loads {[round(r['load'], 1) for r in runs]}", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=10)
    out_path = HERE / "client_cpu_results.json"
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    results.setdefault(args.label, {}).update(rows)
    results[args.label]["_at"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    out_path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
