"""`evalh runs` over 10, 100 and 500 large run documents: wall time and peak memory.

    git worktree add --detach bench/.work/evalh-old 4ed7862~1      # the code before the header reader
    python bench/runs_bench.py --old bench/.work/evalh-old         # writes bench/runs_results.md
    python bench/runs_bench.py --old bench/.work/evalh-old --counts 10 100 --repeats 1
    python bench/runs_bench.py --render                     # the page again from runs_results.json

Run documents (about 1 MiB each: two suites of 500 cases with input, output, scores and
usage) are written to bench/.work/runs/ (ignored by git), in two layouts:

- `new`: as evalh writes them now (`summary` before `suites`);
- `old`: as versions before the header reader wrote them (`suites` before `summary`).

Each directory of N runs is hard links to the first N documents of the 500. For each
(code, layout, N, `-n`) the command `evalh runs --runs-dir DIR --json [-n 1]` is spawned
`--repeats` times (`-n` unset is the default, the newest 20; `-n 100000` lists every
run); reported are the median wall time (spawn to exit) and the child's peak
RSS (`ru_maxrss` from `wait4`). "before" runs the module `evalh.cli.main` from the `--old`
checkout (PYTHONPATH), "after" from this one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work" / "runs"


def _document(rng: random.Random, cases: int) -> dict:
    sys.path.insert(0, str(REPO))
    from evalh.core.results.aggregate import aggregate
    from evalh.core.results.outcome import summarize
    from evalh.models import (
        CaseResult,
        DatasetInfo,
        EnvironmentInfo,
        GitInfo,
        Run,
        Score,
        SuiteResult,
    )

    suites = {}
    for name, regime in (("gate", "deterministic"), ("live", "stochastic")):
        results = []
        for i in range(cases // 2):
            ok = rng.random() < 0.9
            text = " ".join(rng.choice(["revenue", "grew", "by", "12%", "in", "Q3", "[1]", "the"]) for _ in range(60))
            results.append(CaseResult(
                case_id=f"{name}.{i:05d}", case_digest=f"{rng.getrandbits(256):064x}",
                status="passed" if ok else "failed", score=1.0 if ok else 0.0,
                scores=[Score(scorer="exact", value=1.0 if ok else 0.0, passed=ok, rationale="compared")],
                input={"question": text[:200], "sources": {"1": text}}, expected="accept",
                metadata={"split": "test", "stratum": "money"}, output={"verdict": "accept", "text": text[:300]},
                output_sha256=f"{rng.getrandbits(256):064x}", latency_ms=rng.uniform(50, 900),
                tokens_in=900, tokens_out=120, cost_usd=0.0012, started_at="2026-11-30T10:00:00.000Z",
            ))
        suites[name] = SuiteResult(
            regime=regime, target={"kind": "python", "callable": "examples.citecheck:check"},  # type: ignore[arg-type]
            dataset=DatasetInfo(path=f"datasets/{name}.jsonl", sha256="5eed" * 16, cases=len(results)),
            aggregate=aggregate(results), arms={"default": aggregate(results)}, cases=results,
        )
    run = Run(run_id="RUNID", label="bench", status="complete", started_at="2026-11-30T10:00:00.000Z",
              git=GitInfo(sha="ab" * 20, dirty=False, branch="main"),
              environment=EnvironmentInfo(evalh="0.1.0", python="3.11", platform="linux-x86_64"),
              seed=7, suites=suites)
    run.summary = summarize(run)
    return run.model_dump(mode="json", by_alias=True)


def prepare(total: int, counts: list[int], cases: int) -> dict[str, int]:
    import orjson

    raw = _document(random.Random(11), cases)
    new = orjson.dumps(raw, option=orjson.OPT_INDENT_2)
    summary, suites = raw.pop("summary"), raw.pop("suites")
    old = orjson.dumps({**raw, "suites": suites, "summary": summary}, option=orjson.OPT_INDENT_2)
    assert list(orjson.loads(new))[-1] == "suites" and list(orjson.loads(old))[-1] == "summary"
    sizes = {}
    for layout, data in (("new", new), ("old", old)):
        every = WORK / layout / "all"
        every.mkdir(parents=True, exist_ok=True)
        ids = [f"20261130T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}000Z-{i:06x}" for i in range(total)]
        for run_id in ids:
            path = every / f"{run_id}.json"
            if not path.exists():
                path.write_bytes(data.replace(b'"RUNID"', f'"{run_id}"'.encode()))
        for n in counts:
            d = WORK / layout / str(n)
            d.mkdir(exist_ok=True)
            for run_id in ids[:n]:
                link = d / f"{run_id}.json"
                if not link.exists():
                    os.link(every / link.name, link)
        sizes[layout] = len(data)
    return sizes


def _spawn(code: Path, runs_dir: Path, extra: list[str]) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [sys.executable, "-m", "evalh.cli.main", "runs", "--runs-dir", str(runs_dir), "--json", *extra]
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        out_path = WORK / "out.json"
        with out_path.open("wb") as fh:
            proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=fh, stderr=null)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss, len(json.loads(out_path.read_bytes()))


def _git_sha(code: Path) -> str:
    return subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"


def render(meta: dict, rows: list[list]) -> str:
    """The results page from the measurements (`runs_results.json`)."""
    mib = 1024
    by = {(r[0], r[1], r[2], r[3]): r for r in rows}
    top = max(r[2] for r in rows)
    low = min(r[2] for r in rows)
    summary = []
    for layout in ("old", "new"):
        b, a = by.get(("before", layout, top, "-n 100000")), by.get(("after", layout, top, "-n 100000"))
        a_low = by.get(("after", layout, low, "-n 100000"))
        if b and a and a_low:
            summary.append(
                f"- layout `{layout}`, all {top} runs listed: peak RSS {b[5] / mib:,.0f} MiB before, "
                f"{a[5] / mib:,.0f} MiB after ({a_low[5] / mib:,.0f} MiB at {low} runs); wall "
                f"{b[4]:.2f} s before, {a[4]:.2f} s after.")
    lines = [
        "# `evalh runs` benchmark",
        "",
        "Reproduce (the generated documents go to `bench/.work/runs/`, ignored by git):",
        "",
        "```bash",
        "git worktree add --detach bench/.work/evalh-old 4ed7862~1   # the code before the header reader",
        f"python bench/runs_bench.py --old bench/.work/evalh-old --repeats {meta['repeats']}",
        "```",
        "",
        "Raw numbers: `runs_results.json` (`--render` rewrites this page from it).",
        "",
        f"Machine: {meta['machine']}; load average at start {meta['load']:.2f} (the machine was shared: "
        f"wall times are noisy, peak memory is not); {meta['when']}. before = `{meta['before']}`, "
        f"after = `{meta['after']}`.",
        "",
        f"Each document: {meta['cases']:,} cases in two suites, {meta['size_mib']:.2f} MiB. "
        f"{top} documents: {top * meta['size_mib']:,.0f} MiB. Layout `old`: `suites` before `summary` "
        "(every document evalh wrote before this change); `new`: `summary` before `suites` (written now).",
        "",
        f"Command: `evalh runs --runs-dir DIR --json [-n N]`, spawned; wall time is the median of "
        f"{meta['repeats']}, peak RSS the highest child `ru_maxrss` (from `wait4`), interpreter included. "
        "`-n –`: the default (the newest 20); `-n 100000`: every run.",
        "",
        "## Summary",
        "",
        *summary,
        "- Before, every document was loaded and kept, so memory grew with the directory whatever `-n`; "
        "after, one header is read at a time (new layout: the bytes before `suites`; old layout: the "
        "suites' heads, their cases stepped over by a string search), and `-n N` opens only the newest "
        "N documents.",
        "",
        "## All measurements",
        "",
        "| code | layout | runs | -n | wall | peak RSS | listed |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for label, layout, n, extra, wall, rss, listed in rows:
        lines.append(f"| {label} | {layout} | {n} | {extra} | {wall:.2f} s | {rss / mib:,.0f} MiB | {listed} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, help="a checkout of the code before the change")
    ap.add_argument("--counts", type=int, nargs="+", default=[10, 100, 500])
    ap.add_argument("--cases", type=int, default=500, help="cases per document")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--output", type=Path, default=HERE / "runs_results.md")
    ap.add_argument("--render", action="store_true", help="only rewrite the page from runs_results.json")
    args = ap.parse_args()
    raw = HERE / "runs_results.json"
    if args.render:
        data = json.loads(raw.read_text())
        args.output.write_text(render(data["meta"], data["rows"]))
        return
    if args.old is None:
        ap.error("--old PATH is required to measure")

    sizes = prepare(max(args.counts), args.counts, args.cases)
    meta = {
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {sys.platform}-{platform.machine()}",
        "load": os.getloadavg()[0], "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "before": _git_sha(args.old), "after": _git_sha(REPO), "cases": args.cases,
        "size_mib": sizes["new"] / 2**20, "repeats": args.repeats,
    }
    rows = []
    for label, code in (("before", args.old.resolve()), ("after", REPO)):
        for layout in ("old", "new"):
            for n in args.counts:
                for extra in ([], ["-n", "1"], ["-n", "100000"]):
                    got = [_spawn(code, WORK / layout / str(n), extra) for _ in range(args.repeats)]
                    wall = statistics.median(g[0] for g in got)
                    rss = max(g[1] for g in got)
                    rows.append([label, layout, n, " ".join(extra) or "–", round(wall, 3), rss, got[0][2]])
                    print(rows[-1], file=sys.stderr, flush=True)
    raw.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    args.output.write_text(render(meta, rows))
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
