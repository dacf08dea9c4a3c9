"""10,000 instant cases, whole process, evalh beside its peers (inspect_ai, promptfoo) in one
pass: each tool runs the same workload — a product that answers "ok" at once, one exact-match
check per case, 32 in flight, no cache — from spawn to exit, the tools' turns alternating
round by round, the machine's load read before every run.

    python bench/peers_bench.py --inspect-python /path/to/venv/bin/python \\
        --promptfoo /path/to/node_modules/.bin/promptfoo --cases 10000 --repeats 3

- evalh: `python -m evalh.cli.main run` of the runner bench's project (`bench/run_bench.py`
  `write_config`: the sync Python callable `bench_target:instant`, an `exact` scorer), the
  target as it is (a worker thread per call) and, as a second side, declared cheap
  (`inline = true`). Checked: exit 0, one run document, `complete`, every case passed.
- inspect_ai: `bench/run_bench.py _worker inspect N` in the interpreter that has it (an
  `eval()` of N samples on `mockllm/model` whose outputs carry their usage, `exact()`,
  `max_connections=32`). Checked: the log's status is `success` and it completed N samples —
  a run that errors early looks many times faster.
- promptfoo: `promptfoo eval` of N tests against a JavaScript provider answering "ok" at
  once, an `equals` assertion each, `-j 32 --no-cache --no-write -o results.json` (its
  results written once, as evalh writes its document). Checked: exit 0 and the results
  file counts N successes, no failure, no error. `--promptfoo-writes-too` adds a side
  without `--no-write`: the results also go into promptfoo's database, as by default.

CPU is the child's user + system time. Prints one line per tool (median wall and CPU, the
ratio to evalh's threaded side) and every run with its load.
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
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work" / "peers"
sys.path.insert(0, str(HERE))

from run_bench import inline_config  # noqa: E402  (bench/ is not a package)

PROVIDER_JS = """\
// answers "ok" at once: the runner bench's `instant` target
class Instant {
  id() { return 'instant'; }
  async callApi(prompt) { return { output: 'ok' }; }
}
module.exports = Instant;
"""


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def evalh_side(n: int, inline: bool) -> Callable[[], tuple[float, float]]:
    work = HERE / ".work" / "runner"
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import run_bench as b; "
                    f"b.write_config('py{n}', {n}, 'python', 32)"], cwd=REPO, check=True)
    config = work / f"py{n}.toml"
    if inline:
        config = inline_config(config)

    def run() -> tuple[float, float]:
        runs = work / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        proc, wall, cpu = timed([sys.executable, "-m", "evalh.cli.main", "run", "--config", str(config),
                                 "--runs-dir", str(runs), "-q", "--seed", "1", "--no-cache"], work,
                                {"PYTHONPATH": str(REPO)})
        docs = list(runs.glob("*.json"))
        if proc.returncode != 0 or len(docs) != 1:
            raise RuntimeError(f"evalh run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        doc = json.loads(docs[0].read_bytes())
        agg = doc["suites"]["b"]["aggregate"]
        if doc["status"] != "complete" or agg["passed"] != n:
            raise RuntimeError(f"evalh run measured something else: {doc['status']}, {agg}")
        shutil.rmtree(runs, ignore_errors=True)
        return wall, cpu

    return run


def inspect_side(n: int, python: str) -> Callable[[], tuple[float, float]]:
    logs = WORK / "inspect_logs"

    def run() -> tuple[float, float]:
        shutil.rmtree(logs, ignore_errors=True)
        proc, wall, cpu = timed([python, str(HERE / "run_bench.py"), "_worker", "inspect", str(n), str(logs)], WORK)
        if proc.returncode != 0:  # the worker asserts the log's status is success
            raise RuntimeError(f"inspect_ai failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        if result["cases"] != n:
            raise RuntimeError(f"inspect_ai completed {result['cases']} samples of {n}")
        shutil.rmtree(logs, ignore_errors=True)
        return wall, cpu

    return run


def promptfoo_side(n: int, promptfoo: str, write: bool = False) -> Callable[[], tuple[float, float]]:
    work = WORK / "promptfoo"
    work.mkdir(parents=True, exist_ok=True)
    (work / "provider.js").write_text(PROVIDER_JS, encoding="utf-8")
    with (work / f"tests{n}.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"vars": {"q": f"question {i}"}, "assert": [{"type": "equals", "value": "ok"}]}) + "\n")
    (work / "config.yaml").write_text(
        f'description: instant cases\nprompts:\n  - "{{{{q}}}}"\nproviders:\n  - file://provider.js\n'
        f"tests: file://tests{n}.jsonl\n", encoding="utf-8")
    env = {"PROMPTFOO_CONFIG_DIR": str(work / "home"), "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_DISABLE_SHARING": "1"}

    def run() -> tuple[float, float]:
        out = work / "results.json"
        out.unlink(missing_ok=True)
        keep = [] if write else ["--no-write"]  # write: also into its own database, as by default
        proc, wall, cpu = timed([promptfoo, "eval", "-c", "config.yaml", "-j", "32", "--no-cache", *keep,
                                 "--no-table", "--no-progress-bar", "-o", str(out)], work, env)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"promptfoo failed ({proc.returncode}):\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
        stats = json.loads(out.read_bytes())["results"]["stats"]
        if (stats.get("successes"), stats.get("failures"), stats.get("errors", 0)) != (n, 0, 0):
            raise RuntimeError(f"promptfoo measured something else: {stats}")
        return wall, cpu

    return run


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inspect-python", help="an interpreter that has inspect_ai")
    ap.add_argument("--promptfoo", help="the promptfoo executable (node_modules/.bin/promptfoo)")
    ap.add_argument("--promptfoo-writes-too", action="store_true",
                    help="a side with promptfoo writing its results into its database too (its default)")
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    n = args.cases
    sides: dict[str, Callable[[], tuple[float, float]]] = {
        "evalh": evalh_side(n, inline=False), "evalh, inline": evalh_side(n, inline=True)}
    if args.inspect_python:
        sides["inspect_ai"] = inspect_side(n, args.inspect_python)
    if args.promptfoo:
        sides["promptfoo"] = promptfoo_side(n, args.promptfoo)
        if args.promptfoo_writes_too:
            sides["promptfoo, writing its database"] = promptfoo_side(n, args.promptfoo, write=True)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    print(f"{n:,} cases; load average at start {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for i in range(args.repeats):
        order = list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]
        for name, run in order:
            load = os.getloadavg()[0]
            wall, cpu = run()
            runs[name].append({"wall_s": wall, "cpu_s": cpu, "load": load})
            print(f"  round {i + 1} {name}: wall {wall:.2f} s, cpu {cpu:.2f} s, load before {load:.2f}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    base = {k: statistics.median(r[k] for r in runs["evalh"]) for k in ("wall_s", "cpu_s")}
    for name, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        cpu = statistics.median(r["cpu_s"] for r in rs)
        loads = [r["load"] for r in rs]
        print(f"{name}: wall {wall:.2f} s ({wall / base['wall_s']:.1f}x evalh), cpu {cpu:.2f} s "
              f"({cpu / base['cpu_s']:.1f}x evalh), load {min(loads):.2f}-{max(loads):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
