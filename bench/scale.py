"""Wall time and peak memory of evalh's commands on large runs, before and after a change.

    git worktree add --detach bench/.work/before BEFORE_SHA     # once: the checkout to compare with
    python bench/scale.py                                      # 10k and 100k results, before and after
    python bench/scale.py --sizes 1000000 --trees after=.      # 1M results, this checkout only

For each checkout (`--trees name=path,...`; default `before=bench/.work/before,after=.`) and
each size N it makes a project in bench/.work/scale_cmds/<name>/<N>/ (ignored by git): one suite
of N instant cases (a sync Python callable, one `exact` scorer, concurrency 32), and runs,
each in a fresh process with that checkout's evalh on PYTHONPATH:

- `evalh run` twice (the second run is what `compare` pairs with the first; both timed);
- `evalh show RUN`, `evalh report RUN` (markdown), `evalh compare RUN1 RUN2`,
  `evalh runs -n 500` (the runs directory: two documents);
- `evalh runs` over an empty directory: the floor every command pays (interpreter, imports);
- the dashboard's case view: a fresh process opening one case of the run through the
  dashboard's API (`DashboardApi.case`, what `/api/case` answers), cold;
- at the largest size, `evalh runs -n 500` over `--listing` documents (hard links to the
  run's document under distinct run ids: the same bytes, read as 500 runs).

Wall is the child's, from spawn to exit; peak memory is its RSS high-water (`ru_maxrss`
from `os.wait4`). Output goes to /dev/null. Results: bench/scale_results.md (markdown).
Numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work" / "scale_cmds"

TARGET = '''def instant(inp):
    return {"verdict": inp["verdict"]}
'''


def project(base: Path, n: int, *, inline: bool = False) -> Path:
    """The project of N cases (written once). `inline`: the target declared cheap
    (`inline = true`: called on the event loop, no worker thread)."""
    base.mkdir(parents=True, exist_ok=True)
    data = base / "cases.jsonl"
    if not data.exists() or sum(1 for _ in data.open("rb")) != n:
        with data.open("w", encoding="utf-8") as fh:
            for i in range(n):
                v = "ok" if i % 10 else "bad"
                fh.write(json.dumps({"id": f"case-{i:07d}", "input": {"q": f"question {i} " + "x" * 40, "verdict": v},
                                     "expected": {"verdict": v}, "metadata": {"group": f"g{i % 50}"}}) + "\n")
    (base / "scale_target.py").write_text(TARGET, encoding="utf-8")
    (base / "evalh.toml").write_text(
        '[evalh]\nconcurrency = 32\ntimeout_s = 60\n\n[suites.b]\ndataset = "cases.jsonl"\n'
        + ('target = { kind = "python", callable = "scale_target:instant", inline = true }\n' if inline
           else 'target = "scale_target:instant"\n')
        + 'scorers = [{ type = "exact", field = "verdict" }]\n',
        encoding="utf-8")
    return base


def child_env(tree: Path, cwd: Path) -> dict[str, str]:
    """The environment of a child running checkout `tree`'s evalh in project `cwd`."""
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{cwd}", "EVALH_NO_PROGRESS": "1"}
    env.pop("EVAL_RUNS_DIR", None)
    return env


def measure(tree: Path, cwd: Path, argv: list[str]) -> tuple[float, float, int]:
    """(wall s, peak RSS MiB, exit code) of one child process."""
    env = child_env(tree, cwd)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=null, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = proc.returncode
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} in {cwd} exited {code}: {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, code


CASE_VIEW = """
import sys
from pathlib import Path
from evalh.ui.api import DashboardApi
from evalh.ui.index import RunIndex
runs, run_id, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
api = DashboardApi(RunIndex(runs), runs.parent)
got = api.case(run_id, {"suite": "b", "i": str(n // 2)})
assert got["result"]["case_id"], got
"""


def evalh(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalh.cli.main", *args]


def setup(name: str, tree: Path, n: int, rows: list[dict[str, object]], times: int = 2) -> tuple[Path, list[str]]:
    """The two runs of checkout `name` at size `n` (timed: the `run` rows); `times=1`
    (`--run-only --once`): one run, nothing read after it."""
    base = project(WORK / name / str(n), n)
    runs = base / "eval_runs"
    if REUSE and len(kept := sorted(p.stem for p in runs.glob("*.json"))) == times:
        size = (runs / f"{kept[-1]}.json").stat().st_size  # --reuse: the runs a previous pass made
        rows.append({"tree": name, "n": n, "what": "document size", "mb": round(size / 1e6, 1)})
        return base, kept
    shutil.rmtree(runs, ignore_errors=True)
    for what in ("run", "run (second)")[:times]:
        wall, peak, code = measure(tree, base, evalh("run", "-q", "--runs-dir", str(runs)))
        rows.append({"tree": name, "n": n, "what": what, "wall_s": [wall], "peak_mib": [peak]})
        print(f"{name:7} {n:>8} {what:34} {wall:8.2f} s {peak:8.0f} MiB (exit {code})", flush=True)
    ids = sorted(p.stem for p in runs.glob("*.json"))
    assert len(ids) == times, ids
    size = (runs / f"{ids[-1]}.json").stat().st_size
    rows.append({"tree": name, "n": n, "what": "document size", "mb": round(size / 1e6, 1)})
    return base, ids


REUSE = False
"""`--reuse`: read the runs an earlier pass made at a size instead of making them again."""
READS: list[str] = []
"""`--reads`: the read rows to measure (a part of each row's name); empty: all."""


def reads(name: str, tree: Path, n: int, base: Path, ids: list[str]) -> dict[str, tuple[float, float]]:
    runs = base / "eval_runs"
    cmds = {
        "startup floor (runs, empty directory)": evalh("runs", "--runs-dir", str(base / "no-runs-here")),
        "show RUN": evalh("show", ids[1], "--runs-dir", str(runs)),
        "runs (2 documents)": evalh("runs", "-n", "500", "--runs-dir", str(runs)),
        "report RUN (md)": evalh("report", ids[1], "--format", "md", "--runs-dir", str(runs)),
        "compare RUN1 RUN2": evalh("compare", ids[0], ids[1], "--runs-dir", str(runs)),
        "dashboard case view (cold)": [sys.executable, "-c", CASE_VIEW, str(runs), ids[1], str(n)],
    }
    out = {}
    for what, argv in cmds.items():
        if READS and not any(part in what for part in READS):
            continue
        wall, peak, code = measure(tree, base, argv)
        out[what] = (wall, peak)
        print(f"{name:7} {n:>8} {what:34} {wall:8.2f} s {peak:8.0f} MiB (exit {code})", flush=True)
    return out


def listing(name: str, tree: Path, n: int, base: Path, ids: list[str], count: int) -> tuple[float, float]:
    """`evalh runs -n COUNT` over COUNT hard links to the run's document."""
    doc = base / "eval_runs" / f"{ids[1]}.json"
    many = base / "listing"
    shutil.rmtree(many, ignore_errors=True)
    many.mkdir()
    for k in range(count):
        os.link(doc, many / f"20270101T{k // 3600:02d}{k // 60 % 60:02d}{k % 60:02d}000Z-{k:06x}.json")
    try:
        wall, peak, code = measure(tree, base, evalh("runs", "-n", str(count), "--runs-dir", str(many)))
    finally:
        shutil.rmtree(many, ignore_errors=True)
    print(f"{name:7} {n:>8} runs over {count} documents {wall:8.2f} s {peak:8.0f} MiB (exit {code})", flush=True)
    return wall, peak


def _scaled(value: object, k: int, keys: frozenset[str]) -> object:
    """Counts (`keys`) inside `value` multiplied by k, recursively; rates left as they are."""
    if isinstance(value, dict):
        return {key: (v * k if key in keys and isinstance(v, int) and not isinstance(v, bool) else _scaled(v, k, keys))
                for key, v in value.items()}
    if isinstance(value, list):
        return [_scaled(v, k, keys) for v in value]
    return value


COUNTS = frozenset({"n", "passed", "failed", "errored", "judge_error", "skipped", "pass_rate_denominator",
                    "mean_score_denominator", "tokens_in", "tokens_out", "cached", "cost_unknown", "cases",
                    "results", "of", "errors"})


def synthesize(src: Path, dst: Path, k: int, tag: str) -> None:
    """A document of k times the results of `src` (a streamed document of one suite): each
    result line repeated k times under new case ids, the header's counts multiplied by k,
    its line index filled in as `evalh.store` does. Written line by line: no run of that
    size is held in memory."""
    import orjson

    from evalh.document import EVERY, INDEX

    with src.open("rb") as fh:
        first = fh.readline()
        head = orjson.loads(first[:-2] + b"}")
        rest = fh.read()
    head = _scaled(head, k, COUNTS)
    head.pop(INDEX, None)
    head["run_id"] = dst.stem
    head["label"] = tag
    (name,) = head["suite_heads"]
    entries = -(-head["suite_heads"][name]["results"] // EVERY)
    start = orjson.dumps(head)[:-1] + b',"%s":{"every":%d,"offsets":{%s:[' % (INDEX.encode(), EVERY, orjson.dumps(name))
    slot = len(start)
    unset = b"%16d" % -1
    header = start + b",".join([unset] * entries) + b"]}},\n"
    lines = rest.split(b"\n")
    patches = []
    with dst.open("wb") as out:
        out.write(header)
        written = len(header)
        n = 0
        for line in lines:
            if not line.startswith(b"{"):
                if line.startswith(b'"') and b'"dataset":' in line:  # the suite's opening line
                    opened = orjson.loads(line[line.index(b":") + 1:] + b"]}")
                    opened.pop("cases", None)
                    chunk = line[:line.index(b":")] + b":" + orjson.dumps(_scaled(opened, k, COUNTS))[:-1] + b',"cases":[\n'
                elif line:
                    chunk = line + b"\n"
                else:
                    continue
                out.write(chunk)
                written += len(chunk)
                continue
            body = line[:-1] if line.endswith(b",") else line
            last = not line.endswith(b",")
            for r in range(k):
                if n % EVERY == 0:
                    patches.append((slot + (n // EVERY) * 17, b"%16d" % written))
                chunk = (body.replace(b'{"case_id":"', b'{"case_id":"r%d-' % r, 1)
                         + (b"\n" if last and r == k - 1 else b",\n"))
                out.write(chunk)
                written += len(chunk)
                n += 1
        for at, value in patches:
            out.seek(at)
            out.write(value)


def bench_synthesized(tree_name: str, tree: Path, n: int, src_n: int, rows: list[dict[str, object]]) -> None:
    """The read commands at n results, on documents synthesized from the two runs made at
    src_n results (`synthesize`): `run` itself is not measured at that size."""
    src = WORK / tree_name / str(src_n) / "eval_runs"
    ids = sorted(p.stem for p in src.glob("*.json"))
    base = WORK / tree_name / f"{n}-synth"
    runs = base / "eval_runs"
    shutil.rmtree(base, ignore_errors=True)
    runs.mkdir(parents=True)
    made = []
    for j, run_id in enumerate(ids):
        dst = runs / f"2028010{j + 1}T000000000Z-{j:06x}.json"
        synthesize(src / f"{run_id}.json", dst, n // src_n, f"synth {j}")
        made.append(dst.stem)
    rows.append({"tree": tree_name, "n": n, "what": "document size",
                 "mb": round((runs / f"{made[1]}.json").stat().st_size / 1e6, 1)})
    for what, m in reads(tree_name, tree, n, base, made).items():
        rows.append({"tree": tree_name, "n": n, "what": what, "wall_s": [m[0]], "peak_mib": [m[1]]})


def markdown(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    trees = list(dict.fromkeys(str(r["tree"]) for r in rows))
    sizes = list(dict.fromkeys(int(r["n"]) for r in rows))  # type: ignore[call-overload]
    out = ["# Scale: wall and peak memory of each command", "",
           f"Command: `python bench/scale.py {' '.join(sys.argv[1:])}`".rstrip() + "", "",
           f"Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python "
           f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end (other work "
           "shares the machine). Each figure is one fresh process: wall from spawn to exit, peak = "
           "its RSS high-water. One suite of N instant cases (sync Python callable, `exact` scorer, "
           "concurrency 32). Reads: median of the trials at 10k (before and after alternating), one "
           "trial above; `run` rows: one each.", ""]
    for n in sizes:
        out += [f"## {n:,} results", ""]
        sizes_row = {str(r["tree"]): r.get("mb") for r in rows if r["n"] == n and r["what"] == "document size"}
        out.append("document: " + ", ".join(f"{t} {sizes_row.get(t)} MB" for t in trees))
        out += ["", "| command | " + " | ".join(f"{t} wall s | {t} peak MiB" for t in trees) + " |",
                "| --- |" + " ---: | ---: |" * len(trees)]
        whats = list(dict.fromkeys(str(r["what"]) for r in rows if r["n"] == n and r["what"] != "document size"))
        for what in whats:
            cells = []
            for t in trees:
                hit = next((r for r in rows if r["n"] == n and r["what"] == what and r["tree"] == t), None)
                cells += [f"{statistics.median(hit['wall_s']):.2f}", f"{statistics.median(hit['peak_mib']):.0f}"] if hit else ["–", "–"]
            out.append(f"| {what} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def checkouts(spec: str) -> dict[str, Path]:
    """`--trees NAME=DIR,...`: each named evalh checkout (DIR relative to the repository)."""
    trees = {}
    for part in spec.split(","):
        name, _, path = part.partition("=")
        trees[name] = (ROOT / path).resolve()
        if not (trees[name] / "evalh" / "__init__.py").is_file():
            raise SystemExit(f"{path}: not an evalh checkout (make it with git worktree add, see --help)")
    return trees


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--trees", default="before=bench/.work/before,after=.")
    ap.add_argument("--trials", type=int, default=3, help="trials of each read at sizes up to 20,000 (larger: 1)")
    ap.add_argument("--listing", type=int, default=500, help="documents `runs` lists at the largest size (0: none)")
    ap.add_argument("--out", type=Path, default=HERE / "scale_results.md")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    ap.add_argument("--synth", default="", help="SIZE:FROM — also the reads at SIZE results on documents "
                    "synthesized from the runs made at size FROM (e.g. 1000000:100000)")
    ap.add_argument("--synth-trees", default="after", help="the checkouts --synth measures")
    ap.add_argument("--run-only", action="store_true", help="only the `evalh run` rows (no reads, no listing)")
    ap.add_argument("--once", action="store_true", help="with --run-only: one run per size and checkout, not two")
    ap.add_argument("--reads", default="", help="only the read rows whose names hold one of these, comma "
                    "separated (e.g. compare,runs): the others are not measured")
    ap.add_argument("--reuse", action="store_true", help="read the runs an earlier pass made (no run rows)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    global REUSE
    REUSE = args.reuse
    READS[:] = [part for part in args.reads.split(",") if part]
    trees = checkouts(args.trees)
    rows: list[dict[str, object]] = []
    for n in sizes:
        if args.run_only:
            for name, tree in trees.items():
                setup(name, tree, n, rows, 1 if args.once else 2)
            continue
        made = {name: setup(name, tree, n, rows) for name, tree in trees.items()}
        trials = args.trials if n <= 20_000 else 1
        got: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(trials):  # the checkouts alternate: a load that moves weighs on both
            for name, tree in trees.items():
                for what, m in reads(name, tree, n, *made[name]).items():
                    got.setdefault((name, what), []).append(m)
        if args.listing and n == max(sizes):
            for name, tree in trees.items():
                got[(name, f"runs over {args.listing} documents")] = [listing(name, tree, n, *made[name], args.listing)]
        for (name, what), ms in got.items():
            rows.append({"tree": name, "n": n, "what": what, "wall_s": [m[0] for m in ms], "peak_mib": [m[1] for m in ms]})
    if args.synth:
        size, _, src = args.synth.partition(":")
        for name in args.synth_trees.split(","):  # a 1M document read whole (before) needs ~12 GB
            bench_synthesized(name, trees[name], int(size), int(src), rows)
    text = markdown(rows, args)
    args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
