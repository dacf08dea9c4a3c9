"""Results kept off the collector's books: a run freezes what it has kept, window by window,
so full collections during the run walk only the newest objects (evalh.gcpause)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from evalh.gcpause import kept_off_the_books
from tests.runner_project import (
    TARGET_MODULE,
    evalh_process,
    load,
    write_model_project,
    write_project,
)

PROBE = '''

def frozen(inp):
    import gc
    # counting the frozen objects walks them all: only now and then
    count = gc.get_freeze_count() if inp["n"] % 10 == 0 else None
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd", "frozen": count}
'''


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: garbage only the collector can free


def test_a_window_frees_its_garbage_and_freezes_what_is_kept() -> None:
    assert gc.get_freeze_count() == 0
    with kept_off_the_books(every=3) as window:
        at_start = gc.get_freeze_count()
        assert at_start > 0  # imports and everything alive now
        kept = [[i] for i in range(1000)]
        Node()  # garbage, made in the window
        garbage_count = sum(isinstance(o, Node) for o in gc.get_objects())
        assert garbage_count >= 1
        for _ in range(3):
            window.tick()
        assert window.freezes == 1
        assert gc.get_freeze_count() >= at_start + 1000  # the kept lists are frozen
        assert not any(isinstance(o, Node) for o in gc.get_objects(generation=None)
                       if gc.is_tracked(o))  # the garbage was collected, not frozen
        assert gc.get_objects(generation=2).count(kept) == 0  # off the books
    assert gc.get_freeze_count() == 0  # everything back on the books at the end
    del kept


def test_a_host_that_froze_its_objects_keeps_them_frozen_and_no_window_freezes() -> None:
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with kept_off_the_books(every=1) as window:
            window.tick()
            assert window.freezes == 0
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()


def test_a_long_run_freezes_its_results_as_it_goes(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=2600, target="frozen", concurrency=4)
    cfg.write_text(cfg.read_text().replace(
        f'target = "{TARGET_MODULE}:frozen"',
        f'target = {{ kind = "python", callable = "{TARGET_MODULE}:frozen", inline = true }}'))
    module = tmp_path / f"{TARGET_MODULE}.py"
    module.write_text(module.read_text() + PROBE)
    # in a fresh process: counting the frozen objects of this one (pytest's) takes long
    proc = evalh_process(["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "-q",
                          "--seed", "1"], tmp_path)
    _, err = proc.communicate(timeout=120)
    [path] = (tmp_path / "runs").glob("*.json")
    cases = load(path)["suites"]["s"]["cases"]
    assert len(cases) == 2600, err
    seen = sorted({r["output"]["frozen"] for r in cases} - {None})
    assert len(seen) == 2  # frozen at the start, and after 2,000 results
    assert seen[0] > 0


STARTUP_PROBE = '''
import atexit, gc, json, sys
import evalh.core.run.entry as run_entry
from evalh.core.run.runner import Runner
seen = {}
kept = run_entry.kept_off_the_books
run = Runner.run


def spy(*args, **kwargs):
    seen.setdefault("before_the_run", gc.isenabled())
    return kept(*args, **kwargs)


async def running(self):
    seen.setdefault("in_the_run", gc.isenabled())
    return await run(self)


run_entry.kept_off_the_books = spy
Runner.run = running
atexit.register(lambda: print("SEEN=" + json.dumps({**seen, "at_exit": gc.isenabled()})))
sys.argv = ["evalh", *sys.argv[1:]]
from evalh.cli.main import entry
entry()
'''

ENABLED_PROBE = '''
import gc as _gc

IMPORTED_WITH_THE_COLLECTOR_ON = _gc.isenabled()


def collector(inp):
    import gc
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd", "collector": gc.isenabled(),
            "at_import": IMPORTED_WITH_THE_COLLECTOR_ON}
'''


def _probe(args: list[str], cwd: Path) -> dict[str, bool]:
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", STARTUP_PROBE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("SEEN=")), None)
    assert line is not None, done.stdout[-1000:] + done.stderr[-2000:]
    seen: dict[str, bool] = json.loads(line[5:])
    return seen


def test_a_model_run_starts_with_the_collector_paused_until_the_run_starts(tmp_path: Path) -> None:
    """`evalh run` of a model target: no collection while the program imports, reads its
    config, plans the run and imports the client; the collector is on while the cases run
    (what the start made is frozen then, evalh.gcpause)."""
    write_model_project(tmp_path)
    seen = _probe(["run", "--runs-dir", str(tmp_path / "runs"), "-q", "--no-cache"], tmp_path)
    assert seen == {"before_the_run": False, "in_the_run": True, "at_exit": True}
    [path] = (tmp_path / "runs").glob("*.json")
    assert load(path)["suites"]["s"]["aggregate"]["passed"] == 2


def test_the_projects_own_code_is_imported_with_the_collector_on(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=4, target="collector")
    module = tmp_path / f"{TARGET_MODULE}.py"
    module.write_text(module.read_text() + ENABLED_PROBE)
    seen = _probe(["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "-q", "--seed", "1"], tmp_path)
    assert seen == {"before_the_run": True, "in_the_run": True, "at_exit": True}
    [path] = (tmp_path / "runs").glob("*.json")
    outputs = [r["output"] for r in load(path)["suites"]["s"]["cases"]]
    assert {(o["collector"], o["at_import"]) for o in outputs} == {(True, True)}


def test_any_other_command_turns_the_collector_back_on_before_its_work(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    assert _probe(["runs", "--runs-dir", str(tmp_path / "runs")], tmp_path) == {"at_exit": True}


def test_the_startup_pause_ends_once_and_leaves_a_host_pause_alone() -> None:
    from evalh.gcpause import end_startup, gc_paused, pause_for_startup

    assert gc.isenabled()
    pause_for_startup()
    pause_for_startup()
    assert not gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # still the startup's pause
    end_startup()
    assert gc.isenabled()
    end_startup()  # nothing left to end
    assert gc.isenabled()
    gc.disable()  # a host that paused the collector itself
    try:
        pause_for_startup()
        end_startup()
        assert not gc.isenabled()  # not turned on behind the host's back
    finally:
        gc.enable()



def test_a_dry_run_estimates_with_the_collector_on(tmp_path: Path) -> None:
    """`evalh run --dry-run` never reaches the run's freeze: its work (the baseline's runs
    read, the estimate) is the command's own and runs with the collector on."""
    write_model_project(tmp_path)
    seen = _probe(["run", "--runs-dir", str(tmp_path / "runs"), "-q", "--no-cache", "--dry-run"], tmp_path)
    assert seen == {"at_exit": True}


def test_every_command_but_run_ends_the_startup_pause_before_it_starts(monkeypatch: Any) -> None:
    """Walks the commands of the real app, so a command added later cannot be forgotten:
    only `evalh run` keeps the pause past `main` (to the run's freeze, a dry run's estimate,
    generating, or the project's own code)."""
    import sys

    import typer

    from evalh.cli import main as cli_main
    from evalh.gcpause import end_startup, pause_for_startup

    names = sorted(typer.main.get_command(cli_main.app).commands)  # type: ignore[attr-defined]
    assert "run" in names and "compare" in names and len(names) == len(cli_main._COMMANDS)
    seen: dict[str, bool] = {}
    for name in names:
        monkeypatch.setattr(sys, "argv", ["evalh", name])
        monkeypatch.setattr(cli_main, "_app_for", lambda argv: (lambda: seen.__setitem__(argv[1], gc.isenabled())))
        pause_for_startup()
        try:
            cli_main.main()
        finally:
            end_startup()
    assert seen == {name: name != "run" for name in names}
    assert gc.isenabled()


CYCLES_PROBE = '''

import asyncio

LIVE = [0]


class Cyclic:
    """The state of one call: a cycle, garbage once the call returns."""

    def __init__(self):
        LIVE[0] += 1
        self.me = self
        self.pad = [[i] for i in range(2000)]

    def __del__(self):
        LIVE[0] -= 1


async def cycles(inp):
    state = Cyclic()
    await asyncio.sleep(0.001)
    del state
    if inp["n"] % 97 == 0:
        import gc, time
        gc.collect()  # what is left is alive, or frozen garbage
        return {"verdict": "x", "live": LIVE[0], "t": time.monotonic()}
    return {"verdict": "x"}
'''


def test_the_garbage_of_calls_in_flight_at_a_freeze_is_collected(tmp_path: Path) -> None:
    """A target whose calls leave cyclic garbage (a parsed tree with parent links, an
    exception's traceback): the run's memory must not grow by the calls in flight at every
    window (16 here; 64 x 1 MB of state would be 64 MB more every 2,000 results). Without
    the sweep, 8 windows keep 8 x 16 calls' state frozen at the end."""
    cfg = write_project(tmp_path, cases=16100, target="cycles", concurrency=16)
    module = tmp_path / f"{TARGET_MODULE}.py"
    module.write_text(module.read_text() + CYCLES_PROBE)
    proc = evalh_process(["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "-q",
                          "--seed", "1"], tmp_path)
    _, err = proc.communicate(timeout=300)
    [path] = (tmp_path / "runs").glob("*.json")
    probes = sorted((r["output"]["t"], r["output"]["live"]) for r in load(path)["suites"]["s"]["cases"]
                    if isinstance(r.get("output"), dict) and "live" in r["output"])
    assert len(probes) > 150, err
    last = [live for _, live in probes[-10:]]
    assert max(last) <= 4 * 16, probes  # the calls in flight, and less than the run keeps
