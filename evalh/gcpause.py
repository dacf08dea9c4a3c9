"""Keep the cycle collector off work that builds many acyclic objects.

Loading or comparing a large run allocates millions of small objects and no garbage
cycles, yet every full collection walks them all again: two 100,000-case runs load about
3.7x faster with the collector paused (bench/compare_results.md). Nesting is safe.

A run keeps what it has done (results, the journal's bookkeeping) while it goes on, and
each full collection would walk all of it again: 16 % of a 100,000-case run's time.
`kept_off_the_books` freezes what exists when the run starts (imports, config, plan) and,
every `every` results (`FreezeWindow.tick`), collects the objects made since the last
freeze — what is garbage among them goes — and freezes the rest, so a full collection only
ever walks the objects of the current window. At the end everything is unfrozen again.

The `evalh` program also keeps the collector off its own start (`pause_for_startup`):
importing typer, pydantic, the config's models and the HTTP client makes ~100,000
long-lived objects and next to no garbage, yet set off a full collection and ~100 young
ones (a one-case `openai` run: 28–29 ms of collections without the pause, 3 ms with it, of
~0.37 s). A command ends the pause when its work starts
(`end_startup`); `evalh run` at the freeze that starts the run (a dry run at its
estimate), so its config, dataset, plan and clients are not walked either — unless it imports the project's own code (a
Python target, a custom scorer, a plugin: `evalh.imports`), which is imported with the
collector on. The little garbage the start leaves (~1,200 objects of a one-case `openai`
run's ~70,000) is frozen with the rest, once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_startup: list[bool] = []
"""[True] while the collector is paused for the program's start."""


def pause_for_startup() -> None:
    """Pause the collector until `end_startup` (the `evalh` program, first thing)."""
    if gc.isenabled() and not _startup:
        from evalh.imports import before_user_code

        gc.disable()
        _startup.append(True)
        before_user_code(end_startup)  # the project's code is imported with the collector on


def end_startup() -> None:
    """The collector back on, if `pause_for_startup` paused it (else nothing)."""
    if _startup:
        _startup.clear()
        gc.enable()


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class FreezeWindow:
    """Counts results; every `every`, a collection of the unfrozen objects and a freeze.

    A freeze also takes the state of the calls in flight, which is garbage soon after; what
    of it is cyclic (a parsed tree with parent links, an exception's traceback) the collector
    would never see again. So when the frozen set has doubled since it was last swept, it is
    swept: unfrozen, collected in full and frozen again. The garbage kept frozen stays below
    what the run keeps (its start and its results), and the full walks cost about twice the
    final frozen set over the whole run (a full collection at every doubling)."""

    def __init__(self, every: int) -> None:
        self.every = every
        self._left = every
        self.freezes = 0
        self.sweeps = 0
        self._swept: int | None = None
        """How many objects were frozen after the last sweep (or the first freeze)."""

    def tick(self) -> None:
        self._left -= 1
        if self._left > 0:
            return
        self._left = self.every
        if gc.isenabled():  # a host that paused the collector keeps it paused
            gc.collect()  # walks only what is not frozen: this window's objects
        gc.freeze()
        self.freezes += 1
        if gc.isenabled():
            self._sweep_if_doubled()

    def _sweep_if_doubled(self) -> None:
        frozen = gc.get_freeze_count()  # a walk of the frozen list, no collection
        if self._swept is None:
            self._swept = frozen
        elif frozen >= 2 * self._swept:
            gc.unfreeze()  # everything frozen is the window's own (`kept_off_the_books`)
            gc.collect()
            gc.freeze()
            self._swept = gc.get_freeze_count()
            self.sweeps += 1


class NoWindow(FreezeWindow):
    """A window that never freezes."""

    def __init__(self, every: int = 0) -> None:
        super().__init__(every)

    def tick(self) -> None:
        return None


@contextmanager
def kept_off_the_books(every: int = 2000) -> Iterator[FreezeWindow]:
    """Freeze what exists now and, through the window's `tick`, what the work keeps as it
    goes; unfreeze at the end. Only when nothing is frozen yet: a host that froze its own
    objects (before forking workers) keeps them so, and the window does nothing. The
    program's start ends here (`end_startup`): what it made is frozen with the rest."""
    end_startup()
    if gc.get_freeze_count() != 0:
        yield NoWindow(every)
        return
    gc.freeze()
    try:
        yield FreezeWindow(every)
    finally:
        gc.unfreeze()
