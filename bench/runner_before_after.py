"""Runner overhead before and after a change, in one pass: the runner bench's worker
(`bench/run_bench.py _worker evalh`: a fresh interpreter per run; harness time = prepare +
execute, imports excluded) on 10,000 and 1,000 instant cases (a sync Python callable, one
`exact` scorer, concurrency 32, cache off), alternating the two checkouts run by run so a
machine whose load moves during the pass weighs on both alike.

    git worktree add --detach bench/.work/evalh-old BEFORE
    git worktree add --detach bench/.work/evalh-new AFTER
    python bench/runner_before_after.py bench/.work/evalh-old bench/.work/evalh-new --repeats 5

Each checkout runs its own bench worker with its own evalh (PYTHONPATH); the work files go
to its bench/.work/runner/ (ignored by git). Prints one line per size: the median wall and
CPU time (user + system of the worker process, less sensitive to a loaded machine) of
each side, per case, and after / before.

`--cli`: whole process instead — `python -m evalh.cli.main run --config ... -q --seed 1`,
spawn to exit (interpreter start, imports, the run, writing the document, the process's
exit), what a user waits for; CPU is the child's user + system time (each run's user and
system time and context switches, voluntary + involuntary, are printed too). `--inline-too` adds a
third side, the after checkout with `inline = true` on the target (issue 18 item 4);
`--both-inline` a fourth, the before checkout with it too (when both have it: the change's
effect on the inline path, which the line's `after-inline` ratio is then taken against).

The machine's 1-minute load average is read before every run and printed with it, and its
range per side with each size's line: on a shared machine the load says which rows to trust.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_bench import inline_config  # noqa: E402  (bench/ is not a package)

SIZES = (10000, 1000)


def worker(tree: Path, n: int) -> dict[str, float]:
    work = tree / "bench" / ".work" / "runner"
    proc = subprocess.run(
        [sys.executable, str(tree / "bench" / "run_bench.py"), "_worker", "evalh", str(work / f"py{n}.toml"),
         str(work / "runs")],
        cwd=work, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=False,
    )
    shutil.rmtree(work / "runs", ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: worker failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["cases"] != n or result["status"] != "complete":
        raise RuntimeError(f"{tree}: unexpected result {result}")
    return {"wall_s": result["wall_s"], "cpu_s": result["cpu_s"]}


def cli(tree: Path, n: int, inline: bool) -> dict[str, float]:
    """`evalh run` of the runner bench's config, spawn to exit (see the module docstring)."""
    work = tree / "bench" / ".work" / "runner"
    config = work / f"py{n}.toml"
    if inline:
        config = inline_config(config)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalh.cli.main", "run", "--config", str(config), "--runs-dir", str(work / "runs"),
         "-q", "--seed", "1", "--no-cache"],
        cwd=work, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    docs = list((work / "runs").glob("*.json"))
    shutil.rmtree(work / "runs", ignore_errors=True)
    if proc.returncode != 0 or len(docs) != 1:
        raise RuntimeError(f"{tree}: evalh run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {"wall_s": wall, "cpu_s": user + system, "user_s": user, "sys_s": system,
            "switches": (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="whole process: evalh run, spawn to exit")
    ap.add_argument("--inline-too", action="store_true", help="a third side: after, with inline = true")
    ap.add_argument("--both-inline", action="store_true", help="and before, with inline = true")
    ap.add_argument("--sizes", type=lambda v: tuple(int(x) for x in v.split(",")), default=SIZES,
                    help="case counts, comma-separated (default: 10000,1000)")
    args = ap.parse_args(argv)
    sizes: tuple[int, ...] = args.sizes
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    sides: dict[str, tuple[Path, bool]] = {name: (tree, False) for name, tree in trees.items()}
    ap_both = args.both_inline
    if args.inline_too or ap_both:
        if ap_both:
            sides["before-inline"] = (trees["before"], True)
        sides["after-inline"] = (trees["after"], True)
    for tree in trees.values():
        subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import run_bench as b; "
             + "; ".join(f"b.write_config('py{n}', {n}, 'python', 32)" for n in sizes)],
            cwd=tree, check=True, env={**os.environ, "PYTHONPATH": str(tree)},
        )
    runs: dict[str, dict[int, list[dict[str, float]]]] = {k: {n: [] for n in sizes} for k in sides}
    print(f"load average at start {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for i in range(args.repeats):
        for n in sizes:
            order = list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]
            for name, (tree, inline) in order:
                load = os.getloadavg()[0]
                run = cli(tree, n, inline) if args.cli else worker(tree, n)
                runs[name][n].append({**run, "load": load})
    print(f"load average at end {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for n in sizes:
        line = [f"{n:,} cases:"]
        for key in ("wall_s", "cpu_s"):
            b = statistics.median(r[key] for r in runs["before"][n])
            line.append(f"{key[:-2]} before {b:.2f} s ({b / n * 1000:.3f} ms/case)")
            for name in list(sides)[1:]:
                a = statistics.median(r[key] for r in runs[name][n])
                if name == "before-inline":
                    line.append(f"{name} {a:.2f} s ({a / n * 1000:.3f} ms/case)")
                    continue
                base = b
                if name == "after-inline" and "before-inline" in sides:
                    base = statistics.median(r[key] for r in runs["before-inline"][n])
                line.append(f"{name} {a:.2f} s ({a / n * 1000:.3f} ms/case, {a / base:.2f}x)")
            line[-1] += ";"
        print(" ".join(line))
        for name in sides:
            loads = [r["load"] for r in runs[name][n]]
            extra = ""
            if args.cli:  # the child's user and system time and context switches, run by run
                extra = (f"user {[round(r['user_s'], 2) for r in runs[name][n]]} "
                         f"sys {[round(r['sys_s'], 2) for r in runs[name][n]]} "
                         f"switches {[int(r['switches']) for r in runs[name][n]]} ")
            print(f"  {name}: wall {[round(r['wall_s'], 2) for r in runs[name][n]]} "
                  f"cpu {[round(r['cpu_s'], 2) for r in runs[name][n]]} {extra}"
                  f"load {[round(x, 2) for x in loads]} ({min(loads):.2f}-{max(loads):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
