"""CPU and wall time of the commands that only read runs, before and after a change.

Every evalh process pays a floor (the interpreter, then the modules the command imports)
before it reads anything; `evalh runs` over 500 documents of 100k results each (issue 18:
< 1 s) is that floor plus 500 header reads. Rows, each a fresh process:

- `evalh --help` in a directory without evalh.toml;
- `evalh runs` over an empty runs directory, without and with an evalh.toml (the project of
  bench/scale.py: one suite, loaded and validated as every command in a project does);
- `evalh runs -n 500` over 500 hard links to one 100k-result run document (the same bytes
  under 500 run ids), without and with the evalh.toml.

Each row is the median of `--times` runs of each tree, the trees taking turns (a loaded
machine drifts). CPU is the child's user + system time (`getrusage(RUSAGE_CHILDREN)`), the
figure that load changes least; wall is spawn to exit. `--before` is a checkout of the
commit to compare with (`git worktree add --detach DIR SHA`); each tree runs with
PYTHONPATH pointing at it, its modules compiled first (as an installed package's are).
Results: bench/startup_results.md.

    python bench/startup_bench.py --before bench/.work/before [--doc RUN.json] [--times 10]

Without `--doc`, a 100k-result run is made once in bench/.work/startup (about a minute).
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work" / "startup"
LAUNCH = "import sys; sys.argv[0] = 'evalh'; from evalh.cli.main import entry; entry()"


def run_once(tree: Path, cwd: Path, args: list[str]) -> tuple[float, float]:
    """(CPU s, wall s) of one `evalh ARGS` process importing evalh from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "EVALH_NO_PROGRESS": "1", "COLUMNS": "160"}
    env.pop("EVAL_RUNS_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"evalh {' '.join(args)} in {cwd} ({tree}) exited {proc.returncode}: "
                           f"{proc.stderr.decode()[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def make_document(tree: Path) -> Path:
    """A 100k-result run document of bench/scale.py's project (made once)."""
    sys.path.insert(0, str(HERE))
    from scale import project  # the same project and dataset as the scale rows

    base = project(WORK / "project", 100_000)
    runs = base / "eval_runs"
    made = sorted(runs.glob("*.json")) if runs.is_dir() else []
    if not made:
        env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{base}", "EVALH_NO_PROGRESS": "1"}
        subprocess.run([sys.executable, "-c", LAUNCH, "run", "-q", "--runs-dir", str(runs)],
                       cwd=base, env=env, check=False, stdout=subprocess.DEVNULL)
        made = sorted(runs.glob("*.json"))
    return made[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--after", type=Path, default=ROOT, help="the tree measured as `after` (this checkout)")
    ap.add_argument("--doc", type=Path, help="a 100k-result run document (default: made in bench/.work/startup)")
    ap.add_argument("--count", type=int, default=500, help="documents `runs` lists")
    ap.add_argument("--times", type=int, default=10, help="runs of each tree per row (medians)")
    ap.add_argument("--out", type=Path, default=HERE / "startup_results.md")
    args = ap.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        # as installed (pip compiles): a tree without __pycache__ would compile every module in
        # every process under PYTHONDONTWRITEBYTECODE, ~0.1 s more CPU for that tree only
        compileall.compile_dir(tree / "evalh", quiet=1)
    doc = (args.doc or make_document(trees["after"])).resolve()

    shutil.rmtree(WORK / "cwd", ignore_errors=True)
    # no evalh.toml here or above: outside the repository, which has one at its root
    bare = Path(tempfile.gettempdir()) / f"evalh-startup-{os.getpid()}"
    proj = WORK / "cwd" / "project"
    for d in (bare, proj):
        d.mkdir(parents=True, exist_ok=True)
    (proj / "evalh.toml").write_text(
        '[evalh]\nconcurrency = 32\ntimeout_s = 60\n\n[suites.b]\ndataset = "cases.jsonl"\n'
        'target = "scale_target:instant"\nscorers = [{ type = "exact", field = "verdict" }]\n',
        encoding="utf-8")
    many = WORK / "cwd" / "listing"
    many.mkdir()
    for k in range(args.count):
        os.link(doc, many / f"20270101T{k // 3600:02d}{k // 60 % 60:02d}{k % 60:02d}000Z-{k:06x}.json")
    empty = WORK / "cwd" / "no-runs-here"
    n = str(args.count)
    rows = {
        "evalh --help": (bare, ["--help"]),
        "evalh runs, empty directory": (bare, ["runs", "--runs-dir", str(empty)]),
        "evalh runs, empty directory, in a project (evalh.toml)": (proj, ["runs", "--runs-dir", str(empty)]),
        f"evalh runs -n {n} over {n} documents of 100k results": (bare, ["runs", "-n", n, "--runs-dir", str(many)]),
        f"evalh runs -n {n} over {n} documents, in a project": (proj, ["runs", "-n", n, "--runs-dir", str(many)]),
    }
    got: dict[str, dict[str, tuple[float, float]]] = {}
    try:
        for name, (cwd, argv) in rows.items():
            samples: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
            for _ in range(args.times):
                for t, tree in trees.items():  # taking turns: drift in load hits both
                    samples[t].append(run_once(tree, cwd, argv))
            got[name] = {t: (statistics.median(c for c, _ in s), statistics.median(w for _, w in s))
                         for t, s in samples.items()}
            b, a = got[name]["before"], got[name]["after"]
            print(f"{name:62} cpu {b[0]:.3f} -> {a[0]:.3f} s   wall {b[1]:.3f} -> {a[1]:.3f} s", flush=True)
    finally:
        shutil.rmtree(WORK / "cwd", ignore_errors=True)
        shutil.rmtree(bare, ignore_errors=True)

    load = os.getloadavg()
    lines = [
        "# Startup: the commands that only read runs",
        "",
        "`python bench/startup_bench.py --before DIR` (see its docstring). Medians of "
        f"{args.times} fresh processes per tree and row, the trees taking turns; CPU is user + "
        f"system time of the child. {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average {load[0]:.1f} at the end (a shared machine: wall "
        "follows the load, CPU much less).",
        "",
        "| command | CPU before | CPU after | wall before | wall after |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, by in got.items():
        b, a = by["before"], by["after"]
        lines.append(f"| {name} | {b[0]:.2f} s | {a[0]:.2f} s | {b[1]:.2f} s | {a[1]:.2f} s |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
