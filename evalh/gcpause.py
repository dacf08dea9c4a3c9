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
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
    """Counts results; every `every`, a collection of the unfrozen objects and a freeze."""

    def __init__(self, every: int) -> None:
        self.every = every
        self._left = every
        self.freezes = 0

    def tick(self) -> None:
        self._left -= 1
        if self._left > 0:
            return
        self._left = self.every
        if gc.isenabled():  # a host that paused the collector keeps it paused
            gc.collect()  # walks only what is not frozen: this window's objects
        gc.freeze()
        self.freezes += 1


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
    objects (before forking workers) keeps them so, and the window does nothing."""
    if gc.get_freeze_count() != 0:
        yield NoWindow(every)
        return
    gc.freeze()
    try:
        yield FreezeWindow(every)
    finally:
        gc.unfreeze()
