"""Results kept off the collector's books: a run freezes what it has kept, window by window,
so full collections during the run walk only the newest objects (evalh.gcpause)."""

from __future__ import annotations

import gc
from pathlib import Path

from evalh.gcpause import kept_off_the_books
from tests.runner_project import TARGET_MODULE, evalh_process, load, write_project

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
