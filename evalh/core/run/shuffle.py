"""Seeded shuffling inside a case (`shuffle = ["input.options"]`), and each attempt's seed.

Every (case, attempt) gets a seed of its own, derived from the run's seed, the suite, the
case id and the attempt (SHA-256, first 8 hex digits): the same run seed gives the same
seeds, and so the same orders, every time; attempts differ from one another; the arms of
one attempt share it, so they see the same order and stay paired. The target receives the
seed and the attempt through `evalh.context.current()` (Python), the `X-Evalh-Attempt` and
`X-Evalh-Seed` headers and the body template (HTTP), and templates as `attempt` and `seed`.

Each listed field of the case input (a list) is permuted with that seed. The case the
target, the templates and the scorers see is the permuted one (what the subject was shown
is what is judged); the result records it as its `input`, and `shuffle` maps each
presented position back to the original index (`[2, 0, 1]`: the first option shown was
the original third), so a judge's or metric's answer about "position 1" maps back with
`original_index`. A field that is missing or not a list is left as it is (recorded as
`[]`); a list of one item has one order.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.models import Case, CaseResult


def attempt_seed(run_seed: int | None, suite: str, case_id: str, attempt: int) -> int:
    """The seed of one (case, attempt): reproducible from the run's seed, distinct per attempt."""
    digest = hashlib.sha256(f"{run_seed}\x00{suite}\x00{case_id}\x00{attempt}".encode()).hexdigest()
    return int(digest[:8], 16)


@dataclass(frozen=True)
class Presented:
    case: Case
    """The case as the target sees it (permuted fields, the rest as it was)."""
    seed: int
    permutation: dict[str, list[int]] | None
    """Field path → the original index of each presented position; None without `shuffle`."""


def _parent(value: Any, path: list[str]) -> tuple[Any, str] | None:
    for part in path[:-1]:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value, path[-1]


def _get_list(container: Any, key: str) -> list[Any] | None:
    if isinstance(container, dict) and isinstance(container.get(key), list):
        return container[key]
    if isinstance(container, list) and key.isdigit() and int(key) < len(container) and isinstance(container[int(key)], list):
        return container[int(key)]
    return None


def _set(container: Any, key: str, value: list[Any]) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container[int(key)] = value


def permute(value: Any, fields: list[str], seed: int,
            given: dict[str, list[int]] | None = None) -> tuple[Any, dict[str, list[int]]]:
    """`value` (a case input) with each field permuted by `seed` (or by the `given`
    permutations), and the permutation applied to each."""
    out = copy.deepcopy(value)
    rng = random.Random(seed)
    applied: dict[str, list[int]] = {}
    for field in fields:
        path = field.split(".")[1:]  # fields start with "input."
        found = _parent(out, path) if path else None
        items = _get_list(*found) if found is not None else None
        if found is None or items is None:
            applied[field] = []
            continue
        order = list(range(len(items)))
        if given is not None and sorted(given.get(field, [])) == order:
            order = list(given[field])
        else:
            rng.shuffle(order)
        _set(found[0], found[1], [items[i] for i in order])
        applied[field] = order
    return out, applied


def present(suite: Any, case: Case, attempt: int, run_seed: int | None,
            prior: CaseResult | None = None) -> Presented:
    """The case as shown to the target for this attempt (`suite` is the suite plan). A
    stored result (rejudge) keeps the order and seed it was run with."""
    fields: list[str] = list(getattr(suite.config, "shuffle", []) or [])
    if prior is not None and prior.seed is not None:
        seed = prior.seed
    else:
        seed = attempt_seed(run_seed, suite.name, case.id, attempt)
    if not fields:
        return Presented(case, seed, None)
    given = prior.shuffle if prior is not None else None
    shown, applied = permute(case.input, fields, seed, given)
    return Presented(case.model_copy(update={"input": shown}), seed, applied)


def original_index(result: CaseResult, field: str, presented: int) -> int:
    """The original index of the item shown at `presented` (0-based) in `field`; the
    position itself when the field was not shuffled."""
    order = (result.shuffle or {}).get(field) or []
    return order[presented] if 0 <= presented < len(order) else presented


def original_order(result: CaseResult, field: str, items: list[Any]) -> list[Any]:
    """A presented list (`items`, in the order shown) put back in the original order."""
    order = (result.shuffle or {}).get(field) or []
    if sorted(order) != list(range(len(items))):
        return list(items)
    out: list[Any] = [None] * len(items)
    for shown, original in enumerate(order):
        out[original] = items[shown]
    return out
