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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import run_bench as b; "
             + "; ".join(f"b.write_config('py{n}', {n}, 'python', 32)" for n in SIZES)],
            cwd=tree, check=True, env={**os.environ, "PYTHONPATH": str(tree)},
        )
    runs: dict[str, dict[int, list[dict[str, float]]]] = {k: {n: [] for n in SIZES} for k in trees}
    print(f"load average at start {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for i in range(args.repeats):
        for n in SIZES:
            order = list(trees.items()) if i % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                runs[name][n].append(worker(tree, n))
    print(f"load average at end {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for n in SIZES:
        line = [f"{n:,} cases:"]
        for key in ("wall_s", "cpu_s"):
            b = statistics.median(r[key] for r in runs["before"][n])
            a = statistics.median(r[key] for r in runs["after"][n])
            line.append(f"{key[:-2]} before {b:.2f} s ({b / n * 1000:.3f} ms/case), after {a:.2f} s "
                        f"({a / n * 1000:.3f} ms/case), after/before {a / b:.2f};")
        print(" ".join(line))
        for name in trees:
            print(f"  {name}: wall {[round(r['wall_s'], 2) for r in runs[name][n]]} "
                  f"cpu {[round(r['cpu_s'], 2) for r in runs[name][n]]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
