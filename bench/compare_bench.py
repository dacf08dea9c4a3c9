"""`evalh compare` on two runs of 100,000 cases each: time and peak memory.

    python bench/compare_bench.py                 # writes bench/compare_results.md
    python bench/compare_bench.py --cases 20000   # a smaller pass
    python bench/compare_bench.py --repeats 1

Two synthetic run documents are written to bench/.work/compare/ (ignored by git). Each has
two suites of half the cases: `gate` (deterministic, pass/fail, 0.2 % of the cases flip in
the candidate) and `live` (stochastic, graded scores, latency, tokens and cost; the
candidate is a little worse). Every result carries what a real one does: input, expected,
output text, one score, digests, usage.

Measured, each in a fresh interpreter (so one measurement's imports and caches do not help
another), median of `--repeats`:

1. library: `RunStore.load` of both runs, then `compare_runs` — wall time of each step and
   the peak RSS of the process (`ru_maxrss`);
2. end to end: `evalh compare BASE CANDIDATE` as a subprocess, for each output format and
   with `--junit-xml` — wall time from spawn to exit and the child's peak RSS (`wait4`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work" / "compare"
BASE_ID = "20260101T000000000Z-b0b0b0"
CAND_ID = "20260101T000100000Z-c0c0c0"


# --------------------------------------------------------------------------- data


def _result(i: int, suite: str, passed: bool, score: float, rng: random.Random, worse: float) -> dict[str, Any]:
    cid = f"{suite}.case-{i:06d}"
    text = f"answer {i} " + "lorem ipsum dolor sit amet " * 3
    row: dict[str, Any] = {
        "case_id": cid,
        "case_digest": hashlib.sha256(cid.encode()).hexdigest(),
        "arm": "default",
        "attempt": 0,
        "status": "passed" if passed else "failed",
        "score": score,
        "scores": [{"scorer": "exact" if suite == "gate" else "graded", "value": score,
                    "passed": passed}],
        "input": {"text": f"question {i}", "context": "some context " * 4},
        "expected": "accept" if i % 2 else "reject",
        "metadata": {"split": "test", "group": f"g{i % 500}"},
        "output": text,
        "output_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "latency_ms": None,
        "tokens_in": None,
        "tokens_out": None,
        "cost_usd": None,
    }
    if suite == "live":
        tokens_out = rng.randint(80, 400)
        row["latency_ms"] = rng.lognormvariate(6.0, 0.4) * (1 + worse)
        row["tokens_in"] = 600
        row["tokens_out"] = tokens_out
        row["cost_usd"] = (600 * 3 + tokens_out * 15) / 1e6
    return row


def _run(run_id: str, n: int, candidate: bool) -> dict[str, Any]:
    half = n // 2
    rng = random.Random(1 if candidate else 0)
    truth = random.Random(42)  # the same cases in both runs
    gate, live = [], []
    for i in range(half):
        ok = truth.random() < 0.95
        if candidate and i % 500 == 7:
            ok = not ok  # 0.2 % of deterministic cases flip
        gate.append(_result(i, "gate", ok, float(ok), rng, 0.0))
    for i in range(n - half):
        difficulty = truth.uniform(-0.2, 0.2)
        score = min(1.0, max(0.0, 0.72 + difficulty - (0.01 if candidate else 0.0) + rng.gauss(0, 0.1)))
        live.append(_result(i, "live", score >= 0.5, score, rng, 0.05 if candidate else 0.0))

    def suite(regime: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
        return {"regime": regime, "target": {"kind": "python", "callable": "bench:target"},
                "dataset": {"path": "datasets/x.jsonl", "sha256": "0" * 64, "cases": len(cases)},
                "aggregate": {}, "arms": {}, "cases": cases}

    return {
        "schema": "evalh.run/1", "run_id": run_id, "label": "candidate" if candidate else "base",
        "status": "complete", "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:10:00Z",
        "git": {"sha": "c" * 40 if candidate else "b" * 40, "dirty": False, "branch": "main"},
        "environment": {"evalh": "0.1.0", "python": platform.python_version(), "platform": "bench"},
        "config": {"seed": 1, "suites": {"gate": {"regime": "deterministic"},
                                         "live": {"regime": "stochastic"}}},
        "suites": {"gate": suite("deterministic", gate), "live": suite("stochastic", live)},
        "summary": {},
    }


def write_runs(n: int) -> Path:
    """The two documents, written as evalh writes a run (`RunStore.write`: the streamed
    layout); a directory of an earlier pass's indented documents is written again."""
    from evalh.models import Run
    from evalh.store import RunStore

    runs = WORK / f"runs-{n}-streamed"
    runs.mkdir(parents=True, exist_ok=True)
    store = RunStore(runs)
    for run_id, cand in ((BASE_ID, False), (CAND_ID, True)):
        if not store.path_for(run_id).exists():
            store.write(Run.model_validate(_run(run_id, n, cand)))
    return runs


# --------------------------------------------------------------------------- workers


def _maxrss_mib(kib: int) -> float:
    return kib / 1024  # Linux reports KiB


def worker_library(runs: str, mode: str) -> dict[str, Any]:
    """Load both runs and compare them in this (fresh) process. `models`: `RunStore.load`
    (every result a model), which pauses the cycle collector itself (`evalh.gcpause`);
    `unpaused`: that pause taken out, so loading runs with the collector enabled, as it did
    before the store paused it; `facts`: `load_compared`, what `evalh compare` reads (the
    facts a comparison pairs, a chunk of lines at a time, into compact columns; the two
    documents one after the other here, not side by side)."""
    import contextlib
    import gc

    import evalh.store
    from evalh.core.compare.decide import compare_runs
    from evalh.core.compare.load import load_compared
    from evalh.store import RunStore

    store = RunStore(Path(runs))
    if mode == "unpaused":
        evalh.store.gc_paused = contextlib.nullcontext  # type: ignore[assignment]
    assert gc.isenabled()
    t0 = time.perf_counter()
    if mode == "facts":
        loaded = load_compared(store, BASE_ID, CAND_ID)
    else:
        base = store.load(BASE_ID)
        cand = store.load(CAND_ID)
    t1 = time.perf_counter()
    rss_loaded = _maxrss_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    cmp = loaded.compare() if mode == "facts" else compare_runs(base, cand)
    t2 = time.perf_counter()
    return {
        "load_s": t1 - t0, "compare_s": t2 - t1,
        "peak_rss_loaded_mib": rss_loaded,
        "peak_rss_mib": _maxrss_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
        "verdicts": {k: s.verdict for k, s in cmp.suites.items()},
    }


def _spawn(args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", COLUMNS="120")
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.stderr.close() if proc.stderr else None
    return {"wall_s": wall, "peak_rss_mib": _maxrss_mib(usage.ru_maxrss),
            "exit": os.waitstatus_to_exitcode(status), "stderr": stderr.strip()[-300:]}


def measure(n: int, repeats: int) -> dict[str, Any]:
    runs = write_runs(n)
    sizes = {p.name: p.stat().st_size for p in runs.glob("*.json")}
    out: dict[str, Any] = {"cases_per_run": n, "file_mib": {k: v / 2**20 for k, v in sizes.items()}}

    def median(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    for label, mode in (("library, as `evalh compare` reads: `load_compared`, the facts in compact columns", "facts"),
                        ("library, as `RunStore.load` loads (it pauses the collector)", "models"),
                        ("library, collector enabled while loading (the store's pause taken out)", "unpaused")):
        rows = []
        for _ in range(repeats):
            res = subprocess.run([sys.executable, __file__, "_worker", str(runs), mode],
                                 capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)),
                                 check=True)
            rows.append(json.loads(res.stdout))
        out[label] = {k: median(rows, k) for k in ("load_s", "compare_s", "peak_rss_loaded_mib", "peak_rss_mib")}
        out[label]["verdicts"] = rows[0]["verdicts"]
    cli = [sys.executable, "-m", "evalh.cli.main", "compare", BASE_ID, CAND_ID, "--runs-dir", str(runs)]
    junit = WORK / "compare.xml"
    for label, extra in (("evalh compare (table)", []), ("evalh compare --format json", ["--format", "json"]),
                         ("evalh compare --format markdown", ["--format", "markdown"]),
                         ("evalh compare --junit-xml PATH", ["--junit-xml", str(junit)])):
        rows = [_spawn(cli + extra) for _ in range(repeats)]
        bad = [r for r in rows if r["exit"] != 0]
        if bad:
            raise SystemExit(f"{label} failed: exit {bad[0]['exit']}: {bad[0]['stderr']}")
        out[label] = {"wall_s": median(rows, "wall_s"), "peak_rss_mib": median(rows, "peak_rss_mib")}
    return out


# --------------------------------------------------------------------------- report


def render(res: dict[str, Any], repeats: int, load: float) -> str:
    n = res["cases_per_run"]
    mib = ", ".join(f"{v:.0f} MiB" for v in res["file_mib"].values())
    lines = [
        "# `evalh compare` benchmark",
        "",
        "Reproduce with `python bench/compare_bench.py` (add `--cases N` for a smaller pass). "
        "Raw numbers: `compare_results.json`.",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.system().lower()}-{platform.machine()}; load average at start {load:.2f}; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; median of {repeats} run(s), "
        "each in a fresh interpreter.",
        "",
        f"Two run documents of {n:,} cases each (files: {mib}): `gate`, deterministic, "
        f"{n // 2:,} cases, 0.2 % flipped in the candidate; `live`, stochastic, {n - n // 2:,} "
        "cases with graded scores, latency, tokens and cost, the candidate slightly worse. "
        "Every result carries input, expected, output text, a score, digests and usage.",
        "",
        "## Library: the two runs loaded, then `compare_runs`",
        "",
        "| setting | load both | compare_runs | peak RSS after load | peak RSS |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key, row in res.items():
        if key.startswith("library"):
            lines.append(f"| {key} | {row['load_s']:.2f} s | {row['compare_s']:.2f} s | "
                         f"{row['peak_rss_loaded_mib']:.0f} MiB | {row['peak_rss_mib']:.0f} MiB |")
    verdicts = next(v["verdicts"] for k, v in res.items() if k.startswith("library"))
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in verdicts.items()) + ".", "",
              "## End to end: `evalh compare BASE CANDIDATE`, spawn to exit", "",
              "| command | wall | peak RSS |", "| --- | ---: | ---: |"]
    for key, row in res.items():
        if key.startswith("evalh"):
            lines.append(f"| `{key}` | {row['wall_s']:.2f} s | {row['peak_rss_mib']:.0f} MiB |")
    lines += ["", "Peak RSS is `ru_maxrss` (the process's high-water mark, interpreter included); "
              "the end-to-end figures are the child's own, from `wait4`.", ""]
    lib = [v for k, v in res.items() if "RunStore.load" in k or "pause taken out" in k]
    if len(lib) == 2:
        ratio = lib[1]["load_s"] / lib[0]["load_s"]
        extra = lib[0]["peak_rss_mib"] - lib[0]["peak_rss_loaded_mib"]
        lines += [
            "Notes: `evalh compare` (the first row, and every end-to-end row but JUnit's) reads "
            "only what a comparison pairs, into arrays (`evalh.core.compare.facts`); the API's "
            "`compare_runs` on two runs loaded whole (the other two rows, and `--junit-xml`, "
            "which quotes outputs) holds every result as a pydantic model; "
            + (f"`compare_runs` adds {extra:.0f} MiB on top of them. " if extra >= 1
               else "`compare_runs` does not raise the peak measurably. ")
            + "With the cycle collector running while loading (the store's own pause taken "
            f"out), loading took {ratio:.1f}× as long: every full collection walks the objects "
            "already loaded, and there are no cycles to find. `RunStore.load` pauses it while "
            "it parses and validates, and `compare_runs` while it works (`evalh.gcpause`).", ""]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        print(json.dumps(worker_library(sys.argv[2], sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    res = measure(args.cases, args.repeats)
    (HERE / "compare_results.json").write_text(json.dumps(res, indent=2) + "\n")
    (HERE / "compare_results.md").write_text(render(res, args.repeats, load))
    print((HERE / "compare_results.md").read_text())


if __name__ == "__main__":
    main()
