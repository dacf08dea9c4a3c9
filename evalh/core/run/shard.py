"""Sharded runs: `evalh run --shard K/N` runs the cases whose id hashes to shard K of N.

A case's shard is a stable hash of its suite and id (SHA-256, not Python's `hash()`, which
changes per process): the same case lands on the same shard on every machine, in every
process, whatever else the dataset holds. Every arm and attempt of a case is on its shard,
so the pairing `compare` relies on holds inside each shard and in the merged run
(`evalh merge`, `evalh.core.run.merge`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from evalh.errors import EvalhError

if TYPE_CHECKING:
    from evalh.core.run.plan import RunPlan

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 100_000
T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, suite: str, case_id: str) -> bool:
        return shard_of(suite, case_id, self.count) == self.index


def parse_shard(text: str, where: str = "--shard") -> Shard:
    """`K/N` with 1 ≤ K ≤ N; anything else is bad usage (exit 2, one line)."""
    m = _SHARD.match(text or "")
    if not m:
        raise EvalhError(f"{where}: {text!r} is not K/N (for example 1/4: the first of four shards)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or n > MAX_SHARDS:
        raise EvalhError(f"{where}: {text!r}: the number of shards N must be 1 to {MAX_SHARDS}")
    if not 1 <= k <= n:
        raise EvalhError(f"{where}: {text!r}: the shard K must be 1 to {n} (shards are numbered from 1)")
    return Shard(k, n)


def shard_of(suite: str, case_id: str, count: int) -> int:
    """The shard (1 … count) of a case: SHA-256 of `suite NUL case_id`, as an integer, mod count."""
    digest = hashlib.sha256(f"{suite}\0{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select(cases: Sequence[T], suite: str, shard: Shard | None, *, key: str = "id") -> list[T]:
    """The cases of `suite` on `shard` (all of them when `shard` is None), in their order."""
    if shard is None:
        return list(cases)
    return [c for c in cases if shard.holds(suite, getattr(c, key))]


def apply_shard(plan: RunPlan, given: str | None, *, resumed: bool, seeded: bool) -> Shard | None:
    """Keep in every suite of `plan` only the cases on its shard.

    A new run takes the shard from `--shard` (`given`), needs a seed every shard shares
    (`seeded`: `--seed` or `[evalh] seed`; each shard would otherwise draw its own) and
    records the shard in the config snapshot (`config.shard`, hence the journal header and
    the document's `shard`). A resumed run (`resumed`) takes the shard its config snapshot
    recorded; `--shard` is refused with `--resume`, like the other options a run keeps."""
    recorded = plan.config_snapshot.get("shard")
    if resumed:
        if given is not None:
            raise EvalhError("--resume keeps the run's own shard: drop --shard")
        if recorded is None:
            return None
        shard = parse_shard(str(recorded), where=f"run {plan.run_id}: config.shard")
    else:
        if given is None:
            return None
        shard = parse_shard(given)
        if not seeded:
            raise EvalhError(f"--shard {shard}: the shards of one run must share a seed: "
                             "give every shard the same --seed N (or set [evalh] seed)")
        plan.config_snapshot["shard"] = str(shard)
    for suite in plan.suites:
        suite.cases = select(suite.cases, suite.name, shard)
    plan.options["shard"] = str(shard)
    return shard
