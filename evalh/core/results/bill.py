"""The bill of a run: what its target, judge and generator calls cost, and their tokens,
apart and in total — everything the budget (`--max-cost`) counts.

- **target**: the product's calls, from the suite's aggregate (`cost_usd`, tokens; cached
  replies cost nothing and are counted in `cached`).
- **judge**: every judge call a scorer made, from what the scorers left in the suite's
  details (`usage` of a judge scorer's counts, of a pairwise judge, of a calibration).
- **generator**: the calls that wrote a generating suite's cases, from the generation
  record in the run's config snapshot (`suites.S.generate.record.usage`).

A part's cost is null when it made calls none of which had a known price; `unpriced` says
that some calls of a part had no price, so a total is then a lower bound, never a silent 0.
Pure: reads the run document's header (its suites' aggregates and details), not its cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PARTS = ("target", "judge", "generator")


def _n(v: Any) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


@dataclass
class Part:
    """One part of a bill."""

    cost_usd: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    calls: int | None = None
    """Calls made, cached ones among them: a target's are its results that ran (each one
    call of the product), a judge's and a generator's as their usage counts them."""
    cached: int = 0
    unpriced: bool = False

    def add(self, other: Part) -> None:
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        if other.calls is not None:
            self.calls = (self.calls or 0) + other.calls
        self.cached += other.cached
        self.unpriced = self.unpriced or other.unpriced

    def document(self) -> dict[str, Any]:
        return {"cost_usd": None if self.cost_usd is None else round(self.cost_usd, 10),
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "calls": self.calls, "cached": self.cached, "unpriced": self.unpriced}


def usage_part(u: Mapping[str, Any]) -> Part:
    """A judge's or generator's `usage` (`calls`, `cached`, tokens, `cost_usd` null when a
    call had no price; a generator's `cost_unknown` counts its unpriced calls)."""
    calls = _n(u.get("calls"))
    cost = u.get("cost_usd") if calls or _n(u.get("tokens_in")) or _n(u.get("tokens_out")) else None  # no call, no bill
    unpriced = (cost is None and calls > _n(u.get("cached"))) or _n(u.get("cost_unknown")) > 0
    return Part(cost_usd=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
                tokens_in=_n(u.get("tokens_in")), tokens_out=_n(u.get("tokens_out")), calls=calls,
                cached=_n(u.get("cached")), unpriced=unpriced)


def judge_usages(details: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """Every judge `usage` a suite's details hold: a judge scorer's (or a pairwise judge's)
    own, and its calibration's."""
    for fact in details.values():
        if not isinstance(fact, Mapping):
            continue
        for u in (fact.get("usage"), (fact.get("calibration") or {}).get("usage")
                  if isinstance(fact.get("calibration"), Mapping) else None):
            if isinstance(u, Mapping) and "calls" in u:
                yield u


def suite_bill(aggregate: Any, details: Mapping[str, Any], generated: Mapping[str, Any] | None = None) -> dict[str, Part]:
    """One suite's bill: `target`, `judge`, `generator` and `total`. `aggregate`: the
    suite's `Aggregate`; `generated`: its generation record's `usage`, if it generated."""
    target = Part(cost_usd=aggregate.cost_usd, tokens_in=aggregate.tokens_in, tokens_out=aggregate.tokens_out,
                  calls=aggregate.n - aggregate.skipped, cached=aggregate.cached, unpriced=aggregate.cost_unknown > 0)
    judge = Part()
    for u in judge_usages(details):
        judge.add(usage_part(u))
    generator = usage_part(generated) if generated else Part()
    total = Part()
    for p in (target, judge, generator):
        total.add(p)
    return {"target": target, "judge": judge, "generator": generator, "total": total}


def generation_usage(config: Mapping[str, Any], suite: str) -> Mapping[str, Any] | None:
    """The generator usage a run's config snapshot records for `suite`, if it generated."""
    snap = ((config.get("suites") or {}).get(suite) or {}) if isinstance(config.get("suites"), Mapping) else {}
    gen = snap.get("generate") if isinstance(snap, Mapping) else None
    rec = gen.get("record") if isinstance(gen, Mapping) else None
    usage = rec.get("usage") if isinstance(rec, Mapping) else None
    return usage if isinstance(usage, Mapping) else None


def run_bill(run: Any) -> dict[str, dict[str, Part]]:
    """Per suite of `run` (a `Run`, its cases unread), its bill."""
    return {name: suite_bill(s.aggregate, s.details, generation_usage(run.config or {}, name))
            for name, s in run.suites.items()}


def total_bill(bills: Iterable[Mapping[str, Part]]) -> dict[str, Part]:
    """The suites' bills added part by part."""
    out = {k: Part() for k in (*PARTS, "total")}
    for bill in bills:
        for k, p in bill.items():
            out[k].add(p)
    return out


def bill_document(bill: Mapping[str, Part]) -> dict[str, Any]:
    return {k: p.document() for k, p in bill.items()}


def bill_text(bill: Mapping[str, Part]) -> str | None:
    """`bill: target $… · judge $… · generator $… · total $… (… tokens)`, the line every
    surface shows beside a cost that is the target's alone; None when nothing was billed
    or counted (no tokens, no known cost, no judge or generator call)."""
    from evalh.numbers import money_exact

    total = bill["total"]
    if not (total.tokens_in or total.tokens_out or total.cost_usd is not None or bill["judge"].calls
            or bill["generator"].calls):
        return None

    def part(name: str) -> str:
        p = bill[name]
        return (f"{name} " + money_exact(p.cost_usd, "unknown" if p.tokens_in or p.tokens_out else "$0")
                + (" + unpriced" if p.unpriced else "") + (f" ({p.cached} cached)" if p.cached else ""))
    return ("bill: " + " · ".join(part(n) for n in (*PARTS, "total"))
            + f" ({total.tokens_in + total.tokens_out} tokens)")
