"""CPU per call of a sync call's hand-off (`evalh.handoff.in_thread`), with a body of per-case
work around each call, in one process: where the default path's cost over `inline` goes.

    python bench/handoff_micro.py                 # every mode, awaited 1 and 8 coroutines deep
    taskset -c 0 python bench/handoff_micro.py    # the same on one core

32 tasks (the runner's concurrency) each make N / 32 calls of an instant function, each
call between two pieces of per-case work (~7 µs each: a dict built and JSON-encoded).
Modes: `inline` calls it on the loop; `yield` calls it on the loop and then suspends the
task once (`asyncio.sleep(0)` through DEPTH nested coroutines: what any call off the loop
costs the task at least); `lane` is `in_thread` once the function is found cheap (one
shared thread); `threads` is `in_thread` with the function never found cheap (a thread per
call: the path before the lane). CPU is the process's (`time.process_time`), after a
warm-up that lets the function be found cheap. Results: bench/lean_path_results.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from evalh import handoff
from evalh.core.run.workers import DaemonExecutor


def instant(x: int) -> int:
    return x


def body(i: int) -> int:
    """Some per-case work: build a result-sized dict and encode it."""
    d = {"case_id": f"c{i}", "input": {"q": "question " * 4, "n": i}, "metrics": {f"k{j}": j for j in range(20)}}
    return len(json.dumps(d))


async def nest(depth: int, make: Callable[[], Awaitable[Any]]) -> Any:
    return await make() if depth == 0 else await nest(depth - 1, make)


async def worker(n: int, mode: str, depth: int) -> None:
    for i in range(n):
        body(i)
        if mode == "inline":
            instant(i)
        elif mode == "yield":
            instant(i)
            await nest(depth, lambda: asyncio.sleep(0))
        else:
            await nest(depth, lambda i=i: handoff.in_thread(instant, i))  # type: ignore[misc]
        body(i)


async def measure(mode: str, n: int, depth: int) -> float:
    asyncio.get_running_loop().set_default_executor(DaemonExecutor("bench"))
    if mode == "threads":
        handoff.WINDOW = handoff.MAX_WINDOW = 10**12  # never found cheap
    await asyncio.gather(*(worker(500 // 32 + 1, mode, depth) for _ in range(32)))  # warm up
    t0 = time.process_time()
    await asyncio.gather(*(worker(n // 32, mode, depth) for _ in range(32)))
    return (time.process_time() - t0) / (n // 32 * 32)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--mode", choices=("inline", "yield", "lane", "threads"))
    ap.add_argument("--depth", type=int)
    args = ap.parse_args(argv)
    if args.mode:  # one measurement, in this process
        print(json.dumps(asyncio.run(measure(args.mode, args.calls, args.depth or 1))))
        return 0
    import subprocess

    for depth in (1, 8):
        line = [f"depth {depth}:"]
        for mode in ("inline", "yield", "lane", "threads"):  # each in a fresh process
            out = subprocess.run([sys.executable, __file__, "--mode", mode, "--depth", str(depth),
                                  "--calls", str(args.calls)], capture_output=True, text=True, check=True)
            line.append(f"{mode} {float(out.stdout) * 1e6:.2f} µs")
        print("  ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
