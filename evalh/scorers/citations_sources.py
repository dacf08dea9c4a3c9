"""Where a scorer that reads sources finds them: `sources_from`, shared by `citation_judge`
and `external_score`.

A product that looks up its own sources returns them (`output.sources`) or reports them in
its trace (`trace.search.hits`); a dataset that carries them has them in the case input
(`input.sources`). `sources_from` names one rooted path, or a list tried in order — the
input is read only when it is listed, so a product that lost its sources is never judged
against the dataset's instead:

    sources_from = "output.sources"                      # the product's own evidence
    sources_from = ["output.sources", "input.sources"]   # …falling back to the input

Roots: `output`, `trace`, `input`, `metadata`. Under `trace`, a number picks a trace entry
(`trace.0.result`) and a name picks the last entry whose `tool` (or `name`) is that name
(`trace.search.hits`). Unset, the sources are `input.<sources_field>` as before.
"""

from __future__ import annotations

from typing import Any

from evalh.fields import MISSING, pick
from evalh.models import Case
from evalh.scorers.citations_text import Source, sources_of

ROOTS = ("output", "trace", "input", "metadata")


def check_paths(value: str | list[str] | None) -> list[str] | None:
    """The config validator: one path or a non-empty list, each rooted in ROOTS."""
    if value is None:
        return None
    paths = [value] if isinstance(value, str) else list(value)
    if not paths:
        raise ValueError("give at least one path, e.g. \"output.sources\"")
    for p in paths:
        root, _, rest = p.partition(".")
        if root not in ROOTS:
            raise ValueError(f"{p!r} must start with one of {', '.join(ROOTS)} (e.g. \"output.sources\")")
        if root == "trace" and not rest:
            raise ValueError(f"{p!r}: name a trace entry, e.g. \"trace.search.hits\" or \"trace.0.result\"")
    return paths


def in_trace(trace: list[dict[str, Any]] | None, rest: str) -> Any:
    """`rest` under a trace: `N.path` (entry N) or `TOOL.path` (the last entry of that tool)."""
    if not trace:
        return MISSING
    head, _, tail = rest.partition(".")
    if head.isdigit():
        return pick(trace, rest)
    for entry in reversed(trace):
        if isinstance(entry, dict) and head in (entry.get("tool"), entry.get("name")):
            return pick(entry, tail or None)
    return MISSING


def locate(path: str, case: Case, output: Any, trace: list[dict[str, Any]] | None) -> Any:
    """The value at a rooted path (MISSING when there is none)."""
    root, _, rest = path.partition(".")
    if root == "trace":
        return in_trace(trace, rest)
    base = {"output": output, "input": case.input,
            "metadata": case.metadata.model_dump(mode="json")}[root]
    return pick(base, rest or None)


def find_sources(paths: list[str], case: Case, output: Any, trace: list[dict[str, Any]] | None,
                 text_key: str) -> tuple[dict[int, Source] | None, str]:
    """(sources, the path they came from) from the first path that holds numbered sources,
    else (None, a sentence naming the paths tried)."""
    for p in paths:
        raw = locate(p, case, output, trace)
        if raw is MISSING:
            continue
        found = sources_of(raw, text_key)
        if found is not None:
            return found, p
    where = " or ".join(repr(p) for p in paths)
    return None, f"no numbered sources at {where}"


def paths_of(sources_from: list[str] | None, sources_field: str) -> list[str]:
    """The paths a scorer reads: `sources_from`, else the input's `sources_field`."""
    return sources_from if sources_from else [f"input.{sources_field}"]
