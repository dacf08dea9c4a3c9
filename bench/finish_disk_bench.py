"""Peak disk of a large run's files, as a multiple of its final document, before and after
the document is made from the journal as the journal shrinks (`evalh.core.run.finish`).

    git worktree add --detach bench/.work/before 2820871        # once: the checkout before
    python bench/finish_disk_bench.py                            # 100,000 cases, before and after
    python bench/finish_disk_bench.py --sizes 1000000            # a million (about 4 min a run)

For each checkout (`--trees name=path,...`; default `before=bench/.work/before,after=.`) and
each size N, one `evalh run` of N instant cases (the project of bench/scale.py: a sync
Python callable, one `exact` scorer, concurrency 32) in a fresh process with that
checkout's evalh on PYTHONPATH, its runs directory empty at the start. While it runs, a
thread of this process adds up the disk the runs directory's files take (`st_blocks`,
what the filesystem allocated: a sparse file counts what it holds) every 10 ms; the row
gives its peak, the largest journal seen, the final document's size, and the peak ÷ the
document. The child's wall time, CPU (user + system) and peak RSS (`os.wait4`) and the load average
(1 min) before and after it are recorded beside each row. Results: bench/finish_disk_results.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import checkouts, child_env, evalh, project  # noqa: E402  (bench/ is not a package)

WORK = HERE / ".work" / "finish_disk"


class DiskSampler(threading.Thread):
    """The disk the files of `directory` take, polled every `every` seconds: its peak and
    the largest journal seen."""

    def __init__(self, directory: Path, every: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.directory, self.every = directory, every
        self.peak = self.journal = 0
        self.files_at_peak: dict[str, int] = {}
        self._done = threading.Event()

    def sample(self) -> None:
        files: dict[str, int] = {}
        try:
            with os.scandir(self.directory) as it:
                for entry in it:
                    try:
                        files[entry.name] = entry.stat(follow_symlinks=False).st_blocks * 512
                    except FileNotFoundError:
                        continue
        except FileNotFoundError:
            return
        total = sum(files.values())
        if total > self.peak:
            self.peak, self.files_at_peak = total, files
        self.journal = max([self.journal, *(v for k, v in files.items() if k.endswith(".journal.jsonl"))])

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            time.sleep(self.every)

    def stop(self) -> None:
        self._done.set()
        self.join()
        self.sample()


def _kind(name: str) -> str:
    for suffix, kind in ((".journal.jsonl", "journal"), (".finish-stage", "staged results"),
                         (".finish-doc", "document being made"), (".finish", "plan"),
                         (".tmp", "document being written"), (".lock", "lock"), (".json", "document")):
        if name.endswith(suffix):
            return kind
    return name


def one_run(name: str, tree: Path, n: int, inline: bool = False) -> dict[str, object]:
    base = project(WORK / name / (f"{n}-inline" if inline else str(n)), n, inline=inline)
    runs = base / "eval_runs"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    load_before = os.getloadavg()[0]
    sampler = DiskSampler(runs)
    sampler.start()
    t0 = time.perf_counter()
    proc = subprocess.Popen(evalh("run", "-q", "--runs-dir", str(runs)), cwd=base, env=child_env(tree, base),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    sampler.stop()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{name} {n}: evalh run exited {code}: {err.decode()[-2000:]}")
    left = sorted(p.name for p in runs.iterdir())
    (doc,) = [runs / f for f in left if f.endswith(".json")]
    assert left == [doc.name], left  # nothing but the document stays
    size = doc.stat().st_size
    row: dict[str, object] = {
        "tree": name + (" (inline)" if inline else ""), "n": n, "document_mb": size / 1e6, "journal_mb": sampler.journal / 1e6,
        "peak_mb": sampler.peak / 1e6, "ratio": sampler.peak / (doc.stat().st_blocks * 512),
        "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
        "load": (load_before, os.getloadavg()[0]),
        "at_peak": {_kind(k): round(v / 1e6) for k, v in sorted(sampler.files_at_peak.items()) if v >= 5e5},
    }
    print(f"{name:7} {n:>8} document {size / 1e6:7.1f} MB  journal {sampler.journal / 1e6:7.1f} MB  "
          f"peak {sampler.peak / 1e6:7.1f} MB  = {row['ratio']:.2f} x  wall {wall:6.1f} s  cpu {row['cpu_s']:6.1f} s  "
          f"rss {row['rss_mib']:.0f} MiB  "
          f"load {load_before:.1f}->{os.getloadavg()[0]:.1f}  at peak {row['at_peak']}", flush=True)
    shutil.rmtree(runs, ignore_errors=True)
    return row


def markdown(rows: list[dict[str, object]], argv: list[str]) -> str:
    out = ["# Peak disk of a large run's files", "",
           f"Command: `python bench/finish_disk_bench.py {' '.join(argv)}`", "",
           f"Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python "
           f"{platform.python_version()}; other work shares the machine (the load average, 1 min, before → "
           "after each run is in its row). One fresh `evalh run` per row: N instant cases (bench/scale.py's "
           "project). Disk: the runs directory's files' allocated blocks (`st_blocks`), polled every 10 ms; "
           "ratio = peak ÷ the final document's blocks. CPU: the child's user + system; RSS: its high-water "
           "mark.", "",
           "| checkout | N | document MB | largest journal MB | peak disk MB | peak ÷ document | files at the peak (MB) "
           "| wall s | CPU s | peak RSS MiB | load |",
           "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        load = r["load"]
        assert isinstance(load, tuple)
        at_peak = ", ".join(f"{k} {v}" for k, v in r["at_peak"].items())  # type: ignore[attr-defined]
        out.append(f"| {r['tree']} | {r['n']:,} | {r['document_mb']:.1f} | {r['journal_mb']:.1f} | {r['peak_mb']:.1f} "
                   f"| {r['ratio']:.2f} | {at_peak} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['rss_mib']:.0f} "
                   f"| {load[0]:.1f} → {load[1]:.1f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--trees", default="before=bench/.work/before,after=.")
    ap.add_argument("--out", type=Path, default=HERE / "finish_disk_results.md")
    ap.add_argument("--append", action="store_true", help="add the rows to the results file's table")
    ap.add_argument("--inline", action="store_true",
                    help="the target declared cheap (inline = true: on the event loop, no worker thread)")
    args = ap.parse_args(argv)
    trees = checkouts(args.trees)
    rows = [one_run(name, tree, int(n), args.inline) for n in args.sizes.split(",") for name, tree in trees.items()]
    text = markdown(rows, argv)
    if args.append and args.out.is_file():  # the rows under the earlier ones, the command with its
        lines = args.out.read_text(encoding="utf-8").rstrip("\n").splitlines()
        command = f"Command: `python bench/finish_disk_bench.py {' '.join(argv)}`"
        lines.insert(lines.index(next(x for x in lines if x.startswith("Command"))) + 1, command.replace("Command", "and", 1))
        text = "\n".join(lines + [x for x in text.splitlines() if x.startswith("| ") and "---" not in x
                                  and not x.startswith("| checkout")]) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
