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
            f"{name} {p['date']} (load {p['load_at_start']:.2f})" for name, p in passes.items()) + ".", ""]
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
            "evalh_anthropic": "evalh, `anthropic` target → loopback mock (HTTP, official SDK)",
            "evalh_openai": "evalh, `openai` target → loopback mock (HTTP, httpx)",
            "inspect_ai": "inspect_ai, `mockllm/model` (in-process, no HTTP)",
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
                "Ratio inspect_ai / evalh (Python callable), per case: "
                + ", ".join(f"{ratio:.0f}x at {n:,}" for n, ratio in rows)
                + f" — aim ≥ {AIM_OVERHEAD_RATIO:.0f}x: {_verdict(ok)}."
            )
            mi, me = _marginal(ins), _marginal(py)
            if mi and me:
                lines.append(f"Marginal (10,000 − 1,000 cases) ratio: {mi / me:.0f}x.")
            for kind in ("anthropic", "openai"):
                e = o.get(f"evalh_{kind}") or {}
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
    lat = r.get("latency")
    if lat:
        lines += [
            "## 2. Latency-bound: 1,000 cases, 50 ms per reply on loopback",
            "",
            "The mock provider (`evalh.testing.mock_provider`, `--latency-ms 50`) runs in its own "
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
            "anthropic": "evalh, `anthropic` target (official SDK) → mock",
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
                f"Before / after the provider-layer changes (before: commit {before['commit']}, "
                f"load average {before['load']}; after: this pass). Before, the `anthropic` rows "
                "counted `import anthropic` (~1.2 s) in their wall and CPU time:",
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
    "defaults, one `exact` scorer, and mock outputs that carry their usage (so it does not count "
    "tokens with tiktoken, which would only add to its time). The machine is shared: the load "
    "average is recorded, and figures move by ±10 % between passes.",
    "- Per case, evalh's time goes to the hand-off of a sync callable to a worker thread (an "
    "`async def` target costs about half as much: compare the *CPU per request* of the Python "
    "async row in section 2), validating the result, and the journal line written and flushed "
    "for every result — kept, since it is what makes `kill -9` lose at most the cases in flight.",
    "- Latency-bound, the runner alone (Python async target): 1,000 / 64 = 15.6 rounds of 50 ms "
    "take at least 16, so 98 % is the ceiling at 64 in flight; the rest is the post-processing "
    "(scoring, journal) of results that come back together, done one at a time on the event "
    "loop, and ~30 ms of loading the plan and writing the document with fsync.",
    "- The mock server itself (threads, one per connection, in Python) spends ~0.4–0.6 ms of CPU "
    "per request on the other core and caps what any client gets at about 86–94 % of ideal: see "
    "the minimal-client baseline. It is not what holds the model targets back.",
    "- Model targets are bound by the CPU their client spends per request, on the one core an "
    "event loop can use. At 50 ms replies a client process has 1.56 ms of CPU per request at 32 "
    "in flight (640 requests/s) and 0.78 ms at 64 (1,280/s) — less in practice, since the mock "
    "server and the other processes of a shared 2-core machine take their share. Measured "
    "(py-spy and cProfile; the baseline rows isolate each layer): the runner ~0.2–0.3 ms (the "
    "sleeping target); httpx on sharded connections ~1.0–1.5 ms (h11 and httpcore's per-request "
    "state machine, ~11 anyio cancel scopes per request, headers and body written with two "
    "`send` calls, httpx's request/response/cookie models); the `anthropic` SDK ~1.8–2.6 ms "
    "(httpx2 and httpcore2, plus building the request options and constructing the reply's "
    "pydantic models, ~0.8 ms). evalh's own wrapper (cache key, retries, limits, prices) is "
    "under 2 % of the profile. So at 64 in flight the `openai` target needs ~1.8 ms × 1,280/s "
    "≈ 2.3 cores and the `anthropic` target ~3 ms × 1,280/s ≈ 3.8 cores; at 32, ~1.2 and ~1.9 "
    "cores. 90 % of ideal at 50 ms is out of reach for both on this machine with one client "
    "process, whatever the runner does; only the minimal client (0.17 ms) gets there.",
    "- What changed (before / after table): httpcore's connection pool rescanned every pooled "
    "connection on each request and each response close (`_assign_requests_to_connections` "
    "asks each whether it is idle, expired, readable; encode/httpcore#1035), ~10 ms of CPU per "
    "request at 64 connections. The `openai` backend now sends through `evalh.providers."
    "transport.ConnectionShards`: one single-connection pool per connection, taken from and "
    "returned to a free list, so the cost per request no longer grows with the number in flight "
    "(`openai` at 64: 7 % → ~40 %, 11 → ~1.8 ms per request). The `anthropic` SDK is built on "
    "httpx2, whose pool does not have that cost: shards measured no faster there (A/B, "
    "~1.8–1.9 ms either way), so it keeps the SDK's client; its rows improved because "
    "`import anthropic` (~1.2 s) is no longer inside the clock (imports are outside it "
    "everywhere else). The runner-alone rows are untouched by these changes; they move with "
    "the load and with the runner's own edits between passes.",
    "- Every request's own CPU is also on its latency path (build, send, parse: ~2–3 ms of a "
    "50 ms round trip), and at 16 in flight both model targets already use most of a core "
    "(16 / 50 ms = 320 requests/s × 2.4–3.3 ms), hence 77–78 % there.",
    "- What a user can do: keep `max_in_flight × CPU per request / latency` under ~0.7 of a "
    "core. Real providers answer in 0.5–30 s, not 50 ms: at 500 ms, 64 in flight is 128 "
    "requests/s, ~0.3–0.4 of a core for either target, and both hold 93–94 % of ideal over "
    "3,000 cases (the 500 ms rows; what remains is the last partial round, opening 64 "
    "connections, and the mock's ~6 ms over its 500 ms). By that rule `max_in_flight` can go "
    "to ~100 (`anthropic`) or ~150 (`openai`) at 500 ms, ~10–15 at 50 ms. Past one core, run "
    "suites in separate processes.",
    "- Left to do for the 50 ms case: a leaner HTTP/1.1 client for the OpenAI-compatible backend "
    "(the minimal client's 0.17 ms shows the room: TLS, proxies, chunked replies and httpx's "
    "error types would have to be kept), or sharding a run's cases over processes.",
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
