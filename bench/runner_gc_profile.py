"""Where a long run's time goes outside the cases: the collector's own time (`gc.callbacks`),
its full collections, and the interpreter's teardown after the last `atexit` hook, of
`evalh run` on the runner bench's instant project, for two checkouts alternating.

    python bench/runner_gc_profile.py bench/.work/hp-old bench/.work/hp-new --cases 30000 --repeats 3

Each run is `python bench/runner_gc_profile.py _child run --config … -q --seed 1 --no-cache` in
the checkout (PYTHONPATH), which times the collector and prints its totals from an `atexit`
hook with the time it ran; the parent measures wall and CPU (user + system) of the child and
the time from that hook to the child's end. Results are in runner_before_after_results.md.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path


def child(argv: list[str]) -> None:
    totals = [0.0, 0, 0.0]

    def timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            totals[2] = time.perf_counter()
        else:
            totals[0] += time.perf_counter() - totals[2]
            totals[1] += info["generation"] == 2

    gc.callbacks.append(timer)
    atexit.register(lambda: sys.stderr.write(f"GC {totals[0]:.3f} {totals[1]} AT {time.time():.3f}\n"))
    sys.argv = ["evalh", *argv]
    import evalh.cli.main as cli

    getattr(cli, "entry", cli.main)()


def main(argv: list[str]) -> int:
    if argv[:1] == ["_child"]:
        child(argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--cases", type=int, default=30000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n = args.cases
    for _ in range(args.repeats):
        for tree in (t.resolve() for t in args.trees):
            work = tree / "bench" / ".work" / "runner"
            env = {**os.environ, "PYTHONPATH": str(tree)}
            subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import run_bench as b; "
                            f"b.write_config('py{n}', {n}, 'python', 32)"], cwd=tree, check=True, env=env)
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "_child", "run", "--config", str(work / f"py{n}.toml"),
                 "--runs-dir", str(work / "runs"), "-q", "--seed", "1", "--no-cache"],
                cwd=work, env=env, capture_output=True, text=True, check=False)
            t1, r1 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
            shutil.rmtree(work / "runs", ignore_errors=True)
            found = re.search(r"GC ([\d.]+) (\d+) AT ([\d.]+)", proc.stderr)
            if found is None:
                raise RuntimeError(f"{tree}: {proc.stderr[-2000:]}")
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            print(f"{tree.name}: wall {t1 - t0:.2f} s, cpu {cpu:.2f} s, in the collector {float(found[1]):.2f} s, "
                  f"full collections {found[2]}, after the last atexit hook {t1 - float(found[3]):.2f} s, "
                  f"exit {proc.returncode}, load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
