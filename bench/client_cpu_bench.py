"""Model clients at the limit (issue 33): client CPU per request and the latency-bound run.

    python bench/client_cpu_bench.py [--repeats 3] [--kinds openai,anthropic] [--procs 1,2]
        [--code before=DIR --code after=.]

Against the loopback mock provider (`evalh.mock.mock_provider`, own process, replies after
50 ms), for the `openai` and `anthropic` kinds:

* `send`: evalh's backend `send` alone, 1,000 requests at 64 in flight, in a fresh
  interpreter (imports outside the clock). *CPU per request* = the client process's CPU
  time (user + system) over 1,000.
* `run`: `evalh run` of a 1,000-case suite with that target at 64 in flight, spawn to exit
  (*whole*: interpreter start, imports, dataset, run, document) and the run's own span
  (*in run*: first case to last result). *of ideal* = ideal / measured, ideal = 1,000 ×
  50 ms / 64 = 0.781 s.
* `floor`: the same `evalh run` with one case: what a whole process pays whatever its
  cases (interpreter, imports, config, dataset, one request, the document). A 1,000-case
  whole process reaches at most ideal / (ideal + floor − 50 ms) of ideal.

The client's CPU (the `evalh` process and its children, from its wait status) and the mock
server's (from /proc, over the same span) are recorded with every run: both share this
machine's two cores. `--server-code DIR` serves from the mock provider of that tree (default
this checkout). Every tree measured is compiled first, as an install is (a tree without
`__pycache__` compiles every module in every process under `PYTHONDONTWRITEBYTECODE`).

Each row is the median of `--repeats` runs. `--code NAME=DIR` measures the evalh whose
package is in DIR (put first on `PYTHONPATH`; `.` is this checkout), and the variants are
measured in turn, A B A B, so that before and after see the same load. The load average
(`os.getloadavg()`, 1 min) is recorded with every run: the machine these figures come from
is shared and busy, so a row is only comparable to another row measured at a similar load.
Results go to `client_cpu_results.json` (the committed passes are renamed after their load);
`--render FILE` prints a pass's table for `client_cpu_results.md`.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER_PID: list[int] = []
"""The mock server's process id, once started."""
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


def worker_start(config: str) -> dict[str, Any]:
    """Worker start-up with `processes = 2`: from the moment the suite hands its items to
    worker processes (`run_in_processes` called) to each worker's first item, in seconds.
    The clients' imports happen inside that span (the run's process imports them before
    forking); `import_s` is how long those imports alone take in a fresh process."""
    os.environ["BENCH_API_KEY"] = "k"
    import aiohttp  # noqa: F401

    from evalh.config import load_config
    from evalh.core.run import entry, procs, runner
    from evalh.core.run.prepare import RunOptions, prepare_run
    from evalh.store import RunStore

    start = [0.0]
    parent = os.getpid()
    read, write = os.pipe()
    original_item, original_spread = runner.Runner.run_item, procs.run_in_processes
    seen: set[int] = set()

    async def run_item(self: Any, suite: Any, item: Any) -> Any:
        if os.getpid() != parent and os.getpid() not in seen:
            seen.add(os.getpid())
            os.write(write, f"{time.time() - start[0]:.4f}\n".encode())
        return await original_item(self, suite, item)

    async def run_in_processes(run: Any, suite: Any, items: Any) -> bool:
        start[0] = time.time()
        return await original_spread(run, suite, items)

    runner.Runner.run_item = run_item  # type: ignore[method-assign]
    procs.run_in_processes = run_in_processes
    runs = WORK / "runs_start"
    shutil.rmtree(runs, ignore_errors=True)
    prepared = prepare_run(load_config(config), RunOptions(seed=1, use_cache=False), runs)
    run = entry.run_plan(prepared.plan, RunStore(runs), None, results=False)
    os.close(write)
    firsts = [float(x) for x in os.read(read, 4096).decode().split()]
    agg = run.suites["b"].aggregate
    if agg.n != N or agg.errored:
        raise RuntimeError(f"run did not succeed: n={agg.n} errored={agg.errored}")
    return {"firsts_s": firsts}


def write_suite(kind: str, base_url: str, processes: int = 1, cases: int = N) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    data = WORK / ("cases.jsonl" if cases == N else f"cases{cases}.jsonl")
    if not data.exists():
        data.write_text("".join(json.dumps({"id": f"c{i:05d}", "input": {"q": f"question {i}"},
                                            "expected": "ok"}) + "\n" for i in range(cases)))
    url = base_url if kind == "anthropic" else f"{base_url}/v1"
    path = WORK / f"{kind}_p{processes}{'' if cases == N else f'_n{cases}'}.toml"
    path.write_text(
        f"[evalh]\nconcurrency = {IN_FLIGHT}\ntimeout_s = 60\nprocesses = {processes}\n\n[suites.b]\ndataset = \"{data.name}\"\n"
        'scorers = [{ type = "exact" }]\n\n[suites.b.target]\n'
        f'kind = "{kind}"\nmodel = "bench-model"\nbase_url = "{url}"\napi_key_env = "BENCH_API_KEY"\n'
        f'prompt = "{{{{ input.q }}}}"\nmax_tokens = 16\nmax_in_flight = {IN_FLIGHT}\n',
        encoding="utf-8")
    return path


def env_for(code: str) -> dict[str, str]:
    path = str(Path(code).resolve())
    return {**os.environ, "BENCH_API_KEY": "k", "PYTHONPATH": path}


def cpu_of(pid: int) -> float:
    """The CPU time (user + system, s) process `pid` has used so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_evalh(config: Path, code: str, procs: int, cases: int = N) -> dict[str, Any]:
    runs = WORK / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    load = os.getloadavg()[0]
    evalh = shutil.which("evalh") or "evalh"
    server_cpu = cpu_of(SERVER_PID[0]) if SERVER_PID else 0.0
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:  # a file, not a pipe: the run never waits on us
        proc = subprocess.Popen([evalh, "run", "--config", str(config), "--runs-dir", str(runs), "-q", "--no-cache"],
                                cwd=WORK, env=env_for(code), stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        whole = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = stderr = out.read()
    server_cpu = (cpu_of(SERVER_PID[0]) if SERVER_PID else 0.0) - server_cpu
    doc = next(runs.glob("*.json"), None) if runs.exists() else None
    if doc is None:
        doc = next(runs.rglob("run.json"), None) if runs.exists() else None
    if doc is None:
        raise RuntimeError(f"no run document: {stdout[-500:]} {stderr[-2000:]}")
    run = json.loads(doc.read_text())
    from datetime import datetime

    span = (datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])).total_seconds()
    agg = run["suites"]["b"]["aggregate"]
    if agg["n"] != cases or agg["errored"]:
        raise RuntimeError(f"run did not succeed: n={agg['n']} errored={agg['errored']}")
    # the client's CPU (the evalh process and its children, from its wait status) and the
    # mock server's over the same span: both share this machine's cores
    return {"whole_s": whole, "span_s": span, "load": load, "passed": agg["passed"],
            "cpu_s": usage.ru_utime + usage.ru_stime, "server_cpu_s": server_cpu}


def run_send(kind: str, base_url: str, code: str) -> dict[str, Any]:
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, __file__, "_send", kind, base_url],
                          capture_output=True, text=True, check=True, env=env_for(code))
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load"] = load
    return result


def run_instant(code: str, n: int = 10_000) -> dict[str, Any]:
    """`evalh run` of `n` cases of an instant sync Python target (the per-case path alone),
    spawn to exit, and the process's CPU (user + system, from the wait status)."""
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "bench_instant.py").write_text("def instant(inp):\n    return 'ok'\n", encoding="utf-8")
    data = WORK / f"instant{n}.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps({"id": f"c{i:06d}", "input": {"q": f"question {i}"},
                                            "expected": "ok"}) + "\n" for i in range(n)))
    cfg = WORK / f"instant{n}.toml"
    cfg.write_text(f'[evalh]\nconcurrency = 64\ntimeout_s = 60\n\n[suites.b]\ndataset = "{data.name}"\n'
                   'target = "bench_instant:instant"\nscorers = [{ type = "exact" }]\n', encoding="utf-8")
    runs = WORK / "runs_instant"
    shutil.rmtree(runs, ignore_errors=True)
    load = os.getloadavg()[0]
    evalh = shutil.which("evalh") or "evalh"
    t0 = time.perf_counter()
    proc = subprocess.Popen([evalh, "run", "--config", str(cfg), "--runs-dir", str(runs), "-q"], cwd=WORK,
                            env=env_for(code), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    whole = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    doc = next(runs.glob("*.json"))
    head = json.loads(doc.read_text())
    agg = head["suites"]["b"]["aggregate"]
    if agg["n"] != n or agg["passed"] != n:
        raise RuntimeError(f"instant run did not pass every case: {agg}")
    return {"whole_s": whole, "cpu_s": usage.ru_utime + usage.ru_stime, "load": load}


def run_start(kind: str, base_url: str, code: str) -> dict[str, Any]:
    load = os.getloadavg()[0]
    cfg = write_suite(kind, base_url, processes=2)
    proc = subprocess.run([sys.executable, __file__, "_start", str(cfg)], cwd=WORK,
                          capture_output=True, text=True, check=True, env=env_for(code))
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load"] = load
    return result


def render(results: dict[str, Any]) -> str:
    """The table of `client_cpu_results.json`, before and after side by side."""
    ideal = N * LATENCY_S / IN_FLIGHT
    lines = [
        "| measure | before | after | after / before | loads during the runs (before; after) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]

    def cell(key: str, field: str, fmt: str) -> tuple[str, float | None, str]:
        row = results.get(key)
        if row is None or field not in row:
            return "–", None, ""
        value = float(row[field])
        return fmt.format(value), value, ", ".join(f"{x:g}" for x in row["loads"])

    specs = []
    for kind in ("openai", "anthropic"):
        specs.append((f"client CPU per request, `{kind}` backend `send` (ms)", f"send/{kind}", "cpu_ms_per_request", "{:.3f}"))
    for kind in ("openai", "anthropic"):
        for procs in (1, 2):
            what = f"`{kind}`, processes = {procs}"
            specs.append((f"1,000 × 50 ms at 64 in flight, {what}: whole process (s)", f"run/{kind}/p{procs}", "whole_s", "{:.2f}"))
            specs.append((f"… of ideal ({ideal:.3f} s), whole process", f"run/{kind}/p{procs}", "of_ideal_whole", "{:.0%}"))
            specs.append(("… of ideal, in run (first case to last result)", f"run/{kind}/p{procs}", "of_ideal_in_run", "{:.1%}"))
            specs.append(("… the run's CPU, whole process (s)", f"run/{kind}/p{procs}", "cpu_s", "{:.2f}"))
            specs.append(("… the mock server's CPU over the run (s)", f"run/{kind}/p{procs}", "server_cpu_s", "{:.2f}"))
    for kind in ("openai", "anthropic"):
        specs.append((f"one-case run, `{kind}`, whole process (s): start-up, imports, document", f"floor/{kind}", "whole_s", "{:.3f}"))
        specs.append(("… its CPU (s)", f"floor/{kind}", "cpu_s", "{:.3f}"))
        specs.append(("… so a 1,000-case whole process reaches at most ideal / (ideal + that − 50 ms)",
                      f"floor/{kind}", "best_of_ideal_whole", "{:.0%}"))
    for kind in ("openai", "anthropic"):
        specs.append((f"worker start-up, processes = 2, `{kind}`: hand-off to the last worker's first item (s)",
                      f"start/{kind}/p2", "start_s", "{:.3f}"))
    specs.append(("10,000 instant sync Python cases: whole process (s)", "instant/10000", "whole_s", "{:.2f}"))
    specs.append(("10,000 instant sync Python cases: process CPU (s)", "instant/10000", "cpu_s", "{:.2f}"))
    for label, key, field, fmt in specs:
        b_text, b_val, b_loads = cell(f"before/{key}", field, fmt)
        a_text, a_val, a_loads = cell(f"after/{key}", field, fmt)
        if b_val is None and a_val is None:
            continue  # not measured in this pass
        ratio = f"{a_val / b_val:.2f}" if a_val is not None and b_val else "–"
        lines.append(f"| {label} | {b_text} | {a_text} | {ratio} | {b_loads}; {a_loads} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--render"]:  # --render [FILE]: a pass's table
        path = Path(argv[1]) if len(argv) > 1 else HERE / "client_cpu_results.json"
        print(render(json.loads(path.read_text())), end="")
        return 0
    if argv[:1] == ["_send"]:
        print(json.dumps(worker_send(argv[1], argv[2])))
        return 0
    if argv[:1] == ["_start"]:
        print(json.dumps(worker_start(argv[1])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default="openai,anthropic")
    parser.add_argument("--procs", default="1")
    parser.add_argument("--code", action="append", help="NAME=DIR (default: now=.)")
    parser.add_argument("--only", choices=["send", "run", "start", "instant", "floor"], action="append")
    parser.add_argument("--instant-cases", type=int, default=10_000)
    parser.add_argument("--server-code", default=".", help="DIR: the evalh whose mock provider serves (default: this checkout)")
    args = parser.parse_args(argv)
    codes = dict(c.split("=", 1) for c in (args.code or ["now=."]))
    for code in {*codes.values(), args.server_code}:
        # as installed (pip compiles): a tree without __pycache__ would compile every module in
        # every process under PYTHONDONTWRITEBYTECODE
        compileall.compile_dir(Path(code) / "evalh", quiet=1)
    server = subprocess.Popen([sys.executable, "-m", "evalh.mock.mock_provider", "--port", "0",
                               "--latency-ms", str(LATENCY_S * 1000), "--max-recorded", "100"],
                              stderr=subprocess.PIPE, text=True, env=env_for(args.server_code))
    SERVER_PID.append(server.pid)
    assert server.stderr is not None
    base_url = server.stderr.readline().strip().rsplit(" ", 1)[-1]
    raw: dict[str, list[dict[str, Any]]] = {}
    ideal = N * LATENCY_S / IN_FLIGHT
    try:
        for _ in range(args.repeats):
            if args.only and "instant" in args.only:
                for name, code in codes.items():
                    raw.setdefault(f"{name}/instant/{args.instant_cases}", []).append(
                        run_instant(code, args.instant_cases))
            for kind in args.kinds.split(","):
                for name, code in codes.items():  # A B A B: the variants side by side
                    if args.only == ["instant"]:
                        break
                    if not args.only or "send" in args.only:
                        raw.setdefault(f"{name}/send/{kind}", []).append(run_send(kind, base_url, code))
                    if not args.only or "floor" in args.only:  # the same run, one case
                        cfg = write_suite(kind, base_url, 1, cases=1)
                        raw.setdefault(f"{name}/floor/{kind}", []).append(run_evalh(cfg, code, 1, cases=1))
                    if not args.only or "start" in args.only:
                        raw.setdefault(f"{name}/start/{kind}/p2", []).append(run_start(kind, base_url, code))
                    if not args.only or "run" in args.only:
                        for procs in (int(p) for p in args.procs.split(",")):
                            cfg = write_suite(kind, base_url, procs)
                            raw.setdefault(f"{name}/run/{kind}/p{procs}", []).append(run_evalh(cfg, code, procs))
    finally:
        server.terminate()
        server.wait(timeout=10)
    rows: dict[str, Any] = {}
    for key, runs in raw.items():
        loads = [round(r["load"], 1) for r in runs]
        if "/instant/" in key:
            whole = statistics.median(r["whole_s"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            rows[key] = {"whole_s": whole, "cpu_s": cpu, "loads": loads, "runs": runs}
            cases = int(key.rsplit("/", 1)[1])
            print(f"{key}: whole {whole:.2f}s, CPU {cpu:.2f}s ({cpu / cases * 1000:.3f} ms a case), loads {loads}",
                  file=sys.stderr)
        elif "/start/" in key:
            slowest = statistics.median(max(r["firsts_s"]) for r in runs)
            rows[key] = {"start_s": slowest, "loads": loads, "runs": runs}
            print(f"{key}: last worker's first item {slowest:.3f} s after the hand-off began, loads {loads}",
                  file=sys.stderr)
        elif "/floor/" in key:
            whole = statistics.median(r["whole_s"] for r in runs)
            best = ideal / (ideal + whole - LATENCY_S)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            rows[key] = {"whole_s": whole, "best_of_ideal_whole": best, "cpu_s": cpu, "loads": loads, "runs": runs}
            print(f"{key}: one-case run, whole {whole:.3f}s, CPU {cpu:.3f}s: a whole process reaches at most "
                  f"{best:.1%} of ideal, loads {loads}", file=sys.stderr)
        elif "/send/" in key:
            cpu_ms = statistics.median(r["cpu_s"] for r in runs) / N * 1000
            rows[key] = {"cpu_ms_per_request": cpu_ms, "loads": loads, "runs": runs}
            print(f"{key}: {cpu_ms:.3f} ms CPU/request, loads {loads}", file=sys.stderr)
        else:
            whole = statistics.median(r["whole_s"] for r in runs)
            span = statistics.median(r["span_s"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            server_cpu = statistics.median(r["server_cpu_s"] for r in runs)
            rows[key] = {"whole_s": whole, "span_s": span, "of_ideal_whole": ideal / whole,
                         "of_ideal_in_run": ideal / span, "cpu_s": cpu, "server_cpu_s": server_cpu,
                         "loads": loads, "runs": runs}
            print(f"{key}: whole {whole:.3f}s ({ideal / whole:.1%}), in run {span:.3f}s ({ideal / span:.1%}), "
                  f"CPU {cpu:.2f}s, server CPU {server_cpu:.2f}s, loads {loads}", file=sys.stderr)
    out_path = HERE / "client_cpu_results.json"
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    results.update(rows)
    results["_at"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    out_path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
