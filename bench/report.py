"""Turn bench/runner_results.json into bench/runner_results.md (see run_bench.py)."""

from __future__ import annotations

from typing import Any

AIM_OVERHEAD_RATIO = 20.0
AIM_ONE_CASE_S = 1.0
AIM_EFFICIENCY = 0.90


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:.3f} ms"


def _get(d: dict[str, Any], *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k, d.get(str(k)))  # json turns int keys into strings
    return d


def _per_case(entry: dict[str, Any] | None, n: int) -> float | None:
    wall = _get(entry or {}, n, "wall_s")
    return wall / n if wall is not None else None


def _marginal(entry: dict[str, Any] | None) -> float | None:
    a, b = _get(entry or {}, 1000, "wall_s"), _get(entry or {}, 10000, "wall_s")
    return (b - a) / 9000 if a is not None and b is not None else None


def _process(entry: dict[str, Any] | None, n: int) -> float | None:
    """Median whole-process seconds (spawn to exit of the worker) of the runs at `n` cases."""
    runs = _get(entry or {}, n, "runs") or []
    values = sorted(r["process_s"] for r in runs if r.get("process_s") is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("met" if ok else "**missed**")


def render_markdown(r: dict[str, Any]) -> str:
    m = r.get("machine", {})
    lines = [
        "# Runner benchmarks",
        "",
        "Reproduce with `python bench/run_bench.py` (add `--inspect-python PATH` when inspect_ai "
        "lives in another venv; `--quick` for a short pass). Raw numbers: `runner_results.json`.",
        "",
        f"Machine: {m.get('cpus')} CPUs, Python {m.get('python')}, {m.get('platform')}; "
        f"inspect_ai {m.get('inspect_ai') or 'not installed'}; load average at start "
        f"{m.get('load_at_start', 0):.2f}; {r.get('date')}"
        + (" (quick pass)" if r.get("quick") else ""),
        "",
    ]
    passes = r.get("passes") or {}
    if len({p["date"][:13] for p in passes.values()}) > 1:  # sections from different passes
        lines += ["Sections measured separately: " + "; ".join(
            f"{name} {p['date']} (load {p['load_at_start']:.2f})" for name, p in passes.items())
            + ". Each section is measured again alone with `python bench/run_bench.py --only NAME` "
            "(the others are kept from runner_results.json).", ""]
    lines += [
        "Harness time = wall time of the library call that loads the dataset, runs every case,"
        " scores it and writes the run (evalh `prepare_run` + `execute`, inspect_ai `eval()`),"
        " in a fresh interpreter, imports excluded. Each figure is the median of its runs.",
        "",
    ]
    o = r.get("overhead")
    if o:
        lines += [
            "## 1. Harness overhead per case, instant target",
            "",
            "| target | 1,000 cases | per case | 10,000 cases | per case | marginal per case |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        names = {
            "evalh_python": "evalh, Python callable (sync, in a worker thread)",
            "evalh_anthropic": "evalh, `anthropic` target → loopback mock (HTTP, official SDK on aiohttp)",
            "evalh_openai": "evalh, `openai` target → loopback mock (HTTP, aiohttp)",
            "inspect_ai": "inspect_ai, `mockllm/model` (in-process, no HTTP)",
            "inspect_ai_anthropic": "inspect_ai, `anthropic/…` provider → loopback mock (HTTP, official SDK)",
            "inspect_ai_openai": "inspect_ai, `openai/…` provider → loopback mock (HTTP, openai SDK)",
        }
        for key, label in names.items():
            e = o.get(key) or {}
            if not e:
                continue
            w1, w10 = _get(e, 1000, "wall_s"), _get(e, 10000, "wall_s")
            lines.append(
                f"| {label} | {w1:.2f} s | {_ms(_per_case(e, 1000))} | "
                + (f"{w10:.2f} s | {_ms(_per_case(e, 10000))} | {_ms(_marginal(e))} |" if w10 else "– | – | – |")
            )
        ins, py = o.get("inspect_ai") or {}, o.get("evalh_python") or {}
        rows = []
        for n in (1000, 10000):
            a, b = _per_case(ins, n), _per_case(py, n)
            if a and b:
                rows.append((n, a / b))
        lines.append("")
        if rows:
            ok = all(ratio >= AIM_OVERHEAD_RATIO for _, ratio in rows)
            lines.append(
                "In-library ratio inspect_ai / evalh (Python callable), per case: "
                + ", ".join(f"{ratio:.0f}x at {n:,}" for n, ratio in rows)
                + f" — aim ≥ {AIM_OVERHEAD_RATIO:.0f}x: {_verdict(ok)}."
            )
            mi, me = _marginal(ins), _marginal(py)
            if mi and me:
                lines.append(f"Marginal (10,000 − 1,000 cases) ratio: {mi / me:.0f}x.")
            for kind in ("anthropic", "openai"):
                e, same = o.get(f"evalh_{kind}") or {}, o.get(f"inspect_ai_{kind}") or {}
                a, b = _per_case(same, 1000), _per_case(e, 1000)
                if a and b:
                    lines.append(
                        f"Same HTTP workload, `{kind}`: inspect_ai's `{kind}` provider {a * 1000:.1f} ms per "
                        f"case against evalh's `{kind}` target {b * 1000:.2f} ms at 1,000 cases: "
                        f"{a / b:.0f}x — aim ≥ {AIM_OVERHEAD_RATIO:.0f}x: {_verdict(a / b >= AIM_OVERHEAD_RATIO)} "
                        "(both include the SDK's or client's own CPU per request)."
                    )
                a, b = _per_case(ins, 10000) or _per_case(ins, 1000), _per_case(e, 10000)
                if a and b:
                    lines.append(
                        f"With the `{kind}` model target over loopback HTTP (a real client, a server in "
                        f"another process on the same cores) evalh is still {a / b:.0f}x below "
                        "inspect_ai's in-process mock."
                    )
        else:
            lines.append("inspect_ai was not run: no ratio.")
        lines.append("")
        lines += [
            "### Whole process, same runs",
            "",
            "Spawn to exit of the same worker processes as the table above (interpreter start, "
            "imports, loading the dataset, running, writing the run and exiting): what a user "
            "waits for. Median of the same runs (`process_s` of each run in runner_results.json). "
            "The evalh worker is `prepare_run` + the runner in a fresh `python`, not the `evalh "
            "run` command, whose option parsing and rendering add a little.",
            "",
            "| target | 1,000 cases | 10,000 cases |",
            "| --- | ---: | ---: |",
        ]
        for key, label in names.items():
            e = o.get(key) or {}
            p1, p10 = _process(e, 1000), _process(e, 10000)
            if p1 is None and p10 is None:
                continue
            lines.append(f"| {label} | " + " | ".join("–" if v is None else f"{v:.2f} s" for v in (p1, p10)) + " |")
        whole = [(n, a / b) for n in (1000, 10000)
                 if (a := _process(ins, n)) and (b := _process(py, n))]
        lines.append("")
        if whole:
            lines.append(
                "Whole-process ratio inspect_ai / evalh (Python callable): "
                + ", ".join(f"{ratio:.0f}x at {n:,}" for n, ratio in whole)
                + f" — aim ≥ {AIM_OVERHEAD_RATIO:.0f}x: {_verdict(all(x >= AIM_OVERHEAD_RATIO for _, x in whole))}. "
                "Lower than the in-library ratio at 1,000 cases: each process pays its interpreter "
                "start and imports once, which weigh more in a short run."
            )
            lines.append("")
        lines += [str(note) for note in o.get("notes") or []] + ([""] if o.get("notes") else [])
    lat = r.get("latency")
    if lat:
        lines += [
            "## 2. Latency-bound: 1,000 cases, 50 ms per reply on loopback",
            "",
            "The mock provider (`evalh.mock.mock_provider`, `--latency-ms 50`) runs in its own "
            "process on the same 2 cores. *of ideal* is ideal / wall, ideal = cases × latency / "
            "in flight; *cases phase* uses the run's own span (first case to last result, without "
            "loading the plan and writing the document). *CPU per request* is the client process's "
            "CPU time (user + system, which includes the kernel's loopback delivery) over 1,000; "
            "*server CPU* the mock server's. Baseline rows run a client without evalh's runner.",
            "",
            "| client | reply latency | in flight | wall | ideal | of ideal | cases phase | CPU per request "
            "| server CPU per request | p50 latency |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        labels = {
            "sleep50": "evalh, Python async target sleeping 50 ms (no HTTP: the runner alone)",
            "anthropic": "evalh, `anthropic` target (official SDK on aiohttp) → mock",
            "openai": "evalh, `openai` target (aiohttp) → mock",
            "raw": "baseline: minimal asyncio HTTP/1.1 client → mock (the server's ceiling)",
            "httpx": "baseline: one `httpx.AsyncClient`, httpx's own pool → mock",
            "httpx8": "baseline: eight `httpx.AsyncClient`s, httpx's own pools → mock",
            "aiohttp": "baseline: one `aiohttp.ClientSession` → mock",
            "openai-minimal": "experiment: evalh, `openai` target on bench/minimal_client.py (not shipped) → mock",
            "backend-openai": "baseline: evalh's `openai` backend `send` alone (no runner) → mock",
            "backend-anthropic": "baseline: evalh's `anthropic` backend `send` alone (SDK, no runner) → mock",
        }

        def order(e: dict[str, Any]) -> tuple[Any, ...]:
            return (e.get("baseline", False), e.get("experiment", False), e.get("latency_s", 0.05),
                    e["target"], e["in_flight"])

        for e in sorted(lat.values(), key=order):
            runs = e.get("runs") or []
            span = [x["run_span_s"] for x in runs if x.get("run_span_s")]
            phase = f"{e['ideal_s'] / sorted(span)[len(span) // 2]:.0%}" if span else "–"
            lines.append(
                f"| {labels.get(e['target'], e['target'])} | {e.get('latency_s', 0.05) * 1000:.0f} ms"
                + (f" ({e['cases']:,} cases)" if e.get("cases", 1000) != 1000 else "") + " | "
                f"{e['in_flight']} | {e['wall_s']:.2f} s | {e['ideal_s']:.2f} s | {e['efficiency']:.0%} | "
                f"{phase} | {_cpu_per_request(runs, 'cpu_s')} | {_cpu_per_request(runs, 'server_cpu_s')} | "
                f"{statistics_p50(e)} |"
            )
        misses = [k for k, e in lat.items() if _in_aim(e) and e["efficiency"] < AIM_EFFICIENCY]
        lines += ["", f"Aim ≥ {AIM_EFFICIENCY:.0%} of ideal (evalh rows, 50 ms, 32 and 64 in flight): "
                  + ("met everywhere." if not misses else f"**missed** for {', '.join(misses)}."), ""]
        before = r.get("latency_before")
        if before:
            lines += [
                f"Before / after the changes listed under *Reading the numbers* (before: commit "
                f"{before['commit']}, load average {before['load']}; after: this pass):",
                "",
                "| evalh row | before: of ideal | after: of ideal | before: CPU per request | after: CPU per request |",
                "| --- | ---: | ---: | ---: | ---: |",
            ]
            for key, b in before["rows"].items():
                a = lat.get(key)
                if a is None:
                    continue
                lines.append(f"| {key} | {b['efficiency']:.0%} | {a['efficiency']:.0%} | {b['cpu_ms']:.2f} ms | "
                             f"{_cpu_per_request(a.get('runs') or [], 'cpu_s')} |")
            lines.append("")
    procs = r.get("procs")
    if procs:
        lines += [
            "### Over worker processes (`processes = N`, `evalh run --procs N`)",
            "",
            "The same workload (1,000 cases, 50 ms replies, the mock in its own process on the same "
            "2 cores), one suite's cases spread over N worker processes (`evalh.core.run.procs`), each "
            "row beside N = 1 of the same pass. *CPU per request* is split into the run's own process "
            "(the coordinator: loading the plan, handing out items, reading, journaling and keeping "
            "results, writing the document) and its workers (each with its own loop and client).",
            "",
            "| client | in flight | processes | wall | ideal | of ideal | cases phase | CPU per request: run's process "
            "| CPU per request: workers | server CPU per request | p50 latency |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        names = {"anthropic": "evalh, `anthropic` target (official SDK on aiohttp) → mock",
                 "openai": "evalh, `openai` target (aiohttp) → mock"}
        for e in sorted(procs.values(), key=lambda e: (e["target"], e["in_flight"], e["processes"])):
            runs = e.get("runs") or []
            span = [x["run_span_s"] for x in runs if x.get("run_span_s")]
            phase = f"{e['ideal_s'] / sorted(span)[len(span) // 2]:.0%}" if span else "–"
            lines.append(
                f"| {names.get(e['target'], e['target'])} | {e['in_flight']} | {e['processes']} | "
                f"{e['wall_s']:.2f} s | {e['ideal_s']:.2f} s | {e['efficiency']:.0%} | {phase} | "
                f"{_cpu_per_request(runs, 'cpu_s')} | {_cpu_per_request(runs, 'workers_cpu_s')} | "
                f"{_cpu_per_request(runs, 'server_cpu_s')} | {statistics_p50(e)} |"
            )
        lines += [""] + [str(note) for note in r.get("procs_notes") or []] + ([""] if r.get("procs_notes") else [])
    one = r.get("one_case")
    if one:
        e = one["evalh"]
        lines += [
            "## 3. One-case `evalh run`, process start to exit",
            "",
            f"evalh: mean {e['mean_s']:.3f} s, min {e['min_s']:.3f} s over {e['runs']} runs "
            f"({e['tool']}) — aim < {AIM_ONE_CASE_S:.0f} s: {_verdict(e['mean_s'] < AIM_ONE_CASE_S)}.",
        ]
        if one.get("inspect_ai"):
            i = one["inspect_ai"]
            lines.append(f"inspect_ai, one sample on mockllm: mean {i['mean_s']:.2f} s over {i['runs']} runs.")
        lines.append("")
    prog = r.get("progress")
    if prog:
        cost = (f"{prog['per_case_us']:.0f} µs per case" if prog["per_case_us"] >= 5
                else "no measurable cost (the difference is within run-to-run noise)")
        lines += [
            "## 4. Progress bar cost",
            "",
            f"{prog['cases']:,} instant cases with the rich progress bar drawn to a (forced) terminal: "
            f"{prog['progress_s']:.2f} s vs {prog['quiet_s']:.2f} s without it: {cost}. rich "
            "refreshes the bar at most 10 times a second from its own thread; a result only bumps "
            "counters.",
            "",
        ]
    lines += READING
    return "\n".join(lines)


READING = [
    "## Reading the numbers",
    "",
    "- Settings: evalh at `concurrency = 32`, cache off, one `exact` scorer; inspect_ai with its "
    "defaults but 32 connections, one `exact` scorer, and mock outputs that carry their usage (so "
    "it does not count tokens with tiktoken, which would only add to its time); its HTTP "
    "providers ask for 16 output tokens, without streaming. The machine is shared and its speed "
    "moves during a pass (the load average is recorded; the same row has moved by up to 15–20 % "
    "between passes of one afternoon): compare rows of one pass, not across passes.",
    "- Per case, evalh's time goes to the hand-off of a sync callable to a worker thread (an "
    "`async def` target costs about half as much: compare the *CPU per request* of the Python "
    "async row in section 2), validating the result, and the journal line written and flushed "
    "for every result — kept, since it is what makes `kill -9` lose at most the cases in flight.",
    "- Same HTTP workload (section 1): inspect_ai spends ~25–29 ms per sample through its "
    "`openai` and `anthropic` providers, evalh ~0.5–0.8 ms (`openai` target: 35–50x) and "
    "~1.5–1.8 ms (`anthropic` target: ~15x). The `anthropic` figure is bound by the official "
    "SDK, which the issue asks for and both harnesses pay: its request path costs ~1 ms of CPU "
    "per call even on its aiohttp transport and without its typed reply; evalh's own share "
    "of a case is ~0.3–0.4 ms (the `openai` row with aiohttp's ~0.3 ms taken out).",
    "- Latency-bound, the ceiling is the machine's, not only evalh's. 1,000 / 64 = 15.6 rounds "
    "of 50 ms take at least 16, so 98 % is the most anything gets at 64 in flight. The minimal "
    "client row (no evalh, ~0.1 ms of CPU per request) is what the mock server and the kernel's "
    "loopback allow on these 2 cores: 92–94 % at 32 and 87–92 % at 64 across passes. The runner "
    "alone (a Python target sleeping 50 ms: no HTTP) is within a few points of it; its remainder "
    "is ~45 ms of loading the plan and writing the document with fsync, and the post-processing "
    "(scoring, journal) of results that come back together, done one at a time on the loop.",
    "- Model targets are bound by the CPU a request costs on the one core an event loop uses: "
    "at 50 ms replies a client process has 1.56 ms of CPU per request at 32 in flight (640/s) "
    "and 0.78 ms at 64 (1,280/s), less the mock server's share of the machine, and a loop "
    "much over half busy delays the replies that arrive together. Measured per request: the "
    "runner ~0.2–0.25 ms; evalh's model-target layers (template, provider lookup, limits, "
    "retries, prices) ~0.05 ms with an instant backend; the kernel's loopback send and receive "
    "~0.1–0.15 ms; aiohttp ~0.3 ms; the `anthropic` SDK's request path another ~1 ms on top of "
    "its transport.",
    "- What changed since the previous session (before / after table): (1) the `openai` backend "
    "sends through aiohttp instead of httpx: httpx's pool rescans every pooled connection per "
    "request (encode/httpcore#1035: the `httpx` baseline rows, 7–29 % of ideal), and even "
    "with one pool per connection its client layer cost 1.1–1.6 ms per request; aiohttp's "
    "C-accelerated parser and pool cost ~0.3 ms. Its `trust_env` spent two thread hops per "
    "request (for proxies and `.netrc`), so the proxy is looked up once per backend instead, "
    "and no cookie jar is kept. (2) the `anthropic` backend uses the SDK's own aiohttp "
    "transport (`DefaultAioHttpClient`) and sends through the SDK's request path with the reply "
    "kept as JSON (`client.post(..., cast_to=object)`): ~1.4–1.8 ms per request against "
    "~2.6–3 ms with `messages.create` on the default httpx2 pool. (3) the runner freezes the "
    "objects that exist when the run starts (imports, config, plan: ~150,000 of them with the "
    "SDK loaded), so full collections during the run skip them (~0.1–0.15 ms per case). (4) "
    "the mock server moved from a thread per connection to one asyncio loop (0.15–0.2 ms of "
    "CPU per request); its ceiling (minimal client row) stayed where it was, within the noise.",
    "- The experiment row swaps a minimal keep-alive HTTP/1.1 client (bench/minimal_client.py: "
    "plain TCP, `Content-Length` replies only) into the `openai` backend: a near-free HTTP "
    "client would buy 4–8 points, not reach 90 % at 64 in flight, because the runner, the "
    "kernel and the mock server's share already fill the budget. It is not shipped: TLS, "
    "proxies, chunked and compressed replies are what aiohttp is for.",
    "- So the 90 % aim at 50 ms is met by the runner alone at 32 in flight and missed by the "
    "model targets: `openai` 80–83 % at 32 and 72–76 % at 64, `anthropic` 68–72 % and "
    "39–48 % (the SDK's CPU per request × 1,280/s is more than one core). On this machine the "
    "minimal client itself is at or under 92 % at 64 in flight.",
    "- What a user can do: keep `max_in_flight × CPU per request / latency` under ~0.5 of a "
    "core. Real providers answer in 0.5–30 s, not 50 ms: at 500 ms, 64 in flight is 128 "
    "requests/s, and both model targets hold 94–97 % of ideal over 3,000 cases (the 500 ms "
    "rows; what remains is the last partial round and opening 64 connections). Past one core, "
    "run suites in separate processes.",
    "",
]


def _in_aim(e: dict[str, Any]) -> bool:
    """The rows the issue's aim is about: evalh, 50 ms replies, 32 or 64 in flight."""
    return (not e.get("baseline") and not e.get("experiment") and e.get("latency_s", 0.05) == 0.05
            and e["in_flight"] in (32, 64))


def _cpu_per_request(runs: list[dict[str, Any]], key: str) -> str:
    """Median CPU seconds of `key` over the runs, per case (each run has `cases` or 1,000)."""
    values = sorted(x[key] / (x.get("cases") or 1000) for x in runs if x.get(key) is not None)
    return f"{values[len(values) // 2] * 1000:.2f} ms" if values else "–"


def statistics_p50(entry: dict[str, Any]) -> str:
    runs = entry.get("runs") or []
    values = sorted(x["latency_ms_p50"] for x in runs if x.get("latency_ms_p50") is not None)
    return f"{values[len(values) // 2]:.0f} ms" if values else "–"
